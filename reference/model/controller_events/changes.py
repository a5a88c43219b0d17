"""How an event handler predicts: each partition the event touches is changed in a
one-partition ``World`` made from the cluster (``world_of``), by the scenario model's own
rules (``reference.model.controller.partition_change``: KIP-966 'ELR update', election in
the 'Unclean recovery' decision order, reassignment completion, epochs), and the
partitions' alternatives are combined into at most ``MAX_BRANCHES`` clusters; a refused
event is one outcome with the model's reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import product

from reference.model.controller import Ctx, partition_change
from reference.model.controller_events.cluster import (
    CONTROLLER,
    MAX_BRANCHES,
    Cluster,
    Outcome,
    Prediction,
    TopicConf,
)
from reference.model.controller_events.reads import Reads, ReadSet, note, real, same_reads
from reference.model.state import Broker, Config, Partition, World, evolve
from reference.releases.profiles import Profile


def ctx_for(profile: Profile, c: Cluster) -> Ctx:
    """The profile's ELR, unless an ``updateFeature`` changed the level live: then the
    level (the controller reads FeatureControlManager.isElrFeatureEnabled at every
    partition change, reference.model.controller.elr_on)."""
    on = profile.elr_on(c.elr_enabled) if c.elr_live is None else c.elr_live
    return Ctx(profile=profile, elr_on=on, rebalance=False)


#: What the rules of one partition see of a broker: (id, registered, active).
BrokerView = tuple[int, bool, bool]


def _views(c: Cluster, part: Partition, extra: frozenset[int]) -> tuple[BrokerView, ...]:
    """The brokers the rules of ``part`` can look at (replicas, ISR, ELR, LastKnownELR, last
    known leader, ``extra``), in id order, as the controller's registrations show them."""
    ids = set(part.replicas) | part.elr | part.isr | part.last_known_elr | extra
    if part.last_known_leader is not None:
        ids.add(part.last_known_leader)
    regs = c.brokers
    return tuple((i, i in regs, i in regs and regs[i].active) for i in sorted(ids))


def _config(c: Cluster, key: str) -> Config:
    topic = c.topic_of(key)
    t = c.topics.get(topic, _NO_CONF)
    # The effective min ISR takes partition 0's replica count for every partition of the
    # topic (ReplicationControlManager.getTopicEffectiveMinIsr, 4.3.1), as the trace rules
    # do (reference/trace/records.py min_isr).
    first = c.partitions.get(f"{topic}-0")
    return _config_of(t.min_isr, c.min_isr, c.unclean if t.unclean is None else t.unclean,
                      None if first is None else len(first.replicas))


_NO_CONF = TopicConf()


@lru_cache(maxsize=1024)
def _config_of(topic_min_isr: int | None, cluster_min_isr: int, unclean: bool,
               replication_factor: int | None) -> Config:
    return Config(topic_min_isr=topic_min_isr, cluster_min_isr=cluster_min_isr,
                  unclean_leader_election=unclean, replication_factor=replication_factor)


def _world(part: Partition, views: tuple[BrokerView, ...], cfg: Config) -> World:
    """An unregistered broker is a stopped, fenced broker, never acceptable."""
    return evolve(_BLANK, brokers=tuple(map(_broker, views)), partition=part, config=cfg)


#: The world ``_world`` fills in: every other field at its default (a copy of it is the world
#: World's __init__ would make, in a third of the time: no 34 frozen fields set one by one).
_BLANK = World(brokers=(), controllers=(CONTROLLER,), partition=Partition(replicas=(), leader=None),
               config=Config())


@lru_cache(maxsize=4096)
def _broker(view: BrokerView) -> Broker:
    """The world's broker for one view (the same value for the same view: brokers are
    immutable, so one object serves every world)."""
    i, registered, active = view
    return Broker(id=i, alive=registered, fenced=not active)


def world_of(c: Cluster, key: str, p: Partition | None = None,
             extra: frozenset[int] = frozenset()) -> World:
    """The one-partition world of ``key``: the brokers its rules can look at (replicas,
    ISR, ELR, LastKnownELR, last known leader); an unregistered one is a stopped, fenced
    broker, never acceptable."""
    part = c.partitions[key] if p is None else p
    return _world(part, _views(c, part, extra), _config(c, key))


def min_isr_of(c: Cluster, key: str) -> int:
    """The effective min ISR of partition ``key`` (``World.min_isr`` of its world)."""
    cfg = _config(c, key)
    configured = cfg.topic_min_isr if cfg.topic_min_isr is not None else cfg.cluster_min_isr
    rf = len(c.partitions[key].replicas) if cfg.replication_factor is None \
        else cfg.replication_factor
    return configured if 1 <= configured <= rf else max(1, min(configured, rf))


def _elected(ctx: Ctx, part: Partition, views: tuple[BrokerView, ...], cfg: Config,
             election: str) -> tuple[Partition, ...]:
    """The partitions an election of kind ``election`` (``partition_change`` with nothing
    proposed) may leave, in order, each once. A function of its arguments alone (the
    one-partition world is made of them), so ``_elections`` keeps it for the same
    arguments: an unfencing re-runs every leaderless partition of the cluster
    (handleBrokerUnfenced), most of them with the same world as at the last unfencing."""
    outs = partition_change(_world(part, views, cfg), ctx, election=election)
    return tuple(dict.fromkeys(w.partition for w in outs)) or (part,)


#: The elections kept: by (partition, its brokers' views, its config, the election, ELR on),
#: each ``_elected`` value with the profile fields its run read and their values
#: (reads.py). A profile that holds those values makes the same run, so the value stands
#: for every such profile (the kip axis's deviation sets share most of them). A value is a
#: function of its key and those fields alone, so dropping what is kept (when it grows past
#: ``_KEPT_MAX``) changes the time, never a prediction.
_KEPT: dict[tuple[Partition, tuple[BrokerView, ...], Config, str, bool, bool],
            list[tuple[ReadSet, tuple[Partition, ...]]]] = {}
_KEPT_MAX = 1 << 15


def _elections(c: Cluster, keys: Sequence[str], ctx: Ctx, election: str) -> list[Cluster]:
    """``partition_change`` with election ``election`` and nothing proposed, on each
    partition of ``keys``: as ``_each`` with that change."""
    profile = real(ctx.profile)
    if ctx.build_rules is not None or ctx.birth_profile is not None:
        # profiles the reads are not kept of (ctx_for makes neither): nothing kept
        return _combine(c, keys, [_elected(ctx, c.partitions[key], _views(
            c, c.partitions[key], _NO_EXTRA), _config(c, key), election) for key in keys])
    alts: list[tuple[Partition, ...]] = []
    parts = c.partitions
    for key in keys:
        p = parts[key]
        views = _views(c, p, _NO_EXTRA)
        cfg = _config(c, key)
        k = (p, views, cfg, election, ctx.elr_on, ctx.rebalance)
        runs = _KEPT.get(k)
        if runs is None:
            if len(_KEPT) >= _KEPT_MAX:
                _KEPT.clear()
            runs = _KEPT[k] = []
        got = next((run for run in runs if same_reads(profile, run[0])), None)
        if got is None:
            track = Reads(profile)
            outs = _elected(Ctx(profile=track.as_profile(), elr_on=ctx.elr_on,
                                rebalance=ctx.rebalance), p, views, cfg, election)
            got = (track.reads(), outs)
            runs.append(got)
        note(ctx.profile, got[0])
        alts.append(got[1])
    return _combine(c, keys, alts)


_NO_EXTRA: frozenset[int] = frozenset()


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
    return _combine(c, keys, alts)


def _combine(c: Cluster, keys: Sequence[str], alts: Sequence[Sequence[Partition]]
             ) -> list[Cluster]:
    """One cluster per combination of the partitions' alternatives (at most
    MAX_BRANCHES)."""
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


def _accepted_combined(clusters: Sequence[Cluster]) -> Prediction:
    """``_accepted`` of ``_combine``'s (or ``_elections``') clusters, without comparing them:
    each is one combination of per-partition alternatives that differ from each other (an
    election's ``dict.fromkeys``), so no two are equal and none would be dropped."""
    return Prediction(tuple(Outcome(True, x) for x in clusters))
