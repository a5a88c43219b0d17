"""The trace rules' registry: each rule's name, kind and citation, in the order the rules
are listed and reported (reference.trace.replay takes citations from here).

A citation names the KIP-966 section (seeds/003), the TLA+ property or action of
Vanlightly/kafka-tlaplus kip-966 (cited by name), or, for what shipped Kafka does
differently and a profile allows, research/kafka-facts.md and the controller code
(PartitionChangeBuilder, ReplicationControlManager, ClusterControlManager in apache/kafka's
metadata module). The checks themselves live in the family modules of this package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TLA = "TLA+ kafka-tlaplus kip-966"
CODE = "apache/kafka metadata"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: Literal["invariant", "change"]
    citation: str


_RULES = (
    # --- invariants: every committed state -----------------------------------------
    Rule("LeaderInIsr", "invariant",
         "seeds/003 'Eligible Leader Replicas': the ISR 'functions as a candidate set for the "
         "leader'; unclean elections set ISR := [leader] (PartitionChangeBuilder.tryElection); "
         f"{TLA} MaybeUpdatePartitionOnBrokerChange adds an ELR winner to the ISR."),
    Rule("LeaderIsLive", "invariant",
         "seeds/003 'Delivery plan' elects unfenced members only; the controller's acceptable "
         "leader is registered, unfenced and not in controlled shutdown "
         f"(ClusterControlManager.isActive); {TLA} HandleBrokerFenced."),
    Rule("IsrElrWithinReplicas", "invariant",
         f"{TLA} ValidControllerIsrAndElr (ISR and ELR members must be replicas); seeds/003 "
         "'Other behaviors' 4 (the ELR only contains replicas in the final replica set) and 6 "
         "(LastKnownELR holds last-known ELR members)."),
    Rule("ElrIsrDisjoint", "invariant",
         "seeds/003 'ELR invariants': the member of ELR should not be in ISR; "
         f"{TLA} ValidControllerIsrAndElr."),
    Rule("ElrEmptyAtMinIsr", "invariant",
         "seeds/003 'ELR invariants': if ELR is not empty, the ISR is under min ISR (effective "
         f"min ISR = min(min.insync.replicas, replication factor)); {TLA} "
         "ValidControllerIsrAndElr."),
    Rule("FencedReplicaNotInIsr", "invariant",
         f"{TLA} ValidControllerState (a fenced broker cannot be in the ISR); seeds/003 'ISR "
         "invariants' (a fenced replica is removed from the ISR); with ELR off the ISR keeps "
         "its last member (seeds/003 motivation, T2)."),
    Rule("UncleanShutdownReplicaNotInElr", "invariant",
         "seeds/003 'ELR invariants': the controller will remove the ELR member if it "
         "registers with an unclean shutdown; 'Controller behaviors' 4 (removed from ISR and "
         f"ELR before persisting the registration record); {TLA} ProcessUncleanBroker."),
    Rule("EpochsNeverGoBack", "invariant",
         f"{TLA} ApplyPartitionChange (leader epoch and partition epoch only grow); "
         f"{CODE} PartitionRegistration.merge (partition epoch + 1 on every change)."),
    Rule("NoElrWhenDisabled", "invariant",
         "seeds/003 'Config changes' 1: ELR off, the controller records no ELR-related "
         "metadata; research/kafka-facts.md (ELR switch per release)."),
    Rule("IsrNotEmptyWhenElrDisabled", "invariant",
         "seeds/003 'Config changes' 1 (the ELR switch controls whether ISR can be empty) and "
         "motivation T2 ('prevent ISR drops to empty which keeps the last replica')."),
    Rule("LastKnownElrShape", "invariant",
         "kip966: seeds/003 'Other behaviors' 6.a (LastKnownELR cleaned when ISR reaches min "
         "ISR); shipped: research/kafka-facts.md (LastKnownELR holds ONE id, the last leader) "
         "and PartitionChangeBuilder.maybeUpdateLastKnownLeader (cleared while the partition "
         "has a leader)."),
    Rule("OfflineDirectoryNotLeaderOrIsr", "invariant",
         "KIP-858 (JBOD in KRaft): a broker reporting a log directory offline is removed from "
         "the ISR and leadership of the partitions in it, in the batch of the "
         "BrokerRegistrationChangeRecord (ReplicationControlManager.handleDirectoriesOffline "
         "-> generateLeaderAndIsrUpdates), and never elected there while it is offline "
         "(ReplicationControlManager.LeaderAcceptor: ClusterControlManager.hasOnlineDir, "
         "DirectoryId.isOnline)."),
    # --- change rules: one record against the state before it -----------------------
    Rule("IsrJoinOnlyLive", "change",
         "seeds/003 abstract (replicas re-added only once caught up) and 'Controller "
         "behaviors'; ReplicationControlManager.validateAlterPartitionData rejects fenced and "
         "shutting-down replicas (INELIGIBLE_REPLICA); topic creation puts only active "
         "replicas in the ISR."),
    Rule("ElrJoinOnlyFromIsrUnderMinIsr", "change",
         "seeds/003 'ELR update' 2.b (add current ISR - proposed ISR, only when the proposed "
         "ISR is smaller than min ISR) and 'ELR invariants' (unclean-shutdown members are "
         f"removed); {TLA} UpdateElr; PartitionChangeBuilder.maybePopulateTargetElr."),
    Rule("ElrMembersRetained", "change",
         "seeds/003 'ELR update' 2.a (retain the current members of the ELR) and 'ELR "
         "invariants' (ELR + ISR not dropped below min ISR unless an unclean shutdown); "
         "members leave by joining the ISR, by an unclean election, by clearing at min ISR, "
         "or by leaving the replica set."),
    Rule("NewLeaderIsLive", "change",
         "seeds/003 'Delivery plan' / 'Unclean recovery' (elect unfenced replicas); "
         "PartitionChangeBuilder.isValidNewLeader with ReplicationControlManager's acceptor "
         "(registered, unfenced, not in controlled shutdown, not the broker being removed)."),
    Rule("ElrElectionOnlyWithEmptyIsr", "change",
         "seeds/003 'Unclean recovery' order (ISR member first, then unfenced ELR member) and "
         "'Controller behaviors' 3 (ELR member elected when ISR is empty, added to ISR, "
         f"removed from ELR); {TLA} MaybeUpdatePartitionOnBrokerChange."),
    Rule("ElectionFollowsAssignmentOrder", "change",
         "research/kafka-facts.md election order (profiles with election_order=assignment): "
         "keep a valid leader (preferred election aside), else the first valid replica in "
         "assignment order, else the last known leader, else (unclean) the first live "
         "replica; PartitionChangeBuilder.electAnyLeader / electPreferredLeader."),
    Rule("UncleanElectionOnlyWhenAllowed", "change",
         "seeds/003 'Delivery plan' and 'Unclean recovery' (unclean election only when no ISR "
         "or unfenced ELR member, and only with unclean.leader.election.enable, an ElectLeaders "
         "UNCLEAN request, the LastKnownLeader / Balanced recovery of the KIP, or the "
         "shipped last-known-leader election: research/kafka-facts.md)."),
    Rule("UncleanElectionMarksRecovering", "change",
         "PartitionChangeBuilder.tryElection: an unclean election sets ISR := [leader] and "
         "leader recovery state RECOVERING (KIP-704) and clears the ELR "
         "(maybeUpdateRecordElr); research/kafka-facts.md."),
    Rule("LeaderlessOnlyWithoutCandidate", "change",
         "seeds/003 'Unclean recovery' order: if there are ISR members / unfenced ELR members, "
         f"choose one; {TLA} NoLeaderChange (leaderless only without a candidate)."),
    Rule("LeaderRecoveryStateChange", "change",
         "KIP-704 as PartitionChangeBuilder applies it: RECOVERING only by an unclean election; "
         "back to RECOVERED only by the leader's AlterPartition (leader unchanged)."),
    Rule("LastKnownElrUpdate", "change",
         "kip966: seeds/003 'Other behaviors' 6 (an ELR member with an unclean shutdown is "
         f"removed from ELR and added to LastKnownELR) and {TLA} ApplyPartitionChange "
         "(LastKnownELR grows only by members leaving the ELR); shipped: research/kafka-facts.md "
         "and PartitionChangeBuilder.maybeUpdateLastKnownLeader (the last leader, set when the "
         "partition becomes leaderless, cleared when it has a leader)."),
    Rule("LeaderEpochBump", "change",
         "seeds/003 'Other behaviors' 1 (ELR changes need no leader epoch bump); "
         "PartitionChangeBuilder: bump on a leader change, on a replica removal, and on an ISR "
         "shrink only before metadata.version 3.6-IV0 (KAFKA-15021)."),
    Rule("ClearElrOnlyOnMinIsrChange", "change",
         "seeds/003 'Other behaviors' 2 (min.insync.replicas update removes the ELR only if the "
         "new min ISR <= current ISR); shipped: research/kafka-facts.md (any change writes a "
         "ClearElrRecord) and ReplicationControlManager (ClearElrRecord with the config record, "
         "topic creation or the ELR feature)."),
    Rule("MinIsrChangeClearsElr", "change",
         "Profiles with min_isr_change_clears=always: research/kafka-facts.md (any change of "
         "min.insync.replicas, topic or cluster level, wipes ELR and LastKnownELR); Kafka docs "
         "ops.html (ELR fields cleaned when min.insync.replicas is updated)."),
    Rule("ReplayConsistency", "change",
         "ReplicationControlManager.replay / ClusterControlManager.replay reject records for "
         "unknown partitions, topics, brokers or broker epochs: the trace is not replayable."),
    Rule("MetadataLogMatching", "invariant",
         f"{TLA} MetadataLogMatchingProperty: the metadata logs agree on their common prefix."),
)
RULES: dict[str, Rule] = {r.name: r for r in _RULES}


#: Invariants of a state that stay broken until a later record repairs them.
PERSISTENT = frozenset(r.name for r in _RULES if r.kind == "invariant") - {
    "UncleanShutdownReplicaNotInElr", "EpochsNeverGoBack", "MetadataLogMatching"}
