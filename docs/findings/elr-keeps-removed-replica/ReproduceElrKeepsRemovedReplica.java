/*
 * A reproduction without any harness: KIP-966 says that once a reassignment completes, the
 * ELR holds only replicas of the final replica set. This program builds one partition
 * registration, asks the build's own org.apache.kafka.controller.PartitionChangeBuilder
 * (kafka-metadata) for the change the controller would make, prints the record, and checks
 * that every ELR member of the resulting partition is one of its replicas.
 *
 * Needs only the JDK and the jars of the Kafka build under test (kafka-metadata,
 * kafka-server-common, kafka-clients and what they need: a distribution's libs/ directory):
 *
 *   javac -proc:none -cp 'KAFKA/libs/*' -d classes ReproduceElrKeepsRemovedReplica.java
 *   java -cp "classes:KAFKA/libs/*" ReproduceElrKeepsRemovedReplica [CASE] [--unstable]
 *
 * CASE (default "complete"):
 *   complete               replicas [1, 2, 3, 4], adding [4], removing [2], ISR [1, 2],
 *                          ELR [3], min ISR 3, leader 1; the leader asks for ISR [1, 2, 4]
 *                          (broker 4 caught up), which completes the reassignment
 *                          [1, 2, 3] -> [1, 3, 4].
 *   cancel                 the same registration; the reassignment is cancelled instead
 *                          (what the controller's cancel path asks for: target replicas
 *                          = replicas - adding = [1, 2, 3], target ISR = ISR - adding,
 *                          no adding, no removing).
 *   cancel-after-catch-up  replicas [1, 2, 3, 4, 5], adding [4, 5], removing [2, 3],
 *                          ISR [1, 2], ELR [4], min ISR 3: broker 4 had caught up (ISR
 *                          [1, 2, 4]) and dropped out again, below min ISR, so it is in the
 *                          ELR; then the reassignment is cancelled (target replicas [1, 2, 3]).
 *   shrink-below-min-isr   replicas [1, 2, 3, 4], ISR [1, 2, 3, 4], ELR [], min ISR 3; a
 *                          reassignment to [1, 2] is submitted (what the controller's
 *                          reassignment path asks for: target replicas [1, 2, 3, 4], removing
 *                          [3, 4]). It completes at once, leaving ISR [1, 2], below min ISR
 *                          (a topic whose min ISR exceeds its new replication factor).
 *
 * --unstable: on 3.7-3.9, whose ELR code runs only on a metadata.version that is not
 * production, run the case on that metadata.version anyway (not a production setup).
 *
 * Exit status: 0 every ELR member is a replica; 1 the ELR holds a non-replica (the bug);
 * 2 usage error or unexpected failure; 3 UNSUPPORTED (this build has no ELR, or none a
 * production cluster can turn on), with the reason.
 *
 * The PartitionChangeBuilder API moved between releases (3.6: no ELR; 3.7-4.2: six-argument
 * constructor and setEligibleLeaderReplicasEnabled; 4.3: the ELR switch is a constructor
 * argument), so the parts that differ are reached by reflection; one source compiles
 * against every build from 3.6 on.
 */

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.controller.PartitionChangeBuilder;
import org.apache.kafka.metadata.LeaderRecoveryState;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.IntPredicate;

public class ReproduceElrKeepsRemovedReplica {
    static final int OK = 0;
    static final int BUG = 1;
    static final int USAGE = 2;
    static final int UNSUPPORTED = 3;

    static final Uuid TOPIC_ID = Uuid.fromString("FbrrdcfiR-KC2CPSTHaJrg");
    static final int LEADER = 1;
    static final int MIN_ISR = 3;

    /** One registration and the change asked of PartitionChangeBuilder. */
    static final class Case {
        final String name;
        final String story;
        final int[] replicas;
        final int[] adding;
        final int[] removing;
        final int[] isr;
        final int[] elr;
        final String change;  // "isr": the leader asks for ISR target; "cancel"; "reassign" to target
        final List<Integer> target;

        Case(String name, String story, int[] replicas, int[] adding, int[] removing, int[] isr,
             int[] elr, String change, List<Integer> target) {
            this.name = name;
            this.story = story;
            this.replicas = replicas;
            this.adding = adding;
            this.removing = removing;
            this.isr = isr;
            this.elr = elr;
            this.change = change;
            this.target = target;
        }
    }

    static Case namedCase(String name) {
        switch (name) {
            case "complete":
                return new Case(name, "the leader asks for ISR [1, 2, 4] (broker 4 caught up): "
                        + "that completes the reassignment [1, 2, 3] -> [1, 3, 4]",
                    new int[] {1, 2, 3, 4}, new int[] {4}, new int[] {2},
                    new int[] {1, 2}, new int[] {3}, "isr", List.of(1, 2, 4));
            case "cancel":
                return new Case(name, "the reassignment [1, 2, 3] -> [1, 3, 4] is cancelled "
                        + "before broker 4 caught up",
                    new int[] {1, 2, 3, 4}, new int[] {4}, new int[] {2},
                    new int[] {1, 2}, new int[] {3}, "cancel", null);
            case "cancel-after-catch-up":
                return new Case(name, "the reassignment [1, 2, 3] -> [1, 4, 5] is cancelled "
                        + "after broker 4 caught up and fell out below min ISR (so 4 is in the ELR)",
                    new int[] {1, 2, 3, 4, 5}, new int[] {4, 5}, new int[] {2, 3},
                    new int[] {1, 2}, new int[] {4}, "cancel", null);
            case "shrink-below-min-isr":
                return new Case(name, "a reassignment [1, 2, 3, 4] -> [1, 2] is submitted with the "
                        + "ISR full; the new replication factor 2 is below min ISR 3",
                    new int[] {1, 2, 3, 4}, new int[] {}, new int[] {},
                    new int[] {1, 2, 3, 4}, new int[] {}, "reassign", List.of(1, 2));
            default:
                return null;
        }
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run(args);
        } catch (Throwable t) {
            System.out.println("ERROR: " + t);
            t.printStackTrace();
            code = USAGE;
        }
        System.out.flush();
        System.exit(code);
    }

    static int run(String[] args) throws Exception {
        String caseName = "complete";
        boolean unstable = false;
        for (String arg : args) {
            if (arg.equals("--unstable")) {
                unstable = true;
            } else if (arg.startsWith("-")) {
                System.out.println("usage: ReproduceElrKeepsRemovedReplica "
                    + "[complete|cancel|cancel-after-catch-up|shrink-below-min-isr] [--unstable]");
                return USAGE;
            } else {
                caseName = arg;
            }
        }
        Case c = namedCase(caseName);
        if (c == null) {
            System.out.println("unknown case " + caseName
                + "; known: complete, cancel, cancel-after-catch-up, shrink-below-min-isr");
            return USAGE;
        }
        String kafka = "Kafka " + AppInfoParser.getVersion();

        // 3.6 and older: no ELR in the partition registration at all.
        if (!hasField(PartitionRegistration.class, "elr")) {
            System.out.println("UNSUPPORTED: " + kafka + " has no ELR: PartitionRegistration has "
                + "no elr field (KIP-966's ELR code arrived in 3.7)");
            return UNSUPPORTED;
        }

        // Which metadata.version to run on, and whether a production cluster can have ELR.
        MetadataVersion mv = latestProductionMetadataVersion();
        String setup;
        Class<?> elrFeature = classOrNull("org.apache.kafka.server.common.EligibleLeaderReplicasVersion");
        if (elrFeature != null) {
            // 4.0+: ELR is the feature eligible.leader.replicas.version, on at level 1.
            Object latest = elrFeature.getField("LATEST_PRODUCTION").get(null);
            short level = (Short) call(latest, "featureLevel");
            if (level < 1 || !elrSupported(mv)) {
                System.out.println("UNSUPPORTED: " + kafka + ": eligible.leader.replicas.version "
                    + "has no production level that enables ELR (latest production level " + level
                    + ", metadata.version " + mv.version() + ")");
                return UNSUPPORTED;
            }
            setup = "metadata.version " + mv.version() + " and eligible.leader.replicas.version="
                + level + ", both production levels of this build";
        } else {
            // 3.7-3.9: ELR only on a metadata.version that isElrSupported(), none of them production.
            if (!elrSupported(mv)) {
                MetadataVersion first = null;
                for (MetadataVersion v : MetadataVersion.values()) {
                    if (elrSupported(v)) {
                        first = v;
                        break;
                    }
                }
                String reason = kafka + " has the ELR code in PartitionChangeBuilder, but the "
                    + "controller runs it only on metadata.version "
                    + (first == null ? "(none)" : first.version()) + " or later, which is not a "
                    + "production metadata.version of this build (latest production: "
                    + mv.version() + "), so no production cluster of it keeps an ELR";
                if (!unstable || first == null) {
                    System.out.println("UNSUPPORTED: " + reason
                        + (first == null ? "" : "; pass --unstable to run the case on "
                            + first.version() + " anyway"));
                    return UNSUPPORTED;
                }
                System.out.println("NOTE: " + reason + ". Running on " + first.version()
                    + " as asked (--unstable): NOT a production configuration.");
                mv = first;
                setup = "metadata.version " + mv.version() + " (not production), ELR enabled";
            } else {
                setup = "metadata.version " + mv.version() + ", ELR enabled";
            }
        }

        PartitionRegistration before = registration(c);
        PartitionChangeBuilder builder = newBuilder(before, mv, r -> true);
        String change;
        if (c.change.equals("cancel")) {
            // As the controller's cancel path does: the original replicas back (replicas minus
            // adding), the ISR without the adding replicas, no reassignment left.
            List<Integer> replicas = minus(c.replicas, c.adding);
            List<Integer> isr = minus(c.isr, c.adding);
            builder.setTargetIsr(isr)
                .setTargetReplicas(replicas)
                .setTargetRemoving(List.of())
                .setTargetAdding(List.of());
            change = "setTargetIsr(" + isr + ").setTargetReplicas(" + replicas
                + ").setTargetRemoving([]).setTargetAdding([])";
        } else if (c.change.equals("reassign")) {
            // As the controller's reassignment path does: the target replicas followed by
            // the ones it removes, and which replicas are being added and removed.
            List<Integer> removing = minus(c.replicas, toArray(c.target));
            List<Integer> adding = minus(toArray(c.target), c.replicas);
            List<Integer> replicas = new ArrayList<>(c.target);
            replicas.addAll(removing);
            builder.setTargetReplicas(replicas)
                .setTargetRemoving(removing)
                .setTargetAdding(adding);
            change = "setTargetReplicas(" + replicas + ").setTargetRemoving(" + removing
                + ").setTargetAdding(" + adding + ")";
        } else {
            builder.setTargetIsr(c.target);
            change = "setTargetIsr(" + c.target + ")";
        }

        System.out.println(kafka + ": org.apache.kafka.controller.PartitionChangeBuilder on " + setup);
        System.out.println("case " + c.name + ": " + c.story);
        System.out.println("  min ISR " + MIN_ISR + ", every broker alive");
        System.out.println("  before: " + describe(before));
        System.out.println("  change: " + change);
        Optional<ApiMessageAndVersion> built = builder.build();
        PartitionRegistration after = before;
        if (built.isPresent()) {
            PartitionChangeRecord record = (PartitionChangeRecord) built.get().message();
            System.out.println("  record: " + record + " (version " + built.get().version() + ")");
            after = before.merge(record);
        } else {
            System.out.println("  record: none (no change)");
        }
        System.out.println("  after:  " + describe(after));

        int[] elr = intArrayField(after, "elr");
        List<Integer> outside = new ArrayList<>();
        for (int r : elr) {
            if (!contains(after.replicas, r)) outside.add(r);
        }
        List<Integer> lastKnownOutside = new ArrayList<>();
        for (int r : intArrayField(after, "lastKnownElr")) {
            if (!contains(after.replicas, r)) lastKnownOutside.add(r);
        }
        if (!lastKnownOutside.isEmpty()) {
            System.out.println("  note: LastKnownELR holds non-replica(s) " + lastKnownOutside);
        }
        if (!outside.isEmpty()) {
            System.out.println("BUG: ELR " + Arrays.toString(elr) + " holds non-replica(s) " + outside
                + " (replicas " + Arrays.toString(after.replicas) + "); KIP-966: the ELR holds "
                + "only replicas of the partition (once a reassignment completes, of the final "
                + "replica set)");
            return BUG;
        }
        System.out.println("OK: ELR " + Arrays.toString(elr) + " holds only replicas (replicas "
            + Arrays.toString(after.replicas) + ")");
        return OK;
    }

    static PartitionRegistration registration(Case c) throws Exception {
        PartitionRegistration.Builder b = new PartitionRegistration.Builder()
            .setReplicas(c.replicas)
            .setIsr(c.isr)
            .setRemovingReplicas(c.removing)
            .setAddingReplicas(c.adding)
            .setLeader(LEADER)
            .setLeaderRecoveryState(LeaderRecoveryState.RECOVERED)
            .setLeaderEpoch(10)
            .setPartitionEpoch(20);
        call(b, "setElr", (Object) c.elr);
        call(b, "setLastKnownElr", (Object) new int[0]);
        if (hasMethod(PartitionRegistration.Builder.class, "setDirectories")) {
            Uuid[] dirs = new Uuid[c.replicas.length];
            Arrays.fill(dirs, unassignedDirectory());
            call(b, "setDirectories", (Object) dirs);
        }
        return b.build();
    }

    /** new PartitionChangeBuilder(...) with ELR on: the constructor argument (4.3+) or the setter. */
    static PartitionChangeBuilder newBuilder(PartitionRegistration partition, MetadataVersion mv,
                                             IntPredicate acceptable) throws Exception {
        PartitionChangeBuilder builder = null;
        for (Constructor<?> ctor : PartitionChangeBuilder.class.getConstructors()) {
            Class<?>[] params = ctor.getParameterTypes();
            if (params.length == 7 && params[6] == boolean.class) {
                builder = (PartitionChangeBuilder) ctor.newInstance(partition, TOPIC_ID, 0, acceptable,
                    mv, MIN_ISR, true);
                break;
            } else if (params.length == 6 && params[5] == int.class) {
                builder = (PartitionChangeBuilder) ctor.newInstance(partition, TOPIC_ID, 0, acceptable,
                    mv, MIN_ISR);
                call(builder, "setEligibleLeaderReplicasEnabled", true);
                break;
            }
        }
        if (builder == null) {
            throw new IllegalStateException("no PartitionChangeBuilder constructor taking a min ISR: "
                + Arrays.toString(PartitionChangeBuilder.class.getConstructors()));
        }
        Class<?> provider = classOrNull("org.apache.kafka.metadata.placement.DefaultDirProvider");
        if (provider != null) {
            Uuid unassigned = unassignedDirectory();
            Object p = Proxy.newProxyInstance(provider.getClassLoader(), new Class<?>[] {provider},
                (proxy, method, margs) -> {
                    switch (method.getName()) {
                        case "defaultDir": return unassigned;
                        case "hashCode": return System.identityHashCode(proxy);
                        case "equals": return proxy == margs[0];
                        case "toString": return "DefaultDirProvider(UNASSIGNED)";
                        default: throw new UnsupportedOperationException(method.getName());
                    }
                });
            call(builder, "setDefaultDirProvider", p);
        }
        return builder;
    }

    static MetadataVersion latestProductionMetadataVersion() throws Exception {
        try {
            return (MetadataVersion) MetadataVersion.class.getMethod("latestProduction").invoke(null);
        } catch (NoSuchMethodException e) {
            return (MetadataVersion) MetadataVersion.class.getField("LATEST_PRODUCTION").get(null);
        }
    }

    /** mv.isElrSupported() (3.7+; absent in 3.6). */
    static boolean elrSupported(MetadataVersion mv) throws Exception {
        return (Boolean) call(mv, "isElrSupported");
    }

    static Uuid unassignedDirectory() throws Exception {
        Class<?> dirs = classOrNull("org.apache.kafka.common.DirectoryId");
        return dirs == null ? Uuid.ZERO_UUID : (Uuid) dirs.getField("UNASSIGNED").get(null);
    }

    static String describe(PartitionRegistration p) throws Exception {
        return "replicas=" + Arrays.toString(p.replicas)
            + " adding=" + Arrays.toString(p.addingReplicas)
            + " removing=" + Arrays.toString(p.removingReplicas)
            + " leader=" + p.leader
            + " leaderEpoch=" + p.leaderEpoch
            + " isr=" + Arrays.toString(p.isr)
            + " elr=" + Arrays.toString(intArrayField(p, "elr"))
            + " lastKnownElr=" + Arrays.toString(intArrayField(p, "lastKnownElr"));
    }

    static List<Integer> minus(int[] from, int[] taken) {
        List<Integer> out = new ArrayList<>();
        for (int r : from) {
            if (!contains(taken, r)) out.add(r);
        }
        return out;
    }

    static int[] toArray(List<Integer> values) {
        return values.stream().mapToInt(Integer::intValue).toArray();
    }

    static boolean contains(int[] values, int value) {
        for (int v : values) {
            if (v == value) return true;
        }
        return false;
    }

    static Class<?> classOrNull(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    static boolean hasField(Class<?> type, String name) {
        try {
            type.getField(name);
            return true;
        } catch (NoSuchFieldException e) {
            return false;
        }
    }

    static boolean hasMethod(Class<?> type, String name) {
        for (Method m : type.getMethods()) {
            if (m.getName().equals(name)) return true;
        }
        return false;
    }

    static int[] intArrayField(Object target, String name) throws Exception {
        Field f = target.getClass().getField(name);
        return (int[]) f.get(target);
    }

    /** target.name(args): the public method of that name taking args.length arguments. */
    static Object call(Object target, String name, Object... args) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                try {
                    return m.invoke(target, args);
                } catch (InvocationTargetException e) {
                    Throwable cause = e.getCause();
                    throw cause instanceof Exception ? (Exception) cause : e;
                }
            }
        }
        throw new NoSuchMethodException(target.getClass().getName() + "." + name + " with "
            + args.length + " argument(s)");
    }
}
