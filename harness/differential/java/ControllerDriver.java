/*
 * kafka-chaos differential driver: the build's own KRaft controller code, driven by events.
 *
 * Reads JSON lines on stdin (first a settings object, then one event per line) and answers
 * one JSON line per line on stdout: the records the controller wrote for the event and the
 * partition state after it. The protocol is documented in harness/differential/README.md.
 *
 * What runs: the managers QuorumController composes (FeatureControlManager,
 * ClusterControlManager, ConfigurationControlManager, ReplicationControlManager), built
 * with their own Builders and called the way QuorumController calls them for each request;
 * every record they return is replayed into them (as QuorumController.replay does), at
 * consecutive offsets, so state carries across events. Fencing, unclean-shutdown handling,
 * leader election and ELR maintenance are the build's own code. Not run: the Raft log, the
 * event queue, snapshots, metrics, the periodic tasks (except when an event asks for one).
 * The clock is a manual one: it moves only when an event lets a broker's session expire.
 *
 * One set of sources for every build from 3.6 on, compiled together (harness/cluster/
 * javaprogram.py), all in the package org.apache.kafka.controller because the managers and
 * their Builders are package-private (every class is named Driver*, so none can shadow one
 * of Kafka's). By job:
 *   ControllerDriver        this file: the loop, an event's answer, the dispatch by op
 *   DriverProtocol          the wire format: lines, JSON, refusals, an event's fields
 *   DriverSetup             the session's start: settings, the managers built, bootstrap
 *   DriverState             the managers, the driver's bookkeeping, the replay of records
 *   DriverReport            the records, partitions and brokers every answer carries
 *   DriverBrokerEvents      register, heartbeat, fence, controlled shutdown, unregister
 *   DriverTopicEvents       createTopic, createPartitions, deleteTopic
 *   DriverConfigEvents      alterConfig
 *   DriverFeatureEvents     updateFeature, the supported feature levels
 *   DriverPartitionEvents   alterPartition, reassignments, elections, periodic tasks
 *   DriverDirectoryEvents   log directories: registration, heartbeat, AssignReplicasToDirs
 *   DriverQueryEvents       ListPartitionReassignments, the topic lookups (no records)
 *   DriverOracles           the checks that need no model (no fault)
 *   DriverSnapshot          snapshot equivalence: the snapshot event, fresh managers run
 *                           beside the original, their answers compared
 *   DriverOracleChecks      index consistency (DriverIndexOracle, DriverIndexScope, DriverBrokerIndexes), image agreement
 *                           (DriverImageOracle) after every event; DriverOracleNames
 *   DriverCoverage          the JaCoCo probes each answer tells
 *   DriverLine, DriverLine36 ... DriverLine43: what differs per release line (the members
 *                           that differ are reached by reflection, DriverReflection, so the
 *                           sources compile against each build's jars); DriverKafkaUtils:
 *                           the two client utilities 4.4 moved
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.Lines;
import static org.apache.kafka.controller.DriverProtocol.ProtocolError;
import static org.apache.kafka.controller.DriverProtocol.Refused;
import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverProtocol.describe;
import static org.apache.kafka.controller.DriverProtocol.parse;
import static org.apache.kafka.controller.DriverProtocol.requireInt;
import static org.apache.kafka.controller.DriverProtocol.write;
import static org.apache.kafka.controller.DriverReflection.unwrap;

public final class ControllerDriver {
    final DriverState st = new DriverState(DriverLine.forVersion(DriverKafkaUtils.kafkaVersion()));
    final DriverCoverage coverage = new DriverCoverage();
    final DriverBrokerEvents brokers = new DriverBrokerEvents(st);
    final DriverTopicEvents topics = new DriverTopicEvents(st);
    final DriverConfigEvents configs = new DriverConfigEvents(st);
    final DriverFeatureEvents features = new DriverFeatureEvents(st);
    final DriverPartitionEvents partitions = new DriverPartitionEvents(st, brokers);
    /** What the answers so far said of each broker (DriverReport.brokerKey). */
    final java.util.Map<Integer, Long> brokersSent = new java.util.HashMap<>();
    final DriverQueryEvents queries = new DriverQueryEvents(st);
    final DriverSnapshot snapshots = new DriverSnapshot(this);  // snapshot equivalence
    final DriverOracleChecks oracles = new DriverOracleChecks(st);

    public static void main(String[] args) throws IOException {
        // Answers go to the real stdout; anything a library prints goes to stderr.
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(System.err);
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        Lines in = new Lines(System.in);
        if (!in.next()) {
            return;
        }
        ControllerDriver driver = new ControllerDriver();
        if (!open(driver, in.line, in.length, false, out)) {
            return;
        }
        long seq = 0;
        while (in.next()) {
            if (in.blank()) {
                continue;
            }
            if (startsWith(in.line, in.length, NEW_SESSION)) {
                // A new session in this JVM (issue 44 item 3: the JIT stays warm and no JVM
                // starts): new managers and state, exactly as a new process would build them;
                // only the reflection and converter caches (static) are kept.
                driver = new ControllerDriver();
                if (!open(driver, in.line, in.length, true, out)) {
                    return;
                }
                seq = 0;
                continue;
            }
            seq++;
            ObjectNode answer = driver.answer(in.line, in.length, seq);
            write(out, answer);
            if (answer.has("fatal")) {
                out.flush();
                System.exit(2);
            }
            if (!in.ready()) {
                out.flush();  // flush when no further event is waiting: batches when pipelined
            }
        }
        out.flush();
    }

    static final byte[] NEW_SESSION = "{\"newSession\"".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    static boolean startsWith(byte[] line, int length, byte[] prefix) {
        if (length < prefix.length) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (line[i] != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    /** The session's start: the ready answer written and flushed; false if the session could
     * not start (the answer says why: unsupported, protocolError or fatal). */
    static boolean open(ControllerDriver driver, byte[] line, int length, boolean nested,
                        OutputStream out) throws IOException {
        ObjectNode ready;
        boolean started = false;
        try {
            JsonNode settings = parse(line, length);
            ready = driver.start(nested ? settings.path("newSession") : settings);
            started = true;
        } catch (Unsupported u) {
            ready = JSON.createObjectNode();
            ready.put("unsupported", u.getMessage());
            ready.put("kafka", DriverKafkaUtils.kafkaVersion());
        } catch (ProtocolError p) {
            ready = JSON.createObjectNode();
            ready.put("ok", false);
            ready.put("protocolError", p.getMessage());
        } catch (Throwable t) {
            ready = JSON.createObjectNode();
            ready.put("ok", false);
            ready.put("fatal", describe(unwrap(t)));
            unwrap(t).printStackTrace();
        }
        write(out, ready);
        out.flush();
        return started;
    }

    /** The session as the settings say, the settings' brokers registered and unfenced, in
     * order: the ready answer. */
    ObjectNode start(JsonNode settings) {
        ObjectNode ready = DriverSetup.start(st, coverage, settings);
        snapshots.started(settings);
        for (JsonNode b : settings.path("brokers")) {
            int id = b.asInt();
            brokers.register(id, true, null);
            brokers.heartbeat(id, false, false, true);
        }
        return withState(ready, st.sessionNotes, false);
    }

    /** The answer with what every answer carries: its notes, the records the controller
     * wrote, the partitions (all, or only those changed), the brokers, new coverage. */
    ObjectNode withState(ObjectNode answer, List<String> notes, boolean changedOnly) {
        if (!notes.isEmpty()) {
            ArrayNode n = answer.putArray("notes");
            notes.forEach(n::add);
        }
        answer.set("records", st.recordsOut);
        answer.set("partitions", DriverReport.partitions(st, changedOnly));
        if (!st.removedOut.isEmpty()) {
            ArrayNode removed = answer.putArray("removed");
            st.removedOut.forEach(removed::add);
        }
        // With report "changed", only the brokers that changed since the answers before
        // said them ("brokersChanged", "brokersGone": harness/differential/driver.py puts the
        // whole map together again; issue 44 item 3: 45 registrations written and read at
        // each event that changed one were a tenth of the driver's time in a campaign).
        if (!changedOnly) {
            answer.set("brokers", DriverReport.brokers(st));
            DriverReport.brokersSent(st, brokersSent);
        } else {
            List<Integer> gone = new ArrayList<>();
            ObjectNode changed = DriverReport.brokersChanged(st, brokersSent, gone);
            if (changed != null) {
                answer.set("brokersChanged", changed);
            }
            if (!gone.isEmpty()) {
                ArrayNode g = answer.putArray("brokersGone");
                gone.forEach(g::add);
            }
        }
        ObjectNode fresh = coverage.newProbes();
        if (fresh != null) {
            answer.set("newProbes", fresh);
        }
        return answer;
    }

    long seq;  // the event's

    ObjectNode answer(byte[] line, int length, long seq) {
        this.seq = seq;
        return snapshots.compare(line, length, seq, answer1(line, length, seq));
    }

    ObjectNode answer1(byte[] line, int length, long seq) {
        st.beginEvent();
        ObjectNode answer = JSON.createObjectNode();
        answer.put("seq", seq);
        List<String> notes = new ArrayList<>();
        try {
            JsonNode event = parse(line, length);
            String op = event.path("op").asText("");
            answer.put("op", op);
            ObjectNode result = dispatch(op, event, notes);
            answer.put("ok", true);
            if (result != null) {
                answer.setAll(result);
            }
        } catch (Unsupported u) {
            answer.remove("ok");
            answer.put("unsupported", u.getMessage());
        } catch (ProtocolError p) {
            answer.put("ok", false);
            answer.put("protocolError", p.getMessage());
        } catch (DriverState.ReplayFailure f) {
            answer.put("ok", false);
            answer.put("fatal", describe(f.getCause()));
            f.getCause().printStackTrace();
        } catch (Refused r) {
            answer.put("ok", false);
            answer.put("error", r.error.name() + ": " + r.getMessage());
            answer.put("errorName", r.error.name());
        } catch (Throwable t) {
            DriverOracles.noFault(t, answer, st);
        }
        oracles.check(answer);
        return withState(answer, notes, st.reportChanged);
    }

    ObjectNode dispatch(String op, JsonNode e, List<String> notes) {
        switch (op) {
            case "register":
                return brokers.register(requireInt(e, "broker"), e.path("clean").asBoolean(true), notes, e);
            case "unfence":
                return brokers.heartbeat(requireInt(e, "broker"), false, false, true);
            case "heartbeat":
                return brokers.heartbeat(requireInt(e, "broker"), e.path("wantFence").asBoolean(false),
                    e.path("wantShutDown").asBoolean(false), e.path("caughtUp").asBoolean(true), e);
            case "fence":
                return brokers.fence(requireInt(e, "broker"));
            case "controlledShutdown":
                return brokers.controlledShutdown(requireInt(e, "broker"), e.path("maxRounds").asInt(5));
            case "unregister":
                return brokers.unregister(requireInt(e, "broker"));
            case "createTopic":
                return topics.createTopic(e);
            case "createPartitions":
                return topics.createPartitions(e);
            case "deleteTopic":
                return topics.deleteTopic(e);
            case "updateFeature":
                return features.updateFeature(e);
            case "alterPartition":
                return partitions.alterPartition(e, null);
            case "completeReassignment":
                return partitions.completeReassignment(e);
            case "reassign":
                return partitions.reassign(e, false);
            case "cancelReassignment":
                return partitions.reassign(e, true);
            case "electLeaders":
                return partitions.electLeaders(e);
            case "alterConfig":
                return configs.alterConfig(e, notes);
            case "tick":
                return partitions.tick(e);
            case "assignDirs": {
                ObjectNode out = brokers.dirs.assignDirs(e);
                if (e.has("elect")) {
                    // then ElectLeaders of the same partition, in the same event: no other
                    // event runs between the directory's return and the election
                    // (workload_paths.py, "later")
                    ObjectNode elect = JSON.createObjectNode().put("op", "electLeaders")
                        .put("topic", e.path("topic").asText())
                        .put("partition", e.path("partition").asInt(0))
                        .put("type", e.path("elect").asText());
                    out.set("elect", partitions.electLeaders(elect));
                }
                return out;
            }
            case "listReassignments":
                return queries.listReassignments(e);
            case "findTopics":
                return queries.findTopics(e);
            case "state":
                return null;  // the answer carries the state
            case "snapshot":
                return snapshots.take(e, seq);
            default:
                if (DriverOracleChecks.TEST_OPS && "testCorrupt".equals(op)) {
                    return oracles.corrupt(e);  // test-only, not a protocol op (DriverOracleChecks)
                }
                throw new ProtocolError("unknown op '" + op + "'; known: register, unfence, heartbeat, "
                    + "fence, controlledShutdown, unregister, createTopic, createPartitions, deleteTopic, "
                    + "updateFeature, alterPartition, "
                    + "completeReassignment, reassign, cancelReassignment, electLeaders, alterConfig, "
                    + "tick, assignDirs, listReassignments, findTopics, state, snapshot");
        }
    }
}
