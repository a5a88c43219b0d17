/*
 * Events of ReplicationControlManager's topics: createTopic, createPartitions, deleteTopic.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsAssignment;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.CreatePartitionsResponseData.CreatePartitionsTopicResult;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.ApiError;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.Refused;
import static org.apache.kafka.controller.DriverProtocol.intList;
import static org.apache.kafka.controller.DriverProtocol.refuseIf;
import static org.apache.kafka.controller.DriverProtocol.requireInt;
import static org.apache.kafka.controller.DriverProtocol.requireText;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;
import static org.apache.kafka.controller.DriverReflection.method;
import static org.apache.kafka.controller.DriverReflection.newInstance;
import static org.apache.kafka.controller.DriverState.context;

final class DriverTopicEvents {
    private final DriverState st;

    DriverTopicEvents(DriverState st) {
        this.st = st;
    }

    @SuppressWarnings("unchecked")
    ObjectNode createTopic(JsonNode e) {
        String name = requireText(e, "topic");
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().setName(name);
        if (e.has("assignment")) {
            topic.setNumPartitions(-1).setReplicationFactor((short) -1);
            int index = 0;
            JsonNode indexes = e.path("indexes");  // explicit partition indexes (default 0, 1, ...)
            for (JsonNode replicas : e.get("assignment")) {
                int i = indexes.has(index) ? indexes.get(index).asInt() : index;
                index++;
                topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment()
                    .setPartitionIndex(i).setBrokerIds(intList(replicas)));
            }
        } else {
            topic.setNumPartitions(e.path("partitions").asInt(1))
                .setReplicationFactor((short) e.path("replicationFactor").asInt(3));
        }
        Collection<Object> configs = (Collection<Object>) invoke(topic, "configs");
        Class<?> configClass = st.line.createTopicConfigClass();
        for (Iterator<Map.Entry<String, JsonNode>> it = e.path("configs").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            Object config = newInstance(configClass);
            invoke(config, "setName", c.getKey());
            invoke(config, "setValue", c.getValue().isNull() ? null : c.getValue().asText());
            configs.add(config);
        }
        request.topics().add(topic);
        request.setValidateOnly(e.path("validateOnly").asBoolean(false));
        ControllerResult<CreateTopicsResponseData> result = st.line.createTopics(st.replicationControl,
            context(ApiKeys.CREATE_TOPICS), request, Set.of(name));
        CreateTopicsResponseData.CreatableTopicResult r = result.response().topics().find(name);
        st.replayAll(result.records());
        refuseIf(r.errorCode(), r.errorMessage());
        ObjectNode out = JSON.createObjectNode();
        Uuid id = st.topicIds.get(name);
        out.put("topicId", id == null ? null : id.toString());
        return out;
    }

    /** CreatePartitions for one topic: the new partition count and, if given, one replica
     * list per new partition (as QuorumController.createPartitions calls it). */
    ObjectNode createPartitions(JsonNode e) {
        String name = requireText(e, "topic");
        CreatePartitionsTopic topic = new CreatePartitionsTopic().setName(name)
            .setCount(requireInt(e, "count"));
        if (e.has("assignment")) {
            List<CreatePartitionsAssignment> assignments = new ArrayList<>();
            for (JsonNode replicas : e.get("assignment")) {
                assignments.add(new CreatePartitionsAssignment().setBrokerIds(intList(replicas)));
            }
            topic.setAssignments(assignments);
        } else {
            topic.setAssignments(null);
        }
        // By arity: a package-private createPartitions(context, topic, records) overloads it.
        Method m = method(ReplicationControlManager.class, "createPartitions", 2);
        @SuppressWarnings("unchecked")
        ControllerResult<List<CreatePartitionsTopicResult>> result =
            (ControllerResult<List<CreatePartitionsTopicResult>>) invokeMethod(m, st.replicationControl,
                context(ApiKeys.CREATE_PARTITIONS), new ArrayList<>(List.of(topic)));
        st.replayAll(result.records());
        CreatePartitionsTopicResult r = result.response().get(0);
        refuseIf(r.errorCode(), r.errorMessage());
        return null;
    }

    /** DeleteTopics of one topic by name: ControllerApis resolves the name (an unknown one is
     * UNKNOWN_TOPIC_OR_PARTITION), QuorumController.deleteTopics calls
     * ReplicationControlManager.deleteTopics with its id: one RemoveTopicRecord, whose replay
     * removes the topic, its partitions and its configs. The same name may then be created
     * again: a new topic id, new partitions. */
    ObjectNode deleteTopic(JsonNode e) {
        String name = requireText(e, "topic");
        // "byId": "unknown" / "zero": DeleteTopics by a topic id that is no topic's (as a
        // client sending ids may); else the topic's id, resolved from its name.
        String byId = e.path("byId").asText("");
        Uuid id = byId.equals("unknown") ? Uuid.randomUuid()
            : byId.equals("zero") ? Uuid.ZERO_UUID : st.topicId(name);
        ControllerResult<Map<Uuid, ApiError>> result =
            st.replicationControl.deleteTopics(context(ApiKeys.DELETE_TOPICS), List.of(id));
        st.replayAll(result.records());
        ApiError error = result.response().get(id);
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("topicId", id.toString());
        return out;
    }
}
