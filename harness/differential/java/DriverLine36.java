/*
 * Kafka 3.6, the oldest line the driver runs: what every later line starts from.
 * - No ELR: PartitionRegistration has no elr / lastKnownElr (KIP-966's ELR arrived in 3.7).
 * - MetadataVersion has no LATEST_PRODUCTION: MetadataVersion.latest() is the latest production.
 * - QuorumFeatures(nodeId, ApiVersions, features, quorumNodeIds); QuorumFeatures.defaultFeatureMap().
 * - ClusterControlManager.registerBroker(request, offset, finalizedFeatures); the request
 *   has no PreviousBrokerEpoch and no log directories.
 * - No shutdown handler: the controller does nothing about an unclean shutdown.
 * - FeatureControlManager.updateFeatures(updates, upgradeTypes, brokerFeatures,
 *   validateOnly), answering an ApiError per feature.
 * - createTopics(context, request, describable), incrementalAlterConfigs(configChanges,
 *   newlyCreatedResource); CreateTopicsRequestData.CreateableTopicConfig.
 * - No ReplicationControlManager.maybeElectUncleanLeaders.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.MetadataVersion;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverReflection.call;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.construct;
import static org.apache.kafka.controller.DriverReflection.invoke;

class DriverLine36 extends DriverLine {
    static final int[] NONE = new int[0];

    @Override
    String name() {
        return "3.6";
    }

    @Override
    MetadataVersion latestProduction() {
        return (MetadataVersion) invoke(MetadataVersion.class, "latest");
    }

    @Override
    ElrPlan planElr(MetadataVersion mv, Boolean wanted) {
        ElrPlan plan = new ElrPlan();
        plan.mode = "unsupported";
        if (Boolean.TRUE.equals(wanted)) {
            throw new Unsupported("Kafka " + DriverKafkaUtils.kafkaVersion() + " has no ELR: "
                + "PartitionRegistration has no elr field (KIP-966's ELR code arrived in 3.7)");
        }
        return plan;
    }

    @Override
    boolean elrEnabled(DriverState st) {
        return false;
    }

    @Override
    int[] elr(PartitionRegistration reg) {
        return NONE;
    }

    @Override
    int[] lastKnownElr(PartitionRegistration reg) {
        return NONE;
    }

    @Override
    QuorumFeatures quorumFeatures(boolean unstable) {
        Object features = invoke(QuorumFeatures.class, "defaultFeatureMap");
        return (QuorumFeatures) construct(QuorumFeatures.class, 3000,
            new org.apache.kafka.clients.ApiVersions(), features, List.of(3000));
    }

    @Override
    void setShutdownHandler(ClusterControlManager.Builder builder, DriverState st) {
    }

    @Override
    void configureConfigurationBuilder(ConfigurationControlManager.Builder builder,
                                       FeatureControlManager featureControl) {
    }

    @Override
    void configureReplicationBuilder(ReplicationControlManager.Builder builder,
                                     boolean elrControllerConfig) {
    }

    @Override
    void setLogDirs(BrokerRegistrationRequestData request, DriverState st, int id) {
    }

    @Override
    boolean setPreviousBrokerEpoch(BrokerRegistrationRequestData request, long epoch) {
        return false;
    }

    @Override
    void registrationNotes(boolean clean, List<String> notes) {
        if (!clean) {
            notes.add("this build's BrokerRegistrationRequest has no PreviousBrokerEpoch: its "
                + "controller cannot tell an unclean shutdown from a clean one");
            notes.add(NO_UNCLEAN_SHUTDOWN_HANDLING);
        }
    }

    static final String NO_UNCLEAN_SHUTDOWN_HANDLING = "this build's controller does nothing "
        + "about an unclean shutdown (ReplicationControlManager.handleBrokerUncleanShutdown arrived in 3.8)";

    @Override
    ControllerResult<?> registerBroker(ClusterControlManager cluster, BrokerRegistrationRequestData request,
                                       long offset, FinalizedControllerFeatures finalized, short apiVersion) {
        return (ControllerResult<?>) call(ClusterControlManager.class, cluster, "registerBroker",
            request, offset, finalized);
    }

    @Override
    void trackHeartbeat(DriverState st, int id, long epoch) {
    }

    @Override
    Class<?> createTopicConfigClass() {
        return classOrNull("org.apache.kafka.common.message.CreateTopicsRequestData$CreateableTopicConfig");
    }

    @Override
    @SuppressWarnings("unchecked")
    ControllerResult<CreateTopicsResponseData> createTopics(ReplicationControlManager replication,
        ControllerRequestContext context, CreateTopicsRequestData request, Set<String> names) {
        return (ControllerResult<CreateTopicsResponseData>) call(ReplicationControlManager.class,
            replication, "createTopics", context, request, names);
    }

    @Override
    @SuppressWarnings("unchecked")
    ControllerResult<Map<ConfigResource, ApiError>> incrementalAlterConfigs(
        ConfigurationControlManager config, Map<ConfigResource, Map<String,
        Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>> request) {
        return (ControllerResult<Map<ConfigResource, ApiError>>) call(ConfigurationControlManager.class,
            config, "incrementalAlterConfigs", request, false);
    }

    @Override
    ControllerResult<?> updateFeatures(DriverState st, Map<String, Short> updates,
                                       Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types) {
        return (ControllerResult<?>) invoke(st.featureControl, "updateFeatures", updates, types,
            invoke(st.clusterControl, "brokerSupportedVersions"), false);
    }

    @Override
    ApiError updateFeaturesError(Object response, String name) {
        return (ApiError) ((Map<?, ?>) response).get(name);
    }

    @Override
    String noPeriodicUncleanElection() {
        return "this build's controller has no periodic unclean "
            + "election (ReplicationControlManager.maybeElectUncleanLeaders arrived in 3.9)";
    }

    @Override
    ControllerResult<?> maybeElectUncleanLeaders(ReplicationControlManager replication) {
        throw new Unsupported(noPeriodicUncleanElection());
    }
}
