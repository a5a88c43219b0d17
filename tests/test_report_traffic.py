"""The run report shows a run's client traffic (issue 34 item 5; docs/TRAFFIC.md) beside its
timeline: throughput (sent, acknowledged, records/s), the lost records (counts and the first
ids) and each check's result, re-judged or as run.json recorded them; a run without traffic
has no traffic section. Crafted run directories, judged in this process (no Spark)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from harness.report import build
from harness.report.html import render
from harness.traffic.checks import CHECKS
from harness.traffic.history import TrafficWriter

DATA = Path(__file__).resolve().parent / "data" / "traffic-run-4.3.1"
ROOT = Path(__file__).resolve().parent.parent
NO_TRAFFIC = ROOT / "fixtures" / "histories" / "kip966-elect-when-replied-20261123T162924-d3ab82"


def _traffic_run(parent: Path, lost: tuple[int, ...] = (4, 7)) -> Path:
    """The real traffic run of tests/data (its run.json's traffic summary: 46,994 sent and
    acknowledged) with a crafted traffic.jsonl: twelve records acknowledged, read back but
    ``lost``."""
    run = parent / DATA.name
    shutil.copytree(DATA, run)
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    first = min(float(e["t_mono"]) for e in events if e["kind"] == "step")
    last = max(float(e["t_mono"]) for e in events)
    t = [first - 1.0]
    with TrafficWriter(run, "crafted", clock=lambda: t[0]) as w:
        w.producer("p0", "all", False)
        for seq in range(12):
            w.send("p0", seq, f"p0-{seq}", "t", 0)
            w.ack("p0", seq, f"p0-{seq}", "t", 0, seq)
            w.poll("c0", 0, "t", 0, seq, f"p0-{seq}")
        t[0] = last + 1.0
        for seq in range(12):
            if seq not in lost:
                w.final_read("t", 0, seq, f"p0-{seq}")
        w.final_read_end("t", 0, True)
    return run


def _section(page: str, anchor: str) -> str:
    start = page.index(f"<section id='{anchor}'>")
    return page[start:page.index("</section>", start)]


def test_a_run_with_traffic_shows_its_throughput_losses_and_checks(tmp_path: Path,
                                                                    local_report: Any) -> None:
    runs = tmp_path / "runs"
    _traffic_run(runs)
    shutil.copytree(NO_TRAFFIC, runs / NO_TRAFFIC.name)
    summary = local_report([runs], tmp_path / "out")
    page = (tmp_path / "out" / "index.html").read_text()
    rows = {Path(r["dir"]).name: r for r in summary["runs"]}

    with_traffic = rows[DATA.name]
    t = with_traffic["traffic"]
    assert t["rejudged"] and t["throughput"]["sent"] == 46994
    assert t["throughput"]["acked"] == 46994 and t["throughput"]["acked_per_s"] == 1084.6
    assert [c["name"] for c in t["checks"]] == list(CHECKS) and len(CHECKS) == 7
    assert t["lost"]["counts"]["counted"] == 2
    assert [i["id"] for i in t["lost"]["ids"]] == ["p0-4", "p0-7"]
    assert with_traffic["axes"]["safety"]["verdict"] == "UNSAFE"

    section = _section(page, with_traffic["anchor"])
    traffic = section[section.index("<h4>client traffic</h4>"):]
    assert section.index("<svg") < section.index("<h4>client traffic</h4>")  # after the timeline
    assert "<th>sent</th><td class='num'>46,994</td>" in traffic
    assert "<th>acknowledged</th><td class='num'>46,994</td>" in traffic
    assert "<th>records/s acknowledged</th><td class='num'>1,084.6</td>" in traffic
    assert "<th>lost beyond the fault budget</th><td class='num'>2</td>" in traffic
    assert "lost ids: p0-4, p0-7</p>" in traffic
    for name in CHECKS:
        assert f"<tr><td>{name}</td>" in traffic
    assert "<tr><td>lost_writes</td><td class='v' style='background:#b71c1c'>UNSAFE</td>" \
        in traffic
    assert "<tr><td>duplicates</td><td class='v' style='background:#2e7d32'>ok</td>" in traffic
    assert "checks re-judged now, in-process" in traffic

    without = rows[NO_TRAFFIC.name]
    assert without["traffic"] is None
    assert "client traffic" not in _section(page, without["anchor"])


def test_without_a_rejudge_the_recorded_checks_are_shown(tmp_path: Path,
                                                         local_report: Any) -> None:
    """No scenario file to re-judge with: run.json's own traffic checks (the real run's:
    736 lost records, all excused) are what the page shows."""
    run = _traffic_run(tmp_path / "runs")
    (run / "scenario.yaml").unlink()
    meta = json.loads((run / "run.json").read_text())
    meta["scenario"] = {"name": "a-scenario-no-longer-in-the-repo", "file": None}
    (run / "run.json").write_text(json.dumps(meta))
    summary = local_report([tmp_path / "runs"], tmp_path / "out")
    (row,) = summary["runs"]
    t = row["traffic"]
    assert not t["rejudged"]
    assert t["lost"]["counts"] == {"acked": 46994, "unjudged": 0, "lost": 736,
                                   "excused": 736, "counted": 0}
    page = (tmp_path / "out" / "index.html").read_text()
    assert "as the run recorded them" in page
    assert "<th>lost, excused (acks 0/1 or within the budget)</th><td class='num'>736</td>" \
        in page
    assert "<tr><td>unseen_acked</td><td class='v' style='background:#757575'>note</td>" \
        in page


def test_the_traffic_section_escapes_and_ignores_what_is_not_a_number() -> None:
    meta = {"traffic": {"summary": {"sent": "<b>lots</b>", "acked": 3, "producing_s": 2,
                                    "acked_per_s": True},
                        "problems": ["<script>x</script>"],
                        "checks": {"engine": "in-process", "checks": [
                            {"name": "lost_writes", "ok": False, "unsafe": True,
                             "counts": {"lost": 1, "counted": 1, "bad": "x"},
                             "examples": [{"id": "<i>p0-1</i>", "excused": False}]}]}}}
    t = build.run_traffic(meta, None)
    assert t is not None
    assert t["throughput"] == {"acked": 3, "producing_s": 2}  # no sent, so no sent_per_s
    assert t["checks"][0]["counts"] == {"lost": 1, "counted": 1}
    row = {"anchor": "run-0", "scenario": "s", "build": "4.3.1", "verdict": "UNSAFE",
           "headline": "UNSAFE", "lockstep": "x", "first_divergence": None, "run_id": "r",
           "backend": "local", "profile": "p", "events": 0, "checks": {}, "axes": None,
           "dir": "d", "traffic": t}
    page = render({"runs": [row], "skipped": [], "corrupt_lines": 0, "matrix": {},
                   "flakiness": [], "trends": {}}, {})
    assert "<script>x" not in page and "&lt;script&gt;x" in page
    assert "&lt;i&gt;p0-1&lt;/i&gt;" in page and "<b>lots" not in page
    assert build.run_traffic({}, None) is None and build.run_traffic({"traffic": None},
                                                                      None) is None
