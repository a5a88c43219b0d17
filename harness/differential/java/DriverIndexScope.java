/*
 * Index consistency, scoped (issue 44 item 3): after an event whose records changed some
 * partitions of existing topics (PartitionRecord, PartitionChangeRecord, ClearElrRecord; no
 * TopicRecord or RemoveTopicRecord), the replication indexes are checked for those
 * partitions only, with the same reports (index, where, key, detail) the full check
 * (DriverIndexOracle.checkReplication) makes for them:
 *
 *   brokersToIsrs, brokersToElrs   every ISR (ELR) member of each partition indexed, the
 *                                  leader flagged, a leaderless partition under -1; and, for
 *                                  every broker that holds the partition now or held it at
 *                                  the last check (its registration then, kept here) and -1,
 *                                  every entry the index holds for the partition's topic
 *                                  under that broker explained by the topic's registrations
 *                                  (the whole topic: BrokersToElrs.remove has left a phantom
 *                                  entry for another partition of the same topic before)
 *   reassigningTopics              each partition's state, and its topic's count
 *   imbalancedPartitions           each partition's state
 *   directoriesToPartitions        each partition on every non-reserved directory it is
 *                                  placed on, and on none it was placed on before and is not
 *
 * The reports of the last checks for every partition not checked again stand (the caller,
 * DriverOracleChecks, says them again). What a scoped check cannot see: an entry that a
 * replay put or dropped for a partition it did not name under a broker that partition never
 * held, and the global counts (imbalancedPartitions' size, topicsByName). The full check
 * runs after every event with a TopicRecord or RemoveTopicRecord, after a test-only
 * corruption, and every FULL_EVERY-th event that replayed ReplicationControlManager's
 * records (-Dkafka.chaos.driver.indexFullEvery; default 1: the full check after each,
 * because the oracle must not see less for speed: N > 1 is an opt-in measured at ~0-10% of
 * the driver's CPU, bench/RESULTS-diff.md "Third pass, driver side"). tests/test_diff_oracles.py runs a campaign's events on both and compares every
 * answer (bench.diff_replay driver --check on 8,000-event campaigns too).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.PartitionRegistration;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.apache.kafka.controller.DriverIndexOracle.DIRS_TO_PARTS;
import static org.apache.kafka.controller.DriverIndexOracle.ELR_MEMBERS;
import static org.apache.kafka.controller.DriverIndexOracle.IMBALANCED;
import static org.apache.kafka.controller.DriverIndexOracle.ISR_MEMBERS;
import static org.apache.kafka.controller.DriverIndexOracle.LEADER_FLAG;
import static org.apache.kafka.controller.DriverIndexOracle.NO_LEADER;
import static org.apache.kafka.controller.DriverIndexOracle.PART_DIRS;
import static org.apache.kafka.controller.DriverIndexOracle.PART_ELR;
import static org.apache.kafka.controller.DriverIndexOracle.REASSIGNING;
import static org.apache.kafka.controller.DriverIndexOracle.RESERVED;
import static org.apache.kafka.controller.DriverIndexOracle.TO_ELRS;
import static org.apache.kafka.controller.DriverIndexOracle.TO_ISRS;
import static org.apache.kafka.controller.DriverIndexOracle.contains;
import static org.apache.kafka.controller.DriverIndexOracle.describe;
import static org.apache.kafka.controller.DriverIndexOracle.entries;
import static org.apache.kafka.controller.DriverIndexOracle.indexed;
import static org.apache.kafka.controller.DriverIndexOracle.parts;
import static org.apache.kafka.controller.DriverIndexOracle.staleWhy;
import static org.apache.kafka.controller.DriverIndexOracle.tip;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;

final class DriverIndexScope {
    static final int FULL_EVERY = Math.max(1, Integer.getInteger("kafka.chaos.driver.indexFullEvery", 1));
    static final Set<String> PARTITION_INDEXES = Set.of("brokersToIsrs", "brokersToElrs", "reassigningTopics",
        "imbalancedPartitions", "directoriesToPartitions");

    /** The registrations as the last check read them: topic id -> partition -> registration. */
    final Map<Uuid, Map<Integer, PartitionRegistration>> seen = new HashMap<>();
    int sinceFull;

    /** Whether this event's check is the full one (and counts it). */
    boolean full(DriverState st, boolean corrupted) {
        if (corrupted || st.topicReplayed || ++sinceFull >= FULL_EVERY || DriverIndexOracle.TOPICS == null
            || DriverIndexOracle.INFO_PARTS == null) {
            sinceFull = 0;
            return true;
        }
        return false;
    }

    /** After a full check: the registrations it read. */
    void sawAll(List<DriverTopicParts> flat) {
        seen.clear();
        if (flat == null) {
            return;
        }
        for (DriverTopicParts t : flat) {
            Map<Integer, PartitionRegistration> m = new HashMap<>();
            for (int k = 0; k < t.regs.length; k++) {
                m.put(t.ids[k], t.regs[k]);
            }
            seen.put(t.id, m);
        }
    }

    /** Whether a report of the last checks is about what this scoped check looks at again. */
    static boolean rechecked(Object[] report, Set<String> wheres) {
        return PARTITION_INDEXES.contains((String) report[0]) && wheres.contains((String) report[1]);
    }

    /** The wheres (partitions "t-0", and "topic t" for the reassigning count) checked again. */
    static Set<String> wheres(DriverState st, DriverOracleNames names) {
        Set<String> out = new HashSet<>();
        for (Map.Entry<Uuid, Set<Integer>> t : st.touchedParts.entrySet()) {
            out.add("topic " + names.topic(t.getKey()));
            for (int p : t.getValue()) {
                out.add(names.partition(t.getKey(), p));
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    void check(DriverState st, DriverOracleNames names, DriverIndexOracle.Sink out) {
        Map<Uuid, Object> topics = DriverIndexOracle.topics(st);
        Map<Integer, Map<Uuid, int[]>> isrs = (Map<Integer, Map<Uuid, int[]>>)
            get(ISR_MEMBERS, get(TO_ISRS, st.replicationControl));
        Map<Integer, Map<Uuid, int[]>> elrs = TO_ELRS == null || PART_ELR == null ? null
            : (Map<Integer, Map<Uuid, int[]>>) get(ELR_MEMBERS, get(TO_ELRS, st.replicationControl));
        Map<Uuid, int[]> reassigning = (Map<Uuid, int[]>) get(REASSIGNING, st.replicationControl);
        Set<Object> imbalanced = (Set<Object>) get(IMBALANCED, st.replicationControl);
        Map<Uuid, Set<Object>> dirs = DIRS_TO_PARTS == null || PART_DIRS == null || RESERVED == null ? null
            : (Map<Uuid, Set<Object>>) get(DIRS_TO_PARTS, st.replicationControl);
        for (Map.Entry<Uuid, Set<Integer>> touched : st.touchedParts.entrySet()) {
            Uuid id = touched.getKey();
            Object info = topics.get(id);
            if (info == null) {
                continue;  // not replayed without a RemoveTopicRecord: the full check ran
            }
            Map<Integer, PartitionRegistration> now = parts(info);
            Map<Integer, PartitionRegistration> was = seen.computeIfAbsent(id, t -> new HashMap<>());
            Set<Integer> isrBrokers = new HashSet<>();
            Set<Integer> elrBrokers = new HashSet<>();
            for (int p : touched.getValue()) {
                PartitionRegistration reg = now.get(p);
                if (reg == null) {
                    continue;
                }
                PartitionRegistration prev = was.get(p);
                members(names, isrs, "brokersToIsrs", true, id, p, reg, prev, isrBrokers, out);
                if (elrs != null) {
                    members(names, elrs, "brokersToElrs", false, id, p, reg, prev, elrBrokers, out);
                }
                reassigning(names, reassigning, id, p, reg, out);
                imbalanced(names, imbalanced, id, p, reg, out);
                if (dirs != null) {
                    directories(names, dirs, id, p, reg, prev, out);
                }
                was.put(p, reg);
            }
            // every entry of the topic under the brokers that hold or held the partitions
            stale(names, isrs, "brokersToIsrs", true, id, now, isrBrokers, out);
            if (elrs != null) {
                stale(names, elrs, "brokersToElrs", false, id, now, elrBrokers, out);
            }
            reassigningCount(names, reassigning, id, now, out);
        }
    }

    static int[] holders(PartitionRegistration reg, boolean isr) {
        return isr ? reg.isr : (int[]) get(PART_ELR, reg);
    }

    static void members(DriverOracleNames names, Map<Integer, Map<Uuid, int[]>> members, String index, boolean isr,
                        Uuid id, int partition, PartitionRegistration reg, PartitionRegistration prev,
                        Set<Integer> brokers, DriverIndexOracle.Sink out) {
        for (int b : holders(reg, isr)) {
            brokers.add(b);
            DriverIndexOracle.checkIndexed(names, members, index, isr, id, partition, reg, b, out);
        }
        if (isr && reg.leader == NO_LEADER && !indexed(members, NO_LEADER, id, partition | LEADER_FLAG)) {
            String where = names.partition(id, partition);
            out.report(index, where, Arrays.asList(index, "missing", "-1", id, partition),
                () -> where + " has no leader (" + describe(reg) + ") but " + index
                    + " does not index it under NO_LEADER (-1)");
        }
        if (prev != null) {
            for (int b : holders(prev, isr)) {
                brokers.add(b);
            }
        }
        if (isr) {
            brokers.add(NO_LEADER);
        }
    }

    /** The full check's walk (DriverIndexOracle.checkMembers), over one topic's entries
     * under the given brokers. */
    static void stale(DriverOracleNames names, Map<Integer, Map<Uuid, int[]>> members, String index, boolean isr,
                      Uuid id, Map<Integer, PartitionRegistration> now, Set<Integer> brokers,
                      DriverIndexOracle.Sink out) {
        for (int broker : brokers) {
            Map<Uuid, int[]> byTopic = members.get(broker);
            int[] ps = byTopic == null ? null : byTopic.get(id);
            if (ps == null) {
                continue;
            }
            for (int i = 0; i < ps.length; i++) {
                int partition = ps[i] & ~LEADER_FLAG;
                boolean leader = ps[i] < 0;
                PartitionRegistration reg = now.get(partition);
                int why = 0;
                if (reg == null) {
                    why = 2;
                } else if (broker == NO_LEADER) {
                    why = reg.leader == NO_LEADER ? 0 : 3;
                } else if (!contains(holders(reg, isr), broker)) {
                    why = 4;
                } else if (isr && leader != (reg.leader == broker)) {
                    why = 5;
                }
                for (int j = 0; why == 0 && j < i; j++) {
                    if (ps[j] == ps[i]) {
                        why = 6;
                    }
                }
                if (why == 0) {
                    continue;
                }
                Object key = Arrays.asList(index, "stale", broker, id, ps[i]);
                if (out.known(key)) {
                    continue;
                }
                int because = why;
                String where = names.partition(id, partition);
                out.report(index, where, key, () -> index + " indexes broker " + broker + " for " + where
                    + " but " + staleWhy(because, names, id, partition, leader, reg, isr));
            }
        }
    }

    static void reassigning(DriverOracleNames names, Map<Uuid, int[]> reassigning, Uuid id, int partition,
                            PartitionRegistration reg, DriverIndexOracle.Sink out) {
        int[] indexed = reassigning.get(id);
        boolean moving = reg.addingReplicas.length > 0 || reg.removingReplicas.length > 0;
        boolean listed = indexed != null && contains(indexed, partition);
        if (moving != listed) {
            String where = names.partition(id, partition);
            out.report("reassigningTopics", where, Arrays.asList("reassigning", id, partition, moving),
                () -> where + (moving ? " is reassigning (adding " + Arrays.toString(reg.addingReplicas)
                    + ", removing " + Arrays.toString(reg.removingReplicas) + ") but not indexed"
                    : " is not reassigning but indexed as reassigning"));
        }
    }

    static void reassigningCount(DriverOracleNames names, Map<Uuid, int[]> reassigning, Uuid id,
                                 Map<Integer, PartitionRegistration> now, DriverIndexOracle.Sink out) {
        int[] indexed = reassigning.get(id);
        if (indexed == null) {
            return;
        }
        int count = 0;
        for (PartitionRegistration reg : now.values()) {
            count += reg.addingReplicas.length > 0 || reg.removingReplicas.length > 0 ? 1 : 0;
        }
        if (indexed.length != count) {
            int n = count;
            out.report("reassigningTopics", "topic " + names.topic(id), Arrays.asList("reassigning-count", id),
                () -> "topic " + names.topic(id) + ": " + indexed.length + " partitions indexed as reassigning "
                    + Arrays.toString(indexed) + ", " + n + " reassigning");
        }
    }

    static void imbalanced(DriverOracleNames names, Set<Object> imbalanced, Uuid id, int partition,
                           PartitionRegistration reg, DriverIndexOracle.Sink out) {
        int preferred = reg.replicas.length == 0 ? NO_LEADER : reg.replicas[0];
        boolean off = reg.leader != preferred;
        boolean listed = !imbalanced.isEmpty() && imbalanced.contains(tip(id, partition, imbalanced));
        if (off != listed) {
            String where = names.partition(id, partition);
            out.report("imbalancedPartitions", where, Arrays.asList("imbalanced", id, partition, off),
                () -> where + " (" + describe(reg) + ") " + (off ? "is led by another than its preferred replica "
                    + preferred + " but not indexed as imbalanced" : "is led by its preferred replica but indexed as imbalanced"));
        }
    }

    static void directories(DriverOracleNames names, Map<Uuid, Set<Object>> dirs, Uuid id, int partition,
                            PartitionRegistration reg, PartitionRegistration prev, DriverIndexOracle.Sink out) {
        Uuid[] placed = (Uuid[]) get(PART_DIRS, reg);
        if (placed != null) {
            for (Uuid dir : placed) {
                if ((Boolean) invokeMethod(RESERVED, null, dir)) {
                    continue;
                }
                Set<Object> set = dirs.get(dir);
                if (set == null || !set.contains(tip(id, partition, set == null ? List.of() : set))) {
                    String where = names.partition(id, partition);
                    out.report("directoriesToPartitions", where, Arrays.asList("dirs", "missing", dir, id, partition),
                        () -> where + " is placed on directory " + dir + " but directoriesToPartitions does not index it there");
                }
            }
        }
        Uuid[] before = prev == null ? null : (Uuid[]) get(PART_DIRS, prev);
        if (before == null) {
            return;
        }
        for (Uuid dir : before) {
            if (placed != null && Arrays.asList(placed).contains(dir)) {
                continue;
            }
            Set<Object> set = dirs.get(dir);
            if (set == null || set.isEmpty() || !set.contains(tip(id, partition, set))) {
                continue;
            }
            Object key = Arrays.asList("dirs", "stale", dir, id, partition);
            if (out.known(key)) {
                continue;
            }
            String where = names.partition(id, partition);
            out.report("directoriesToPartitions", where, key,
                () -> "directoriesToPartitions indexes " + where + " on directory " + dir + " but "
                    + "its directories are " + Arrays.toString(placed));
        }
    }
}
