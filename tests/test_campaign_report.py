"""The campaign report of a hunt (issue 35, item 4; harness/report/campaign.py): its numbers on
a crafted campaign directory (runs by kind, runs per hour, coverage over time, signature
rows with their shrunk scenario, what was never reached), the times derived from wall clocks
for a campaign without a run log, the error for a directory that is no campaign, and the
whole report on Spark through `kafka-chaos report --campaign`. No cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import app
from harness.infra.errors import UsageError
from harness.report import campaign
from harness.search import hunt

SIG = [["safety", "UNSAFE", ["acked-record-durable"]]]
SIG_KEY = "safety UNSAFE [acked-record-durable]"
MINIMAL = """version: 1
name: fuzz-s1-1-min
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
- kill: {broker: 2}
- reassign:
    replicas: [3, 2, 1]
- consume: {}
"""


def write_campaign(root: Path, run_log: bool = True) -> Path:
    """A 4.3.1 campaign of 30 minutes: 3 generated runs, a re-run and a shrink attempt; a
    signature shrunk to 3 steps and a harness error."""
    d = root / "hunt-s1"
    runs = d / "runs"
    walls = {  # name -> (started, ended) wall clock: two sessions, 1000 s apart
        "fuzz-s1-0": (1000.0, 1060.0), "fuzz-s1-1": (1061.0, 1120.0),
        "fuzz-s1-1-again": (1120.0, 1180.0), "fuzz-s1-1-shrink1": (1180.0, 1240.0),
        "fuzz-s1-2": (3000.0, 3300.0)}
    for name, (start, end) in walls.items():
        rd = runs / f"{name}-20261126T000000-abcdef"
        rd.mkdir(parents=True)
        (rd / "run.json").write_text(json.dumps({
            "run_id": rd.name, "scenario": {"name": name}, "build": {"version": "4.3.1"},
            "started_wall": start, "ended_wall": end,
            "verdict": "DIVERGES" if name.startswith("fuzz-s1-1") else "CONFORMS"}))
    first = runs / "fuzz-s1-1-20261126T000000-abcdef"
    (first / "minimal.yaml").write_text(MINIMAL)
    log = [{"run": "fuzz-s1-0", "ended_s": 60.0, "error": False},
           {"run": "fuzz-s1-1", "ended_s": 300.0, "error": False},
           {"run": "fuzz-s1-1-again", "ended_s": 420.0, "error": False},
           {"run": "fuzz-s1-1-shrink1", "ended_s": 600.0, "error": False},
           {"run": "fuzz-s1-2", "ended_s": 1800.0, "error": True}]
    build = {
        "version": "4.3.1", "next_index": 3, "generated": 3, "mutated": 1, "runs": 5,
        "errors": 1, "seconds": 1800.0, "run_seconds": 1700.0,
        "coverage": {"transition:fenced": "fuzz-s1-0", "rule:LeaderIsLive": "fuzz-s1-0",
                     "deviation:no-elr": "fuzz-s1-1",
                     "transition:elr-add": "fuzz-s1-1-shrink1",
                     "rule:ElrMembersRetained": "fuzz-s1-1",
                     "rule:MetadataLogMatching": "fuzz-s1-9"},  # a run with no known time
        "corpus": [], "timeline": [],
        "known": [
            {"key": SIG_KEY, "signature": SIG, "cls": "model-gap", "why": "the <model> is wrong",
             "status": "reproducible", "first_run": str(first), "occurrences": 2,
             # where the hunt ran: not this cwd; found again in the runs dir
             "minimal": f"elsewhere/runs/{first.name}/minimal.yaml", "minimal_steps": 3,
             "found_at_run": 2, "found_after_s": 300.0},
            {"key": "ERROR: boom N", "signature": None, "cls": "harness-error",
             "why": "the run ended in ERROR: boom 7", "status": "error",
             "first_run": "x/runs/fuzz-s1-2-20261126T000000-abcdef", "occurrences": 1,
             "found_at_run": 3,
             "found_after_s": 1800.0}]}
    if run_log:
        build["run_log"] = log
    d.mkdir(parents=True, exist_ok=True)
    (d / hunt.STATE_FILE).write_text(json.dumps({
        "version": hunt.STATE_VERSION, "settings": {"seed": 1, "steps": 10, "weights": {},
                                                    "mutate_share": 0.5},
        "builds": {"4.3.1": build}}))
    (d / "4.3.1").mkdir()
    (d / "4.3.1" / "fuzz-summary.json").write_text(json.dumps({"failures": [
        {"signature": SIG_KEY, "rate": "2/2", "minimal_rate": "1/1"}]}))
    return d


def rows_of(d: Path) -> list[dict[str, Any]]:
    """The Spark job's rows, read in process (the same task function)."""
    return [campaign.read_run(str(p)) for p in campaign.run_dirs(d / "runs")]


def report_of(d: Path) -> dict[str, Any]:
    state = campaign.load_campaign(d)
    return campaign.campaign_report(state, rows_of(d), d, d / "runs")


def test_the_numbers_of_a_campaign(tmp_path: Path) -> None:
    d = write_campaign(tmp_path)
    (b,) = report_of(d)["builds"]
    assert b["kinds"] == {"generated": 3, "re-run": 1, "shrink": 1}
    assert (b["runs_per_hour"], b["generated_per_hour"]) == (10.0, 6.0)  # 5 and 3 in 30 min
    assert b["verdicts"] == {"CONFORMS": 2, "DIVERGES": 3}
    assert "run log" in b["time_source"]
    assert [(p["minutes"], p["transitions"], p["rules"], p["run"]) for p in b["coverage"]] == [
        (0.0, 0, 0, None), (1.0, 1, 1, "fuzz-s1-0"), (5.0, 1, 2, "fuzz-s1-1"),
        (10.0, 2, 2, "fuzz-s1-1-shrink1")]
    assert b["unplaced"] == ["rule:MetadataLogMatching"]
    nr = b["never_reached"]
    assert len(nr["transitions"]) == len(hunt.TRANSITION_NAMES) - 2
    assert "fenced" not in nr["transitions"] and "elected-from-elr" in nr["transitions"]
    assert len(nr["rules"]) == len(hunt.RULE_NAMES) - 3
    assert "LeaderIsLive" not in nr["rules"] and "ElrElectionOnlyWithEmptyIsr" in nr["rules"]
    sig, err = b["signatures"]
    assert (sig["class"], sig["status"], sig["rate"], sig["minimal_rate"]) == (
        "model-gap", "reproducible", "2/2", "1/1")
    assert (sig["found_after_min"], sig["found_at_run"], sig["occurrences"]) == (5.0, 2, 2)
    assert sig["steps"] == ["kill broker: 2", "reassign replicas: [3, 2, 1]", "consume"]
    assert sig["minimal_file"] and sig["minimal_file"].endswith("minimal.yaml")
    assert "brokers: 3" in sig["scenario"] and "min_insync_replicas: 2" in sig["scenario"]
    assert (err["class"], err["steps"], err["rate"], err["found_after_min"]) == (
        "harness-error", [], None, 30.0)


def test_without_a_run_log_times_come_from_the_run_directories(tmp_path: Path) -> None:
    d = write_campaign(tmp_path, run_log=False)
    (b,) = report_of(d)["builds"]
    assert "wall clocks" in b["time_source"]
    assert "derived total 9.0 min, the state's 30.0 min" in b["time_source"]
    assert "run directories, the state counts" not in b["time_source"]
    st = campaign.load_campaign(d).builds["4.3.1"]
    st.runs = 4  # a run stopped by SIGTERM: a directory the state does not count
    assert "5 run directories, the state counts 4 runs" in campaign.build_report(
        st, rows_of(d), d, d / "runs")["time_source"]
    assert b["kinds"] == {"generated": 3, "re-run": 1, "shrink": 1}
    # session 1: 1000..1240 s (240 s); the 1760 s pause is a break; session 2: 300 s
    ended = campaign.derived_end_times(rows_of(d))
    assert ended == {"fuzz-s1-0": 60.0, "fuzz-s1-1": 120.0, "fuzz-s1-1-again": 180.0,
                     "fuzz-s1-1-shrink1": 240.0, "fuzz-s1-2": 540.0}
    assert [(p["minutes"], p["run"]) for p in b["coverage"]][1:] == [
        (1.0, "fuzz-s1-0"), (2.0, "fuzz-s1-1"), (4.0, "fuzz-s1-1-shrink1")]
    # the first hit at the derived time of its first run, not the one the state recorded
    assert [(s["found_after_min"], s["recorded_after_min"]) for s in b["signatures"]] == [
        (2.0, 5.0), (9.0, 30.0)]
    assert "first hit after 2.0 min (generated run 2; the state recorded 5.0 min)" in (
        campaign.markdown(report_of(d)))
    # overlapping runs (--jobs 2) count their shared time once
    both = [{"name": "a", "started": 0.0, "ended": 100.0},
            {"name": "b", "started": 10.0, "ended": 150.0}]
    assert campaign.derived_end_times(both) == {"a": 100.0, "b": 150.0}
    # a resume 78 s after a stop is a new session; 50 s between two runs is not
    pause = [{"name": "a", "started": 0.0, "ended": 100.0},
             {"name": "b", "started": 178.0, "ended": 200.0},
             {"name": "c", "started": 250.0, "ended": 260.0}]
    assert campaign.derived_end_times(pause) == {"a": 100.0, "b": 122.0, "c": 182.0}


def test_no_run_directory_falls_back_to_the_counters(tmp_path: Path) -> None:
    d = write_campaign(tmp_path, run_log=False)
    state = campaign.load_campaign(d)
    (b,) = campaign.campaign_report(state, [], d, d / "none")["builds"]
    assert b["kinds"] == {"generated": 3, "re-run or shrink": 2}
    assert b["coverage"] == [{"minutes": 0.0, "run": None, "new": [], "transitions": 0,
                              "rules": 0}]
    assert len(b["unplaced"]) == 6  # every coverage feature, the deviation too
    assert b["signatures"][0]["minimal_problem"].endswith("minimal.yaml: not found")


def test_run_kinds() -> None:
    assert [campaign.run_kind(n) for n in (
        "fuzz-s36-18", "fuzz-s36-18-again", "fuzz-s36-18-min1", "fuzz-s36-18-shrink10",
        "hand-written")] == ["generated", "re-run", "re-run", "shrink", "other"]


def test_a_directory_that_is_no_campaign_is_refused(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").mkdir()
    with pytest.raises(UsageError, match=r"holds no hunt-state.json, so it is no hunt "
                                         r"campaign; give the directory `kafka-chaos hunt"):
        campaign.load_campaign(tmp_path)
    assert app.main(["report", "--campaign", str(tmp_path / "nope")]) == 2
    assert f"report --campaign {tmp_path / 'nope'}: no such directory" in capsys.readouterr().err
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        campaign.load_campaign(tmp_path / "f")
    (tmp_path / hunt.STATE_FILE).write_text("{torn")
    with pytest.raises(UsageError, match="hunt-state.json is unreadable"):
        campaign.load_campaign(tmp_path)
    assert not (tmp_path / "report.html").exists()
    assert app.main(["report", "--campaign", str(tmp_path), str(tmp_path)]) == 2
    assert "takes no RUNS_DIR" in capsys.readouterr().err
    assert app.main(["report", str(tmp_path)]) == 2  # the conformance report needs --out
    assert "give RUNS_DIR... --out DIR" in capsys.readouterr().err


def test_the_hunt_says_a_report_failure_and_loses_nothing(tmp_path: Path) -> None:
    from harness.cli.hunt import write_report
    said: list[str] = []
    assert write_report(tmp_path / "gone", tmp_path, said.append) is False
    assert "the campaign report could not be built" in said[0]
    assert f"kafka-chaos report --campaign {tmp_path / 'gone'}" in said[0]


def test_the_pages(tmp_path: Path) -> None:
    r = report_of(write_campaign(tmp_path))
    page = campaign.render(r)
    assert page.count("<tr class='signature'>") == 2
    assert "the &lt;model&gt; is wrong" in page and "<model>" not in page
    assert "2. reassign replicas: [3, 2, 1]" in page
    assert "elected-from-elr" in page.split("Never reached")[1]
    assert "no-elr (fuzz-s1-1, 5.0 min)" in page.split("Cited deviations met")[1]
    assert "<polyline class='transitions'" in page and "<polyline class='rules'" in page
    md = campaign.markdown(r)
    assert "| 4.3.1 | 30.0 | 5 (3 generated, 1 re-run, 1 shrink) | 10.0 | 6.0 | 2/20 |" in md
    assert "**model-gap**, reproducible (2/2; shrunk schedule 1/1)" in md
    assert "Cited deviations met: no-elr (fuzz-s1-1, 5.0 min)" in md


def test_the_report_on_spark_through_the_command(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession
    d = write_campaign(tmp_path)
    (d / "runs" / "torn").mkdir()
    (d / "runs" / "torn" / "run.json").write_text("{torn")
    had = SparkSession.getActiveSession()
    assert app.main(["report", "--campaign", str(d)]) == 0
    r = json.loads((d / "report.json").read_text())
    (b,) = r["builds"]
    assert b["verdicts"] == {"CONFORMS": 2, "DIVERGES": 3}  # read by the Spark tasks
    assert [u["dir"].endswith("torn") for u in r["unreadable_runs"]] == [True]
    assert (d / "report.md").is_file() and "<tr class='signature'>" in (
        d / "report.html").read_text()
    if had is None:  # a session the report started is stopped
        assert SparkSession.getActiveSession() is None


def test_a_hunt_campaign_is_reported_from_its_run_log(tmp_path: Path) -> None:
    """A campaign as `hunt` writes it (a fake run function, no run directory): coverage over
    time from the run log the hunt recorded, the re-run and the shrink attempts counted."""
    from harness.run.runner import Runner
    from harness.search import fuzz
    from reference import profile_for_build
    now = [0.0]
    reach = {0: hunt.Reach(frozenset({"fenced"})), 2: hunt.Reach(rules=frozenset({"LeaderIsLive"}))}
    sig: Any = (("safety", "UNSAFE", ("acked-record-durable",)),)

    def run(name: str, seed: int, steps: Any) -> fuzz.Outcome:
        now[0] += 60.0
        return fuzz.Outcome(sig if name.split("-")[2] == "1" else None, None, Path(name))

    def reached(out: fuzz.Outcome) -> hunt.Reach:
        assert out.run_dir is not None
        name = out.run_dir.name
        return reach.get(int(name.split("-")[2]), hunt.Reach()) if name.count("-") == 2 \
            else hunt.Reach()
    prof = profile_for_build((4, 3, 1), True)
    plan = hunt.BuildPlan("4.3.1", lambda: Runner.model_for(fuzz.base_scenario(), prof, True),
                          run, reached, lambda run_dir: ("CONFORMS", ()))
    cfg = hunt.HuntConfig(seed=1, budget_s=3600, runs=3, shrink_attempts=2)
    d = tmp_path / "c"
    hunt.hunt(cfg, [plan], d, clock=lambda: now[0])
    r = campaign.make_campaign_report(d)  # no run directory: no Spark session
    (b,) = r["builds"]
    assert b["kinds"]["generated"] == 3 and b["kinds"]["re-run"] >= 1 and b["kinds"]["shrink"]
    assert b["runs_seen"] == b["runs"] == sum(b["kinds"].values())
    assert [(p["minutes"], p["transitions"], p["rules"]) for p in b["coverage"]] == [
        (0.0, 0, 0), (1.0, 1, 0), (b["runs"], 1, 1)]  # a run a minute; run 2 is the last
    (s,) = b["signatures"]
    assert (s["class"], s["found_after_min"]) == ("model-gap", 2.0)
    assert {f.name for f in d.iterdir()} >= set(campaign.FILES)
