/*
 * One topic's partitions as the index oracle (DriverIndexOracle) reads them: the topics map
 * and each topic's partition map are timeline hash maps (SnapshottableHashTable), slow to
 * walk, so a check walks them once and compares every index with this list of the same
 * objects, read at the same moment (nothing changes between the checks of one event). Before
 * (bench/RESULTS-diff.md, issue 44 item 3) each of the five replication checks walked them.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.PartitionRegistration;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

final class DriverTopicParts {
    final Uuid id;
    /** ReplicationControlManager.TopicControlInfo */
    final Object info;
    /** The partition ids and their registrations, in the partition map's order. */
    final int[] ids;
    final PartitionRegistration[] regs;

    DriverTopicParts(Uuid id, Object info) {
        this.id = id;
        this.info = info;
        Map<Integer, PartitionRegistration> ps = DriverIndexOracle.parts(info);
        ids = new int[ps.size()];
        regs = new PartitionRegistration[ps.size()];
        int i = 0;
        for (Map.Entry<Integer, PartitionRegistration> p : ps.entrySet()) {
            ids[i] = p.getKey();
            regs[i++] = p.getValue();
        }
    }

    /** The topics in the map's order. */
    static List<DriverTopicParts> flatten(Map<Uuid, Object> topics) {
        List<DriverTopicParts> out = new ArrayList<>(topics.size());
        for (Map.Entry<Uuid, Object> t : topics.entrySet()) {
            out.add(new DriverTopicParts(t.getKey(), t.getValue()));
        }
        return out;
    }
}
