/*
 * What every answer reports besides the event's own result: each record the controller
 * wrote, in short, as the build's own *JsonConverter writes it; the partitions (all, or
 * those the event's records touched); the broker registrations.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.ints;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invokeMethod;
import static org.apache.kafka.controller.DriverReflection.method;

final class DriverReport {
    private DriverReport() {
    }

    static final Map<Class<?>, Method> CONVERTERS = new HashMap<>();
    static final Set<String> DROPPED = Set.of("directories", "endPoints", "features", "rack",
        "isMigratingZkBroker", "logDirs", "incarnationId");

    /** The record as the build's own JSON converter writes it, in short: the type, the
     * fields that bear on partitions and brokers, "unchanged" markers left out. */
    static ObjectNode record(DriverState st, ApiMessageAndVersion record) {
        ApiMessage message = record.message();
        Class<?> type = message.getClass();
        Method write = CONVERTERS.computeIfAbsent(type, t -> {
            Class<?> converter = classOrNull(t.getName() + "JsonConverter");
            return converter == null ? null : method(converter, "write", 2);
        });
        ObjectNode out = JSON.createObjectNode();
        out.put("type", type.getSimpleName());
        if (write == null) {
            return out;
        }
        JsonNode json = (JsonNode) invokeMethod(write, null, message, record.version());
        boolean change = message instanceof PartitionChangeRecord;
        for (Iterator<Map.Entry<String, JsonNode>> it = json.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            String key = f.getKey();
            JsonNode value = f.getValue();
            if (DROPPED.contains(key) || value.isNull()) {
                continue;
            }
            if (change && key.equals("leader") && value.asInt() == -2) {
                continue;  // NO_LEADER_CHANGE
            }
            if (change && key.equals("leaderRecoveryState") && value.asInt() == -1) {
                continue;  // no change
            }
            switch (key) {
                case "eligibleLeaderReplicas":
                    key = "elr";
                    break;
                case "addingReplicas":
                    key = "adding";
                    break;
                case "removingReplicas":
                    key = "removing";
                    break;
                default:
                    break;
            }
            out.set(key, value);
        }
        JsonNode topicId = json.get("topicId");
        if (topicId != null && !(message instanceof TopicRecord)) {
            String name = st.topicNames.get(Uuid.fromString(topicId.asText()));
            if (name != null) {
                out.put("topic", name);
            }
        }
        return out;
    }

    static ObjectNode partitions(DriverState st, boolean changedOnly) {
        ObjectNode out = JSON.createObjectNode();
        if (changedOnly && st.touched.isEmpty()) {
            return out;
        }
        for (Map.Entry<String, Uuid> t : st.topicIds.entrySet()) {
            int count = st.partitionCounts.getOrDefault(t.getValue(), 0);
            String id = changedOnly ? t.getValue() + ":" : null;
            for (int p = 0; p < count; p++) {
                if (changedOnly && !st.touched.contains(id + p)) {
                    continue;
                }
                PartitionRegistration reg = st.replicationControl.getPartition(t.getValue(), p);
                if (reg != null) {
                    out.set(t.getKey() + "-" + p, partitionState(st, reg));
                }
            }
        }
        return out;
    }

    static ObjectNode partitionState(DriverState st, PartitionRegistration reg) {
        ObjectNode s = JSON.createObjectNode();
        s.put("leader", reg.leader);
        s.put("leaderEpoch", reg.leaderEpoch);
        s.put("partitionEpoch", reg.partitionEpoch);
        s.set("replicas", ints(reg.replicas));
        s.set("isr", ints(reg.isr));
        s.set("elr", ints(st.line.elr(reg)));
        s.set("lastKnownElr", ints(st.line.lastKnownElr(reg)));
        s.set("adding", ints(reg.addingReplicas));
        s.set("removing", ints(reg.removingReplicas));
        s.put("leaderRecoveryState", reg.leaderRecoveryState.name());
        return s;
    }

    /** What brokers() says of a registration, as a number: epoch and the three flags. */
    static long brokerKey(DriverState st, BrokerRegistration r) {
        return r.epoch() * 8 + (r.fenced() ? 4 : 0) + (r.inControlledShutdown() ? 2 : 0)
            + (st.alive.contains(r.id()) ? 1 : 0);
    }

    /** sent: every registered broker's key, as a full brokers() says them. */
    static void brokersSent(DriverState st, Map<Integer, Long> sent) {
        sent.clear();
        for (BrokerRegistration r : st.clusterControl.brokerRegistrations().values()) {
            sent.put(r.id(), brokerKey(st, r));
        }
    }

    /** The brokers whose key differs from what sent holds (as brokers() says them; null:
     * none), the ids no longer registered into gone (ascending); sent updated. */
    static ObjectNode brokersChanged(DriverState st, Map<Integer, Long> sent, java.util.List<Integer> gone) {
        Map<Integer, BrokerRegistration> regs = st.clusterControl.brokerRegistrations();
        ObjectNode out = null;
        for (BrokerRegistration r : regs.values()) {
            long key = brokerKey(st, r);
            Long was = sent.put(r.id(), key);
            if (was == null || was != key) {
                if (out == null) {
                    out = JSON.createObjectNode();
                }
                broker(out, st, r);
            }
        }
        if (sent.size() != regs.size()) {
            for (Iterator<Integer> it = sent.keySet().iterator(); it.hasNext(); ) {
                Integer id = it.next();
                if (!regs.containsKey(id)) {
                    gone.add(id);
                    it.remove();
                }
            }
            java.util.Collections.sort(gone);
        }
        return out;
    }

    static void broker(ObjectNode out, DriverState st, BrokerRegistration r) {
        ObjectNode b = out.putObject(Integer.toString(r.id()));
        b.put("epoch", r.epoch());
        b.put("fenced", r.fenced());
        b.put("inControlledShutdown", r.inControlledShutdown());
        b.put("alive", st.alive.contains(r.id()));
    }

    static ObjectNode brokers(DriverState st) {
        ObjectNode out = JSON.createObjectNode();
        for (BrokerRegistration r : new TreeMap<>(st.clusterControl.brokerRegistrations()).values()) {
            broker(out, st, r);
        }
        return out;
    }
}
