"""The branches a `kafka-chaos diff --coverage` campaign never took, each named (class,
method, source line) and explained (issue 44 item 4): reads the run's JaCoCo XML
(``coverage/jacoco.xml``) and the build's controller sources, prints a Markdown list.

    /work/venv/bin/python bench/diff_coverage_list.py RUN_DIR SOURCE_DIR [BUILD]

SOURCE_DIR holds ``<Class>.java`` of ``org.apache.kafka.controller`` at the build's lines
(4.3.1: kafka-metadata-4.3.1-sources.jar; 4.4.0: the same files, ReplicationControlManager
with docs/findings/tools/reconstruct/4.4.0/ReplicationControlManager.patch applied and
ClusterControlManager two lines lower (4.4.0's two more import lines; the other classes'
line tables are 4.3.1's, compared with ``javap -l``)).

Each line's explanation is the first of ``REASONS`` whose class, method and source-text
pattern match it: why the driver's requests do not take that branch (a request form it does
not send, a record type it does not generate, a setting it does not run, a defensive check
the replay never meets, a log level), or "reachable, not reached in this run" with what would.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.differential.coverage import PACKAGE, WHOLE

LOG = "log level: the branch builds a log line only at DEBUG/TRACE (or INFO off); the " \
      "older-MV sessions log ReplicationControlManager at DEBUG, the others at WARN; " \
      "the other classes always at WARN"
DEFENSIVE = "defensive: a state the controller's own replay never creates (an index or " \
            "map entry for a topic, partition or broker that is gone); reached only after " \
            "a bug (e.g. the stale indexes of docs/findings)"
NOT_REACHED = "reachable, not reached in this run (random generator; other seeds take it)"

#: (class, method regex, source-text regex or "", reason); first match wins.
REASONS: list[tuple[str, str, str, str]] = [
    # ---- every class ----
    ("", "", r"log\.is(Debug|Trace|Info)Enabled|isTraceEnabled", LOG),
    ("", "", r"directoryIsOffline \? \"OFFLINE\"", LOG),
    # ---- PartitionChangeBuilder ----
    ("PartitionChangeBuilder", "canElectLastKnownLeader|maybeUpdateLastKnownLeader|"
     "maybeUpdateRecordElr", r"useLastKnownLeaderInBalancedRecovery",
     "setting: useLastKnownLeaderInBalancedRecovery is always true in the controller (only "
     "Kafka's unit tests call setUseLastKnownLeaderInBalancedRecovery(false))"),
    ("PartitionChangeBuilder", "maybeUpdateRecordElr", r"targetLastKnownElr\.equals",
     "setting: only after `if (useLastKnownLeaderInBalancedRecovery) return;` (always "
     "true in the controller), so never run"),
    ("PartitionChangeBuilder", "triggerLeaderEpochBumpForIsrShrinkIfNeeded", "",
     "metadata.version: the leader-epoch bump on ISR shrink runs before 3.6-IV0 only "
     "(MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink, KAFKA-15021); the model does "
     "not know the bump, so no session runs below 3.6-IV0 (the older-MV sessions run 3.6-IV2)"),
    ("PartitionChangeBuilder", "setAssignmentChanges", r"targetReplicas\.isEmpty",
     "dead: a partition always has replicas (validateManualPartitionAssignment refuses an "
     "empty assignment before a builder is made)"),
    ("PartitionChangeBuilder", "setAssignmentChanges", r"isDirectoryAssignmentSupported",
     "metadata.version: false only below 3.7-IV2 (the older-MV sessions; not reached when "
     "the run had none)"),
    ("PartitionChangeBuilder", "", "", NOT_REACHED + ": a rarer builder path (a record "
     "changing only the adding replicas or LastKnownELR, a leaderless change with "
     "LastKnownELR set, a preferred election electing a later replica or the last known "
     "leader), which the sequences of harness/differential/workload_paths.py lead to"),
    # ---- PartitionReassignmentReplicas ----
    ("PartitionReassignmentReplicas", "equals", "",
     "not called: the controller never compares two of these objects"),
    ("PartitionReassignmentReplicas", "maybeCompleteReassignment", r"isEmpty",
     "dead: every replica being removed, which a reassignment cannot ask (its target is "
     "never empty)"),
    ("PartitionReassignmentReplicas", "", "", NOT_REACHED),
    # ---- ReplicationControlManager ----
    ("ReplicationControlManager", "replay", r"existingUuid|hasCollisionChars|topicNames == "
     r"null|colliding", "topic names with collision characters ('.', '_'): the lane topics "
     "(k<k>t<j>) have none; a TopicRecord for an existing name is never replayed"),
    ("ReplicationControlManager", "replay|replayClearTopicElrs|replayClearAllElrs",
     r"== null|prevPartInfo|prevPartitionInfo|equals\(prevPartInfo\)", DEFENSIVE +
     " (a PartitionRecord for an existing partition, a change or removal of an unknown "
     "topic: the controller writes none)"),
    ("ReplicationControlManager", "lambda\\$createTopics\\$1", r"configResult", "a topic "
     "config the config schema refuses: the driver's schema accepts any value of a known "
     "name (no ControllerConfigurationValidator, README 'Not run')"),
    ("ReplicationControlManager", "lambda\\$createTopic\\$2|createTopic",
     r"authorizedToReturnConfigs|isSensitive",
     "request context: the driver's CreateTopics is always authorized to describe configs, "
     "and no topic config is sensitive"),
    ("ReplicationControlManager", "lambda\\$createTopic\\$1", r"replicationFactor\(\) == -1",
     "placement: a default replication factor is placed across every lane's brokers (the "
     "placer), which the lanes avoid (workload_more: CreateTopics by count is never placed)"),
    ("ReplicationControlManager", "lambda\\$createTopic\\$1|createPartitions",
     r"isr\.isEmpty", "an assignment whose every replica is fenced: not generated (the "
     "generator assigns lane brokers whatever their state; not reached in this run)"),
    ("ReplicationControlManager", "maybeCheckCreateTopicPolicy", "",
     "setting: no CreateTopicPolicy (create.topic.policy.class.name) is configured"),
    ("ReplicationControlManager", "validateNewTopicNames", r"hasCollisionChars|colliding|"
     r"topicErrors\.containsKey", "request form: one topic per CreateTopics, names without "
     "collision characters"),
    ("ReplicationControlManager", "computeConfigChanges", "", "request form: CreateTopics "
     "configs with a null value (a DELETE at creation) are not generated"),
    ("ReplicationControlManager", "electLeader|alterPartitionReassignment|createPartitions|"
     "listReassigningTopic", r"topicInfo == null", DEFENSIVE + " (a topic id the name "
     "index gives but the topic map lacks; the unknown name itself is refused one test "
     "before)"),
    ("ReplicationControlManager", "findTopicIds|findTopicNames|findAllTopicIds", "",
     NOT_REACHED + " (findTopics asks a null name, an unknown id and the zero id)"),
    ("ReplicationControlManager", "deleteTopics|deleteTopic", "", "DeleteTopics of an "
     "unknown id reaches these (byId); the success branch of a failed lookup's log text "
     "needs a failure other than UNKNOWN_TOPIC_ID: not generated"),
    ("ReplicationControlManager", "getPartition", "", "not called with an unknown topic: "
     "the driver reads partitions of topics it knows"),
    ("ReplicationControlManager", "alterPartition", r"requestVersion < 3",
     "request version: AlterPartition is sent at the latest version (topic ids); versions "
     "0-1 name topics"),
    ("ReplicationControlManager", "alterPartition", r"topicId == null|partitionData",
     NOT_REACHED + " (AlterPartition by an unknown or zero topic id, weight 0.03)"),
    ("ReplicationControlManager", "validateTotalNumberOfPartitions", "",
     "request forms: CreateTopics / CreatePartitions counts over 10,000 (weights 0.03-0.05); "
     "several topics in one request are not generated"),
    ("ReplicationControlManager", "validateAlterPartitionData", r"partition == null",
     "the driver reads the partition before it asks (an unknown partition index is refused "
     "by the driver as UNKNOWN_TOPIC_OR_PARTITION, not by this check)"),
    ("ReplicationControlManager", "validateAlterPartitionData", r"validateIsr",
     "request form: an ISR with a broker twice or outside the replicas (the repair keeps "
     "ISRs within the replicas)"),
    ("ReplicationControlManager", "ineligibleReplicasForIsr", "", NOT_REACHED +
     " (an ISR member unregistered, or with a stale broker epoch: isrBrokerEpochs)"),
    ("ReplicationControlManager", "handleBrokerFenced|unregisterBroker|"
     "handleBrokerInControlledShutdown", r"== null|inControlledShutdown",
     "defensive or already in controlled shutdown: a second controlled-shutdown heartbeat "
     "is answered from the heartbeat manager before this runs"),
    ("ReplicationControlManager", "handleDirectoriesOffline|handleDirectoriesCordoned|"
     "processBrokerHeartbeat", r"parts == null|cordonedDirsChanged|isDirectoryAssignment|"
     r"isCordonedLogDirs|switch", NOT_REACHED + " (an offline directory holding "
     "partitions; an unchanged cordoned list; the older-MV session; the heartbeat's "
     "SHUTDOWN_NOW transition from a fenced broker)"),
    ("ReplicationControlManager", "electLeaders|electLeader", "", NOT_REACHED +
     " (ElectLeaders of an unknown topic or partition index)"),
    ("ReplicationControlManager", "maybeFenceOneStaleBroker", r"epoch\(\) != epoch",
     "a tracked session of an older incarnation expiring after a new one registered: the "
     "driver's registrations wait for the old session to expire (fence)"),
    ("ReplicationControlManager", "maybeBalancePartitionLeaders|maybeElectUncleanLeaders|"
     "maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader|"
     "maybeTriggerUncleanLeaderElectionForLeaderlessPartitions",
     r"maxElections|records\.size\(\)", "scale: needs more than maxElectionsPerImbalance "
     "(1,000) elections in one pass; a session holds at most ~100 partitions"),
    ("ReplicationControlManager", "maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader",
     r"== null", DEFENSIVE + " (imbalancedPartitions is cleaned at topic deletion)"),
    ("ReplicationControlManager", "createPartitions", r"assignments\(\) != null|"
     r"iterator\.hasNext|Short\.MAX_VALUE", "placement: CreatePartitions without an "
     "assignment is placed across every lane's brokers, which the lanes avoid; a "
     "replication factor over 32,767 cannot be asked"),
    ("ReplicationControlManager", "createPartitions", "", NOT_REACHED +
     " (CreatePartitions of a deleted topic, a count below the current one, a wrong "
     "number of replica lists)"),
    ("ReplicationControlManager", "validateManualPartitionAssignment",
     r"hasUncordonedDirs", "a cordoned broker in an assignment: cordoned directories are "
     "uncordoned by the lane's next event, before any assignment (the model does not know "
     "them)"),
    ("ReplicationControlManager", "validateManualPartitionAssignment", "", NOT_REACHED +
     " (an empty assignment; a broker twice)"),
    ("ReplicationControlManager", "lambda\\$generateLeaderAndIsrUpdates\\$0|"
     "generateLeaderAndIsrUpdates", r"partition == null", DEFENSIVE),
    ("ReplicationControlManager", "alterPartitionReassignment|cancelPartitionReassignment|"
     "listReassigningTopic|getOngoingPartitionReassignment", "", NOT_REACHED +
     " (a reassignment of an unknown topic or partition; a cancel with none running; a "
     "listed topic deleted meanwhile is defensive)"),
    ("ReplicationControlManager", "handleAssignReplicasToDirs", r"brokerRegistration == null",
     "dead: checkBrokerEpoch refuses an unregistered broker first"),
    ("ReplicationControlManager", "handleAssignReplicasToDirs", "", NOT_REACHED +
     " (AssignReplicasToDirs in the older-MV session, of a deleted topic)"),
    ("ReplicationControlManager", "updatePartitionInfo", r"validationSet",
     DEFENSIVE + " (an ISR and ELR that overlap)"),
    ("ReplicationControlManager", "", "", NOT_REACHED),
    # ---- ClusterControlManager ----
    ("ClusterControlManager", "registerController|unregisterController|"
     "controllerSupportedFeatures|replay", r"ControllerRegistration|isControllerRegistration|"
     r"prevRegistration == null \? \"\" :", "not generated: controller registrations "
     "(KIP-919 RegisterControllerRecord, ControllerRegistrationRequest); the driver "
     "registers brokers only"),
    ("ClusterControlManager", "registerController|unregisterController|"
     "controllerSupportedFeatures", "", "not generated: controller registrations (KIP-919)"),
    ("ClusterControlManager", "", r"heartbeatManager == null|heartbeatManager != null|"
     r"manager == null", "inactive controller: the heartbeat manager exists only while the "
     "controller is active; the driver's is active from the start (a standby replaying "
     "records is not run)"),
    ("ClusterControlManager", "", r"readyBrokersFuture", "not called: QuorumController's "
     "wait for ready brokers (a CreateTopics before enough brokers registered)"),
    ("ClusterControlManager", "addReadyBrokersFuture", "", "not called: QuorumController's "
     "wait for ready brokers"),
    ("ClusterControlManager", "activate", "", "controller activation over an existing "
     "registration set (a controller failing over): the driver activates once, before any "
     "broker registers"),
    ("ClusterControlManager", "", r"clusterId", "request form not sent: another cluster id"),
    ("ClusterControlManager", "", r"incarnationId\(\)\.equals\(prevIncarnationId\)|"
     r"incarnationId\(\)\.equals\(record\.incarnationId", "a registration retried with "
     "the same incarnation id (a broker re-sending its request): every driver registration "
     "is a new incarnation"),
    ("ClusterControlManager", "", r"isMigratingZkBroker", "not generated: ZooKeeper "
     "migration (removed in 4.0)"),
    ("ClusterControlManager", "", r"DirectoryId::reserved|set\.size\(\) != |dirBrokerId|"
     r"existingId != null", "request forms not sent: a reserved or duplicate directory id, "
     "a directory another broker registered"),
    ("ClusterControlManager", "", r"FEATURE_NAME\) == null", "request form not sent: a "
     "registration without metadata.version"),
    ("ClusterControlManager", "", r"finalizedVersion != 0|VersionRange\.of", "features: "
     "every registration advertises every finalized feature at its level (an unsupported "
     "level or a missing feature is not sent)"),
    ("ClusterControlManager", "", r"cleanShutdownDetectionEnabled", "setting: clean-shutdown "
     "detection is never off in the driver (QuorumController's default)"),
    ("ClusterControlManager", "", r"registration\.epoch\(\) != brokerEpoch",
     "request form: a stale broker epoch (a heartbeat or AssignReplicasToDirs of an older "
     "incarnation): not generated"),
    ("ClusterControlManager", "isUnfenced", "", "not called on the driver's paths"),
    ("ClusterControlManager", "defaultDir", r"directories\.isEmpty", "a broker registered "
     "without directories: metadata.version below 3.7-IV2 (the older-MV sessions; not "
     "reached when the run had none)"),
    ("ClusterControlManager", "", r"== null|!= null|epoch\(\) != |remove\(directory",
     DEFENSIVE + " (a record or call for a broker, epoch or directory the controller does "
     "not hold)"),
    ("ClusterControlManager", "", "", NOT_REACHED),
    # ---- ConfigurationControlManager ----
    ("ConfigurationControlManager", "legacyAlterConfigs|legacyAlterConfigResource", "",
     "not generated: the old AlterConfigs API (QuorumController.legacyAlterConfigs)"),
    ("ConfigurationControlManager", "describeConfigs|getConfigs", "",
     "not called: configs are read from the driver's state, not DescribeConfigs"),
    ("ConfigurationControlManager", "incrementalAlterConfigResource|getParts",
     r"switch|isSplittable|APPEND|split|oldValueList|value == null|splitValue",
     "request forms not sent: APPEND / SUBTRACT of list configs (the driver sends SET and "
     "DELETE)"),
    ("ConfigurationControlManager", "createClearElrRecordsAsNeeded", r"CONFIG_RECORD",
     "dead: every record it is given is a ConfigRecord"),
    ("ConfigurationControlManager", "", r"recordImplicitlyDeleted|recordsImplicitlyDeleted",
     "not generated: configs deleted implicitly (the old AlterConfigs API replaces a "
     "resource's whole config)"),
    ("ConfigurationControlManager", "", r"UNKNOWN_SERVER_ERROR|apiError",
     "setting: no AlterConfigPolicy"),
    ("ConfigurationControlManager", "", r"CORDONED|Cordoned", "not generated: the broker "
     "config cordoned.log.dirs (4.3+)"),
    ("ConfigurationControlManager", "", r"MinIsrTransition|isElrFeatureEnabled|"
     r"resourceName\(\)\.isEmpty|value\(\) == null", "request forms not sent: a "
     "broker-level min.insync.replicas, a cluster-level min.insync.replicas DELETE (the "
     "model knows no static value beneath it)"),
    ("ConfigurationControlManager", "", r"Short\.MAX_VALUE", "request form not sent: a "
     "config value over 32,767 characters"),
    ("ConfigurationControlManager", "", r"isSensitive", "no sensitive config is set"),
    ("ConfigurationControlManager", "", r"supportedConfigChecker", DEFENSIVE +
     " (a ConfigRecord of a config the build does not support)"),
    ("ConfigurationControlManager", "isCordonedLogDirsInvalid|isCordonedLogDirsDisabled", "",
     "not generated: the broker config cordoned.log.dirs (4.3+)"),
    ("ConfigurationControlManager", "updateFeatures", r"isSuccess", "request form not "
     "sent: UpdateFeatures validateOnly"),
    ("ConfigurationControlManager", "incrementalAlterConfigResource", r"error\.isFailure",
     "a config change its validation refuses (the disallowed min ISR transitions, "
     "cordoned.log.dirs): not generated"),
    ("ConfigurationControlManager", "uncleanLeaderElectionEnabledForTopic", "",
     "setting: the driver always sets the static unclean.leader.election.enable, so the "
     "effective value is never empty"),
    ("ConfigurationControlManager", "maybeGenerateElrSafetyRecords|updateFeatures",
     "", "ELR turned on "
     "over a cluster without a cluster-level min.insync.replicas, or with broker-level "
     "ones: the cluster-level value is written at bootstrap and broker-level ones are not "
     "generated"),
    ("ConfigurationControlManager", "currentControllerConfig", "", DEFENSIVE),
    ("ConfigurationControlManager", "", "", NOT_REACHED + " (a refused config change, a "
     "broker-level config of a named broker, unclean election set at broker level only)"),
    # ---- FeatureControlManager ----
    ("FeatureControlManager", "", r"KRaftVersion|kraft", "not generated: kraft.version "
     "updates (KIP-853; the driver has no Raft quorum)"),
    ("FeatureControlManager", "updateFeature", "@277|@294", "inside the kraft.version "
     "branch: not generated (KIP-853; the driver has no Raft quorum)"),
    ("FeatureControlManager", "", r"validateOnly", "request form not sent: UpdateFeatures "
     "validateOnly"),
    ("FeatureControlManager", "", r"UpgradeType\.UNKNOWN", "request form: an unknown "
     "upgrade type cannot be sent by the driver (upgrade, safeDowngrade, unsafeDowngrade)"),
    ("FeatureControlManager", "", r"newVersion < 0", "request form not sent: a negative "
     "feature level"),
    ("FeatureControlManager", "reasonNotSupported", r"nodeId|foundControllers|iter\.|"
     r"reason\.isPresent", "controllers' supported features: controller registrations "
     "(KIP-919) are not generated, only the driver's own node"),
    ("FeatureControlManager", "updateMetadataVersion", "", "a metadata.version change that "
     "gets past the brokers' support check: the driver's brokers advertise the finalized "
     "level only, so every other level is refused before (reasonNotSupported)"),
    ("FeatureControlManager", "replay", r"range\.contains", DEFENSIVE +
     " (a FeatureLevelRecord outside the supported range)"),
    ("FeatureControlManager", "", "", NOT_REACHED),
]


def explain(cls: str, method: str, text: str, line: int = 0) -> str:
    if not text:
        return ("no source at this build's lines: the rows of the same method in the 4.3.1 "
                "list explain it (its source differs beyond imports, javap -l)")
    for c, m, t, reason in REASONS:
        if c and c != cls:
            continue
        if m and not re.fullmatch(m, method):
            continue
        if t.startswith("@"):  # line numbers (4.3.1 and 4.4.0 alike for the class)
            if str(line) not in t[1:].split("|@"):
                continue
        elif t and not re.search(t, text):
            continue
        return reason
    return NOT_REACHED


def missed(xml: Path, cls: str, source: Path) -> list[tuple[str, int, int, int, str]]:
    """(method, line, missed, covered, source text) of the class's own lines with a branch
    never taken."""
    # No source at the build's lines (4.4.0's ClusterControlManager): methods only.
    lines = source.read_text().split("\n") if source.is_file() else []
    root = ET.parse(xml).getroot()
    pkg = next(p for p in root.iter("package") if p.get("name") == PACKAGE)
    starts = sorted((int(m.get("line", 0)), str(k.get("name")).rsplit("/", 1)[-1],
                     str(m.get("name")))
                    for k in pkg.findall("class") if k.get("sourcefilename") == f"{cls}.java"
                    for m in k.findall("method") if m.get("line"))
    src = pkg.find(f"sourcefile[@name='{cls}.java']")
    out = []
    for line in [] if src is None else src.findall("line"):
        mb, n = int(line.get("mb", 0)), int(line.get("nr", 0))
        if not mb:
            continue
        owner, method = "?", "?"
        for first, o, m in starts:
            if first > n:
                break
            owner, method = o, m
        if owner != cls:
            continue
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        out.append((method, n, mb, int(line.get("cb", 0)), text))
    return out


def main() -> None:
    run, sources = Path(sys.argv[1]), Path(sys.argv[2])
    build = sys.argv[3] if len(sys.argv) > 3 else "?"
    xml = run / "coverage" / "jacoco.xml"
    print(f"### Kafka {build}: {run.name}\n")
    for cls in WHOLE:
        rows = missed(xml, cls, sources / f"{cls}.java")
        total = sum(r[2] for r in rows)
        print(f"#### {cls}: {total} branches never taken, on {len(rows)} lines\n")
        print("| line | method | never taken / of | source | why |")
        print("|---|---|---|---|---|")
        for method, n, mb, cb, text in rows:
            src = f"`{text.replace('|', chr(92) + '|')[:90]}`" if text else "(no source)"
            print(f"| {n} | `{method}` | {mb} / {mb + cb} | {src} | "
                  f"{explain(cls, method, text, n)} |")
        print()


if __name__ == "__main__":
    main()
