/*
 * The oracles that need no model and look at the state after every event (issue 44 item 1):
 * index consistency (DriverIndexOracle) and image agreement (DriverImageOracle). Each
 * disagreement is reported once, at the event that brought it: the answer's "oracles" lists
 * {"oracle": "index"|"image", "name": the index or the image field, "where": a partition
 * "t-0", "broker N", "topic t" or "event", "detail"}; one that lasts is not reported again
 * (its key is remembered while it lasts), so a finding's op is the event that made it. The
 * harness makes each a finding of its own class (harness/differential/oracles.py:
 * index:<name>:<op>:<profile>, image:<name>:<op>:<profile>).
 *
 * Test-only (JVM property kafka.chaos.driver.testOps=true): op "testCorrupt" breaks the
 * state the oracles read, as a bug of the build would: "staleElr" indexes a broker in
 * brokersToElrs for a partition whose ELR does not hold it; "unloggedChange" replays a
 * PartitionChangeRecord (leader epoch + 1) into the managers only, so the image, built from
 * the records, does not have it.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.metadata.PartitionRegistration;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.ProtocolError;
import static org.apache.kafka.controller.DriverProtocol.requireInt;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invoke;

final class DriverOracleChecks {
    static final boolean TEST_OPS = Boolean.getBoolean("kafka.chaos.driver.testOps");
    /** -Dkafka.chaos.driver.oracles=false: neither (to measure the driver without them);
     * =index or =image: that one only. */
    static final String WHICH = System.getProperty("kafka.chaos.driver.oracles", "index,image");
    static final boolean INDEX = WHICH.contains("index");
    static final boolean IMAGE = WHICH.contains("image");
    static final boolean ON = INDEX || IMAGE;

    final DriverState st;
    final DriverOracleNames names = new DriverOracleNames();
    final DriverImageOracle image = new DriverImageOracle(names);
    /** The keys of the disagreements reported and still there. */
    Set<Object> reported = new HashSet<>();
    Set<Object> now = new HashSet<>();
    final Set<Object> sticky = new HashSet<>();
    ArrayNode found;
    /** A test-only op changed the state without records: check everything. */
    boolean corrupted;
    /** Off for a snapshot's fresh managers (DriverSnapshot): they are judged against the
     * original's answers, and the original's oracles already check the same state. */
    boolean off;

    DriverOracleChecks(DriverState st) {
        this.st = st;
        if (ON) {
            st.onReplay = this::onRecord;
        }
    }

    void onRecord(ApiMessage message, long offset) {
        if (off) {
            return;
        }
        if (message instanceof TopicRecord) {
            names.topic(((TopicRecord) message).topicId(), ((TopicRecord) message).name());
        }
        if (IMAGE) {
            image.onRecord(message, offset);
        }
    }

    /** Both oracles on the state after the event; what is new goes in the answer. */
    @SuppressWarnings("unchecked")
    void check(ObjectNode answer) {
        if (!ON || off || st.replicationControl == null) {
            return;
        }
        found = null;
        boolean skipped = !corrupted && st.recordsOut != null && st.recordsOut.size() == 0;
        try {
            if (INDEX) {
                // The replication indexes are ReplicationControlManager's, changed only by its
                // replay of the topic and partition records (as the registrations they index):
                // after an event that replayed none (broker, config, feature records only, or
                // none) they are as the last check found them, and its reports stand.
                boolean replicated = corrupted || st.recordsOut == null || st.replicationReplayed;
                if (replicated && scope.full(st, corrupted)) {
                    lastReplication.clear();
                    scope.sawAll(DriverIndexOracle.checkReplication(st, names, recordingSink));
                } else if (replicated) {
                    // the partitions the records named (DriverIndexScope); the other reports stand
                    java.util.Set<String> wheres = DriverIndexScope.wheres(st, names);
                    List<Object[]> last = new java.util.ArrayList<>(lastReplication);
                    lastReplication.clear();
                    for (Object[] r : last) {
                        if (!DriverIndexScope.rechecked(r, wheres)) {
                            recordingSink.report((String) r[0], (String) r[1], r[2], (java.util.function.Supplier<String>) r[3]);
                        }
                    }
                    scope.check(st, names, recordingSink);
                } else {
                    for (Object[] r : lastReplication) {
                        indexSink.report((String) r[0], (String) r[1], r[2], (java.util.function.Supplier<String>) r[3]);
                    }
                }
                // the heartbeat manager moves without records: its part after every event; the
                // registrations' own indexes after a broker record (else their reports stand)
                boolean registered = corrupted || st.recordsOut == null || st.clusterReplayed;
                if (registered) {
                    lastRegistrations.clear();
                } else {
                    for (Object[] r : lastRegistrations) {
                        indexSink.report((String) r[0], (String) r[1], r[2], (java.util.function.Supplier<String>) r[3]);
                    }
                }
                DriverBrokerIndexes.checkBrokers(st, brokerSink, registered);
            }
            if (IMAGE && !skipped) {
                image.check(st, (name, where, key, detail) -> report("image", name, where, key, detail), corrupted);
            }
        } catch (Throwable t) {
            // a failure of the oracles themselves (e.g. a member this build lacks): said in
            // the answer and on stderr, the session goes on
            answer.put("oracleError", DriverProtocol.describe(DriverReflection.unwrap(t)));
            DriverReflection.unwrap(t).printStackTrace();
        }
        corrupted = false;
        if (skipped) {
            // the image and the replication indexes were not looked at: what they disagreed
            // in before still stands; the broker checks' keys were added to now again
            reported.addAll(now);
            now.clear();
        } else {
            Set<Object> last = reported;
            reported = now;
            now = last;
            now.clear();
        }
        if (found != null) {
            answer.set("oracles", found);
        }
    }

    final DriverIndexOracle.Sink indexSink = new DriverIndexOracle.Sink() {
        @Override
        public void report(String name, String where, Object key, java.util.function.Supplier<String> detail) {
            DriverOracleChecks.this.report("index", name, where, key, detail);
        }

        @Override
        public boolean known(Object key) {
            return sticky.contains(List.of("index", key));
        }
    };

    final DriverIndexScope scope = new DriverIndexScope();
    /** The registrations' own indexes' reports at their last check (DriverBrokerIndexes). */
    final List<Object[]> lastRegistrations = new java.util.ArrayList<>();
    final DriverIndexOracle.Sink brokerSink = (name, where, key, detail) -> {
        if (DriverBrokerIndexes.REGISTRATION_INDEXES.contains(name)) {
            lastRegistrations.add(new Object[] {name, where, key, detail});
        }
        indexSink.report(name, where, key, detail);
    };
    /** The replication part's reports at its last run, said again when it is not run. */
    final List<Object[]> lastReplication = new java.util.ArrayList<>();
    final DriverIndexOracle.Sink recordingSink = new DriverIndexOracle.Sink() {
        @Override
        public void report(String name, String where, Object key, java.util.function.Supplier<String> detail) {
            lastReplication.add(new Object[] {name, where, key, detail});
            indexSink.report(name, where, key, detail);
        }

        @Override
        public boolean known(Object key) {
            return indexSink.known(key);
        }
    };

    void report(String oracle, String name, String where, Object key, java.util.function.Supplier<String> detail) {
        Object k = List.of(oracle, key);
        if (key instanceof List && ((List<?>) key).size() > 1 && "stale".equals(((List<?>) key).get(1))) {
            // an entry nothing explains, found by a walk the index oracle does only when the
            // count of such entries changes (DriverIndexOracle.walk): reported once
            if (!sticky.add(k)) {
                return;
            }
        } else {
            now.add(k);
            if (reported.contains(k)) {
                return;
            }
        }
        if (found == null) {
            found = JSON.createArrayNode();
        }
        ObjectNode o = found.addObject();
        o.put("oracle", oracle);
        o.put("name", name);
        o.put("where", where);
        o.put("detail", detail.get());
    }

    /** The test-only op: break the state as a bug would (see the header). */
    ObjectNode corrupt(JsonNode e) {
        if (!TEST_OPS) {
            throw new ProtocolError("testCorrupt is a test-only op (-Dkafka.chaos.driver.testOps=true)");
        }
        String kind = e.path("kind").asText("");
        corrupted = true;
        Uuid topic = st.topicId(e.path("topic").asText());
        int partition = e.path("partition").asInt(0);
        switch (kind) {
            case "staleElr": {
                if (DriverIndexOracle.TO_ELRS == null) {
                    throw new DriverProtocol.Unsupported("this build has no brokersToElrs (3.8+)");
                }
                Object elrs = get(DriverIndexOracle.TO_ELRS, st.replicationControl);
                invoke(elrs, "update", topic, partition, new int[0], new int[] {requireInt(e, "broker")});
                return null;
            }
            case "unloggedChange": {
                PartitionRegistration reg = st.replicationControl.getPartition(topic, partition);
                st.replicationControl.replay(new PartitionChangeRecord().setTopicId(topic)
                    .setPartitionId(partition).setLeader(reg.leader));
                return null;
            }
            default:
                throw new ProtocolError("testCorrupt kind '" + kind + "': staleElr or unloggedChange");
        }
    }
}
