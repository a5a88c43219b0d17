/*
 * kafka-chaos differential driver: the build's own KRaft controller code, driven by events.
 *
 * Reads JSON lines on stdin (first a settings object, then one event per line) and answers
 * one JSON line per line on stdout: the records the controller wrote for the event and the
 * partition state after it. The protocol is documented in harness/differential/README.md.
 *
 * What runs: the managers QuorumController composes (FeatureControlManager,
 * ClusterControlManager, ConfigurationControlManager, ReplicationControlManager), built
 * with their own Builders and called the way QuorumController calls them for each request;
 * every record they return is replayed into them (as QuorumController.replay does), at
 * consecutive offsets, so state carries across events. Fencing, unclean-shutdown handling,
 * leader election and ELR maintenance are the build's own code. Not run: the Raft log, the
 * event queue, snapshots, metrics, the periodic tasks (except when an event asks for one).
 * The clock is a manual one: it moves only when an event lets a broker's session expire.
 *
 * One source for every build from 3.6 on. It is in the package org.apache.kafka.controller
 * because the managers and their Builders are package-private. Members every build has are
 * called directly; members that differ between release lines (Builder setters,
 * registerBroker, createTopics, incrementalAlterConfigs, the shutdown handlers, ELR fields
 * and records) are reached by reflection, found by name and arity, so the file compiles
 * against each build's jars.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsAssignment;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.CreatePartitionsResponseData.CreatePartitionsTopicResult;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.RemoveTopicRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerHeartbeatReply;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

public final class ControllerDriver {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String CLUSTER_ID = "kafka-chaos-differential";
    static final int PROTOCOL = 1;

    /** An event this build cannot run: answered {"unsupported": reason}. */
    static final class Unsupported extends RuntimeException {
        Unsupported(String reason) {
            super(reason);
        }
    }

    /** A malformed line or event: answered {"ok": false, "protocolError": ...}. */
    static final class ProtocolError extends RuntimeException {
        ProtocolError(String message) {
            super(message);
        }
    }

    /** A refusal the controller answers in a response field rather than by throwing. */
    static final class Refused extends RuntimeException {
        final Errors error;

        Refused(Errors error, String message) {
            super(message);
            this.error = error;
        }
    }

    /** The controller's clock: moves only when an event lets sessions expire. */
    static final class ManualTime implements Time {
        long nanos = TimeUnit.SECONDS.toNanos(1_000_000);

        @Override
        public long milliseconds() {
            return TimeUnit.NANOSECONDS.toMillis(nanos);
        }

        @Override
        public long nanoseconds() {
            return nanos;
        }

        @Override
        public void sleep(long ms) {
            nanos += TimeUnit.MILLISECONDS.toNanos(ms);
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            if (!condition.get()) {
                throw new org.apache.kafka.common.errors.TimeoutException("manual clock: would wait");
            }
        }
    }

    // ---- the build's managers and what the driver keeps beside them ----
    final ManualTime time = new ManualTime();
    final LogContext logContext = new LogContext("[differential] ");
    final SnapshotRegistry snapshotRegistry = new SnapshotRegistry(logContext);
    FeatureControlManager featureControl;
    ClusterControlManager clusterControl;
    ConfigurationControlManager configurationControl;
    ReplicationControlManager replicationControl;
    long sessionTimeoutNs;
    long nextOffset = 1;  // the offset the next record is written at
    final Map<String, Uuid> topicIds = new TreeMap<>();
    final Map<Uuid, String> topicNames = new HashMap<>();
    final Map<Uuid, Integer> partitionCounts = new HashMap<>();
    final Set<Integer> alive = new TreeSet<>();  // brokers whose process runs and heartbeats
    final Map<Integer, Uuid> logDirs = new HashMap<>();
    boolean reportChanged = false;
    final List<String> sessionNotes = new ArrayList<>();

    // ---- per event ----
    ArrayNode recordsOut;
    final Set<String> touched = new LinkedHashSet<>();
    final List<String> removedOut = new ArrayList<>();  // "topic-index" a RemoveTopicRecord removed
    QuorumFeatures quorumFeatures;

    // ---- version probes, found once ----
    final boolean hasPartitionElr = field(PartitionRegistration.class, "elr") != null;
    final Field elrField = field(PartitionRegistration.class, "elr");
    final Field lastKnownElrField = field(PartitionRegistration.class, "lastKnownElr");

    public static void main(String[] args) throws IOException {
        // Answers go to the real stdout; anything a library prints goes to stderr.
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(System.err);
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        Lines in = new Lines(System.in);
        ControllerDriver driver = new ControllerDriver();
        if (!in.next()) {
            return;
        }
        ObjectNode ready;
        boolean started = false;
        try {
            ready = driver.start(parse(in.line, in.length));
            started = true;
        } catch (Unsupported u) {
            ready = JSON.createObjectNode();
            ready.put("unsupported", u.getMessage());
            ready.put("kafka", AppInfoParser.getVersion());
        } catch (ProtocolError p) {
            ready = JSON.createObjectNode();
            ready.put("ok", false);
            ready.put("protocolError", p.getMessage());
        } catch (Throwable t) {
            ready = JSON.createObjectNode();
            ready.put("ok", false);
            ready.put("fatal", describe(unwrap(t)));
            unwrap(t).printStackTrace();
        }
        write(out, ready);
        out.flush();
        if (!started) {
            return;
        }
        long seq = 0;
        while (in.next()) {
            if (in.blank()) {
                continue;
            }
            seq++;
            ObjectNode answer = driver.answer(in.line, in.length, seq);
            write(out, answer);
            if (answer.has("fatal")) {
                out.flush();
                System.exit(2);
            }
            if (!in.ready()) {
                out.flush();  // flush when no further event is waiting: batches when pipelined
            }
        }
        out.flush();
    }

    static void write(OutputStream out, ObjectNode node) throws IOException {
        out.write(JSON.writeValueAsBytes(node));
        out.write('\n');
    }

    static JsonNode parse(byte[] line, int length) {
        try {
            JsonNode node = JSON.readTree(line, 0, length);
            if (node == null || !node.isObject()) {
                throw new ProtocolError("expected a JSON object, got: "
                    + abbreviate(new String(line, 0, length, StandardCharsets.UTF_8)));
            }
            return node;
        } catch (IOException e) {
            throw new ProtocolError("not JSON: " + e.getMessage());
        }
    }

    /** Lines of bytes from a stream: JSON is parsed from the bytes, nothing is decoded. */
    static final class Lines {
        private final InputStream in;
        private final byte[] buffer = new byte[1 << 16];
        private int pos;
        private int end;
        byte[] line = new byte[1 << 12];
        int length;

        Lines(InputStream in) {
            this.in = in;
        }

        /** The next line into line[0, length); false at the end of the input. */
        boolean next() throws IOException {
            length = 0;
            while (true) {
                if (pos == end) {
                    int n = in.read(buffer, 0, buffer.length);
                    pos = 0;
                    end = Math.max(n, 0);
                    if (n <= 0) {
                        return length > 0;
                    }
                }
                int start = pos;
                while (pos < end && buffer[pos] != '\n') {
                    pos++;
                }
                int count = pos - start;
                if (length + count > line.length) {
                    line = java.util.Arrays.copyOf(line, Math.max(2 * line.length, length + count));
                }
                System.arraycopy(buffer, start, line, length, count);
                length += count;
                if (pos < end) {
                    pos++;  // the newline
                    return true;
                }
            }
        }

        boolean blank() {
            for (int i = 0; i < length; i++) {
                if (!Character.isWhitespace(line[i])) {
                    return false;
                }
            }
            return true;
        }

        /** More input is at hand without blocking. */
        boolean ready() throws IOException {
            return pos < end || in.available() > 0;
        }
    }

    // =====================================================================================
    // Session start
    // =====================================================================================

    ObjectNode start(JsonNode settings) {
        Set<String> known = Set.of("elr", "minIsr", "uncleanElection", "metadataVersion",
            "sessionTimeoutMs", "brokers", "report", "staticConfig", "protocol", "coverageClasses");
        for (Iterator<String> it = settings.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!known.contains(name)) {
                throw new ProtocolError("unknown setting " + name + "; known: " + new TreeSet<>(known));
            }
        }
        int minIsr = settings.path("minIsr").asInt(1);
        boolean unclean = settings.path("uncleanElection").asBoolean(false);
        sessionTimeoutNs = TimeUnit.MILLISECONDS.toNanos(settings.path("sessionTimeoutMs").asLong(9000));
        reportChanged = "changed".equals(settings.path("report").asText("all"));

        MetadataVersion mv = chooseMetadataVersion(settings.path("metadataVersion"));
        Boolean elrWanted = settings.hasNonNull("elr") ? settings.get("elr").asBoolean() : null;
        ElrPlan elr = planElr(mv, elrWanted);

        Map<String, Object> staticConfig = new HashMap<>();
        staticConfig.put("min.insync.replicas", Integer.toString(minIsr));
        staticConfig.put("unclean.leader.election.enable", Boolean.toString(unclean));
        if (elr.controllerConfig) {
            staticConfig.put("eligible.leader.replicas.enable", "true");
        }
        JsonNode extra = settings.path("staticConfig");
        for (Iterator<Map.Entry<String, JsonNode>> it = extra.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            staticConfig.put(e.getKey(), e.getValue().asText());
        }

        buildManagers(staticConfig, elr.controllerConfig, !isProduction(mv));

        recordsOut = JSON.createArrayNode();
        List<ApiMessageAndVersion> bootstrap = new ArrayList<>();
        bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(mv.featureLevel()), (short) 0));
        if (elr.featureLevel >= 0) {
            bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
                .setName("eligible.leader.replicas.version")
                .setFeatureLevel((short) elr.featureLevel), (short) 0));
            if (elr.featureLevel > 0) {
                // As ActivationRecordsGenerator does on 4.0+ when ELR is on at bootstrap.
                bootstrap.add(new ApiMessageAndVersion(new ConfigRecord()
                    .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("")
                    .setName("min.insync.replicas").setValue(Integer.toString(minIsr)), (short) 0));
            }
        }
        replayAll(bootstrap);
        clusterControl.activate();

        ObjectNode ready = JSON.createObjectNode();
        ready.put("ok", true);
        ready.put("ready", true);
        ready.put("protocol", PROTOCOL);
        ready.put("kafka", AppInfoParser.getVersion());
        ready.put("metadataVersion", mv.version());
        ready.put("metadataVersionProduction", isProduction(mv));
        boolean elrOn = elrEnabled();
        ready.put("elr", elrOn);
        ready.put("elrMode", elr.mode);
        ready.put("minIsr", minIsr);
        ready.put("uncleanElection", unclean);
        uncleanConfigHonoured = probeUncleanConfig();
        ready.put("uncleanElectionConfigHonoured", uncleanConfigHonoured);
        if (!uncleanConfigHonoured && unclean) {
            sessionNotes.add(IGNORES_UNCLEAN_CONFIG);
        }
        ready.set("unsupportedEvents", unsupportedEvents());
        ready.set("supportedFeatures", supportedFeatures());
        ready.set("coverageProbes", openProbes(settings.path("coverageClasses")));
        for (String note : elr.notes) {
            sessionNotes.add(note);
        }
        // Brokers named in the settings are registered and unfenced, in order.
        for (JsonNode b : settings.path("brokers")) {
            int id = b.asInt();
            register(id, true, null);
            heartbeat(id, false, false, true);
        }
        return withState(ready, sessionNotes, false);
    }

    /** The answer with what every answer carries: its notes, the records the controller
     *  wrote, the partitions (all, or only those changed), the brokers, new coverage. */
    ObjectNode withState(ObjectNode answer, List<String> notes, boolean changedOnly) {
        if (!notes.isEmpty()) {
            ArrayNode n = answer.putArray("notes");
            notes.forEach(n::add);
        }
        answer.set("records", recordsOut);
        answer.set("partitions", partitions(changedOnly));
        if (!removedOut.isEmpty()) {
            ArrayNode removed = answer.putArray("removed");
            removedOut.forEach(removed::add);
        }
        answer.set("brokers", brokers());
        ObjectNode fresh = newProbes();
        if (fresh != null) {
            answer.set("newProbes", fresh);
        }
        return answer;
    }

    MetadataVersion chooseMetadataVersion(JsonNode wanted) {
        if (wanted.isMissingNode() || wanted.isNull()) {
            return latestProduction();
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
            + latestProduction().version() + ")");
    }

    static MetadataVersion latestProduction() {
        Object field = staticField(MetadataVersion.class, "LATEST_PRODUCTION");
        return (MetadataVersion) (field != null ? field : invoke(MetadataVersion.class, "latest"));  // 3.6
    }

    static boolean isProduction(MetadataVersion mv) {
        return mv.featureLevel() <= latestProduction().featureLevel();
    }

    static final class ElrPlan {
        String mode;
        boolean controllerConfig;  // 3.7-3.9: eligible.leader.replicas.enable
        int featureLevel = -1;  // 4.0+: eligible.leader.replicas.version at bootstrap
        final List<String> notes = new ArrayList<>();
    }

    /** How this build turns ELR on or off, or Unsupported with the reason. */
    ElrPlan planElr(MetadataVersion mv, Boolean wanted) {
        ElrPlan plan = new ElrPlan();
        String kafka = "Kafka " + AppInfoParser.getVersion();
        Class<?> feature = classOrNull("org.apache.kafka.server.common.EligibleLeaderReplicasVersion");
        if (feature != null) {
            // 4.0+: the feature eligible.leader.replicas.version, finalized at bootstrap.
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
        if (field(PartitionRegistration.class, "elr") == null) {
            plan.mode = "unsupported";
            if (Boolean.TRUE.equals(wanted)) {
                throw new Unsupported(kafka + " has no ELR: PartitionRegistration has no elr field "
                    + "(KIP-966's ELR code arrived in 3.7)");
            }
            return plan;
        }
        // 3.7-3.9: eligible.leader.replicas.enable, effective only on a metadata.version
        // that isElrSupported(), none of them production in these builds.
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
                throw new Unsupported(kafka + " runs its ELR code only on metadata.version "
                    + (first == null ? "(none)" : first) + " or later, which is not a production "
                    + "metadata.version of this build (latest production: "
                    + latestProduction().version() + "); pass metadataVersion \"" + first
                    + "\" to run it there anyway (not a production setup)");
            }
            plan.controllerConfig = true;
            if (!isProduction(mv)) {
                plan.notes.add("metadata.version " + mv.version() + " is not a production "
                    + "metadata.version of this build: not a production setup");
            }
        }
        return plan;
    }

    void buildManagers(Map<String, Object> staticConfig, boolean elrControllerConfig,
                       boolean unstableFeatures) {
        quorumFeatures = quorumFeatures(unstableFeatures);
        featureControl = new FeatureControlManager.Builder()
            .setLogContext(logContext)
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(quorumFeatures)
            .build();
        ClusterControlManager.Builder cluster = new ClusterControlManager.Builder()
            .setLogContext(logContext)
            .setClusterId(CLUSTER_ID)
            .setTime(time)
            .setSnapshotRegistry(snapshotRegistry)
            .setSessionTimeoutNs(sessionTimeoutNs)
            .setReplicaPlacer(new StripedReplicaPlacer(new Random(966)))
            .setFeatureControlManager(featureControl);
        // What QuorumController passes as the shutdown handler, per release line.
        Class<?> shutdownHandler = classOrNull(
            "org.apache.kafka.controller.ClusterControlManager$BrokerShutdownHandler");
        Class<?> uncleanHandler = classOrNull(
            "org.apache.kafka.controller.ClusterControlManager$BrokerUncleanShutdownHandler");
        if (shutdownHandler != null) {  // 4.0+: (brokerId, isCleanShutdown, records)
            invoke(cluster, "setBrokerShutdownHandler", proxy(shutdownHandler, args ->
                invoke(replicationControl, "handleBrokerShutdown", args[0], args[1], args[2])));
        } else if (uncleanHandler != null) {  // 3.8-3.9: (brokerId, records)
            invoke(cluster, "setBrokerUncleanShutdownHandler", proxy(uncleanHandler, args ->
                invoke(replicationControl, "handleBrokerUncleanShutdown", args[0], args[1])));
        }
        clusterControl = cluster.build();
        ConfigurationControlManager.Builder config = new ConfigurationControlManager.Builder()
            .setLogContext(logContext)
            .setSnapshotRegistry(snapshotRegistry)
            .setKafkaConfigSchema(configSchema())
            .setExistenceChecker(new ExistenceChecker())
            .setStaticConfig(staticConfig)
            .setNodeId(3000);
        if (method(ConfigurationControlManager.Builder.class, "setFeatureControl", 1) != null) {
            invoke(config, "setFeatureControl", featureControl);  // 4.0+
        }
        configurationControl = config.build();
        ReplicationControlManager.Builder replication = new ReplicationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setLogContext(logContext)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
            .setConfigurationControl(configurationControl)
            .setClusterControl(clusterControl)
            .setCreateTopicPolicy(Optional.empty())
            .setFeatureControl(featureControl);
        if (method(ReplicationControlManager.Builder.class, "setEligibleLeaderReplicasEnabled", 1) != null) {
            invoke(replication, "setEligibleLeaderReplicasEnabled", elrControllerConfig);  // 3.7-3.9
        }
        replicationControl = replication.build();
    }

    /** The features this controller supports, as ControllerServer gives them (unstable
     * ones too when the session runs on a metadata.version that is not production). */
    static QuorumFeatures quorumFeatures(boolean unstable) {
        Object features;
        if (method(QuorumFeatures.class, "defaultSupportedFeatureMap", 1) != null) {
            features = invoke(QuorumFeatures.class, "defaultSupportedFeatureMap", unstable);  // 4.0+
        } else if (method(QuorumFeatures.class, "defaultFeatureMap", 1) != null) {
            features = invoke(QuorumFeatures.class, "defaultFeatureMap", unstable);  // 3.7-3.9
        } else {
            features = invoke(QuorumFeatures.class, "defaultFeatureMap");  // 3.6
        }
        for (java.lang.reflect.Constructor<?> c : QuorumFeatures.class.getDeclaredConstructors()) {
            c.setAccessible(true);
            try {
                if (c.getParameterCount() == 3) {  // 3.7+: (nodeId, features, quorumNodeIds)
                    return (QuorumFeatures) c.newInstance(3000, features, List.of(3000));
                }
                if (c.getParameterCount() == 4) {  // 3.6: (nodeId, apiVersions, features, ids)
                    return (QuorumFeatures) c.newInstance(3000,
                        new org.apache.kafka.clients.ApiVersions(), features, List.of(3000));
                }
            } catch (ReflectiveOperationException e) {
                throw new ReflectionFailure(e);
            }
        }
        throw new IllegalStateException("no QuorumFeatures constructor this driver knows");
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
    final class ExistenceChecker implements Consumer<ConfigResource> {
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
                    if (!clusterControl.brokerRegistrations().containsKey(id)) {
                        throw new BrokerIdNotRegisteredException("No node with id " + id + " found.");
                    }
                    return;
                case TOPIC:
                    if (replicationControl.getTopicId(resource.name()) == null) {
                        throw new UnknownTopicOrPartitionException("The topic '" + resource.name()
                            + "' does not exist.");
                    }
                    return;
                default:
                    return;
            }
        }
    }

    static final String IGNORES_UNCLEAN_CONFIG = "this build's controller ignores "
        + "unclean.leader.election.enable (ConfigurationControlManager."
        + "uncleanLeaderElectionEnabledForTopic is always false before 3.9): only electLeaders "
        + "type unclean elects an out-of-sync leader";
    boolean uncleanConfigHonoured = true;

    /** Whether this build's controller reads unclean.leader.election.enable at all: asked
     * of a scratch ConfigurationControlManager whose static config turns it on. */
    boolean probeUncleanConfig() {
        ConfigurationControlManager probe = new ConfigurationControlManager.Builder()
            .setLogContext(logContext)
            .setSnapshotRegistry(new SnapshotRegistry(logContext))
            .setKafkaConfigSchema(configSchema())
            .setStaticConfig(Map.of("unclean.leader.election.enable", "true"))
            .build();
        return probe.uncleanLeaderElectionEnabledForTopic("probe");
    }

    boolean elrEnabled() {
        if (method(FeatureControlManager.class, "isElrFeatureEnabled", 0) != null) {
            return (Boolean) invoke(featureControl, "isElrFeatureEnabled");  // 4.0+
        }
        if (method(ReplicationControlManager.class, "isElrEnabled", 0) != null) {
            return (Boolean) invoke(replicationControl, "isElrEnabled");  // 3.7-3.9
        }
        return false;
    }

    ObjectNode unsupportedEvents() {
        ObjectNode out = JSON.createObjectNode();
        if (method(ReplicationControlManager.class, "maybeElectUncleanLeaders", 0) == null) {
            out.put("tick:electUnclean", "this build's controller has no periodic unclean "
                + "election (ReplicationControlManager.maybeElectUncleanLeaders arrived in 3.9)");
        }
        return out;
    }

    // =====================================================================================
    // Events
    // =====================================================================================

    ObjectNode answer(byte[] line, int length, long seq) {
        recordsOut = JSON.createArrayNode();
        touched.clear();
        removedOut.clear();
        ObjectNode answer = JSON.createObjectNode();
        answer.put("seq", seq);
        List<String> notes = new ArrayList<>();
        try {
            JsonNode event = parse(line, length);
            String op = event.path("op").asText("");
            answer.put("op", op);
            ObjectNode result = dispatch(op, event, notes);
            answer.put("ok", true);
            if (result != null) {
                answer.setAll(result);
            }
        } catch (Unsupported u) {
            answer.remove("ok");
            answer.put("unsupported", u.getMessage());
        } catch (ProtocolError p) {
            answer.put("ok", false);
            answer.put("protocolError", p.getMessage());
        } catch (ReplayFailure f) {
            answer.put("ok", false);
            answer.put("fatal", describe(f.getCause()));
            f.getCause().printStackTrace();
        } catch (Refused r) {
            answer.put("ok", false);
            answer.put("error", r.error.name() + ": " + r.getMessage());
            answer.put("errorName", r.error.name());
        } catch (Throwable t) {
            Throwable cause = unwrap(t);
            ApiError error = ApiError.fromThrowable(cause);
            answer.put("ok", false);
            answer.put("error", error.error().name() + ": " + error.messageWithFallback());
            answer.put("errorName", error.error().name());
            if (!(cause instanceof ApiException)) {
                answer.put("exception", describe(cause));  // not a refusal: a bug here or there
                cause.printStackTrace();
            }
        }
        return withState(answer, notes, reportChanged);
    }

    ObjectNode dispatch(String op, JsonNode e, List<String> notes) {
        switch (op) {
            case "register":
                return register(requireInt(e, "broker"), e.path("clean").asBoolean(true), notes);
            case "unfence":
                return heartbeat(requireInt(e, "broker"), false, false, true);
            case "heartbeat":
                return heartbeat(requireInt(e, "broker"), e.path("wantFence").asBoolean(false),
                    e.path("wantShutDown").asBoolean(false), e.path("caughtUp").asBoolean(true));
            case "fence":
                return fence(requireInt(e, "broker"));
            case "controlledShutdown":
                return controlledShutdown(requireInt(e, "broker"), e.path("maxRounds").asInt(5));
            case "unregister":
                return unregister(requireInt(e, "broker"));
            case "createTopic":
                return createTopic(e);
            case "createPartitions":
                return createPartitions(e);
            case "deleteTopic":
                return deleteTopic(e);
            case "updateFeature":
                return updateFeature(e);
            case "alterPartition":
                return alterPartition(e, null);
            case "completeReassignment":
                return completeReassignment(e);
            case "reassign":
                return reassign(e, false);
            case "cancelReassignment":
                return reassign(e, true);
            case "electLeaders":
                return electLeaders(e);
            case "alterConfig":
                if (!uncleanConfigHonoured && e.path("configs").has("unclean.leader.election.enable")) {
                    notes.add(IGNORES_UNCLEAN_CONFIG);
                }
                return alterConfig(e);
            case "tick":
                return tick(e);
            case "state":
                return null;  // the answer carries the state
            default:
                throw new ProtocolError("unknown op '" + op + "'; known: register, unfence, heartbeat, "
                    + "fence, controlledShutdown, unregister, createTopic, createPartitions, deleteTopic, "
                    + "updateFeature, alterPartition, "
                    + "completeReassignment, reassign, cancelReassignment, electLeaders, alterConfig, "
                    + "tick, state");
        }
    }

    // ---- brokers ----

    ObjectNode register(int id, boolean clean, List<String> notes) {
        BrokerRegistration existing = clusterControl.brokerRegistrations().get(id);
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
            .setBrokerId(id)
            .setClusterId(CLUSTER_ID)
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
        FinalizedControllerFeatures finalized = featureControl.finalizedFeatures(Long.MAX_VALUE);
        for (Map.Entry<String, Short> f : finalized.featureMap().entrySet()) {
            if (f.getKey().equals(ELR_FEATURE)) {
                continue;
            }
            features.add(new BrokerRegistrationRequestData.Feature().setName(f.getKey())
                .setMinSupportedVersion((short) Math.min(f.getValue(), 1)).setMaxSupportedVersion(f.getValue()));
        }
        short[] elrRange = supportedRange(ELR_FEATURE);
        if (elrRange != null) {
            // 4.0+: a broker of this build supports every level of eligible.leader.replicas.version
            // its controller does (BrokerFeatures: 0 up to the latest), finalized or not, so the
            // level can be raised and lowered live (FeatureControlManager.reasonNotSupported
            // asks every registered broker).
            features.add(new BrokerRegistrationRequestData.Feature().setName(ELR_FEATURE)
                .setMinSupportedVersion(elrRange[0]).setMaxSupportedVersion(elrRange[1]));
        }
        request.setFeatures(features);
        if (method(BrokerRegistrationRequestData.class, "setLogDirs", 1) != null) {
            Uuid dir = logDirs.computeIfAbsent(id, k -> Uuid.randomUuid());
            invoke(request, "setLogDirs", List.of(dir));
        }
        long previousEpoch = clean && existing != null ? existing.epoch() : -1L;
        boolean canTell = method(BrokerRegistrationRequestData.class, "setPreviousBrokerEpoch", 1) != null;
        if (canTell) {
            invoke(request, "setPreviousBrokerEpoch", previousEpoch);
        } else if (notes != null && !clean) {
            notes.add("this build's BrokerRegistrationRequest has no PreviousBrokerEpoch: its "
                + "controller cannot tell an unclean shutdown from a clean one");
        }
        if (notes != null && clean && canTell
            && method(ClusterControlManager.class, "registerBroker", -1).getParameterCount() == 3
            && method(ReplicationControlManager.class, "handleBrokerUncleanShutdown", 2) != null) {
            notes.add("this build's controller does not read PreviousBrokerEpoch: it handles "
                + "every new incarnation as an unclean shutdown");
        }
        if (notes != null && !clean
            && method(ReplicationControlManager.class, "handleBrokerUncleanShutdown", 2) == null
            && method(ReplicationControlManager.class, "handleBrokerShutdown", 3) == null) {
            notes.add("this build's controller does nothing about an unclean shutdown "
                + "(ReplicationControlManager.handleBrokerUncleanShutdown arrived in 3.8)");
        }
        short apiVersion = ApiKeys.BROKER_REGISTRATION.latestVersion();
        Method m = method(ClusterControlManager.class, "registerBroker", -1);
        Object[] args;
        Class<?>[] types = m.getParameterTypes();
        if (types.length == 3) {
            args = new Object[] {request, nextOffset, finalized};  // 3.6, 3.9
        } else if (types[3] == short.class) {
            args = new Object[] {request, nextOffset, finalized, apiVersion};  // 3.7-3.8
        } else {
            args = new Object[] {request, nextOffset, finalized, apiVersion >= 3};  // 4.0+
        }
        ControllerResult<?> result = (ControllerResult<?>) invokeMethod(m, clusterControl, args);
        replayAll(result.records());
        alive.add(id);
        ObjectNode out = JSON.createObjectNode();
        out.put("brokerEpoch", clusterControl.brokerRegistrations().get(id).epoch());
        out.put("previousBrokerEpoch", previousEpoch);
        return out;
    }

    ObjectNode heartbeat(int id, boolean wantFence, boolean wantShutDown, boolean caughtUp) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
        if (registration == null) {
            throw new BrokerIdNotRegisteredException("Broker " + id + " is not registered");
        }
        long epoch = registration.epoch();
        trackHeartbeat(id, epoch);  // 4.0+: QuorumController does this first, outside its queue
        OptionalLong registerOffset = clusterControl.registerBrokerRecordOffset(id);
        if (!registerOffset.isPresent()) {
            throw new org.apache.kafka.common.errors.StaleBrokerEpochException(
                "Receive a heartbeat from broker " + id + " before registration");
        }
        long offset = caughtUp ? nextOffset - 1 : Math.max(-1L, registerOffset.getAsLong() - 1);
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData()
            .setBrokerId(id).setBrokerEpoch(epoch).setCurrentMetadataOffset(offset)
            .setWantFence(wantFence).setWantShutDown(wantShutDown);
        ControllerResult<BrokerHeartbeatReply> result =
            replicationControl.processBrokerHeartbeat(request, registerOffset.getAsLong());
        replayAll(result.records());
        BrokerHeartbeatReply reply = result.response();
        if (reply.inControlledShutdown()) {
            // QuorumController: processBatchEndOffset of the heartbeat's batch.
            clusterControl.heartbeatManager().maybeUpdateControlledShutdownOffset(id, nextOffset - 1);
        }
        if (reply.shouldShutDown()) {
            alive.remove(id);
        } else {
            alive.add(id);
        }
        ObjectNode out = JSON.createObjectNode();
        ObjectNode hb = out.putObject("heartbeat");
        hb.put("isCaughtUp", reply.isCaughtUp());
        hb.put("isFenced", reply.isFenced());
        hb.put("inControlledShutdown", reply.inControlledShutdown());
        hb.put("shouldShutDown", reply.shouldShutDown());
        return out;
    }

    void trackHeartbeat(int id, long epoch) {
        if (method(ClusterControlManager.class, "trackBrokerHeartbeat", 2) != null) {
            invoke(clusterControl, "trackBrokerHeartbeat", id, epoch);
        }
    }

    /** The other running brokers heartbeat as usual: their sessions stay valid and their
     * metadata offset is the log end, without any change of state asked. */
    void keepAlive(int except) {
        BrokerHeartbeatManager hbm = clusterControl.heartbeatManager();
        Map<Integer, Boolean> fenced = new HashMap<>();
        for (BrokerHeartbeatManager.BrokerHeartbeatState s : hbm.brokers()) {
            fenced.put(s.id(), s.fenced());
        }
        for (int id : alive) {
            BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
            if (id == except || registration == null || !fenced.containsKey(id)) {
                continue;
            }
            trackHeartbeat(id, registration.epoch());
            hbm.touch(id, fenced.get(id), nextOffset - 1);
        }
    }

    /** The broker stops heartbeating (killed, cut off): its session expires and the
     * controller's stale-broker task fences it, the other brokers heartbeating meanwhile. */
    ObjectNode fence(int id) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
        if (registration == null) {
            throw new BrokerIdNotRegisteredException("Broker " + id + " is not registered");
        }
        if (alive.contains(id)) {
            trackHeartbeat(id, registration.epoch());  // its last heartbeat: now
        }
        alive.remove(id);
        time.sleep(TimeUnit.NANOSECONDS.toMillis(sessionTimeoutNs) + 1);
        keepAlive(id);
        int rounds = runStaleBrokerTask();
        ObjectNode out = JSON.createObjectNode();
        out.put("staleBrokerTaskRuns", rounds);
        return out;
    }

    /** maybeFenceOneStaleBroker until it finds no stale broker (bounded). */
    int runStaleBrokerTask() {
        int limit = 2 * clusterControl.brokerRegistrations().size() + 4;
        for (int i = 1; i <= limit; i++) {
            ControllerResult<?> result = replicationControl.maybeFenceOneStaleBroker();
            replayAll(result.records());
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
        ControllerResult<Void> result = replicationControl.unregisterBroker(id);
        replayAll(result.records());
        alive.remove(id);
        return null;
    }

    // ---- topics and partitions ----

    ObjectNode createTopic(JsonNode e) {
        String name = requireText(e, "topic");
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().setName(name);
        if (e.has("assignment")) {
            topic.setNumPartitions(-1).setReplicationFactor((short) -1);
            int index = 0;
            for (JsonNode replicas : e.get("assignment")) {
                topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment()
                    .setPartitionIndex(index++).setBrokerIds(intList(replicas)));
            }
        } else {
            topic.setNumPartitions(e.path("partitions").asInt(1))
                .setReplicationFactor((short) e.path("replicationFactor").asInt(3));
        }
        Collection<Object> configs = (Collection<Object>) invoke(topic, "configs");
        Class<?> configClass = classOrNull(
            "org.apache.kafka.common.message.CreateTopicsRequestData$CreatableTopicConfig");
        if (configClass == null) {  // 3.6-3.8 spell it Createable
            configClass = classOrNull("org.apache.kafka.common.message.CreateTopicsRequestData$CreateableTopicConfig");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = e.path("configs").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            Object config = newInstance(configClass);
            invoke(config, "setName", c.getKey());
            invoke(config, "setValue", c.getValue().isNull() ? null : c.getValue().asText());
            configs.add(config);
        }
        request.topics().add(topic);
        ControllerRequestContext context = context(ApiKeys.CREATE_TOPICS);
        Method m = method(ReplicationControlManager.class, "createTopics", -1);
        Object[] args = m.getParameterCount() == 3
            ? new Object[] {context, request, Set.of(name)}
            : new Object[] {context, request, Set.of(name), false};  // 4.3+: forwarded
        @SuppressWarnings("unchecked")
        ControllerResult<CreateTopicsResponseData> result =
            (ControllerResult<CreateTopicsResponseData>) invokeMethod(m, replicationControl, args);
        CreateTopicsResponseData.CreatableTopicResult r = result.response().topics().find(name);
        replayAll(result.records());
        refuseIf(r.errorCode(), r.errorMessage());
        ObjectNode out = JSON.createObjectNode();
        Uuid id = topicIds.get(name);
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
        Method m = method(ReplicationControlManager.class, "createPartitions", 2);
        @SuppressWarnings("unchecked")
        ControllerResult<List<CreatePartitionsTopicResult>> result =
            (ControllerResult<List<CreatePartitionsTopicResult>>) invokeMethod(m, replicationControl,
                context(ApiKeys.CREATE_PARTITIONS), new ArrayList<>(List.of(topic)));
        replayAll(result.records());
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
        Uuid id = topicId(name);
        ControllerResult<Map<Uuid, ApiError>> result =
            replicationControl.deleteTopics(context(ApiKeys.DELETE_TOPICS), List.of(id));
        replayAll(result.records());
        ApiError error = result.response().get(id);
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        ObjectNode out = JSON.createObjectNode();
        out.put("topicId", id.toString());
        return out;
    }

    static final String ELR_FEATURE = "eligible.leader.replicas.version";

    /** UpdateFeatures of one feature, as QuorumController.updateFeatures calls the build:
     * 4.0+ ConfigurationControlManager.updateFeatures (FeatureControlManager's, plus
     * maybeGenerateElrSafetyRecords when the ELR level goes above 0; 4.1+ with the claimed
     * epoch), 3.7-3.9 FeatureControlManager.updateFeatures, 3.6 the same with the brokers'
     * supported versions. upgradeType: "upgrade", "safeDowngrade", "unsafeDowngrade"
     * (default: upgrade to a level at or above the current one, else safe downgrade, as
     * kafka-features.sh upgrade / downgrade send). A refusal is the answer. */
    ObjectNode updateFeature(JsonNode e) {
        String name = requireText(e, "name");
        short level = (short) requireInt(e, "level");
        Short current = featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap().get(name);
        int now = current == null ? 0 : current;
        String type = e.path("upgradeType").asText(level >= now ? "upgrade" : "safeDowngrade");
        org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType upgradeType;
        switch (type) {
            case "upgrade":
                upgradeType = org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.UPGRADE;
                break;
            case "safeDowngrade":
                upgradeType = org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
                break;
            case "unsafeDowngrade":
                upgradeType = org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.UNSAFE_DOWNGRADE;
                break;
            default:
                throw new ProtocolError("upgradeType must be upgrade, safeDowngrade or unsafeDowngrade, not "
                    + type);
        }
        Map<String, Short> updates = new HashMap<>();
        updates.put(name, level);
        Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types = new HashMap<>();
        types.put(name, upgradeType);
        ControllerResult<?> result;
        Method config4 = method(ConfigurationControlManager.class, "updateFeatures", 4);
        Method config3 = method(ConfigurationControlManager.class, "updateFeatures", 3);
        Method feature3 = method(FeatureControlManager.class, "updateFeatures", 3);
        if (config4 != null) {  // 4.1+: (updates, types, validateOnly, curClaimEpoch)
            result = (ControllerResult<?>) invokeMethod(config4, configurationControl, updates, types, false, 1);
        } else if (config3 != null) {  // 4.0
            result = (ControllerResult<?>) invokeMethod(config3, configurationControl, updates, types, false);
        } else if (feature3 != null) {  // 3.7-3.9
            result = (ControllerResult<?>) invokeMethod(feature3, featureControl, updates, types, false);
        } else {  // 3.6: (updates, types, brokerSupportedVersions, validateOnly)
            result = (ControllerResult<?>) invoke(featureControl, "updateFeatures", updates, types,
                invoke(clusterControl, "brokerSupportedVersions"), false);
        }
        Object response = result.response();
        ApiError error = response instanceof ApiError ? (ApiError) response
            : (ApiError) ((Map<?, ?>) response).get(name);  // 3.x: per feature
        replayAll(result.records());
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        ObjectNode out = JSON.createObjectNode();
        Short after = featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap().get(name);
        out.put("level", after == null ? 0 : after);
        out.put("elr", elrEnabled());
        return out;
    }

    /** The levels of a feature this build's controller supports, [min, max], or null. */
    short[] supportedRange(String feature) {
        Map<?, ?> local = localSupportedFeatures();
        Object range = local == null ? null : local.get(feature);
        if (range == null) {
            return null;
        }
        return new short[] {(Short) invoke(range, "min"), (Short) invoke(range, "max")};
    }

    Map<?, ?> localSupportedFeatures() {
        Field f = field(QuorumFeatures.class, "localSupportedFeatures");
        return f == null ? null : (Map<?, ?>) get(f, quorumFeatures);
    }

    /** {feature: [min, max]} this build's controller supports (QuorumFeatures). */
    ObjectNode supportedFeatures() {
        ObjectNode out = JSON.createObjectNode();
        Map<?, ?> local = localSupportedFeatures();
        if (local != null) {
            TreeSet<String> names = new TreeSet<>();
            for (Object name : local.keySet()) {
                names.add(String.valueOf(name));
            }
            for (String name : names) {
                short[] range = supportedRange(name);
                out.set(name, ints(new int[] {range[0], range[1]}));
            }
        }
        return out;
    }

    Uuid topicId(String name) {
        Uuid id = topicIds.get(name);
        if (id == null) {
            throw new UnknownTopicOrPartitionException("The topic '" + name + "' does not exist.");
        }
        return id;
    }

    PartitionRegistration partition(String topic, int partition) {
        PartitionRegistration reg = replicationControl.getPartition(topicId(topic), partition);
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
        PartitionRegistration reg = partition(topic, index);
        int leader = e.path("leader").asInt(reg.leader);
        List<Integer> isr = isrOverride != null ? isrOverride : intList(require(e, "isr"));
        List<AlterPartitionRequestData.BrokerState> states = new ArrayList<>();
        JsonNode epochs = e.path("isrBrokerEpochs");
        for (int i = 0; i < isr.size(); i++) {
            int b = isr.get(i);
            long brokerEpoch = epochs.has(i) ? epochs.get(i).asLong() : currentEpoch(b);
            states.add(new AlterPartitionRequestData.BrokerState().setBrokerId(b).setBrokerEpoch(brokerEpoch));
        }
        AlterPartitionRequestData.PartitionData data = new AlterPartitionRequestData.PartitionData()
            .setPartitionIndex(index)
            .setLeaderEpoch(e.path("leaderEpoch").asInt(reg.leaderEpoch))
            .setPartitionEpoch(e.path("partitionEpoch").asInt(reg.partitionEpoch))
            .setLeaderRecoveryState((byte) e.path("leaderRecoveryState").asInt(0))
            .setNewIsrWithEpochs(states);
        AlterPartitionRequestData request = new AlterPartitionRequestData()
            .setBrokerId(leader)
            .setBrokerEpoch(e.path("brokerEpoch").asLong(currentEpoch(leader)))
            .setTopics(new ArrayList<>(List.of(new AlterPartitionRequestData.TopicData()
                .setTopicId(topicId(topic))
                .setPartitions(new ArrayList<>(List.of(data))))));
        ControllerResult<AlterPartitionResponseData> result =
            replicationControl.alterPartition(context(ApiKeys.ALTER_PARTITION), request);
        replayAll(result.records());
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

    long currentEpoch(int broker) {
        BrokerRegistration r = clusterControl.brokerRegistrations().get(broker);
        return r == null ? -1L : r.epoch();
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
        topicId(topic);
        AlterPartitionReassignmentsRequestData.ReassignablePartition part =
            new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(index)
                .setReplicas(cancel ? null : intList(require(e, "replicas")));
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData()
            .setTopics(new ArrayList<>(List.of(new AlterPartitionReassignmentsRequestData.ReassignableTopic()
                .setName(topic).setPartitions(new ArrayList<>(List.of(part))))));
        ControllerResult<AlterPartitionReassignmentsResponseData> result =
            replicationControl.alterPartitionReassignments(request);
        replayAll(result.records());
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
        String topic = requireText(e, "topic");
        topicId(topic);
        ElectLeadersRequestData.TopicPartitionsCollection partitions =
            new ElectLeadersRequestData.TopicPartitionsCollection();
        List<Integer> indexes = e.has("partitions") ? intList(e.get("partitions"))
            : List.of(e.path("partition").asInt(0));
        partitions.add(new ElectLeadersRequestData.TopicPartitions().setTopic(topic)
            .setPartitions(new ArrayList<>(indexes)));
        ElectLeadersRequestData request = new ElectLeadersRequestData()
            .setElectionType(electionType).setTopicPartitions(partitions);
        ControllerResult<ElectLeadersResponseData> result = replicationControl.electLeaders(request);
        replayAll(result.records());
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

    /** incrementalAlterConfigs (SET, or DELETE for a null value) on a topic, or on the
     * cluster default (no topic) or a broker ("broker": id). */
    ObjectNode alterConfig(JsonNode e) {
        ConfigResource resource;
        if (e.hasNonNull("topic")) {
            resource = new ConfigResource(ConfigResource.Type.TOPIC, e.get("topic").asText());
        } else if (e.hasNonNull("broker")) {
            resource = new ConfigResource(ConfigResource.Type.BROKER, e.get("broker").asText());
        } else {
            resource = new ConfigResource(ConfigResource.Type.BROKER, "");
        }
        Map<String, Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>> changes =
            new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = require(e, "configs").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            boolean delete = c.getValue().isNull();
            changes.put(c.getKey(), new AbstractMap.SimpleImmutableEntry<>(
                delete ? org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE
                    : org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET,
                delete ? null : c.getValue().asText()));
        }
        Map<ConfigResource, Map<String, Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>>
            request = new HashMap<>();
        request.put(resource, changes);
        Method m = method(ConfigurationControlManager.class, "incrementalAlterConfigs", -1);
        Object[] args = m.getParameterCount() == 2
            ? new Object[] {request, false}
            : new Object[] {request, false, false};  // 4.3+: forwarded
        @SuppressWarnings("unchecked")
        ControllerResult<Map<ConfigResource, ApiError>> result =
            (ControllerResult<Map<ConfigResource, ApiError>>) invokeMethod(m, configurationControl, args);
        replayAll(result.records());
        ApiError error = result.response().get(resource);
        if (error != null && error.isFailure()) {
            throw new Refused(error.error(), error.messageWithFallback());
        }
        return null;
    }

    /** One of the controller's periodic tasks, now. */
    ObjectNode tick(JsonNode e) {
        String task = requireText(e, "task");
        ControllerResult<?> result;
        switch (task) {
            case "electPreferred":
                result = replicationControl.maybeBalancePartitionLeaders();
                break;
            case "electUnclean":
                if (method(ReplicationControlManager.class, "maybeElectUncleanLeaders", 0) == null) {
                    throw new Unsupported(unsupportedEvents().get("tick:electUnclean").asText());
                }
                result = (ControllerResult<?>) invoke(replicationControl, "maybeElectUncleanLeaders");
                break;
            case "fenceStale":
                ObjectNode out = JSON.createObjectNode();
                out.put("staleBrokerTaskRuns", runStaleBrokerTask());
                return out;
            default:
                throw new ProtocolError("tick task must be electPreferred, electUnclean or fenceStale, not "
                    + task);
        }
        replayAll(result.records());
        ObjectNode out = JSON.createObjectNode();
        out.set("response", JSON.valueToTree(result.response()));
        return out;
    }

    void refuseIf(short code, String message) {
        if (code != Errors.NONE.code()) {
            Errors error = Errors.forCode(code);
            throw new Refused(error, message == null || message.isEmpty() ? error.message() : message);
        }
    }

    static ControllerRequestContext context(ApiKeys key) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion(key.latestVersion()), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    // =====================================================================================
    // Replay (as QuorumController.replay) and what the answer reports
    // =====================================================================================

    static final class ReplayFailure extends RuntimeException {
        ReplayFailure(Throwable cause) {
            super(cause);
        }
    }

    void replayAll(List<ApiMessageAndVersion> records) {
        for (ApiMessageAndVersion record : records) {
            long offset = nextOffset++;
            try {
                replay(record.message(), offset);
            } catch (Throwable t) {
                throw new ReplayFailure(unwrap(t));
            }
            recordsOut.add(summary(record));
        }
    }

    void replay(ApiMessage message, long offset) {
        switch (message.getClass().getSimpleName()) {
            case "RegisterBrokerRecord":
                clusterControl.replay((RegisterBrokerRecord) message, offset);
                break;
            // The broker records replay as they are: ClusterControlManager has one
            // replay overload per record type (looked up once, then cached).
            case "UnregisterBrokerRecord":
            case "FenceBrokerRecord":
            case "UnfenceBrokerRecord":
            case "BrokerRegistrationChangeRecord":
                invoke(clusterControl, "replay", message);
                break;
            case "TopicRecord": {
                TopicRecord r = (TopicRecord) message;
                replicationControl.replay(r);
                topicIds.put(r.name(), r.topicId());
                topicNames.put(r.topicId(), r.name());
                partitionCounts.put(r.topicId(), 0);
                break;
            }
            case "PartitionRecord": {
                PartitionRecord r = (PartitionRecord) message;
                replicationControl.replay(r);
                partitionCounts.merge(r.topicId(), r.partitionId() + 1, Math::max);
                touched.add(r.topicId() + ":" + r.partitionId());
                break;
            }
            case "PartitionChangeRecord": {
                PartitionChangeRecord r = (PartitionChangeRecord) message;
                replicationControl.replay(r);
                touched.add(r.topicId() + ":" + r.partitionId());
                break;
            }
            case "RemoveTopicRecord": {
                // ReplicationControlManager.replay(RemoveTopicRecord): the topic, its
                // partitions and (configurationControl.deleteTopicConfigs) its configs.
                RemoveTopicRecord r = (RemoveTopicRecord) message;
                replicationControl.replay(r);
                String name = topicNames.remove(r.topicId());
                if (name != null) {
                    topicIds.remove(name);
                }
                Integer count = partitionCounts.remove(r.topicId());
                for (int p = 0; name != null && count != null && p < count; p++) {
                    removedOut.add(name + "-" + p);
                }
                break;
            }
            case "ClearElrRecord": {  // 4.0+
                invoke(replicationControl, "replay", message);
                String topic = (String) invoke(message, "topicName");
                for (Map.Entry<String, Uuid> t : topicIds.entrySet()) {
                    if (topic == null || topic.isEmpty() || topic.equals(t.getKey())) {
                        int count = partitionCounts.getOrDefault(t.getValue(), 0);
                        for (int p = 0; p < count; p++) {
                            touched.add(t.getValue() + ":" + p);
                        }
                    }
                }
                break;
            }
            case "ConfigRecord":
                configurationControl.replay((ConfigRecord) message);
                break;
            case "FeatureLevelRecord":
                featureControl.replay((FeatureLevelRecord) message);
                break;
            case "NoOpRecord":
            case "BeginTransactionRecord":
            case "EndTransactionRecord":
            case "AbortTransactionRecord":
                break;
            default:
                throw new IllegalStateException("the driver does not replay "
                    + message.getClass().getSimpleName());
        }
    }

    static final Map<Class<?>, Method> CONVERTERS = new HashMap<>();
    static final Set<String> DROPPED = Set.of("directories", "endPoints", "features", "rack",
        "isMigratingZkBroker", "logDirs", "incarnationId");

    /** The record as the build's own JSON converter writes it, in short: the type, the
     * fields that bear on partitions and brokers, "unchanged" markers left out. */
    ObjectNode summary(ApiMessageAndVersion record) {
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
            String name = topicNames.get(Uuid.fromString(topicId.asText()));
            if (name != null) {
                out.put("topic", name);
            }
        }
        return out;
    }

    ObjectNode partitions(boolean changedOnly) {
        ObjectNode out = JSON.createObjectNode();
        for (Map.Entry<String, Uuid> t : topicIds.entrySet()) {
            int count = partitionCounts.getOrDefault(t.getValue(), 0);
            for (int p = 0; p < count; p++) {
                if (changedOnly && !touched.contains(t.getValue() + ":" + p)) {
                    continue;
                }
                PartitionRegistration reg = replicationControl.getPartition(t.getValue(), p);
                if (reg != null) {
                    out.set(t.getKey() + "-" + p, partitionState(reg));
                }
            }
        }
        return out;
    }

    ObjectNode partitionState(PartitionRegistration reg) {
        ObjectNode s = JSON.createObjectNode();
        s.put("leader", reg.leader);
        s.put("leaderEpoch", reg.leaderEpoch);
        s.put("partitionEpoch", reg.partitionEpoch);
        s.set("replicas", ints(reg.replicas));
        s.set("isr", ints(reg.isr));
        s.set("elr", ints(hasPartitionElr ? (int[]) get(elrField, reg) : new int[0]));
        s.set("lastKnownElr", ints(hasPartitionElr ? (int[]) get(lastKnownElrField, reg) : new int[0]));
        s.set("adding", ints(reg.addingReplicas));
        s.set("removing", ints(reg.removingReplicas));
        s.put("leaderRecoveryState", reg.leaderRecoveryState.name());
        return s;
    }

    ObjectNode brokers() {
        ObjectNode out = JSON.createObjectNode();
        for (BrokerRegistration r : new TreeMap<>(clusterControl.brokerRegistrations()).values()) {
            ObjectNode b = out.putObject(Integer.toString(r.id()));
            b.put("epoch", r.epoch());
            b.put("fenced", r.fenced());
            b.put("inControlledShutdown", r.inControlledShutdown());
            b.put("alive", alive.contains(r.id()));
        }
        return out;
    }

    // =====================================================================================
    // Coverage feedback: the JaCoCo agent's probe arrays of the classes asked for
    // =====================================================================================

    /** Per class asked for (simple names in this package): its probe array, which the
     * JaCoCo agent's instrumentation keeps in the synthetic static field $jacocoData (the
     * array the agent dumps), and what of it the harness has been told. */
    final Map<String, boolean[]> probeArrays = new TreeMap<>();
    final Map<String, boolean[]> probesTold = new TreeMap<>();

    /** {class: probe count} for each class asked for that runs instrumented (empty without
     * the agent). The array is the one the agent's runtime holds for the class (and dumps):
     * the instrumentation's own $jacocoInit hands it out and sets no probe. For a class
     * file of Java 11 or later it is the bootstrap method of a dynamic constant
     * (lookup, name, type); before, a no-argument method that also fills $jacocoData. */
    ObjectNode openProbes(JsonNode classes) {
        ObjectNode out = JSON.createObjectNode();
        for (JsonNode c : classes) {
            String simple = c.asText();
            Class<?> type = classOrNull("org.apache.kafka.controller." + simple);
            boolean[] probes = type == null ? null : jacocoProbes(type);
            if (probes == null) {
                continue;
            }
            probeArrays.put(simple, probes);
            probesTold.put(simple, new boolean[probes.length]);
            out.put(simple, probes.length);
        }
        return out;
    }

    static boolean[] jacocoProbes(Class<?> type) {
        for (Method m : type.getDeclaredMethods()) {
            if (!m.getName().equals("$jacocoInit") || m.getReturnType() != boolean[].class) {
                continue;
            }
            m.setAccessible(true);
            if (m.getParameterCount() == 0) {
                return (boolean[]) invokeMethod(m, null);
            }
            if (m.getParameterCount() == 3) {
                return (boolean[]) invokeMethod(m, null, java.lang.invoke.MethodHandles.lookup(),
                    "$jacocoData", Object.class);
            }
        }
        return null;
    }

    /** {class: [probe indexes set since the last answer]}, or null when none. */
    ObjectNode newProbes() {
        ObjectNode out = null;
        for (Map.Entry<String, boolean[]> e : probeArrays.entrySet()) {
            boolean[] now = e.getValue();
            boolean[] told = probesTold.get(e.getKey());
            ArrayNode fresh = null;
            for (int i = 0; i < now.length; i++) {
                if (now[i] && !told[i]) {
                    told[i] = true;
                    if (fresh == null) {
                        if (out == null) {
                            out = JSON.createObjectNode();
                        }
                        fresh = out.putArray(e.getKey());
                    }
                    fresh.add(i);
                }
            }
        }
        return out;
    }

    // =====================================================================================
    // Small helpers
    // =====================================================================================

    static JsonNode require(JsonNode e, String name) {
        JsonNode v = e.get(name);
        if (v == null || v.isNull()) {
            throw new ProtocolError("event " + e.path("op").asText("?") + " needs '" + name + "'");
        }
        return v;
    }

    static int requireInt(JsonNode e, String name) {
        JsonNode v = require(e, name);
        if (!v.canConvertToInt()) {
            throw new ProtocolError("'" + name + "' must be an integer, not " + v);
        }
        return v.asInt();
    }

    static String requireText(JsonNode e, String name) {
        JsonNode v = require(e, name);
        if (!v.isTextual()) {
            throw new ProtocolError("'" + name + "' must be a string, not " + v);
        }
        return v.asText();
    }

    static List<Integer> intList(JsonNode array) {
        if (!array.isArray()) {
            throw new ProtocolError("expected a list of broker ids, not " + array);
        }
        List<Integer> out = new ArrayList<>();
        for (JsonNode n : array) {
            if (!n.canConvertToInt()) {
                throw new ProtocolError("expected a broker id, not " + n);
            }
            out.add(n.asInt());
        }
        return out;
    }

    static List<Integer> intList(int[] values) {
        List<Integer> out = new ArrayList<>(values.length);
        for (int v : values) {
            out.add(v);
        }
        return out;
    }

    static ArrayNode ints(int[] values) {
        ArrayNode a = JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    static ArrayNode ints(List<Integer> values) {
        ArrayNode a = JSON.createArrayNode();
        for (int v : values) {
            a.add(v);
        }
        return a;
    }

    static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "...";
    }

    static String describe(Throwable t) {
        return t.getClass().getName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof InvocationTargetException || t instanceof ReflectionFailure)
            && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static final class ReflectionFailure extends RuntimeException {
        ReflectionFailure(Throwable cause) {
            super(cause);
        }
    }

    static Class<?> classOrNull(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static Field field(Class<?> type, String name) {
        try {
            Field f = type.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    static Object get(Field f, Object target) {
        try {
            return f.get(target);
        } catch (IllegalAccessException e) {
            throw new ReflectionFailure(e);
        }
    }

    static Object staticField(Class<?> type, String name) {
        try {
            return type.getField(name).get(null);
        } catch (NoSuchFieldException | IllegalAccessException e) {
            return null;
        }
    }

    static final Map<String, Method> METHODS = new HashMap<>();

    /** The method of that name (and arity; -1: any) declared by the class or a superclass. */
    static Method method(Class<?> type, String name, int arity) {
        String key = type.getName() + "#" + name + "/" + arity;
        if (METHODS.containsKey(key)) {
            return METHODS.get(key);
        }
        Method found = null;
        for (Class<?> c = type; c != null && found == null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && (arity < 0 || m.getParameterCount() == arity)
                    && !m.isBridge() && !m.isSynthetic()) {
                    found = m;
                    break;
                }
            }
        }
        if (found != null) {
            found.setAccessible(true);
        }
        METHODS.put(key, found);
        return found;
    }

    /** target.name(args) (target a Class: a static method): the method of that name whose
     * parameters take these arguments, declared by the class, a superclass or an interface. */
    static Object invoke(Object target, String name, Object... args) {
        Class<?> type = target instanceof Class ? (Class<?>) target : target.getClass();
        Method m = applicable(type, name, args);
        if (m == null) {
            throw new IllegalStateException("this build has no " + type.getName() + "." + name
                + " taking " + java.util.Arrays.toString(args));
        }
        return invokeMethod(m, target instanceof Class ? null : target, args);
    }

    static final Map<String, Method> APPLICABLE = new HashMap<>();

    static Method applicable(Class<?> type, String name, Object[] args) {
        StringBuilder key = new StringBuilder(type.getName()).append('#').append(name);
        for (Object a : args) {
            key.append(',').append(a == null ? "null" : a.getClass().getName());
        }
        String k = key.toString();
        if (APPLICABLE.containsKey(k)) {
            return APPLICABLE.get(k);
        }
        List<Class<?>> types = new ArrayList<>();
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            types.add(c);
        }
        types.addAll(List.of(type.getInterfaces()));
        Method found = null;
        search:
        for (Class<?> c : types) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == args.length
                    && !m.isBridge() && !m.isSynthetic() && accepts(m.getParameterTypes(), args)) {
                    found = m;
                    break search;
                }
            }
        }
        if (found != null) {
            found.setAccessible(true);
        }
        APPLICABLE.put(k, found);
        return found;
    }

    static final Map<Class<?>, Class<?>> BOXES = Map.of(boolean.class, Boolean.class,
        int.class, Integer.class, long.class, Long.class, short.class, Short.class,
        byte.class, Byte.class, double.class, Double.class, float.class, Float.class,
        char.class, Character.class);

    static boolean accepts(Class<?>[] params, Object[] args) {
        for (int i = 0; i < params.length; i++) {
            Class<?> p = params[i].isPrimitive() ? BOXES.get(params[i]) : params[i];
            if (args[i] == null ? params[i].isPrimitive() : !p.isInstance(args[i])) {
                return false;
            }
        }
        return true;
    }

    static Object invokeMethod(Method m, Object target, Object... args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            if (cause instanceof Error) {
                throw (Error) cause;
            }
            throw new ReflectionFailure(cause);
        } catch (IllegalAccessException e) {
            throw new ReflectionFailure(e);
        }
    }

    static Object newInstance(Class<?> type) {
        try {
            java.lang.reflect.Constructor<?> c = type.getDeclaredConstructor();
            c.setAccessible(true);
            return c.newInstance();
        } catch (ReflectiveOperationException e) {
            throw new ReflectionFailure(e);
        }
    }

    interface Handler {
        void handle(Object[] args);
    }

    /** An instance of a one-method callback interface this build declares. */
    static Object proxy(Class<?> iface, Handler handler) {
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (p, m, args) -> {
            switch (m.getName()) {
                case "hashCode":
                    return System.identityHashCode(p);
                case "equals":
                    return p == args[0];
                case "toString":
                    return "differential " + iface.getSimpleName();
                default:
                    handler.handle(args);
                    return null;
            }
        });
    }
}
