"""`kafka-chaos audit`: real run directories re-judged from their files alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.audit import audit
from harness.audit_cli import run_dirs
from harness.cli import main
from harness.errors import UsageError

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
        run_dirs([tmp_path / "nope"])
    with pytest.raises(UsageError, match="holds no run"):
        run_dirs([tmp_path])


def test_cli_exit_code_says_whether_every_run_was_as_expected(tmp_path: Path, capsys) -> None:
    assert main(["audit", str(LRS_431)]) == 0
    assert main(["audit", str(_tampered(tmp_path))]) == 1
    assert "release DIVERGES (!)" in capsys.readouterr().out
