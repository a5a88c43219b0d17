"""A Produce: the leader appends, and each record's ack outcome in every settled branch.

KIP-966: "For ack=all requests, the server should respond when the message is persisted in
all the ISR members' local log and the size of the ISR member is larger than min ISR"
(``Profile.acks_all_needs_min_isr``: NOT_ENOUGH_REPLICAS before the append,
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min ISR meanwhile); the HWM an
acks=all record waits for follows 'Additional High Watermark advancement requirement'
(``hwm``). Shipped timing the model also covers: a leader still acting on the ISR or the
min ISR it held before the step's change (``with_leader_isr_view``,
``with_leader_min_isr_view``), and acks 0/1 records taken by a deposed leader.

Connectivity: produce goes client -> leader.
"""

from __future__ import annotations

from reference.model.controller import Ctx, acceptable, broker_rules, link
from reference.model.protocol.apply import Outcome
from reference.model.protocol.replication import leader_broker
from reference.model.protocol.settling import rebalanced, settle
from reference.model.state import CLIENT, World, evolve


def produce_step(w: World, ctx: Ctx, count: int, acks: str, ids: tuple[str, ...]
                 ) -> list[Outcome]:
    """A client sends ``count`` records to the leader with ``acks``; settled branches
    with each record's ack outcome."""
    if not ids:
        ids = tuple(f"r{w.produced + i + 1}" for i in range(count))
    w = evolve(w, produced=w.produced + len(ids))
    p = w.partition
    leader = leader_broker(w)
    reachable = (leader is not None and acceptable(leader) and link(w, CLIENT, leader.id))
    deposed = _on_deposed_leaders(w, ctx, ids, acks)
    if not reachable or leader is None:
        return [Outcome(x, tuple((r, "rejected") for r in ids))
                for x in settle(w, ctx)] + deposed
    stale = _on_stale_min_isr(w, ctx, ids) if acks == "all" else []
    if acks == "all" and len(p.isr) < w.min_isr \
            and broker_rules(w, ctx, leader.id).acks_all_needs_min_isr:  # the leader's build
        # NOT_ENOUGH_REPLICAS: rejected before the append.
        rejected = [Outcome(x, tuple((r, "rejected") for r in ids)) for x in settle(w, ctx)]
        return rejected + _appended_on_stale_isr(w, ctx, ids) + stale
    settled = (_append_in_turn(w, ctx, ids) if acks == "all"
               else _append(w, ctx, ids, acks))
    settled += [o for o in stale + deposed if o not in settled]
    outs: list[Outcome] = []
    for o in settled:
        outs.append(o)
        if ctx.rebalance:
            outs.extend(Outcome(y, o.acks) for y in rebalanced(o.world, ctx))
    return outs


def _on_deposed_leaders(w: World, ctx: Ctx, ids: tuple[str, ...], acks: str
                        ) -> list[Outcome]:
    """acks 0 or 1: the records may go to a deposed leader instead, one the controller
    replaced while it could not reach it, so it still leads in the metadata it applied. A
    client learns leaders from any broker's metadata; one on the deposed leader's side
    names it, and a client that never saw the new epoch believes it. That leader appends
    and answers acks=1 at once; its records are gone once it fetches from the real leader
    (truncated at the divergence), and the real leader's HWM does not move. Found by
    `kafka-chaos fuzz` on 4.3.1 (seed 44, fuzz-s44-11: a partition sent leader 2 and
    follower 1 away; 3 led, but 2 acked both acks=1 records of a fresh producer, and the
    HWM stayed 0). acks=all is left to the real leader: the deposed one cannot commit
    without the replicas its ISR still names."""
    if acks == "all":
        return []
    p = w.partition
    outs: list[Outcome] = []
    for z in w.brokers:
        if z.id == p.leader or z.heard_from is None or not z.alive or not link(w, CLIENT, z.id):
            continue
        log = z.log + tuple((z.known_leader_epoch, r) for r in ids)
        acked = tuple((r, "1") for r in ids) if acks == "1" else ()
        reply = "acked" if acks == "1" else "either"
        for x in settle(w.with_broker(evolve(z, log=log)), ctx):
            outs.append(Outcome(evolve(x, acked=x.acked + acked),
                                tuple((r, reply) for r in ids)))
    return outs


def _append(w: World, ctx: Ctx, ids: tuple[str, ...], acks: str) -> list[Outcome]:
    """The leader appends ``ids`` at once; the settled branches with each ack."""
    leader = leader_broker(w)
    assert leader is not None
    p = w.partition
    start = leader.leo
    log = leader.log + tuple((p.leader_epoch, r) for r in ids)
    outs: list[Outcome] = []
    for x in settle(w.with_broker(evolve(leader, log=log)), evolve(ctx, rebalance=False)):
        replies: list[tuple[str, str]] = []
        acked = list(x.acked)
        xl = x.partition.leader
        hwm = x.broker(xl).hwm if xl is not None else 0
        same = xl == leader.id and x.partition.leader_epoch == p.leader_epoch
        for i, r in enumerate(ids):
            if acks == "0":
                replies.append((r, "either"))
            elif acks == "1":
                replies.append((r, "acked"))
                acked.append((r, "1"))
            elif same and start + i < hwm and _enough_at_completion(x, ctx):
                replies.append((r, "acked"))
                acked.append((r, "all"))
            else:
                replies.append((r, "rejected"))
        outs.append(Outcome(evolve(x, acked=tuple(acked)), tuple(replies)))
    return outs


def _enough_at_completion(x: World, ctx: Ctx) -> bool:
    """Whether an acks=all record the HWM passed is answered without error: the leader
    completes the waiting produce with NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is
    below min ISR by then (Partition.checkEnoughReplicasReachOffset). With the KIP's HWM
    rule the HWM never passes it so; before 3.7 the HWM advances with the ISR alone, as it
    shrinks below min ISR, and the record is appended but not acked (hunt seed 42 on
    3.6.2, fuzz-s42-1: a cut follower, two records, the first appended and timed out,
    the second never sent, HWM 1)."""
    leader = x.partition.leader
    rules = ctx.profile if leader is None else broker_rules(x, ctx, leader)  # the leader's
    return not rules.acks_all_needs_min_isr or len(x.partition.isr) >= x.min_isr


def _append_in_turn(w: World, ctx: Ctx, ids: tuple[str, ...]) -> list[Outcome]:
    """acks=all records as the harness's producer sends them: one per request, the next
    only once the previous one is answered (harness/client/workload.py: one record per
    batch, one request in flight). A record the leader appends but cannot commit is
    answered only when the ISR has shrunk below min ISR (NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    DelayedProduce) or the leader changed; its retries and the records after it are then
    rejected before the append (NOT_ENOUGH_REPLICAS, Partition.appendRecordsToLeader), so
    they never reach a log. Met on 4.3.1 by fuzz-s1125-1 (bench/RESULTS-fuzz.md)."""
    frontier: list[tuple[World, tuple[tuple[str, str], ...]]] = [(w, ())]
    for r in ids:
        nxt: list[tuple[World, tuple[tuple[str, str], ...]]] = []
        for x, replies in frontier:
            held = bool(replies) and replies[-1][1] == "rejected"
            after = ([Outcome(x, ((r, "rejected"),))] if held or leader_broker(x) is None
                     else _append(x, ctx, (r,), "all"))
            for o in after:
                if (o.world, replies + o.acks) not in nxt:
                    nxt.append((o.world, replies + o.acks))
        frontier = nxt
    return [Outcome(x, replies) for x, replies in frontier]


def _on_stale_min_isr(w: World, ctx: Ctx, ids: tuple[str, ...]) -> list[Outcome]:
    """acks=all records in the step right after a min ISR change, as a leader that has not
    applied it yet takes them (World.leader_min_isr_view): checked, committed and answered
    with the min ISR it still holds; the partition keeps the new one."""
    view = w.leader_min_isr_view
    if view is None or view == w.min_isr:
        return []
    stale = evolve(w, config=evolve(w.config, topic_min_isr=view), leader_min_isr_view=None)
    return [Outcome(evolve(o.world, config=w.config), o.acks)
            for o in _append_in_turn(stale, ctx, ids)]


def with_leader_min_isr_view(before: World, after: World) -> World:
    """``after`` with the min ISR its leader may still act on during the next step: the
    one before this step when this step changed it, else None. A topic created (again) in
    this step has no older min ISR: its brokers learn the topic and its configs together."""
    changed = after.min_isr != before.min_isr and not before.deleted
    view = before.min_isr if changed else None
    return after if after.leader_min_isr_view == view else evolve(after,
                                                                   leader_min_isr_view=view)


def with_leader_isr_view(before: World, after: World) -> World:
    """``after`` with the ISR its leader may still act on during the next step: the ISR
    before this step when this step shrank it below min ISR under the same leader (the
    controller's change reaches the observer a moment before the leader's partition), else
    None (World.leader_isr_view)."""
    old, new = before.partition, after.partition
    lags = (new.leader is not None and new.leader == old.leader
            and new.isr < old.isr and len(new.isr) < after.min_isr <= len(old.isr))
    view = old.isr if lags else None
    return after if after.leader_isr_view == view else evolve(after, leader_isr_view=view)


def _appended_on_stale_isr(w: World, ctx: Ctx, ids: tuple[str, ...]) -> list[Outcome]:
    """The first acks=all record of a produce right after the ISR shrank below min ISR,
    appended by a leader that still checked the ISR it held before (World.leader_isr_view):
    it is not acked (NOT_ENOUGH_REPLICAS_AFTER_APPEND once the leader applies the shrink, or
    a timeout) and stays on the log, committed only when the ISR grows back; its retries and
    the records after it are rejected before the append. Met on 4.3.1 by fuzz-s1126-4
    (bench/RESULTS-fuzz.md)."""
    view = w.leader_isr_view
    if view is None or len(view) < w.min_isr or not ids:
        return []
    first, rest = ids[0], tuple((r, "rejected") for r in ids[1:])
    outs: list[Outcome] = []
    for o in _append(w, ctx, (first,), "all"):
        unacked = tuple(a for a in o.world.acked if a[0] != first)
        outs.append(Outcome(evolve(o.world, acked=unacked), ((first, "rejected"),) + rest))
    return outs
