"""The high watermark: when the leader advances it, and the one a newly elected leader
may still hold.

KIP-966 'Additional High Watermark advancement requirement': "HWM can only advance if the
ISR size is larger or equal to min.insync.replicas"; "The ISR membership refers to the
latest ISR membership persisted by the controller, not the maximal ISR" (``Profile.hwm_rule``;
before 3.7.0 the HWM advances with the ISR alone, deviation no-hwm-rule). A leader
recomputes its HWM only on what Kafka recomputes it on (``hwm_inputs``), and a follower
elected right after a produce may lead with an older HWM (``Profile.leader_hwm_lag``,
deviation new-leader-hwm-lag).
"""

from __future__ import annotations

from reference.model.controller import Ctx, broker_rules
from reference.model.protocol.replication import leader_broker, same_log
from reference.model.state import World, evolve


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
    if broker_rules(w, ctx, leader.id).hwm_rule and len(p.isr) < w.min_isr:  # the leader's
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
