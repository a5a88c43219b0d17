/*
 * Image agreement (issue 44 item 1): what a broker would be told is what the controller
 * believes. Every record the managers replay is also replayed, at the same offset, into a
 * MetadataDelta of the build over the image so far (MetadataDelta.Builder, replay(ApiMessage),
 * apply(MetadataProvenance): what a broker's MetadataLoader does with the committed log), and
 * after each event the new MetadataImage is compared with the managers:
 *
 *   topics     every topic of ReplicationControlManager.topics in TopicsImage.topicsById,
 *              with its name and partition count, and no other
 *   partitions every PartitionRegistration equal to the image's (PartitionRegistration.equals:
 *              replicas, isr, elr, lastKnownElr, adding, removing, leader, recovery state,
 *              epochs, directories); the first differing field names the finding
 *   brokers    ClusterControlManager.brokerRegistrations equal to ClusterImage.brokers
 *              (epoch, fenced, in controlled shutdown, then BrokerRegistration.equals)
 *   features   FeatureControlManager's finalized levels (level 0: absent, as both replay it)
 *              and metadata.version equal to FeaturesImage's
 *
 * Cost: applying the delta is proportional to the event's records; after an event that
 * replayed records (nothing else changes the image or the managers' registrations) the
 * comparison walks every partition and broker of the session (a few dozen in a campaign's
 * session: an equals each, no copies), skipping two registrations found equal before (the
 * same immutable objects), and, after an event whose records named partitions of existing
 * topics only, those topics' names and counts and those partitions only (checkTouched; the
 * full comparison as often as DriverIndexScope's). A replay the image refuses (its delta throws) is a
 * finding too.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.TopicImage;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.PartitionRegistration;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

import static org.apache.kafka.controller.DriverIndexOracle.INFO_NAME;
import static org.apache.kafka.controller.DriverIndexOracle.INFO_PARTS;
import static org.apache.kafka.controller.DriverIndexOracle.TOPICS;
import static org.apache.kafka.controller.DriverIndexOracle.name;
import static org.apache.kafka.controller.DriverIndexOracle.parts;
import static org.apache.kafka.controller.DriverProtocol.describe;
import static org.apache.kafka.controller.DriverReflection.field;
import static org.apache.kafka.controller.DriverReflection.get;
import static org.apache.kafka.controller.DriverReflection.invoke;
import static org.apache.kafka.controller.DriverReflection.unwrap;

final class DriverImageOracle {
    static final Field FINALIZED = field(FeatureControlManager.class, "finalizedVersions");
    static final Field MV = field(FeatureControlManager.class, "metadataVersion");
    static final Field REGISTRATIONS = DriverIndexOracle.REGISTRATIONS;
    /** The PartitionRegistration fields, in the order a difference is named by. */
    static final String[] PART_FIELDS = {"leader", "isr", "elr", "lastKnownElr", "leaderEpoch",
        "partitionEpoch", "replicas", "addingReplicas", "removingReplicas", "leaderRecoveryState",
        "directories"};
    static final Map<String, Field> FIELDS = new TreeMap<>();

    static {
        for (String f : PART_FIELDS) {
            Field found = field(PartitionRegistration.class, f);
            if (found != null) {
                FIELDS.put(f, found);
            }
        }
    }

    final DriverOracleNames names;
    MetadataImage image = MetadataImage.EMPTY;
    MetadataDelta delta;
    long lastOffset = 0;
    String replayFailure;
    /** Which parts of the image this event's records changed: only those are compared. */
    boolean topicsChanged = true;
    boolean brokersChanged = true;
    boolean featuresChanged = true;
    /** Topic comparisons since the last full one (checkTouched). */
    int sinceFull;

    DriverImageOracle(DriverOracleNames names) {
        this.names = names;
    }

    /** A record the managers replayed at this offset: the broker's image replays it too. */
    void onRecord(ApiMessage message, long offset) {
        if (replayFailure != null) {
            return;
        }
        try {
            if (delta == null) {
                delta = new MetadataDelta.Builder().setImage(image).build();
            }
            delta.replay(message);
            lastOffset = offset;
            String type = message.getClass().getSimpleName();
            if (type.startsWith("Topic") || type.startsWith("Partition") || type.startsWith("RemoveTopic")
                || type.startsWith("ClearElr") || type.startsWith("Config")) {
                topicsChanged = true;
            } else if (type.contains("Broker")) {
                brokersChanged = true;
            } else if (type.startsWith("FeatureLevel")) {
                featuresChanged = true;
            }
        } catch (Throwable t) {
            replayFailure = message.getClass().getSimpleName() + " at offset " + offset + ": "
                + describe(unwrap(t));
            delta = null;
        }
    }

    static MetadataProvenance provenance(long offset) {
        for (Constructor<?> c : MetadataProvenance.class.getConstructors()) {
            try {
                if (c.getParameterCount() == 4) {  // 3.7+: isOffsetBatchAligned
                    return (MetadataProvenance) c.newInstance(offset, 1, 0L, true);
                }
                if (c.getParameterCount() == 3) {  // 3.6
                    return (MetadataProvenance) c.newInstance(offset, 1, 0L);
                }
            } catch (ReflectiveOperationException e) {
                throw new DriverReflection.ReflectionFailure(e);
            }
        }
        throw new IllegalStateException("this build has no MetadataProvenance constructor of 3 or 4 parameters");
    }

    /** force: compare every part (a test-only op changed the managers without records). */
    void check(DriverState st, DriverIndexOracle.Sink out, boolean force) {
        if (replayFailure != null) {
            out.report("replay", "event", Arrays.asList("replay", replayFailure),
                () -> "the image could not replay the controller's record " + replayFailure);
            return;
        }
        if (delta != null) {
            image = delta.apply(provenance(lastOffset));
            delta = null;
        }
        if (TOPICS == null || INFO_NAME == null || INFO_PARTS == null) {
            return;
        }
        // The managers change only by replaying the same records (nothing else writes their
        // timeline state): the parts of the image the event's records did not touch are
        // those of the last comparison.
        // A part not compared again says what it said last time (its lasting disagreements
        // stay reported, DriverOracleChecks).
        if (topicsChanged && !force && !st.topicReplayed && ++sinceFull < DriverIndexScope.FULL_EVERY) {
            checkTouched(st, out);
        } else if (topicsChanged || force) {
            sinceFull = 0;
            lastTopics.clear();
            checkTopics(st, recording(out, lastTopics));
        } else {
            replay(lastTopics, out);
        }
        if (brokersChanged || force) {
            lastBrokers.clear();
            checkBrokers(st, recording(out, lastBrokers));
        } else {
            replay(lastBrokers, out);
        }
        if (featuresChanged || force) {
            lastFeatures.clear();
            checkFeatures(st, recording(out, lastFeatures));
        } else {
            replay(lastFeatures, out);
        }
        topicsChanged = brokersChanged = featuresChanged = false;
    }

    final List<Object[]> lastTopics = new ArrayList<>();
    final List<Object[]> lastBrokers = new ArrayList<>();
    final List<Object[]> lastFeatures = new ArrayList<>();

    static DriverIndexOracle.Sink recording(DriverIndexOracle.Sink out, List<Object[]> into) {
        return (name, where, key, detail) -> {
            into.add(new Object[] {name, where, key, detail});
            out.report(name, where, key, detail);
        };
    }

    @SuppressWarnings("unchecked")
    static void replay(List<Object[]> said, DriverIndexOracle.Sink out) {
        for (Object[] r : said) {
            out.report((String) r[0], (String) r[1], r[2], (java.util.function.Supplier<String>) r[3]);
        }
    }

    /** Registrations (the controller's -> the image's) found equal, by identity: both are
     * immutable (final fields, no setters), so the same two objects are equal again and
     * their equals (which compares every field, listeners and features too) is not run
     * again. Exact; cleared when it grows past every registration the session holds. */
    final Map<PartitionRegistration, PartitionRegistration> lastEqualParts = new java.util.IdentityHashMap<>();
    final Map<BrokerRegistration, BrokerRegistration> lastEqualBrokers = new java.util.IdentityHashMap<>();

    static <T> boolean sameAsLast(Map<T, T> equal, T mine, T theirs) {
        if (equal.size() > 4096) {
            equal.clear();  // bounded: the registrations replaced since are dropped
        }
        return equal.get(mine) == theirs;
    }

    void checkTopics(DriverState st, DriverIndexOracle.Sink out) {
        Map<Uuid, Object> topics = DriverIndexOracle.topics(st);
        Map<Uuid, TopicImage> imaged = image.topics().topicsById();
        for (Map.Entry<Uuid, Object> t : topics.entrySet()) {
            checkTopic(t.getKey(), t.getValue(), imaged.get(t.getKey()), null, out);
        }
        if (imaged.size() != topics.size()) {
            for (Map.Entry<Uuid, TopicImage> t : imaged.entrySet()) {
                if (!topics.containsKey(t.getKey())) {
                    out.report("topic", "topic " + t.getValue().name(), Arrays.asList("topic-extra", t.getKey()),
                        () -> "the image has topic " + t.getValue().name() + " (id " + t.getKey()
                            + "), which the controller does not");
                }
            }
        }
    }

    /** One topic: its name and partition count, and its partitions (only: all). */
    void checkTopic(Uuid id, Object info, TopicImage ti, java.util.Set<Integer> only, DriverIndexOracle.Sink out) {
        String name = name(info);
        Map<Integer, PartitionRegistration> parts = parts(info);
        if (ti == null || !name.equals(ti.name()) || ti.partitions().size() != parts.size()) {
            out.report("topic", "topic " + name, Arrays.asList("topic", id, ti == null ? null : ti.name(),
                ti == null ? -1 : ti.partitions().size()), () -> "the controller has topic " + name + " (id " + id + ", "
                + parts.size() + " partitions); the image " + (ti == null ? "has no topic of that id"
                : "names it " + ti.name() + " with " + ti.partitions().size() + " partitions"));
            if (ti == null) {
                return;
            }
        }
        Map<Integer, PartitionRegistration> imagedParts = ti.partitions();
        if (only == null) {
            for (Map.Entry<Integer, PartitionRegistration> p : parts.entrySet()) {
                checkPartition(id, p.getKey(), p.getValue(), imagedParts.get(p.getKey()), out);
            }
        } else {
            for (int p : only) {
                PartitionRegistration mine = parts.get(p);
                if (mine != null) {
                    checkPartition(id, p, mine, imagedParts.get(p), out);
                }
            }
        }
    }

    void checkPartition(Uuid id, int partition, PartitionRegistration mine, PartitionRegistration theirs,
                        DriverIndexOracle.Sink out) {
        if (theirs != null && sameAsLast(lastEqualParts, mine, theirs)) {
            return;
        }
        if (mine.equals(theirs)) {
            lastEqualParts.put(mine, theirs);
            return;
        }
        String where = names.partition(id, partition);
        String differs = theirs == null ? "partition" : firstDifference(mine, theirs);
        out.report(differs, where, Arrays.asList("partition", id, partition, theirs),
            () -> where + ": the controller holds " + show(mine) + "; the image " + (theirs == null
                ? "has no such partition" : "holds " + show(theirs)));
    }

    /** The topics the event's partition records named, and those partitions only (the event
     * replayed no TopicRecord or RemoveTopicRecord: DriverIndexScope says what this cannot
     * see, the full comparison runs as often as the index oracle's); the other reports of the
     * last comparison stand. */
    void checkTouched(DriverState st, DriverIndexOracle.Sink out) {
        java.util.Set<String> wheres = DriverIndexScope.wheres(st, names);
        List<Object[]> last = new ArrayList<>(lastTopics);
        lastTopics.clear();
        DriverIndexOracle.Sink rec = recording(out, lastTopics);
        for (Object[] r : last) {
            if (!wheres.contains((String) r[1])) {
                replay(List.<Object[]>of(r), rec);
            }
        }
        Map<Uuid, Object> topics = DriverIndexOracle.topics(st);
        for (Map.Entry<Uuid, java.util.Set<Integer>> t : st.touchedParts.entrySet()) {
            Object info = topics.get(t.getKey());
            if (info != null) {
                checkTopic(t.getKey(), info, image.topics().getTopic(t.getKey()), t.getValue(), rec);
            }
        }
    }

    static String firstDifference(PartitionRegistration a, PartitionRegistration b) {
        for (String f : PART_FIELDS) {
            Field field = FIELDS.get(f);
            if (field == null) {
                continue;
            }
            Object x = get(field, a);
            Object y = get(field, b);
            boolean same = x instanceof int[] ? Arrays.equals((int[]) x, (int[]) y)
                : x instanceof Object[] ? Arrays.equals((Object[]) x, (Object[]) y) : Objects.equals(x, y);
            if (!same) {
                return f;
            }
        }
        return "partition";
    }

    static String show(PartitionRegistration reg) {
        StringBuilder b = new StringBuilder("{");
        for (String f : PART_FIELDS) {
            Field field = FIELDS.get(f);
            if (field == null || "directories".equals(f)) {
                continue;
            }
            Object v = get(field, reg);
            b.append(b.length() > 1 ? ", " : "").append(f).append(' ')
                .append(v instanceof int[] ? Arrays.toString((int[]) v) : String.valueOf(v));
        }
        return b.append('}').toString();
    }

    @SuppressWarnings("unchecked")
    void checkBrokers(DriverState st, DriverIndexOracle.Sink out) {
        Map<Integer, BrokerRegistration> regs = (Map<Integer, BrokerRegistration>) get(REGISTRATIONS, st.clusterControl);
        Map<Integer, BrokerRegistration> imaged = image.cluster().brokers();
        for (Map.Entry<Integer, BrokerRegistration> r : regs.entrySet()) {
            BrokerRegistration mine = r.getValue();
            BrokerRegistration theirs = imaged.get(r.getKey());
            if (theirs != null && sameAsLast(lastEqualBrokers, mine, theirs)) {
                continue;
            }
            if (mine.equals(theirs)) {
                lastEqualBrokers.put(mine, theirs);
                continue;
            }
            String what = theirs == null ? "broker" : mine.epoch() != theirs.epoch() ? "broker.epoch"
                : mine.fenced() != theirs.fenced() ? "broker.fenced"
                : mine.inControlledShutdown() != theirs.inControlledShutdown() ? "broker.inControlledShutdown"
                : "broker";
            out.report(what, "broker " + r.getKey(), Arrays.asList("broker", r.getKey(), theirs),
                () -> "broker " + r.getKey() + ": the controller holds " + mine + "; the image "
                    + (theirs == null ? "has no such broker" : "holds " + theirs));
        }
        if (imaged.size() != regs.size()) {
            for (Integer id : imaged.keySet()) {
                if (!regs.containsKey(id)) {
                    out.report("broker", "broker " + id, Arrays.asList("broker-extra", id),
                        () -> "the image has broker " + id + ", which the controller has not registered");
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    void checkFeatures(DriverState st, DriverIndexOracle.Sink out) {
        if (FINALIZED == null) {
            return;
        }
        Map<String, Short> mine = new TreeMap<>((Map<String, Short>) get(FINALIZED, st.featureControl));
        mine.values().removeIf(v -> v == 0);
        Map<String, Short> theirs = new TreeMap<>(image.features().finalizedVersions());
        theirs.values().removeIf(v -> v == 0);
        theirs.remove("metadata.version");
        mine.remove("metadata.version");
        mine.remove("kraft.version");  // 4.x FeatureControlManager skips it (KAFKA-18979)
        theirs.remove("kraft.version");
        if (!mine.equals(theirs)) {
            out.report("features", "event", Arrays.asList("features", mine, theirs),
                () -> "finalized feature levels: the controller " + mine + ", the image " + theirs);
        }
        if (MV != null) {
            Object a = unwrapOptional(invoke(get(MV, st.featureControl), "get"));
            Object b = unwrapOptional(invoke(image.features(), "metadataVersion"));
            if (!Objects.equals(a, b)) {
                out.report("metadataVersion", "event", Arrays.asList("mv", a, b),
                    () -> "metadata.version: the controller " + a + ", the image " + b);
            }
        }
    }

    static Object unwrapOptional(Object o) {
        return o instanceof Optional ? ((Optional<?>) o).orElse(null) : o;
    }
}
