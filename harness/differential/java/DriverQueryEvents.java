/*
 * Requests the controller answers without writing records, added for issue 44 item 4 (the
 * branches of ReplicationControlManager they run): ListPartitionReassignments
 * (listPartitionReassignments, as QuorumController.listPartitionReassignments calls it) and
 * the topic lookups ControllerApis asks for DeleteTopics and CreatePartitions by name or id
 * (findTopicIds, findTopicNames, findAllTopicIds), each also asked for no name, an unknown id
 * and the zero id, as a request may name them. Read at the latest state
 * (Long.MAX_VALUE: the timeline's current values; QuorumController reads at its last
 * committed offset, which here is the same: every record is committed at once).
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.intList;
import static org.apache.kafka.controller.DriverProtocol.ints;

final class DriverQueryEvents {
    static final long LATEST = Long.MAX_VALUE;
    private final DriverState st;

    DriverQueryEvents(DriverState st) {
        this.st = st;
    }

    /** ListPartitionReassignments: the topics given (every partition index the event
     * names, default 0..4: some past the topic's), or all (no topics). */
    ObjectNode listReassignments(JsonNode e) {
        List<ListPartitionReassignmentsTopics> topics = null;
        if (e.has("topics")) {
            topics = new ArrayList<>();
            List<Integer> indexes = e.has("partitions") ? intList(e.get("partitions"))
                : List.of(0, 1, 2, 3, 4);
            for (JsonNode t : e.get("topics")) {
                topics.add(new ListPartitionReassignmentsTopics().setName(t.asText())
                    .setPartitionIndexes(new ArrayList<>(indexes)));
            }
        }
        ListPartitionReassignmentsResponseData response =
            st.replicationControl.listPartitionReassignments(topics, LATEST);
        ObjectNode out = JSON.createObjectNode();
        ObjectNode listed = out.putObject("reassignments");
        for (ListPartitionReassignmentsResponseData.OngoingTopicReassignment t : response.topics()) {
            for (ListPartitionReassignmentsResponseData.OngoingPartitionReassignment p : t.partitions()) {
                ObjectNode one = listed.putObject(t.name() + "-" + p.partitionIndex());
                one.set("replicas", ints(p.replicas()));
                one.set("adding", ints(p.addingReplicas()));
                one.set("removing", ints(p.removingReplicas()));
            }
        }
        return out;
    }

    /** The topic lookups by name (the names given, unknown ones too), by id (the ids of
     * those found, and one unknown id) and of every topic. */
    ObjectNode findTopics(JsonNode e) {
        List<String> names = new ArrayList<>();
        for (JsonNode t : e.path("topics")) {
            names.add(t.asText());
        }
        List<String> asked = new ArrayList<>(names);
        asked.add(null);  // a request may name no topic: NotFound (findTopicIds)
        Map<String, ?> ids = st.replicationControl.findTopicIds(LATEST, asked);
        List<Uuid> wanted = new ArrayList<>();
        ObjectNode out = JSON.createObjectNode();
        ObjectNode byName = out.putObject("byName");
        for (String name : names) {
            Uuid id = st.topicIds.get(name);
            if (id != null) {
                wanted.add(id);
            }
            Object r = ids.get(name);
            byName.put(name, r == null ? "missing" : r.toString());
        }
        wanted.add(Uuid.randomUuid());
        wanted.add(Uuid.ZERO_UUID);  // neither is a topic id (findTopicNames)
        wanted.add(null);
        Map<Uuid, ?> found = st.replicationControl.findTopicNames(LATEST, wanted);
        out.put("byId", found.size());
        out.put("all", st.replicationControl.findAllTopicIds(LATEST).size());
        return out;
    }
}
