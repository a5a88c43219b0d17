/*
 * Index consistency (issue 44 item 1): after every event, every index the managers keep is
 * recomputed from the registrations it indexes and compared with the build's own object,
 * read by reflection. Each index, and where Kafka keeps it in step:
 *
 *   brokersToIsrs            ReplicationControlManager.updatePartitionInfo ->
 *                            BrokersToIsrs.update: broker -> topic -> partitions whose ISR
 *                            holds it (the leader's entry flagged LEADER_FLAG); a leaderless
 *                            partition under NO_LEADER (-1), flagged
 *   brokersToElrs            (3.8+) updatePartitionInfo -> BrokersToElrs.update: broker ->
 *                            topic -> partitions whose ELR holds it
 *   reassigningTopics        updateReassigningTopicsIfNeeded: topic -> partitions with adding
 *                            or removing replicas (isReassignmentInProgress)
 *   imbalancedPartitions     replay(PartitionRecord / PartitionChangeRecord): partitions whose
 *                            leader is not the preferred replica (!hasPreferredLeader)
 *   directoriesToPartitions  (3.7+) updatePartitionDirectories: a directory that is not
 *                            reserved (DirectoryId.reserved) -> the partitions placed on it
 *   topicsByName             replay(TopicRecord / RemoveTopicRecord): name -> id, the inverse
 *                            of topics (id -> TopicControlInfo.name)
 *   topicsWithCollisionChars the names with '.' or '_' by Topic.unifyCollisionChars
 *   registerBrokerRecordOffsets, heartbeat brokers, active, directoryToBroker
 *                            ClusterControlManager.replay of the broker records: one per
 *                            registration; the heartbeat manager's fenced state as the
 *                            registration's; active = not fenced, not shutting down; every
 *                            registered directory -> its broker (3.7+)
 *
 * A field this build lacks (3.6: brokersToElrs, directoriesToPartitions, directoryToBroker;
 * 3.7: brokersToElrs) is probed and skipped.
 *
 * Cost (bench/RESULTS-diff.md, "Index and image oracles"): one pass over the registrations
 * with lookups into the index (no copy of it), only after an event that replayed a record
 * ReplicationControlManager replays (its indexes are its own fields, changed only by its
 * replay of those records, as the registrations they index; DriverState.replicationReplayed;
 * after any other event the last check's reports stand, DriverOracleChecks); the broker checks
 * run after every event: the heartbeat manager moves without records. An index's own entries are walked, to name
 * those nothing explains, only when it holds more entries than the registrations explain
 * (directoriesToPartitions: and that excess changed since its last walk, walk()); a deleted
 * topic's stale entries are reported once (gone()).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.PartitionRegistration;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.field;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;
import static org.apache.kafka.controller.DriverReflection.method;

final class DriverIndexOracle {
    static final int LEADER_FLAG = 0x8000_0000;
    static final int NO_LEADER = -1;

    static final Class<?> RCM = ReplicationControlManager.class;
    static final Class<?> TOPIC_INFO = classOrNull(
        "org.apache.kafka.controller.ReplicationControlManager$TopicControlInfo");
    static final Field TOPICS = field(RCM, "topics");
    static final Field TOPICS_BY_NAME = field(RCM, "topicsByName");
    static final Field COLLISIONS = field(RCM, "topicsWithCollisionChars");
    static final Field TO_ISRS = field(RCM, "brokersToIsrs");
    static final Field TO_ELRS = field(RCM, "brokersToElrs");  // 3.8+
    static final Field REASSIGNING = field(RCM, "reassigningTopics");
    static final Field IMBALANCED = field(RCM, "imbalancedPartitions");
    static final Field DIRS_TO_PARTS = field(RCM, "directoriesToPartitions");  // 3.7+
    static final Field INFO_NAME = TOPIC_INFO == null ? null : field(TOPIC_INFO, "name");
    static final Field INFO_PARTS = TOPIC_INFO == null ? null : field(TOPIC_INFO, "parts");
    static final Field ISR_MEMBERS = field(BrokersToIsrs.class, "isrMembers");
    static final Class<?> ELRS = classOrNull("org.apache.kafka.controller.BrokersToElrs");
    static final Field ELR_MEMBERS = ELRS == null ? null : field(ELRS, "elrMembers");
    static final Field PART_ELR = field(PartitionRegistration.class, "elr");  // 3.7+
    static final Field PART_DIRS = field(PartitionRegistration.class, "directories");  // 3.7+
    static final Class<?> CCM = ClusterControlManager.class;
    static final Field REGISTRATIONS = field(CCM, "brokerRegistrations");
    static final Field REG_OFFSETS = field(CCM, "registerBrokerRecordOffsets");
    static final Field HEARTBEATS = field(CCM, "heartbeatManager");
    static final Field DIR_TO_BROKER = field(CCM, "directoryToBroker");  // 3.7+
    static final Field HB_BROKERS = field(BrokerHeartbeatManager.class, "brokers");
    static final Field HB_ACTIVE = field(BrokerHeartbeatManager.class, "active");
    static final Class<?> HB_STATE = classOrNull(
        "org.apache.kafka.controller.BrokerHeartbeatManager$BrokerHeartbeatState");
    static final Method HB_FENCED = HB_STATE == null ? null : method(HB_STATE, "fenced", 0);
    static final Method HB_SHUTTING = HB_STATE == null ? null : method(HB_STATE, "shuttingDown", 0);
    static final Method REG_DIRS = method(BrokerRegistration.class, "directories", 0);  // 3.7+
    static final Class<?> DIRECTORY_ID = classOrNull("org.apache.kafka.common.DirectoryId");
    static final Method RESERVED = DIRECTORY_ID == null ? null : method(DIRECTORY_ID, "reserved", 1);
    static final Class<?> TOPIC_NAMES = classOrNull("org.apache.kafka.common.internals.Topic");
    static final Method HAS_COLLISION = TOPIC_NAMES == null ? null : method(TOPIC_NAMES, "hasCollisionChars", 1);
    static final Method UNIFY = TOPIC_NAMES == null ? null : method(TOPIC_NAMES, "unifyCollisionChars", 1);

    /** The TopicIdPartition class the indexes hold (3.6: the controller's own; 3.7+
     * server-common's), found from the type of imbalancedPartitions' elements. */
    static Constructor<?> tipConstructor;
    static Method tipTopic;
    static Method tipPartition;
    /** Per index, the deleted topics whose entries it still holds, reported once: a topic id
     * never comes back, so such an entry stays stale; walked past after its first report
     * (the campaign's sessions delete topics often: a build that leaks them would pay for
     * every one at every event). */
    static final Map<String, Set<Uuid>> GONE = new HashMap<>();

    /** Per index, the count of its entries beyond the recomputed ones at its last walk. */
    static final Map<String, Integer> EXCESS = new HashMap<>();

    /** Whether to walk directoriesToPartitions' entries to name those nothing explains:
     * when it holds more entries than the registrations explain, and not the same excess as
     * at its last walk (then its stale entries are those already reported: they last, a
     * deleted topic's for ever, and walking its sets of TopicIdPartition at every event
     * would cost a campaign on a build that leaks them more than all the rest; the price: a
     * stale entry that goes in the same event as a new one comes is seen late, at the next
     * event that changes the excess). brokersToIsrs and brokersToElrs are walked whenever
     * they hold more entries than explained (their int arrays are cheap; a deleted topic's
     * entries skipped after their first report): exact, also when a periodic task changes
     * several lanes in one event. Missing entries are found without a walk. */
    static boolean walk(String index, int excess) {
        Integer last = EXCESS.put(index, excess);
        return excess != 0 && (last == null || last != excess);
    }

    static boolean gone(String index, Uuid topic) {
        return GONE.computeIfAbsent(index, i -> new HashSet<>()).add(topic);
    }

    private DriverIndexOracle() {
    }

    interface Sink {
        /** One disagreement: the index, where (a partition "t-0", "broker N", or "topic t"),
         * a key that identifies it while it lasts, and what is wrong. */
        void report(String index, String where, Object key, Supplier<String> detail);

        /** A stale entry's key already reported (reported once: its report would be
         * dropped), so that nothing is built for it. */
        default boolean known(Object key) {
            return false;
        }
    }

    /** The partitions of the controller's topics: id -> (name, partition -> registration). */
    @SuppressWarnings("unchecked")
    static Map<Uuid, Object> topics(DriverState st) {
        return (Map<Uuid, Object>) get(TOPICS, st.replicationControl);
    }

    static String name(Object info) {
        return (String) get(INFO_NAME, info);
    }

    @SuppressWarnings("unchecked")
    static Map<Integer, PartitionRegistration> parts(Object info) {
        return (Map<Integer, PartitionRegistration>) get(INFO_PARTS, info);
    }

    /** The indexes of ReplicationControlManager against the topics' registrations: the
     * registrations read (null: this build's are not readable). */
    static List<DriverTopicParts> checkReplication(DriverState st, DriverOracleNames names, Sink out) {
        if (TOPICS == null || INFO_PARTS == null) {
            return null;
        }
        Map<Uuid, Object> topics = topics(st);
        List<DriverTopicParts> flat = DriverTopicParts.flatten(topics);
        checkTopicsByName(st, topics, flat, out);
        checkMembers(st, names, topics, flat, out, "brokersToIsrs", TO_ISRS, ISR_MEMBERS, true);
        if (TO_ELRS != null && PART_ELR != null) {
            checkMembers(st, names, topics, flat, out, "brokersToElrs", TO_ELRS, ELR_MEMBERS, false);
        }
        checkReassigning(st, names, topics, flat, out);
        checkImbalanced(st, names, flat, out);
        if (DIRS_TO_PARTS != null && PART_DIRS != null && RESERVED != null) {
            checkDirectories(st, names, topics, flat, out);
        }
        return flat;
    }

    // ---- ReplicationControlManager ----

    @SuppressWarnings("unchecked")
    static void checkTopicsByName(DriverState st, Map<Uuid, Object> topics, List<DriverTopicParts> flat, Sink out) {
        Map<String, Uuid> byName = (Map<String, Uuid>) get(TOPICS_BY_NAME, st.replicationControl);
        int colliding = 0;
        Map<String, Set<String>> collisions = COLLISIONS == null ? null
            : (Map<String, Set<String>>) get(COLLISIONS, st.replicationControl);
        for (DriverTopicParts t : flat) {
            String name = name(t.info);
            Uuid id = byName.get(name);
            if (!t.id.equals(id)) {
                out.report("topicsByName", "topic " + name, Arrays.asList("byName", name, t.id),
                    () -> "topic " + name + " (id " + t.id + ") is indexed by name as " + id);
            }
            if (collisions != null && HAS_COLLISION != null
                && (Boolean) invokeMethod(HAS_COLLISION, null, name)) {
                colliding++;
                Set<String> set = collisions.get((String) invokeMethod(UNIFY, null, name));
                if (set == null || !set.contains(name)) {
                    out.report("topicsWithCollisionChars", "topic " + name, Arrays.asList("collision", name),
                        () -> "topic " + name + " is not in the collision index under its unified name");
                }
            }
        }
        if (byName.size() != topics.size()) {
            for (Map.Entry<String, Uuid> e : byName.entrySet()) {
                Object info = topics.get(e.getValue());
                if (info == null || !e.getKey().equals(name(info))) {
                    out.report("topicsByName", "topic " + e.getKey(), Arrays.asList("byName", e.getKey(), e.getValue()),
                        () -> "the name " + e.getKey() + " is indexed to topic id " + e.getValue()
                            + (info == null ? ", which is not a topic" : ", whose name is " + name(info)));
                }
            }
        }
        if (collisions != null) {
            int indexed = 0;
            for (Set<String> s : collisions.values()) {
                indexed += s.size();
            }
            if (indexed != colliding) {
                int n = indexed;
                int c = colliding;
                out.report("topicsWithCollisionChars", "event", Arrays.asList("collision-count"),
                    () -> n + " names in the collision index, " + c + " topics with '.' or '_'");
            }
        }
    }

    /** brokersToIsrs / brokersToElrs: every member of every partition's ISR (ELR) indexed
     * under it, and nothing else (a count, then the entries walked when it differs). */
    @SuppressWarnings("unchecked")
    static void checkMembers(DriverState st, DriverOracleNames names, Map<Uuid, Object> topics, List<DriverTopicParts> flat,
                             Sink out, String index, Field holder, Field membersField, boolean isr) {
        Map<Integer, Map<Uuid, int[]>> members = (Map<Integer, Map<Uuid, int[]>>)
            get(membersField, get(holder, st.replicationControl));
        int expected = 0;
        for (DriverTopicParts t : flat) {
            Uuid id = t.id;
            for (int k = 0; k < t.regs.length; k++) {
                PartitionRegistration reg = t.regs[k];
                int partition = t.ids[k];
                int[] holders = isr ? reg.isr : (int[]) get(PART_ELR, reg);
                for (int b : holders) {
                    expected++;
                    checkIndexed(names, members, index, isr, id, partition, reg, b, out);
                }
                if (isr && reg.leader == NO_LEADER) {
                    expected++;
                    if (!indexed(members, NO_LEADER, id, partition | LEADER_FLAG)) {
                        String where = names.partition(id, partition);
                        out.report(index, where, Arrays.asList(index, "missing", "-1", id, partition),
                            () -> where + " has no leader (" + describe(reg) + ") but " + index
                                + " does not index it under NO_LEADER (-1)");
                    }
                }
            }
        }
        int actual = 0;
        for (Map<Uuid, int[]> byTopic : members.values()) {
            for (int[] ps : byTopic.values()) {
                actual += ps.length;
            }
        }
        if (actual == expected) {
            return;  // every expected entry found and no more: the index is the recomputed one
        }
        for (Map.Entry<Integer, Map<Uuid, int[]>> b : members.entrySet()) {
            int broker = b.getKey();
            for (Map.Entry<Uuid, int[]> t : b.getValue().entrySet()) {
                Object info = topics.get(t.getKey());
                if (info == null && !gone(index, t.getKey())) {
                    continue;  // a deleted topic's entries: reported once, when it went
                }
                int[] ps = t.getValue();
                for (int i = 0; i < ps.length; i++) {
                    int partition = ps[i] & ~LEADER_FLAG;
                    boolean leader = ps[i] < 0;
                    PartitionRegistration reg = info == null ? null : parts(info).get(partition);
                    // Why the entry is stale (0: it is not), the words only when reported: a
                    // lasting stale entry (reported once) is met at every walk.
                    int why = 0;
                    if (info == null) {
                        why = 1;
                    } else if (reg == null) {
                        why = 2;
                    } else if (broker == NO_LEADER) {
                        why = reg.leader == NO_LEADER ? 0 : 3;
                    } else {
                        int[] holders = isr ? reg.isr : (int[]) get(PART_ELR, reg);
                        if (!contains(holders, broker)) {
                            why = 4;
                        } else if (isr && leader != (reg.leader == broker)) {
                            why = 5;
                        }
                    }
                    for (int j = 0; why == 0 && j < i; j++) {
                        if (ps[j] == ps[i]) {
                            why = 6;
                        }
                    }
                    if (why != 0) {
                        Object key = Arrays.asList(index, "stale", broker, t.getKey(), ps[i]);
                        if (out.known(key)) {
                            continue;
                        }
                        int because = why;
                        Uuid topic = t.getKey();
                        String where = names.partition(topic, partition);  // a deleted topic's name too
                        out.report(index, where, key, () -> index + " indexes broker " + broker + " for " + where
                            + " but " + staleWhy(because, names, topic, partition, leader, reg, isr));
                    }
                }
            }
        }
    }

    static String staleWhy(int why, DriverOracleNames names, Uuid topic, int partition, boolean leader,
                           PartitionRegistration reg, boolean isr) {
        switch (why) {
            case 1:
                return "the topic " + names.topic(topic) + " (id " + topic + ") is not in the topics map";
            case 2:
                return "the topic has no partition " + partition;
            case 3:
                return "it has leader " + reg.leader;
            case 4:
                return "its " + (isr ? "ISR" : "ELR") + " does not hold the broker (" + describe(reg) + ")";
            case 5:
                return "indexed " + (leader ? "as" : "not as") + " its leader, which is " + reg.leader;
            default:
                return "indexed twice";
        }
    }

    /** Reports broker {@code b}, a holder of the partition's ISR (or ELR), missing from the index. */
    static void checkIndexed(DriverOracleNames names, Map<Integer, Map<Uuid, int[]>> members, String index,
                             boolean isr, Uuid id, int partition, PartitionRegistration reg, int b, Sink out) {
        int entry = isr && b == reg.leader ? partition | LEADER_FLAG : partition;
        if (indexed(members, b, id, entry)) {
            return;
        }
        String where = names.partition(id, partition);
        out.report(index, where, Arrays.asList(index, "missing", b, id, partition),
            () -> "broker " + b + " is in the " + (isr ? "ISR" : "ELR") + " of " + where
                + " (" + describe(reg) + ") but " + index + " does not index it"
                + (isr ? (entry < 0 ? " as its leader" : " as a follower") : "")
                + "; indexed: " + entries(members, b, id));
    }

    static boolean indexed(Map<Integer, Map<Uuid, int[]>> members, int broker, Uuid topic, int entry) {
        Map<Uuid, int[]> byTopic = members.get(broker);
        int[] ps = byTopic == null ? null : byTopic.get(topic);
        return ps != null && contains(ps, entry);
    }

    static String entries(Map<Integer, Map<Uuid, int[]>> members, int broker, Uuid topic) {
        Map<Uuid, int[]> byTopic = members.get(broker);
        int[] ps = byTopic == null ? null : byTopic.get(topic);
        if (ps == null) {
            return "none for the topic";
        }
        StringBuilder b = new StringBuilder("[");
        for (int p : ps) {
            b.append(b.length() > 1 ? ", " : "").append(p & ~LEADER_FLAG).append(p < 0 ? " (leader)" : "");
        }
        return b.append(']').toString();
    }

    static boolean contains(int[] a, int v) {
        for (int x : a) {
            if (x == v) {
                return true;
            }
        }
        return false;
    }

    static String describe(PartitionRegistration reg) {
        int[] elr = PART_ELR == null ? new int[0] : (int[]) get(PART_ELR, reg);
        return "leader " + reg.leader + ", isr " + Arrays.toString(reg.isr) + ", elr " + Arrays.toString(elr)
            + ", replicas " + Arrays.toString(reg.replicas);
    }

    @SuppressWarnings("unchecked")
    static void checkReassigning(DriverState st, DriverOracleNames names, Map<Uuid, Object> topics,
                                 List<DriverTopicParts> flat, Sink out) {
        Map<Uuid, int[]> reassigning = (Map<Uuid, int[]>) get(REASSIGNING, st.replicationControl);
        int expectedTopics = 0;
        for (DriverTopicParts t : flat) {
            int[] indexed = reassigning.get(t.id);
            int count = 0;
            for (int k = 0; k < t.regs.length; k++) {
                PartitionRegistration reg = t.regs[k];
                int partition = t.ids[k];
                boolean moving = reg.addingReplicas.length > 0 || reg.removingReplicas.length > 0;
                boolean listed = indexed != null && contains(indexed, partition);
                count += moving ? 1 : 0;
                if (moving != listed) {
                    String where = names.partition(t.id, partition);
                    out.report("reassigningTopics", where, Arrays.asList("reassigning", t.id, partition, moving),
                        () -> where + (moving ? " is reassigning (adding " + Arrays.toString(reg.addingReplicas)
                            + ", removing " + Arrays.toString(reg.removingReplicas) + ") but not indexed"
                            : " is not reassigning but indexed as reassigning"));
                }
            }
            expectedTopics += count > 0 ? 1 : 0;
            if (indexed != null && indexed.length != count) {
                int n = count;
                out.report("reassigningTopics", "topic " + names.topic(t.id), Arrays.asList("reassigning-count", t.id),
                    () -> "topic " + names.topic(t.id) + ": " + indexed.length + " partitions indexed as reassigning "
                        + Arrays.toString(indexed) + ", " + n + " reassigning");
            }
        }
        if (reassigning.size() != expectedTopics) {
            for (Uuid id : reassigning.keySet()) {
                if (!topics.containsKey(id)) {
                    out.report("reassigningTopics", "topic " + names.topic(id), Arrays.asList("reassigning-gone", id),
                        () -> "the topic " + names.topic(id) + " (id " + id + ") is indexed as reassigning but is not a topic");
                }
            }
        }
    }

    static Object tip(Uuid topic, int partition, Collection<?> sample) {
        try {
            if (tipConstructor == null) {
                Class<?> type = sample.iterator().next().getClass();
                tipConstructor = type.getDeclaredConstructor(Uuid.class, int.class);
                tipConstructor.setAccessible(true);
            }
            return tipConstructor.newInstance(topic, partition);
        } catch (ReflectiveOperationException e) {
            throw new DriverReflection.ReflectionFailure(e);
        }
    }

    @SuppressWarnings("unchecked")
    static void checkImbalanced(DriverState st, DriverOracleNames names, List<DriverTopicParts> flat, Sink out) {
        Set<Object> imbalanced = (Set<Object>) get(IMBALANCED, st.replicationControl);
        int expected = 0;
        for (DriverTopicParts t : flat) {
            for (int k = 0; k < t.regs.length; k++) {
                PartitionRegistration reg = t.regs[k];
                int partition = t.ids[k];
                int preferred = reg.replicas.length == 0 ? NO_LEADER : reg.replicas[0];
                boolean off = reg.leader != preferred;
                expected += off ? 1 : 0;
                boolean listed = !imbalanced.isEmpty() && imbalanced.contains(tip(t.id, partition, imbalanced));
                if (off != listed) {
                    String where = names.partition(t.id, partition);
                    out.report("imbalancedPartitions", where, Arrays.asList("imbalanced", t.id, partition, off),
                        () -> where + " (" + describe(reg) + ") " + (off ? "is led by another than its preferred replica "
                            + preferred + " but not indexed as imbalanced" : "is led by its preferred replica but indexed as imbalanced"));
                }
            }
        }
        if (imbalanced.size() != expected) {
            int n = expected;
            out.report("imbalancedPartitions", "event", Arrays.asList("imbalanced-count", imbalanced.size(), expected),
                () -> imbalanced.size() + " partitions indexed as imbalanced, " + n + " are: " + imbalanced);
        }
    }

    @SuppressWarnings("unchecked")
    static void checkDirectories(DriverState st, DriverOracleNames names, Map<Uuid, Object> topics,
                                 List<DriverTopicParts> flat, Sink out) {
        Map<Uuid, Set<Object>> dirs = (Map<Uuid, Set<Object>>) get(DIRS_TO_PARTS, st.replicationControl);
        int expected = 0;
        for (DriverTopicParts t : flat) {
            for (int k = 0; k < t.regs.length; k++) {
                int partition = t.ids[k];
                Uuid[] placed = (Uuid[]) get(PART_DIRS, t.regs[k]);
                if (placed == null) {
                    continue;
                }
                for (Uuid dir : placed) {
                    if ((Boolean) invokeMethod(RESERVED, null, dir)) {
                        continue;
                    }
                    expected++;
                    Set<Object> set = dirs.get(dir);
                    if (set == null || !set.contains(tip(t.id, partition, set == null ? List.of() : set))) {
                        String where = names.partition(t.id, partition);
                        out.report("directoriesToPartitions", where, Arrays.asList("dirs", "missing", dir, t.id, partition),
                            () -> where + " is placed on directory " + dir + " but directoriesToPartitions does not index it there");
                    }
                }
            }
        }
        int actual = 0;
        for (Set<Object> s : dirs.values()) {
            actual += s.size();
        }
        if (!walk("directoriesToPartitions", actual - expected)) {
            return;
        }
        for (Map.Entry<Uuid, Set<Object>> d : dirs.entrySet()) {
            for (Object tp : d.getValue()) {
                if (tipTopic == null) {
                    tipTopic = method(tp.getClass(), "topicId", 0);
                    tipPartition = method(tp.getClass(), "partitionId", 0);
                }
                Uuid id = (Uuid) invokeMethod(tipTopic, tp);
                int partition = (Integer) invokeMethod(tipPartition, tp);
                Object info = topics.get(id);
                if (info == null && !gone("directoriesToPartitions", id)) {
                    continue;  // a deleted topic's entries: reported once, when it went
                }
                PartitionRegistration reg = info == null ? null : parts(info).get(partition);
                Uuid[] placed = reg == null ? null : (Uuid[]) get(PART_DIRS, reg);
                if (placed == null || !Arrays.asList(placed).contains(d.getKey())) {
                    String where = names.partition(id, partition);
                    out.report("directoriesToPartitions", where, Arrays.asList("dirs", "stale", d.getKey(), id, partition),
                        () -> "directoriesToPartitions indexes " + where + " on directory " + d.getKey() + " but "
                            + (info == null ? "its topic (id " + id + ") is not in the topics map"
                            : reg == null ? "the topic has no such partition"
                            : "its directories are " + Arrays.toString(placed)));
                }
            }
        }
    }
}
