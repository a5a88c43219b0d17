"""Broker events: ``register``, ``unfence``, ``fence``, ``controlledShutdown``,
``unregister``.

KIP-966 'Controller behaviors': "During the broker registration, if the broker had an
unclean shutdown, the controller will remove the broker from ISR and ELR" (only with ELR
on; ``Profile.unclean_shutdown_detection``). Fencing, controlled shutdown and unregistration
take the broker out of every ISR and elect where it led ('ISR invariants'), re-running only
the partitions with the broker in the ISR, as the shipped controller does: a fenced ELR
member stays in the ELR (unregistration re-runs its ELR's partitions too, 3.8+). Unfencing
elects in the leaderless partitions only ('Controller behaviors' 3: an ELR member is elected
where the ISR is empty). A new incarnation's registration waits out the old session
(``_has_session``: not in the KIP).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Ctx, partition_change
from reference.model.controller_events.changes import (
    _accepted,
    _accepted_combined,
    _each,
    _elections,
    _refused,
)
from reference.model.controller_events.cluster import MAX_BRANCHES, Cluster, Prediction, Reg
from reference.model.state import World, evolve
from reference.releases.profiles import Profile


def _with_broker(c: Cluster, b: int, reg: Reg | None) -> Cluster:
    brokers = dict(c.brokers)
    if reg is None:
        brokers.pop(b, None)
    else:
        brokers[b] = reg
    return evolve(c, brokers=brokers)


def _keys_with(c: Cluster, b: int, elr_too: bool = False) -> list[str]:
    return [k for k, p in c.partitions.items()
            if b in p.isr or p.leader == b or (elr_too and b in p.elr)]


def _remove_broker(c: Cluster, ctx: Ctx, b: int, elr_too: bool) -> list[Cluster]:
    """generateLeaderAndIsrUpdates with ``b`` as the broker to remove: out of every ISR, a
    new leader where it led (fencing, controlled shutdown, unregistration)."""
    def change(w: World) -> list[World]:
        p = w.partition
        return partition_change(w, ctx, proposed_isr=p.isr - {b})
    return _each(c, _keys_with(c, b, elr_too), change)


def _fence_one(c: Cluster, ctx: Ctx, b: int, again: bool = False) -> list[Cluster]:
    """handleBrokerFenced; ``again``: also for a broker already fenced (its session
    expired after it was fenced, see ``_fence``)."""
    reg = c.brokers.get(b)
    if reg is None or (reg.fenced and not again):
        return [c]
    if not reg.fenced:
        c = _with_broker(c, b, evolve(reg, fenced=True))
    # Only the partitions with the broker in the ISR (handleBrokerFenced:
    # brokersToIsrs.partitionsWithBrokerInIsr in 3.6.2-4.4.0, sources or bytecode): a
    # fenced ELR member stays in the ELR and its partitions get no change.
    return _remove_broker(c, ctx, b, elr_too=False)


def _has_session(reg: Reg | None, profile: Profile) -> bool:
    """Whether ``reg`` still holds a session, so a new incarnation's registration is refused.
    4.0+ asks hasValidSession(brokerId, existing.epoch()) (ClusterControlManager.java:356 in
    4.0.2, :370 in 4.3.1): a contact time per (id, epoch), blind to fencing, that lives until
    it times out (BrokerHeartbeatTracker.java:141-145; KAFKA-17793). 3.x asks
    hasValidSession(brokerId) (ClusterControlManager.java:329/345/361/377 in
    3.6.2/3.7.2/3.8.1/3.9.2), false for a fenced broker (BrokerHeartbeatManager.java:349-354,
    :350-355 in 3.9.2), as one whose controlled shutdown completed is (SHUTDOWN_NOW is fenced,
    BrokerControlState.java:25)."""
    if reg is None or reg.expired:
        return False
    return profile.session_outlives_fencing or not reg.fenced


def _register(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    old = c.brokers.get(b)
    if _has_session(old, ctx.profile):
        return _refused(c, "DUPLICATE_BROKER_REGISTRATION")
    c2 = _with_broker(c, b, Reg(fenced=True, shutting_down=False, alive=True))
    clean = bool(e.get("clean", True)) or not ctx.profile.unclean_shutdown_detection
    if old is None and ctx.profile.unclean_shutdown_detection:
        # No registration to compare the PreviousBrokerEpoch with: 4.0+
        # ClusterControlManager.registerBroker keeps storedBrokerEpoch -2, which no request
        # carries, so the registration is handled as after an unclean shutdown
        # (handleBrokerShutdown(id, false, ..)): a broker unregistered while in an ELR (which
        # unregistration keeps with ELR on) leaves it when it registers again (4.0.2, 4.3.1
        # sources; measured on 4.4.0 with the driver).
        clean = False
    if clean or not ctx.elr_on:
        if not ctx.profile.elr_feature:
            return _accepted([c2])  # 3.x: only the unclean path below (addRecordsForShutdown)
        # 4.0+ ReplicationControlManager.handleBrokerShutdown(id, isCleanShutdown): a clean
        # shutdown, or ELR off, is handled "as if the broker was fenced": the partitions
        # with it in the ISR re-run with it as the broker to remove. Mostly nothing changes
        # (a fenced broker has left every ISR) but with ELR off the ISR keeps its last
        # member, and the re-run then elects uncleanly where the topic allows it (4.0.2,
        # 4.3.1 sources; measured on 4.4.0 with the driver, seed 4471).
        return _accepted(_remove_broker(c2, ctx, b, elr_too=False))

    # "During the broker registration, if the broker had an unclean shutdown, the
    # controller will remove the broker from ISR and ELR."
    def change(w: World) -> list[World]:
        p = w.partition
        return partition_change(w, ctx, proposed_isr=p.isr - {b},
                                unclean_shutdown=frozenset((b,)))
    return _accepted(_each(c2, _keys_with(c2, b, elr_too=True), change))


def _unfence(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    reg = c.brokers.get(b)
    if reg is None:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    if not reg.fenced or reg.shutting_down:
        return _accepted([_with_broker(c, b, evolve(reg, alive=True, expired=False))])
    c2 = _with_broker(c, b, evolve(reg, fenced=False, alive=True, expired=False))
    # handleBrokerUnfenced: the leaderless partitions get an election, and only they
    # (brokersToIsrs.partitionsWithNoLeader: 3.6.2-3.9 and 4.0.2, 4.3.1 sources, 4.4.0
    # bytecode). KIP-966 'Controller behaviors' 3: "If the replica is an ELR member and ISR
    # is empty, this replica will be elected as leader": an empty ISR is a leaderless
    # partition. A partition with a leader and the broker in its ELR is not re-run, so an
    # ELR that a lower min ISR left (set while ELR was off: no ClearElrRecord) stays
    # (bench/RESULTS-diff.md "Triage, fifth session": release:partitionEpoch:unfence).
    keys = [k for k, p in c2.partitions.items() if p.leader is None]
    return _accepted_combined(_elections(c2, keys, ctx, "online"))


def _fence(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    """The broker's session expires; the stale-broker task fences it and every other
    registered broker whose process is not running (their sessions expired too)."""
    b = int(e["broker"])
    # 4.0+ fences by session, not by state: maybeFenceOneStaleBroker takes the expired
    # (id, epoch) of BrokerHeartbeatTracker.maybeRemoveExpired, blind to fencing, and runs
    # handleBrokerFenced for it (ReplicationControlManager 4.3.1 lines 1739-1766;
    # KAFKA-17793). So a broker already fenced whose session was still open (a completed
    # controlled shutdown, SHUTDOWN_NOW, is fenced but its last heartbeat stays tracked; a
    # registered broker not yet unfenced heartbeats) is fenced again when it expires: taken
    # out of the ISRs it is still in. Only ELR off keeps a fenced broker in an ISR (its last
    # member); with ELR turned on since, that second fencing moves it to the ELR. 3.x
    # fences only unfenced brokers (findOneStaleBroker over the unfenced list).
    outlives = ctx.profile.session_outlives_fencing

    def expires(x: int, r: Reg) -> bool:
        if x == b:
            return outlives and (r.alive or not r.expired)
        return not r.alive and (not r.fenced or (outlives and not r.expired))
    order = [b] + sorted(x for x, r in c.brokers.items() if x != b and expires(x, r))
    states = [c]
    for x in order:
        reg = c.brokers.get(x)
        again = reg is not None and expires(x, reg)
        states = [y for s in states for y in _fence_one(s, ctx, x, again)][:MAX_BRANCHES]
    out: list[Cluster] = []
    for s in states:
        regs = {x: (_expired(r) if x == b or not r.alive else r) for x, r in s.brokers.items()}
        out.append(evolve(s, brokers=regs))
    return _accepted(out)


def _expired(r: Reg) -> Reg:
    """``r`` with its process not running and its session expired (``r`` itself if so)."""
    return r if not r.alive and r.expired else evolve(r, alive=False, expired=True)


def _controlled_shutdown(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    reg = c.brokers.get(b)
    if reg is None:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    c2 = _with_broker(c, b, evolve(reg, shutting_down=True))
    # As fencing: handleBrokerInControlledShutdown re-runs only the partitions with the
    # broker in the ISR (3.6.2-4.4.0).
    outs = _remove_broker(c2, ctx, b, elr_too=False)
    return _accepted([_with_broker(x, b, Reg(fenced=True, shutting_down=True, alive=False))
                      for x in outs])


def _unregister(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    if b not in c.brokers:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    c2 = _with_broker(c, b, None)
    # Unlike fencing, handleBrokerUnregistered re-runs the partitions with the broker in
    # the ELR too (brokersToElrs.partitionsWithBrokerInElr; 3.8.0-4.4.0, sources of 3.9,
    # 4.0.2, 4.3.1). With ELR on such a re-run changes nothing the broker's unfencing has
    # not already elected; with ELR turned off live it writes the ELR empty, as every
    # change does (PartitionChangeBuilder.maybeUpdateRecordElr), and KIP-966
    # "Compatibility": "all the ELR related fields will be removed on the next partition
    # change". 3.6/3.7 have no ELR index: they re-run the ISR's partitions only, but hold
    # no ELR at a production metadata.version.
    return _accepted(_remove_broker(c2, ctx, b, elr_too=True))
