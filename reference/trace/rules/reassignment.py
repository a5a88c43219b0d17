"""Reassignment cases of the election rules: KIP-966 'Other behaviors' 4 (the
AlterPartitionReassignments: the leader's AlterPartition completes the reassignment, after
which the ELR only contains replicas in the final replica set), as Kafka's
ReplicationControlManager runs it. election.analyse and the changes' leaderless rule
(LeaderlessOnlyWithoutCandidate) ask these.
"""

from __future__ import annotations

from reference.model.state import NO_LEADER
from reference.trace.records import PartitionRegistration


def _completes_reassignment(p: PartitionRegistration, q: PartitionRegistration) -> bool:
    """The leader's AlterPartition added the adding replicas to the ISR and so completed the
    reassignment, which removes the leaving replicas from that ISR (ReplicationControlManager:
    "completed the ongoing partition reassignment and triggered a leadership change"). When
    every old ISR member is leaving, the new ISR shares none of them, yet its leader comes from
    the ISR the leader proposed: an election from the ISR, not an unclean one (an unclean
    election also marks RECOVERING, which the caller excludes)."""
    return (not q.adding_replicas and not q.removing_replicas
            and set(p.isr) <= set(p.removing_replicas)
            and set(q.isr) <= set(p.adding_replicas) | (set(p.replicas) - set(p.removing_replicas)))


def _reassigns_leaderless(p: PartitionRegistration, q: PartitionRegistration) -> bool:
    """A reassignment's change of a partition already leaderless. Kafka runs no unclean
    election in it: ReplicationControlManager.changePartitionReassignment builds it without
    Election.UNCLEAN (3.9.2 line 2131, 4.0.2 2183, 4.1.2 2184, 4.3.1 2261), and the periodic
    electUnclean task elects later (QuorumController, uncleanLeaderElectionCheckIntervalMs,
    5 minutes by default). A live replica it adds may so wait that long (4.0.2 hunt, seed 39,
    fuzz-s39-48)."""
    return (p.leader == q.leader == NO_LEADER
            and (q.replicas, q.adding_replicas, q.removing_replicas)
            != (p.replicas, p.adding_replicas, p.removing_replicas))
