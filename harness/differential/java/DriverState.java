/*
 * A session's state: the build's managers (built by DriverSetup), what the driver keeps
 * beside them (its clock, the next offset, topic names, which brokers' processes run), what
 * the current event wrote, and the replay of every record the managers return into them, as
 * QuorumController.replay does, at consecutive offsets.
 */
package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.node.ArrayNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
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
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.apache.kafka.controller.DriverProtocol.JSON;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.unwrap;

final class DriverState {
    static final String CLUSTER_ID = "kafka-chaos-differential";

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

    /** Replaying the controller's records failed: the state is no longer the controller's. */
    static final class ReplayFailure extends RuntimeException {
        ReplayFailure(Throwable cause) {
            super(cause);
        }
    }

    // ---- the build's managers and what the driver keeps beside them ----
    final DriverLine line;  // what differs in this build's release line
    final ManualTime time = new ManualTime();
    final SnapshotRegistry snapshotRegistry = new SnapshotRegistry(DriverKafkaUtils.LOG_CONTEXT);
    FeatureControlManager featureControl;
    ClusterControlManager clusterControl;
    ConfigurationControlManager configurationControl;
    ReplicationControlManager replicationControl;
    QuorumFeatures quorumFeatures;
    long sessionTimeoutNs;
    long nextOffset = 1;  // the offset the next record is written at
    final Map<String, Uuid> topicIds = new TreeMap<>();
    final Map<Uuid, String> topicNames = new HashMap<>();
    final Map<Uuid, Integer> partitionCounts = new HashMap<>();
    final Set<Integer> alive = new TreeSet<>();  // brokers whose process runs and heartbeats
    final Map<Integer, Uuid> logDirs = new HashMap<>();
    /** The last log directory id made (newDirectoryId). */
    long dirSerial;
    boolean reportChanged = false;
    /** Every record replayed, with its offset, also goes here (DriverOracleChecks: the image). */
    java.util.function.ObjLongConsumer<ApiMessage> onReplay;
    boolean uncleanConfigHonoured = true;
    final List<String> sessionNotes = new ArrayList<>();
    /** Every record replayed since the last snapshot point (DriverSnapshot; null: none kept). */
    List<ApiMessageAndVersion> journal = new ArrayList<>();

    // ---- per event ----
    ArrayNode recordsOut;
    final Set<String> touched = new LinkedHashSet<>();
    final List<String> removedOut = new ArrayList<>();  // "topic-index" a RemoveTopicRecord removed
    /** A record ReplicationControlManager replays (topic, partition, removal, ClearElr) was
     * replayed: only then can its indexes have changed (DriverIndexOracle). */
    boolean replicationReplayed;
    /** The partitions (topic id -> partition ids) the event's partition records and
     * ClearElrRecords named; topicReplayed: a TopicRecord or RemoveTopicRecord too
     * (DriverIndexScope). */
    final Map<Uuid, Set<Integer>> touchedParts = new HashMap<>();
    boolean topicReplayed;
    /** A broker record was replayed (DriverBrokerIndexes). */
    boolean clusterReplayed;

    DriverState(DriverLine line) {
        this.line = line;
    }

    /** A new event: nothing written, touched or removed yet. */
    void beginEvent() {
        recordsOut = JSON.createArrayNode();
        touched.clear();
        removedOut.clear();
        replicationReplayed = false;
        touchedParts.clear();
        topicReplayed = false;
        clusterReplayed = false;
    }

    void touch(Uuid topic, int partition) {
        touchedParts.computeIfAbsent(topic, t -> new TreeSet<>()).add(partition);
    }

    Uuid topicId(String name) {
        Uuid id = topicIds.get(name);
        if (id == null) {
            throw new UnknownTopicOrPartitionException("The topic '" + name + "' does not exist.");
        }
        return id;
    }

    long currentEpoch(int broker) {
        BrokerRegistration r = clusterControl.brokerRegistrations().get(broker);
        return r == null ? -1L : r.epoch();
    }

    static ControllerRequestContext context(ApiKeys key) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion(key.latestVersion()), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    // ---- replay (as QuorumController.replay) ----

    void replayAll(List<ApiMessageAndVersion> records) {
        for (ApiMessageAndVersion record : records) {
            long offset = nextOffset++;
            try {
                replay(record.message(), offset);
                if (onReplay != null) {
                    onReplay.accept(record.message(), offset);
                }
            } catch (Throwable t) {
                throw new ReplayFailure(unwrap(t));
            }
            recordsOut.add(DriverReport.record(this, record));
            if (journal != null) {
                journal.add(record);
            }
        }
    }

    void replay(ApiMessage message, long offset) {
        switch (message.getClass().getSimpleName()) {
            case "RegisterBrokerRecord":
                clusterReplayed = true;
                clusterControl.replay((RegisterBrokerRecord) message, offset);
                break;
            // The broker records replay as they are: ClusterControlManager has one
            // replay overload per record type (looked up once, then cached).
            case "UnregisterBrokerRecord":
            case "FenceBrokerRecord":
            case "UnfenceBrokerRecord":
            case "BrokerRegistrationChangeRecord":
                clusterReplayed = true;
                invoke(clusterControl, "replay", message);
                break;
            case "TopicRecord": {
                replicationReplayed = true;
                TopicRecord r = (TopicRecord) message;
                topicReplayed = true;
                replicationControl.replay(r);
                topicIds.put(r.name(), r.topicId());
                topicNames.put(r.topicId(), r.name());
                partitionCounts.put(r.topicId(), 0);
                break;
            }
            case "PartitionRecord": {
                replicationReplayed = true;
                PartitionRecord r = (PartitionRecord) message;
                replicationControl.replay(r);
                partitionCounts.merge(r.topicId(), r.partitionId() + 1, Math::max);
                touched.add(r.topicId() + ":" + r.partitionId());
                touch(r.topicId(), r.partitionId());
                break;
            }
            case "PartitionChangeRecord": {
                replicationReplayed = true;
                PartitionChangeRecord r = (PartitionChangeRecord) message;
                replicationControl.replay(r);
                touched.add(r.topicId() + ":" + r.partitionId());
                touch(r.topicId(), r.partitionId());
                break;
            }
            case "RemoveTopicRecord": {
                replicationReplayed = true;
                // ReplicationControlManager.replay(RemoveTopicRecord): the topic, its
                // partitions and (configurationControl.deleteTopicConfigs) its configs.
                RemoveTopicRecord r = (RemoveTopicRecord) message;
                topicReplayed = true;
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
            case "ClearElrRecord": {  // 4.0+ (DriverLine40)
                replicationReplayed = true;
                invoke(replicationControl, "replay", message);
                String topic = (String) invoke(message, "topicName");
                for (Map.Entry<String, Uuid> t : topicIds.entrySet()) {
                    if (topic == null || topic.isEmpty() || topic.equals(t.getKey())) {
                        int count = partitionCounts.getOrDefault(t.getValue(), 0);
                        for (int p = 0; p < count; p++) {
                            touched.add(t.getValue() + ":" + p);
                            touch(t.getValue(), p);
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

    /** A new log directory id: a serial, not random, so that a snapshot's fresh managers
     * (DriverSnapshot.load copies the serial) name a directory made after the snapshot as
     * the original does (random ids were a snapshot:dir:assignDirs difference). The high
     * half is not 0, so no id is one DirectoryId reserves (UNASSIGNED, LOST, MIGRATING). */
    Uuid newDirectoryId() {
        return new Uuid(0x6B6368616F73L, ++dirSerial);
    }
}

