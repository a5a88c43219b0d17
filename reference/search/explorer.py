"""Exhaustive explorer: breadth-first search over schedules of harness steps on a
small cluster, with state hashing and (where the profile allows) symmetry
reduction. Every new state is checked against the invariants; the first violation
of each invariant is reported with a shortest schedule (BFS gives minimality), which
can be rendered as a scenario file (fixtures/scenarios/FORMAT.md).

Pure: no clock. Callers time it.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference.model import steps as S
from reference.model.controller import Ctx
from reference.model.invariants import INVARIANTS, check
from reference.model.predict import config_from
from reference.model.protocol import apply_step, initial_world
from reference.model.state import ClusterSpec, TopicSpec, World
from reference.releases.catalog import get_profile
from reference.releases.profiles import Profile
from reference.search.generators import ALL as GENERATORS
from reference.search.generators import Generator, Move

StateKey = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Counterexample:
    invariant: str
    detail: str
    moves: tuple[Move, ...]
    world: World

    @property
    def steps(self) -> tuple[S.Step, ...]:
        return tuple(s for m in self.moves for s in m)


@dataclass
class ExploreResult:
    profile: str
    brokers: int
    min_isr: int
    depth: int
    states: int = 0
    transitions: int = 0
    levels: list[int] = field(default_factory=list)
    counterexamples: list[Counterexample] = field(default_factory=list)
    truncated: bool = False


def default_moves(brokers: Sequence[int],
                  generators: Mapping[str, Generator] = GENERATORS) -> list[Move]:
    """The step alphabet, from the step registry: every kind whose generator has an
    exploration (produce, isolate, heal, kill, clean stop, restart, and the unclean
    shutdown that loses the whole unflushed log), its one move for the cluster or one per
    broker, in the registry's order."""
    return [m for g in generators.values() if g.explore is not None
            for m in g.explore.moves(brokers)]


def enabled(w: World, move: Move,
            generators: Mapping[str, Generator] = GENERATORS) -> bool:
    """Skip moves that cannot change anything (kill a dead broker, heal no cut): the
    exploration of the move's first step's kind says."""
    x = generators[move[0].kind].explore
    return x is None or x.can_change(w, move[0])


def _canon(w: World) -> tuple[dict[int, tuple[Any, ...]], tuple[Any, ...], dict[int, int]]:
    """Permutation-independent parts: per-broker facts, acked records, epoch ranks.
    Only the order of leader epochs and of record ids matters, so both are renamed
    densely; broker epochs reduce to "the clean-shutdown file matches", metadata to
    "knows the current leader epoch"."""
    p = w.partition
    epochs = {p.leader_epoch}
    rids: set[str] = {r for r, _ in w.acked}
    for b in w.brokers:
        for e, r in b.log:
            epochs.add(e)
            rids.add(r)
    erank = {e: i for i, e in enumerate(sorted(epochs))}
    rrank = {r: i for i, r in enumerate(sorted(rids, key=_record_order))}
    per = {
        b.id: (b.alive, b.fenced, b.pending_registration, b.clean_shutdown_epoch == b.epoch,
               tuple((erank[e], rrank[r]) for e, r in b.log), b.hwm,
               b.known_leader_epoch == p.leader_epoch, b.heard_from is not None)
        for b in w.brokers
    }
    acked = tuple(sorted((rrank[r], a) for r, a in w.acked))
    return per, acked, erank


def _key(w: World, per: dict[int, tuple[Any, ...]], acked: tuple[Any, ...],
         erank: dict[int, int], perm: dict[int, int] | None, ordered: bool) -> StateKey:
    def m(x: int) -> int:
        return x if perm is None else perm.get(x, x)

    def ms(xs: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted(m(x) for x in xs))

    p = w.partition
    heard = {b.id: ms(b.heard_from or ()) for b in w.brokers}
    brokers = tuple(sorted((m(i), *v, heard[i]) for i, v in per.items()))
    part = (tuple(m(r) for r in p.replicas) if ordered else ms(p.replicas),
            None if p.leader is None else m(p.leader), erank[p.leader_epoch], ms(p.isr),
            ms(p.elr), ms(p.last_known_elr),
            None if p.last_known_leader is None else m(p.last_known_leader), p.recovering,
            ms(p.adding), ms(p.removing))
    cuts = tuple(sorted((m(a), m(b)) for a, b in w.cuts))
    silenced = tuple(sorted(m(n) for n in w.silenced))
    return (brokers, part, cuts, silenced, w.down, acked, w.max_hwm, ms(w.lost_data),
            min(w.unclean_shutdowns, 1), w.unclean_elections, w.reconfigured, w.min_isr)


def state_key(w: World) -> StateKey:
    """A hashable summary of everything that decides the future of ``w`` (brokers
    keep their labels)."""
    per, acked, erank = _canon(w)
    p = w.partition
    part = (p.replicas, p.leader, erank[p.leader_epoch], p.isr, p.elr, p.last_known_elr,
            p.last_known_leader, p.recovering, p.adding, p.removing)
    brokers = tuple((*v, tuple(sorted(w.broker(i).heard_from or ()))) for i, v in per.items())
    return (brokers, part, w.cuts, w.silenced, w.down, acked, w.max_hwm, w.lost_data,
            min(w.unclean_shutdowns, 1), w.unclean_elections, w.reconfigured, w.min_isr)


def canonical_key(w: World) -> StateKey:
    """state_key up to relabelling brokers (for profiles where brokers are
    interchangeable): brokers are ordered by a label-free signature and only ties
    are permuted."""
    per, acked, erank = _canon(w)
    p = w.partition

    def sig(i: int) -> tuple[Any, ...]:
        cut_out = sum(1 for a, _ in w.cuts if a == i)
        cut_in = sum(1 for _, b in w.cuts if b == i)
        heard_by = sum(1 for b in w.brokers if i in (b.heard_from or ()))
        return (per[i], len(w.broker(i).heard_from or ()), heard_by, i in p.isr, i in p.elr,
                i in p.last_known_elr, p.leader == i, p.last_known_leader == i,
                i in w.lost_data, cut_out, cut_in, i in w.silenced)

    ids = sorted(per, key=sig)
    groups: list[list[int]] = []
    prev: tuple[Any, ...] | None = None
    for i in ids:
        s_ = sig(i)
        if groups and s_ == prev:
            groups[-1].append(i)
        else:
            groups.append([i])
        prev = s_
    slots = sorted(per)
    best: StateKey | None = None
    for choice in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = [i for g in choice for i in g]
        perm = {i: slots[n] for n, i in enumerate(order)}
        k = _key(w, per, acked, erank, perm, False)
        if best is None or k < best:
            best = k
    assert best is not None
    return best


def symmetric(profile: Profile) -> bool:
    """Brokers are interchangeable when elections do not depend on assignment order."""
    return profile.election_order == "any" and not profile.kip1303


def _record_order(rid: str) -> tuple[int, str]:
    digits = "".join(c for c in rid if c.isdigit())
    return (int(digits) if digits else 0, rid)


def explore(
    profile: str,
    *,
    brokers: int = 3,
    min_isr: int = 2,
    depth: int = 8,
    elr_enabled: bool = True,
    moves: Sequence[Move] | None = None,
    topic_config: dict[str, str] | None = None,
    symmetry: bool = True,
    max_states: int | None = None,
    invariants: Iterable[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExploreResult:
    """Breadth-first search of every schedule of ``moves`` up to ``depth`` moves.

    The cyclic garbage collector is paused meanwhile: the visited set holds millions
    of acyclic tuples that it would rescan again and again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _explore(profile, brokers=brokers, min_isr=min_isr, depth=depth,
                        elr_enabled=elr_enabled, moves=moves, topic_config=topic_config,
                        symmetry=symmetry, max_states=max_states, invariants=invariants,
                        progress=progress)
    finally:
        if was_enabled:
            gc.enable()


def _explore(
    profile: str,
    *,
    brokers: int,
    min_isr: int,
    depth: int,
    elr_enabled: bool,
    moves: Sequence[Move] | None,
    topic_config: dict[str, str] | None,
    symmetry: bool,
    max_states: int | None,
    invariants: Iterable[str] | None,
    progress: Callable[[int, int], None] | None,
) -> ExploreResult:
    prof = get_profile(profile)
    ids = tuple(range(1, brokers + 1))
    cluster = ClusterSpec(brokers=ids, controllers=(100,),
                          broker_config={"auto.leader.rebalance.enable": "false"})
    topic = TopicSpec(replicas=ids, min_insync_replicas=min_isr, config=topic_config or {})
    ctx = Ctx(prof, prof.elr_on(elr_enabled), rebalance=False)
    root = initial_world(ids, (100,), ids, config_from(cluster, topic, prof))
    alphabet = list(moves) if moves is not None else default_moves(ids)
    wanted = set(invariants) if invariants is not None else set(INVARIANTS)
    key = canonical_key if symmetry and symmetric(prof) else state_key

    result = ExploreResult(profile=profile, brokers=brokers, min_isr=min_isr, depth=depth)
    parent: dict[StateKey, tuple[StateKey | None, Move | None]] = {key(root): (None, None)}
    found: dict[str, Counterexample] = {}
    frontier: list[tuple[StateKey, World]] = [(key(root), root)]
    result.levels.append(1)

    def path(k: StateKey) -> tuple[Move, ...]:
        out: list[Move] = []
        cur: StateKey | None = k
        while cur is not None:
            prev, mv = parent[cur]
            if mv is not None:
                out.append(mv)
            cur = prev
        return tuple(reversed(out))

    for _level in range(depth):
        nxt: list[tuple[StateKey, World]] = []
        for k, w in frontier:
            for mv in alphabet:
                if not enabled(w, mv):
                    continue
                worlds = [w]
                last = len(mv) - 1
                for i, st in enumerate(mv):
                    # kill + lose_unflushed: the loss is on a dead broker's disk, so one
                    # settle after both gives the same states as one after each.
                    worlds = [o.world for x in worlds
                              for o in apply_step(x, ctx, st, settle_after=i == last)]
                for y in worlds:
                    result.transitions += 1
                    ky = key(y)
                    if ky in parent:
                        continue
                    parent[ky] = (k, mv)
                    bad = [(n, d) for n, d in check(y, ctx.elr_on) if n in wanted]
                    for name, detail in bad:
                        if name not in found:
                            found[name] = Counterexample(name, detail, path(ky), y)
                    if not bad:
                        nxt.append((ky, y))
                    if max_states is not None and len(parent) >= max_states:
                        result.truncated = True
                        break
                if result.truncated:
                    break
            if result.truncated:
                break
        frontier = nxt
        result.levels.append(len(nxt))
        if progress is not None:
            progress(len(result.levels) - 1, len(parent))
        if result.truncated or not frontier:
            break
    result.states = len(parent)
    result.counterexamples = sorted(found.values(), key=lambda c: (len(c.moves), c.invariant))
    return result


#: The builds each profile describes (profiles.profile_for_build inverted), as a scenario's
#: ``requires``: a counterexample file then runs only on builds its profile models. The
#: profiles of unreleased KIP parts need a feature no release has, so every build gives
#: UNSUPPORTED and keeps the profile's predicted timeline (fixtures/scenarios/FORMAT.md).
PROFILE_REQUIRES: dict[str, dict[str, Any]] = {
    "pre-3.7": {"max_version": "3.6.99"},
    "kafka-3.7": {"min_version": "3.7.0", "max_version": "3.7.99"},
    "kafka-3.8": {"min_version": "3.8.0", "max_version": "3.8.99"},
    "pre-elr": {"min_version": "3.9.0", "max_version": "3.99.99"},
    "kafka-4.0-elr": {"min_version": "4.0.0", "max_version": "4.0.99", "features": ["elr"]},
    "kafka-4.0-noelr": {"min_version": "4.0.0", "max_version": "4.0.99"},
    "kafka-4.1": {"min_version": "4.1.0", "max_version": "4.2.99"},
    "kafka-4.3": {"min_version": "4.3.0"},
    "kip966": {"features": ["unclean_recovery"]},
    "kip1303": {"features": ["kip1303"]},
}
#: Profiles of builds without the ELR feature: their scenarios say nothing about ELR.
NO_ELR_FEATURE = ("pre-3.7", "kafka-3.7", "kafka-3.8", "pre-elr")


def scenario_build(profile: str, elr_enabled: bool = True) -> tuple[dict[str, Any], bool | None]:
    """(requires, cluster.elr) of a scenario that runs ``profile`` on the builds it models."""
    prof = get_profile(profile)
    requires = {k: list(v) if isinstance(v, list) else v
                for k, v in PROFILE_REQUIRES.get(profile, {}).items()}
    if profile in NO_ELR_FEATURE:
        return requires, None
    elr = prof.elr_on(elr_enabled)
    if elr and profile in ("kafka-4.1", "kafka-4.3"):
        requires["features"] = ["elr"]
    return requires, elr


def to_scenario(cx: Counterexample, *, profile: str, brokers: int, min_isr: int,
                seed: int = 0, elr_enabled: bool = True) -> dict[str, Any]:
    """A counterexample as a scenario mapping (fixtures/scenarios/FORMAT.md), with the
    ``requires`` and ``cluster.elr`` of the builds ``profile`` models."""
    name = "explore-" + profile.replace(".", "") + "-" + "".join(
        ("-" + c.lower()) if c.isupper() else c for c in cx.invariant).lstrip("-")
    requires, elr = scenario_build(profile, elr_enabled)
    cluster: dict[str, Any] = {"brokers": brokers, "controllers": 1}
    if elr is not None:
        cluster["elr"] = elr
    cluster["broker_config"] = {"auto.leader.rebalance.enable": "false"}
    doc: dict[str, Any] = {
        "version": 1,
        "name": name,
        "description": f"Found by the explorer under profile {profile}: {cx.invariant} "
                       f"violated after {len(cx.moves)} moves: {cx.detail}",
        "seed": seed,
        "profile": profile,
    }
    if requires:
        doc["requires"] = requires
    return {
        **doc,
        "cluster": cluster,
        "topic": {"name": "t", "replicas": list(range(1, brokers + 1)),
                  "min_insync_replicas": min_isr,
                  "config": {"unclean.leader.election.enable": "false"}},
        "steps": [S.step_to_dict(s) for s in cx.steps] + [{"consume": {}}],
    }
