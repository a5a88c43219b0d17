"""How an event handler predicts: each partition the event touches is changed in a
one-partition ``World`` made from the cluster (``world_of``), by the scenario model's own
rules (``reference.model.controller.partition_change``: KIP-966 'ELR update', election in
the 'Unclean recovery' decision order, reassignment completion, epochs), and the
partitions' alternatives are combined into at most ``MAX_BRANCHES`` clusters; a refused
event is one outcome with the model's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import product

from reference.model.controller import Ctx
from reference.model.controller_events.cluster import (
    CONTROLLER,
    MAX_BRANCHES,
    Cluster,
    Outcome,
    Prediction,
    TopicConf,
)
from reference.model.state import Broker, Config, Partition, World, evolve
from reference.releases.profiles import Profile


def ctx_for(profile: Profile, c: Cluster) -> Ctx:
    """The profile's ELR, unless an ``updateFeature`` changed the level live: then the
    level (the controller reads FeatureControlManager.isElrFeatureEnabled at every
    partition change, reference.model.controller.elr_on)."""
    on = profile.elr_on(c.elr_enabled) if c.elr_live is None else c.elr_live
    return Ctx(profile=profile, elr_on=on, rebalance=False)


def world_of(c: Cluster, key: str, p: Partition | None = None,
             extra: frozenset[int] = frozenset()) -> World:
    """The one-partition world of ``key``: the brokers its rules can look at (replicas,
    ISR, ELR, LastKnownELR, last known leader); an unregistered one is a stopped, fenced
    broker, never acceptable."""
    part = c.partitions[key] if p is None else p
    ids = set(part.replicas) | part.elr | part.isr | part.last_known_elr | extra
    if part.last_known_leader is not None:
        ids.add(part.last_known_leader)
    regs = c.brokers
    brokers = tuple(Broker(id=i, alive=i in regs, fenced=i not in regs or not regs[i].active)
                    for i in sorted(ids))
    topic = c.topic_of(key)
    t = c.topics.get(topic, TopicConf())
    # The effective min ISR takes partition 0's replica count for every partition of the
    # topic (ReplicationControlManager.getTopicEffectiveMinIsr, 4.3.1), as the trace rules
    # do (reference/trace/records.py min_isr).
    first = c.partitions.get(f"{topic}-0")
    cfg = Config(topic_min_isr=t.min_isr, cluster_min_isr=c.min_isr,
                 unclean_leader_election=c.unclean if t.unclean is None else t.unclean,
                 replication_factor=None if first is None else len(first.replicas))
    return World(brokers=brokers, controllers=(CONTROLLER,), partition=part, config=cfg)


def _bump(before: Partition, after: Partition) -> Partition:
    """One record: partition epoch + 1 when anything changed (PartitionRegistration.merge)."""
    same_epoch = evolve(after, partition_epoch=before.partition_epoch)
    if same_epoch == before:
        return before
    return evolve(after, partition_epoch=before.partition_epoch + 1)


Change = Callable[[World], list[World] | None]


def _each(c: Cluster, keys: Sequence[str], change: Change, prior: Cluster | None = None,
          extra: frozenset[int] = frozenset()) -> list[Cluster]:
    """``change`` applied to each partition of ``keys`` (independently: a partition change
    touches one partition); one cluster per combination of the partitions' alternatives."""
    base = c if prior is None else prior
    alts: list[list[Partition]] = []
    for key in keys:
        outs = change(world_of(c, key, extra=extra))
        if outs is None or not outs:
            alts.append([c.partitions[key]])
            continue
        seen: list[Partition] = []
        for w in outs:
            np = _bump(base.partitions[key], w.partition) if prior is not None else w.partition
            if np not in seen:
                seen.append(np)
        alts.append(seen)
    result: list[Cluster] = []
    for combo in product(*alts):
        parts = dict(c.partitions)
        parts.update(zip(keys, combo, strict=True))
        result.append(evolve(c, partitions=parts))
        if len(result) >= MAX_BRANCHES:
            break
    return result


def _refused(c: Cluster, error: str) -> Prediction:
    return Prediction((Outcome(False, c, error),))


def _accepted(clusters: Sequence[Cluster]) -> Prediction:
    out: list[Outcome] = []
    for x in clusters:
        o = Outcome(True, x)
        if o not in out:
            out.append(o)
    return Prediction(tuple(out))
