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

from collections.abc import Mapping
from itertools import product

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
    if not b.alive or b.pending_registration or b.dir_offline or not knows_current(w, b):
        return None
    return b


def fetching(w: World, f: Broker, leader: Broker) -> bool:
    """Follower f replicates from the leader."""
    # A replica on a failed directory is offline on its broker: no fetcher for it
    # (ReplicaManager.handleLogDirFailure removes the partition's fetchers).
    return (f.alive and not f.pending_registration and not f.dir_offline
            and knows_current(w, f) and link(w, f.id, leader.id))


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


def _stale_fetch(w: World, ctx: Ctx) -> list[World] | None:
    """A follower still on a deposed leader's epoch fetches from it, which still leads in
    the metadata it applied, until its own metadata moves on: it has or has not fetched the
    records the deposed leader holds beyond it, one branch each (the not-yet branch named
    in World.stale_unfetched for this step). A follower's fetcher keeps fetching from the
    leader of the epoch it applied (AbstractFetcherThread.doWork -> maybeFetch, the leader
    of ReplicaFetcherThread's partition state) and appends what comes
    (ReplicaFetcherThread.processPartitionData), and the deposed leader answers at its own
    epoch (Partition.fetchRecords checks the request's epoch against the one it applied).
    Once the follower applies the new leader's epoch it truncates to the new leader's end
    offset for that epoch (OffsetsForLeaderEpoch: AbstractFetcherThread
    .getOffsetTruncationState), so the records stay only where that follower is elected:
    then the new leader has them and its HWM may pass them. Found by `kafka-chaos fuzz` on
    4.4.0 (seed 45, fuzz-s45-21: after a heal, follower 3 fetched the deposed leader's 8
    records before the controller elected 3; HWM 8 where the model said 0)."""
    p = w.partition
    for z in w.brokers:
        if (z.heard_from is None or z.known_leader_epoch == p.leader_epoch or not z.alive
                or z.pending_registration or z.dir_offline):
            continue
        for f in w.brokers:
            if (f.id == z.id or f.id not in p.replicas or not f.alive or f.pending_registration
                    or f.dir_offline or f.heard_from is not None
                    or f.known_leader_epoch != z.known_leader_epoch
                    or f.leo >= z.leo or (f.id, z.leo) in w.stale_unfetched
                    or not link(w, f.id, z.id) or f.log != z.log[: f.leo]):
                continue
            took = w.with_broker(evolve(f, log=z.log, hwm=max(f.hwm, min(z.hwm, z.leo))))
            return [took, evolve(w, stale_unfetched=w.stale_unfetched | {(f.id, z.leo)})]
    return None


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
    joining = [r for r in followers(w)
               if r not in p.isr and fetching(w, w.broker(r), leader)
               and same_log(w.broker(r).log, leader.log) and acceptable(w.broker(r))]
    if not joining:
        return None
    if not (p.adding or p.removing):
        # Outside a reassignment the order of the joins leaves the same settled state.
        return partition_change(w, ctx, proposed_isr=p.isr | {joining[0]})
    # The leader adds one follower per AlterPartition, the first whose fetch finds it in
    # sync while none is in flight (Partition.maybeExpandIsr -> canAddReplicaToIsr,
    # prepareIsrExpand: isr + newInSyncReplicaId, PendingExpandIsr; identical in 4.3.1 and
    # 4.4.0), and only once its metadata shows the follower unfenced (isReplicaIsrEligible):
    # a follower that was fenced joins after one that was only cut off, whatever the
    # assignment order. During a reassignment the order decides the outcome: the change
    # that adds the last adding replica completes it with the ISR of that moment
    # (PartitionReassignmentReplicas.maybeCompleteReassignment: "Wait for all adding sync
    # replicas to join the ISR", not the other target replicas; KIP-966 "Other behaviors"
    # 4), and a leader that leaves the replicas is replaced by the first target replica
    # in that ISR (PartitionChangeBuilder.electAnyLeader). One branch per first joiner.
    # Found by the certify hunt on 4.4.0 (fuzz-s1-41): target [3, 2] of [3, 1], follower 2
    # joined while 3 was still fenced after a heal; leader 2, where the model said 3.
    outs: list[World] = []
    for r in joining:
        outs.extend(x for x in partition_change(w, ctx, proposed_isr=p.isr | {r})
                    if x not in outs)
    return outs


#: Above this many branches per world, a follower's unconfirmed fetch is either whole or
#: not made at all (two branches per follower), not every prefix (traffic: thousands).
MAX_UNFETCHED = 16


def fetch_floors(before: World, after: World, held: Mapping[int, int] = {}
                 ) -> tuple[tuple[int, int], ...]:
    """After a produce step from ``before`` to the settled ``after``: the followers whose
    fetch of the leader's records above its HWM no observation confirms, each with the log
    length it surely holds (World.fetch_floor); ``held``: what it surely held before
    ``before`` (a produce right after another one).

    A follower holds a record only once a fetch response carried it
    (ReplicaFetcherThread.processPartitionData -> Partition.appendRecordsToFollowerOrFutureReplica);
    the leader learns it at the follower's next fetch (Partition.updateFollowerFetchState),
    and only that moves the HWM over it (Partition.maybeIncrementLeaderHW), never while the
    ISR is under min ISR (KIP-966 'Additional High Watermark advancement requirement': "HWM
    can only advance if the ISR size is larger or equal to min.insync.replicas"; "Not
    increasing HWM because partition is under min ISR"). With the HWM below the leader's log
    end, nothing the observer reads tells whether a follower has fetched those records
    (acks 0/1 records answer without them), and the next step's fault may come first. Found
    by the hunt: fuzz-s45-9 on 4.4.0 (acks=1), fuzz-s4343-5 on 4.3.1 (acks=0): leader 3
    under min ISR took 3 records and was paused at the next step; the follower elected did
    not have them (bench/RESULTS-lifecycle.md)."""
    leader = leader_broker(after)
    p, q = before.partition, after.partition
    if (leader is None or leader.hwm >= leader.leo or p.leader != q.leader
            or p.leader_epoch != q.leader_epoch):
        return ()
    out: list[tuple[int, int]] = []
    for r in followers(after):
        f = after.broker(r)
        if not same_log(f.log, leader.log):
            continue
        old = before.broker(r).log
        floor = leader.hwm
        if len(old) > floor:  # what it held of the leader's log before the produce
            mine, theirs = old[floor:], leader.log[floor:len(old)]
            floor += next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False))
                           if a != b), len(theirs))
        floor = max(min(floor, held.get(r, floor)), leader.hwm)
        if floor < leader.leo:
            out.append((r, floor))
    return tuple(out)


def unfetched(w: World) -> list[World]:
    """``w`` opened into its branches of World.fetch_floor, ``w`` itself (every follower
    fetched everything) first: each follower named holds any prefix of the leader's log
    from its floor to the leader's log end (its fetches that came before this step), the
    leader's HWM untouched (it never moved over them). A follower that is elected later
    with fewer records makes the leader truncate them on its return (the new leader's end
    offset for the old epoch, OffsetsForLeaderEpoch: Partition.lastOffsetForLeaderEpoch,
    AbstractFetcherThread.getOffsetTruncationState); one that fetched them and is elected
    keeps them (nothing truncates a leader's own log) and its HWM may move over them."""
    floors = w.fetch_floor
    done = evolve(w, fetch_floor=())
    leader = leader_broker(done)
    if not floors or leader is None:
        return [done]
    size = 1
    for _, floor in floors:
        size *= leader.leo - floor + 1
    choices = [range(floor, leader.leo + 1) if size <= MAX_UNFETCHED
               else (floor, leader.leo) for _, floor in floors]
    out = [done]
    for combo in product(*choices):
        x = done
        for (r, _), k in zip(floors, combo, strict=True):
            f = x.broker(r)
            if k < leader.leo and same_log(f.log, leader.log):
                x = x.with_broker(evolve(f, log=leader.log[:k], hwm=min(f.hwm, k)))
        if x not in out:
            out.append(x)
    return out
