"""certify's replay of recorded diff findings with today's code (harness/certify/rereplay.py):
a class today's code no longer reports leaves the answer's new findings, regressions and
fixes; one it reproduces, or cannot judge, stays; a record of other code is made again; a
named finding is not replayed. Crafted records and a replay stand-in, no driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.certify import compare, plan, render, rereplay, state
from harness.certify.parts import Campaign

KEY = "kip:leader:unfence"


class _B:
    def __init__(self, version: str) -> None:
        self.version, self.source = version, f"maven:{version}"


BUILDS = {"old": _B("4.3.1"), "new": _B("4.4.0")}


def _campaign(tmp: Path, roles: tuple[str, ...], known_bug: str | None = None
              ) -> state.CertifyState:
    """A finished campaign whose diff met KEY on ``roles`` (files with events here)."""
    st = state.CertifyState({"new": "4.4.0", "old": "4.3.1", "seed": 1, "kafka_dist": None},
                            {"split": plan.split_budget(600, {}), "rule": ["r"], "matrix": [],
                             "upgrade": [], "left_out": {"matrix": {}, "upgrade": {}}})
    for p in plan.PARTS:
        st.part(p).update(done=True, note="done")
    for role in ("old", "new"):
        found = []
        if role in roles:
            f = tmp / "diff" / st.settings[role] / "findings" / "38.json"
            f.parent.mkdir(parents=True)
            f.write_text(json.dumps({"finding": {"signature": f"{KEY}:kip966"},
                                     "events": [{"op": "tick"}] * 4}))
            found.append({"key": KEY, "cls": "known-bug" if known_bug else "unexplained",
                          "known_bug": known_bug, "file": str(f),
                          "repro": f"kafka-chaos diff --seed 1 (events: {f})"})
        st.record(f"diff/{role}", {"part": "diff", "role": role, "build": st.settings[role],
                                   "findings": found, "deviations": [], "coverage": None,
                                   "stats": {}})
    state.save(tmp, st)
    return st


def _replaying(monkeypatch: pytest.MonkeyPatch, reproduced: bool | None
               ) -> list[str]:
    from harness.differential.campaign import replay as replay_mod
    calls: list[str] = []

    def replay(build: Any, doc: dict[str, Any], say: Any = print) -> Any:
        calls.append(build.version)
        if reproduced is None:
            raise RuntimeError("the driver died")
        sig = doc["finding"]["signature"]
        return replay_mod.Replayed(sig, {sig: 1} if reproduced else {})
    monkeypatch.setattr(replay_mod, "replay", replay)
    return calls


def _resume(tmp: Path, st: state.CertifyState) -> dict[str, Any]:
    camp = Campaign(tmp, st, BUILDS, lambda s: None)
    for part in plan.PARTS:
        camp.run_part(part)
    return render.write(tmp, st)


def test_a_class_today_s_code_does_not_reproduce_leaves_the_new_findings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    st = _campaign(tmp_path, ("old", "new"))
    before = render.model(st)["answer"]
    assert [x.split(":")[0] for x in before["new_findings"]] == ["diff on 4.4.0"]
    calls = _replaying(monkeypatch, reproduced=False)
    m = _resume(tmp_path, st)
    assert sorted(calls) == ["4.3.1", "4.4.0"]  # each on its own build
    a = m["answer"]
    assert a["new_findings"] == [] and a["regressions"] == [] and a["fixes"] == []
    assert len(a["gone"]) == 2 and a["gone"][1].startswith(
        f"diff {KEY} on 4.4.0: NOT REPRODUCED in 4 events with today's code")
    assert any(t.startswith("RE-JUDGED WITH TODAY'S CODE, NOT REPRODUCED (2)")
               for t in m["top"])
    calls.clear()
    _resume(tmp_path, st)  # recorded with this code: not replayed again
    assert calls == []


def test_gone_on_one_build_only_is_a_one_build_finding_to_confirm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Met on both builds when recorded, gone on the old one now: NEW alone meets it, so
    the confirmation replays it on both builds."""
    st = _campaign(tmp_path, ("old", "new"))
    now = {("old", KEY): {"text": "NOT REPRODUCED in 4 events", "reproduced": False}}
    searches = [render.rejudged(s, now) for s in render.split(st)[1]]
    assert compare.searches_to_confirm([], searches)[0][1:3] == (KEY, "new")
    assert compare.answer([], searches, {"old": "4.3.1", "new": "4.4.0"}).regressions == [
        f"diff finding on 4.4.0 only: {KEY} (unexplained)"]


@pytest.mark.parametrize("reproduced", [True, None])
def test_reproduced_or_not_judged_it_stays_as_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reproduced: bool | None) -> None:
    st = _campaign(tmp_path, ("new",))
    calls = _replaying(monkeypatch, reproduced)
    a = _resume(tmp_path, st)["answer"]
    assert calls[0] == "4.4.0" and a["gone"] == []
    rec = st.items[rereplay.key_of("new", KEY)]
    assert rec["code"] == rereplay.code_id() and rec["reproduced"] is reproduced


def test_a_record_of_other_code_is_made_again_and_does_not_count(tmp_path: Path) -> None:
    st = _campaign(tmp_path, ("new",))
    searches = render.split(st)[1]
    st.record(rereplay.key_of("new", KEY), {"role": "new", "key": KEY, "reproduced": False,
                                            "code": "older", "text": "NOT REPRODUCED"})
    assert rereplay.current(st.items, "today") == {}
    assert [i.key for i in rereplay.todo(st.items, searches, "today")] == [
        rereplay.key_of("new", KEY)]
    assert rereplay.todo(st.items, searches, "older") == []


def test_a_named_finding_is_not_replayed(tmp_path: Path) -> None:
    st = _campaign(tmp_path, ("new",), known_bug="elr-index-stale-after-min-isr-change")
    assert rereplay.todo(st.items, render.split(st)[1], "today") == []


def test_the_fingerprint_follows_the_deciding_files(tmp_path: Path) -> None:
    model = tmp_path / "reference" / "model.py"
    model.parent.mkdir()
    model.write_text("A = 1\n")
    (tmp_path / "harness" / "differential").mkdir(parents=True)
    first = rereplay.code_id.__wrapped__(tmp_path)
    (tmp_path / "README.md").write_text("not deciding")
    assert rereplay.code_id.__wrapped__(tmp_path) == first
    model.write_text("A = 2\n")
    assert rereplay.code_id.__wrapped__(tmp_path) != first


def test_reproduced_it_is_named_by_what_today_s_code_said(tmp_path: Path) -> None:
    """A class the catalog names by its detail only (the text the original controller threw,
    which older code did not write) is named when today's replay says it."""
    st = _campaign(tmp_path, ("new",))
    sig = "snapshot:ok:heartbeat:kafka-4.3"
    said = {"reproduced": True, "signature": sig, "text": "REPRODUCED at event 3 of 4",
            "detail": "the original threw java.lang.RuntimeException: Topic ID x existed in "
                      "isrMembers, but not in the topics map."}
    [s] = [s for s in render.split(st)[1] if s["role"] == "new"]
    f = render.rejudged(s, {("new", KEY): said})["findings"][0]
    assert f["known_bug"] == "directory-index-stale-after-topic-deletion"
    assert render.rejudged(s, {("new", KEY): {**said, "detail": "other"}})["findings"][0][
        "cls"] == "unexplained"
