"""Fast tests of the data checks over hand-made histories (harness/judge/datachecks.py)."""

from __future__ import annotations

from typing import Any

from harness.judge.datachecks import run_checks


def _events(*specs: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"run_id": "r", "seq": i, "t_wall": 0.0, "t_mono": 0.0, "kind": kind,
             "topic": "t", "partition": 0, **fields} for i, (kind, fields) in enumerate(specs)]


def _by_name(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {c.name: c for c in run_checks(events)}


def test_clean_history_passes_every_check() -> None:
    events = _events(
        ("ack", {"record_id": "a", "acks": "all", "offset": 0, "error": None}),
        ("ack", {"record_id": "b", "acks": "1", "offset": 1, "error": None}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("consume", {"record_id": "b", "offset": 1}),
        ("observation", {"state": {"hwm": 2}}),
    )
    assert all(c.ok for c in run_checks(events))


def test_acked_record_missing_from_the_final_read_is_lost() -> None:
    events = _events(
        ("ack", {"record_id": "a", "acks": "all", "offset": 0, "error": None}),
        ("ack", {"record_id": "b", "acks": "all", "offset": 1, "error": None}),
        ("ack", {"record_id": "c", "acks": "all", "offset": None, "error": "TIMED_OUT"}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("consume", {"record_id": "b", "offset": 1}),
        ("fault", {"action": "kill", "params": {}}),
        ("consume", {"record_id": "a", "offset": 0}),
    )
    lost = _by_name(events)["acked_lost"]
    assert not lost.ok and [d["record_id"] for d in lost.details] == ["b"]


def test_hwm_regression_above_hwm_duplicates_and_gaps_are_found() -> None:
    events = _events(
        ("observation", {"state": {"hwm": 8}}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("consume", {"record_id": "b", "offset": 2}),
        ("consume", {"record_id": "a", "offset": 6}),
        ("observation", {"state": {"hwm": 5}}),
    )
    checks = _by_name(events)
    assert checks["hwm_regression"].details[0]["from"] == 8
    assert checks["above_hwm"].details == [{"record_id": "a", "offset": 6, "hwm": 5}]
    assert checks["duplicates"].details == [{"record_id": "a", "offsets": [0, 6]}]
    assert {(g["after"], g["next"]) for g in checks["gaps"].details} == {(0, 2), (2, 6)}


def test_without_any_read_loss_cannot_be_judged() -> None:
    events = _events(("ack", {"record_id": "a", "acks": "all", "offset": 0, "error": None}))
    assert _by_name(events)["acked_lost"].ok


def test_an_empty_final_read_loses_every_acked_record() -> None:
    events = _events(
        ("ack", {"record_id": "a", "acks": "all", "offset": 0, "error": None}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("read", {"records": 1, "complete": True}),
        ("fault", {"action": "kill", "params": {}}),
        ("read", {"records": 0, "complete": True}),
    )
    lost = _by_name(events)["acked_lost"]
    assert not lost.ok and [d["record_id"] for d in lost.details] == ["a"]


def test_an_incomplete_read_is_not_the_final_read() -> None:
    events = _events(
        ("ack", {"record_id": "a", "acks": "all", "offset": 0, "error": None}),
        ("ack", {"record_id": "b", "acks": "all", "offset": 1, "error": None}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("consume", {"record_id": "b", "offset": 1}),
        ("read", {"records": 2, "complete": True}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("read", {"records": 1, "complete": False}),  # timed out: proves nothing
    )
    assert _by_name(events)["acked_lost"].ok
    events.append({**events[-1], "seq": len(events), "records": 0, "complete": True})
    assert [d["record_id"] for d in _by_name(events)["acked_lost"].details] == ["a", "b"]


def test_read_events_delimit_reads_for_gaps() -> None:
    events = _events(
        ("consume", {"record_id": "a", "offset": 0}),
        ("read", {"records": 1, "complete": True}),
        ("consume", {"record_id": "a", "offset": 0}),
        ("consume", {"record_id": "b", "offset": 1}),
        ("read", {"records": 2, "complete": True}),
    )
    assert _by_name(events)["gaps"].ok
