"""Property tests (Hypothesis) of the KIP-966 invariants, and the explorer."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.scenario.loader import parse_scenario
from reference import ClusterSpec, Model, TopicSpec
from reference.model import steps as S
from reference.model.invariants import check
from reference.search.explorer import default_moves, enabled, explore, to_scenario
from reference.search.fuzzgen import GenConfig, generate

BROKERS = (1, 2, 3)
CLUSTER = ClusterSpec(brokers=BROKERS, broker_config={"auto.leader.rebalance.enable": "false"})

step = st.one_of(
    st.builds(S.Produce, st.integers(1, 2), st.sampled_from(["0", "1", "all"])),
    st.builds(S.Isolate, st.sampled_from(BROKERS)),
    st.builds(S.Cut, st.sampled_from(BROKERS), st.sampled_from(BROKERS + (100,)),
              st.sampled_from(["both", "oneway"])),
    st.just(S.Heal()),
    st.builds(S.Kill, st.sampled_from(BROKERS)),
    st.builds(S.LoseUnflushed, st.sampled_from(BROKERS), st.integers(0, 3)),
    st.builds(S.Stop, st.sampled_from(BROKERS)),
    st.builds(S.Restart, st.sampled_from(BROKERS)),
    st.builds(S.Elect, st.just("preferred")),
)
#: Arbitrary schedules, valid or not (a kill of a dead broker, a cut to the controller, data
#: lost with no kill before): the model must keep its invariants on any input.
schedules = st.lists(step, min_size=1, max_size=10).filter(
    lambda xs: all(not (isinstance(s, S.Cut) and s.src == s.dst) for s in xs))


def generated(profile: str, min_isr: int = 2) -> st.SearchStrategy[tuple[S.Step, ...]]:
    """Schedules as the step registry's generators make them (every kind with a generator,
    each step valid by its guard: reference/search/generators.py), drawn through the
    generator's seed, on the 3-broker cluster above."""
    cfg = GenConfig(length=8)
    return st.integers(0, 2**32 - 1).map(lambda seed: generate(
        lambda: Model(profile, CLUSTER, TopicSpec(replicas=BROKERS,
                                                  min_insync_replicas=min_isr)), seed, cfg))

STRUCTURAL = {"ElrIsrDisjoint", "ElrOnlyUnderMinIsr", "ElectableLeadersAtLeastMinIsr"}


def run(profile: str, steps: list[S.Step], min_isr: int = 2) -> Model:
    m = Model(profile, CLUSTER, TopicSpec(replicas=BROKERS, min_insync_replicas=min_isr))
    for s in steps:
        p = m.apply(s)
        assert p.allowed
        for a in p.allowed:
            assert not (a.elr or set()) & a.isr
    return m


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules, st.sampled_from([1, 2, 3]))
def test_kip966_keeps_every_invariant_within_its_fault_model(steps: list[S.Step],
                                                             min_isr: int) -> None:
    m = run("kip966", steps, min_isr)
    assert m.violations() == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 3]).flatmap(
    lambda min_isr: st.tuples(st.just(min_isr), generated("kip966", min_isr))))
def test_kip966_keeps_every_invariant_on_generated_schedules(
        drawn: tuple[int, tuple[S.Step, ...]]) -> None:
    min_isr, steps = drawn
    kinds = {s.kind for s in steps}
    m = run("kip966", list(steps), min_isr)
    assert m.violations() == [], (sorted(kinds), steps)


def test_the_generated_schedules_speak_every_kind_the_registry_generates() -> None:
    # The property above is only as wide as the generator: a kind whose generator stopped
    # producing steps on this cluster would silently leave the invariants untested for it.
    from reference.search.generators import ALL
    seen = {s.kind for seed in range(60) for s in generate(
        lambda: Model("kip966", CLUSTER, TopicSpec(replicas=BROKERS, min_insync_replicas=2)),
        seed, GenConfig(length=8))}
    # upgrade and feature are made only with the run's builds as data (GenConfig.builds;
    # tests/test_fuzz_upgrades.py), which these schedules on one model do not pass;
    # move_replica_dir and fail_log_dir only on a cluster of several log directories
    # (GenConfig.log_dirs; tests/test_fuzz_logdirs.py).
    assert seen == set(ALL) - {"upgrade", "feature", "move_replica_dir", "fail_log_dir"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules)
def test_shipped_elr_keeps_elr_structure(steps: list[S.Step]) -> None:
    m = run("kafka-4.1", steps)
    bad = [v for v in m.violations() if v.split(": ")[1] in STRUCTURAL]
    assert bad == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules)
def test_isr_never_empty_without_elr(steps: list[S.Step]) -> None:
    m = run("pre-elr", steps)
    for w in m.branches:
        assert w.partition.isr and not w.partition.elr
        leader = w.partition.leader
        assert leader is None or leader in w.partition.isr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules)
def test_hwm_never_passes_a_log_end_and_leader_is_in_isr(steps: list[S.Step]) -> None:
    m = run("kafka-4.1", steps)
    for w in m.branches:
        for b in w.brokers:
            assert 0 <= b.hwm <= b.leo
        leader = w.partition.leader
        if leader is not None:
            assert leader in w.partition.isr
            assert not w.broker(leader).fenced


def test_invariant_checker_flags_a_broken_state() -> None:
    m = run("kafka-4.1", [S.Kill(3), S.Kill(2)])
    w = m.branches[0]
    from dataclasses import replace
    broken = replace(w, partition=replace(w.partition, elr=frozenset({1, 2})))
    names = {n for n, _ in check(broken, True)}
    assert "ElrIsrDisjoint" in names
    assert "ElrIsrDisjoint" not in {n for n, _ in check(w, True)}


# --- explorer ---------------------------------------------------------------------

def test_explorer_rediscovers_last_replica_standing_without_elr() -> None:
    r = explore("pre-elr", brokers=3, min_isr=2, depth=6)
    names = {c.invariant for c in r.counterexamples}
    assert "NoAckedRecordLost" in names and "LeaderCompleteness" in names
    cx = next(c for c in r.counterexamples if c.invariant == "NoAckedRecordLost")
    assert len(cx.moves) == 6  # BFS: shortest schedule
    kinds = [type(s).__name__ for s in cx.steps]
    assert kinds[0] == "Produce" and "LoseUnflushed" in kinds and "Restart" in kinds
    sc = to_scenario(cx, profile="pre-elr", brokers=3, min_isr=2)
    loaded = parse_scenario(yaml.safe_dump(sc, sort_keys=False), "cx.yaml")
    # replaying the counterexample in the model reproduces the violation
    m = Model("pre-elr", loaded.cluster_spec(), loaded.topic_spec())
    for s in loaded.steps:
        m.apply(s.step)
    assert any("NoAckedRecordLost" in v for v in m.violations())


def test_explorer_finds_nothing_under_kip966_in_the_same_bound() -> None:
    r = explore("kip966", brokers=3, min_isr=2, depth=6)
    assert r.counterexamples == []
    assert r.states > 1000 and r.levels[0] == 1


def test_explorer_symmetry_reduces_states() -> None:
    a = explore("kip966", depth=4, symmetry=True)
    b = explore("kip966", depth=4, symmetry=False)
    assert a.states < b.states
    assert a.counterexamples == b.counterexamples == []


def test_explorer_alphabet() -> None:
    moves = default_moves((1, 2))
    assert (S.Kill(1), S.LoseUnflushed(1, 0)) in moves and (S.Heal(),) in moves


def test_the_explorer_alphabet_is_the_registrys() -> None:
    """A kind is in the explorer's alphabet where its generator says how to explore it:
    drop a kind from the registry and its moves go; the others stay, in the same order."""
    from reference.search.generators import ALL
    explored = {k for k, g in ALL.items() if g.explore is not None}
    assert explored == {"produce", "isolate", "heal", "kill", "stop", "restart",
                        "lose_unflushed"}
    moves = default_moves((1, 2))
    without_stop = default_moves((1, 2), {k: g for k, g in ALL.items() if k != "stop"})
    assert without_stop == [m for m in moves if m[0].kind != "stop"] != moves
    w = Model("kip966", CLUSTER, TopicSpec(replicas=BROKERS, min_insync_replicas=2)).branches[0]
    assert enabled(w, (S.Kill(1),)) and not enabled(w, (S.Restart(1),))
    assert not enabled(w, (S.Heal(),)) and enabled(w, (S.Isolate(1),))
