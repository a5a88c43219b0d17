"""Profiles: which semantics the model follows. Here: the KIPs' own (``kip966``, the
accepted text, and ``kip1303``); each release profile is ``kip966`` plus known deviations
(releases.py, deviations.py).

A profile encodes intended, documented behaviour only, never a known bug: a suite
must be able to fail on a bug. Each profile cites the line of the spec (seeds/) or
fact it implements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

#: "last" exists only as a mutant (reference/releases/mutants.py): no profile uses it.
ElectionOrder = Literal["any", "assignment", "last"]
LastKnownElrRule = Literal["kip", "last-leader", "none"]
MinIsrChangeRule = Literal["kip", "always"]
UncleanConfigRule = Literal["config", "never", "always"]
#: Which replicas a reassignment waits for in the ISR before it completes.
ReassignmentCompletion = Literal["adding", "all-target", "adding-unless-shrinking"]


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    #: ELR on (True), off (False), or follow Model(elr_enabled=...) (None).
    elr: bool | None
    #: "HWM can only advance if the ISR size is larger or equal to min.insync.replicas".
    hwm_rule: bool
    #: "any": any valid candidate may win (the KIP does not say which);
    #: "assignment": first valid replica in assignment order (PartitionChangeBuilder).
    election_order: ElectionOrder
    #: What LastKnownELR holds.
    last_known_elr: LastKnownElrRule
    #: When a min.insync.replicas change clears the ELR.
    min_isr_change_clears: MinIsrChangeRule
    #: KIP-966 part 2 (unclean recovery, GetReplicaLogInfo, longest-log elections).
    unclean_recovery: bool
    #: KIP-1303 local-log eligibility stable sort.
    kip1303: bool
    #: "the reassignment can only be completed if the ISR size is larger or equal to min ISR".
    reassignment_needs_min_isr: bool
    #: The spec lines or documented facts the profile implements.
    cites: tuple[str, ...]
    # Rules no release deviates from. Each can be turned off only by a model mutant
    # (reference/releases/mutants.py), to measure which rules recorded runs distinguish.
    #: "When the proposed ISR is larger or equal to min ISR, the controller will update
    #: the ISR and empty the ELR."
    elr_cleared_at_min_isr: bool = True
    #: "add (the current ISR - the proposed ISR) to ELR."
    elr_filled_on_shrink: bool = True
    #: Only an unfenced replica may be elected ("elect unfenced members"; isAcceptableLeader).
    leader_must_be_unfenced: bool = True
    #: "During the broker registration, if the broker had an unclean shutdown, the
    #: controller will remove the broker from ISR and ELR."
    unclean_shutdown_detection: bool = True
    #: LastKnownELR records the replica its rule names (False: another replica).
    last_known_elr_right_member: bool = True
    #: "when completing the reassignment, all the adding replicas should be in ISR".
    reassignment_waits_for_target_isr: bool = True
    #: unclean.leader.election.enable is honoured ("config"), or ignored as never / always.
    unclean_election_config: UncleanConfigRule = "config"
    #: "removing a replica out of ISR if ... it is fenced by the controller", the leader too.
    fenced_leader_leaves_isr: bool = True
    #: "when completing the reassignment, all the adding replicas should be in ISR"
    #: (seeds/003 'Other behaviors' 4.1, the behaviour the KIP builds on): "adding";
    #: "all-target": every target replica (KAFKA-15665, 3.8-4.2); "adding-unless-shrinking":
    #: the adding ones, every target replica when the replication factor shrinks
    #: (KAFKA-19975, 4.3). Release values: deviations.py.
    reassignment_completion: ReassignmentCompletion = "adding"
    #: "In addition to the ISR members, replicas in ELR are also eligible for leader
    #: election during a clean election process."
    elr_electable: bool = True
    #: "For ack=all requests, the server should respond when the message is persisted in
    #: all the ISR members' local log and the size of the ISR member is larger than min ISR."
    acks_all_needs_min_isr: bool = True
    #: KIP-996 Pre-Vote (Raft thesis 9.6): a voter cut off from the leader asks for
    #: pre-votes without raising the quorum epoch, so it cannot disturb the quorum when it
    #: rejoins. KIP-966 says nothing of the metadata quorum; the model's base is Raft with
    #: Pre-Vote, as Kafka's KRaft since 4.0 (deviation no-pre-vote before).
    pre_vote: bool = True
    #: KIP: "Our ultimate goal is to elect a leader without data loss or HWM moving
    #: backward when we only have min ISR - 1 unclean shutdowns." Shipped Kafka misses it
    #: when a follower is elected right after a produce: a follower learns the HWM only from
    #: fetch responses (ReplicaFetcherThread.processPartitionData ->
    #: log.maybeUpdateHighWatermark), and the leader parks the follower's next fetch until
    #: new bytes arrive or replica.fetch.wait.max.ms (500 ms) passes (DelayedFetch.tryComplete
    #: completes a LOG_END fetch on accumulated bytes, not on an HWM change). The new
    #: leader's HWM then lags the one acks=all producers and consumers saw, and under min ISR
    #: it stays there (Partition.maybeIncrementLeaderHW). Deviation new-leader-hwm-lag.
    leader_hwm_lag: bool = False
    #: Not in the KIP. A broker's session, which a new incarnation's registration must wait
    #: out (DUPLICATE_BROKER_REGISTRATION), lasts until it times out, fenced or not: 4.0+
    #: keeps it per (id, epoch) in BrokerHeartbeatTracker, blind to fencing (KAFKA-17793).
    #: Deviation session-ends-when-fenced (3.x) ends it when the broker is fenced.
    session_outlives_fencing: bool = True
    #: seeds/003 "Compatibility, Deprecation, and Migration Plan": ELR "will be guarded by a
    #: new metadata version and the eligible.leader.replicas.enabled", so an operator turns
    #: it on and off on a running cluster (UpdateFeatures, reference/model/features.py).
    #: Deviation no-elr-feature: 3.x has no eligible.leader.replicas.version feature.
    elr_feature: bool = True
    #: KIP: after ELR is turned off "all the ELR related fields will be removed on the next
    #: partition change. The controller will also ignore the ELR fields." Deviation
    #: elr-disable-keeps-fields (4.x): that next change still elects from the ELR when the
    #: ISR is empty, and LastKnownELR is never cleared (PartitionChangeBuilder).
    elr_disable_keeps_fields: bool = False
    #: With ``last_known_elr`` "last-leader": 4.0 rewrites LastKnownELR at every change that
    #: empties the ISR and clears it at every change that leaves a leader
    #: (PartitionChangeBuilder.maybeUpdateLastKnownLeader 4.0.2); 4.1+ (False, the same in
    #: every state a cluster reaches with ELR on throughout) records it only when the record
    #: makes the partition leaderless and clears it only when a record names a leader
    #: (apache/kafka PR 20629). They differ once ELR was turned off and on again.
    #: Deviation last-known-leader-rewritten (4.0).
    last_known_leader_rewritten: bool = False

    def elr_on(self, elr_enabled: bool) -> bool:
        return elr_enabled if self.elr is None else self.elr


KIP966 = Profile(
    name="kip966",
    elr=True,
    hwm_rule=True,
    election_order="any",
    last_known_elr="kip",
    min_isr_change_clears="kip",
    unclean_recovery=True,
    kip1303=False,
    reassignment_needs_min_isr=True,
    cites=(
        "seeds/003 'Additional High Watermark advancement requirement': HWM advances only "
        "if the ISR size is larger or equal to min.insync.replicas (effective = "
        "min(min.insync.replicas, replication factor)).",
        "seeds/003 'ELR update': proposed ISR >= min ISR empties the ELR; otherwise ELR := "
        "ELR + (current ISR - proposed ISR) - proposed ISR.",
        "seeds/003 'Other behaviors' 6: an ELR member with an unclean shutdown is removed "
        "from ELR and added to the LastKnownELR; LastKnownELR is cleaned when ISR reaches "
        "min ISR.",
        "seeds/003 'Other behaviors' 2: when updating min.insync.replicas, if the new min "
        "ISR <= current ISR, the ELR will be removed.",
        "seeds/003 'Unclean recovery': ISR member, else unfenced ELR member, else fenced ELR: "
        "Aggressive recovers, others wait; no ELR: Aggressive recovers, Balanced recovers when "
        "all LastKnownELR are unfenced, None waits for the user (seeds/002 renames).",
        "seeds/003 'Unclean recovery': the replica with the highest leader epoch plus the "
        "longest log end offset is elected.",
        "seeds/003 'Other behaviors' 4: reassignment completes only if ISR size >= min ISR.",
    ),
)

#: KIP-1303 on top of KIP-966: local-log eligibility sorts the candidates, which keeps
#: assignment order within each group.
KIP1303 = replace(
    KIP966,
    name="kip1303",
    election_order="assignment",
    kip1303=True,
    cites=KIP966.cites + (
        "seeds/001 'Leader Election Algorithm Changes': stably sort targetReplicas so that "
        "eligible replicas come first; assignment order is kept within each group.",
        "seeds/001: replicas with unknown local log state are treated as eligible.",
        "seeds/001: eligible when (ms > 0 and now - localLogStartTimestamp >= ms) or "
        "(bytes > 0 and localLogSizeBytes >= bytes); applies to ISR, ELR and preferred "
        "elections.",
    ),
)
