/*
 * Events of ClusterControlManager (and the broker side of ReplicationControlManager):
 * register, unfence / heartbeat, fence (a session expiring), controlledShutdown,
 * unregister; the stale-broker task. Called as QuorumController calls them.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.BrokerHeartbeatReply;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.FinalizedControllerFeatures;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

import static org.apache.kafka.controller.DriverFeatureEvents.ELR_FEATURE;
import static org.apache.kafka.controller.DriverProtocol.JSON;

final class DriverBrokerEvents {
    private final DriverState st;

    final DriverDirectoryEvents dirs;  // log directories: registration, heartbeat, assignment

    DriverBrokerEvents(DriverState st) {
        this.st = st;
        this.dirs = new DriverDirectoryEvents(st);
    }

    ObjectNode register(int id, boolean clean, List<String> notes) {
        return register(id, clean, notes, null);
    }

    /** {@code e}: the event, for its optional {@code logDirs} (DriverDirectoryEvents). */
    ObjectNode register(int id, boolean clean, List<String> notes, com.fasterxml.jackson.databind.JsonNode e) {
        BrokerRegistration existing = st.clusterControl.brokerRegistrations().get(id);
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
            .setBrokerId(id)
            .setClusterId(DriverState.CLUSTER_ID)
            .setIncarnationId(Uuid.randomUuid())
            .setRack(null)
            .setIsMigratingZkBroker(false);
        BrokerRegistrationRequestData.ListenerCollection listeners =
            new BrokerRegistrationRequestData.ListenerCollection();
        listeners.add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT")
            .setHost("localhost").setPort(9092 + id).setSecurityProtocol(SecurityProtocol.PLAINTEXT.id));
        request.setListeners(listeners);
        // The broker supports every feature the controller has finalized, at that level.
        BrokerRegistrationRequestData.FeatureCollection features =
            new BrokerRegistrationRequestData.FeatureCollection();
        FinalizedControllerFeatures finalized = st.featureControl.finalizedFeatures(Long.MAX_VALUE);
        for (Map.Entry<String, Short> f : finalized.featureMap().entrySet()) {
            if (f.getKey().equals(ELR_FEATURE)) {
                continue;
            }
            features.add(new BrokerRegistrationRequestData.Feature().setName(f.getKey())
                .setMinSupportedVersion((short) Math.min(f.getValue(), 1)).setMaxSupportedVersion(f.getValue()));
        }
        short[] elrRange = DriverFeatureEvents.supportedRange(st, ELR_FEATURE);
        if (elrRange != null) {
            // 4.0+: a broker of this build supports every level of eligible.leader.replicas.version
            // its controller does (BrokerFeatures: 0 up to the latest), finalized or not, so the
            // level can be raised and lowered live (FeatureControlManager.reasonNotSupported
            // asks every registered broker).
            features.add(new BrokerRegistrationRequestData.Feature().setName(ELR_FEATURE)
                .setMinSupportedVersion(elrRange[0]).setMaxSupportedVersion(elrRange[1]));
        }
        request.setFeatures(features);
        st.line.setLogDirs(request, st, id);
        dirs.setLogDirs(request, id, e);
        long previousEpoch = clean && existing != null ? existing.epoch() : -1L;
        st.line.setPreviousBrokerEpoch(request, previousEpoch);
        if (notes != null) {
            st.line.registrationNotes(clean, notes);
        }
        short apiVersion = ApiKeys.BROKER_REGISTRATION.latestVersion();
        ControllerResult<?> result = st.line.registerBroker(st.clusterControl, request, st.nextOffset,
            finalized, apiVersion);
        st.replayAll(result.records());
        st.alive.add(id);
        ObjectNode out = JSON.createObjectNode();
        out.put("brokerEpoch", st.clusterControl.brokerRegistrations().get(id).epoch());
        out.put("previousBrokerEpoch", previousEpoch);
        return out;
    }

    ObjectNode heartbeat(int id, boolean wantFence, boolean wantShutDown, boolean caughtUp) {
        return heartbeat(id, wantFence, wantShutDown, caughtUp, null);
    }

    /** {@code e}: the event, for its optional offlineDirs / cordonedDirs. */
    ObjectNode heartbeat(int id, boolean wantFence, boolean wantShutDown, boolean caughtUp,
                         com.fasterxml.jackson.databind.JsonNode e) {
        BrokerRegistration registration = st.clusterControl.brokerRegistrations().get(id);
        if (registration == null) {
            throw new BrokerIdNotRegisteredException("Broker " + id + " is not registered");
        }
        long epoch = registration.epoch();
        st.line.trackHeartbeat(st, id, epoch);  // 4.0+: QuorumController does this first, outside its queue
        OptionalLong registerOffset = st.clusterControl.registerBrokerRecordOffset(id);
        if (!registerOffset.isPresent()) {
            throw new org.apache.kafka.common.errors.StaleBrokerEpochException(
                "Receive a heartbeat from broker " + id + " before registration");
        }
        long offset = caughtUp ? st.nextOffset - 1 : Math.max(-1L, registerOffset.getAsLong() - 1);
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData()
            .setBrokerId(id).setBrokerEpoch(epoch).setCurrentMetadataOffset(offset)
            .setWantFence(wantFence).setWantShutDown(wantShutDown);
        dirs.setHeartbeatDirs(request, id, e);
        ControllerResult<BrokerHeartbeatReply> result =
            st.replicationControl.processBrokerHeartbeat(request, registerOffset.getAsLong());
        st.replayAll(result.records());
        BrokerHeartbeatReply reply = result.response();
        if (reply.inControlledShutdown()) {
            // QuorumController: processBatchEndOffset of the heartbeat's batch.
            st.clusterControl.heartbeatManager().maybeUpdateControlledShutdownOffset(id, st.nextOffset - 1);
        }
        if (reply.shouldShutDown()) {
            st.alive.remove(id);
        } else {
            st.alive.add(id);
        }
        ObjectNode out = JSON.createObjectNode();
        ObjectNode hb = out.putObject("heartbeat");
        hb.put("isCaughtUp", reply.isCaughtUp());
        hb.put("isFenced", reply.isFenced());
        hb.put("inControlledShutdown", reply.inControlledShutdown());
        hb.put("shouldShutDown", reply.shouldShutDown());
        return out;
    }

    /** The other running brokers heartbeat as usual: their sessions stay valid and their
     * metadata offset is the log end, without any change of state asked. */
    void keepAlive(int except) {
        BrokerHeartbeatManager hbm = st.clusterControl.heartbeatManager();
        Map<Integer, Boolean> fenced = new HashMap<>();
        for (BrokerHeartbeatManager.BrokerHeartbeatState s : hbm.brokers()) {
            fenced.put(s.id(), s.fenced());
        }
        for (int id : st.alive) {
            BrokerRegistration registration = st.clusterControl.brokerRegistrations().get(id);
            if (id == except || registration == null || !fenced.containsKey(id)) {
                continue;
            }
            st.line.trackHeartbeat(st, id, registration.epoch());
            hbm.touch(id, fenced.get(id), st.nextOffset - 1);
        }
    }

    /** The broker stops heartbeating (killed, cut off): its session expires and the
     * controller's stale-broker task fences it, the other brokers heartbeating meanwhile. */
    ObjectNode fence(int id) {
        BrokerRegistration registration = st.clusterControl.brokerRegistrations().get(id);
        if (registration == null) {
            throw new BrokerIdNotRegisteredException("Broker " + id + " is not registered");
        }
        if (st.alive.contains(id)) {
            st.line.trackHeartbeat(st, id, registration.epoch());  // its last heartbeat: now
        }
        st.alive.remove(id);
        st.time.sleep(TimeUnit.NANOSECONDS.toMillis(st.sessionTimeoutNs) + 1);
        keepAlive(id);
        int rounds = runStaleBrokerTask();
        ObjectNode out = JSON.createObjectNode();
        out.put("staleBrokerTaskRuns", rounds);
        return out;
    }

    /** maybeFenceOneStaleBroker until it finds no stale broker (bounded). */
    int runStaleBrokerTask() {
        int limit = 2 * st.clusterControl.brokerRegistrations().size() + 4;
        for (int i = 1; i <= limit; i++) {
            ControllerResult<?> result = st.replicationControl.maybeFenceOneStaleBroker();
            st.replayAll(result.records());
            Object more = result.response();
            boolean again = more instanceof Boolean ? (Boolean) more : !result.records().isEmpty();
            if (!again) {
                return i;
            }
        }
        return limit;
    }

    /** The broker asks to shut down (heartbeats with wantShutDown) until the controller
     * lets it (shouldShutDown), the other brokers heartbeating meanwhile; then it stops. */
    ObjectNode controlledShutdown(int id, int maxRounds) {
        ObjectNode last = null;
        int round = 0;
        while (round < maxRounds) {
            round++;
            last = heartbeat(id, false, true, true);
            if (last.get("heartbeat").get("shouldShutDown").asBoolean()) {
                break;
            }
            keepAlive(id);
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("heartbeat", last.get("heartbeat"));
        out.put("rounds", round);
        out.put("shutDown", last.get("heartbeat").get("shouldShutDown").asBoolean());
        return out;
    }

    ObjectNode unregister(int id) {
        ControllerResult<Void> result = st.replicationControl.unregisterBroker(id);
        st.replayAll(result.records());
        st.alive.remove(id);
        return null;
    }
}
