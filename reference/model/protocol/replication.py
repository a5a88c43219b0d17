"""Replication: who leads and who fetches from it, followers catching up, and the
leader's ISR changes (AlterPartition shrink and expand).

A follower that fetches truncates to the divergence point (leader epochs) and then holds
the leader's very log. The leader proposes an ISR to the controller with AlterPartition;
the controller's partition change (``reference.model.controller.partition_change``)
applies KIP-966 'ELR update' to it: a member leaving the ISR while the proposed ISR is
under min ISR joins the ELR. ``leader_broker`` and ``followers`` are the roles every other
protocol action reads.

Connectivity: fetches go follower -> leader, AlterPartition leader -> controller.
"""

from __future__ import annotations

from reference.model.controller import (
    Ctx,
    acceptable,
    active_controller,
    link,
    partition_change,
)
from reference.model.state import Broker, Record, World, evolve


def knows_current(w: World, b: Broker) -> bool:
    return b.known_leader_epoch == w.partition.leader_epoch


def leader_broker(w: World) -> Broker | None:
    """The current leader if it is running and knows it leads."""
    p = w.partition
    if p.leader is None:
        return None
    b = w.broker(p.leader)
    if not b.alive or b.pending_registration or not knows_current(w, b):
        return None
    return b


def fetching(w: World, f: Broker, leader: Broker) -> bool:
    """Follower f replicates from the leader."""
    return (f.alive and not f.pending_registration and knows_current(w, f)
            and link(w, f.id, leader.id))


def can_alter_partition(w: World, leader: Broker) -> bool:
    c = active_controller(w)
    return c is not None and link(w, leader.id, c) and not leader.fenced


def followers(w: World) -> tuple[int, ...]:
    """Every other assigned replica: during a reassignment ``replicas`` already holds the
    adding and the removing ones (PartitionReassignmentReplicas)."""
    p = w.partition
    return tuple(r for r in p.replicas if r != p.leader)


def same_log(a: tuple[Record, ...], b: tuple[Record, ...]) -> bool:
    """Whether two logs hold the same records. A follower that fetched holds the leader's
    very log, so identity answers at once where comparing would walk every record (a
    10,000-record produce settles in seconds, not minutes)."""
    return a is b or a == b


def _replicate(w: World, ctx: Ctx) -> list[World] | None:
    leader = leader_broker(w)
    if leader is None:
        return None
    changed = False
    heard = frozenset(r for r in followers(w) if fetching(w, w.broker(r), leader))
    known = leader.heard_from or frozenset[int]()
    if not heard <= known:
        leader = evolve(leader, heard_from=known | heard)
        w = w.with_broker(leader)
        changed = True
    for r in followers(w):
        f = w.broker(r)
        if not fetching(w, f, leader):
            continue
        hwm = min(leader.hwm, leader.leo)
        if not same_log(f.log, leader.log) or f.hwm != hwm:
            # Truncate to the divergence point (leader epochs), then fetch: the settled
            # follower log equals the leader's.
            w = w.with_broker(evolve(f, log=leader.log, hwm=hwm))
            changed = True
    return [w] if changed else None


def _shrink_or_expand(w: World, ctx: Ctx) -> list[World] | None:
    leader = leader_broker(w)
    if leader is None or not can_alter_partition(w, leader):
        return None
    p = w.partition
    if p.recovering:
        # The leader reports the recovered state with AlterPartition.
        return [evolve(w, partition=evolve(p, recovering=False,
                                              partition_epoch=p.partition_epoch + 1))]
    # A follower that stopped fetching leaves the ISR only once it lags: when the leader
    # has records it lacks for replica.lag.time.max.ms, or has not heard from it since it
    # took the leadership. With no new records, a follower it heard from stays.
    heard = leader.heard_from or frozenset[int]()
    out = frozenset(r for r in p.isr - {leader.id}
                    if not fetching(w, w.broker(r), leader)
                    and (not same_log(w.broker(r).log, leader.log) or r not in heard))
    if out:
        return partition_change(w, ctx, proposed_isr=p.isr - out)
    for r in followers(w):
        f = w.broker(r)
        if (r not in p.isr and fetching(w, f, leader) and same_log(f.log, leader.log)
                and acceptable(f)):
            return partition_change(w, ctx, proposed_isr=p.isr | {r})
    return None
