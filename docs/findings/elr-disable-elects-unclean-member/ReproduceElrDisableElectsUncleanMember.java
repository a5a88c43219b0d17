/*
 * A reproduction without any harness of KIP-966's ELR disable on a live cluster (KRaft
 * controller): after `kafka-features.sh downgrade --feature eligible.leader.replicas.version=0`
 * the ELR a leaderless partition holds stays in its registration, the controller no longer
 * removes a broker that restarts after an unclean shutdown from it, and PartitionChangeBuilder
 * still elects an ELR member while the ISR is empty. A broker that lost committed records in an
 * unclean shutdown is elected leader although unclean.leader.election.enable is false. KIP-966,
 * "Compatibility, Deprecation, and Migration Plan": after ELR is turned off "all the ELR related
 * fields will be removed on the next partition change. The controller will also ignore the ELR
 * fields."
 *
 * This program drives the build's own controller managers (FeatureControlManager,
 * ClusterControlManager, ConfigurationControlManager, ReplicationControlManager, built with
 * their Builders as QuorumController builds them) through what the cluster of the scenario
 * elr-disabled-live does, replays every record they return, and prints the partition after each
 * step. The feature is downgraded through ConfigurationControlManager.updateFeatures, the call
 * QuorumController.updateFeatures makes for an UpdateFeatures request (kafka-features.sh
 * downgrade: upgrade type SAFE_DOWNGRADE).
 *
 * Needs only the JDK and the jars of the Kafka build under test (a distribution's libs/):
 *
 *   javac -proc:none -cp 'KAFKA/libs/*' -d classes ReproduceElrDisableElectsUncleanMember.java
 *   java -cp "classes:KAFKA/libs/*" org.apache.kafka.controller.ReproduceElrDisableElectsUncleanMember [CASE]
 *
 * (package org.apache.kafka.controller: the managers' methods used here are package-private.)
 *
 * CASE (default "all": the case, then its control):
 *   disable          t on [1, 2, 3], min.insync.replicas=2, unclean.leader.election.enable=false,
 *                    ELR on; broker 1 cut off (fenced: ISR [2, 3]); broker 2 killed (ISR [3],
 *                    ELR [2]); broker 3 killed (ISR [], ELR [2, 3], LastKnownELR [3]); broker 1
 *                    back (unfenced: not in the ISR or the ELR); eligible.leader.replicas.version
 *                    downgraded to 0; broker 2 starts again after an unclean shutdown (it lost
 *                    its unflushed tail: committed records) and is unfenced; then broker 3 the
 *                    same. Reproduces when broker 2 is elected.
 *   disable-control  the same without the downgrade (ELR stays on): broker 2's unclean
 *                    registration removes it from the ELR, it is not elected.
 *
 * Exit status: 1 the case reproduces (broker 2 elected from the ELR left behind); 0 it does not;
 * 2 usage error, unexpected failure, or a control that fails; 3 UNSUPPORTED (no
 * eligible.leader.replicas.version feature on this build: 3.x has no ELR to turn off live), with
 * the reason.
 *
 * The managers' APIs moved between releases (registerBroker's arguments, updateFeatures' claim
 * epoch, createTopics' "forwarded" flag), so those parts are reached by reflection; one source
 * compiles against every build from 3.6 on.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
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

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

public final class ReproduceElrDisableElectsUncleanMember {
    static final int OK = 0;
    static final int BUG = 1;
    static final int USAGE = 2;
    static final int UNSUPPORTED = 3;

    static final String TOPIC = "t";
    static final String CLUSTER_ID = "elr-disable-repro";
    static final String ELR_FEATURE = "eligible.leader.replicas.version";
    static final List<String> CASES = List.of("disable");

    /** The case cannot be set up on this build: exit 3 with the reason. */
    static final class Unsupported extends RuntimeException {
        Unsupported(String reason) {
            super(reason);
        }
    }

    /** What one case (or control) ended with. */
    static final class Outcome {
        final boolean bug;
        final String verdict;

        Outcome(boolean bug, String verdict) {
            this.bug = bug;
            this.verdict = verdict;
        }
    }

    public static void main(String[] args) {
        // The managers log every replay at INFO; the steps printed here say what matters.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        String which = "all";
        for (String a : args) {
            if (a.startsWith("-")) {
                System.err.println("unknown option " + a + "; usage: [CASE]");
                System.exit(USAGE);
            } else {
                which = a;
            }
        }
        List<String> runs = new ArrayList<>();
        if (which.equals("all")) {
            runs.addAll(CASES);
            for (String c : CASES) {
                runs.add(c + "-control");
            }
        } else if (CASES.contains(which.replaceFirst("-control$", ""))) {
            runs.add(which);
        } else {
            System.err.println("unknown case " + which + "; cases: all, " + String.join(", ", CASES)
                + " (each also as CASE-control)");
            System.exit(USAGE);
        }
        System.exit(runAll(runs));
    }

    static int runAll(List<String> runs) {
        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        try {
            for (String run : runs) {
                boolean control = run.endsWith("-control");
                ReproduceElrDisableElectsUncleanMember repro = new ReproduceElrDisableElectsUncleanMember();
                if (outcomes.isEmpty()) {
                    System.out.println(repro.setupLine());
                }
                System.out.println();
                System.out.println("case " + run + ":");
                Outcome o = repro.run(control);
                System.out.println("  " + (o.bug ? "BUG: " : "ok: ") + o.verdict);
                outcomes.put(run, o);
            }
        } catch (Unsupported u) {
            System.out.println("UNSUPPORTED: " + u.getMessage());
            return UNSUPPORTED;
        } catch (Throwable t) {
            System.out.println("unexpected failure: " + t);
            t.printStackTrace(System.out);
            return USAGE;
        }
        System.out.println();
        boolean bug = false;
        boolean controlFailed = false;
        for (Map.Entry<String, Outcome> e : outcomes.entrySet()) {
            boolean control = e.getKey().endsWith("-control");
            System.out.printf("%-28s %s%n", e.getKey(), e.getValue().bug
                ? (control ? "FAILS (a control must not)" : "REPRODUCES") : "clean");
            bug |= !control && e.getValue().bug;
            controlFailed |= control && e.getValue().bug;
        }
        if (controlFailed) {
            return USAGE;
        }
        return bug ? BUG : OK;
    }

    // ---- the build's managers, built as QuorumController builds them ----
    final ManualTime time = new ManualTime();
    // Kafka 4.4 moved LogContext and AppInfoParser to org.apache.kafka.common.utils.internals.
    final Object logContext = newInstance(utilsClass("LogContext"), "[elr-disable] ");
    final SnapshotRegistry snapshotRegistry =
        (SnapshotRegistry) newInstance(SnapshotRegistry.class, logContext);
    final MetadataVersion metadataVersion;
    final short elrFeatureLevel;
    FeatureControlManager featureControl;
    ClusterControlManager clusterControl;
    ConfigurationControlManager configurationControl;
    ReplicationControlManager replicationControl;
    final long sessionTimeoutNs = TimeUnit.MILLISECONDS.toNanos(9000);
    long nextOffset = 1;
    final Set<Integer> alive = new TreeSet<>();
    final Map<Integer, Uuid> logDirs = new HashMap<>();
    Uuid topicId;

    ReproduceElrDisableElectsUncleanMember() {
        Class<?> feature = classOrNull("org.apache.kafka.server.common.EligibleLeaderReplicasVersion");
        if (feature == null) {
            throw new Unsupported("Kafka " + invoke(utilsClass("AppInfoParser"), "getVersion")
                + " has no feature " + ELR_FEATURE + " (org.apache.kafka.server.common."
                + "EligibleLeaderReplicasVersion arrived in 4.0): 3.7-3.9 run their ELR code only "
                + "with the controller config eligible.leader.replicas.enable on a metadata.version "
                + "that is not a production one, and 3.6 has no ELR; there is no ELR to turn off "
                + "on a live cluster with kafka-features.sh");
        }
        metadataVersion = latestProduction();
        elrFeatureLevel = elrOnLevel(feature);
    }

    String setupLine() {
        return "Kafka " + invoke(utilsClass("AppInfoParser"), "getVersion") + ": the build's own "
            + "controller managers on metadata.version " + metadataVersion.version() + ", "
            + ELR_FEATURE + "=" + elrFeatureLevel + " at format time (4.0: the preview, "
            + "`kafka-storage.sh format --feature " + ELR_FEATURE + "=1`; 4.1+: the default)";
    }

    /** The case, or its control, on fresh managers. */
    Outcome run(boolean control) {
        buildManagers();
        for (int b = 1; b <= 3; b++) {
            register(b, true);
            heartbeat(b, false);
        }
        createTopic();
        step("brokers 1, 2, 3 registered and unfenced; topic " + TOPIC + " on [1, 2, 3], "
            + "min.insync.replicas=2, unclean.leader.election.enable=false (a producer writes records with acks=all: "
            + "the controller does not see them)");
        fence(1);
        step("broker 1 cut off (isolate): its session expires and the controller fences it");
        fence(2);
        step("broker 2 killed (kill -9): fenced");
        fence(3);
        step("broker 3, the last ISR member, killed (kill -9): fenced");
        step("broker 2's disk loses its unflushed tail (committed records): nothing the "
            + "controller sees");
        heartbeat(1, false);
        step("broker 1 back (heal): it heartbeats again, caught up, and is unfenced");
        if (control) {
            step("(control: " + ELR_FEATURE + " left at " + elrFeatureLevel + ")");
        } else {
            downgradeElr();
        }
        PartitionRegistration before = partition();
        register(2, false);
        step("broker 2 starts again after its unclean shutdown and registers (no previous "
            + "broker epoch: unclean)");
        heartbeat(2, false);
        PartitionRegistration after2 = partition();
        step("broker 2 caught up: unfenced");
        boolean elected2 = after2.leader == 2;
        register(3, false);
        step("broker 3 starts again after its unclean shutdown and registers");
        heartbeat(3, false);
        PartitionRegistration after3 = partition();
        step("broker 3 caught up: unfenced");
        String state = "before broker 2's return: " + describe(before) + "; after broker 2's: "
            + describe(after2) + "; after broker 3's: " + describe(after3);
        if (elected2) {
            return new Outcome(true, "broker 2, back from an unclean shutdown in which it lost "
                + "committed records, was elected leader" + (control ? " with ELR on" : " from the "
                + "ELR the disable left behind") + ", with unclean.leader.election.enable=false: "
                + "acks=all records are lost (" + state + "). KIP-966 \"Compatibility, "
                + "Deprecation, and Migration Plan\": after ELR is turned off \"all the ELR related "
                + "fields will be removed on the next partition change. The controller will also "
                + "ignore the ELR fields.\"");
        }
        return new Outcome(false, "broker 2 was not elected (" + state + ")");
    }

    /** kafka-features.sh downgrade --feature eligible.leader.replicas.version=0, as
     * QuorumController.updateFeatures runs it: ConfigurationControlManager.updateFeatures. */
    void downgradeElr() {
        Map<String, Short> updates = Map.of(ELR_FEATURE, (short) 0);
        Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types =
            Map.of(ELR_FEATURE, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.SAFE_DOWNGRADE);
        Method m = method(ConfigurationControlManager.class, "updateFeatures", -1);
        if (m == null) {
            throw new Unsupported("this build has no ConfigurationControlManager.updateFeatures");
        }
        Object[] args = m.getParameterCount() == 3
            ? new Object[] {updates, types, false}  // 4.0
            : new Object[] {updates, types, false, 1};  // 4.1+: the controller's claimed epoch
        @SuppressWarnings("unchecked")
        ControllerResult<ApiError> result =
            (ControllerResult<ApiError>) invokeMethod(m, configurationControl, args);
        if (result.response().isFailure()) {
            throw new IllegalStateException("the downgrade was refused: "
                + result.response().messageWithFallback());
        }
        replayAll(result.records());
        step("kafka-features.sh downgrade --feature " + ELR_FEATURE + "=0: accepted, "
            + types(result.records()) + "; the controller's ELR switch (isElrFeatureEnabled) is now "
            + invoke(featureControl, "isElrFeatureEnabled"));
    }

    static String describe(PartitionRegistration p) {
        return "leader " + p.leader + ", isr " + Arrays.toString(p.isr) + ", elr "
            + ints(p, "elr") + ", lastKnownElr " + ints(p, "lastKnownElr");
    }

    /** An ELR field of the registration (read reflectively: 3.6 has none, and this source
     * compiles against it to say UNSUPPORTED). */
    static String ints(PartitionRegistration p, String name) {
        return Arrays.toString((int[]) fieldValue(p, name));
    }

    final List<ApiMessageAndVersion> written = new ArrayList<>();

    /** Prints the step with the partition as the build's objects hold it. */
    void step(String what) {
        StringBuilder line = new StringBuilder("  ").append(what);
        PartitionRegistration p = topicId == null ? null : replicationControl.getPartition(topicId, 0);
        if (p != null) {
            line.append("\n      ").append(TOPIC).append("-0: leader ").append(p.leader)
                .append(" leaderEpoch ").append(p.leaderEpoch).append(" partitionEpoch ")
                .append(p.partitionEpoch).append(" isr ").append(Arrays.toString(p.isr))
                .append(" elr ").append(ints(p, "elr"))
                .append(" lastKnownElr ").append(ints(p, "lastKnownElr"))
                .append(" leaderRecoveryState ").append(p.leaderRecoveryState);
        }
        line.append("\n      fenced brokers: ").append(fencedBrokers());
        System.out.println(line);
    }

    List<Integer> fencedBrokers() {
        Set<Integer> fenced = new TreeSet<>();
        for (BrokerRegistration r : clusterControl.brokerRegistrations().values()) {
            if (r.fenced()) {
                fenced.add(r.id());
            }
        }
        return new ArrayList<>(fenced);
    }

    PartitionRegistration partition() {
        return replicationControl.getPartition(topicId, 0);
    }

    // ---- the managers ----

    void buildManagers() {
        FeatureControlManager.Builder features = ((FeatureControlManager.Builder) invoke(
                new FeatureControlManager.Builder(), "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(quorumFeatures(false));
        // QuorumController's QuorumClusterFeatureSupportDescriber: what the registered brokers
        // and controllers support, read from ClusterControlManager (a downgrade is checked
        // against it).
        Class<?> describer = classOrNull("org.apache.kafka.controller.ClusterFeatureSupportDescriber");
        if (describer != null && method(FeatureControlManager.Builder.class, "setClusterFeatureSupportDescriber", 1) != null) {
            invoke(features, "setClusterFeatureSupportDescriber", Proxy.newProxyInstance(
                describer.getClassLoader(), new Class<?>[] {describer}, (p, m, a) -> {
                    switch (m.getName()) {
                        case "brokerSupported":
                            return invoke(clusterControl, "brokerSupportedFeatures");
                        case "controllerSupported":
                            return invoke(clusterControl, "controllerSupportedFeatures");
                        case "hashCode":
                            return System.identityHashCode(p);
                        case "equals":
                            return p == a[0];
                        default:
                            return "repro ClusterFeatureSupportDescriber";
                    }
                }));
        }
        featureControl = features.build();
        ClusterControlManager.Builder cluster = ((ClusterControlManager.Builder) invoke(
                new ClusterControlManager.Builder(), "setLogContext", logContext))
            .setClusterId(CLUSTER_ID)
            .setTime(time)
            .setSnapshotRegistry(snapshotRegistry)
            .setSessionTimeoutNs(sessionTimeoutNs)
            .setReplicaPlacer(new StripedReplicaPlacer(new Random(966)))
            .setFeatureControlManager(featureControl);
        // QuorumController's shutdown handler (4.0+: brokerId, isCleanShutdown, records).
        Class<?> shutdownHandler = classOrNull(
            "org.apache.kafka.controller.ClusterControlManager$BrokerShutdownHandler");
        invoke(cluster, "setBrokerShutdownHandler", proxy(shutdownHandler, a ->
            invoke(replicationControl, "handleBrokerShutdown", a[0], a[1], a[2])));
        clusterControl = cluster.build();
        Map<String, Object> staticConfig = new HashMap<>();
        staticConfig.put("min.insync.replicas", "1");
        ConfigurationControlManager.Builder config = ((ConfigurationControlManager.Builder) invoke(
                new ConfigurationControlManager.Builder(), "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setKafkaConfigSchema(configSchema())
            .setExistenceChecker(new ExistenceChecker())
            .setStaticConfig(staticConfig)
            .setNodeId(3000);
        invoke(config, "setFeatureControl", featureControl);
        configurationControl = config.build();
        ReplicationControlManager.Builder replication = ((ReplicationControlManager.Builder) invoke(
                new ReplicationControlManager.Builder(), "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
            .setConfigurationControl(configurationControl)
            .setClusterControl(clusterControl)
            .setCreateTopicPolicy(Optional.empty())
            .setFeatureControl(featureControl);
        replicationControl = replication.build();

        // The bootstrap records of a cluster formatted with ELR on.
        List<ApiMessageAndVersion> bootstrap = new ArrayList<>();
        bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(metadataVersion.featureLevel()), (short) 0));
        bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(ELR_FEATURE).setFeatureLevel(elrFeatureLevel), (short) 0));
        // As ActivationRecordsGenerator does when ELR is on at bootstrap.
        bootstrap.add(new ApiMessageAndVersion(new ConfigRecord()
            .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("")
            .setName("min.insync.replicas").setValue("1"), (short) 0));
        replayAll(bootstrap);
        clusterControl.activate();
    }

    // ---- operations, as QuorumController runs them: the result's records replayed ----

    void register(int id, boolean clean) {
        BrokerRegistration existing = clusterControl.brokerRegistrations().get(id);
        if (existing != null) {
            // A restart takes longer than the old incarnation's session: otherwise the
            // controller answers DUPLICATE_BROKER_REGISTRATION until it expires.
            time.sleep(TimeUnit.NANOSECONDS.toMillis(sessionTimeoutNs) + 1);
            keepAlive(id);
        }
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
            .setBrokerId(id).setClusterId(CLUSTER_ID).setIncarnationId(Uuid.randomUuid())
            .setRack(null).setIsMigratingZkBroker(false);
        BrokerRegistrationRequestData.ListenerCollection listeners =
            new BrokerRegistrationRequestData.ListenerCollection();
        listeners.add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT")
            .setHost("localhost").setPort(9092 + id).setSecurityProtocol(SecurityProtocol.PLAINTEXT.id));
        request.setListeners(listeners);
        // What a broker of this build supports: metadata.version up to the finalized one,
        // every other feature from level 0 (a broker can run with it off).
        BrokerRegistrationRequestData.FeatureCollection features =
            new BrokerRegistrationRequestData.FeatureCollection();
        FinalizedControllerFeatures finalized = featureControl.finalizedFeatures(Long.MAX_VALUE);
        for (Map.Entry<String, Short> f : finalized.featureMap().entrySet()) {
            short min = f.getKey().equals(MetadataVersion.FEATURE_NAME) ? (short) Math.min(f.getValue(), 1) : 0;
            features.add(new BrokerRegistrationRequestData.Feature().setName(f.getKey())
                .setMinSupportedVersion(min).setMaxSupportedVersion(f.getValue()));
        }
        if (!finalized.featureMap().containsKey(ELR_FEATURE)) {
            features.add(new BrokerRegistrationRequestData.Feature().setName(ELR_FEATURE)
                .setMinSupportedVersion((short) 0).setMaxSupportedVersion(elrFeatureLevel));
        }
        request.setFeatures(features);
        invoke(request, "setLogDirs", List.of(logDirs.computeIfAbsent(id, k -> Uuid.randomUuid())));
        // The broker tells its previous epoch after a clean shutdown only (KIP-966): -1 makes
        // ClusterControlManager.registerBroker treat the registration as an unclean shutdown.
        invoke(request, "setPreviousBrokerEpoch", clean && existing != null ? existing.epoch() : -1L);
        Method m = method(ClusterControlManager.class, "registerBroker", -1);
        Object[] args = {request, nextOffset, finalized, ApiKeys.BROKER_REGISTRATION.latestVersion() >= 3};
        replayAll(((ControllerResult<?>) invokeMethod(m, clusterControl, args)).records());
        alive.add(id);
    }

    BrokerHeartbeatReply heartbeat(int id, boolean wantShutDown) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
        alive.add(id);
        trackHeartbeat(id, registration.epoch());
        long registerOffset = clusterControl.registerBrokerRecordOffset(id).getAsLong();
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData()
            .setBrokerId(id).setBrokerEpoch(registration.epoch()).setCurrentMetadataOffset(nextOffset - 1)
            .setWantFence(false).setWantShutDown(wantShutDown);
        ControllerResult<BrokerHeartbeatReply> result =
            replicationControl.processBrokerHeartbeat(request, registerOffset);
        replayAll(result.records());
        return result.response();
    }

    void trackHeartbeat(int id, long epoch) {
        invoke(clusterControl, "trackBrokerHeartbeat", id, epoch);
    }

    /** The other running brokers heartbeat as usual, caught up. */
    void keepAlive(int except) {
        BrokerHeartbeatManager hbm = clusterControl.heartbeatManager();
        Map<Integer, Boolean> fenced = new HashMap<>();
        for (BrokerHeartbeatManager.BrokerHeartbeatState s : hbm.brokers()) {
            fenced.put(s.id(), s.fenced());
        }
        for (int id : alive) {
            BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
            if (id != except && registration != null && fenced.containsKey(id)) {
                trackHeartbeat(id, registration.epoch());
                hbm.touch(id, fenced.get(id), nextOffset - 1);
            }
        }
    }

    /** The broker is killed or cut off: its session expires and the stale-broker task fences it. */
    void fence(int id) {
        trackHeartbeat(id, clusterControl.brokerRegistrations().get(id).epoch());
        alive.remove(id);
        time.sleep(TimeUnit.NANOSECONDS.toMillis(sessionTimeoutNs) + 1);
        keepAlive(id);
        for (int i = 0; i < 10; i++) {
            ControllerResult<?> result = replicationControl.maybeFenceOneStaleBroker();
            replayAll(result.records());
            Object more = result.response();
            if (!(more instanceof Boolean ? (Boolean) more : !result.records().isEmpty())) {
                break;
            }
        }
        if (!clusterControl.brokerRegistrations().get(id).fenced()) {
            throw new IllegalStateException("broker " + id + " was not fenced");
        }
    }

    void createTopic() {
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic()
            .setName(TOPIC).setNumPartitions(-1).setReplicationFactor((short) -1);
        topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment()
            .setPartitionIndex(0).setBrokerIds(List.of(1, 2, 3)));
        Map<String, String> configs = new LinkedHashMap<>();
        configs.put("min.insync.replicas", "2");
        configs.put("unclean.leader.election.enable", "false");
        Class<?> configClass = classOrNull(
            "org.apache.kafka.common.message.CreateTopicsRequestData$CreatableTopicConfig");
        for (Map.Entry<String, String> c : configs.entrySet()) {
            Object config = newInstance(configClass);
            invoke(config, "setName", c.getKey());
            invoke(config, "setValue", c.getValue());
            @SuppressWarnings("unchecked")
            Collection<Object> list = (Collection<Object>) invoke(topic, "configs");
            list.add(config);
        }
        request.topics().add(topic);
        Method m = method(ReplicationControlManager.class, "createTopics", -1);
        Object[] args = m.getParameterCount() == 3
            ? new Object[] {context(ApiKeys.CREATE_TOPICS), request, Set.of(TOPIC)}
            : new Object[] {context(ApiKeys.CREATE_TOPICS), request, Set.of(TOPIC), false};  // 4.3+
        @SuppressWarnings("unchecked")
        ControllerResult<CreateTopicsResponseData> result =
            (ControllerResult<CreateTopicsResponseData>) invokeMethod(m, replicationControl, args);
        replayAll(result.records());
        CreateTopicsResponseData.CreatableTopicResult r = result.response().topics().find(TOPIC);
        if (r.errorCode() != Errors.NONE.code()) {
            throw new IllegalStateException("creating " + TOPIC + ": " + r.errorMessage());
        }
        topicId = replicationControl.getTopicId(TOPIC);
    }

    static ControllerRequestContext context(ApiKeys key) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion(key.latestVersion()), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    // ---- replay, as QuorumController.replay does ----

    void replayAll(List<ApiMessageAndVersion> records) {
        for (ApiMessageAndVersion record : records) {
            ApiMessage message = record.message();
            long offset = nextOffset++;
            written.add(record);
            if (message instanceof RegisterBrokerRecord) {
                clusterControl.replay((RegisterBrokerRecord) message, offset);
                continue;
            }
            boolean done = false;
            for (Object manager : List.of(replicationControl, clusterControl, configurationControl, featureControl)) {
                if (applicable(manager.getClass(), "replay", new Object[] {message}) != null) {
                    invoke(manager, "replay", message);
                    done = true;
                    break;
                }
            }
            if (!done && !message.getClass().getSimpleName().equals("NoOpRecord")) {
                throw new IllegalStateException("no manager replays " + message.getClass().getSimpleName());
            }
        }
    }

    static String types(List<ApiMessageAndVersion> records) {
        List<String> names = new ArrayList<>();
        for (ApiMessageAndVersion r : records) {
            names.add(r.message().getClass().getSimpleName());
        }
        return names.isEmpty() ? "no records" : String.join(", ", names);
    }

    // ---- what QuorumController gives the managers ----

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

    /** QuorumController's ConfigResourceExistenceChecker, in short. */
    final class ExistenceChecker implements Consumer<ConfigResource> {
        @Override
        public void accept(ConfigResource resource) {
            if (resource.type() == ConfigResource.Type.TOPIC && replicationControl.getTopicId(resource.name()) == null) {
                throw new org.apache.kafka.common.errors.UnknownTopicOrPartitionException(
                    "The topic '" + resource.name() + "' does not exist.");
            }
        }
    }

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
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no QuorumFeatures constructor this program knows");
    }

    static KafkaConfigSchema configSchema() {
        Class<?> server = classOrNull("kafka.server.KafkaRaftServer");
        if (server == null) {
            throw new Unsupported("kafka.server.KafkaRaftServer is not on the class path (the "
                + "build's libs/ must include the kafka_2.13 jar)");
        }
        return (KafkaConfigSchema) invoke(server, "configSchema");
    }

    static MetadataVersion latestProduction() {
        Object field = staticField(MetadataVersion.class, "LATEST_PRODUCTION");
        return (MetadataVersion) (field != null ? field : invoke(MetadataVersion.class, "latest"));  // 3.6
    }

    static MetadataVersion firstElrMetadataVersion() {
        for (MetadataVersion v : MetadataVersion.values()) {
            if (method(MetadataVersion.class, "isElrSupported", 0) != null && (Boolean) invoke(v, "isElrSupported")) {
                return v;
            }
        }
        return null;
    }

    /** The first eligible.leader.replicas.version level that turns ELR on. */
    static short elrOnLevel(Class<?> feature) {
        for (Object v : feature.getEnumConstants()) {
            short level = (Short) invoke(v, "featureLevel");
            if (level > 0) {
                return level;
            }
        }
        throw new Unsupported("this build has no eligible.leader.replicas.version level that turns ELR on");
    }

    // ---- reflection, for what moved between releases ----

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
            throw new IllegalStateException(e);
        }
    }

    static Object fieldValue(Object target, String name) {
        Field f = field(target.getClass(), name);
        return f == null ? null : get(f, target);
    }

    static Object staticField(Class<?> type, String name) {
        try {
            return type.getField(name).get(null);
        } catch (NoSuchFieldException | IllegalAccessException e) {
            return null;
        }
    }

    static Method method(Class<?> type, String name, int arity) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && (arity < 0 || m.getParameterCount() == arity)
                    && !m.isBridge() && !m.isSynthetic()) {
                    m.setAccessible(true);
                    return m;
                }
            }
        }
        return null;
    }

    static Object invoke(Object target, String name, Object... args) {
        Class<?> type = target instanceof Class ? (Class<?>) target : target.getClass();
        Method m = applicable(type, name, args);
        if (m == null) {
            throw new IllegalStateException("this build has no " + type.getName() + "." + name
                + " taking " + Arrays.toString(args));
        }
        return invokeMethod(m, target instanceof Class ? null : target, args);
    }

    static Method applicable(Class<?> type, String name, Object[] args) {
        List<Class<?>> types = new ArrayList<>();
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            types.add(c);
        }
        types.addAll(List.of(type.getInterfaces()));
        for (Class<?> c : types) {
            for (Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == args.length
                    && !m.isBridge() && !m.isSynthetic() && accepts(m.getParameterTypes(), args)) {
                    m.setAccessible(true);
                    return m;
                }
            }
        }
        return null;
    }

    static final Map<Class<?>, Class<?>> BOXES = Map.of(boolean.class, Boolean.class,
        int.class, Integer.class, long.class, Long.class, short.class, Short.class,
        byte.class, Byte.class);

    static boolean accepts(Class<?>[] params, Object[] args) {
        for (int i = 0; i < params.length; i++) {
            Class<?> p = params[i].isPrimitive() ? BOXES.get(params[i]) : params[i];
            if (p == null || (args[i] == null ? params[i].isPrimitive() : !p.isInstance(args[i]))) {
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
            throw new IllegalStateException(cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A new instance by the constructor that takes these arguments. */
    static Object newInstance(Class<?> type, Object... args) {
        for (java.lang.reflect.Constructor<?> c : type.getDeclaredConstructors()) {
            if (c.getParameterCount() == args.length && accepts(c.getParameterTypes(), args)) {
                try {
                    c.setAccessible(true);
                    return c.newInstance(args);
                } catch (InvocationTargetException e) {
                    throw new IllegalStateException(e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        throw new IllegalStateException("this build has no " + type.getName() + " constructor taking "
            + Arrays.toString(args));
    }

    /** org.apache.kafka.common.utils.NAME, or its 4.4+ home in utils.internals. */
    static Class<?> utilsClass(String name) {
        Class<?> c = classOrNull("org.apache.kafka.common.utils." + name);
        return c != null ? c : classOrNull("org.apache.kafka.common.utils.internals." + name);
    }

    interface Handler {
        void handle(Object[] args);
    }

    static Object proxy(Class<?> iface, Handler handler) {
        return Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, (p, m, a) -> {
            switch (m.getName()) {
                case "hashCode":
                    return System.identityHashCode(p);
                case "equals":
                    return p == a[0];
                case "toString":
                    return "repro " + iface.getSimpleName();
                default:
                    handler.handle(a);
                    return null;
            }
        });
    }
}
