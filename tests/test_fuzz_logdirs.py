"""fuzz/hunt with several log directories (issue 45 item 4): clusters with ``log_dirs`` drawn
for 3.7+ builds only (``--log-dirs``), ``move_replica_dir`` and ``fail_log_dir`` generated
with kills, lose_unflushed and leader changes, each failed directory repaired by a restart,
and every generated file taken by the loader and the build check."""

from __future__ import annotations

from typing import Any

import pytest
from test_fuzz_upgrades import _build

from harness.infra.errors import UsageError
from harness.run.runner.birth import check_log_dirs
from harness.scenario.loader import parse_scenario
from harness.search import fuzz
from reference.model import logdirs as L
from reference.model import steps as S
from reference.search import fuzzgen
from reference.search.generators import Builds, Track
from reference.search.generators.logdirs import DEFAULT_LOG_DIRS_CHANCE, draw_log_dirs


def _setup(version: str, chance: float = 1.0, length: int = 12) -> tuple[Any, Any]:
    models = fuzz.model_factory(_build(version), {}, (version,))
    cfg = fuzz.gen_config(length=length, log_dirs_chance=chance,
                          builds=Builds(version, version, models.catalog))
    return models, cfg


def _check_rules(steps: tuple[S.Step, ...], n: int) -> None:
    """What the loader and the harness need: directories the brokers have, never dir 0
    failed, a failed directory repaired by its broker's restart before the end, no
    lose_unflushed of a broker with a failed directory."""
    failed: dict[int, set[int]] = {}
    for step in steps:
        if isinstance(step, L.MoveReplicaDir):
            assert 0 <= step.dir < n
            assert not failed.get(step.broker)
        if isinstance(step, L.FailLogDir):
            assert 1 <= step.dir < n
            assert step.dir not in failed.get(step.broker, set())
            failed.setdefault(step.broker, set()).add(step.dir)
        if isinstance(step, S.LoseUnflushed):
            assert not failed.get(step.broker), step
        if isinstance(step, S.Restart):
            failed.pop(step.broker, None)
    assert not failed, f"failed directories never repaired: {failed}"
    assert steps[-1].kind == "consume"


def test_generated_log_dir_schedules_load_and_keep_the_rules() -> None:
    models, cfg = _setup("4.3.1")
    kinds: set[str] = set()
    mixed = 0
    for index in range(30):
        steps = fuzz.schedule(models, 45, index, cfg)
        seed = fuzz.schedule_seed(45, index)
        cluster = fuzz.CLUSTERS.of(seed)
        assert cluster is not None and cluster.log_dirs in (2, 3)
        text = fuzz.scenario_yaml(f"d-{index}", seed, steps)
        sc = parse_scenario(text, f"<d-{index}>")  # the loader takes every one
        assert sc.cluster.log_dirs == cluster.log_dirs
        assert [x.step for x in sc.steps] == list(steps)
        check_log_dirs(sc, _build("4.3.1"), {})  # the build check: 3.7+
        assert fuzzgen.validate(fuzz.models_of(models, seed), steps,
                                fuzz.config_of(models, cfg, cluster)) is None
        _check_rules(steps, cluster.log_dirs)
        got = {s.kind for s in steps}
        kinds |= got
        if got & {"fail_log_dir", "move_replica_dir"} and got & {"kill", "lose_unflushed",
                                                                 "elect", "reassign"}:
            mixed += 1
    assert {"move_replica_dir", "fail_log_dir", "kill", "lose_unflushed"} <= kinds
    assert mixed >= 5  # combined with kills, lost logs and leader changes


def test_a_build_before_3_7_never_gets_several_log_dirs() -> None:
    models, cfg = _setup("3.6.2")
    for index in range(30):
        steps = fuzz.schedule(models, 45, index, cfg)
        cluster = fuzz.CLUSTERS.of(fuzz.schedule_seed(45, index))
        assert cluster is not None and cluster.log_dirs == 1
        assert not {s.kind for s in steps} & {"move_replica_dir", "fail_log_dir"}
        assert "log_dirs" not in fuzz.scenario_yaml("old", 1, steps, cluster=cluster)
    assert all(draw_log_dirs(s, v, 1.0) == 1 for s in range(50) for v in ("3.6.2", "x"))
    assert {draw_log_dirs(s, "3.7.2", 1.0) for s in range(50)} == {2, 3}


def test_the_default_chance_is_small_and_zero_turns_it_off() -> None:
    drawn = [draw_log_dirs(s, "4.3.1", DEFAULT_LOG_DIRS_CHANCE) for s in range(2000)]
    assert 0.05 < sum(n > 1 for n in drawn) / len(drawn) < 0.15
    models, cfg = _setup("4.3.1", chance=0.0)
    for index in range(10):
        steps = fuzz.schedule(models, 46, index, cfg)
        assert fuzz.CLUSTERS.of(fuzz.schedule_seed(46, index)).log_dirs == 1  # type: ignore[union-attr]
        assert not {s.kind for s in steps} & {"move_replica_dir", "fail_log_dir"}


def test_the_cluster_without_log_dirs_is_the_one_drawn_before() -> None:
    """The directories come from a stream of their own: the rest of the cluster is the
    same with or without them."""
    for s in range(40):
        plain = fuzzgen.draw_cluster(s, (True, False))
        assert fuzzgen.draw_cluster(s, (True, False), log_dirs=3) == \
            fuzzgen.Cluster(**{**plain.__dict__, "log_dirs": 3})


def _gen_on(n: int) -> tuple[Any, Track, Any]:
    cluster = fuzzgen.Cluster(brokers=3, controllers=1, log_dirs=n)
    models = fuzz.model_factory(_build("4.3.1"), {}, ("4.3.1",))
    cfg = fuzz.gen_config(log_dirs=n)
    model = models.for_cluster(cluster)
    return model, fuzzgen.new_track(model), cfg


def test_guards_dir_0_never_fails_once_until_restart_and_no_lost_log_there() -> None:
    model, track, cfg = _gen_on(2)
    assert fuzzgen.why_invalid(L.FailLogDir(1, 0), model, track, cfg) is not None
    assert fuzzgen.why_invalid(L.FailLogDir(1, 2), model, track, cfg) is not None
    assert fuzzgen.why_invalid(L.MoveReplicaDir(1, 2), model, track, cfg) is not None
    assert fuzzgen.why_invalid(L.MoveReplicaDir(1, 1), model, track, cfg) is None
    step = L.FailLogDir(1, 1)
    assert fuzzgen.why_invalid(step, model, track, cfg) is None
    model.apply(step)
    fuzzgen.after(step, track, cfg)
    assert fuzzgen.why_invalid(step, model, track, cfg) is not None  # once
    assert fuzzgen.why_invalid(L.MoveReplicaDir(1, 0), model, track, cfg) is not None
    for s in (S.Kill(1),):
        assert fuzzgen.why_invalid(s, model, track, cfg) is None
        model.apply(s)
        fuzzgen.after(s, track, cfg)
    assert fuzzgen.why_invalid(S.LoseUnflushed(1, 0), model, track, cfg) is not None
    model.apply(S.Restart(1))
    fuzzgen.after(S.Restart(1), track, cfg)
    assert track.failed_dirs == {}
    assert fuzzgen.why_invalid(step, model, track, cfg) is None  # repaired: may fail again


def test_one_log_dir_makes_none_of_the_kinds() -> None:
    model, track, cfg = _gen_on(1)
    import random
    rng = random.Random(1)
    assert fuzzgen.candidates("move_replica_dir", model, track, cfg, rng) == []
    assert fuzzgen.candidates("fail_log_dir", model, track, cfg, rng) == []


def test_the_tail_repairs_a_failed_directory() -> None:
    model, track, cfg = _gen_on(3)
    for s in (S.Produce(2), L.FailLogDir(2, 2)):
        model.apply(s)
        fuzzgen.after(s, track, cfg)
    tail = fuzzgen.recovery_tail(model, track, cfg)
    assert tail.index(S.Stop(2)) < tail.index(S.Restart(2)), tail
    assert track.failed_dirs == {}


@pytest.mark.parametrize("bad", ["-0.1", "2", "x"])
def test_a_bad_log_dirs_chance_is_a_usage_error(bad: str) -> None:
    from harness.cli import options
    with pytest.raises(UsageError, match="--log-dirs"):
        options.upgrade_chance("hunt", bad, "--log-dirs")


class _Faults:
    def __init__(self) -> None:
        self.failed: list[tuple[int, int]] = []

    def fail_log_dir(self, broker: int, index: int) -> None:
        self.failed.append((broker, index))


class _Observer:
    def __init__(self, offline_after: int) -> None:
        self.calls, self.offline_after = 0, offline_after

    def log_dirs_state(self, brokers: list[int]) -> dict[str, Any]:
        self.calls += 1
        off = [1] if self.calls > self.offline_after else []
        return {str(brokers[0]): {"online": [0] if off else [0, 1], "offline": off}}


def test_a_failure_step_waits_until_the_broker_reports_the_directory_offline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the hunt on 4.3.1 (bench/RESULTS-storage.md): without the wait the step
    settled before Kafka noticed, and the ISR shrank one step late."""
    from types import SimpleNamespace

    from harness.scenario.steps import logdirs as steps_logdirs
    from harness.scenario.steps.kind import StepOutcome
    obs = _Observer(offline_after=2)
    s = SimpleNamespace(faults=_Faults(), observer=obs)
    out = StepOutcome()
    steps_logdirs._fail(s, None, L.FailLogDir(2, 1), out)  # type: ignore[arg-type]
    assert s.faults.failed == [(2, 1)] and obs.calls == 3 and not out.note
    monkeypatch.setattr(steps_logdirs, "FAIL_NOTICED_S", 1.0)
    out = StepOutcome()
    steps_logdirs._fail(SimpleNamespace(faults=_Faults(), observer=_Observer(10_000)), None,
                        L.FailLogDir(2, 1), out)  # type: ignore[arg-type]
    assert "did not report log dir 1 offline" in out.note
