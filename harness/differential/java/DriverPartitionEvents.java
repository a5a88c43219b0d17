/*
 * Events of ReplicationControlManager's partitions: alterPartition (AlterPartition from the
 * leader), completeReassignment, reassign / cancelReassignment
 * (AlterPartitionReassignments), electLeaders (ElectLeaders), and tick (one of the
 * controller's periodic tasks, now).
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.metadata.PartitionRegistration;

import java.util.ArrayList;
import java.util.List;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.ProtocolError;
import static org.apache.kafka.controller.DriverProtocol.Refused;
import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverProtocol.intList;
import static org.apache.kafka.controller.DriverProtocol.ints;
import static org.apache.kafka.controller.DriverProtocol.refuseIf;
import static org.apache.kafka.controller.DriverProtocol.require;
import static org.apache.kafka.controller.DriverProtocol.requireText;
import static org.apache.kafka.controller.DriverState.context;

final class DriverPartitionEvents {
    private final DriverState st;
    private final DriverBrokerEvents brokers;  // tick fenceStale: the stale-broker task

    DriverPartitionEvents(DriverState st, DriverBrokerEvents brokers) {
        this.st = st;
        this.brokers = brokers;
    }

    PartitionRegistration partition(String topic, int partition) {
        PartitionRegistration reg = st.replicationControl.getPartition(st.topicId(topic), partition);
        if (reg == null) {
            throw new UnknownTopicOrPartitionException("Partition " + topic + "-" + partition
                + " does not exist.");
        }
        return reg;
    }

    /** AlterPartition from the leader (or the broker given): the new ISR, with the leader
     * and partition epochs it believes current (default: the controller's). */
    ObjectNode alterPartition(JsonNode e, List<Integer> isrOverride) {
        String topic = requireText(e, "topic");
        int index = e.path("partition").asInt(0);
        // "topicId": "unknown" / "zero": a request naming a topic id that is no topic's (the
        // controller answers UNKNOWN_TOPIC_ID); the epochs then default to 0.
        String byId = e.path("topicId").asText("");
        PartitionRegistration reg = byId.isEmpty() ? partition(topic, index) : null;
        int leader = e.path("leader").asInt(reg == null ? 0 : reg.leader);
        List<Integer> isr = isrOverride != null ? isrOverride : intList(require(e, "isr"));
        List<AlterPartitionRequestData.BrokerState> states = new ArrayList<>();
        JsonNode epochs = e.path("isrBrokerEpochs");
        for (int i = 0; i < isr.size(); i++) {
            int b = isr.get(i);
            long brokerEpoch = epochs.has(i) ? epochs.get(i).asLong() : st.currentEpoch(b);
            states.add(new AlterPartitionRequestData.BrokerState().setBrokerId(b).setBrokerEpoch(brokerEpoch));
        }
        AlterPartitionRequestData.PartitionData data = new AlterPartitionRequestData.PartitionData()
            .setPartitionIndex(index)
            .setLeaderEpoch(e.path("leaderEpoch").asInt(reg == null ? 0 : reg.leaderEpoch))
            .setPartitionEpoch(e.path("partitionEpoch").asInt(reg == null ? 0 : reg.partitionEpoch))
            .setLeaderRecoveryState((byte) e.path("leaderRecoveryState").asInt(0))
            .setNewIsrWithEpochs(states);
        AlterPartitionRequestData request = new AlterPartitionRequestData()
            .setBrokerId(leader)
            .setBrokerEpoch(e.path("brokerEpoch").asLong(st.currentEpoch(leader)))
            .setTopics(new ArrayList<>(List.of(new AlterPartitionRequestData.TopicData()
                .setTopicId(byId.equals("unknown") ? org.apache.kafka.common.Uuid.randomUuid()
                    : byId.equals("zero") ? org.apache.kafka.common.Uuid.ZERO_UUID : st.topicId(topic))
                .setPartitions(new ArrayList<>(List.of(data))))));
        ControllerResult<AlterPartitionResponseData> result =
            st.replicationControl.alterPartition(context(ApiKeys.ALTER_PARTITION), request);
        st.replayAll(result.records());
        AlterPartitionResponseData response = result.response();
        refuseIf(response.errorCode(), null);
        AlterPartitionResponseData.PartitionData p = response.topics().get(0).partitions().get(0);
        refuseIf(p.errorCode(), null);
        ObjectNode out = JSON.createObjectNode();
        ObjectNode resp = out.putObject("response");
        resp.put("leader", p.leaderId());
        resp.put("leaderEpoch", p.leaderEpoch());
        resp.put("partitionEpoch", p.partitionEpoch());
        resp.set("isr", ints(p.isr()));
        resp.put("leaderRecoveryState", p.leaderRecoveryState());
        return out;
    }

    /** The leader reports every adding replica caught up: AlterPartition with the ISR plus
     * the adding replicas (or the ISR given), which completes the reassignment if the build
     * agrees. */
    ObjectNode completeReassignment(JsonNode e) {
        PartitionRegistration reg = partition(requireText(e, "topic"), e.path("partition").asInt(0));
        if (e.has("isr")) {
            return alterPartition(e, intList(e.get("isr")));
        }
        List<Integer> isr = new ArrayList<>(intList(reg.isr));
        for (int b : reg.addingReplicas) {
            if (!isr.contains(b)) {
                isr.add(b);
            }
        }
        return alterPartition(e, isr);
    }

    ObjectNode reassign(JsonNode e, boolean cancel) {
        String topic = requireText(e, "topic");
        int index = e.path("partition").asInt(0);
        // An unknown topic or partition is the controller's to refuse
        // (alterPartitionReassignment: UNKNOWN_TOPIC_OR_PARTITION).
        AlterPartitionReassignmentsRequestData.ReassignablePartition part =
            new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(index)
                .setReplicas(cancel ? null : intList(require(e, "replicas")));
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData()
            .setTopics(new ArrayList<>(List.of(new AlterPartitionReassignmentsRequestData.ReassignableTopic()
                .setName(topic).setPartitions(new ArrayList<>(List.of(part))))));
        if (e.has("allowRfChange")) {
            // KIP-860 (4.1+): AllowReplicationFactorChange false refuses a reassignment that
            // changes the replica count (validatePartitionReplicationFactorUnchanged).
            if (DriverReflection.method(AlterPartitionReassignmentsRequestData.class,
                    "setAllowReplicationFactorChange", 1) == null) {
                throw new Unsupported("this build's AlterPartitionReassignments has no "
                    + "AllowReplicationFactorChange (KIP-860, 4.1+)");
            }
            DriverReflection.invoke(request, "setAllowReplicationFactorChange",
                e.get("allowRfChange").asBoolean());
        }
        ControllerResult<AlterPartitionReassignmentsResponseData> result =
            st.replicationControl.alterPartitionReassignments(request);
        st.replayAll(result.records());
        AlterPartitionReassignmentsResponseData response = result.response();
        refuseIf(response.errorCode(), response.errorMessage());
        AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse p =
            response.responses().get(0).partitions().get(0);
        refuseIf(p.errorCode(), p.errorMessage());
        return null;
    }

    ObjectNode electLeaders(JsonNode e) {
        String type = e.path("type").asText("preferred");
        byte electionType;
        if (type.equals("preferred")) {
            electionType = 0;
        } else if (type.equals("unclean")) {
            electionType = 1;
        } else {
            throw new ProtocolError("electLeaders type must be preferred or unclean, not " + type);
        }
        ElectLeadersRequestData.TopicPartitionsCollection partitions = null;  // no topic: every partition
        if (e.hasNonNull("topic")) {
            String topic = requireText(e, "topic");  // unknown: the controller's to refuse
            partitions = new ElectLeadersRequestData.TopicPartitionsCollection();
            List<Integer> indexes = e.has("partitions") ? intList(e.get("partitions"))
                : List.of(e.path("partition").asInt(0));
            partitions.add(new ElectLeadersRequestData.TopicPartitions().setTopic(topic)
                .setPartitions(new ArrayList<>(indexes)));
        }
        ElectLeadersRequestData request = new ElectLeadersRequestData()
            .setElectionType(electionType).setTopicPartitions(partitions);
        ControllerResult<ElectLeadersResponseData> result = st.replicationControl.electLeaders(request);
        st.replayAll(result.records());
        ElectLeadersResponseData response = result.response();
        refuseIf(response.errorCode(), null);
        ObjectNode out = JSON.createObjectNode();
        ObjectNode errors = out.putObject("results");
        Errors first = Errors.NONE;
        String firstMessage = null;
        for (ElectLeadersResponseData.ReplicaElectionResult t : response.replicaElectionResults()) {
            for (ElectLeadersResponseData.PartitionResult p : t.partitionResult()) {
                Errors error = Errors.forCode(p.errorCode());
                errors.put(t.topic() + "-" + p.partitionId(), error.name());
                if (error != Errors.NONE && first == Errors.NONE) {
                    first = error;
                    firstMessage = p.errorMessage();
                }
            }
        }
        if (first != Errors.NONE) {
            throw new Refused(first, firstMessage == null ? first.message() : firstMessage);
        }
        return out;
    }

    /** One of the controller's periodic tasks, now. */
    ObjectNode tick(JsonNode e) {
        String task = requireText(e, "task");
        ControllerResult<?> result;
        switch (task) {
            case "electPreferred":
                // QuorumController.maybeScheduleNextBalancePartitionLeaders asks first.
                if (DriverReflection.method(ReplicationControlManager.class,
                        "arePartitionLeadersImbalanced", 0) != null) {
                    DriverReflection.invoke(st.replicationControl, "arePartitionLeadersImbalanced");
                }
                result = st.replicationControl.maybeBalancePartitionLeaders();
                break;
            case "electUnclean":
                String none = st.line.noPeriodicUncleanElection();
                if (none != null) {
                    throw new Unsupported(none);
                }
                result = st.line.maybeElectUncleanLeaders(st.replicationControl);
                break;
            case "fenceStale":
                ObjectNode out = JSON.createObjectNode();
                out.put("staleBrokerTaskRuns", brokers.runStaleBrokerTask());
                return out;
            default:
                throw new ProtocolError("tick task must be electPreferred, electUnclean or fenceStale, not "
                    + task);
        }
        st.replayAll(result.records());
        ObjectNode out = JSON.createObjectNode();
        out.set("response", JSON.valueToTree(result.response()));
        return out;
    }
}
