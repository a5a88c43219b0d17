"""One headline a user can trust (issue 30, item 6): every surface that shows a run's overall
verdict derives it from the three axes and the scenario's declarations (harness/run/
headline.py), never from the step-wise lockstep result.

The run under test is real: kip966-elect-when-replied on Kafka 4.0.2 (KAFKA-19522). Its
settled states conformed step by step (lockstep CONFORMS, the recorded run.json verdict),
while its metadata trace gives release DIVERGES, kip KIP-DIVERGES and safety UNSAFE. Its
scenario declares all three for 4.0.x (the run passes, as declared); with the declarations
cut off, the same run fails on every axis, undeclared: no surface may call it CONFORMS."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness.cli.app import main
from harness.judge.audit import audit
from harness.judge.headline import NOT_AS_DECLARED, headline
from harness.run.runner import RunResult

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
HISTORIES = ROOT / "fixtures" / "histories"
KAFKA_19522 = HISTORIES / "kip966-elect-when-replied-20261123T162924-d3ab82"
SCENARIO = ROOT / "fixtures" / "scenarios" / "kip966-elect-when-replied.yaml"
UNDECLARED = "UNSAFE (undeclared: safety UNSAFE, release DIVERGES, kip KIP-DIVERGES)"
# the run was recorded before the scenario named its bug: audit takes the name from the
# repository's file of the same name (harness/judge/audit.py _with_current_names)
DECLARED = "KNOWN BUG KAFKA-19522 (as declared: release DIVERGES, kip KIP-DIVERGES, safety UNSAFE)"
LOCKSTEP = "lockstep CONFORMS (settled states, step by step)"
CASES = pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "declared"])


def _run_dir(parent: Path, declared: bool, name: str = KAFKA_19522.name) -> Path:
    """A copy of the KAFKA-19522 run; undeclared: its scenario without `expect:`."""
    run = parent / name
    shutil.copytree(KAFKA_19522, run)
    if not declared:
        text = (run / "scenario.yaml").read_text()
        (run / "scenario.yaml").write_text(text[:text.index("expect:")])
    return run


def _axis(verdict: str, expected: str | None = None, reason: str = "why") -> dict[str, Any]:
    return {"verdict": verdict, "reason": reason,
            "expected": None if expected is None else {"verdict": expected, "reason": "known"}}


def _axes(release: dict[str, Any] | str, kip: dict[str, Any] | str,
          safety: dict[str, Any] | str) -> dict[str, Any]:
    return {a: _axis(v) if isinstance(v, str) else v
            for a, v in (("release", release), ("kip", kip), ("safety", safety))}


# --- the rule ------------------------------------------------------------------------------

def test_the_worst_axis_neither_clean_nor_as_declared_is_the_headline() -> None:
    h = headline(_axes("DIVERGES", "KIP-DIVERGES", "UNSAFE"), "CONFORMS")
    assert (h.verdict, h.passed, h.exit_code) == ("UNSAFE", False, 1)
    assert h.text == UNDECLARED and "safety UNSAFE: why" in h.message
    assert headline(_axes("DIVERGES", "KIP-DIVERGES", "SAFE"), "CONFORMS").verdict == "DIVERGES"
    assert headline(_axes("CONFORMS", "KIP-DIVERGES", "SAFE"), "CONFORMS").verdict \
        == "KIP-DIVERGES"
    # kip DEVIATES is clean: the cited deviations explain the difference
    assert headline(_axes("CONFORMS", "DEVIATES", "SAFE"), "CONFORMS").text == "CONFORMS"


def test_a_declared_failure_that_holds_passes_and_is_named() -> None:
    h = headline(_axes("CONFORMS", "DEVIATES", _axis("UNSAFE", "UNSAFE")), "CONFORMS")
    assert (h.verdict, h.passed, h.exit_code) == ("CONFORMS", True, 0)
    assert h.text == "AS DECLARED: safety UNSAFE" and h.label == "AS DECLARED"


def test_a_declaration_the_run_does_not_meet_fails_even_when_the_axis_is_clean() -> None:
    h = headline(_axes("CONFORMS", "CONFORMS", _axis("SAFE", "UNSAFE")), "CONFORMS")
    assert (h.verdict, h.passed, h.exit_code) == (NOT_AS_DECLARED, False, 1)
    assert h.text == "NOT-AS-DECLARED (safety SAFE, declared UNSAFE)"
    # a failure of another kind than the one declared is that failure
    h = headline(_axes("CONFORMS", _axis("KIP-DIVERGES", "DEVIATES"), "SAFE"), "CONFORMS")
    assert h.verdict == "KIP-DIVERGES"


def test_errors_and_cut_short_histories_come_first_then_unsupported() -> None:
    h = headline(_axes("ERROR", "KIP-DIVERGES", "ERROR"), "ERROR")
    assert (h.verdict, h.exit_code, h.text) == ("ERROR", 2, "ERROR: why")  # one cause, once
    h = headline(_axes("CONFORMS", "CONFORMS", _axis("ERROR", reason="no data checks ran")),
                 "CONFORMS")
    assert (h.text, h.exit_code) == ("ERROR: safety: no data checks ran", 2)
    assert headline(None, "ERROR", "toxiproxy down").text == \
        "ERROR (no axes recorded): toxiproxy down"
    assert headline(_axes("CONFORMS", "CONFORMS", "SAFE"), "CONFORMS", ended=False).verdict \
        == "INCOMPLETE"
    h = headline(_axes("UNSUPPORTED", "UNSUPPORTED", "UNSUPPORTED"), "UNSUPPORTED")
    assert (h.verdict, h.passed, h.exit_code) == ("UNSUPPORTED", True, 0)
    # the model could not follow a later step, but kip had diverged before it
    assert headline(_axes("UNSUPPORTED", "KIP-DIVERGES", "UNSUPPORTED"), "UNSUPPORTED") \
        .verdict == "KIP-DIVERGES"


def test_stored_marks_are_not_trusted_and_odd_verdicts_fail() -> None:
    lying = {**_axis("UNSAFE"), "as_expected": True}  # an old or edited run.json
    assert headline(_axes("CONFORMS", "CONFORMS", lying), "CONFORMS").verdict == "UNSAFE"
    odd = headline(_axes("CONFORMS", "CONFORMS", "WEIRD"), "CONFORMS")
    assert odd.verdict == "WEIRD" and not odd.passed
    # no axes at all (a pytest-plugin run, an old history): the recorded verdict
    assert headline(None, "CONFORMS").verdict == "CONFORMS"
    assert headline({"release": _axis("CONFORMS")}, "DIVERGES").verdict == "DIVERGES"


# --- kafka-chaos run: the VERDICT line, the lockstep line, --repeat's summary, exit code ----

class _FakeBuild:
    version = "4.0.2"


@CASES
def test_run_headline_and_exit_code_follow_the_axes(
        declared: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import harness.cli.run as cli_run
    run = _run_dir(tmp_path, declared)
    axes = audit(run).axes  # what the runner judged at the end of this run

    class FakeRunner:
        profile = "kafka-4.0-elr"

        def __init__(self, scenario: Any, *args: Any, **kwargs: Any) -> None:
            self.scenario = scenario

        def run(self) -> RunResult:
            return RunResult(self.scenario.name, "4.0.2", run, self.profile, "CONFORMS",
                             axes=axes)
    monkeypatch.setattr(cli_run.builds, "resolve", lambda *a: _FakeBuild())
    monkeypatch.setattr(cli_run, "Runner", FakeRunner)
    code = main(["run", str(SCENARIO), "--kafka-version", "4.0.2", "--repeat", "2",
                 "--jobs", "1", "--runs-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if line.startswith("VERDICT")]
    assert verdicts == [f"VERDICT {DECLARED if declared else UNDECLARED}"] * 2
    assert out.count(f"  {LOCKSTEP}\n") == 2  # the step-wise result, under its own name
    assert f"kip966-elect-when-replied | 2 | {'CONFORMS' if declared else 'UNSAFE'} 2 |" in out
    assert code == (0 if declared else 1)


# --- kafka-chaos audit -----------------------------------------------------------------------

@CASES
def test_audit_leads_each_run_with_its_headline(declared: bool, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_dir(tmp_path, declared)
    code = main(["audit", str(run), "--json", str(tmp_path / "audit.json")])
    out = capsys.readouterr().out
    assert f"{run.name}: {DECLARED if declared else UNDECLARED}; release DIVERGES" in out
    head = json.loads((tmp_path / "audit.json").read_text())[0]["headline"]
    assert head["verdict"] == ("CONFORMS" if declared else "UNSAFE")
    assert code == (0 if declared else 1)


# --- the scenario suite under pytest: its outcome and its JUnit message ------------------------

SUITE_MODULE = '''
import importlib.util
from pathlib import Path

import pytest

from harness.judge.audit import audit
from harness.run.runner import RunResult

spec = importlib.util.spec_from_file_location("suite_scenarios", {suite!r})
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
RUN = Path({run!r})


class FakeBuild:
    version = "4.0.2"


class FakeRunner:
    def __init__(self, scenario, *args):
        self.scenario = scenario

    def run(self):
        return RunResult(self.scenario.name, "4.0.2", RUN, "kafka-4.0-elr", "CONFORMS",
                         axes=audit(RUN).axes)


suite.Runner = FakeRunner


@pytest.fixture
def kafka_build():
    return FakeBuild()


test_scenario_conforms = suite.test_scenario_conforms
'''


@CASES
def test_the_suites_outcome_and_junit_message_are_the_headline(
        declared: bool, tmp_path: Path, pytester: pytest.Pytester) -> None:
    run = _run_dir(tmp_path, declared)
    pytester.makepyfile(test_suite=SUITE_MODULE.format(
        suite=str(ROOT / "suites" / "test_scenarios.py"), run=str(run)))
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-W", "ignore",
                                          "-k", "kip966-elect-when-replied",
                                          f"--junitxml={xml}")
    result.assert_outcomes(passed=1 if declared else 0, failed=0 if declared else 1)
    (case,) = ET.parse(xml).getroot().iter("testcase")
    failure = case.find("failure")
    if declared:
        assert failure is None
    else:
        assert failure is not None
        assert (failure.get("message") or "").startswith(f"AssertionError: {UNDECLARED}; ")


# --- the report: matrix, Repeated runs, Trends per build, run sections, junit.xml, summary ----

@CASES
def test_report_tables_trends_junit_and_summary_follow_the_axes(
        declared: bool, tmp_path: Path, local_report: Any) -> None:
    runs = tmp_path / "runs"
    for name in (KAFKA_19522.name, KAFKA_19522.name + "-again"):  # two runs of one build
        _run_dir(runs, declared, name)
    out = tmp_path / "out"
    local_report([runs], out)
    summary = json.loads((out / "summary.json").read_text())
    want = "CONFORMS" if declared else "UNSAFE"
    assert [r["verdict"] for r in summary["runs"]] == [want] * 2
    assert summary["matrix"]["kip966-elect-when-replied"]["4.0.2"]["verdict"] == want
    shown = "KNOWN BUG" if declared else "UNSAFE"  # what the run shows, the bug named
    assert [r["label"] for r in summary["runs"]] == [shown] * 2
    assert [f["verdicts"] for f in summary["flakiness"]] == [{shown: 2}]
    (day,) = summary["trends"]["4.0.2"]
    assert (day["runs"], day["conform_rate"]) == (2, 1.0 if declared else 0.0)

    page = (out / "index.html").read_text()
    repeated = page[page.index("<h2>Repeated runs"):page.index("<h2>Trends per build")]
    assert f"<td>{shown} 2</td>" in repeated
    trends = page[page.index("<h2>Trends per build"):]
    assert ("<br>100% of 2" in trends) == declared and ("<br>0% of 2" in trends) != declared

    suite = ET.parse(out / "junit.xml").getroot()
    (case,) = suite.iter("testcase")
    failure = case.find("failure")
    if declared:
        assert suite.get("failures") == "0" and failure is None
    else:
        assert suite.get("failures") == "1" and failure is not None
        assert (failure.get("message") or "").startswith(UNDECLARED + "; safety UNSAFE: ")

    assert [(r["headline"], r["lockstep"]) for r in summary["runs"]] == [
        (DECLARED if declared else UNDECLARED, LOCKSTEP)] * 2
    assert f"{LOCKSTEP}</p>" in page  # shown, under its own name


def test_report_derives_from_stored_axes_when_it_cannot_rejudge(tmp_path: Path,
                                                                local_report: Any) -> None:
    """No scenario file to re-judge with: the axes run.json stored decide, with their marks
    and any stored headline ignored (re-derived from each axis's verdict and declaration)."""
    run = _run_dir(tmp_path / "runs", True)
    (run / "scenario.yaml").unlink()
    meta = json.loads((run / "run.json").read_text())
    meta["scenario"] = {"name": "a-scenario-no-longer-in-the-repo", "file": None}
    meta["axes"] = {"release": {**_axis("CONFORMS"), "as_expected": True},
                    "kip": {**_axis("KIP-DIVERGES"), "as_expected": True},
                    "safety": {**_axis("UNSAFE", reason="3 acks=all records lost"),
                               "as_expected": True}}
    meta["headline"] = {"verdict": "CONFORMS", "text": "CONFORMS", "passed": True}
    (run / "run.json").write_text(json.dumps(meta))
    summary = local_report([tmp_path / "runs"], tmp_path / "out")
    (row,) = summary["runs"]
    assert row["axes_note"]  # the audit could not re-judge it
    assert row["verdict"] == "UNSAFE"
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'failures="1"' in junit and "3 acks=all records lost" in junit
    assert row["lockstep"] == LOCKSTEP
