"""Protocol actions and harness steps.

``settle`` runs the protocol actions a step causes until none applies (the state a
real cluster reaches once session timeouts fenced, lagging replicas left the ISR,
elections ran, followers caught up): registration (with unclean-shutdown detection),
fencing, unfencing, elections, metadata propagation, replication and truncation,
AlterPartition shrink/expand from the leader, HWM advancement (a reassignment
completes inside the partition change that makes it complete). ``apply_step`` expands
one harness step and settles.

Connectivity: a cut link (src, dst) blackholes connections src opens to dst.
Heartbeats and AlterPartition go broker -> controller, fetches follower -> leader,
produce client -> leader, GetReplicaLogInfo controller -> broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from reference.model.controller import (
    Choice,
    Ctx,
    acceptable,
    active_controller,
    candidate_order,
    choose_leader,
    link,
    partition_change,
    reaches_majority,
    session_ok,
    unclean_recovery,
)
from reference.model.state import CLIENT, Broker, Config, Record, World, evolve

MAX_SETTLE = 10_000


@dataclass(frozen=True, slots=True)
class Outcome:
    """One branch after a step: the settled world and, for Produce, the ack outcome
    of each record ("acked" | "rejected" | "either")."""

    world: World
    acks: tuple[tuple[str, str], ...] = ()
    unsupported: str | None = None


class Step(Protocol):
    """What the model needs of a harness step kind (steps.py; harness-defined kinds
    implement it too): its FORMAT.md mapping and what it does to the world."""

    kind: ClassVar[str]

    def params(self) -> dict[str, Any]: ...

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]: ...


# --- helpers --------------------------------------------------------------------


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


# --- protocol actions -----------------------------------------------------------


def _broker_actions(w: World, ctx: Ctx) -> list[World] | None:
    """Registration, then fencing, then unfencing (in this priority over all brokers).
    Metadata propagation comes after elections (``_metadata``)."""
    c = active_controller(w)
    if c is None:
        return None  # no KRaft quorum: no metadata record can be written
    sess = [b.alive and link(w, b.id, c) for b in w.brokers]
    for b, ok in zip(w.brokers, sess, strict=True):
        if ok and b.pending_registration:
            return _register(w, ctx, b)
    stale = [b for b, ok in zip(w.brokers, sess, strict=True)
             if not ok and not b.fenced and not b.pending_registration]
    if stale:
        # The controller fences one stale broker at a time, the one whose last heartbeat
        # is oldest (ReplicationControlManager.maybeFenceOneStaleBroker ->
        # BrokerHeartbeatManager.findOneStaleBroker), and each fencing re-elects before
        # the next. Brokers cut off by one step lost contact at heartbeat times the model
        # does not know: any of them may be first. Found by `kafka-chaos fuzz` on 4.3.1
        # (a partition sending brokers 1 and 2 away, seed 44: 2 was fenced first, so
        # leader 1 of replicas [2, 1, 3] handed over to 3 in one epoch, not via 2).
        return [x for b in stale for x in _fence(w, ctx, b)]
    ready = [b for b, ok in zip(w.brokers, sess, strict=True)
             if ok and b.fenced and not b.pending_registration]
    if not ready:
        return None
    firsts = _first_unfencings(w, ctx, ready)
    if len(firsts) > 1:
        # Which heartbeat reaches the controller first is timing; the controller elects
        # a leaderless partition's leader at that broker's unfencing
        # (ReplicationControlManager.handleBrokerUnfenced -> generateLeaderAndIsrUpdates
        # over partitionsWithNoLeader): any electable broker may be first. Found by
        # `kafka-chaos fuzz` on 4.3.1 (ELR [1, 2] both unfenced by one heal: 2 elected).
        return [x for outs in firsts.values() for x in outs]
    return [w.with_broker(evolve(ready[0], fenced=False))]


def _first_unfencings(w: World, ctx: Ctx, ready: Sequence[Broker]) -> dict[int, list[World]]:
    """For each fenced broker about to be unfenced that a leaderless partition may elect at
    the first unfencing, the states after that unfencing and its election: its ISR and ELR
    members, and a replica the controller elects when unfenced alone (an unclean election:
    generateLeaderAndIsrUpdates sets Election.UNCLEAN when the topic enables it, so with
    ISR and ELR empty the first replica back leads; found by `kafka-chaos hunt` on 4.1.2,
    fuzz-s42-33: replicas [2, 1], both unfenced by one heal, 1 elected where the
    assignment order names 2)."""
    p = w.partition
    out: dict[int, list[World]] = {}
    if p.leader is not None:
        return out
    for b in ready:
        member = b.id in p.isr or b.id in p.elr
        if not member and b.id not in p.replicas:
            continue
        first = w.with_broker(evolve(b, fenced=False))
        elected = _elect(first, ctx) or []
        if member:
            out[b.id] = elected or [first]
        elif any(x.partition.leader == b.id for x in elected):
            out[b.id] = elected
    return out


def _register(w: World, ctx: Ctx, b: Broker) -> list[World]:
    # "The controller will verify the broker epoch in the request with its
    # registration record. If it is the same, it is a clean shutdown."
    clean = (b.clean_shutdown_epoch is not None and b.clean_shutdown_epoch == b.epoch) \
        or not ctx.profile.unclean_shutdown_detection
    nb = evolve(b, pending_registration=False, fenced=False,
                epoch=w.next_broker_epoch, clean_shutdown_epoch=None,
                last_shutdown_clean=clean,
                known_leader_epoch=w.partition.leader_epoch)
    w2 = evolve(w.with_broker(nb), next_broker_epoch=w.next_broker_epoch + 1)
    if clean:
        return [w2]
    w2 = evolve(w2, unclean_shutdowns=w2.unclean_shutdowns + 1)
    p = w2.partition
    if ctx.elr_on and (b.id in p.isr or b.id in p.elr):
        # "During the broker registration, if the broker had an unclean shutdown,
        # the controller will remove the broker from ISR and ELR".
        return partition_change(w2, ctx, proposed_isr=p.isr - {b.id},
                                unclean_shutdown=frozenset((b.id,)))
    return [w2]


def _fence(w: World, ctx: Ctx, b: Broker) -> list[World]:
    """Session timeout (or controlled shutdown): fenced, leaves the ISR."""
    w2 = w.with_broker(evolve(b, fenced=True))
    p = w2.partition
    if b.id in p.isr or p.leader == b.id:
        stays = p.leader == b.id and not ctx.profile.fenced_leader_leaves_isr
        return partition_change(w2, ctx, proposed_isr=p.isr if stays else p.isr - {b.id})
    return [w2]


def _elect(w: World, ctx: Ctx) -> list[World] | None:
    p = w.partition
    if p.leader is not None and acceptable(w.broker(p.leader)) and p.leader in p.isr:
        return None
    if p.leader is None and choose_leader(w, ctx, p.isr, p.elr, "online") == [Choice(None)]:
        return None  # still nothing to elect
    outs = [x for x in partition_change(w, ctx) if x != w]
    return outs or None


def _metadata(w: World, ctx: Ctx) -> list[World] | None:
    """A broker applies the newest partition metadata. One that starts leading forgets
    what it heard from its followers; one that led before and still leads keeps it: a
    broker catching up after a cut applies the records it missed as one delta
    (MetadataLoader), so it never sees the epochs between."""
    p = w.partition
    for b in w.brokers:
        if (b.known_leader_epoch != p.leader_epoch and b.alive and not b.pending_registration
                and session_ok(w, b)):
            heard = (b.heard_from or frozenset[int]()) if p.leader == b.id else None
            return [w.with_broker(evolve(b, known_leader_epoch=p.leader_epoch,
                                         heard_from=heard))]
    return None


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


def hwm_inputs(w: World) -> tuple[object, ...]:
    """What makes a leader recompute its HWM (Partition.maybeIncrementLeaderHW's callers):
    its own append, a follower's log end moving in a fetch (updateFollowerFetchState),
    an ISR change it made or a partition change it applied (makeLeader), here: the leader
    and partition epochs, every log end and the followers the leader heard from."""
    p = w.partition
    leader = leader_broker(w)
    return (p.leader, p.partition_epoch, tuple(b.leo for b in w.brokers),
            leader.heard_from if leader is not None else None)


def _advance_hwm(w: World, ctx: Ctx) -> list[World] | None:
    leader = leader_broker(w)
    if leader is None:
        return None
    if w.hwm_computed_from is not None:
        # A min.insync.replicas change is no HWM trigger: the leader applies the topic's
        # partition changes before its configs (BrokerMetadataPublisher.onMetadataUpdate:
        # replicaManager.applyDelta, then dynamicConfigPublisher), so even the ClearElr
        # change of the same batch recomputes with the old min ISR; the HWM waits for
        # the next trigger. Found by `kafka-chaos fuzz` on 4.3.1 (seed 44, fuzz-s44-16:
        # min ISR 2 -> 1 with ISR [3] and its follower cut; the HWM stayed below the
        # leader's log end until the heal).
        if w.hwm_computed_from == hwm_inputs(w):
            return None
        return [evolve(w, hwm_computed_from=None)]
    p = w.partition
    # "HWM can only advance if the ISR size is larger or equal to min.insync.replicas";
    # "The ISR membership refers to the latest ISR membership persisted by the
    # controller, not the maximal ISR".
    if ctx.profile.hwm_rule and len(p.isr) < w.min_isr:
        target = leader.hwm
    else:
        leos = [leader.leo]
        for r in p.isr - {leader.id}:
            f = w.broker(r)
            known = r in (leader.heard_from or ()) and (
                same_log(f.log, leader.log) or f.log == leader.log[: f.leo])
            leos.append(f.leo if known else 0)
        target = min(leos)
    new = min(max(target, leader.hwm), leader.leo)
    if new == leader.hwm:
        return None
    w2 = w.with_broker(evolve(leader, hwm=new))
    return [evolve(w2, max_hwm=max(w2.max_hwm, new))]


def _learned_hwm(w: World, ctx: Ctx) -> list[World] | None:
    """A follower elected in the step right after a produce (Model.apply keeps the window
    open through network steps that change nothing) may still know an HWM from
    before that produce reached its end (Profile.leader_hwm_lag): its HWM as leader is any
    value from the HWM when the produce began to the one it would have learned, one branch
    each; the observation narrows them."""
    floor = w.hwm_before_produce
    leader = leader_broker(w)
    if floor is None or leader is None or leader.id == w.leader_at_produce:
        return None
    done = evolve(w, hwm_before_produce=None, leader_at_produce=None)
    return [done] + [done.with_broker(evolve(leader, hwm=h))
                     for h in range(floor, leader.hwm)]


def _quorum(w: World, ctx: Ctx) -> list[World] | None:
    """The metadata quorum (KRaft, KIP-595): a leader that no longer reaches a majority
    resigns (CheckQuorum, KAFKA-15489, 3.7.0); with no leader, any controller that reaches
    a majority may win the election (one branch each: who wins is timing). Without Pre-Vote
    (KIP-996, 4.0) a controller cut off from the leader becomes a candidate and raises its
    epoch; once it reaches a majority again it may force an election or not (timing), with
    Pre-Vote it cannot. The model keeps no per-controller metadata log: every committed
    record is on a majority, and the partition state is the quorum's, kept across leaders."""
    cs = w.controllers
    if len(cs) == 1:
        return None
    cur = w.quorum_leader
    if cur is None:
        won = [c for c in cs if reaches_majority(w, c)]
        if not won:
            return None  # no majority: no leader, no metadata record can be committed
        return [evolve(w, quorum_leader=c, quorum_elections=w.quorum_elections + 1,
                       campaigning=frozenset(d for d in w.campaigning
                                             if not (link(w, d, c) and link(w, c, d))),
                       may_disrupt=frozenset())
                for c in won]
    if not reaches_majority(w, cur):
        return [evolve(w, quorum_leader=None)]
    if ctx.profile.pre_vote:
        return None
    cut_off = frozenset(c for c in cs if c != cur and not (link(w, c, cur) and link(w, cur, c)))
    if cut_off - w.campaigning:
        return [evolve(w, campaigning=w.campaigning | cut_off)]
    back = frozenset(c for c in w.campaigning if c not in cut_off)
    if back:
        calm = evolve(w, campaigning=w.campaigning - back)
        return [evolve(calm, may_disrupt=calm.may_disrupt | back),
                evolve(calm, quorum_leader=None)]
    return None


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
ACTIONS = (_quorum, _broker_actions, _elect, _learned_hwm, _metadata, _replicate,
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


# --- steps ----------------------------------------------------------------------


def all_nodes(w: World) -> tuple[int, ...]:
    return tuple(b.id for b in w.brokers) + w.controllers + (CLIENT,)


def cut_links(w: World, pairs: Iterable[tuple[int, int]]) -> World:
    """Blackhole the connections each src opens to its dst."""
    return evolve(w, cuts=w.cuts | frozenset(pairs))


def set_config(cfg: Config, scope: str, key: str, value: str) -> Config:
    v = value.strip()
    if key == "min.insync.replicas":
        if scope == "topic":
            return evolve(cfg, topic_min_isr=int(v))
        return evolve(cfg, cluster_min_isr=int(v))
    if key == "unclean.leader.election.enable":
        return evolve(cfg, unclean_leader_election=v.lower() == "true")
    if key == "unclean.recovery.strategy":
        return evolve(cfg, unclean_recovery_strategy=v.capitalize() if v.lower() != "none"
                       else "None")
    if key == "unclean.recovery.manager.enabled":
        return evolve(cfg, unclean_recovery_manager=v.lower() == "true")
    if key == "unclean.recovery.timeout.ms":
        return evolve(cfg, unclean_recovery_timeout_ms=int(v))
    if key == "leader.election.eligible.local.log.ms":
        return evolve(cfg, eligible_local_log_ms=int(v))
    if key == "leader.election.eligible.local.log.bytes":
        return evolve(cfg, eligible_local_log_bytes=int(v))
    if key == "auto.leader.rebalance.enable":
        return evolve(cfg, auto_leader_rebalance=v.lower() == "true")
    return cfg


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
    if acks == "all" and len(p.isr) < w.min_isr and ctx.profile.acks_all_needs_min_isr:
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
    return not ctx.profile.acks_all_needs_min_isr or len(x.partition.isr) >= x.min_isr


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
    one before this step when this step changed it, else None."""
    view = before.min_isr if after.min_isr != before.min_isr else None
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


def elect_step(w: World, ctx: Ctx, kind: str, broker: int | None) -> list[Outcome]:
    """ElectLeaders of type ``kind`` (``broker`` for a designated election)."""
    p = w.partition
    prof = ctx.profile
    if kind in ("longest_log_aggressive", "longest_log_balanced", "designated") \
            and not prof.unclean_recovery:
        msg = (f"ElectLeaders {kind} (KIP-966 part 2, unclean recovery) is not in profile "
               f"{prof.name}")
        return [Outcome(x, unsupported=msg) for x in settle(w, ctx)]
    if kind == "preferred":
        outs = _preferred(w, ctx)
        starts = outs or [w]
    elif p.leader is not None:
        # "the election is only performed if there are no leader for the partition".
        starts = [w]
    elif kind == "unclean":
        starts = partition_change(w, ctx, election="unclean")
    elif kind == "designated":
        b = broker
        ok = b is not None and b in p.replicas and acceptable(w.broker(b))
        ch = [Choice(b, unclean=True, deliberate=True)] if ok else [Choice(None)]
        starts = partition_change(w, ctx, choices=ch)
    else:
        strategy = "Aggressive" if kind == "longest_log_aggressive" else "Balanced"
        ch = unclean_recovery(w, ctx, strategy, p.last_known_elr)
        ch = [evolve(c, deliberate=True) for c in ch]
        starts = partition_change(w, ctx, choices=ch)
    res: list[Outcome] = []
    for s in starts:
        res.extend(Outcome(x) for x in settle(s, ctx) if all(o.world != x for o in res))
    return res


def apply_step(w: World, ctx: Ctx, step: Step, settle_after: bool = True) -> list[Outcome]:
    """Expand one harness step into the protocol actions it causes; settled branches.

    ``settle_after=False`` (only for kill / lose_unflushed / network steps that another
    step follows at once) returns the unsettled state."""
    changed = step.transition(w, ctx)
    if isinstance(changed, list):
        return changed
    if not settle_after:
        return [Outcome(changed)]
    return [Outcome(x) for x in settle(changed, ctx)]


def initial_world(brokers: tuple[int, ...], controllers: tuple[int, ...],
                  replicas: tuple[int, ...], config: Config) -> World:
    """A freshly created topic: every replica in the ISR, the first one leads, epoch 0."""
    from reference.model.state import Partition

    first = replicas[0]
    bs = tuple(Broker(id=b, epoch=1, known_leader_epoch=0,
                      heard_from=frozenset(replicas[1:]) if b == first else None)
               for b in sorted(brokers))
    part = Partition(replicas=replicas, leader=replicas[0], leader_epoch=0, partition_epoch=0,
                     isr=frozenset(replicas))
    return World(brokers=bs, controllers=controllers, partition=part, config=config)
