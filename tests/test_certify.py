"""kafka-chaos certify (harness/certify/): the comparison on crafted records, the budget
rule, the resume bookkeeping, and the report's top lines in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.certify import compare, plan, render, state
from harness.certify.parts import Campaign

BUILDS = {"old": "4.2.2", "new": "4.3.1"}


def cell(name: str, role: str, verdict: str = "CONFORMS", label: str = "",
         bugs: tuple[str, ...] = (), part: str = "matrix") -> dict[str, Any]:
    shown = f"{label} {' '.join(bugs)}" if bugs else label or verdict  # Headline.short
    text = f"{shown} (as declared: safety UNSAFE)" if bugs else shown
    return {"part": part, "scenario": name, "path": f"{name}.yaml", "role": role,
            "build": BUILDS[role], "verdict": verdict, "label": label, "shown": shown,
            "text": text,
            "known_bugs": list(bugs), "deviations": [],
            "run_dir": "", "wall_s": 1.0, "repro": f"kafka-chaos run {name}.yaml"}


def search(part: str, role: str, *findings: dict[str, Any],
           deviations: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"part": part, "role": role, "build": BUILDS[role], "findings": list(findings),
            "deviations": list(deviations), "coverage": None, "stats": {}}


KB = "elr-keeps-removed-replica"


def test_a_cell_clean_on_old_and_a_known_bug_on_new_is_a_regression() -> None:
    a = compare.answer([cell("complete", "old"),
                        cell("complete", "new", label="KNOWN BUG", bugs=(KB,))], [], BUILDS)
    assert a.regressions == [f"matrix complete: 4.2.2 CONFORMS, 4.3.1 KNOWN BUG {KB}",
                             f"known bug {KB} on 4.3.1, not on 4.2.2 (matrix complete)"]
    assert a.fixes == [] and a.still_present == [] and a.new_findings == []


def test_the_other_way_is_a_fix_and_an_undeclared_failure_a_new_finding() -> None:
    a = compare.answer([cell("s", "old", "UNSAFE"), cell("s", "new"),
                        cell("t", "old"), cell("t", "new", "DIVERGES")], [], BUILDS)
    assert a.fixes == ["matrix s: 4.2.2 UNSAFE, 4.3.1 CONFORMS"]
    assert a.regressions == ["matrix t: 4.2.2 CONFORMS, 4.3.1 DIVERGES"]
    assert a.new_findings == ["matrix t on 4.3.1: DIVERGES (not declared; reproduce: "
                              "kafka-chaos run t.yaml)"]


def test_a_known_bug_on_both_is_still_present_not_a_regression() -> None:
    diff_f = {"key": "invariant:IsrElrWithinReplicas:alterPartition", "known_bug": KB,
              "cls": "known-bug"}
    a = compare.answer([cell("cancel", "old", label="KNOWN BUG", bugs=(KB,)),
                        cell("cancel", "new", label="KNOWN BUG", bugs=(KB,))],
                       [search("diff", "old", diff_f), search("diff", "new", diff_f)], BUILDS)
    assert a.regressions == [] and a.fixes == [] and a.new_findings == []
    assert a.still_present == [KB]
    top = compare.headline_lines(a, BUILDS)
    assert top[3] == f"KNOWN BUGS STILL PRESENT (1): {KB} (docs/findings/{KB}.md)"


def test_nothing_different_says_nothing_and_unjudged_cells_are_no_regression() -> None:
    a = compare.answer([cell("x", "old"), cell("x", "new"),
                        cell("y", "old"), cell("y", "new", "ERROR"),
                        cell("z", "old", "UNSUPPORTED"), cell("z", "new")],
                       [search("hunt", "old", deviations=("no-elr",)),
                        search("hunt", "new", deviations=("no-elr",))], BUILDS)
    assert (a.regressions, a.fixes, a.new_findings) == ([], [], [])
    assert a.unjudged == ["matrix y: 4.2.2 CONFORMS, 4.3.1 ERROR"]
    assert a.deviations == {"no-elr": {"old": ["hunt"], "new": ["hunt"]}}
    assert compare.headline_lines(a, BUILDS)[1] == "REGRESSIONS (0): none"


def test_a_finding_class_on_new_only_is_a_regression_and_a_deviation_on_old_only_shows() -> None:
    f = {"key": "invariant:IsrElrWithinReplicas:completeReassignment", "known_bug": KB,
         "cls": "known-bug"}
    g = {"key": "release:leader:register", "known_bug": None, "cls": "unexplained",
         "repro": "kafka-chaos diff --kafka-version 4.3.1 --seed 1"}
    a = compare.answer([], [search("diff", "old", deviations=("reassignment-waits",)),
                            search("diff", "new", f, g)], BUILDS)
    assert a.regressions[:2] == [
        f"diff finding on 4.3.1 only: {f['key']} (known bug {KB})",
        "diff finding on 4.3.1 only: release:leader:register (unexplained)"]
    assert a.new_findings == ["diff on 4.3.1: release:leader:register: class unexplained; "
                              "reproduce: kafka-chaos diff --kafka-version 4.3.1 --seed 1"]
    assert "reassignment-waits (4.2.2)" in compare.headline_lines(a, BUILDS)[5]


def test_a_known_bug_both_met_by_other_signatures_and_a_harness_error_change_nothing() -> None:
    f = {"key": "kip:leaderEpoch:register", "known_bug": "elr-index-stale", "cls": "known-bug"}
    g = {"key": "kip:partitionEpoch:register", "known_bug": "elr-index-stale",
         "cls": "known-bug"}
    err = {"key": "ERROR: no current broker", "known_bug": None, "cls": "harness-error"}
    a = compare.answer([], [search("diff", "old", g), search("diff", "new", f),
                            search("hunt", "new", err)], BUILDS)
    assert (a.regressions, a.fixes, a.new_findings) == ([], [], [])
    assert a.still_present == ["elr-index-stale"]
    assert a.unjudged == ["hunt on 4.3.1: ERROR: no current broker"]


def test_a_failing_upgrade_path_is_a_regression() -> None:
    a = compare.answer([cell("upgrade-4-2-2-to-4-3-1-traffic", "old", "UNSAFE",
                             part="upgrade")], [], BUILDS)
    assert a.regressions[0].startswith("upgrade upgrade-4-2-2-to-4-3-1-traffic: UNSAFE")


def test_the_budget_rule_and_its_overrides() -> None:
    assert plan.split_budget(1000, {}) == {"matrix": 400, "upgrade": 150, "diff": 150,
                                           "hunt": 300}
    # an override takes its time; the others share the rest in the same proportions
    assert plan.split_budget(1000, {"hunt": 0}) == {
        "matrix": pytest.approx(571.4), "upgrade": pytest.approx(214.3),
        "diff": pytest.approx(214.3), "hunt": 0}
    assert plan.parse_part_budget("matrix=10m, hunt=0", lambda t: {"10m": 600.0}[t]) == {
        "matrix": 600.0, "hunt": 0.0}
    with pytest.raises(ValueError, match="PART=DURATION"):
        plan.parse_part_budget("fuzz=1m", float)


class _Build:
    def __init__(self, version: str) -> None:
        self.version = version


class _Fake(Campaign):
    """A campaign whose scenario runs are recorded calls; ``stop_at`` raises Ctrl-C."""

    def __init__(self, *a: Any, stop_at: str | None = None) -> None:
        super().__init__(*a)
        self.calls: list[str] = []
        self.stop_at = stop_at

    def _cells(self, part: str, planned: list[dict[str, Any]]) -> None:
        for p in planned:
            for role in p["roles"]:
                key = f"{part}/{role}/{p['name']}"
                if self.state.done(key):
                    continue
                if key == self.stop_at:
                    raise KeyboardInterrupt
                self.calls.append(key)
                self._timed(part, lambda p=p, r=role: cell(p["name"], r, part=part), key)

    def _diff(self) -> None:
        self.calls.append("diff")

    def _hunt(self) -> None:
        self.calls.append("hunt")


def _campaign(tmp: Path, stop_at: str | None = None) -> _Fake:
    settings = {"new": "4.3.1", "old": "4.2.2", "seed": 1, "kafka_dist": None}
    st = state.load(tmp, settings)
    if not st.plan:
        planned = [{"name": n, "path": f"{n}.yaml", "roles": ["old", "new"],
                    "estimate_s": 10.0} for n in ("a", "b")]
        st.plan = {"split": plan.split_budget(600, {}), "rule": ["r"], "matrix": planned,
                   "upgrade": [], "left_out": {"matrix": {}, "upgrade": {}}}
    return _Fake(tmp, st, {"old": _Build("4.2.2"), "new": _Build("4.3.1")}, lambda s: None,
                 stop_at=stop_at)


def _run(c: _Fake) -> None:
    for part in plan.PARTS:
        c.run_part(part)


def test_an_interrupted_campaign_resumes_where_it_stopped(tmp_path: Path) -> None:
    first = _campaign(tmp_path, stop_at="matrix/old/b")
    with pytest.raises(KeyboardInterrupt):
        _run(first)
    assert first.calls == ["matrix/old/a", "matrix/new/a"]
    second = _campaign(tmp_path)  # the same directory: only what did not finish
    _run(second)
    assert second.calls == ["matrix/old/b", "matrix/new/b", "diff", "hunt"]
    third = _campaign(tmp_path)  # every part done: nothing runs again
    _run(third)
    assert third.calls == []
    whole = _campaign(tmp_path / "whole")
    _run(whole)
    assert render.model(state.load(tmp_path, {}))["answer"] == \
        render.model(state.load(tmp_path / "whole", {}))["answer"]  # the same report


def test_another_campaign_in_the_directory_is_refused(tmp_path: Path) -> None:
    _run(_campaign(tmp_path))
    with pytest.raises(state.SettingsMismatch, match="old: '4.2.2' there, '4.1.2' now"):
        state.load(tmp_path, {"new": "4.3.1", "old": "4.1.2", "seed": 1, "kafka_dist": None})


def _report(tmp: Path) -> Path:
    st = state.CertifyState({"new": "4.3.1", "old": "4.2.2", "seed": 1},
                            {"split": plan.split_budget(600, {}), "rule": ["rule"],
                             "left_out": {"matrix": {}, "upgrade": {}}})
    for p in plan.PARTS:
        st.part(p)["done"] = True
    for k, c in {"matrix/old/complete": cell("complete", "old"),
                 "matrix/new/complete": cell("complete", "new", label="KNOWN BUG", bugs=(KB,)),
                 "matrix/old/s": cell("s", "old"), "matrix/new/s": cell("s", "new")}.items():
        st.record(k, c)
    render.write(tmp, st)
    return tmp / "certify.html"


def test_reports_label_declared_cells_and_junit_fails_the_regression(tmp_path: Path) -> None:
    page = _report(tmp_path).read_text()
    assert "KNOWN BUG" in page and "REGRESSIONS (2)" in page
    md = (tmp_path / "certify.md").read_text()
    assert f"| complete | CONFORMS | KNOWN BUG {KB} |" in md
    junit = (tmp_path / "junit.xml").read_text()
    assert "failures='2'" in junit and "tests='3'" in junit


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed "
                    "(apt-get install chromium); .ci/run installs it")
def test_top_lines_in_headless_chromium(tmp_path: Path) -> None:
    page = _report(tmp_path)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(["chromium", *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert 'data-ready="yes"' in dom.stdout, dom.stderr[-2000:]
    assert 'id="answer"' in dom.stdout and "REGRESSIONS (2)" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", *flags, "--window-size=1200,700", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


class _Sc:
    def __init__(self, name: str, steps: int, differ: bool = False) -> None:
        from types import SimpleNamespace
        self.name, self.path, self.steps, self.traffic = name, f"{name}.yaml", [0] * steps, None
        self.cluster = SimpleNamespace(broker_ids=[1, 2, 3], controller_ids=[100])
        self.differ = differ

    def expected(self, axis: str, version: tuple[int, int, int]) -> Any:
        return ("UNSAFE", version) if self.differ and version >= (4, 3, 0) else None


def test_the_plan_takes_declared_differences_first_then_the_cheapest_while_it_fits() -> None:
    scs = [_Sc("cheap", 1), _Sc("dear", 20), _Sc("known", 10, differ=True), _Sc("one", 1)]
    gaps = {s.path: {"old": None, "new": None} for s in scs}
    gaps["one.yaml"] = {"old": "needs Kafka >= 4.3.0", "new": None}
    versions = {"old": (4, 2, 2), "new": (4, 3, 1)}
    planned, left = plan.plan_scenarios(scs, gaps, versions, budget_s=2 * 65 + 2 * 29 + 29)
    assert [p.name for p in planned] == ["known", "cheap", "one"]  # 65 s, 29 s, 29 s each
    assert [p.name for p in left] == ["dear"]
    assert planned[2].roles == ("new",) and planned[2].gaps == {"old": "needs Kafka >= 4.3.0"}


def again(name: str, role: str, verdict: str = "CONFORMS", **kw: Any) -> dict[str, Any]:
    return {**cell(name, role, verdict, **kw), "confirm": True}


def test_a_difference_the_re_runs_repeat_stands_and_one_they_do_not_is_flaky() -> None:
    first = [cell("s", "old"), cell("s", "new", "DIVERGES")]
    assert compare.to_confirm(first) == ["s"]
    assert compare.to_confirm([cell("s", "old"), cell("s", "new")]) == []
    held = compare.answer(first + [again("s", "old"), again("s", "new", "DIVERGES")], [],
                          BUILDS)
    assert held.regressions == ["matrix s: 4.2.2 CONFORMS, 4.3.1 DIVERGES (the same on a "
                                "re-run of both)"]
    assert compare.to_confirm(first + [again("s", "old"), again("s", "new")]) == []
    flaky = compare.answer(first + [again("s", "old"), again("s", "new")], [], BUILDS)
    assert flaky.regressions == [] and flaky.new_findings == [] and flaky.fixes == []
    assert flaky.unjudged == ["matrix s: 4.2.2 CONFORMS, 4.3.1 DIVERGES (flaky: 4.3.1 "
                              "DIVERGES, then CONFORMS)"]
    fix = [cell("f", "old", "DIVERGES"), cell("f", "new"), again("f", "old"), again("f", "new")]
    assert compare.answer(fix, [], BUILDS).unjudged == [
        "matrix f: 4.2.2 DIVERGES, 4.3.1 CONFORMS (flaky: 4.2.2 DIVERGES, then CONFORMS)"]


class _Differs(_Fake):
    """Scenario b DIVERGES on the new build at its first run only."""

    def _cells(self, part: str, planned: list[dict[str, Any]], confirm: bool = False) -> None:
        from harness.certify.parts import cell_key
        for p in planned:
            for role in p["roles"]:
                key = cell_key(part, role, p["name"], confirm)
                if self.state.done(key):
                    continue
                self.calls.append(key)
                bad = p["name"] == "b" and role == "new" and not confirm
                self._timed(part, lambda p=p, r=role, bad=bad: {
                    **cell(p["name"], r, "DIVERGES" if bad else "CONFORMS", part=part),
                    "confirm": confirm}, key)


def test_the_matrix_runs_a_differing_scenario_again_and_the_report_calls_it_flaky(
        tmp_path: Path) -> None:
    c = _Differs(tmp_path, _campaign(tmp_path).state,
                 {"old": _Build("4.2.2"), "new": _Build("4.3.1")}, lambda s: None)
    _run(c)
    assert c.calls == ["matrix/old/a", "matrix/new/a", "matrix/old/b", "matrix/new/b",
                       "matrix-confirm/old/b", "matrix-confirm/new/b", "diff", "hunt"]
    m = render.model(state.load(tmp_path, {}))
    assert m["answer"]["regressions"] == [] and any("flaky" in u
                                                     for u in m["answer"]["unjudged"])
    assert [name for name, _ in render._pairs(m["cells"], "matrix")] == ["a", "b"]


def test_what_a_finished_part_leaves_goes_to_the_later_parts() -> None:
    split = plan.split_budget(1000, {})  # matrix 400, upgrade 150, diff 150, hunt 300
    parts = {p: {"done": False, "elapsed_s": 0.0} for p in plan.PARTS}
    assert plan.with_unspent(split, parts, "diff") == 150.0  # nothing finished yet
    parts["matrix"] = {"done": True, "elapsed_s": 250.0}     # 150 left
    parts["upgrade"] = {"done": True, "elapsed_s": 30.0}     # 120 left
    assert plan.with_unspent(split, parts, "diff") == pytest.approx(150 + 270 * 0.15 / 0.45)
    parts["diff"] = {"done": True, "elapsed_s": 240.0}       # took its 150 + 90 of the 270
    assert plan.with_unspent(split, parts, "hunt") == pytest.approx(300 + 180)
    assert plan.with_unspent(split, parts, "hunt", overridden=("hunt",)) == 300.0
    parts["matrix"]["elapsed_s"] = 900.0                     # an overrun takes nothing away
    assert plan.with_unspent(split, parts, "hunt") == 300.0
    assert plan.with_unspent(split, parts, "diff", overridden=("hunt",)) == 150.0


def test_the_report_says_where_each_call_ran() -> None:
    assert render.where({}) == "Where: not recorded (a campaign from before this line)."
    assert render.where({"where": ["one machine", "spark://h:7077"]}) == (
        "Where: 2 call(s): one machine, Spark spark://h:7077 (one machine runs one cluster "
        "at a time; Spark runs as many as its executors' slots).")
    assert render.where({"where": ["spark://h:7077"], "slots": 2}) == (
        "Where: 1 call(s): Spark spark://h:7077 (Spark runs as many as its executors' slots, "
        "2 when the plan was made).")


def test_a_diff_finding_the_catalog_learned_later_is_named_when_the_report_is_written_again(
        tmp_path: Path) -> None:
    import json

    f = tmp_path / "01.json"
    f.write_text(json.dumps({"finding": {
        "signature": "index:brokersToElrs:alterConfig:kafka-4.3",
        "detail": "brokersToElrs indexes broker 3 for t-0 but the partition's ELR is []"}}))
    rec = {"part": "diff", "role": "new", "build": "4.4.0", "deviations": [],
           "coverage": None, "stats": {},
           "findings": [{"key": "index:brokersToElrs:alterConfig", "known_bug": None,
                         "cls": "unexplained", "file": str(f)},
                        {"key": "snapshot:x:y", "known_bug": None, "cls": "unexplained",
                         "file": str(tmp_path / "gone.json")}]}
    named, gone = render.rejudged(rec)["findings"]
    assert named["known_bug"] == "elr-index-stale-after-min-isr-change" and named["rejudged"]
    assert gone["known_bug"] is None  # its file is gone: as recorded
    assert render.rejudged({**rec, "part": "hunt"}) == {**rec, "part": "hunt"}


def test_a_plan_for_two_slots_fills_twice_the_budget(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """On a Spark cluster the matrix and upgrade parts run as many clusters at once as the
    executors have slots: their scenarios fill the part's budget times the slots."""
    from harness.certify import upgrade
    from harness.cli.certify import make_plan
    budgets: list[float] = []

    def planned(scs: Any, gaps: Any, versions: Any, budget_s: float) -> tuple[list, list]:
        budgets.append(budget_s)
        return [], []
    monkeypatch.setattr(plan, "plan_scenarios", planned)
    monkeypatch.setattr(upgrade, "write_scenarios", lambda *a: [])
    blds = {r: SimpleNamespace(version=v, version_tuple=tuple(map(int, v.split("."))))
            for r, v in (("old", "4.3.1"), ("new", "4.4.0"))}
    split = plan.split_budget(3600.0, {})
    one = make_plan([], blds, tmp_path, split, 3600.0, {})
    two = make_plan([], blds, tmp_path, split, 3600.0, {}, slots=2)
    assert budgets == [split["matrix"], split["upgrade"], 2 * split["matrix"],
                       2 * split["upgrade"]]
    assert (one["slots"], two["slots"]) == (1, 2)
    assert "times 2 slots" in " ".join(two["rule"]) and "slots" not in " ".join(one["rule"])


def _audited(verdict: str, text: str) -> Any:
    head = SimpleNamespace(verdict=verdict, label="", short=verdict, text=text)
    return SimpleNamespace(headline=head, axes={})


def test_a_failing_cell_is_judged_again_when_the_report_is_written(tmp_path: Path) -> None:
    """A judge fixed since the run (here: the duplicates a client writes) must not leave a
    regression today's judges would not give; a clean cell is not judged again."""
    from harness.certify import rejudge
    run = tmp_path / "run"
    run.mkdir()
    old = {**cell("up", "old", "UNSAFE"), "run_dir": str(run), "text": "UNSAFE (duplicates)"}
    seen: list[Path] = []

    def audit(path: Path) -> Any:
        seen.append(path)
        return _audited("CONFORMS", "CONFORMS")
    again = rejudge.cell(old, audit)
    assert again["verdict"] == "CONFORMS" and again["rejudged"]["verdict"] == "UNSAFE"
    assert again["text"].endswith("(re-judged with today's judges; recorded: UNSAFE (duplicates))")
    assert rejudge.cell({**cell("up", "old"), "run_dir": str(run)}, audit)["verdict"] == \
        "CONFORMS" and seen == [run]  # the clean cell: not audited
    assert rejudge.cell(old, lambda p: _audited("UNSAFE", "UNSAFE (duplicates)")) == old

    def broken(path: Path) -> Any:
        raise ValueError("an unreadable history")
    assert rejudge.cell(old, broken) == old
    gone = {**old, "run_dir": str(tmp_path / "gone")}
    assert rejudge.cell(gone, audit) == gone and seen == [run]
