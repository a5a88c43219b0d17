/*
 * A session's start: the settings read, the metadata.version and ELR chosen, the managers
 * QuorumController composes built with their own Builders (FeatureControlManager,
 * ClusterControlManager with the shutdown handler, ConfigurationControlManager with the
 * build's config schema and static config, ReplicationControlManager), the bootstrap
 * records replayed, and the ready answer's facts about the build.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverProtocol.PROTOCOL;
import static org.apache.kafka.controller.DriverProtocol.ProtocolError;
import static org.apache.kafka.controller.DriverProtocol.Unsupported;
import static org.apache.kafka.controller.DriverReflection.classOrNull;
import static org.apache.kafka.controller.DriverReflection.invoke;

final class DriverSetup {
    static final Set<String> SETTINGS = Set.of("elr", "minIsr", "uncleanElection", "metadataVersion",
        "sessionTimeoutMs", "brokers", "report", "staticConfig", "protocol", "coverageClasses");

    private DriverSetup() {
    }

    /** The session started as the settings say: the ready answer (without the state every
     * answer carries), the settings' brokers not yet registered. */
    static ObjectNode start(DriverState st, DriverCoverage coverage, JsonNode settings) {
        for (Iterator<String> it = settings.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!SETTINGS.contains(name)) {
                throw new ProtocolError("unknown setting " + name + "; known: " + new TreeSet<>(SETTINGS));
            }
        }
        DriverLine line = st.line;
        int minIsr = settings.path("minIsr").asInt(1);
        boolean unclean = settings.path("uncleanElection").asBoolean(false);
        st.sessionTimeoutNs = TimeUnit.MILLISECONDS.toNanos(settings.path("sessionTimeoutMs").asLong(9000));
        st.reportChanged = "changed".equals(settings.path("report").asText("all"));

        MetadataVersion mv = chooseMetadataVersion(line, settings.path("metadataVersion"));
        Boolean elrWanted = settings.hasNonNull("elr") ? settings.get("elr").asBoolean() : null;
        DriverLine.ElrPlan elr = line.planElr(mv, elrWanted);

        buildManagers(st, staticConfig(settings, elr), elr.controllerConfig, !line.isProduction(mv));

        st.recordsOut = JSON.createArrayNode();
        List<ApiMessageAndVersion> bootstrap = new ArrayList<>();
        bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(mv.featureLevel()), (short) 0));
        if (elr.featureLevel >= 0) {
            bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
                .setName(DriverFeatureEvents.ELR_FEATURE)
                .setFeatureLevel((short) elr.featureLevel), (short) 0));
            if (elr.featureLevel > 0) {
                // As ActivationRecordsGenerator does on 4.0+ when ELR is on at bootstrap.
                bootstrap.add(new ApiMessageAndVersion(new ConfigRecord()
                    .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("")
                    .setName("min.insync.replicas").setValue(Integer.toString(minIsr)), (short) 0));
            }
        }
        st.replayAll(bootstrap);
        st.clusterControl.activate();

        ObjectNode ready = JSON.createObjectNode();
        ready.put("ok", true);
        ready.put("ready", true);
        ready.put("protocol", PROTOCOL);
        ready.put("kafka", DriverKafkaUtils.kafkaVersion());
        ready.put("metadataVersion", mv.version());
        ready.put("metadataVersionProduction", line.isProduction(mv));
        ready.put("elr", line.elrEnabled(st));
        ready.put("elrMode", elr.mode);
        ready.put("minIsr", minIsr);
        ready.put("uncleanElection", unclean);
        st.uncleanConfigHonoured = probeUncleanConfig();
        ready.put("uncleanElectionConfigHonoured", st.uncleanConfigHonoured);
        if (!st.uncleanConfigHonoured && unclean) {
            st.sessionNotes.add(DriverConfigEvents.IGNORES_UNCLEAN_CONFIG);
        }
        ready.set("unsupportedEvents", unsupportedEvents(line));
        ready.set("supportedFeatures", DriverFeatureEvents.supportedFeatures(st));
        ready.set("coverageProbes", coverage.openProbes(settings.path("coverageClasses")));
        st.sessionNotes.addAll(elr.notes);
        return ready;
    }

    /** The static config a server.properties of these settings gives (also the fresh
     * managers of a snapshot load, DriverSnapshot). */
    static Map<String, Object> staticConfig(JsonNode settings, DriverLine.ElrPlan elr) {
        Map<String, Object> staticConfig = new HashMap<>();
        staticConfig.put("min.insync.replicas", Integer.toString(settings.path("minIsr").asInt(1)));
        staticConfig.put("unclean.leader.election.enable",
            Boolean.toString(settings.path("uncleanElection").asBoolean(false)));
        if (elr.controllerConfig) {
            staticConfig.put("eligible.leader.replicas.enable", "true");
        }
        JsonNode extra = settings.path("staticConfig");
        for (Iterator<Map.Entry<String, JsonNode>> it = extra.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            staticConfig.put(e.getKey(), e.getValue().asText());
        }
        return staticConfig;
    }

    static MetadataVersion chooseMetadataVersion(DriverLine line, JsonNode wanted) {
        if (wanted.isMissingNode() || wanted.isNull()) {
            return line.latestProduction();
        }
        String name = wanted.asText();
        for (MetadataVersion v : MetadataVersion.values()) {
            if (v.version().equals(name)) {
                if (v.featureLevel() <= 0) {
                    throw new Unsupported("metadata.version " + name + " is not a KRaft metadata.version");
                }
                return v;
            }
        }
        throw new Unsupported("this build has no metadata.version " + name + " (latest production: "
            + line.latestProduction().version() + ")");
    }

    static void buildManagers(DriverState st, Map<String, Object> staticConfig,
                              boolean elrControllerConfig, boolean unstableFeatures) {
        DriverLine line = st.line;
        st.quorumFeatures = line.quorumFeatures(unstableFeatures);
        st.featureControl = new FeatureControlManager.Builder()
            .setLogContext(DriverKafkaUtils.LOG_CONTEXT)
            .setSnapshotRegistry(st.snapshotRegistry)
            .setQuorumFeatures(st.quorumFeatures)
            .build();
        ClusterControlManager.Builder cluster = new ClusterControlManager.Builder()
            .setLogContext(DriverKafkaUtils.LOG_CONTEXT)
            .setClusterId(DriverState.CLUSTER_ID)
            .setTime(st.time)
            .setSnapshotRegistry(st.snapshotRegistry)
            .setSessionTimeoutNs(st.sessionTimeoutNs)
            .setReplicaPlacer(new StripedReplicaPlacer(new Random(966)))
            .setFeatureControlManager(st.featureControl);
        line.setShutdownHandler(cluster, st);
        st.clusterControl = cluster.build();
        ConfigurationControlManager.Builder config = new ConfigurationControlManager.Builder()
            .setLogContext(DriverKafkaUtils.LOG_CONTEXT)
            .setSnapshotRegistry(st.snapshotRegistry)
            .setKafkaConfigSchema(configSchema())
            .setExistenceChecker(new ExistenceChecker(st))
            .setStaticConfig(staticConfig)
            .setNodeId(3000);
        line.configureConfigurationBuilder(config, st.featureControl);
        st.configurationControl = config.build();
        ReplicationControlManager.Builder replication = new ReplicationControlManager.Builder()
            .setSnapshotRegistry(st.snapshotRegistry)
            .setLogContext(DriverKafkaUtils.LOG_CONTEXT)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
            .setConfigurationControl(st.configurationControl)
            .setClusterControl(st.clusterControl)
            .setCreateTopicPolicy(Optional.empty())
            .setFeatureControl(st.featureControl);
        line.configureReplicationBuilder(replication, elrControllerConfig);
        st.replicationControl = replication.build();
    }

    /** The schema the build's KafkaRaftServer gives its controller (broker and topic configs). */
    static KafkaConfigSchema configSchema() {
        Class<?> server = classOrNull("kafka.server.KafkaRaftServer");
        if (server == null) {
            throw new IllegalStateException("kafka.server.KafkaRaftServer is not on the class path");
        }
        return (KafkaConfigSchema) invoke(server, "configSchema");
    }

    /** QuorumController's ConfigResourceExistenceChecker, in short. */
    static final class ExistenceChecker implements Consumer<ConfigResource> {
        private final DriverState st;

        ExistenceChecker(DriverState st) {
            this.st = st;
        }

        @Override
        public void accept(ConfigResource resource) {
            switch (resource.type()) {
                case BROKER:
                    if (resource.name().isEmpty()) {
                        return;
                    }
                    int id;
                    try {
                        id = Integer.parseInt(resource.name());
                    } catch (NumberFormatException e) {
                        throw new InvalidRequestException("Invalid broker name " + resource.name());
                    }
                    if (!st.clusterControl.brokerRegistrations().containsKey(id)) {
                        throw new BrokerIdNotRegisteredException("No node with id " + id + " found.");
                    }
                    return;
                case TOPIC:
                    if (st.replicationControl.getTopicId(resource.name()) == null) {
                        throw new UnknownTopicOrPartitionException("The topic '" + resource.name()
                            + "' does not exist.");
                    }
                    return;
                default:
                    return;
            }
        }
    }

    /** Whether this build's controller reads unclean.leader.election.enable at all: asked
     * of a scratch ConfigurationControlManager whose static config turns it on. */
    static boolean probeUncleanConfig() {
        ConfigurationControlManager probe = new ConfigurationControlManager.Builder()
            .setLogContext(DriverKafkaUtils.LOG_CONTEXT)
            .setSnapshotRegistry(new SnapshotRegistry(DriverKafkaUtils.LOG_CONTEXT))
            .setKafkaConfigSchema(configSchema())
            .setStaticConfig(Map.of("unclean.leader.election.enable", "true"))
            .build();
        return probe.uncleanLeaderElectionEnabledForTopic("probe");
    }

    static ObjectNode unsupportedEvents(DriverLine line) {
        ObjectNode out = JSON.createObjectNode();
        String noUnclean = line.noPeriodicUncleanElection();
        if (noUnclean != null) {
            out.put("tick:electUnclean", noUnclean);
        }
        return out;
    }
}
