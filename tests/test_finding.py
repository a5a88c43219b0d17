"""`kafka-chaos finding` (issue 32 item 5): a Kafka ticket's draft from runs with a failing
axis, on recorded runs of fixtures/histories (no cluster).

The failing runs are runs of scenarios the command was not written for: KAFKA-19522 on
4.0.2 (kip966-elect-when-replied: release DIVERGES, kip KIP-DIVERGES, safety UNSAFE from
its metadata trace, all declared) and last-replica-standing on 3.9.1 (acks=all records
lost: safety UNSAFE, declared). A clean run, a run that ended in ERROR, one cut short and
bad paths are refused with a message naming the run or path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.app import main
from harness.infra.errors import UsageError
from harness.report.finding import (
    SAFETY_CITATIONS,
    NotAFinding,
    examine,
    finding_text,
    gather,
    record_name,
)
from reference.trace.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
HISTORIES = ROOT / "fixtures" / "histories"
KAFKA_19522 = HISTORIES / "kip966-elect-when-replied-20261123T162924-d3ab82"
LOSS_391 = HISTORIES / "last-replica-standing-20261123T162719-493858"
CLEAN_431 = HISTORIES / "last-replica-standing-20261123T164155-f65c94"


def _copy(run: Path, parent: Path) -> Path:
    out = parent / run.name
    shutil.copytree(run, out)
    return out


def _rewrite_events(run: Path, change) -> None:  # type: ignore[no-untyped-def]
    lines = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    lines = [e for e in (change(e) for e in lines) if e is not None]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))


# --- a failing run ------------------------------------------------------------------------

def test_failing_run_gives_every_section_of_a_ticket() -> None:
    text = finding_text([KAFKA_19522])
    for section in ("# TO WRITE: title", "## Affected versions (measured)", "## Environment",
                    "## Steps to reproduce", "## Expected", "## Actual", "## Impact",
                    "## Suggested fix", "## How the harness found it"):
        assert section in text, section
    # affected versions: the build, its profile, the verdicts, the run directory
    assert ("| 4.0.2 | kafka-4.0-elr | fails as declared (release, kip, safety) "
            "| DIVERGES (declared) | KIP-DIVERGES (declared) "
            f"| UNSAFE (declared) | `{KAFKA_19522}` |") in text
    # environment: the cluster and topic of the scenario
    assert "- Cluster: 3 broker(s), 1 controller(s) (KRaft), ELR on" in text
    assert "min.insync.replicas 2" in text
    # the scenario, without its expect: bookkeeping, and the command that runs it
    assert "- kill: {broker: 1}" in text and "expect:" not in text.split("## Expected")[0]
    assert "kafka-chaos run fixtures/scenarios/kip966-elect-when-replied.yaml " \
           "--kafka-version 4.0.2" in text
    assert f"kafka-chaos audit {KAFKA_19522}" in text


def test_every_failing_axis_names_its_rules_with_their_citations() -> None:
    text = finding_text([KAFKA_19522])
    expected = text.split("## Expected")[1].split("## Actual")[0]
    for axis in ("### release: DIVERGES", "### kip: KIP-DIVERGES", "### safety: UNSAFE"):
        assert axis in expected
    for rule in ("IsrJoinOnlyLive", "NewLeaderIsLive", "UncleanElectionOnlyWhenAllowed",
                 "LeaderIsLive"):
        assert f"- **{rule}**: {RULES[rule].citation}" in expected
    assert "Declared for this build by the scenario (`expect:`): UNSAFE (KAFKA-19522" in expected


def test_the_first_violating_records_are_decoded_with_the_partition_around_them() -> None:
    actual = finding_text([KAFKA_19522]).split("## Actual")[1].split("## Impact")[0]
    assert "**IsrJoinOnlyLive** at offset 70 of controller 100's metadata log" in actual
    assert ("PartitionChangeRecord (version 2) partitionId=0, topicId=kHR5C-dkT4CeRcwOdJZdCw, "
            "isr=[1], leader=1, leaderRecoveryState=1") in actual
    assert "before: leader=-1, leader_epoch=1, partition_epoch=4, replicas=[1, 2, 3], isr=[]" \
        in actual
    # an invariant judged at the end of a batch shows the batch's record of the partition
    assert "**LeaderIsLive** at offset 70 of controller 100's metadata log (16:29:51.471 UTC, " \
           "judged at offset 71 (the end of its batch, a RegisterBrokerRecord)), t-0" in actual
    # the settled states, step by step
    assert "| 9 | `{\"restart\": {\"broker\": 1}}` | 1 | 2 | [1, 2, 3] | [1, 2, 3] | [] | [] | " \
           "[] | 4 | CONFORMS |" in actual


def test_lost_records_are_named_and_make_it_a_data_loss_report() -> None:
    text = finding_text([LOSS_391])
    assert "Priority (suggested):** Critical: data loss (3 acks=all record(s) lost" in text
    assert "# TO WRITE: title. Suggested: 3 acks=all record(s) lost in scenario " \
           "last-replica-standing (Kafka 3.9.1)" in text
    actual = text.split("## Actual")[1]
    assert "- **acked_lost** (acked-record-durable): 5 finding(s)" in actual  # 2 of acks=1
    assert "  - record `493858-r5` (offset 5, acks all, topic t, partition 0)" in actual
    assert "  - record `493858-r9` (offset 9, acks 1, topic t, partition 0)" in actual
    assert f"- **acked-record-durable**: {SAFETY_CITATIONS['acked-record-durable']}" in text
    assert "| 3.9.1 | pre-elr |" in text


def test_runs_of_one_scenario_share_a_draft_and_several_scenarios_get_one_each() -> None:
    text = finding_text([LOSS_391, KAFKA_19522, HISTORIES / "last-replica-standing-"
                         "20261122T152527-aacf9e"])
    assert text.count("## Affected versions (measured)") == 2
    assert text.count("| 3.9.1 | pre-elr |") == 2  # both last-replica-standing runs, one table


# --- refused --------------------------------------------------------------------------------

def test_a_clean_run_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["finding", str(CLEAN_431)]) == 2
    err = capsys.readouterr().err
    assert f"finding: {CLEAN_431.name} has no failing axis (release CONFORMS, kip CONFORMS, " \
           "safety SAFE): nothing to report" in err
    with pytest.raises(NotAFinding):
        examine(CLEAN_431)


def test_a_run_that_ended_in_error_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    run = _copy(KAFKA_19522, tmp_path)

    def error(e: dict) -> dict:  # type: ignore[type-arg]
        if e["kind"] == "run_end" or (e["kind"] == "verdict" and e.get("index") is None):
            return {**e, "verdict": "ERROR", "reason": "NodeNotReady: broker 2 did not start"}
        return e
    _rewrite_events(run, error)
    assert main(["finding", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"finding: {run.name} ended in ERROR (a harness failure, not evidence about Kafka: " \
           "rerun it): NodeNotReady: broker 2 did not start" in err


def test_a_run_cut_short_is_refused(tmp_path: Path) -> None:
    run = _copy(KAFKA_19522, tmp_path)
    _rewrite_events(run, lambda e: None if e["kind"] == "run_end" else e)
    with pytest.raises(NotAFinding, match="is INCOMPLETE"):
        finding_text([run])


def test_a_named_clean_run_is_refused_even_beside_a_failing_one() -> None:
    with pytest.raises(NotAFinding, match="has no failing axis"):
        finding_text([KAFKA_19522, CLEAN_431])


@pytest.mark.parametrize("case", ["missing", "file", "empty", "no-run-json", "corrupt"])
def test_bad_input_names_the_path(tmp_path: Path, case: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x"
    if case == "file":
        path.write_text("not a run")
    elif case == "empty":
        path.mkdir()
    elif case == "no-run-json":
        path.mkdir()
        (path / "events.jsonl").write_text("")
    elif case == "corrupt":
        path = _copy(KAFKA_19522, tmp_path)
        (path / "run.json").write_text("{ not json")
    assert main(["finding", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafka-chaos: error: finding: ") and str(path) in err, err
    assert "Traceback" not in err


def test_out_must_be_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["finding", str(KAFKA_19522), "--out", str(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err
    out = tmp_path / "finding.md"
    assert main(["finding", str(KAFKA_19522), "--out", str(out)]) == 0
    assert out.read_text().startswith("# TO WRITE: title")


# --- directories, shrunk runs, every fixture -----------------------------------------------

def test_a_directory_of_runs_reports_the_failing_ones_and_lists_the_rest() -> None:
    found, left_out = gather([HISTORIES])
    names = {ev.run_dir.name for ev in found}
    assert KAFKA_19522.name in names and LOSS_391.name in names
    assert CLEAN_431.name not in names
    assert any(lo.why.startswith(f"{CLEAN_431.name} has no failing axis") for lo in left_out)
    text = finding_text([HISTORIES])
    # clean runs of a scenario with a draft are the builds it does not affect
    assert "Not affected, or not judged (measured with the same scenario):" in text
    assert f"| 4.3.1 | release CONFORMS, kip CONFORMS, safety SAFE | - | `{CLEAN_431}` |" in text
    # the rest are listed at the end
    assert "## Runs left out (not findings)" in text
    assert "- hwm-frozen-under-min-isr-20261122T152510-e1ac16 has no failing axis" in text


def test_a_directory_without_a_failing_run_is_refused(tmp_path: Path) -> None:
    _copy(CLEAN_431, tmp_path)
    with pytest.raises(NotAFinding, match="none of its 1 run"):
        finding_text([tmp_path])


def test_a_shrunk_run_is_reproduced_from_its_minimal_schedule(tmp_path: Path) -> None:
    run = _copy(LOSS_391, tmp_path)
    text = (run / "scenario.yaml").read_text()
    steps_at = text.index("steps:")
    minimal = text[:steps_at].replace("name: last-replica-standing",
                                      "name: last-replica-standing-min") + (
        "steps:\n  - produce: {count: 3, acks: all}\n  - kill: {broker: 1}\n"
        "  - consume: {}\n")
    (run / "minimal.yaml").write_text(minimal)
    (run / "shrink.json").write_text(json.dumps(
        {"original_steps": 9, "steps": 3, "attempts": [{}] * 12, "stopped": "1-minimal",
         "seconds": 300.0, "signature": [["safety", "UNSAFE", ["acked-record-durable"]]]}))
    out = finding_text([run])
    steps = out.split("## Steps to reproduce")[1].split("## Expected")[0]
    assert "shrunk by `kafka-chaos fuzz` (9 -> 3 steps in 12 run(s), 1-minimal" in steps
    assert "name: last-replica-standing-min" in steps and "- kill: {broker: 1}" in steps
    assert f"kafka-chaos run {run / 'minimal.yaml'} --kafka-version 3.9.1" in steps
    assert "generated schedule of `kafka-chaos fuzz`" in out


@pytest.mark.parametrize("run", sorted(p for p in HISTORIES.iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_every_recorded_run_gives_a_draft_or_a_reason(run: Path) -> None:
    try:
        text = finding_text([run])
    except NotAFinding as exc:
        assert run.name in str(exc)
        return
    assert "## Affected versions (measured)" in text and run.name in text


def test_record_names_are_kafkas_message_names() -> None:
    assert record_name("PARTITION_CHANGE_RECORD") == "PartitionChangeRecord"
    assert record_name("CLEAR_ELR_RECORD") == "ClearElrRecord"
    assert record_name("Something") == "Something"


def test_not_a_finding_is_a_usage_error() -> None:
    assert issubclass(NotAFinding, UsageError)


# --- the ELR report (docs/findings/elr-keeps-removed-replica.md) ---------------------------

ELR_RUNS = ROOT / "docs" / "findings" / "elr-keeps-removed-replica" / "runs"


def test_the_elr_report_draft_names_the_stale_record_and_the_lost_records() -> None:
    """The command's first output, kept with the finding: the 4.3.1 data-loss run."""
    run = ELR_RUNS / "elr-removed-replica-elected-after-reassign-back-20261126T163425-ecab88"
    text = finding_text([run])
    assert "Priority (suggested):** Critical: data loss (3 acks=all record(s) lost" in text
    assert ("PartitionChangeRecord (version 2) partitionId=0, topicId=ZOJbCSIIQD63kqZ8O8EH1w, "
            "isr=[1, 4], leader=1, replicas=[1, 3, 4], removingReplicas=[], addingReplicas=[], "
            "eligibleLeaderReplicas=[2, 3]") in text
    for rid in ("ecab88-r0", "ecab88-r1", "ecab88-r2"):
        assert f"  - record `{rid}` (offset {rid[-1]}, acks all, topic t, partition 0)" in text
    # broker 2 elected from the ELR with an empty log (HWM 0), step by step
    assert "| 10 | `{\"stop\": {\"broker\": 1}}` | 2 | 2 | [1, 4, 2, 3] | [2] | [1, 3, 4] | [] | " \
           "[1, 3, 4] | 0 | CONFORMS |" in text


def test_the_elr_runs_of_two_builds_share_one_table_per_scenario() -> None:
    text = finding_text([ELR_RUNS])
    assert text.count("## Affected versions (measured)") == 2
    assert "| 4.0.2 | kafka-4.0-elr | UNSAFE | DIVERGES | KIP-DIVERGES | UNSAFE |" in text


def test_a_draft_of_several_partitions_shows_each_partition_and_the_fencing() -> None:
    """The stale-index finding's runs (two topics, one deleted): the step table names the
    partition, so the broker that stays fenced is visible on the deleted topic's row."""
    runs = (Path(__file__).resolve().parent.parent / "docs" / "findings"
            / "elr-index-stale-after-min-isr-change" / "runs" / "scenario")
    run = sorted(runs.glob("elr-index-stale-broker-never-registers-*"))[-1]
    text = finding_text([run])
    assert "| 6 | `{\"await\": {\"ready\": [3], \"timeout_s\": 60}}` | t-0 | -1 | - | [] | [] " \
           "| [] | [] | [3] | - | DIVERGES |" in text
    assert "| 6 | `{\"await\": {\"ready\": [3], \"timeout_s\": 60}}` | u-0 | 1 | 0 | [1, 2, 3] " \
           "| [1, 2] |" in text
