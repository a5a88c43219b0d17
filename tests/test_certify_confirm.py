"""certify's confirmation of a diff or hunt finding one build's campaign met and the other's
did not (harness/certify/confirm.py, compare.py "Confirmation of one-build findings"): the
three outcomes from crafted records, the campaign that runs them (one machine and Spark, no
cluster), and a resumed finished campaign that gets them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.certify import compare, confirm, plan, render, state
from harness.certify.parts import Campaign

BUILDS = {"old": "4.3.1", "new": "4.4.0"}
# a class the catalog (known_bugs.py) does not name: an unexplained finding
UNEXPLAINED = "index:notInTheCatalog:cancelReassignment"


def finding(key: str = UNEXPLAINED, cls: str = "unexplained", bug: str | None = None,
            **kw: Any) -> dict[str, Any]:
    return {"key": key, "cls": cls, "known_bug": bug,
            "repro": f"kafka-chaos diff --seed 1 (events: {key}.json)", **kw}


def search(part: str, role: str, *found: dict[str, Any]) -> dict[str, Any]:
    return {"part": part, "role": role, "build": BUILDS[role], "findings": list(found),
            "deviations": [], "coverage": None, "stats": {}}


def ran(part: str, role: str, found_on: str, reproduced: bool | None,
        key: str = UNEXPLAINED) -> dict[str, Any]:
    text = {True: "REPRODUCED at event 3", False: "NOT REPRODUCED in 9 events",
            None: "could not replay: no such session"}[reproduced]
    return {"part": confirm.PARTS[part], "of": part, "key": key, "found_on": found_on,
            "role": role, "build": BUILDS[role], "reproduced": reproduced, "text": text}


ONE_BUILD = [search("diff", "old"), search("diff", "new", finding())]


def test_unconfirmed_a_one_build_finding_reads_as_before() -> None:
    a = compare.answer([], ONE_BUILD, BUILDS)
    assert a.regressions == [f"diff finding on 4.4.0 only: {UNEXPLAINED} (unexplained)"]
    assert a.checked == {}
    assert compare.searches_to_confirm([], ONE_BUILD) == [
        ("diff", UNEXPLAINED, "new", {**finding(), "build": "4.4.0"})]


def test_reproduced_on_its_build_only_is_a_confirmed_regression() -> None:
    a = compare.answer([], ONE_BUILD, BUILDS,
                       [ran("diff", "new", "new", True), ran("diff", "old", "new", False)])
    assert a.regressions == [f"diff finding on 4.4.0 only: {UNEXPLAINED} (unexplained) "
                             "(confirmed by replaying its events on both builds)"]
    assert a.new_findings == [f"diff on 4.4.0: {UNEXPLAINED}: class unexplained; reproduce: "
                              f"kafka-chaos diff --seed 1 (events: {UNEXPLAINED}.json)"]
    top = compare.headline_lines(a, BUILDS)
    assert top[-1] == f"ONE-BUILD FINDINGS CHECKED ON BOTH BUILDS (1): confirmed (1): " \
                      f"diff {UNEXPLAINED}"


def test_a_fix_the_hunt_confirms_says_how() -> None:
    key = "kip KIP-DIVERGES [step 8]; release DIVERGES [hwm]"
    f = finding(key, "kafka-candidate")
    a = compare.answer([], [search("hunt", "old", f), search("hunt", "new")], BUILDS,
                       [ran("hunt", "old", "old", True, key),
                        ran("hunt", "new", "old", False, key)])
    assert a.fixes == [f"hunt finding on 4.3.1 only: {key} (kafka-candidate) (confirmed by "
                       "re-running its shrunk schedule on both builds)"]
    assert a.regressions == [] and a.new_findings == []


def test_reproduced_on_both_is_neither_and_a_new_finding_listed_once() -> None:
    a = compare.answer([], ONE_BUILD, BUILDS,
                       [ran("diff", "new", "new", True), ran("diff", "old", "new", True)])
    assert a.regressions == [] and a.fixes == [] and a.unjudged == []
    assert a.new_findings == [f"diff on both (one campaign missed it): {UNEXPLAINED}: class "
                              f"unexplained; reproduce: kafka-chaos diff --seed 1 (events: "
                              f"{UNEXPLAINED}.json)"]
    assert a.checked == {compare.BOTH: [f"diff {UNEXPLAINED}"]}
    # found on OLD only, reproduced on both: present in NEW too, so a new finding of NEW
    old_only = compare.answer([], [search("diff", "old", finding()), search("diff", "new")],
                              BUILDS, [ran("diff", "old", "old", True),
                                       ran("diff", "new", "old", True)])
    assert old_only.fixes == [] and len(old_only.new_findings) == 1
    assert old_only.new_findings[0].startswith("diff on both (one campaign missed it)")


def test_a_known_bug_reproduced_on_both_is_met_on_both() -> None:
    f = finding("release:partitionEpoch:unfence", "known-bug", bug="elr-x")
    recs = [search("diff", "old"), search("diff", "new", f)]
    assert compare.answer([], recs, BUILDS).regressions == [
        "diff finding on 4.4.0 only: release:partitionEpoch:unfence (known bug elr-x)",
        "known bug elr-x on 4.4.0, not on 4.3.1 (diff release:partitionEpoch:unfence)"]
    key = "release:partitionEpoch:unfence"
    a = compare.answer([], recs, BUILDS, [ran("diff", "new", "new", True, key),
                                          ran("diff", "old", "new", True, key)])
    assert a.regressions == [] and a.new_findings == [] and a.still_present == ["elr-x"]


def test_not_reproduced_on_its_own_build_is_flaky_and_could_not_judge() -> None:
    a = compare.answer([], ONE_BUILD, BUILDS,
                       [ran("diff", "new", "new", False), ran("diff", "old", "new", False)])
    assert a.regressions == [] and a.fixes == [] and a.new_findings == []
    assert a.unjudged == [f"diff finding on 4.4.0 only: {UNEXPLAINED} (unexplained) (flaky: "
                          "not reproduced on its own build: 4.3.1 NOT REPRODUCED in 9 events; "
                          "4.4.0 NOT REPRODUCED in 9 events)"]
    cannot = compare.answer([], ONE_BUILD, BUILDS, [ran("diff", "new", "new", True),
                                                    ran("diff", "old", "new", None)])
    assert cannot.regressions == [] and cannot.unjudged[0].endswith(
        "(not confirmed: 4.3.1 could not replay: no such session; 4.4.0 REPRODUCED at "
        "event 3)")


def test_what_is_confirmed_harness_errors_and_bugs_met_both_ways_are_not() -> None:
    err = finding("ERROR: no broker", "harness-error")
    g = finding("kip:leaderEpoch:register", "known-bug", bug="elr-x")
    h = finding("kip:partitionEpoch:register", "known-bug", bug="elr-x")
    both = finding("snapshot:brokers:tick")
    got = compare.searches_to_confirm([], [
        search("diff", "old", g, both), search("diff", "new", h, both, finding()),
        search("hunt", "new", err)])
    assert [(p, k, r) for p, k, r, _ in got] == [("diff", UNEXPLAINED, "new")]


# --- the campaign ------------------------------------------------------------------------------

class _B:
    def __init__(self, version: str) -> None:
        self.version, self.source = version, f"maven:{version}"


def _state(tmp: Path, searches: list[dict[str, Any]]) -> state.CertifyState:
    st = state.CertifyState({"new": "4.4.0", "old": "4.3.1", "seed": 1, "kafka_dist": None},
                            {"split": plan.split_budget(600, {}), "rule": ["r"], "matrix": [],
                             "upgrade": [], "left_out": {"matrix": {}, "upgrade": {}}})
    for p in plan.PARTS:  # a campaign finished before the confirmations existed
        st.part(p).update(done=True, note="done")
    for s in searches:
        st.record(f"{s['part']}/{s['role']}", s)
    state.save(tmp, st)
    return st


def _finished(tmp: Path) -> list[dict[str, Any]]:
    """A diff finding on NEW only, with its events file where a copy of the campaign has it."""
    events = tmp / "diff" / "4.4.0" / "findings" / "49.json"
    events.parent.mkdir(parents=True)
    events.write_text(json.dumps({"finding": {"signature": f"{UNEXPLAINED}:kafka-4.3"},
                                  "events": [{"op": "tick"}] * 3}))
    return [search("diff", "old"), search("diff", "new", finding(
        file="/elsewhere/campaign/diff/4.4.0/findings/49.json"))]


def test_a_finished_campaign_resumed_replays_its_one_build_findings_on_both_builds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.differential.campaign import replay as replay_mod
    calls: list[tuple[str, str]] = []

    def replay(build: Any, doc: dict[str, Any], say: Any = print) -> Any:
        calls.append((build.version, doc["finding"]["signature"]))
        r = replay_mod.Replayed(doc["finding"]["signature"])
        r.seen = {doc["finding"]["signature"]: 2}  # reproduced on both builds
        return r
    monkeypatch.setattr(replay_mod, "replay", replay)
    st = _state(tmp_path, _finished(tmp_path))
    before = render.model(st)["answer"]
    assert before["regressions"] == [f"diff finding on 4.4.0 only: {UNEXPLAINED} (unexplained)"]
    said: list[str] = []
    camp = Campaign(tmp_path, st, {"old": _B("4.3.1"), "new": _B("4.4.0")}, said.append)
    for part in plan.PARTS:
        camp.run_part(part)
    # its own build first (the replay with today's code, certify/rereplay.py, serves as
    # that run); the file found in this campaign directory, not where recorded
    assert calls == [("4.4.0", f"{UNEXPLAINED}:kafka-4.3"), ("4.3.1", f"{UNEXPLAINED}:kafka-4.3")]
    again = state.load(tmp_path, {})
    rec = again.items[f"diff-confirm/old/new/{UNEXPLAINED}"]
    assert rec["reproduced"] is True and rec["source"].startswith(str(tmp_path))
    m = render.write(tmp_path, again)
    assert m["answer"]["regressions"] == []  # fails when the confirmation is skipped
    assert m["answer"]["new_findings"][0].startswith("diff on both (one campaign missed it)")
    md = (tmp_path / "certify.md").read_text()
    assert "checked on both builds: on both: 4.3.1 REPRODUCED at event 2 of 3; 4.4.0 " \
           "REPRODUCED at event 2 of 3" in md
    assert "ONE-BUILD FINDINGS CHECKED ON BOTH BUILDS (1): on both (1)" in md
    calls.clear()
    for part in plan.PARTS:  # confirmed once: a further call replays nothing
        Campaign(tmp_path, again, {"old": _B("4.3.1"), "new": _B("4.4.0")},
                 said.append).run_part(part)
    assert calls == []


def _axis(verdict: str, reason: str, name: str = "kip") -> Any:
    return SimpleNamespace(axis=name, verdict=verdict, as_expected=verdict == "CONFORMS",
                           details=[], reason=reason)


HUNT_KEY = "kip KIP-DIVERGES [hwm]"


def _hunt_state(tmp: Path) -> state.CertifyState:
    run = tmp / "runs" / "fuzz-s1-8-x"
    run.mkdir(parents=True)
    (run / "minimal.yaml").write_text("name: m\n")
    f = {"key": HUNT_KEY, "cls": "kafka-candidate", "known_bug": None, "why": "",
         "repro": "kafka-chaos run /gone/runs/fuzz-s1-8-x/minimal.yaml --kafka-version 4.3.1"}
    return _state(tmp, [search("hunt", "old", f), search("hunt", "new")])


def _result(build: str, tmp: Path) -> Any:
    axes = {"kip": _axis("KIP-DIVERGES" if build == "4.3.1" else "CONFORMS", "hwm: 3 != 4")}
    return SimpleNamespace(verdict="CONFORMS", axes=axes, run_dir=tmp / "runs" / build,
                           wall_s=1.0, reason="")


def test_a_hunt_finding_s_shrunk_schedule_runs_on_both_builds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.run import runner as runner_mod
    from harness.scenario import loader
    ran_on: list[tuple[str, str]] = []

    class Runner:
        def __init__(self, sc: Any, build: Any, *a: Any, **kw: Any) -> None:
            self.sc, self.build = sc, build

        def run(self) -> Any:
            ran_on.append((self.sc, self.build.version))
            return _result(self.build.version, tmp_path)
    monkeypatch.setattr(runner_mod, "Runner", Runner)
    monkeypatch.setattr(loader, "load_scenario", lambda p: Path(p).name)
    st = _hunt_state(tmp_path)
    Campaign(tmp_path, st, {"old": _B("4.3.1"), "new": _B("4.4.0")},
             lambda s: None).run_part("hunt")
    assert ran_on == [("minimal.yaml", "4.3.1"), ("minimal.yaml", "4.4.0")]
    a = render.model(state.load(tmp_path, {}))["answer"]
    assert a["fixes"] == [f"hunt finding on 4.3.1 only: {HUNT_KEY} (kafka-candidate) "
                          "(confirmed by re-running its shrunk schedule on both builds)"]
    assert st.items[f"hunt-confirm/new/old/{HUNT_KEY}"]["text"] == \
        "NOT REPRODUCED (every axis as expected)"


def test_on_spark_a_hunt_confirmation_is_a_task(tmp_path: Path) -> None:
    from harness.certify.spark import SparkCampaign
    specs: list[Any] = []

    class Runs:
        slots = 2

        def run(self, spec: Any) -> Any:
            specs.append(spec)
            return _result(spec.build_source.split(":")[1], tmp_path)

        def cancel(self) -> None:
            pass
    st = _hunt_state(tmp_path)
    SparkCampaign(tmp_path, st, {"old": _B("4.3.1"), "new": _B("4.4.0")}, lambda s: None,
                  runs=Runs()).run_part("hunt")
    assert sorted(s.build_source for s in specs) == ["maven:4.3.1", "maven:4.4.0"]
    assert all(s.ship and s.scenario_text == "name: m\n" for s in specs)
    assert compare.confirmation(compare.confirmation_table(confirm.records(st.items))[
        ("hunt", HUNT_KEY)], "old") == compare.CONFIRMED


def test_a_hunt_run_that_cannot_judge_and_a_schedule_gone(tmp_path: Path) -> None:
    item = confirm.Item("k", "hunt", "new", "old", {"key": HUNT_KEY})
    err = SimpleNamespace(verdict="ERROR", reason="no broker", axes={}, run_dir=tmp_path,
                          wall_s=2.0)
    assert confirm.hunt_one(item, _B("4.4.0"), err)["reproduced"] is None
    assert confirm.hunt_scenario({"repro": ""}, tmp_path) is None
    assert confirm.local("/x/runs/r/minimal.yaml", tmp_path) == Path("/x/runs/r/minimal.yaml")


def test_a_diff_finding_without_events_cannot_be_judged(tmp_path: Path) -> None:
    """A finding whose lane the campaign did not know holds no events: nothing to replay,
    so "could not judge", never "not reproduced" (which would read as flaky)."""
    f = tmp_path / "54.json"
    f.write_text(json.dumps({"finding": {"signature": "snapshot:brokers:findTopics:k"},
                             "events": []}))
    item = confirm.Item("k", "diff", "old", "old", finding(file=str(f)))
    rec = confirm.replay_one(item, _B("4.3.1"), tmp_path)
    assert rec["reproduced"] is None and "holds no events" in rec["text"]


def test_a_hunt_known_bug_is_named_by_its_id_not_known() -> None:
    why = "known bug elr-keeps-removed-replica (docs/findings/elr-keeps-removed-replica.md): x"
    assert compare.hunt_bug(why) == "elr-keeps-removed-replica"
    assert compare.hunt_bug("model gap") is None
    old = search("hunt", "new", finding("k", "known-bug", bug="known", why=why))
    assert render.rejudged(old)["findings"][0]["known_bug"] == "elr-keeps-removed-replica"


def test_a_new_campaign_confirms_at_the_end_of_its_diff_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only on resume: run_part runs a part, then its confirmations, then marks it done
    (an interrupt in between leaves it not done, so the next call confirms)."""
    from harness.differential.campaign import replay as replay_mod
    found = _finished(tmp_path)
    st = _state(tmp_path, [])
    st.part("diff").update(done=False)

    class Diffs(Campaign):
        def _diff(self) -> None:
            for s in found:
                self.state.record(f"diff/{s['role']}", s)

    def replay(build: Any, doc: dict[str, Any], say: Any = print) -> Any:
        if build.version == "4.3.1":
            raise KeyboardInterrupt
        return replay_mod.Replayed(doc["finding"]["signature"],
                                   {doc["finding"]["signature"]: 0})
    monkeypatch.setattr(replay_mod, "replay", replay)
    camp = Diffs(tmp_path, st, {"old": _B("4.3.1"), "new": _B("4.4.0")}, lambda s: None)
    with pytest.raises(KeyboardInterrupt):
        camp.run_part("diff")
    assert not st.part("diff")["done"] and len(confirm.records(st.items)) == 1
    monkeypatch.setattr(replay_mod, "replay", lambda build, doc, say=print: replay_mod.Replayed(
        doc["finding"]["signature"]))  # not reproduced on 4.3.1
    camp.run_part("diff")
    assert st.part("diff")["done"]
    assert render.model(st)["answer"]["regressions"][0].endswith(
        "(confirmed by replaying its events on both builds)")
