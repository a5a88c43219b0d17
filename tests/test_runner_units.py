"""Fast tests of the runner's judging logic (no cluster)."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli.run import exit_code
from harness.cluster.builds import Build, Features
from harness.judge.axes import AxisVerdict
from harness.judge.compare import (
    CONFORMS,
    DIVERGES,
    ERROR,
    UNSUPPORTED,
    ack_mismatch,
    await_mismatch,
    consume_mismatch,
    worst,
)
from harness.report.matrix import axes_matrix
from harness.run.runner import RunResult, requirement_gap
from harness.scenario.steps import StepOutcome


def _build(version: str, **features: bool) -> Build:
    base = dict(elr=False, elr_default_on=False, describe_topic_partitions=True, hwm_rule=True,
                unclean_recovery=False, kip1303=False, previous_broker_epoch=True)
    base.update(features)
    return Build(version, f"maven:{version}", Path("/nonexistent"), Features(**base))


def _scenario(min_version=None, max_version=None, features=(), elr=None):
    return SimpleNamespace(
        requires=SimpleNamespace(min_version=min_version, max_version=max_version,
                                 features=features),
        cluster=SimpleNamespace(elr=elr), steps=())


def test_requirement_gap_names_the_missing_piece() -> None:
    old = _build("3.9.1")
    assert requirement_gap(_scenario(min_version=(4, 0, 0)), old) == (
        "needs Kafka >= 4.0.0, build is 3.9.1")
    assert requirement_gap(_scenario(features=("elr",)), old) == (
        "build 3.9.1 lacks feature(s): elr")
    assert "has no ELR feature" in str(requirement_gap(_scenario(elr=True), old))
    new = _build("4.3.1", elr=True, elr_default_on=True)
    assert requirement_gap(_scenario(min_version="4.0.0", features=("elr",), elr=True), new) is None
    assert requirement_gap(_scenario(max_version=(3, 9, 99)), new) == (
        "needs Kafka <= 3.9.99, build is 4.3.1")


def test_worst_verdict_orders_error_over_divergence_over_unsupported() -> None:
    assert worst([CONFORMS, UNSUPPORTED]) == UNSUPPORTED
    assert worst([UNSUPPORTED, DIVERGES, CONFORMS]) == DIVERGES
    assert worst([DIVERGES, ERROR]) == ERROR
    assert worst([]) == CONFORMS


def test_await_compares_sets_and_scalars() -> None:
    observed = {"leader": 1, "isr": [3, 1], "elr": [], "hwm": 5}
    assert await_mismatch({"leader": 1, "isr": [1, 3], "timeout_s": 9}, observed) is None
    assert await_mismatch({"hwm": 6}, observed) == "hwm: await expected 6, observed 5"
    assert await_mismatch({"elr": [2]}, observed) == "elr: await expected [2], observed []"


def test_ack_outcomes_are_judged_against_the_prediction() -> None:
    rejected = StepOutcome(acks={"a": None, "b": 7}, errors={"a": "NOT_ENOUGH_REPLICAS"})
    pred = SimpleNamespace(expected_acks="acked", must_survive=frozenset())
    assert ack_mismatch(pred, rejected) == (
        "acks: predicted acked, observed 1 rejected (NOT_ENOUGH_REPLICAS)")
    acks0 = StepOutcome(acks={"a": None, "b": None})  # acks=0: no offsets, no errors
    assert ack_mismatch(pred, acks0) is None
    assert ack_mismatch(SimpleNamespace(expected_acks="rejected"), acks0) == (
        "acks: predicted rejected, observed 2 acknowledged")
    assert ack_mismatch(SimpleNamespace(expected_acks="either"), rejected) is None


def test_consume_must_see_every_record_the_model_says_survives() -> None:
    both = frozenset({"r1", "r2"})
    pred = SimpleNamespace(must_survive=both, at_risk=frozenset(), must_read=((both, frozenset()),))
    assert consume_mismatch(pred, StepOutcome(consumed=[(0, "r1"), (1, "r2")])) is None
    assert consume_mismatch(pred, StepOutcome(consumed=[(0, "r1")])) == (
        "records: 1 acked records not visible, e.g. ['r2']")


def _axes(release: str, kip: str, safety: str, reason: str = "",
          expected: dict[str, str] | None = None) -> dict[str, AxisVerdict]:
    return {"release": AxisVerdict("release", release, reason if release != "CONFORMS" else ""),
            "kip": AxisVerdict("kip", kip, reason if kip != "CONFORMS" else ""),
            "safety": AxisVerdict("safety", safety, reason if safety != "SAFE" else "",
                                  expected=expected)}


def test_matrix_table_shows_three_axes_and_a_reason_per_cell_that_is_not_clean() -> None:
    unsafe = {"verdict": "UNSAFE", "reason": "no ELR"}
    runs = [
        RunResult("a", "3.9.1", Path("r1"), "pre-elr", UNSUPPORTED, reason="lacks elr",
                  axes=_axes(UNSUPPORTED, UNSUPPORTED, UNSUPPORTED, "lacks elr")),
        RunResult("b", "3.9.1", Path("r2"), "pre-elr", CONFORMS,
                  axes=_axes(CONFORMS, "DEVIATES", "UNSAFE", "3 lost", unsafe)),
        RunResult("b", "4.3.1", Path("r3"), "kafka-4.1", CONFORMS,
                  axes=_axes(CONFORMS, CONFORMS, "UNSAFE", "1 lost")),
    ]
    table = axes_matrix(runs)
    assert "| a | UNSUPPORTED |  |" in table
    # a declared failure says what it is before its axes (issue 46 item 3)
    assert ("| b | **AS DECLARED: safety UNSAFE**: CONFORMS / DEVIATES / UNSAFE "
            "| CONFORMS / CONFORMS / UNSAFE (!) |") in table
    assert "- 3.9.1 × a: UNSUPPORTED: lacks elr" in table
    assert "- 3.9.1 × b: safety UNSAFE (declared): no ELR" in table
    assert "- 4.3.1 × b: safety UNSAFE (NOT EXPECTED): 1 lost" in table
    assert [exit_code(r) for r in runs] == [0, 0, 1]
    assert exit_code(RunResult("c", "4.3.1", Path("r4"), "kafka-4.1", "ERROR")) == 2


def test_a_predicted_hwm_drop_is_read_from_the_prediction_events() -> None:
    from harness.judge.compare import predicts_hwm_drop
    def pred(*hwms):
        return {"kind": "prediction", "allowed": [{"hwm": h} for h in hwms]}
    assert predicts_hwm_drop([pred(5), pred(None), pred(3)])
    assert not predicts_hwm_drop([pred(3), pred(5), pred(5, 6)])


def test_a_cluster_the_observer_cannot_see_is_an_error_not_a_divergence() -> None:
    from harness.client.observe import ObserveError
    from harness.run.runner import Runner
    from harness.scenario.loader import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
                             / "hwm-frozen-under-min-isr.yaml")
    runner = Runner(scenario, _build("4.3.1", elr=True, elr_default_on=True))

    class Blind:
        def one_look(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

        def partition_state(self, topic: str, partition: int = 0) -> None:
            raise ObserveError("no current broker described t-0")

    session = SimpleNamespace(observer=Blind())
    observed, why, blind = runner._converge(session, [None], [{}], timeout_s=0)  # type: ignore[arg-type]
    assert observed is None and blind
    assert str(why).startswith("no current broker could be observed")


def test_a_step_waits_a_bounded_time_for_an_hwm_the_leader_hides(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """fuzz-s1127-34: a produce to a new leader whose HWM ListOffsets cannot show yet; the
    step settles once the HWM shows (the followers fetched), or after HWM_VISIBLE_WAIT_S."""
    from harness.run.runner import Runner
    from harness.run.runner import settle as runner_mod
    from harness.scenario.loader import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
                             / "hwm-frozen-under-min-isr.yaml")
    runner = Runner(scenario, _build("4.3.1", elr=True, elr_default_on=True))
    monkeypatch.setattr(runner_mod, "CONVERGE_POLL_S", 0.0)
    base = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3],
            "elr": [], "last_known_elr": [], "fenced": []}
    shown = iter([None, None, 0])

    class Hiding:
        def one_look(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

        def partition_state(self, topic: str, partition: int = 0) -> list[dict[str, object]]:
            return [{**base, "hwm": next(shown)}]
    moved = SimpleNamespace(hwm_may_move=True, allowed=())
    observed, why, _ = runner._converge(SimpleNamespace(observer=Hiding()), [moved], [{}], 30)
    assert observed is not None and observed[0]["hwm"] == 0 and why is None
    # Bounded: a leader that keeps hiding its HWM settles the step after the wait.
    monkeypatch.setattr(runner_mod, "HWM_VISIBLE_WAIT_S", 0.05)
    shown = itertools.repeat(None)
    observed, why, _ = runner._converge(SimpleNamespace(observer=Hiding()), [moved], [{}], 30)
    assert observed is not None and observed[0]["hwm"] is None and why is None
    # A step whose HWM does not move does not wait for it.
    shown = iter([None])
    still = SimpleNamespace(hwm_may_move=False, allowed=())
    assert runner._converge(SimpleNamespace(observer=Hiding()), [still], [{}], 30)[1] is None


def test_a_run_that_errors_records_its_verdict_once_and_judges_no_axis(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra.errors import HarnessError
    from harness.infra.history import read_events
    from harness.run.runner import Runner
    from harness.scenario.loader import load_scenario

    def boom(self: Runner, history: object, result: object) -> None:
        raise HarnessError("cluster did not come up")
    monkeypatch.setattr(Runner, "_run_on_cluster", boom)
    sc = load_scenario(Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
                       / "last-replica-standing.yaml")
    result = Runner(sc, _build("4.3.1"), runs_dir=tmp_path).run()
    assert result.verdict == "ERROR" and not result.as_expected
    whole = [e for e in read_events(result.run_dir)
             if e["kind"] == "verdict" and e["index"] is None]
    assert [e["verdict"] for e in whole] == ["ERROR"]
    assert {a: v.verdict for a, v in result.axes.items()} == {
        "release": "ERROR", "kip": "ERROR", "safety": "ERROR"}


def test_a_view_older_than_a_leader_epoch_seen_before_is_no_observation() -> None:
    """fuzz-s1127-34: after a heal the only live broker still showed itself leader at epoch
    0 (HWM 4) after epoch 2 had been seen; the HWM check called it a regression."""
    from harness.client.observe import ObserveError, Observer
    obs = Observer(SimpleNamespace(), record=False)  # type: ignore[arg-type]
    obs._not_stale("t", 0, (2, {"leader_epoch": 2}))
    with pytest.raises(ObserveError, match="leader epoch 0, older than epoch 2"):
        obs._not_stale("t", 0, (1, {"leader_epoch": 0}))
    assert obs._not_stale("t", 0, (1, {"leader_epoch": None}))[0] == 1  # no epoch: no claim
    assert obs._not_stale("t", 0, (3, {"leader_epoch": 3}))[0] == 3
    assert obs._not_stale("u", 0, (1, {"leader_epoch": 0}))[0] == 1  # per partition


def test_a_step_that_does_not_settle_names_the_quorum_fields_of_its_last_look() -> None:
    """A CI failure (quorum-broker-cut-from-active: broker 3 never fenced in 30 s) left
    only the ISR in the log; the line now says who led the quorum and whether it changed."""
    from harness.run.runner.record import _unsettled

    line = _unsettled([{"leader": 1, "leader_epoch": 0, "isr": [1, 2, 3], "elr": [],
                        "fenced": [], "hwm": 5, "controller": 102, "quorum_epoch": 2,
                        "quorum_elected": True, "quorum_lag": {"100": 0}}])
    assert "controller=102" in line and "quorum_elected=True" in line
    assert "fenced=[]" in line and "quorum_lag" not in line
    assert _unsettled(None).startswith("nothing")
