"""Partition events: ``alterPartition`` (and ``completeReassignment``), ``reassign``,
``cancelReassignment``.

An AlterPartition's proposed ISR goes through KIP-966 'ELR update' in ``partition_change``;
a reassignment completes only as 'Other behaviors' 4 allows ("when completing the
reassignment, all the adding replicas should be in ISR", and with the ISR at min ISR under
``Profile.reassignment_needs_min_isr``); a cancelled one is ``steps.cancel_reassignment``,
as in the scenario model. The refusals follow the order and names of the shipped
controller's validateAlterPartitionData.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Assignment, Ctx, partition_change, reassignment_of
from reference.model.controller_events.changes import _accepted, _each, _refused, world_of
from reference.model.controller_events.cluster import Cluster, Outcome, Prediction
from reference.model.state import World, evolve
from reference.model.steps import cancel_reassignment


def _key(c: Cluster, e: Mapping[str, Any]) -> str | None:
    key = f"{e['topic']}-{int(e.get('partition', 0))}"
    return key if key in c.partitions else None


def _alter_partition(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    p = c.partitions[key]
    if e.get("op") == "completeReassignment" and e.get("isr") is None:
        isr = frozenset(p.isr) | frozenset(p.adding)
    else:
        isr = frozenset(int(r) for r in e["isr"])
    leader = int(e.get("leader", -1 if p.leader is None else p.leader))
    # The order and names of 4.3.1's validateAlterPartitionData (ReplicationControlManager
    # lines 1255-1305): an epoch above the controller's is NOT_CONTROLLER, a leader epoch
    # below it FENCED_LEADER_EPOCH, a sender that is not the leader INVALID_REQUEST, a
    # partition epoch below it INVALID_UPDATE_VERSION. (The driver compares acceptance and
    # state, not the error's name.)
    le = int(e.get("leaderEpoch", p.leader_epoch))
    pe = int(e.get("partitionEpoch", p.partition_epoch))
    if le > p.leader_epoch or pe > p.partition_epoch:
        return _refused(c, "NOT_CONTROLLER")
    if le < p.leader_epoch:
        return _refused(c, "FENCED_LEADER_EPOCH")
    if p.leader is None or leader != p.leader:
        return _refused(c, "INVALID_REQUEST")
    if pe < p.partition_epoch:
        return _refused(c, "INVALID_UPDATE_VERSION")
    lrs = int(e.get("leaderRecoveryState", 0))
    if (lrs == 1 and len(isr) > 1) or (lrs == 1 and not p.recovering):
        return _refused(c, "INVALID_REQUEST")
    if not isr <= frozenset(p.replicas) or leader not in isr:
        # An ISR without the leader that sends it: INVALID_REQUEST (4.3.1).
        return _refused(c, "INVALID_REQUEST")
    if any(r not in c.brokers or not c.brokers[r].active for r in isr):
        return _refused(c, "INELIGIBLE_REPLICA")
    start = evolve(p, recovering=p.recovering and lrs == 1)

    def change(w: World) -> list[World]:
        return partition_change(w, ctx, proposed_isr=isr)
    c_start = evolve(c, partitions={**c.partitions, key: start})
    outs = _each(c_start, [key], change, prior=c)
    result: list[Outcome] = []
    for x in outs:
        moved = x.partitions[key].leader != p.leader
        o = Outcome(True, x, "NEW_LEADER_ELECTED" if moved else None)
        if o not in result:
            result.append(o)
    return Prediction(tuple(result))


def _reassign(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    target = tuple(int(r) for r in e["replicas"])
    if not target or len(set(target)) != len(target) or any(r not in c.brokers for r in target):
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    p = c.partitions[key]
    a = reassignment_of(p.replicas, target)
    # The builder sets adding / removing only when non-empty (steps.Reassign).
    a = Assignment(a.replicas, a.adding or p.adding, a.removing or p.removing)

    def change(w: World) -> list[World]:
        # A reassignment elects cleanly whatever the topic's unclean.leader.election.enable:
        # ReplicationControlManager.changePartitionReassignment builds its
        # PartitionChangeBuilder without setElection (4.3.1 lines 2259-2296; 3.9.2 alike),
        # where alterPartition, generateLeaderAndIsrUpdates and
        # cancelPartitionReassignment set Election.UNCLEAN when the topic allows it.
        clean = evolve(w, config=evolve(w.config, unclean_leader_election=False))
        return partition_change(clean, ctx, assignment=a)
    return _accepted(_each(c, [key], change, extra=frozenset(target)))


def _cancel(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    if not c.partitions[key].reassigning:
        return _refused(c, "NO_REASSIGNMENT_IN_PROGRESS")
    outs = cancel_reassignment(world_of(c, key), ctx)
    if outs is None:
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    return _accepted(_each(c, [key], lambda w: outs))
