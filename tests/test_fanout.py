"""Spark fan-out (harness.run.fanout) without a cluster: bad --master input, the task spec."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from harness.infra.errors import UsageError
from harness.run import fanout

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "fixtures" / "scenarios" / "kip966-isolate-leader.yaml"


@pytest.mark.parametrize("master,message", [
    ("yarn", "spark://HOST:PORT"),
    ("spark://", "spark://HOST:PORT"),
    ("spark://127.0.0.1", "spark://HOST:PORT"),
    ("spark://127.0.0.1:9", "cannot reach it"),
])
def test_a_bad_master_is_refused_before_any_session(master: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        fanout.check_master(master)


def test_local_masters_need_no_check() -> None:
    fanout.check_master("local[2]")


@pytest.mark.parametrize("command", [["run", str(SCENARIO)], ["matrix", str(SCENARIO)]])
def test_run_and_matrix_refuse_a_bad_master_before_a_build_resolves(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path, command: list[str]) -> None:
    from harness.cli import app
    from harness.cluster import builds

    def resolved(*a: Any, **k: Any) -> Any:
        raise AssertionError("a build was resolved")
    monkeypatch.setattr(builds, "resolve", resolved)
    code = app.main([*command, "--master", "spark://127.0.0.1:9",
                     "--runs-dir", str(tmp_path / "runs")])
    assert code == 2 and "cannot reach it" in capsys.readouterr().err


def test_a_task_carries_the_scenario_text_and_a_shared_absolute_runs_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Build:
        source = "maven:4.3.1"
    monkeypatch.chdir(tmp_path)
    spec = fanout.spec_for(SCENARIO, Build(), "local", Path("runs"))
    assert spec.scenario_text == SCENARIO.read_text() and spec.build_source == "maven:4.3.1"
    assert spec.runs_dir == str(tmp_path / "runs")
    assert pickle.loads(pickle.dumps(spec)) == spec
    failed = fanout._error_result(spec, "executor lost")
    assert failed.verdict == "ERROR" and failed.scenario == "kip966-isolate-leader"
    assert "executor lost" in failed.reason


def test_more_runs_are_submitted_than_the_cores_counted_at_start() -> None:
    # A core whose executor registered after the count must still get work: the driver
    # submits up to SUBMITTED_RUNS and Spark queues them; never more than there are runs.
    from harness.run.fanout import SUBMITTED_RUNS, SparkRuns
    runs = SparkRuns.__new__(SparkRuns)
    runs.slots = 1
    assert runs.in_flight(2) == 2
    assert runs.in_flight(1000) == SUBMITTED_RUNS
    runs.slots = SUBMITTED_RUNS + 8
    assert runs.in_flight(1000) == SUBMITTED_RUNS + 8
    assert runs.in_flight(0) == 1


def test_executors_registered_after_the_start_are_said_once() -> None:
    # CI: the count at start saw 1 of 2 cores; the second registered during the first run.
    from harness.run.fanout import SparkRuns
    said: list[str] = []
    runs = SparkRuns.__new__(SparkRuns)
    runs.slots, runs.master, runs.say = 1, "spark://127.0.0.1:7077", said.append
    runs._cores_lock = __import__("threading").Lock()
    cores = iter([1, 2, 2])
    runs._cores_now = lambda: next(cores)  # type: ignore[method-assign]
    for _ in range(3):
        runs.note_late_cores()
    assert runs.slots == 2
    assert said == ["spark: 2 executor core(s) at spark://127.0.0.1:7077 now (registered "
                    "late): up to 2 clusters at once"]
