"""Applying one harness step: what a step is (``Step``) and yields (``Outcome``), the world
edits step transitions share (cut links, set a config), ElectLeaders, ``apply_step`` and a
freshly created topic (``initial_world``).

ElectLeaders: "the election is only performed if there are no leader for the partition"
(KIP-966 ElectLeaders, quoted in ``elect_step``); its longest-log and designated elections
are KIP-966 part 2 ('Unclean recovery': GetReplicaLogInfo, "the replica with the highest
leader epoch plus the longest log end offset"), only in profiles with
``unclean_recovery``. ``set_config`` reads the KIP's configs (``unclean.recovery.strategy``,
``unclean.recovery.manager.enabled``, ``unclean.recovery.timeout.ms``) and KIP-1303's
(``leader.election.eligible.local.log.*``).

Connectivity: a cut link (src, dst) blackholes connections src opens to dst.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from reference.model.controller import (
    Choice,
    Ctx,
    acceptable,
    partition_change,
    unclean_recovery,
)
from reference.model.protocol.settling import _preferred, settle
from reference.model.state import CLIENT, Broker, Config, World, evolve


@dataclass(frozen=True, slots=True)
class Outcome:
    """One branch after a step: the settled world and, for Produce, the ack outcome
    of each record ("acked" | "rejected" | "either")."""

    world: World
    acks: tuple[tuple[str, str], ...] = ()
    unsupported: str | None = None
    #: For a step the build may refuse (``feature``): whether the model predicts it does.
    refused: bool | None = None


class Step(Protocol):
    """What the model needs of a harness step kind (steps.py; harness-defined kinds
    implement it too): its FORMAT.md mapping and what it does to the world."""

    kind: ClassVar[str]

    def params(self) -> dict[str, Any]: ...

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]: ...


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
    return World(brokers=bs, controllers=controllers, partition=part, config=config,
                 created_replicas=replicas, created_topic_min_isr=config.topic_min_isr)
