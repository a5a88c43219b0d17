/*
 * The differential driver's wire format (harness/differential/README.md "Protocol"): JSON
 * lines on stdin and stdout, read as bytes; the three ways an event is not simply answered
 * (unsupported, a protocol error, a refusal in a response field); reading an event's fields.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.protocol.Errors;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

final class DriverProtocol {
    static final ObjectMapper JSON = new ObjectMapper();
    static final int PROTOCOL = 1;

    private DriverProtocol() {
    }

    /** An event this build cannot run: answered {"unsupported": reason}. */
    static final class Unsupported extends RuntimeException {
        Unsupported(String reason) {
            super(reason);
        }
    }

    /** A malformed line or event: answered {"ok": false, "protocolError": ...}. */
    static final class ProtocolError extends RuntimeException {
        ProtocolError(String message) {
            super(message);
        }
    }

    /** A refusal the controller answers in a response field rather than by throwing. */
    static final class Refused extends RuntimeException {
        final Errors error;

        Refused(Errors error, String message) {
            super(message);
            this.error = error;
        }
    }

    /** A response field's error code, as a Refused (NONE: nothing). */
    static void refuseIf(short code, String message) {
        if (code != Errors.NONE.code()) {
            Errors error = Errors.forCode(code);
            throw new Refused(error, message == null || message.isEmpty() ? error.message() : message);
        }
    }

    /** The answer as one JSON line. Written by walking the tree into a buffer kept across
     * answers (issue 44 item 3: ObjectMapper.writeValueAsBytes, its generator and serializer
     * look-ups per answer, were a tenth of the driver's time); a node of a kind not handled
     * here (floating point, binary, POJO) is written by Jackson. */
    static void write(OutputStream out, ObjectNode node) throws IOException {
        Writer w = WRITER;
        w.n = 0;
        w.value(node);
        w.put((byte) '\n');
        out.write(w.buf, 0, w.n);
    }

    static final Writer WRITER = new Writer();

    static final class Writer {
        byte[] buf = new byte[1 << 16];
        int n;

        void put(byte b) {
            if (n == buf.length) {
                buf = java.util.Arrays.copyOf(buf, buf.length * 2);
            }
            buf[n++] = b;
        }

        void ascii(String s) {
            for (int i = 0; i < s.length(); i++) {
                put((byte) s.charAt(i));
            }
        }

        void value(JsonNode v) throws IOException {
            switch (v.getNodeType()) {
                case OBJECT: {
                    put((byte) '{');
                    boolean first = true;
                    for (java.util.Iterator<java.util.Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
                        java.util.Map.Entry<String, JsonNode> f = it.next();
                        if (!first) {
                            put((byte) ',');
                        }
                        first = false;
                        string(f.getKey());
                        put((byte) ':');
                        value(f.getValue());
                    }
                    put((byte) '}');
                    return;
                }
                case ARRAY: {
                    put((byte) '[');
                    for (int i = 0; i < v.size(); i++) {
                        if (i > 0) {
                            put((byte) ',');
                        }
                        value(v.get(i));
                    }
                    put((byte) ']');
                    return;
                }
                case STRING:
                    string(v.textValue());
                    return;
                case BOOLEAN:
                    ascii(v.booleanValue() ? "true" : "false");
                    return;
                case NULL:
                    ascii("null");
                    return;
                case NUMBER:
                    if (v.isIntegralNumber()) {
                        ascii(v.isBigInteger() ? v.bigIntegerValue().toString() : Long.toString(v.longValue()));
                        return;
                    }
                    break;
                default:
                    break;
            }
            byte[] b = JSON.writeValueAsBytes(v);
            for (byte x : b) {
                put(x);
            }
        }

        /** A JSON string: quotes, backslashes and control characters escaped, the rest as UTF-8. */
        void string(String s) {
            put((byte) '"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    put((byte) '\\');
                    put((byte) c);
                } else if (c < 0x20) {
                    ascii(String.format("\\u%04x", (int) c));
                } else if (c < 0x80) {
                    put((byte) c);
                } else {
                    int end = i + 1;
                    while (end < s.length() && s.charAt(end) >= 0x80) {
                        end++;
                    }
                    for (byte x : s.substring(i, end).getBytes(StandardCharsets.UTF_8)) {
                        put(x);
                    }
                    i = end - 1;
                }
            }
            put((byte) '"');
        }
    }

    static JsonNode parse(byte[] line, int length) {
        try {
            JsonNode node = JSON.readTree(line, 0, length);
            if (node == null || !node.isObject()) {
                throw new ProtocolError("expected a JSON object, got: "
                    + abbreviate(new String(line, 0, length, StandardCharsets.UTF_8)));
            }
            return node;
        } catch (IOException e) {
            throw new ProtocolError("not JSON: " + e.getMessage());
        }
    }

    /** Lines of bytes from a stream: JSON is parsed from the bytes, nothing is decoded. */
    static final class Lines {
        private final InputStream in;
        private final byte[] buffer = new byte[1 << 16];
        private int pos;
        private int end;
        byte[] line = new byte[1 << 12];
        int length;

        Lines(InputStream in) {
            this.in = in;
        }

        /** The next line into line[0, length); false at the end of the input. */
        boolean next() throws IOException {
            length = 0;
            while (true) {
                if (pos == end) {
                    int n = in.read(buffer, 0, buffer.length);
                    pos = 0;
                    end = Math.max(n, 0);
                    if (n <= 0) {
                        return length > 0;
                    }
                }
                int start = pos;
                while (pos < end && buffer[pos] != '\n') {
                    pos++;
                }
                int count = pos - start;
                if (length + count > line.length) {
                    line = java.util.Arrays.copyOf(line, Math.max(2 * line.length, length + count));
                }
                System.arraycopy(buffer, start, line, length, count);
                length += count;
                if (pos < end) {
                    pos++;  // the newline
                    return true;
                }
            }
        }

        boolean blank() {
            for (int i = 0; i < length; i++) {
                if (!Character.isWhitespace(line[i])) {
                    return false;
                }
            }
            return true;
        }

        /** More input is at hand without blocking. */
        boolean ready() throws IOException {
            return pos < end || in.available() > 0;
        }
    }

    // ---- an event's fields ----

    static JsonNode require(JsonNode e, String name) {
        JsonNode v = e.get(name);
        if (v == null || v.isNull()) {
            throw new ProtocolError("event " + e.path("op").asText("?") + " needs '" + name + "'");
        }
        return v;
    }

    static int requireInt(JsonNode e, String name) {
        JsonNode v = require(e, name);
        if (!v.canConvertToInt()) {
            throw new ProtocolError("'" + name + "' must be an integer, not " + v);
        }
        return v.asInt();
    }

    static String requireText(JsonNode e, String name) {
        JsonNode v = require(e, name);
        if (!v.isTextual()) {
            throw new ProtocolError("'" + name + "' must be a string, not " + v);
        }
        return v.asText();
    }

    static List<Integer> intList(JsonNode array) {
        if (!array.isArray()) {
            throw new ProtocolError("expected a list of broker ids, not " + array);
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode n : array) {
            if (!n.canConvertToInt()) {
                throw new ProtocolError("expected a broker id, not " + n);
            }
            out.add(n.asInt());
        }
        return out;
    }

    static List<Integer> intList(int[] values) {
        List<Integer> out = new ArrayList<>(values.length);
        for (int v : values) {
            out.add(v);
        }
        return out;
    }

    static ArrayNode ints(int[] values) {
        ArrayNode a = JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    static ArrayNode ints(List<Integer> values) {
        ArrayNode a = JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }

    static String describe(Throwable t) {
        return t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }
}
