"""Client traffic under faults on a real cluster (issue 34): KIP-966's last replica
standing with producers and consumers running throughout
(fixtures/scenarios/traffic-last-replica-standing.yaml). suites/test_scenarios.py runs the
fixture like every other (its headline, declarations included); this test asserts what the
traffic itself must show on each side of ELR: without it the safety axis is UNSAFE and
names lost acknowledged acks=all records by id, with it SAFE and nothing acknowledged at
acks=all is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.run import print_table
from harness.run.runner import Runner
from harness.scenario.loader import load_scenario

FIXTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
           / "traffic-last-replica-standing.yaml")

pytestmark = pytest.mark.chaos


def test_last_replica_standing_under_traffic(kafka_build, request: pytest.FixtureRequest,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    runner = Runner(load_scenario(FIXTURE), kafka_build, request.config.getoption("--backend"),
                    Path(request.config.getoption("--runs-dir")))
    result = runner.run()
    with capsys.disabled():
        print_table(result)
    assert result.headline.passed, f"{result.headline.message} ({result.run_dir})"
    meta = json.loads((result.run_dir / "run.json").read_text())
    checks = {c["name"]: c for c in meta["traffic"]["checks"]["checks"]}
    summary = meta["traffic"]["summary"]
    assert summary["acked_all_per_s"] > 0 and summary["polled"] > 0, summary
    assert meta["traffic"]["problems"] == [], meta["traffic"]["problems"]
    safety = result.axes["safety"]
    lost = checks["lost_writes"]
    if kafka_build.version_tuple <= (4, 0, 99):
        assert safety.verdict == "UNSAFE"
        assert lost["counts"]["counted"] > 0, lost
        named = [e["id"] for e in lost["examples"] if not e["excused"]]
        assert named and named[0] in safety.reason
    else:
        assert safety.verdict == "SAFE", safety.reason
        assert lost["ok"] and lost["counts"]["counted"] == 0, lost
        assert all(checks[n]["ok"] for n in ("duplicates", "inconsistent_offsets",
                                             "lost_after_read", "poll_order", "commit_order"))
