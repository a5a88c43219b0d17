"""Settling: the protocol actions in their priority, run until none applies.

``settle`` explores every branch the profile leaves open (kip966: any valid candidate in an
election) and the protocol's races it models (during a reassignment, which in-sync follower
joins the ISR first: ``replication._shrink_or_expand``), and returns each settled world
once. A reassignment completes inside the partition change that makes it complete (KIP-966
'Other behaviors' 4), so no action of its own does.
Timing-dependent extras start from settled worlds: auto leader rebalance (``rebalanced``,
the preferred election of KIP-1303 'Preferred Leader Election') and, without Pre-Vote, a
rejoined controller forcing a quorum election (``pending_disruptions``).
"""

from __future__ import annotations

from reference.model.controller import Ctx, candidate_order, partition_change
from reference.model.protocol.brokers import _broker_actions, _elect, _metadata
from reference.model.protocol.hwm import _advance_hwm, _learned_hwm
from reference.model.protocol.quorum import _quorum
from reference.model.protocol.replication import _replicate, _shrink_or_expand, _stale_fetch
from reference.model.state import World, evolve

MAX_SETTLE = 10_000


def pending_disruptions(w: World, ctx: Ctx) -> list[World]:
    """Without Pre-Vote, a controller that rejoined with a raised epoch and has not forced
    an election yet may do so at any later moment (its next Vote request; seen on 3.7.2 and
    3.9.1 after the step that healed it had settled): at the start of a step, either it has
    not yet (``w``) or it has, and the election is over (one branch per winner: any
    controller that reaches a majority, as the model keeps no per-controller log)."""
    if not w.may_disrupt or w.quorum_leader is None or ctx.profile.pre_vote:
        return [w]
    return [w, *settle(evolve(w, quorum_leader=None), ctx)]


#: No action of its own completes a reassignment: partition_change does, on every
#: partition change (PartitionChangeBuilder.build), as Kafka's controller.
ACTIONS = (_quorum, _stale_fetch, _broker_actions, _elect, _learned_hwm, _metadata, _replicate,
           _shrink_or_expand, _advance_hwm)


def _step_once(w: World, ctx: Ctx) -> list[World] | None:
    for action in ACTIONS:
        nxt = action(w, ctx)
        if nxt is not None:
            return nxt
    return None


def settle(w: World, ctx: Ctx) -> list[World]:
    """All settled states reachable from ``w`` by protocol actions (branching on
    elections the profile leaves open), plus, when auto leader rebalance is on, the
    state after the preferred replica took the leadership back."""
    done: list[World] = []
    seen: set[World] = set()  # filled only when an action branches
    stack = [w]
    n = 0
    while stack:
        x = stack.pop()
        n += 1
        if n > MAX_SETTLE:
            raise RuntimeError("protocol did not settle")
        nxt = _step_once(x, ctx)
        while nxt is not None and len(nxt) == 1:  # linear stretch: no dedupe needed
            x = nxt[0]
            n += 1
            if n > MAX_SETTLE:
                raise RuntimeError("protocol did not settle")
            nxt = _step_once(x, ctx)
        if nxt is None:
            if x not in done:
                done.append(x)
            continue
        for y in nxt:
            if y not in seen:
                seen.add(y)
                stack.append(y)
    if ctx.rebalance:
        extra: list[World] = []
        for x in done:
            extra.extend(z for z in rebalanced(x, ctx) if z not in done and z not in extra)
        done.extend(extra)
    return done


def _preferred(w: World, ctx: Ctx) -> list[World]:
    """Preferred election: the first replica in assignment order, which KIP-1303 first
    stably sorts by local-log eligibility ("Preferred Leader Election")."""
    p = w.partition
    order = candidate_order(w, ctx, p.replicas)
    if not order or p.leader == order[0] or p.leader is None:
        return []
    outs = partition_change(w, ctx, election="preferred")
    return [x for x in outs if x.partition.leader != p.leader]


def rebalanced(w: World, ctx: Ctx) -> list[World]:
    """Settled states after auto leader rebalance moved the leadership back to the
    preferred replica (timing dependent: leader.imbalance.check.interval.seconds)."""
    if not w.config.auto_leader_rebalance:
        return []
    out: list[World] = []
    for y in _preferred(w, ctx):
        for z in settle(y, evolve(ctx, rebalance=False)):
            if z != w and z not in out:
                out.append(z)
    return out
