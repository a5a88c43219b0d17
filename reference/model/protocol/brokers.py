"""Broker sessions at the controller: registration, fencing, unfencing, the elections
they cause, and brokers applying the partition metadata.

KIP-966 'Detection of an unclean shutdown': "The controller will verify the broker epoch in
the request with its registration record. If it is the same, it is a clean shutdown"; and
'Controller behaviors' (before the registration record is persisted): "During the broker
registration, if the broker had an unclean shutdown, the controller will remove the broker
from ISR and ELR" (only with ELR on; ``Profile.unclean_shutdown_detection``), an ELR member
so removed joining the LastKnownELR ('Other behaviors' 6, in ``partition_change``). 'ISR
invariants': "removing a replica out of ISR if ... it is fenced by the controller", the
leader too unless ``Profile.fenced_leader_leaves_isr`` is off. A broker's unfencing elects a
leaderless partition's leader in the decision order of 'Unclean recovery' (ISR member, then
unfenced ELR member: ``reference.model.controller.choose_leader``).

Connectivity: heartbeats go broker -> controller; a broker whose heartbeats do not reach the
active controller loses its session.
"""

from __future__ import annotations

from collections.abc import Sequence

from reference.model.controller import (
    Choice,
    Ctx,
    acceptable,
    active_controller,
    choose_leader,
    elr_on,
    link,
    partition_change,
    session_ok,
)
from reference.model.metadata_version import clean_shutdown_detected
from reference.model.state import Broker, World, evolve


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
    # KIP-966 "Clean shutdown": "guarded by a new metadata version. Before that, the
    # controller will treat all the registrations with unclean shutdowns" (4.0-IV1:
    # reference/model/metadata_version.py, CLEAN_SHUTDOWN). ELR is off below it too, so
    # such a registration changes no partition, as Kafka's handleBrokerShutdown does.
    clean = (b.clean_shutdown_epoch is not None and b.clean_shutdown_epoch == b.epoch
             and clean_shutdown_detected(w.metadata_level)) \
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
    if elr_on(w2, ctx) and (b.id in p.isr or b.id in p.elr):
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
    if active_controller(w) is None:
        return None  # only the active controller elects (no quorum, or its one controller down)
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
