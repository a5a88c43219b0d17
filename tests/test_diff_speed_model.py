"""Issue 44 item 3, third pass (h/speedm): the comparison's and the model's shortcuts give
what the code before them gave. Each test runs the path before (kept here as it was) and
the new one on random clusters and asserts the same result; the whole campaign's proof is
``bench/diff_replay.py replay --against`` on recorded campaigns (bench/RESULTS-diff.md,
"Third pass, model side")."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from test_diff_speed import _mutated, _random_cluster

from harness.differential.compare import Comparator, _changed, _hidden_from
from reference.model.controller_events import Cluster, Outcome, ctx_for
from reference.model.controller_events.changes import (
    _accepted,
    _accepted_combined,
    _broker,
    _elections,
)
from reference.model.controller_events.reads import Reads
from reference.model.state import Broker, Partition, evolve
from reference.releases.catalog import PROFILES


def _changed_before(c: Cluster, prior: Cluster) -> set[str]:
    """compare._changed before the third pass."""
    if c.partitions is prior.partitions or c.partitions == prior.partitions:
        return set()
    old = prior.partitions
    return {k for k, p in c.partitions.items()
            if (q := old.get(k)) is not p and q != p} | (old.keys() - c.partitions.keys())


def _hidden_from_before(obs: Cluster, prior: Cluster) -> Cluster:
    parts = dict(obs.partitions)
    changed = False
    for key, old in prior.partitions.items():
        if key in parts and parts[key].last_known_leader != old.last_known_leader:
            parts[key] = evolve(parts[key], last_known_leader=old.last_known_leader)
            changed = True
    return evolve(obs, partitions=parts) if changed else obs


def _resync_parts_before(obs: Cluster, chosen: Cluster) -> Mapping[str, Partition]:
    parts: dict[str, Partition] | None = None
    for key, p in chosen.partitions.items():
        q = obs.partitions.get(key)
        if q is not None and q is not p and q.last_known_leader != p.last_known_leader:
            if parts is None:
                parts = dict(obs.partitions)
            parts[key] = evolve(q, last_known_leader=p.last_known_leader)
    return obs.partitions if parts is None else parts


def _shuffled(rng: random.Random, c: Cluster) -> Cluster:
    """``c`` with its partitions in another order (an answer's order is the driver's)."""
    items = list(c.partitions.items())
    rng.shuffle(items)
    return evolve(c, partitions=dict(items))


def _pairs(seed: int, n: int) -> list[tuple[Cluster, Cluster]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prior = _random_cluster(rng)
        other = _mutated(rng, prior)
        out.append((prior, other))
        out.append((prior, _shuffled(rng, other)))
        out.append((prior, prior))
        out.append((prior, evolve(prior, partitions=dict(prior.partitions))))
    return out


def test_changed_is_the_code_before() -> None:
    """The C loop over identities finds the same changed partitions, in the same key
    order or not, with partitions added or removed, equal copies or the same object."""
    seen = 0
    for prior, c in _pairs(3, 300):
        assert _changed(c, prior) == _changed_before(c, prior)
        assert _changed(prior, c) == _changed_before(prior, c)
        seen += bool(_changed(c, prior))
    assert seen > 200


def test_hidden_from_and_resync_are_the_code_before() -> None:
    rng = random.Random(5)
    for prior, obs in _pairs(4, 300):
        # the kip axis's hidden field on some of the prior's partitions
        hidden = evolve(prior, partitions={
            k: (evolve(p, last_known_leader=rng.choice([None, *p.replicas]))
                if rng.random() < 0.3 else p) for k, p in prior.partitions.items()})
        assert _hidden_from(obs, hidden) == _hidden_from_before(obs, hidden)
        assert _hidden_from(obs, prior) == _hidden_from_before(obs, prior)
        chosen = Outcome(True, hidden)
        event: dict[str, Any] = {"op": "state"}
        now = Comparator._resync(obs, chosen, event, True)
        assert now.partitions == _resync_parts_before(obs, hidden)


def test_combined_elections_need_no_comparison() -> None:
    """An election's clusters are pairwise different: ``_accepted`` would keep them all,
    in the same order."""
    rng = random.Random(9)
    several = 0
    for n in range(200):
        c = _random_cluster(rng)
        profile = list(PROFILES.values())[n % len(PROFILES)]
        ctx = ctx_for(profile, c)
        for election in ("online", "preferred", "unclean"):
            keys = sorted(c.partitions)
            clusters = _elections(c, keys, ctx, election)
            assert _accepted_combined(clusters) == _accepted(clusters)
            several += len(clusters) > 1
    assert several > 10


def test_a_field_read_twice_is_read_once_and_a_world_broker_is_its_view() -> None:
    profile = next(iter(PROFILES.values()))
    track = Reads(profile)
    wrapped = track.as_profile()
    assert wrapped.elr_electable == profile.elr_electable
    assert wrapped.elr_electable == profile.elr_electable
    assert track.reads() == (("elr_electable", profile.elr_electable),)
    assert _broker((3, True, False)) == Broker(id=3, alive=True, fenced=True)
    assert _broker((4, False, False)) == Broker(id=4, alive=False, fenced=True)
    assert _broker((5, True, True)) is _broker((5, True, True))


def test_a_one_partition_world_is_the_world_init_makes() -> None:
    from reference.model.controller_events.changes import CONTROLLER, _world
    from reference.model.state import Config, World

    part = Partition(replicas=(1, 2, 3), leader=2, isr=frozenset({2, 3}))
    views = ((1, True, False), (2, True, True), (3, False, False))
    cfg = Config(topic_min_isr=2)
    assert _world(part, views, cfg) == World(
        brokers=(Broker(id=1, fenced=True), Broker(id=2), Broker(id=3, alive=False, fenced=True)),
        controllers=(CONTROLLER,), partition=part, config=cfg)


def test_every_lane_state_from_one_walk_is_each_lanes_own() -> None:
    """loop._lane_states: each lane's partitions and brokers as ``_lane_state`` gives them,
    in the same order (the generator's choices follow the order)."""
    from types import SimpleNamespace

    from harness.differential.campaign.lanes import lane_brokers, lane_topics
    from harness.differential.campaign.loop import _lane_state, _lane_states

    rng = random.Random(12)
    for _ in range(50):
        lanes = rng.randint(1, 8)
        keys = [f"{t}-{i}" for k in range(lanes) for t in lane_topics(k)
                for i in range(rng.randint(0, 3))] + ["other-0"]
        rng.shuffle(keys)
        ids = [str(b) for k in range(lanes) for b in lane_brokers(k)] + ["9", "19"]
        rng.shuffle(ids)
        s: Any = SimpleNamespace(partitions={k: {"n": n} for n, k in enumerate(keys)},
                                 brokers={b: {"fenced": rng.random() < 0.5} for b in ids})
        got = _lane_states(s, lanes)
        for k in range(lanes):
            parts, brokers = _lane_state(s, k)
            assert list(got[k][0].items()) == list(parts.items())
            assert list(got[k][1].items()) == list(brokers.items())
