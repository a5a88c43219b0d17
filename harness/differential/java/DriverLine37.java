/*
 * Kafka 3.7: what changed since 3.6.
 * - ELR arrives (KAFKA-15581 "Introduce ELR", KAFKA-15584 "Leader election with ELR"):
 *   PartitionRegistration.elr / lastKnownElr; behind the controller config
 *   eligible.leader.replicas.enable (ReplicationControlManager.Builder
 *   .setEligibleLeaderReplicasEnabled, ReplicationControlManager.isElrEnabled), effective
 *   only on a metadata.version that MetadataVersion.isElrSupported(), none production here.
 * - MetadataVersion.LATEST_PRODUCTION (KAFKA-15922, the JBOD metadata.version).
 * - QuorumFeatures(nodeId, features, quorumNodeIds); defaultFeatureMap(enableUnstable).
 * - BrokerRegistrationRequest: PreviousBrokerEpoch (KAFKA-15582 "Identify clean shutdown
 *   broker") and LogDirs (KAFKA-15364, JBOD); ClusterControlManager.registerBroker(request,
 *   offset, finalizedFeatures, short version). The controller logs an unclean shutdown and
 *   does nothing else (the handling arrives in 3.8).
 * - FeatureControlManager.updateFeatures(updates, upgradeTypes, validateOnly): the brokers'
 *   supported versions are its own to read now.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;

import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverReflection.call;
import static org.apache.kafka.controller.DriverReflection.construct;
import static org.apache.kafka.controller.DriverReflection.field;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.staticField;

class DriverLine37 extends DriverLine36 {
    final Field elrField = field(PartitionRegistration.class, "elr");
    final Field lastKnownElrField = field(PartitionRegistration.class, "lastKnownElr");

    @Override
    String name() {
        return "3.7";
    }

    @Override
    MetadataVersion latestProduction() {
        return (MetadataVersion) staticField(MetadataVersion.class, "LATEST_PRODUCTION");
    }

    /** eligible.leader.replicas.enable, effective only on a metadata.version that
     * isElrSupported(), none of them production in 3.7-3.9. */
    @Override
    ElrPlan planElr(MetadataVersion mv, Boolean wanted) {
        ElrPlan plan = new ElrPlan();
        plan.mode = "controller config eligible.leader.replicas.enable";
        if (Boolean.TRUE.equals(wanted)) {
            if (!(Boolean) invoke(mv, "isElrSupported")) {
                String first = null;
                for (MetadataVersion v : MetadataVersion.values()) {
                    if ((Boolean) invoke(v, "isElrSupported")) {
                        first = v.version();
                        break;
                    }
                }
                throw new Unsupported("Kafka " + DriverKafkaUtils.kafkaVersion() + " runs its ELR "
                    + "code only on metadata.version " + (first == null ? "(none)" : first)
                    + " or later, which is not a production metadata.version of this build "
                    + "(latest production: " + latestProduction().version() + "); pass metadataVersion \""
                    + first + "\" to run it there anyway (not a production setup)");
            }
            plan.controllerConfig = true;
            if (!isProduction(mv)) {
                plan.notes.add("metadata.version " + mv.version() + " is not a production "
                    + "metadata.version of this build: not a production setup");
            }
        }
        return plan;
    }

    @Override
    boolean elrEnabled(DriverState st) {
        return (Boolean) invoke(st.replicationControl, "isElrEnabled");
    }

    @Override
    int[] elr(PartitionRegistration reg) {
        return (int[]) get(elrField, reg);
    }

    @Override
    int[] lastKnownElr(PartitionRegistration reg) {
        return (int[]) get(lastKnownElrField, reg);
    }

    @Override
    QuorumFeatures quorumFeatures(boolean unstable) {
        return quorumFeatures(invoke(QuorumFeatures.class, "defaultFeatureMap", unstable));
    }

    static QuorumFeatures quorumFeatures(Object features) {
        return (QuorumFeatures) construct(QuorumFeatures.class, 3000, features, List.of(3000));
    }

    @Override
    void configureReplicationBuilder(ReplicationControlManager.Builder builder,
                                     boolean elrControllerConfig) {
        invoke(builder, "setEligibleLeaderReplicasEnabled", elrControllerConfig);
    }

    @Override
    void setLogDirs(BrokerRegistrationRequestData request, DriverState st, int id) {
        Uuid dir = st.logDirs.computeIfAbsent(id, k -> st.newDirectoryId());
        invoke(request, "setLogDirs", List.of(dir));
    }

    @Override
    boolean setPreviousBrokerEpoch(BrokerRegistrationRequestData request, long epoch) {
        invoke(request, "setPreviousBrokerEpoch", epoch);
        return true;
    }

    @Override
    void registrationNotes(boolean clean, List<String> notes) {
        if (!clean) {
            notes.add(NO_UNCLEAN_SHUTDOWN_HANDLING);
        }
    }

    @Override
    ControllerResult<?> registerBroker(ClusterControlManager cluster, BrokerRegistrationRequestData request,
                                       long offset, FinalizedControllerFeatures finalized, short apiVersion) {
        return (ControllerResult<?>) call(ClusterControlManager.class, cluster, "registerBroker",
            request, offset, finalized, apiVersion);
    }

    @Override
    ControllerResult<?> updateFeatures(DriverState st, Map<String, Short> updates,
                                       Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types) {
        return (ControllerResult<?>) call(FeatureControlManager.class, st.featureControl,
            "updateFeatures", updates, types, false);
    }
}
