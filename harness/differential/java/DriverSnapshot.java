/*
 * Snapshot equivalence (issue 44 item 1): at a "snapshot" event, the build's own snapshot of
 * the controller's state, the records MetadataImage.write gives, is loaded into FRESH
 * managers, as a controller that restarts or takes over after the snapshot does; every later
 * event then runs on both the original managers and the fresh ones, and the two answers must
 * be the same. The first difference goes into the original's answer ("snapshotDiff") and
 * ends the shadow (a difference of the loaded state is told at the snapshot event: no shadow
 * then, since every later difference would follow from it).
 *
 * The snapshot, as the build's controller server makes it:
 *   - the image: every record the original replayed (DriverState.journal) applied to a
 *     MetadataDelta on the image of the previous snapshot (MetadataDelta.replay,
 *     MetadataDelta.apply), as the MetadataLoader keeps its image from the committed records;
 *   - written by MetadataImage.write(ImageWriter, ImageWriterOptions) into a RecordListWriter,
 *     with the options SnapshotEmitter.maybeEmit gives: 3.6-3.9 `new Builder()
 *     .setMetadataVersion(image.features().metadataVersion())`; 4.0+ `new Builder(
 *     image.features().metadataVersionOrThrow()).setEligibleLeaderReplicasEnabled(
 *     image.features().isElrEnabled())` (so a 4.x snapshot drops the ELR fields while the
 *     feature is off). The default loss handler throws UnwritableMetadataException: here
 *     that is a difference of its own ("write"), the snapshot cannot be written.
 *   - MetadataProvenance: (offset, epoch, time) on 3.x, (offset, epoch, time,
 *     isOffsetBatchAligned) on 4.x: by arity (DriverReflection.construct).
 * The load, as QuorumController.QuorumMetaLogListener.handleLoadSnapshot: every record
 * replayed (QuorumController.replay) at the snapshot's last contained offset, into managers
 * built anew with the session's settings (DriverSetup.buildManagers); then the new active
 * controller activates its ClusterControlManager (every registered broker gets a session:
 * ClusterControlManager.activate). Not run: ActivationRecordsGenerator's records of a
 * non-empty log (none for these sessions: no ZK migration, no open transaction).
 * What the controller keeps beside its state is the world's, copied: the clock, which broker
 * processes run, their log directories; the replica placer's random state (a fresh
 * controller's own Random would place a topic elsewhere: a difference of no interest).
 *
 * Compared: the whole answer of each side but newProbes, topic ids (random per side for a
 * topic created after the snapshot; the answers name topics) and ids inside messages; the
 * records of one event in an order that keeps each partition's own (several partitions'
 * changes come from hash sets ordered by topic id); when an event fences several brokers at
 * once, the state after it rather than its records (the order of expiry is a hash table's).
 * At the
 * snapshot event itself: every partition, broker and finalized feature level, loaded against
 * the original's.
 *
 * Cost: the shadow doubles an event's cost. It ends at its first difference, at the next
 * snapshot event (which starts a new one) or after `shadow` events (the event's field,
 * default DEFAULT_SHADOW), whichever comes first.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.image.writer.RecordListWriter;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.regex.Pattern;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.describe;
import static org.apache.kafka.controller.DriverReflection.construct;
import static org.apache.kafka.controller.DriverReflection.field;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.newInstance;
import static org.apache.kafka.controller.DriverReflection.unwrap;

final class DriverSnapshot {
    static final int DEFAULT_SHADOW = 200;
    /** Records the journal holds at most before they are applied to the image. */
    static final int FOLD = 50_000;
    /** A topic id (Uuid.toString: 22 characters of URL-safe base64) inside a message. */
    static final Pattern UUID = Pattern.compile("(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])");

    private final ControllerDriver original;
    private JsonNode settings;
    /** The image of the committed records up to the last snapshot (the journal holds those
     * after it). */
    private MetadataImage image = MetadataImage.EMPTY;
    /** The fresh managers of the last snapshot, while they still run beside the original. */
    private ControllerDriver shadow;
    private long takenAt;  // the snapshot event's seq
    private int left;  // events the shadow still runs
    private boolean justTaken;
    int taken;  // snapshots taken this session

    DriverSnapshot(ControllerDriver original) {
        this.original = original;
    }

    void started(JsonNode settings) {
        this.settings = settings;
    }

    // ---- the snapshot event ----

    /** The "snapshot" event: the image brought up to date, written, loaded into fresh
     * managers; the answer says what was written and whether the loaded state differs. */
    ObjectNode take(JsonNode event, long seq) {
        DriverState st = original.st;
        long offset = st.nextOffset - 1;
        shadow = null;
        ObjectNode out = JSON.createObjectNode();
        ObjectNode info = out.putObject("snapshot");
        info.put("offset", offset);
        List<ApiMessageAndVersion> records;
        try {
            image = imageAt(image, st.journal, offset);
            st.journal.clear();
            records = write(image);
        } catch (Throwable t) {
            out.set("snapshotDiff", difference("write", "the snapshot could not be written: "
                + describe(unwrap(t)), null, null, seq));
            return out;
        }
        String omit = event.path("omit").asText("");
        if (!omit.isEmpty()) {
            // A crafted broken snapshot (tests: the oracle must fire): without that record type.
            records.removeIf(r -> r.message().getClass().getSimpleName().equals(omit));
            info.put("omitted", omit);
        }
        info.put("records", records.size());
        if (event.path("dump").asBoolean(false)) {  // the snapshot's records, for triage
            ArrayNode written = info.putArray("written");
            records.forEach(r -> written.add(DriverReport.record(st, r)));
        }
        ControllerDriver fresh = new ControllerDriver();
        fresh.oracles.off = true;  // the original's oracles check the state; no image to build here
        try {
            load(fresh.st, records, offset);
        } catch (Throwable t) {
            out.set("snapshotDiff", difference("load", "the snapshot could not be loaded: "
                + describe(unwrap(t)), null, null, seq));
            return out;
        }
        taken++;
        left = event.path("shadow").asInt(DEFAULT_SHADOW);
        info.put("shadow", left);
        ObjectNode diff = loadedDiff(st, fresh.st, seq);
        if (diff != null) {
            // Told, and the shadow ends: every later difference would follow from this one.
            out.set("snapshotDiff", diff);
            return out;
        }
        // The loaded brokers equal the original's (loadedDiff): the fresh side reports them,
        // as the original does, only once they change (ControllerDriver.withState), not at
        // its first answer because it has sent none yet (that was a snapshot:brokers:<op>
        // finding one event after a snapshot: "original null, fresh {...}").
        DriverReport.brokersSent(fresh.st, fresh.brokersSent);
        fresh.brokers.dirs.copyFrom(original.brokers.dirs);  // snapshot:dir:assignDirs
        shadow = left > 0 ? fresh : null;
        takenAt = seq;
        justTaken = true;
        return out;
    }

    /** The image after the records since the previous one, as the MetadataLoader applies
     * committed batches to its image. */
    static MetadataImage imageAt(MetadataImage prior, List<ApiMessageAndVersion> records, long offset) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(prior).build();
        for (ApiMessageAndVersion r : records) {
            delta.replay(r.message());
        }
        MetadataProvenance provenance;
        try {
            provenance = (MetadataProvenance) construct(MetadataProvenance.class, offset, 1, 0L, true);
        } catch (IllegalStateException threeArgs) {  // 3.x: no isOffsetBatchAligned
            provenance = (MetadataProvenance) construct(MetadataProvenance.class, offset, 1, 0L);
        }
        return delta.apply(provenance);
    }

    /** The records MetadataImage.write gives with SnapshotEmitter's options. */
    static List<ApiMessageAndVersion> write(MetadataImage image) {
        Object features = image.features();
        ImageWriterOptions.Builder builder;
        if (hasConstructor(ImageWriterOptions.Builder.class, MetadataVersion.class)) {
            // 4.0+ (SnapshotEmitter.maybeEmit)
            MetadataVersion mv = (MetadataVersion) invoke(features, "metadataVersionOrThrow");
            try {
                builder = ImageWriterOptions.Builder.class.getConstructor(MetadataVersion.class).newInstance(mv);
            } catch (ReflectiveOperationException e) {
                throw new DriverReflection.ReflectionFailure(e);
            }
            invoke(builder, "setEligibleLeaderReplicasEnabled", invoke(features, "isElrEnabled"));
        } else {
            // 3.6-3.9 (SnapshotEmitter.maybeEmit)
            builder = (ImageWriterOptions.Builder) newInstance(ImageWriterOptions.Builder.class);
            builder.setMetadataVersion((MetadataVersion) invoke(features, "metadataVersion"));
        }
        RecordListWriter writer = new RecordListWriter();
        image.write(writer, builder.build());
        writer.close(true);
        return new java.util.ArrayList<>(writer.records());
    }

    static boolean hasConstructor(Class<?> type, Class<?> param) {
        try {
            type.getConstructor(param);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /** Fresh managers of the session's settings, loaded from the snapshot's records. */
    void load(DriverState fresh, List<ApiMessageAndVersion> records, long offset) {
        DriverState st = original.st;
        DriverLine line = fresh.line;
        MetadataVersion mv = DriverSetup.chooseMetadataVersion(line, settings.path("metadataVersion"));
        Boolean elrWanted = settings.hasNonNull("elr") ? settings.get("elr").asBoolean() : null;
        DriverLine.ElrPlan elr = line.planElr(mv, elrWanted);
        fresh.sessionTimeoutNs = st.sessionTimeoutNs;
        fresh.reportChanged = st.reportChanged;
        fresh.uncleanConfigHonoured = st.uncleanConfigHonoured;
        fresh.time.nanos = st.time.nanos;
        DriverSetup.buildManagers(fresh, DriverSetup.staticConfig(settings, elr), elr.controllerConfig,
            !line.isProduction(mv));
        fresh.journal = null;  // the shadow makes no snapshots
        copyPlacerRandom(st.clusterControl, fresh.clusterControl);
        fresh.beginEvent();
        for (ApiMessageAndVersion r : records) {
            ApiMessage m = r.message();
            if (m.getClass().getSimpleName().equals("ZkMigrationStateRecord")) {
                invoke(fresh.featureControl, "replay", m);  // 3.x FeaturesImage writes it
            } else {
                fresh.replay(m, offset);
            }
        }
        fresh.nextOffset = st.nextOffset;
        fresh.alive.addAll(st.alive);
        fresh.logDirs.putAll(st.logDirs);
        fresh.dirSerial = st.dirSerial;  // the next directory made: the same id on both
        fresh.clusterControl.activate();
        copySessions(st.clusterControl, fresh.clusterControl);
    }

    /** 4.0+: the fresh controller's broker sessions are the original's. Sessions are not in
     * a snapshot by design: ClusterControlManager.activate opens one for every registered
     * broker, fenced ones too (BrokerHeartbeatTracker.updateContactTime), so a new active
     * controller would fence again, once the clock moves, a broker that the original fenced
     * and forgot (ReplicationControlManager.maybeFenceOneStaleBroker writes a fencing record
     * for it). That is failover's own behaviour, not the state the snapshot carries: copied,
     * so that a difference is one of that state. 3.6-3.9 track sessions of unfenced brokers
     * only (BrokerHeartbeatManager's unfenced list), which activation opens anew: not copied
     * (the clock moves past every session at each fence event). */
    static void copySessions(ClusterControlManager from, ClusterControlManager to) {
        Object trackerFrom;
        Object trackerTo;
        try {
            trackerFrom = invoke(from.heartbeatManager(), "tracker");
            trackerTo = invoke(to.heartbeatManager(), "tracker");
        } catch (RuntimeException none) {  // 3.x: no BrokerHeartbeatTracker
            return;
        }
        java.lang.reflect.Field f = field(trackerFrom.getClass(), "contactTimes");
        @SuppressWarnings("unchecked")
        Map<Object, Object> a = (Map<Object, Object>) get(f, trackerFrom);
        @SuppressWarnings("unchecked")
        Map<Object, Object> b = (Map<Object, Object>) get(f, trackerTo);
        b.clear();
        b.putAll(a);
    }

    /** The fresh controller's replica placer continues the original's random sequence. */
    static void copyPlacerRandom(ClusterControlManager from, ClusterControlManager to) {
        Object placerFrom = invoke(from, "replicaPlacer");
        Object placerTo = invoke(to, "replicaPlacer");
        if (placerFrom.getClass() != placerTo.getClass()) {
            return;
        }
        try {
            java.lang.reflect.Field f = field(placerFrom.getClass(), "random");
            Random r = (Random) get(f, placerFrom);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(r);
            }
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
                f.set(placerTo, in.readObject());
            }
        } catch (ReflectiveOperationException | java.io.IOException | RuntimeException e) {
            System.err.println("differential driver: could not copy the replica placer's random state: " + e);
        }
    }

    /** The loaded state against the original's: partitions, brokers, finalized features. */
    ObjectNode loadedDiff(DriverState st, DriverState fresh, long seq) {
        ObjectNode a = stateOf(st);
        ObjectNode b = stateOf(fresh);
        String path = firstDifference(a, b, "");
        if (path == null) {
            return null;
        }
        // named by what differs: loaded.configs, loaded.partitions.<field>, loaded.brokers.<field>
        String[] parts = path.split("[.\\[]");
        String name = "loaded." + parts[0] + ((parts[0].equals("partitions") || parts[0].equals("brokers"))
            && parts.length > 2 ? "." + parts[2] : "");
        return difference(name, "the loaded state differs at " + path, at(a, path), at(b, path), seq)
            .put("path", path);
    }

    static ObjectNode stateOf(DriverState st) {
        ObjectNode s = JSON.createObjectNode();
        s.set("partitions", DriverReport.partitions(st, false));
        s.set("brokers", DriverReport.brokers(st));
        ObjectNode features = s.putObject("features");
        Map<String, Short> levels = new TreeMap<>(st.featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap());
        levels.forEach(features::put);
        s.set("configs", configsOf(st));
        return s;
    }

    /** Every dynamic config the ConfigurationControlManager holds ("topic t" / "broker 1" /
     * "broker " for the cluster default -> "name=value;..."), read from its configData. */
    @SuppressWarnings("unchecked")
    static ObjectNode configsOf(DriverState st) {
        Map<Object, Object> data = (Map<Object, Object>) get(field(ConfigurationControlManager.class,
            "configData"), st.configurationControl);
        Map<String, String> out = new TreeMap<>();
        for (Object key : data.keySet()) {
            org.apache.kafka.common.config.ConfigResource r = (org.apache.kafka.common.config.ConfigResource) key;
            Map<String, String> configs = new TreeMap<>(st.configurationControl.getConfigs(r));
            if (!configs.isEmpty()) {
                StringBuilder b = new StringBuilder();
                configs.forEach((k, v) -> b.append(b.length() == 0 ? "" : ";").append(k).append('=').append(v));
                out.put(r.type().name().toLowerCase(java.util.Locale.ROOT) + " " + r.name(), b.toString());
            }
        }
        ObjectNode n = JSON.createObjectNode();
        out.forEach(n::put);
        return n;
    }

    // ---- every later event, on both ----

    /** The original's answer, with "snapshotDiff" when the fresh managers answered the same
     * event otherwise (the shadow then ends). */
    ObjectNode compare(byte[] line, int length, long seq, ObjectNode answer) {
        DriverState st = original.st;
        if (st.journal != null && st.journal.size() > FOLD) {
            // A long session without snapshot points: the records folded into the image, so
            // that the journal's memory stays bounded.
            image = imageAt(image, st.journal, st.nextOffset - 1);
            st.journal.clear();
        }
        if (shadow == null) {
            return answer;
        }
        if (justTaken) {  // the snapshot event itself: compared when loaded
            justTaken = false;
            return answer;
        }
        ObjectNode other = shadow.answer(line, length, seq);
        left--;
        ObjectNode a = normal(answer);
        ObjectNode b = normal(other);
        String path = firstDifference(a, b, "");
        if (path != null && path.startsWith("records") && fencesSeveral(a) && fencesSeveral(b)) {
            // Several brokers' sessions expired at once: the stale-broker task fences them in
            // the order BrokerHeartbeatTracker.maybeRemoveExpired iterates its
            // ConcurrentHashMap (4.0+; 3.x: BrokerHeartbeatManager's unfenced list by last
            // contact), which is the hash table's, not the state's: the records may come in
            // another order. Then the state after the event is compared, not the records.
            a.remove("records");
            b.remove("records");
            path = firstDifference(a, b, "");
        }
        if (path != null) {
            String[] parts = path.split("[.\\[]");
            String name = parts[0];
            if ((name.equals("partitions") || name.equals("brokers")) && parts.length > 2) {
                name = name + "." + parts[2];  // partitions.<key>.<field>...: the field
            }
            ObjectNode d = difference(name, "after the snapshot at event " + takenAt + " ("
                + (seq - takenAt) + " event(s) before this one), the fresh controller's answer differs at "
                + path, at(a, path), at(b, path), seq);
            d.put("path", path);
            d.put("snapshotAt", takenAt);
            ObjectNode freshAnswer = d.putObject("freshAnswer");
            for (String k : new String[] {"ok", "error", "exception", "fatal", "records"}) {
                if (b.has(k)) {
                    freshAnswer.set(k, b.get(k));
                }
            }
            answer.set("snapshotDiff", d);
            shadow = null;
        } else if (left <= 0) {
            shadow = null;
        }
        return answer;
    }

    static ObjectNode difference(String name, String detail, JsonNode original, JsonNode fresh, long seq) {
        ObjectNode d = JSON.createObjectNode();
        d.put("name", name);
        d.put("detail", detail);
        d.set("original", original);
        d.set("fresh", fresh);
        d.put("seq", seq);
        return d;
    }

    /** An answer without what may differ between two controllers of the same state: coverage
     * probes, topic ids (a topic created after the snapshot gets a random one each side). */
    static ObjectNode normal(ObjectNode answer) {
        ObjectNode n = answer.deepCopy();
        n.remove("newProbes");
        n.remove("snapshotDiff");
        n.remove("oracles");  // the original's own checks (DriverOracleChecks), not the state
        n.remove("oracleError");
        strip(n);
        if (n.get("records") instanceof ArrayNode) {
            // One event's records are one atomic batch; a change of several partitions runs
            // through timeline hash sets whose order follows the topic ids (random per side
            // for a topic created after the snapshot). The order kept: each partition's own
            // records, and the others (brokers, configs, features) among themselves.
            List<JsonNode> records = new java.util.ArrayList<>();
            n.get("records").forEach(records::add);
            records.sort(java.util.Comparator.comparing(DriverSnapshot::partitionKey));
            ArrayNode sorted = n.putArray("records");
            records.forEach(sorted::add);
        }
        return n;
    }

    /** The answer's records fence more than one broker. */
    static boolean fencesSeveral(JsonNode answer) {
        int n = 0;
        for (JsonNode r : answer.path("records")) {
            if ((r.path("type").asText().equals("BrokerRegistrationChangeRecord") && r.path("fenced").asInt() == 1)
                || r.path("type").asText().equals("FenceBrokerRecord")) {
                n++;
            }
        }
        return n > 1;
    }

    static String partitionKey(JsonNode record) {
        return record.has("partitionId") ? record.path("topic").asText() + "-"
            + String.format("%06d", record.path("partitionId").asInt()) : "";
    }

    static void strip(JsonNode node) {
        if (node.isObject()) {
            ObjectNode o = (ObjectNode) node;
            o.remove("topicId");
            for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (e.getValue().isTextual() && (e.getKey().equals("error") || e.getKey().equals("exception"))) {
                    e.setValue(TextNode.valueOf(UUID.matcher(e.getValue().asText()).replaceAll("<id>")));
                } else if (e.getKey().equals("byName") && e.getValue().isObject()) {
                    // findTopics: name -> "ResultOrError(<topic id>)" (DriverQueryEvents), the
                    // id random per side for a topic created after the snapshot
                    // (snapshot:byName:findTopics)
                    for (Iterator<Map.Entry<String, JsonNode>> names = e.getValue().fields(); names.hasNext(); ) {
                        Map.Entry<String, JsonNode> n = names.next();
                        n.setValue(TextNode.valueOf(UUID.matcher(n.getValue().asText()).replaceAll("<id>")));
                    }
                } else {
                    strip(e.getValue());
                }
            }
        } else if (node.isArray()) {
            for (JsonNode c : node) {
                strip(c);
            }
        }
    }

    /** The first path (a.b[2].c) where the two differ, or null. */
    static String firstDifference(JsonNode a, JsonNode b, String path) {
        if (a == null || b == null || a.getNodeType() != b.getNodeType()) {
            return (a == null && b == null) ? null : path;
        }
        if (a.isObject()) {
            java.util.Set<String> names = new java.util.LinkedHashSet<>();
            a.fieldNames().forEachRemaining(names::add);
            b.fieldNames().forEachRemaining(names::add);
            for (String k : names) {
                String p = firstDifference(a.get(k), b.get(k), path.isEmpty() ? k : path + "." + k);
                if (p != null) {
                    return p;
                }
            }
            return null;
        }
        if (a.isArray()) {
            ArrayNode x = (ArrayNode) a;
            ArrayNode y = (ArrayNode) b;
            for (int i = 0; i < Math.min(x.size(), y.size()); i++) {
                String p = firstDifference(x.get(i), y.get(i), path + "[" + i + "]");
                if (p != null) {
                    return p;
                }
            }
            return x.size() == y.size() ? null : path + ".size";
        }
        return a.equals(b) ? null : path;
    }

    /** The node at a path firstDifference gave (null: missing). */
    static JsonNode at(JsonNode root, String path) {
        JsonNode n = root;
        for (String part : path.split("\\.")) {
            if (n == null) {
                return null;
            }
            String name = part;
            int bracket = part.indexOf('[');
            if (bracket >= 0) {
                name = part.substring(0, bracket);
            }
            if (!name.isEmpty()) {
                n = name.equals("size") && n.isArray() ? JSON.getNodeFactory().numberNode(n.size()) : n.get(name);
            }
            for (int i = bracket; n != null && i >= 0; i = part.indexOf('[', i + 1)) {
                int end = part.indexOf(']', i);
                n = n.get(Integer.parseInt(part.substring(i + 1, end)));
            }
        }
        return n;
    }
}
