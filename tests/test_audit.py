"""`kafka-chaos audit`: real run directories re-judged from their files alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.app import main
from harness.cli.options import run_dirs
from harness.infra.errors import UsageError
from harness.judge.audit import audit

HISTORIES = Path(__file__).resolve().parent.parent / "fixtures" / "histories"
LRS_391 = HISTORIES / "last-replica-standing-20261122T152527-aacf9e"
LRS_431 = HISTORIES / "last-replica-standing-20261122T152321-517cc5"


def test_last_replica_standing_is_unsafe_on_391_naming_the_lost_records() -> None:
    r = audit(LRS_391)
    assert r.build == "3.9.1"
    assert r.axes["release"].verdict == "CONFORMS"  # the pre-ELR profile predicts the loss
    assert r.axes["kip"].verdict == "DEVIATES"
    assert [d["deviation"] for d in r.axes["kip"].details] == ["no-elr"]
    safety = r.axes["safety"]
    assert safety.verdict == "UNSAFE"
    lost = next(f for f in safety.details if f["rule"] == "acked-record-durable")
    assert len(lost["records"]) == 3 and {x["acks"] for x in lost["records"]} == {"all"}


def test_last_replica_standing_is_safe_and_kip_conformant_on_431() -> None:
    r = audit(LRS_431)
    assert {a: v.verdict for a, v in r.axes.items()} == {
        "release": "CONFORMS", "kip": "CONFORMS", "safety": "SAFE"}


def test_audit_rejudges_with_the_current_model_not_the_recorded_verdict() -> None:
    # Recorded DIVERGES by a model bug fixed since (SCHEMA.md); the audit says CONFORMS.
    run = HISTORIES / "unclean-shutdown-leaves-elr-20261122T143039-226fcf"
    r = audit(run)
    assert r.recorded["release"] == "DIVERGES"
    assert r.axes["release"].verdict == "CONFORMS"


def _tampered(tmp_path: Path) -> Path:
    run = tmp_path / LRS_431.name
    shutil.copytree(LRS_431, run)
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    last_obs = max(i for i, e in enumerate(events) if e["kind"] == "observation")
    events[last_obs]["state"]["leader"] = 2  # a leader the model never allows there
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_audit_catches_a_tampered_observation(tmp_path: Path) -> None:
    r = audit(_tampered(tmp_path))
    assert r.axes["release"].verdict == "DIVERGES" and "leader" in r.axes["release"].reason


def test_bad_paths_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        run_dirs([tmp_path / "nope"], "audit")
    with pytest.raises(UsageError, match="holds no run directories"):
        run_dirs([tmp_path], "audit")
    test_run = tmp_path / "a-pytest-run"  # a chaos test's run: no scenario to judge against
    test_run.mkdir()
    (test_run / "run.json").write_text('{"scenario": {"name": "t", "file": null}}')
    with pytest.raises(UsageError, match="holds no scenario run"):
        run_dirs([tmp_path], "audit")


def test_cli_exit_code_says_whether_every_run_was_as_expected(tmp_path: Path, capsys) -> None:
    assert main(["audit", str(LRS_431)]) == 0
    assert main(["audit", str(_tampered(tmp_path))]) == 1
    assert "release DIVERGES (!)" in capsys.readouterr().out


REPO_SCENARIOS = HISTORIES.parent / "scenarios"
KAFKA_19522 = HISTORIES / "kip966-elect-when-replied-20261123T162924-d3ab82"


def test_trace_catches_a_state_the_controller_committed_and_repaired_kafka_19522(
        tmp_path: Path) -> None:
    """4.0.2 elects the fenced last known leader in the batch that re-registers it; the
    settled state the runner polled conformed (recorded CONFORMS), the trace does not."""
    r = audit(KAFKA_19522, scenarios=REPO_SCENARIOS)
    assert r.recorded["release"] == "CONFORMS"
    release = r.axes["release"]
    assert release.verdict == "DIVERGES" and "offset 70" in release.reason
    rules = {f["rule"] for f in release.details}
    assert {"NewLeaderIsLive", "LeaderIsLive"} <= rules
    first = release.details[0]
    assert first["controller"] == 100 and first["record"]["type"] == "PARTITION_CHANGE_RECORD"
    assert first["before"]["isr"] == [] and first["after"]["isr"] == [1]
    assert r.axes["safety"].verdict == "UNSAFE"
    assert r.axes["kip"].verdict == "KIP-DIVERGES"
    assert r.as_expected  # declared in the scenario for 4.0.x, with the JIRA as reason
    bare = tmp_path / KAFKA_19522.name
    shutil.copytree(KAFKA_19522, bare)
    text = (bare / "scenario.yaml").read_text()
    (bare / "scenario.yaml").write_text(text[:text.index("expect:")])
    assert not audit(bare).as_expected  # undeclared, the same findings fail


@pytest.mark.parametrize("run", sorted(p.name for p in HISTORIES.iterdir()
                                       if (p / "metadata").is_dir()))
def test_real_runs_with_metadata_logs_are_judged_as_declared(run: str) -> None:
    r = audit(HISTORIES / run, scenarios=REPO_SCENARIOS)
    assert r.trace["records"] > 100 and 100 in r.trace["controllers"]
    assert r.as_expected, {a: (v.verdict, v.reason) for a, v in r.axes.items()}
    if run != KAFKA_19522.name:
        assert r.axes["release"].details == []  # 0 trace violations


def test_a_history_cut_short_is_incomplete_on_every_axis(tmp_path: Path) -> None:
    run = tmp_path / LRS_431.name
    shutil.copytree(LRS_431, run)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(lines[: len(lines) // 2]))  # crashed mid-run
    r = audit(run)
    assert {v.verdict for v in r.axes.values()} == {"INCOMPLETE"} and not r.as_expected


def test_trace_events_do_not_break_the_data_checks_or_the_report_reader(tmp_path: Path) -> None:
    """A trace finding names its partition as [topic, id]; the history's `partition` field
    is an int on every other event, so the finding must not reuse that name, and the data
    checks must not read it from events that are not reads or consumes."""
    from harness.judge.datachecks import run_checks
    from harness.judge.trace_check import context as trace_context
    from harness.judge.trace_check import judge, read_logs
    from harness.report.spark_jobs import valid_event
    from harness.scenario.loader import load_scenario
    run = KAFKA_19522
    found = judge(read_logs(run), trace_context(load_scenario(run / "scenario.yaml"), [],
                                                "kafka-4.0-elr", True))
    assert found and "partition" not in found[0] and found[0]["topic_partition"] == ["t", 0]
    event = {"run_id": "r", "seq": 0, "t_wall": 1.0, "kind": "trace", **found[0]}
    assert valid_event(event)
    old_style = {**event, "partition": ["t", 0]}  # as 1.2 runs written before this fix
    consume = {"run_id": "r", "seq": 1, "t_wall": 1.0, "kind": "consume", "topic": "t",
               "partition": 0, "record_id": "a", "offset": 0}
    assert [c.name for c in run_checks([old_style, consume])][0] == "acked_lost"


def test_a_run_that_ended_in_error_is_error_on_every_axis(tmp_path: Path) -> None:
    """A harness failure (a step that could not be executed) is not judged as the build's
    behaviour: its observations stop short of the scenario."""
    run = tmp_path / LRS_431.name
    shutil.copytree(LRS_431, run)
    lines = (run / "events.jsonl").read_text().splitlines(keepends=True)
    (run / "events.jsonl").write_text("".join(
        line.replace('"verdict": "CONFORMS"}', '"verdict": "ERROR"}')
        if '"run_end"' in line else line for line in lines))
    assert '"ERROR"' in (run / "events.jsonl").read_text()
    r = audit(run)
    assert {v.verdict for v in r.axes.values()} == {"ERROR"} and not r.as_expected
    assert audit(LRS_431).axes["release"].verdict == "CONFORMS"  # the untouched copy


def test_runs_of_pytest_tests_under_a_directory_are_left_out(tmp_path: Path) -> None:
    shutil.copytree(LRS_431, tmp_path / LRS_431.name)
    plugin_run = tmp_path / "test_smoke-20261123T000000-aaaaaa"
    plugin_run.mkdir()
    (plugin_run / "run.json").write_text(json.dumps(
        {"scenario": {"name": "suites/test_smoke.py::test_x", "file": None}}))
    assert run_dirs([tmp_path], "audit") == [tmp_path / LRS_431.name]
    only_tests = tmp_path / "only"
    only_tests.mkdir()
    shutil.move(str(plugin_run), only_tests)
    with pytest.raises(UsageError, match="holds no scenario run"):
        run_dirs([only_tests], "audit")


def test_recorded_steps_judge_quorum_elected_as_the_runner_did() -> None:
    # The runner adds quorum_elected to what it judges (the epoch moved since the step
    # started); the recorded observation lacks it, so audit rebuilds it from the epochs.
    from harness.judge.audit import recorded_steps

    def quorum(epoch: int) -> dict[str, object]:
        return {"kind": "quorum", "state": {"leader": 100, "leader_epoch": epoch}}

    def step(i: int) -> dict[str, object]:
        return {"kind": "step", "phase": "start", "index": i, "step": {"sleep": {"seconds": 1}}}

    def obs(epoch: int) -> dict[str, object]:
        return {"kind": "observation", "state": {"leader": 1, "quorum_epoch": epoch}}

    events = [quorum(1), step(0), obs(1), quorum(1), step(1), obs(3), step(2), obs(3)]
    got = [s.observed["quorum_elected"] for s in recorded_steps(events)]  # type: ignore[index]
    assert got == [False, True, False]
    single = recorded_steps([step(0), {"kind": "observation", "state": {"leader": 1}}])
    assert single[0].observed == {"leader": 1}  # one controller: nothing to add


def test_audit_takes_the_epoch_the_runner_had_at_the_step_start() -> None:
    """Seen on 4.3.1 (fuzz-s44-7): DescribeQuorum went unanswered from a controller kill to
    the heal (no broker reached the active controller), so the runner judged the heal
    without quorum_elected, and audit, taking the last epoch recorded long before, called
    the epoch the heal first showed an election in the heal. The step start now records
    the runner's epoch, None included."""
    from harness.judge.audit import recorded_steps

    def step(i: int, at_start: int | None) -> dict[str, object]:
        return {"kind": "step", "phase": "start", "index": i, "step": {"heal": {}},
                "quorum_epoch_at_start": at_start}

    events = [{"kind": "quorum", "state": {"leader": 102, "leader_epoch": 1}},
              step(0, None), {"kind": "observation", "state": {"leader": 1, "quorum_epoch": 3}},
              step(1, 3), {"kind": "observation", "state": {"leader": 1, "quorum_epoch": 4}}]
    first, second = recorded_steps(events)
    assert first.observed == {"leader": 1, "quorum_epoch": 3}  # unknown: not judged
    assert second.observed is not None and second.observed["quorum_elected"] is True


QUORUM_431 = HISTORIES / "quorum-5-lose-two-active-20261127T013442-00dc19"


def test_controller_steps_replay_with_the_controllers_the_run_resolved() -> None:
    """`kill: {controller: active}` is recorded with the id it resolved to under the file's
    name (``controller``); the replay gives it to the step (an audit of the 8-build matrix
    crashed here: the step's field is ``node``)."""
    r = audit(QUORUM_431, scenarios=REPO_SCENARIOS)
    assert {a: v.verdict for a, v in r.axes.items()} == {
        "release": "CONFORMS", "kip": "CONFORMS", "safety": "SAFE"}
    assert r.trace["controllers"] == [100, 101, 102, 103, 104]


def test_with_resolved_names_the_fields_as_the_file_does() -> None:
    from reference.model import steps as S
    assert S.with_resolved(S.KillController("active"), {"controller": 102}) == \
        S.KillController(102)
    assert S.with_resolved(S.Isolate("follower"), {"node": 101}) == S.Isolate(101)
    assert S.with_resolved(S.Cut(3, "active"), {"dst": 100}) == S.Cut(3, 100)
