"""Issue 44 item 3, the speed of `kafka-chaos diff`, without changing a verdict: the kept
elections of the model (changes._elected) give what a fresh partition_change gives, the
comparison's shortcuts keep its diffs, and the workers split and merge a campaign."""

from __future__ import annotations

import argparse
import random
from collections import Counter

import pytest

from harness.cli import diff as diff_cli
from harness.differential.campaign.state import Found, Stats
from harness.differential.campaign.workers import merge_stats, share, worker_seed
from harness.differential.compare import Finding, _changed, best, diffs, matches
from harness.differential.model import observed
from harness.infra.errors import UsageError
from reference.model.controller import Ctx, partition_change
from reference.model.controller_events import Cluster, Outcome, Reg, TopicConf, ctx_for
from reference.model.controller_events.changes import _each, _elections
from reference.model.state import Partition, World, evolve
from reference.releases.catalog import PROFILES


def _random_cluster(rng: random.Random) -> Cluster:
    brokers: dict[int, Reg] = {}
    for b in range(1, 7):
        if rng.random() < 0.85:
            brokers[b] = Reg(fenced=rng.random() < 0.4, shutting_down=rng.random() < 0.1,
                             alive=rng.random() < 0.7, expired=rng.random() < 0.2)
    parts: dict[str, Partition] = {}
    for t in range(3):
        for i in range(rng.randint(1, 3)):
            replicas = tuple(rng.sample(range(1, 7), rng.randint(1, 4)))
            isr = frozenset(r for r in replicas if rng.random() < 0.5)
            elr = frozenset(r for r in replicas if r not in isr and rng.random() < 0.4)
            lk = frozenset(r for r in replicas if rng.random() < 0.15)
            leader = rng.choice(sorted(isr)) if isr and rng.random() < 0.5 else None
            adding = tuple(sorted(r for r in replicas[1:] if rng.random() < 0.15))
            parts[f"t{t}-{i}"] = Partition(
                replicas=replicas, leader=leader, isr=isr, elr=elr, last_known_elr=lk,
                recovering=rng.random() < 0.1, adding=adding,
                leader_epoch=rng.randint(0, 5), partition_epoch=rng.randint(0, 9),
                last_known_leader=rng.choice([None, *replicas]))
    topics = {f"t{t}": TopicConf(min_isr=rng.choice([None, 1, 2, 3]),
                                 unclean=rng.choice([None, True, False])) for t in range(3)}
    return Cluster(brokers=brokers, partitions=parts, topics=topics,
                   min_isr=rng.choice([1, 2, 3]), unclean=rng.random() < 0.3,
                   elr_enabled=rng.random() < 0.7,
                   elr_live=rng.choice([None, None, True, False]))


@pytest.mark.parametrize("election", ["online", "preferred", "unclean"])
def test_kept_elections_are_a_fresh_partition_change(election: str) -> None:
    """changes._elections (kept per one-partition world) against _each with
    partition_change, on random clusters under every profile: the same clusters in the
    same order, twice (the second time from what was kept)."""
    rng = random.Random(44)
    moved = 0
    for n in range(150):
        c = _random_cluster(rng)
        profile = list(PROFILES.values())[n % len(PROFILES)]
        ctx = ctx_for(profile, c)
        keys = sorted(c.partitions)

        def change(w: World, ctx: Ctx = ctx) -> list[World]:
            return partition_change(w, ctx, election=election)
        fresh = _each(c, keys, change)
        assert _elections(c, keys, ctx, election) == fresh
        assert _elections(c, keys, ctx, election) == fresh
        moved += any(x.partitions != c.partitions for x in fresh)
    assert moved > 20  # the random clusters do elect


def test_the_shortcuts_of_the_comparison_keep_its_diffs() -> None:
    """Equal maps are no change (dict equality); different ones are read key by key."""
    rng = random.Random(7)
    for _ in range(100):
        prior = _random_cluster(rng)
        same = evolve(prior, partitions=dict(prior.partitions), brokers=dict(prior.brokers))
        assert _changed(same, prior) == set()
        key = sorted(prior.partitions)[0]
        p = prior.partitions[key]
        moved = evolve(prior, partitions={**prior.partitions,
                                          key: evolve(p, leader_epoch=p.leader_epoch + 1)},
                       brokers={**prior.brokers, 99: Reg()})
        found = {(d.where, d.field) for d in diffs(Outcome(True, moved), same, True, prior)}
        assert (key, "leaderEpoch") in found and ("broker 99", "registered") in found
        assert diffs(Outcome(True, same), same, True, prior) == []


def _mutated(rng: random.Random, c: Cluster) -> Cluster:
    """``c`` with a few partitions and brokers changed in one field each (or added,
    removed), as a model outcome or a build's answer differs from the prior."""
    parts, regs = dict(c.partitions), dict(c.brokers)
    for key in rng.sample(sorted(parts), min(len(parts), rng.randint(0, 3))):
        p = parts[key]
        what = rng.randrange(11)
        parts[key] = (
            evolve(p, leader=None if p.leader is not None else p.replicas[0]) if what == 0
            else evolve(p, leader_epoch=p.leader_epoch + 1) if what == 1
            else evolve(p, partition_epoch=p.partition_epoch + 1) if what == 2
            else evolve(p, replicas=p.replicas[::-1]) if what == 3
            else evolve(p, isr=p.isr ^ {p.replicas[0]}) if what == 4
            else evolve(p, elr=p.elr ^ {p.replicas[-1]}) if what == 5
            else evolve(p, last_known_elr=p.last_known_elr ^ {p.replicas[0]}) if what == 6
            else evolve(p, adding=(*p.adding, 9)) if what == 7
            else evolve(p, removing=(*p.removing, 8)) if what == 8
            else evolve(p, recovering=not p.recovering) if what == 9
            else evolve(p, last_known_leader=7))  # hidden: no difference
    if rng.random() < 0.2:
        parts.pop(sorted(parts)[0])
    if rng.random() < 0.2:
        parts["new-0"] = Partition(replicas=(1, 2), leader=1, isr=frozenset({1, 2}))
    for b in rng.sample(sorted(regs), min(len(regs), rng.randint(0, 2))):
        regs[b] = evolve(regs[b], fenced=not regs[b].fenced) if rng.random() < 0.5 \
            else evolve(regs[b], alive=not regs[b].alive)  # alive: not compared
    if rng.random() < 0.1:
        regs[42] = Reg()
    return evolve(c, partitions=parts, brokers=regs,
                  elr_live=rng.choice([c.elr_live, c.elr_live, not c.elr_now]))


def test_matches_is_no_diffs_and_best_keeps_its_choice() -> None:
    """compare.matches (the early-stopping check) says True exactly when diffs lists
    nothing, and best's shortcut (the first outcome that matches) picks the outcome and
    differences that the full scoring picks."""
    rng = random.Random(443)
    agreed = 0
    for _ in range(3000):
        prior = _random_cluster(rng)
        obs = _mutated(rng, prior) if rng.random() < 0.7 else prior
        outs = tuple(Outcome(rng.random() < 0.9, _mutated(rng, prior) if rng.random() < 0.6
                             else obs) for _ in range(rng.randint(1, 3)))
        ok = rng.random() < 0.9
        seen = _changed(obs, prior)
        for o in outs:
            assert matches(o, obs, ok, prior, seen) == (not diffs(o, obs, ok, prior, seen))
            agreed += matches(o, obs, ok, prior, seen)
        scored = [(o, diffs(o, obs, ok, prior, seen)) for o in outs]
        assert best(outs, obs, ok, prior, seen) == min(scored, key=lambda x: len(x[1]))
    assert 300 < agreed < 8000  # both answers are exercised


def test_an_answer_without_brokers_keeps_the_brokers() -> None:
    """The driver leaves the brokers out of a "changed" answer when none changed: the
    observed state keeps the prior's (expired flags included)."""
    prior = Cluster(brokers={1: Reg(fenced=True, alive=False, expired=True), 2: Reg()},
                    partitions={})
    assert observed(prior, {}, None).brokers == prior.brokers
    assert observed(prior, {}, {}).brokers == prior.brokers


def test_worker_seeds_and_shares() -> None:
    assert worker_seed(11, 0) == 11
    seeds = {worker_seed(11, k) for k in range(8)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)
    assert [share(8001, 2, k) for k in range(2)] == [4001, 4000]
    assert share(None, 2, 1) is None


def test_merged_stats_add_up() -> None:
    a, b = Stats(events=10, refused=1, driver_cpu_s=1.0), Stats(events=5, refused=2)
    a.per_op["fence"], b.per_op["fence"] = 3, 4
    a.deviation_first["x"], b.deviation_first["x"] = (9, 2.0), (3, 1.0)
    merge_stats(a, b)
    assert (a.events, a.refused, a.per_op, a.deviation_first["x"]) == (
        15, 3, Counter({"fence": 7}), (3, 1.0))
    assert Found(Finding("fault", "E", "register", "p", "d"), 1, 1, 0.0, []).count == 1


def _args(**kw: object) -> argparse.Namespace:
    base = {"budget": "60s", "shrink_budget": "90s", "lane_events": None, "coverage": False,
            "seed": "1", "lanes": "8", "mutate_share": "50", "min_isr": "2", "elr": "auto",
            "no_shrink": False, "shrink_attempts": "400", "feature_weight": None,
            "events": None, "workers": "auto", "base_vocabulary": False,
            "snapshot_rate": "3", "snapshot_shadow": "96"}
    return argparse.Namespace(**(base | kw))


def test_workers_default_to_one_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert diff_cli.parse_config(_args()).workers == 2  # type: ignore[attr-defined]
    assert diff_cli.parse_config(_args(coverage=True)).workers == 1  # type: ignore[attr-defined]
    assert diff_cli.parse_config(_args(workers="3", events="900")).max_events == 900  # type: ignore[attr-defined]
    with pytest.raises(UsageError):
        diff_cli.parse_config(_args(coverage=True, workers="2"))
