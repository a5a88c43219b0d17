/*
 * A reproduction without any harness of the stale broker-to-ELR index (KRaft controller,
 * KIP-966): the replay of a ClearElrRecord (written on every min.insync.replicas change)
 * empties each partition's ELR without updating ReplicationControlManager's index from broker
 * to the partitions whose ELR holds it (BrokersToElrs). The stale entry then makes the
 * controller fail a former ELR member's unclean registration (or its unregistration) once the
 * topic is deleted, and write a partition's change twice when the broker re-enters the ELR.
 *
 * This program drives the build's own controller managers (FeatureControlManager,
 * ClusterControlManager, ConfigurationControlManager, ReplicationControlManager, built with
 * their Builders as QuorumController builds them) through the operations a cluster and its
 * operator perform, replays every record they return, and checks the outcome. A controller
 * operation that throws anything but an ApiException is what QuorumController treats as a
 * fault (handleEventException: it renounces leadership and reverts to the last committed
 * offset), so it is reported as such.
 *
 * Needs only the JDK and the jars of the Kafka build under test (a distribution's libs/):
 *
 *   javac -proc:none -cp 'KAFKA/libs/*' -d classes ReproduceStaleElrIndex.java
 *   java -cp "classes:KAFKA/libs/*" org.apache.kafka.controller.ReproduceStaleElrIndex [CASE] [--unstable]
 *
 * (package org.apache.kafka.controller: the managers' methods used here are package-private.)
 *
 * CASE (default "all": every case, then every control):
 *   topic-min-isr       t on [1, 2, 3], min.insync.replicas=3 on t; broker 3 killed (ISR
 *                       [1, 2], ELR [3]); min.insync.replicas=2 on t (ClearElrRecord: ELR []);
 *                       t deleted; broker 3 starts again (unclean: it was killed) and registers.
 *   cluster-min-isr     the same with the cluster-level min.insync.replicas (3, then 2).
 *   duplicate-record    no deletion: min.insync.replicas=3 on t; broker 3 shut down cleanly
 *                       (ELR [3]); min.insync.replicas=2 (ELR []); broker 3 back in the ISR;
 *                       brokers 1, 3, 2 killed in turn (broker 3 re-enters the ELR); brokers
 *                       2 and 3 start again (unclean): broker 3's registration must write one
 *                       change for t-0.
 *   unregister          as topic-min-isr, but broker 3 is unregistered
 *                       (kafka-cluster.sh unregister) instead of starting again.
 *   CASE-control        the same without the min.insync.replicas change (duplicate-record's
 *                       control has min.insync.replicas=2 from the start).
 *
 * --unstable: on 3.7-3.9, whose ELR code runs only on a metadata.version that is not a
 * production one, run on that metadata.version with ELR on (not a production setup).
 *
 * Exit status: 1 a case reproduces (a controller fault, or a duplicate change); 0 none does;
 * 2 usage error, unexpected failure, or a control that fails; 3 UNSUPPORTED (the case cannot
 * be set up on this build), with the reason.
 *
 * The managers' APIs moved between releases (registerBroker's arguments, the shutdown
 * handlers, createTopics/incrementalAlterConfigs' "forwarded" flag, the ELR switch), so those
 * parts are reached by reflection; one source compiles against every build from 3.6 on.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
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
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
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

public final class ReproduceStaleElrIndex {
    static final int OK = 0;
    static final int BUG = 1;
    static final int USAGE = 2;
    static final int UNSUPPORTED = 3;

    static final String TOPIC = "t";
    static final String CLUSTER_ID = "stale-elr-index-repro";
    static final List<String> CASES =
        List.of("topic-min-isr", "cluster-min-isr", "duplicate-record", "unregister");

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
        boolean unstable = false;
        for (String a : args) {
            if (a.equals("--unstable")) {
                unstable = true;
            } else if (a.startsWith("-")) {
                System.err.println("unknown option " + a + "; usage: [CASE] [--unstable]");
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
        System.exit(runAll(runs, unstable));
    }

    static int runAll(List<String> runs, boolean unstable) {
        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        try {
            for (String run : runs) {
                boolean control = run.endsWith("-control");
                String name = run.replaceFirst("-control$", "");
                ReproduceStaleElrIndex repro = new ReproduceStaleElrIndex(unstable);
                if (outcomes.isEmpty()) {
                    System.out.println(repro.setupLine());
                }
                System.out.println();
                System.out.println("case " + run + ":");
                Outcome o = repro.run(name, control);
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
    final Object logContext = newInstance(utilsClass("LogContext"), "[stale-elr-index] ");
    final SnapshotRegistry snapshotRegistry =
        (SnapshotRegistry) newInstance(SnapshotRegistry.class, logContext);
    final boolean unstable;
    final MetadataVersion metadataVersion;
    final String elrMode;
    final boolean elrControllerConfig;
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

    ReproduceStaleElrIndex(boolean unstable) {
        this.unstable = unstable;
        Class<?> feature = classOrNull("org.apache.kafka.server.common.EligibleLeaderReplicasVersion");
        if (feature != null) {  // 4.0+: the feature eligible.leader.replicas.version
            metadataVersion = latestProduction();
            elrFeatureLevel = elrOnLevel(feature);
            elrControllerConfig = false;
            elrMode = "eligible.leader.replicas.version=" + elrFeatureLevel;
        } else if (field(PartitionRegistration.class, "elr") == null) {  // 3.6
            metadataVersion = latestProduction();
            elrFeatureLevel = -1;
            elrControllerConfig = false;
            elrMode = "no ELR (PartitionRegistration has no elr field: KIP-966's ELR code "
                + "arrived in 3.7)";
        } else {  // 3.7-3.9: eligible.leader.replicas.enable, on a metadata.version none ships
            MetadataVersion first = firstElrMetadataVersion();
            elrFeatureLevel = -1;
            if (unstable && first != null) {
                metadataVersion = first;
                elrControllerConfig = true;
                elrMode = "eligible.leader.replicas.enable=true on metadata.version "
                    + first.version() + ", not a production metadata.version of this build "
                    + "(--unstable)";
            } else {
                metadataVersion = latestProduction();
                elrControllerConfig = false;
                elrMode = "ELR off: this build runs its ELR code only on metadata.version "
                    + (first == null ? "(none)" : first.version()) + ", not a production one "
                    + "(latest production " + latestProduction().version() + "); --unstable "
                    + "runs it there";
            }
        }
    }

    String setupLine() {
        return "Kafka " + invoke(utilsClass("AppInfoParser"), "getVersion") + ": the build's own controller managers on "
            + "metadata.version " + metadataVersion.version() + ", " + elrMode + "; "
            + (classOrNull("org.apache.kafka.common.metadata.ClearElrRecord") == null
                ? "this build has no ClearElrRecord (a min.insync.replicas change leaves the ELR as it is)"
                : "ClearElrRecord present") + "; "
            + (classOrNull("org.apache.kafka.controller.BrokersToElrs") == null
                ? "no BrokersToElrs index" : "BrokersToElrs index present");
    }

    /** One case, on fresh managers. */
    Outcome run(String name, boolean control) {
        boolean clusterLevel = name.equals("cluster-min-isr");
        boolean duplicate = name.equals("duplicate-record");
        int startMinIsr = duplicate && control ? 2 : 3;
        buildManagers(clusterLevel ? startMinIsr : 1);
        for (int b = 1; b <= 3; b++) {
            register(b, true);
            heartbeat(b, false, false);
        }
        createTopic(clusterLevel ? null : Integer.toString(startMinIsr));
        step("brokers 1, 2, 3 registered; topic " + TOPIC + " on [1, 2, 3], min.insync.replicas="
            + startMinIsr + (clusterLevel ? " (cluster level)" : " (topic level)"));
        if (duplicate) {
            return duplicateRecord(control);
        }
        fence(3);
        step("broker 3 killed: its session expires and the controller fences it");
        lowerMinIsr(control, clusterLevel);
        deleteTopic();
        if (name.equals("unregister")) {
            return attempt("broker 3 unregistered (kafka-cluster.sh unregister --id 3)",
                () -> replayAll(replicationControl.unregisterBroker(3).records()));
        }
        return attempt("broker 3 starts again and registers (unclean: it was killed)",
            () -> register(3, false));
    }

    void lowerMinIsr(boolean control, boolean clusterLevel) {
        if (control) {
            step("(control: min.insync.replicas left as it is)");
            return;
        }
        List<ApiMessageAndVersion> records = alterMinIsr(clusterLevel ? "" : null, 2);
        step("min.insync.replicas=2 " + (clusterLevel ? "for the cluster" : "on " + TOPIC)
            + " (kafka-configs.sh --alter): " + types(records));
    }

    Outcome duplicateRecord(boolean control) {
        controlledShutdown(3);
        step("broker 3 shut down cleanly (controlled shutdown)");
        if (!control) {
            alterMinIsr(null, 2);
            step("min.insync.replicas=2 on " + TOPIC);
        } else {
            step("(control: min.insync.replicas=2 from the start, no change)");
        }
        register(3, true);
        heartbeat(3, false, false);
        alterPartition(1, List.of(1, 2, 3));
        step("broker 3 back (clean), caught up: the leader adds it to the ISR");
        fence(1);
        step("broker 1 killed");
        fence(3);
        step("broker 3 killed");
        fence(2);
        step("broker 2 killed");
        register(2, false);
        heartbeat(2, false, false);
        step("broker 2 starts again (unclean) and is unfenced");
        PartitionRegistration before = partition();
        long offset = nextOffset;
        Outcome failed = attempt("broker 3 starts again and registers (unclean)", () -> register(3, false));
        if (failed.bug) {
            return failed;
        }
        int changes = changesOfT(offset);
        PartitionRegistration after = partition();
        String what = changes + " PartitionChangeRecord(s) for " + TOPIC + "-0 in broker 3's "
            + "registration; partition epoch " + before.partitionEpoch + " -> " + after.partitionEpoch
            + ", leader epoch " + before.leaderEpoch + " -> " + after.leaderEpoch;
        if (changes > 1) {
            return new Outcome(true, what + ". KIP-966 \"Other behaviors\" 1: one change of the "
                + "partition (one partition epoch, and one leader epoch when it elects); the stale "
                + "index entry made the controller build the same change twice");
        }
        return new Outcome(false, what);
    }

    final List<ApiMessageAndVersion> written = new ArrayList<>();

    int changesOfT(long fromOffset) {
        int count = 0;
        for (int i = (int) (fromOffset - 1); i < written.size(); i++) {
            ApiMessage m = written.get(i).message();
            if (m instanceof PartitionChangeRecord && ((PartitionChangeRecord) m).topicId().equals(topicId)) {
                count++;
            }
        }
        return count;
    }

    /** Runs a controller operation; a non-ApiException is a controller fault. */
    Outcome attempt(String what, Runnable operation) {
        try {
            operation.run();
        } catch (ApiException e) {
            step(what + ": refused, " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return new Outcome(false, "the operation was refused with an API error (not a fault)");
        } catch (RuntimeException e) {
            step(what + ": FAULT " + e.getClass().getName() + ": " + e.getMessage());
            return new Outcome(true, "the controller operation failed with " + e.getClass().getSimpleName()
                + " (\"" + e.getMessage() + "\"), which QuorumController treats as a fault: it "
                + "renounces leadership and reverts to the last committed offset, and the broker "
                + "retries. KIP-966: a broker that registers after an unclean shutdown is removed "
                + "from the ELRs it is in; here it is in none, and its topic is gone");
        }
        step(what + ": done");
        return new Outcome(false, "the operation succeeded");
    }

    /** Prints the step with the partition and the index as the build's objects hold them. */
    void step(String what) {
        StringBuilder line = new StringBuilder("  ").append(what);
        PartitionRegistration p = topicId == null ? null : replicationControl.getPartition(topicId, 0);
        if (p != null) {
            line.append("\n      ").append(TOPIC).append("-0: leader ").append(p.leader)
                .append(" leaderEpoch ").append(p.leaderEpoch).append(" partitionEpoch ")
                .append(p.partitionEpoch).append(" isr ").append(Arrays.toString(p.isr));
            Object elr = fieldValue(p, "elr");
            if (elr != null) {
                line.append(" elr ").append(Arrays.toString((int[]) elr))
                    .append(" lastKnownElr ").append(Arrays.toString((int[]) fieldValue(p, "lastKnownElr")));
            }
        } else if (topicId != null) {
            line.append("\n      ").append(TOPIC).append(" (id ").append(topicId).append(") is gone");
        }
        String index = elrIndex();
        if (index != null) {
            line.append("\n      index (BrokersToElrs): ").append(index);
        }
        System.out.println(line);
    }

    /** broker -> partitions, read from the controller's own BrokersToElrs. */
    String elrIndex() {
        Field f = field(ReplicationControlManager.class, "brokersToElrs");
        if (f == null) {
            return null;
        }
        Object index = get(f, replicationControl);
        StringBuilder out = new StringBuilder();
        for (int b = 1; b <= 3; b++) {
            Iterator<?> it = (Iterator<?>) invoke(index, "partitionsWithBrokerInElr", b);
            List<String> parts = new ArrayList<>();
            while (it.hasNext()) {
                Object tp = it.next();
                Uuid id = (Uuid) invoke(tp, "topicId");
                String topic = id.equals(topicId) && replicationControl.getPartition(id, 0) != null
                    ? TOPIC : id + " (deleted)";
                parts.add(topic + "-" + invoke(tp, "partitionId"));
            }
            out.append(b == 1 ? "" : ", ").append("broker ").append(b).append(" -> ").append(parts);
        }
        return out.toString();
    }

    PartitionRegistration partition() {
        return replicationControl.getPartition(topicId, 0);
    }

    // ---- the managers ----

    void buildManagers(int clusterMinIsr) {
        featureControl = ((FeatureControlManager.Builder) invoke(new FeatureControlManager.Builder(),
                "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(quorumFeatures(unstable))
            .build();
        ClusterControlManager.Builder cluster = ((ClusterControlManager.Builder) invoke(
                new ClusterControlManager.Builder(), "setLogContext", logContext))
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
            invoke(cluster, "setBrokerShutdownHandler", proxy(shutdownHandler, a ->
                invoke(replicationControl, "handleBrokerShutdown", a[0], a[1], a[2])));
        } else if (uncleanHandler != null) {  // 3.8-3.9: (brokerId, records)
            invoke(cluster, "setBrokerUncleanShutdownHandler", proxy(uncleanHandler, a ->
                invoke(replicationControl, "handleBrokerUncleanShutdown", a[0], a[1])));
        }
        clusterControl = cluster.build();
        Map<String, Object> staticConfig = new HashMap<>();
        staticConfig.put("min.insync.replicas", Integer.toString(clusterMinIsr));
        if (elrControllerConfig) {
            staticConfig.put("eligible.leader.replicas.enable", "true");
        }
        ConfigurationControlManager.Builder config = ((ConfigurationControlManager.Builder) invoke(
                new ConfigurationControlManager.Builder(), "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setKafkaConfigSchema(configSchema())
            .setExistenceChecker(new ExistenceChecker())
            .setStaticConfig(staticConfig)
            .setNodeId(3000);
        if (method(ConfigurationControlManager.Builder.class, "setFeatureControl", 1) != null) {
            invoke(config, "setFeatureControl", featureControl);  // 4.0+
        }
        configurationControl = config.build();
        ReplicationControlManager.Builder replication = ((ReplicationControlManager.Builder) invoke(
                new ReplicationControlManager.Builder(), "setLogContext", logContext))
            .setSnapshotRegistry(snapshotRegistry)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
            .setConfigurationControl(configurationControl)
            .setClusterControl(clusterControl)
            .setCreateTopicPolicy(Optional.empty())
            .setFeatureControl(featureControl);
        if (method(ReplicationControlManager.Builder.class, "setEligibleLeaderReplicasEnabled", 1) != null) {
            invoke(replication, "setEligibleLeaderReplicasEnabled", elrControllerConfig);  // 3.7-3.9
        }
        replicationControl = replication.build();

        List<ApiMessageAndVersion> bootstrap = new ArrayList<>();
        bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(metadataVersion.featureLevel()), (short) 0));
        if (elrFeatureLevel > 0) {
            bootstrap.add(new ApiMessageAndVersion(new FeatureLevelRecord()
                .setName("eligible.leader.replicas.version").setFeatureLevel(elrFeatureLevel), (short) 0));
            // As ActivationRecordsGenerator does on 4.0+ when ELR is on at bootstrap.
            bootstrap.add(new ApiMessageAndVersion(new ConfigRecord()
                .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("")
                .setName("min.insync.replicas").setValue(Integer.toString(clusterMinIsr)), (short) 0));
        }
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
        BrokerRegistrationRequestData.FeatureCollection features =
            new BrokerRegistrationRequestData.FeatureCollection();
        FinalizedControllerFeatures finalized = featureControl.finalizedFeatures(Long.MAX_VALUE);
        for (Map.Entry<String, Short> f : finalized.featureMap().entrySet()) {
            features.add(new BrokerRegistrationRequestData.Feature().setName(f.getKey())
                .setMinSupportedVersion((short) Math.min(f.getValue(), 1)).setMaxSupportedVersion(f.getValue()));
        }
        request.setFeatures(features);
        if (method(BrokerRegistrationRequestData.class, "setLogDirs", 1) != null) {
            invoke(request, "setLogDirs", List.of(logDirs.computeIfAbsent(id, k -> Uuid.randomUuid())));
        }
        // The broker tells its previous epoch after a clean shutdown only (KIP-966).
        long previousEpoch = clean && existing != null ? existing.epoch() : -1L;
        if (method(BrokerRegistrationRequestData.class, "setPreviousBrokerEpoch", 1) != null) {
            invoke(request, "setPreviousBrokerEpoch", previousEpoch);
        }
        short apiVersion = ApiKeys.BROKER_REGISTRATION.latestVersion();
        Method m = method(ClusterControlManager.class, "registerBroker", -1);
        Class<?>[] types = m.getParameterTypes();
        Object[] args;
        if (types.length == 3) {
            args = new Object[] {request, nextOffset, finalized};  // 3.6, 3.9
        } else if (types[3] == short.class) {
            args = new Object[] {request, nextOffset, finalized, apiVersion};  // 3.7-3.8
        } else {
            args = new Object[] {request, nextOffset, finalized, apiVersion >= 3};  // 4.0+
        }
        replayAll(((ControllerResult<?>) invokeMethod(m, clusterControl, args)).records());
        alive.add(id);
    }

    BrokerHeartbeatReply heartbeat(int id, boolean wantShutDown, boolean keepOthers) {
        BrokerRegistration registration = clusterControl.brokerRegistrations().get(id);
        trackHeartbeat(id, registration.epoch());
        long registerOffset = clusterControl.registerBrokerRecordOffset(id).getAsLong();
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData()
            .setBrokerId(id).setBrokerEpoch(registration.epoch()).setCurrentMetadataOffset(nextOffset - 1)
            .setWantFence(false).setWantShutDown(wantShutDown);
        ControllerResult<BrokerHeartbeatReply> result =
            replicationControl.processBrokerHeartbeat(request, registerOffset);
        replayAll(result.records());
        BrokerHeartbeatReply reply = result.response();
        if (reply.inControlledShutdown()) {  // QuorumController: at the batch's end offset
            clusterControl.heartbeatManager().maybeUpdateControlledShutdownOffset(id, nextOffset - 1);
        }
        if (keepOthers) {
            keepAlive(id);
        }
        return reply;
    }

    void controlledShutdown(int id) {
        for (int round = 0; round < 5; round++) {
            if (heartbeat(id, true, true).shouldShutDown()) {
                alive.remove(id);
                return;
            }
        }
        throw new IllegalStateException("broker " + id + " was not let shut down in 5 heartbeats");
    }

    void trackHeartbeat(int id, long epoch) {
        if (method(ClusterControlManager.class, "trackBrokerHeartbeat", 2) != null) {
            invoke(clusterControl, "trackBrokerHeartbeat", id, epoch);  // 4.0+
        }
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

    /** The broker is killed: its session expires and the stale-broker task fences it. */
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

    void createTopic(String minIsr) {
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic()
            .setName(TOPIC).setNumPartitions(-1).setReplicationFactor((short) -1);
        topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment()
            .setPartitionIndex(0).setBrokerIds(List.of(1, 2, 3)));
        if (minIsr != null) {
            Class<?> configClass = classOrNull(
                "org.apache.kafka.common.message.CreateTopicsRequestData$CreatableTopicConfig");
            if (configClass == null) {  // 3.6-3.8 spell it Createable
                configClass = classOrNull(
                    "org.apache.kafka.common.message.CreateTopicsRequestData$CreateableTopicConfig");
            }
            Object config = newInstance(configClass);
            invoke(config, "setName", "min.insync.replicas");
            invoke(config, "setValue", minIsr);
            @SuppressWarnings("unchecked")
            Collection<Object> configs = (Collection<Object>) invoke(topic, "configs");
            configs.add(config);
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

    /** min.insync.replicas for the topic (resource null) or the cluster (""). */
    List<ApiMessageAndVersion> alterMinIsr(String clusterResource, int value) {
        ConfigResource resource = clusterResource == null
            ? new ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
            : new ConfigResource(ConfigResource.Type.BROKER, clusterResource);
        Map<ConfigResource, Map<String, Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>>
            request = new HashMap<>();
        request.put(resource, Map.of("min.insync.replicas", new AbstractMap.SimpleImmutableEntry<>(
            org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET, Integer.toString(value))));
        Method m = method(ConfigurationControlManager.class, "incrementalAlterConfigs", -1);
        Object[] args = m.getParameterCount() == 2
            ? new Object[] {request, false}
            : new Object[] {request, false, false};  // 4.3+: forwarded
        @SuppressWarnings("unchecked")
        ControllerResult<Map<ConfigResource, ApiError>> result =
            (ControllerResult<Map<ConfigResource, ApiError>>) invokeMethod(m, configurationControl, args);
        ApiError error = result.response().get(resource);
        if (error != null && error.isFailure()) {
            throw new IllegalStateException("min.insync.replicas refused: " + error.messageWithFallback());
        }
        replayAll(result.records());
        return result.records();
    }

    void deleteTopic() {
        ControllerResult<Map<Uuid, ApiError>> result =
            replicationControl.deleteTopics(context(ApiKeys.DELETE_TOPICS), List.of(topicId));
        ApiError error = result.response().get(topicId);
        if (error != null && error.isFailure()) {
            throw new IllegalStateException("deleting " + TOPIC + ": " + error.messageWithFallback());
        }
        replayAll(result.records());
        step(TOPIC + " deleted (kafka-topics.sh --delete): " + types(result.records()));
    }

    void alterPartition(int leader, List<Integer> isr) {
        PartitionRegistration reg = partition();
        List<AlterPartitionRequestData.BrokerState> states = new ArrayList<>();
        for (int b : isr) {
            states.add(new AlterPartitionRequestData.BrokerState().setBrokerId(b)
                .setBrokerEpoch(clusterControl.brokerRegistrations().get(b).epoch()));
        }
        AlterPartitionRequestData request = new AlterPartitionRequestData()
            .setBrokerId(leader)
            .setBrokerEpoch(clusterControl.brokerRegistrations().get(leader).epoch())
            .setTopics(new ArrayList<>(List.of(new AlterPartitionRequestData.TopicData()
                .setTopicId(topicId)
                .setPartitions(new ArrayList<>(List.of(new AlterPartitionRequestData.PartitionData()
                    .setPartitionIndex(0).setLeaderEpoch(reg.leaderEpoch)
                    .setPartitionEpoch(reg.partitionEpoch).setNewIsrWithEpochs(states)))))));
        ControllerResult<AlterPartitionResponseData> result =
            replicationControl.alterPartition(context(ApiKeys.ALTER_PARTITION), request);
        replayAll(result.records());
        short code = result.response().topics().get(0).partitions().get(0).errorCode();
        if (result.response().errorCode() != Errors.NONE.code() || code != Errors.NONE.code()) {
            throw new IllegalStateException("AlterPartition refused: " + Errors.forCode(code));
        }
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
