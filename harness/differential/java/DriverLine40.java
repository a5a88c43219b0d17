/*
 * Kafka 4.0: what changed since 3.9.
 * - ELR becomes the feature eligible.leader.replicas.version (EligibleLeaderReplicasVersion
 *   in server-common), finalized at bootstrap and changed live by UpdateFeatures; the
 *   controller config and ReplicationControlManager.Builder.setEligibleLeaderReplicasEnabled
 *   are gone; FeatureControlManager.isElrFeatureEnabled; ClearElrRecord (replayed by
 *   DriverState). With ELR on at bootstrap, ActivationRecordsGenerator writes the
 *   cluster-level min.insync.replicas (DriverSetup).
 * - ClusterControlManager.Builder.setBrokerShutdownHandler with a
 *   ClusterControlManager.BrokerShutdownHandler (brokerId, isCleanShutdown, records), which
 *   QuorumController points at ReplicationControlManager.handleBrokerShutdown;
 *   registerBroker(request, offset, finalizedFeatures, cleanShutdownDetectionEnabled), true
 *   from BrokerRegistrationRequest version 3 (QuorumController.registerBroker).
 * - ClusterControlManager.trackBrokerHeartbeat(brokerId, brokerEpoch): QuorumController
 *   calls it for a heartbeat before queueing the heartbeat's event.
 * - ConfigurationControlManager.Builder.setFeatureControl, and UpdateFeatures goes through
 *   ConfigurationControlManager.updateFeatures(updates, upgradeTypes, validateOnly), which
 *   adds maybeGenerateElrSafetyRecords when the ELR level goes above 0; it answers one ApiError.
 * - QuorumFeatures.defaultSupportedFeatureMap(enableUnstable).
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.server.common.MetadataVersion;

import java.util.List;
import java.util.Map;

import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverReflection.call;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.proxy;

class DriverLine40 extends DriverLine39 {
    @Override
    String name() {
        return "4.0";
    }

    /** The feature eligible.leader.replicas.version, finalized at bootstrap: by default
     * the highest level whose bootstrap metadata.version the session's reaches. */
    @Override
    ElrPlan planElr(MetadataVersion mv, Boolean wanted) {
        ElrPlan plan = new ElrPlan();
        String kafka = "Kafka " + DriverKafkaUtils.kafkaVersion();
        Class<?> feature = classOrNull("org.apache.kafka.server.common.EligibleLeaderReplicasVersion");
        plan.mode = "feature eligible.leader.replicas.version";
        int defaultLevel = 0;
        int onLevel = -1;
        for (Object v : feature.getEnumConstants()) {
            int level = (Short) invoke(v, "featureLevel");
            MetadataVersion boot = (MetadataVersion) invoke(v, "bootstrapMetadataVersion");
            if (level > 0 && onLevel < 0) {
                onLevel = level;
            }
            if (boot.featureLevel() <= mv.featureLevel() && level > defaultLevel) {
                defaultLevel = level;
            }
        }
        boolean on = wanted != null ? wanted : defaultLevel > 0;
        if (on) {
            if (onLevel < 0) {
                throw new Unsupported(kafka + " has no eligible.leader.replicas.version level that enables ELR");
            }
            Object levelOne = invoke(feature, "fromFeatureLevel", (short) onLevel);
            @SuppressWarnings("unchecked")
            Map<String, Short> deps = (Map<String, Short>) invoke(levelOne, "dependencies");
            Short needMv = deps.get(MetadataVersion.FEATURE_NAME);
            if (needMv != null && mv.featureLevel() < needMv) {
                throw new Unsupported(kafka + ": eligible.leader.replicas.version=" + onLevel
                    + " needs metadata.version level " + needMv + " or later; the session's "
                    + mv.version() + " is level " + mv.featureLevel());
            }
            plan.featureLevel = onLevel;
        } else {
            plan.featureLevel = 0;
        }
        if (wanted == null) {
            plan.notes.add("elr not given: " + (on ? "on" : "off") + ", the default of a new "
                + "cluster of this build on metadata.version " + mv.version());
        }
        return plan;
    }

    @Override
    boolean elrEnabled(DriverState st) {
        return (Boolean) invoke(st.featureControl, "isElrFeatureEnabled");
    }

    @Override
    QuorumFeatures quorumFeatures(boolean unstable) {
        return quorumFeatures(invoke(QuorumFeatures.class, "defaultSupportedFeatureMap", unstable));
    }

    @Override
    void setShutdownHandler(ClusterControlManager.Builder builder, DriverState st) {
        Class<?> handler = classOrNull(
            "org.apache.kafka.controller.ClusterControlManager$BrokerShutdownHandler");
        invoke(builder, "setBrokerShutdownHandler", proxy(handler, args ->
            invoke(st.replicationControl, "handleBrokerShutdown", args[0], args[1], args[2])));
    }

    @Override
    void configureConfigurationBuilder(ConfigurationControlManager.Builder builder,
                                       FeatureControlManager featureControl) {
        invoke(builder, "setFeatureControl", featureControl);
    }

    @Override
    void configureReplicationBuilder(ReplicationControlManager.Builder builder,
                                     boolean elrControllerConfig) {
    }

    @Override
    void registrationNotes(boolean clean, List<String> notes) {
    }

    @Override
    ControllerResult<?> registerBroker(ClusterControlManager cluster, BrokerRegistrationRequestData request,
                                       long offset, FinalizedControllerFeatures finalized, short apiVersion) {
        return (ControllerResult<?>) call(ClusterControlManager.class, cluster, "registerBroker",
            request, offset, finalized, apiVersion >= 3);
    }

    @Override
    void trackHeartbeat(DriverState st, int id, long epoch) {
        invoke(st.clusterControl, "trackBrokerHeartbeat", id, epoch);
    }

    @Override
    ControllerResult<?> updateFeatures(DriverState st, Map<String, Short> updates,
                                       Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types) {
        return (ControllerResult<?>) call(ConfigurationControlManager.class, st.configurationControl,
            "updateFeatures", updates, types, false);
    }

    @Override
    ApiError updateFeaturesError(Object response, String name) {
        return (ApiError) response;
    }
}
