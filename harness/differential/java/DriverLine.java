/*
 * What differs between Kafka release lines, for the driver: one adapter per line that
 * changed something the driver calls, each extending the one before and overriding only
 * what its line changed (its header says what and where in Kafka's code). Chosen by the
 * build's version (major.minor, as its kafka-clients jar says):
 *
 *   3.6  DriverLine36  the oldest line the driver runs: no ELR
 *   3.7  DriverLine37  ELR in PartitionRegistration, behind a controller config; clean
 *                      shutdown in the registration request; LATEST_PRODUCTION
 *   3.8  DriverLine38  the controller handles an unclean shutdown
 *   3.9  DriverLine39  periodic unclean election; registerBroker without the request version
 *   4.0  DriverLine40  ELR as the feature eligible.leader.replicas.version; shutdown handler
 *                      for clean and unclean; heartbeat tracking outside the event queue
 *   4.1  DriverLine41  updateFeatures with the controller's claimed epoch
 *   4.2  (4.1's)       nothing the driver calls changed
 *   4.3  DriverLine43  createTopics and incrementalAlterConfigs with "forwarded"
 *   4.4  (4.3's)       LogContext and AppInfoParser moved to ...common.utils.internals: not
 *                      a difference of calls but of imports (DriverKafkaUtils, driver.py)
 *
 * Cited from the sources at the release tags and the builds' jars (javap of 3.6.2, 3.7.2,
 * 3.8.1, 3.9.1, 3.9.2, 4.0.2, 4.1.2, 4.2.2, 4.3.1, 4.4.0). The members a line adds are
 * reached by reflection (by name and arity), so one source compiles against every build.
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

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

abstract class DriverLine {
    /** The adapter of a version's release line: the newest line at or below it (the newest
     * of all for a version that cannot be read). */
    static DriverLine forVersion(String version) {
        Matcher m = Pattern.compile("^(\\d+)\\.(\\d+)").matcher(version == null ? "" : version);
        if (!m.find()) {
            System.err.println("differential driver: cannot read the release line of Kafka version "
                + version + "; taking the newest the driver knows (4.3)");
            return new DriverLine43();
        }
        int line = 100 * Integer.parseInt(m.group(1)) + Integer.parseInt(m.group(2));
        if (line >= 403) {
            return new DriverLine43();
        }
        if (line >= 401) {
            return new DriverLine41();
        }
        if (line >= 400) {
            return new DriverLine40();
        }
        if (line >= 309) {
            return new DriverLine39();
        }
        if (line >= 308) {
            return new DriverLine38();
        }
        if (line >= 307) {
            return new DriverLine37();
        }
        return new DriverLine36();
    }

    /** The line's name, e.g. "3.6". */
    abstract String name();

    // ---- metadata.version and ELR ----

    /** The latest production metadata.version. */
    abstract MetadataVersion latestProduction();

    final boolean isProduction(MetadataVersion mv) {
        return mv.featureLevel() <= latestProduction().featureLevel();
    }

    /** How this build turns ELR on or off. */
    static final class ElrPlan {
        String mode;
        boolean controllerConfig;  // 3.7-3.9: eligible.leader.replicas.enable
        int featureLevel = -1;  // 4.0+: eligible.leader.replicas.version at bootstrap
        final List<String> notes = new ArrayList<>();
    }

    /** The ELR plan of a session on mv (wanted: null for the build's default), or
     * Unsupported with the reason. */
    abstract ElrPlan planElr(MetadataVersion mv, Boolean wanted);

    /** Whether ELR runs now. */
    abstract boolean elrEnabled(DriverState st);

    /** A partition's ELR and last known ELR (empty where the line has none). */
    abstract int[] elr(PartitionRegistration reg);

    abstract int[] lastKnownElr(PartitionRegistration reg);

    // ---- building the managers (DriverSetup) ----

    /** The features this controller supports, as ControllerServer gives them (unstable
     * ones too when the session runs on a metadata.version that is not production). */
    abstract QuorumFeatures quorumFeatures(boolean unstable);

    /** What QuorumController passes ClusterControlManager as its shutdown handler. */
    abstract void setShutdownHandler(ClusterControlManager.Builder builder, DriverState st);

    abstract void configureConfigurationBuilder(ConfigurationControlManager.Builder builder,
                                                FeatureControlManager featureControl);

    abstract void configureReplicationBuilder(ReplicationControlManager.Builder builder,
                                              boolean elrControllerConfig);

    // ---- brokers ----

    /** A log directory in the registration request, where it has them. */
    abstract void setLogDirs(BrokerRegistrationRequestData request, DriverState st, int id);

    /** PreviousBrokerEpoch in the registration request; false where it has none. */
    abstract boolean setPreviousBrokerEpoch(BrokerRegistrationRequestData request, long epoch);

    /** What a registration's answer cannot show on this line (clean: after a clean shutdown). */
    abstract void registrationNotes(boolean clean, List<String> notes);

    abstract ControllerResult<?> registerBroker(ClusterControlManager cluster,
        BrokerRegistrationRequestData request, long offset, FinalizedControllerFeatures finalized,
        short apiVersion);

    /** QuorumController's heartbeat tracking before the heartbeat's event, where it has one. */
    abstract void trackHeartbeat(DriverState st, int id, long epoch);

    // ---- topics, configs, features ----

    /** CreateTopicsRequestData's config class (its name's spelling changed). */
    abstract Class<?> createTopicConfigClass();

    abstract ControllerResult<CreateTopicsResponseData> createTopics(ReplicationControlManager replication,
        ControllerRequestContext context, CreateTopicsRequestData request, Set<String> names);

    abstract ControllerResult<Map<ConfigResource, ApiError>> incrementalAlterConfigs(
        ConfigurationControlManager config, Map<ConfigResource, Map<String,
        Map.Entry<org.apache.kafka.clients.admin.AlterConfigOp.OpType, String>>> request);

    /** UpdateFeatures of these features, as QuorumController.updateFeatures calls the build. */
    abstract ControllerResult<?> updateFeatures(DriverState st, Map<String, Short> updates,
        Map<String, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType> types);

    /** The error updateFeatures answered for that feature (null: none). */
    abstract ApiError updateFeaturesError(Object response, String name);

    // ---- periodic tasks ----

    /** Why this line has no periodic unclean election, or null when it has one. */
    abstract String noPeriodicUncleanElection();

    abstract ControllerResult<?> maybeElectUncleanLeaders(ReplicationControlManager replication);
}
