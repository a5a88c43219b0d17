/*
 * Log directories (KIP-858, JBOD in KRaft, 3.7+; cordoned directories, 4.3+), added for
 * issue 44 items 2 and 4: a registration with no, one or several log directories
 * (ClusterControlManager.registerBroker refuses none, a reserved id, a duplicate, or a
 * directory another broker registered, on a metadata.version with directory assignment);
 * a heartbeat's offline and cordoned directories (ReplicationControlManager.
 * processBrokerHeartbeat: handleDirectoriesOffline, handleDirectoriesCordoned); and
 * AssignReplicasToDirs (ReplicationControlManager.handleAssignReplicasToDirs, which
 * QuorumController.assignReplicasToDirs calls with the request). Reached by reflection:
 * 3.6 has none of it, and cordoned directories are 4.3's; a build without the member
 * answers UNSUPPORTED.
 *
 * Directories are named in events by index into the broker's directories (those it
 * registered with, in order; an index past them is a directory the broker never
 * registered), so an event keeps its meaning in every lane and every incarnation.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.metadata.BrokerRegistration;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverProtocol.refuseIf;
import static org.apache.kafka.controller.DriverProtocol.requireInt;
import static org.apache.kafka.controller.DriverProtocol.requireText;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.method;
import static org.apache.kafka.controller.DriverReflection.newInstance;

final class DriverDirectoryEvents {
    static final String NO_DIRS = "this build has no log directories in KRaft "
        + "(KIP-858: BrokerRegistrationRequest.LogDirs, AssignReplicasToDirs, 3.7+)";
    static final String NO_CORDONED = "this build has no cordoned log directories "
        + "(BrokerHeartbeatRequest.CordonedLogDirs, 4.3+)";

    private final DriverState st;
    /** Every directory each broker has registered with, in order (the first is the
     * release-line adapter's one directory, DriverLine37.setLogDirs). */
    private final Map<Integer, List<Uuid>> dirs = new HashMap<>();

    DriverDirectoryEvents(DriverState st) {
        this.st = st;
    }

    /** The registration's log directories: {@code count} of the broker's (0: none; more
     * than it had: new ones added). No {@code logDirs} field: the adapter's default (one
     * directory), or, once the broker has registered with more, all of them (a broker
     * restarted with the same log.dirs: a partition assigned to any of them stays on an
     * online directory). */
    void setLogDirs(BrokerRegistrationRequestData request, int id, JsonNode e) {
        if (e == null || !e.has("logDirs")) {
            List<Uuid> mine = dirs.get(id);
            if (mine != null && mine.size() > 1) {
                invoke(request, "setLogDirs", new ArrayList<>(mine));
            }
            return;
        }
        if (method(BrokerRegistrationRequestData.class, "setLogDirs", 1) == null) {
            throw new Unsupported(NO_DIRS);
        }
        int count = e.get("logDirs").asInt();
        List<Uuid> mine = known(id);
        while (mine.size() < count) {
            mine.add(st.newDirectoryId());
        }
        invoke(request, "setLogDirs", new ArrayList<>(mine.subList(0, Math.max(0, count))));
    }

    /** A snapshot's fresh managers (DriverSnapshot.take): the brokers' directories are
     * their disks', the same whichever controller is active; without them a directory
     * index past the first would name a new, random id on the fresh side. */
    void copyFrom(DriverDirectoryEvents other) {
        other.dirs.forEach((id, list) -> dirs.put(id, new ArrayList<>(list)));
    }

    private List<Uuid> known(int id) {
        List<Uuid> mine = dirs.computeIfAbsent(id, k -> new ArrayList<>());
        if (mine.isEmpty()) {
            mine.add(st.logDirs.computeIfAbsent(id, k -> st.newDirectoryId()));
        }
        return mine;
    }

    /** Directories by index into the broker's (an index past them: an unknown one, unknownDir). */
    private List<Uuid> resolve(int id, JsonNode indexes) {
        List<Uuid> mine = known(id);
        List<Uuid> out = new ArrayList<>();
        for (JsonNode i : indexes) {
            int k = i.asInt();
            out.add(k >= 0 && k < mine.size() ? mine.get(k) : unknownDir(id, k));
        }
        return out;
    }

    /** A directory the broker never registered (offline), the same for the same broker and
     * index: so the fresh managers of a snapshot point (DriverSnapshot) answer with the same
     * id as the original (a random one differed: a false {@code snapshot:dir:assignDirs}).
     * Its high bits are not zero, so it is none of DirectoryId's reserved ids. */
    static Uuid unknownDir(int id, int index) {
        return new Uuid(0x6b63_756e_6b6e_6f77L, ((long) id << 32) | (index & 0xffffffffL));
    }

    /** A heartbeat's offlineDirs / cordonedDirs (indexes), if the event gives them. */
    void setHeartbeatDirs(BrokerHeartbeatRequestData request, int id, JsonNode e) {
        if (e == null) {
            return;
        }
        if (e.has("offlineDirs")) {
            if (method(BrokerHeartbeatRequestData.class, "setOfflineLogDirs", 1) == null) {
                throw new Unsupported(NO_DIRS);
            }
            invoke(request, "setOfflineLogDirs", resolve(id, e.get("offlineDirs")));
        }
        if (e.has("cordonedDirs")) {
            if (method(BrokerHeartbeatRequestData.class, "setCordonedLogDirs", 1) == null) {
                throw new Unsupported(NO_CORDONED);
            }
            invoke(request, "setCordonedLogDirs", resolve(id, e.get("cordonedDirs")));
        }
    }

    /** AssignReplicasToDirs from a broker: one partition of a topic (an unknown name: an
     * unknown topic id) to one of its directories (by index); with {@code back}, then a
     * second request assigning it back to the first directory, in the same event (so that
     * no other event sees a replica on a directory the broker never registered, which is
     * offline: the model knows no directories). */
    ObjectNode assignDirs(JsonNode e) {
        ObjectNode out = assignDirs(e, e.path("dir").asInt(0));
        if (e.path("back").asBoolean(false) && e.path("dir").asInt(0) != 0) {
            try {
                assignDirs(e, 0);
            } catch (DriverProtocol.Refused r) {
                // the first was refused the same way: nothing to undo
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private ObjectNode assignDirs(JsonNode e, int dirIndex) {
        String requestClass = "org.apache.kafka.common.message.AssignReplicasToDirsRequestData";
        Class<?> req = classOrNull(requestClass);
        if (req == null || method(ReplicationControlManager.class, "handleAssignReplicasToDirs", 1) == null) {
            throw new Unsupported(NO_DIRS);
        }
        int id = requireInt(e, "broker");
        BrokerRegistration registration = st.clusterControl.brokerRegistrations().get(id);
        if (registration == null && !e.has("brokerEpoch")) {
            throw new BrokerIdNotRegisteredException("Broker " + id + " is not registered");
        }
        long epoch = e.has("brokerEpoch") ? e.get("brokerEpoch").asLong() : registration.epoch();
        Uuid topicId = st.topicIds.get(requireText(e, "topic"));
        Uuid dir = resolve(id, JSON.createArrayNode().add(dirIndex)).get(0);
        Object request = newInstance(req);
        invoke(request, "setBrokerId", id);
        invoke(request, "setBrokerEpoch", epoch);
        Object dirData = newInstance(classOrNull(requestClass + "$DirectoryData"));
        invoke(dirData, "setId", dir);
        Object topicData = newInstance(classOrNull(requestClass + "$TopicData"));
        invoke(topicData, "setTopicId", topicId == null ? Uuid.randomUuid() : topicId);
        Object partData = newInstance(classOrNull(requestClass + "$PartitionData"));
        invoke(partData, "setPartitionIndex", e.path("partition").asInt(0));
        ((List<Object>) invoke(topicData, "partitions")).add(partData);
        ((List<Object>) invoke(dirData, "topics")).add(topicData);
        ((List<Object>) invoke(request, "directories")).add(dirData);
        ControllerResult<?> result = (ControllerResult<?>) invoke(st.replicationControl,
            "handleAssignReplicasToDirs", request);
        st.replayAll(result.records());
        Object resDir = ((List<?>) invoke(result.response(), "directories")).get(0);
        Object resTopic = ((List<?>) invoke(resDir, "topics")).get(0);
        Object resPart = ((List<?>) invoke(resTopic, "partitions")).get(0);
        refuseIf((Short) invoke(resPart, "errorCode"), null);
        ObjectNode out = JSON.createObjectNode();
        out.put("dir", dir.toString());
        return out;
    }
}
