"""Known deviations of shipped Apache Kafka from KIP-966, as profile deltas.

Every release profile is ``kip966`` with some of these deviations applied. The ``kip``
judging axis runs the ``kip966`` profile on a run's observations; where the KIP cannot
explain an observation but ``kip966`` plus one or more of the deviations the build's own
profile carries can, the run is reported as that deviation (cited), never as a new
difference. Anything else is a KIP divergence. The citations are kept in the repo, in
docs/KNOWN-DEVIATIONS.md (one section per deviation id).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from itertools import combinations

from reference.releases.profiles import KIP966, KIP1303, Profile

DOC = "docs/KNOWN-DEVIATIONS.md"


@dataclass(frozen=True, slots=True)
class Deviation:
    """One documented difference: a Profile field and the value shipped Kafka uses."""

    id: str
    field: str
    value: object
    summary: str

    @property
    def cite(self) -> str:
        return f"{DOC}#{self.id}"


KNOWN_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("no-elr", "elr", False,
              "ELR is off: 3.7-3.9 never production-ready, 4.0 preview off by default, 4.1+ "
              "off on upgraded clusters; the ISR keeps its last member"),
    Deviation("no-hwm-rule", "hwm_rule", False,
              "before 3.7.0 the HWM advances with the ISR alone (KAFKA-15583 arrived in 3.7)"),
    Deviation("election-in-assignment-order", "election_order", "assignment",
              "the controller elects the first eligible replica in assignment order (the KIP "
              "leaves the choice open)"),
    Deviation("last-known-elr-is-last-leader", "last_known_elr", "last-leader",
              "LastKnownELR holds one id, the last leader, which may be elected when ISR and "
              "ELR are empty (an unclean election: ISR := [leader], RECOVERING)"),
    Deviation("elr-follows-cluster", "elr", None,
              "4.1+: ELR is on for clusters formatted by 4.1+ and off on upgraded ones (the "
              "run says which)"),
    Deviation("no-last-known-elr", "last_known_elr", "none",
              "no LastKnownELR (no ELR)"),
    Deviation("min-isr-change-always-clears-elr", "min_isr_change_clears", "always",
              "any min.insync.replicas change writes a ClearElrRecord (the KIP clears only "
              "when the new min ISR <= current ISR)"),
    Deviation("new-leader-hwm-lag", "leader_hwm_lag", True,
              "a follower elected right after a produce may not know the last HWM yet "
              "(it learns it in its next fetch response, parked up to "
              "replica.fetch.wait.max.ms): the HWM moves backward, and under min ISR stays"),
    Deviation("no-pre-vote", "pre_vote", False,
              "before 4.0 KRaft has no Pre-Vote (KIP-996, ProspectiveState first in "
              "kafka-raft 4.0): a controller cut off from the leader raises the quorum epoch "
              "as a candidate and may force an election when it rejoins"),
    Deviation("session-ends-when-fenced", "session_outlives_fencing", False,
              "before 4.0 a fenced broker has no session, so once its controlled shutdown "
              "completes (SHUTDOWN_NOW fences it) a new incarnation registers at once: 3.6.2-"
              "3.9.2 ClusterControlManager.registerBroker asks hasValidSession(brokerId), false "
              "for a fenced broker (BrokerHeartbeatManager.java:349-354); 4.0+ asks the "
              "per-(id, epoch) BrokerHeartbeatTracker, blind to fencing, and refuses until the "
              "session times out (KAFKA-17793, apache/kafka PR 17502)"),
    Deviation("no-unclean-recovery", "unclean_recovery", False,
              "KIP-966 part 2 (unclean recovery, longest-log elections) is in no release "
              "through 4.3"),
    Deviation("reassignment-waits-for-every-target-replica", "reassignment_completion",
              "all-target",
              "3.8-4.2: a reassignment completes only once EVERY target replica is in the ISR "
              "(KAFKA-15665, apache/kafka PR 15359), where the KIP's baseline waits for the "
              "adding ones: a dead replica the target keeps holds it back"),
    Deviation("unclean-election-config-ignored", "unclean_election_config", "never",
              "before 3.9.0 the KRaft controller ignores unclean.leader.election.enable: "
              "ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic returns false "
              "('TODO: support configuring unclean leader election'); KAFKA-12670 (commit "
              "7356328f530, apache/kafka PR 16866) arrived in 3.9.0"),
    Deviation("reassignment-waits-for-target-when-shrinking", "reassignment_completion",
              "adding-unless-shrinking",
              "4.3+: a reassignment waits for the adding replicas, and for every target "
              "replica when the replication factor shrinks (KAFKA-19975, apache/kafka PR "
              "21114)"),
    Deviation("no-elr-feature", "elr_feature", False,
              "3.x has no eligible.leader.replicas.version feature (ELR hid behind the "
              "controller config eligible.leader.replicas.enable and a metadata.version "
              "that was not production-ready): UpdateFeatures refuses the name"),
    Deviation("elr-disable-keeps-fields", "elr_disable_keeps_fields", True,
              "4.x: ELR turned off live leaves the ELR and LastKnownELR in the partition; "
              "its next change still elects an ELR member when the ISR is empty, then "
              "clears the ELR, and LastKnownELR is never cleared (PartitionChangeBuilder "
              "4.0.2-4.3.1: targetElr starts as the partition's, maybeUpdateRecordElr "
              "returns before LastKnownElr); the KIP ignores and removes both"),
    Deviation("last-known-leader-rewritten", "last_known_leader_rewritten", True,
              "4.0: LastKnownELR (the last leader) is rewritten at every change that empties "
              "the ISR and cleared at every change that leaves a leader "
              "(PartitionChangeBuilder.maybeUpdateLastKnownLeader 4.0.2); 4.1+ records it "
              "once, when a record makes the partition leaderless, and clears it only when a "
              "record names a leader (apache/kafka PR 20629): they differ after ELR was "
              "turned off and on again"),
    Deviation("no-kip1303", "kip1303", False,
              "no release implements KIP-1303 (through 4.4.0): the controller elects in "
              "assignment order whatever the replicas' local logs hold; "
              "leader.election.eligible.local.log.ms/.bytes are unknown configs"),
    Deviation("reassignment-ignores-min-isr", "reassignment_needs_min_isr", False,
              "a reassignment completes (or is cancelled) without the KIP's ISR >= min ISR "
              "condition, and a removed replica can stay in the ELR (4.3.1 "
              "PartitionReassignmentReplicas.maybeCompleteReassignment)"),
)

BY_ID = {d.id: d for d in KNOWN_DEVIATIONS}
#: Profiles that transcribe a KIP: the kip axis of a run under one of them is that KIP.
KIP_PROFILES = {p.name: p for p in (KIP966, KIP1303)}
_COMPARED = tuple(f.name for f in fields(Profile) if f.name not in ("name", "cites"))


def deviations_of(profile: Profile, elr_enabled: bool = True,
                  base: Profile = KIP966) -> tuple[Deviation, ...]:
    """The deviations that turn ``base`` (the KIP) into ``profile`` (ELR resolved for the
    run).

    Raises ValueError if the profile differs from the KIP in a field no known deviation
    names: every difference must be cited."""
    out: list[Deviation] = []
    for name in _COMPARED:
        value = getattr(profile, name)
        if name == "elr":
            value = profile.elr_on(elr_enabled)
        if value == getattr(base, name):
            continue
        match = [d for d in KNOWN_DEVIATIONS if d.field == name and d.value == value]
        if not match:
            raise ValueError(f"profile {profile.name}: {name}={value!r} differs from {base.name} "
                             f"and no known deviation names it (add one to {DOC})")
        out.append(match[0])
    return tuple(out)


def kip_base(profile: Profile) -> Profile:
    """The KIP a run is compared with: the profile itself when it is a KIP's, else kip966."""
    return KIP_PROFILES.get(profile.name, KIP966)


def apply_deviations(base: Profile, devs: tuple[Deviation, ...]) -> Profile:
    """``base`` with each deviation's field set to the shipped value."""
    if not devs:
        return base
    changes: dict[str, object] = {d.field: d.value for d in devs}
    name = base.name + "+" + "+".join(d.id for d in devs)
    return replace(base, name=name, **changes)  # type: ignore[arg-type]


def candidate_sets(available: tuple[Deviation, ...],
                   adopted: tuple[Deviation, ...]) -> Iterator[tuple[Deviation, ...]]:
    """Sets of further deviations to try, smallest first (the fewest deviations that
    explain an observation are the ones reported)."""
    rest = tuple(d for d in available if d not in adopted)
    for size in range(1, len(rest) + 1):
        for extra in combinations(rest, size):
            yield adopted + extra
