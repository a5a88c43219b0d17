"""Release profiles: what each Apache Kafka release line ships, as ``kip966`` plus the
known deviations it carries (deviations.py, cited in docs/KNOWN-DEVIATIONS.md).

A profile encodes intended, documented behaviour only, never a known bug: a suite must be
able to fail on a bug.
"""

from __future__ import annotations

from dataclasses import replace

from reference.releases.deviations import BY_ID, apply_deviations
from reference.releases.profiles import KIP966, KIP1303, Profile

#: What every release line since 3.7 shares: the controller elects in assignment order,
#: no part 2 (unclean recovery), reassignment without the min ISR condition.
_SHIPPED = ("election-in-assignment-order", "no-unclean-recovery",
            "reassignment-ignores-min-isr", "new-leader-hwm-lag")
#: 3.x: no ELR, and no eligible.leader.replicas.version feature to turn it on with
#: (EligibleLeaderReplicasVersion first in kafka-server-common 4.0.0; 3.9.2 has
#: MetadataVersion, KRaftVersion, GroupVersion, TransactionVersion only).
_NO_ELR = ("no-elr", "no-last-known-elr", "no-elr-feature")
_ELR_4X = ("last-known-elr-is-last-leader", "min-isr-change-always-clears-elr",
           "elr-disable-keeps-fields")
#: 3.6-3.8: the KRaft controller never elects uncleanly, whatever the config says
#: (KAFKA-12670 arrived in 3.9.0; docs/KNOWN-DEVIATIONS.md#unclean-election-config-ignored).
_NO_UNCLEAN_CONFIG = ("unclean-election-config-ignored",)
#: 3.x: no Pre-Vote in the metadata quorum (KIP-996 arrived in 4.0.0: kafka-raft-4.0.x has
#: org/apache/kafka/raft/ProspectiveState, 3.9.x does not; docs/KNOWN-DEVIATIONS.md#no-pre-vote).
_NO_PRE_VOTE = ("no-pre-vote",)
#: 3.x: a fenced broker has no session, so once its controlled shutdown completes a new
#: incarnation registers at once (BrokerHeartbeatTracker arrived in 4.0.0, KAFKA-17793;
#: docs/KNOWN-DEVIATIONS.md#session-ends-when-fenced).
_SESSION_3X = ("session-ends-when-fenced",)


#: Where the rules and views a line predates arrived, read in apache/kafka's source at the
#: release tags (docs/KNOWN-DEVIATIONS.md#release-lines-before-40).
_LINES = "docs/KNOWN-DEVIATIONS.md#release-lines-before-40"
_HWM_RULE_ARRIVED = (
    f"{_LINES}: the HWM rule arrived in 3.7.0, KAFKA-15583 (commit edc7e10a745, 'Enforce HWM "
    "advance only if partition is not under-min-ISR'; Partition.maybeIncrementLeaderHW, "
    "core/src/main/scala/kafka/cluster/Partition.scala): 3.6.2 has no such check")
_DTP_ARRIVED = (
    f"{_LINES}: DescribeTopicPartitions (API key 75, KAFKA-15585) arrived in 3.8.0: 3.6 and "
    "3.7 are observed with the Metadata API and ELR/LastKnownELR are unobservable (None), "
    "never judged")
_ELR_NOT_PRODUCTION = (
    f"{_LINES}: ELR is in no production metadata.version before 4.0 "
    "(MetadataVersion.isElrSupported: IBP_3_8_IV0 in 3.7 where LATEST_PRODUCTION is "
    "IBP_3_7_IV4, IBP_3_9_IV0 in 3.8 (IBP_3_8_IV0), IBP_4_0_IV0 in 3.9 (IBP_3_9_IV0)); "
    "partition records carry ELR only from version 2, written only under such a version")
_UNCLEAN_SHUTDOWN_DETECTION = (
    f"{_LINES}: unclean-shutdown detection (KIP-966): brokers send PreviousBrokerEpoch "
    "from 3.7.0 (BrokerRegistrationRequest v3), the 3.7 controller only logs it "
    "('TODO(KIP-966)' in ClusterControlManager.registerBroker); from 3.8.0 (KAFKA-15586) "
    "it calls ReplicationControlManager.handleBrokerUncleanShutdown, which returns at once "
    "unless isElrSupported: no effect on a production metadata.version before 4.0")


def release(name: str, deviation_ids: tuple[str, ...],
            arrivals: tuple[str, ...] = ()) -> Profile:
    """``kip966`` with the named deviations, called ``name``; it cites each deviation, then
    where the rules the line predates arrived (``arrivals``)."""
    devs = tuple(BY_ID[i] for i in deviation_ids)
    cites = tuple(f"{d.cite}: {d.summary}" for d in devs) + arrivals
    return replace(apply_deviations(KIP966, devs), name=name, cites=cites)


PRE_37 = release("pre-3.7", _SHIPPED + _NO_ELR + ("no-hwm-rule",) + _NO_UNCLEAN_CONFIG
                 + _NO_PRE_VOTE + _SESSION_3X,
                 (_HWM_RULE_ARRIVED, _DTP_ARRIVED, _ELR_NOT_PRODUCTION,
                  _UNCLEAN_SHUTDOWN_DETECTION))
#: A reassignment waits for every target replica in the ISR from 3.8.0 (KAFKA-15665) until
#: 4.3.0 (KAFKA-19975), which waits for the adding ones unless the replication factor
#: shrinks; 3.6 and 3.7 wait for the adding ones, as the KIP's baseline
#: (docs/KNOWN-DEVIATIONS.md, PartitionReassignmentReplicas.maybeCompleteReassignment).
_ALL_TARGET = ("reassignment-waits-for-every-target-replica",)
KAFKA_37 = release("kafka-3.7", _SHIPPED + _NO_ELR + _NO_UNCLEAN_CONFIG + _NO_PRE_VOTE
                   + _SESSION_3X,
                   (_DTP_ARRIVED, _ELR_NOT_PRODUCTION, _UNCLEAN_SHUTDOWN_DETECTION))
#: 3.8: as 3.9 (pre-elr), but unclean.leader.election.enable is still ignored (3.9.0).
KAFKA_38 = release("kafka-3.8", _SHIPPED + _NO_ELR + _ALL_TARGET + _NO_UNCLEAN_CONFIG
                   + _NO_PRE_VOTE + _SESSION_3X,
                   (_ELR_NOT_PRODUCTION, _UNCLEAN_SHUTDOWN_DETECTION))
PRE_ELR = release("pre-elr", _SHIPPED + _NO_ELR + _ALL_TARGET + _NO_PRE_VOTE + _SESSION_3X,
                  (_ELR_NOT_PRODUCTION, _UNCLEAN_SHUTDOWN_DETECTION))
#: 4.0 keeps LastKnownELR by its own rule (PartitionChangeBuilder 4.0.2; PR 20629 in 4.1).
_LKE_40 = ("last-known-leader-rewritten",)
KAFKA_40_ELR = release("kafka-4.0-elr", _SHIPPED + _ELR_4X + _LKE_40 + _ALL_TARGET)
#: 4.0 formatted without ELR: off until a ``feature`` step turns it on, which then follows
#: the 4.0 code's rules (LastKnownELR is the last leader: PartitionChangeBuilder 4.0.2).
KAFKA_40_NOELR = release("kafka-4.0-noelr", _SHIPPED + ("no-elr",) + _ELR_4X + _LKE_40
                         + _ALL_TARGET)
#: ELR follows the cluster: on for clusters formatted by 4.1+, off on upgraded ones.
KAFKA_41 = release("kafka-4.1", _SHIPPED + _ELR_4X + ("elr-follows-cluster",) + _ALL_TARGET)
KAFKA_43 = release("kafka-4.3", _SHIPPED + _ELR_4X + (
    "elr-follows-cluster", "reassignment-waits-for-target-when-shrinking"))

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (KIP966, KIP1303, PRE_37, KAFKA_37, KAFKA_38, PRE_ELR, KAFKA_40_ELR, KAFKA_40_NOELR,
              KAFKA_41, KAFKA_43)
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(
            f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}"
        ) from None


def profile_for_build(version: tuple[int, int, int], elr_enabled: bool) -> str:
    """The profile for a real build: 3.9 -> pre-elr, 3.8 -> kafka-3.8, 3.7 -> kafka-3.7 (3.6
    and older: pre-3.7, before the HWM rule), 4.0 -> kafka-4.0-elr / kafka-4.0-noelr, 4.1-4.2 ->
    kafka-4.1, >= 4.3 -> kafka-4.3 (pass elr_enabled to the Model)."""
    major, minor, _ = version
    if major < 3 or (major == 3 and minor < 7):
        return "pre-3.7"
    if major == 3:
        return {7: "kafka-3.7", 8: "kafka-3.8"}.get(minor, "pre-elr")
    if major == 4 and minor == 0:
        return "kafka-4.0-elr" if elr_enabled else "kafka-4.0-noelr"
    if major == 4 and minor < 3:
        return "kafka-4.1"
    return "kafka-4.3"
