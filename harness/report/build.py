"""Assemble the report: per-run facts, matrix, flakiness, trends; write the three files."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.report import html, junit, spark_jobs
from harness.report.load import Runs, discover

MAX_POINTS_PER_RUN = 4000


def make_report(roots: list[Path], out: Path, master: str | None = None) -> dict[str, Any]:
    runs = discover(roots)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    facts: dict[str, Any] = (_spark_facts(runs, master) if runs.good else
                             {"checks": {}, "timelines": {}, "corrupt_lines": 0})
    summary = _summary(runs, facts)
    summary["report_seconds"] = round(time.monotonic() - t0, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    (out / "junit.xml").write_text(junit.render(summary))
    (out / "index.html").write_text(html.render(summary, facts["timelines"]))
    return summary


def _spark_facts(runs: Runs, master: str | None) -> dict[str, Any]:
    spark = spark_jobs.session(master)
    judged = spark_jobs.judge_runs(spark, [(meta["run_id"], d / "events.jsonl")
                                           for d, meta in runs.good])
    timelines = {f.run_id: sorted(f.timeline, key=lambda p: p["seq"])[:MAX_POINTS_PER_RUN]
                 for f in judged}
    return {"checks": {f.run_id: f.checks for f in judged}, "timelines": timelines,
            "counts": {f.run_id: f.events for f in judged},
            "corrupt_lines": sum(f.corrupt_lines for f in judged)}


def _summary(runs: Runs, facts: dict[str, Any]) -> dict[str, Any]:
    run_rows = []
    for run_dir, meta in runs.good:
        rid = meta["run_id"]
        build = (meta.get("build") or {}).get("version", "?")
        scenario = (meta.get("scenario") or {}).get("name") or rid
        verdict = meta.get("verdict") or ("DID NOT FINISH" if meta.get("ended_wall") is None
                                          else "NONE")
        first = next((e for e in facts["timelines"].get(rid, [])
                      if e["kind"] == "verdict" and e.get("verdict") in ("DIVERGES", "ERROR")),
                     None)
        run_rows.append({
            "run_id": rid, "dir": str(run_dir), "scenario": scenario, "build": build,
            "backend": meta.get("backend"), "profile": meta.get("profile"),
            "verdict": verdict, "started": meta.get("started_wall"),
            "first_divergence": (first or {}).get("reason"),
            "events": facts.get("counts", {}).get(rid, 0),
            "checks": {k: v for k, v in facts["checks"].get(rid, {}).items()},
        })
    return {"runs": run_rows, "skipped": [{"dir": d, "reason": r} for d, r in runs.skipped],
            "corrupt_lines": facts["corrupt_lines"], "matrix": _matrix(run_rows),
            "flakiness": _flakiness(run_rows), "trends": _trends(run_rows)}


def _matrix(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """scenario -> build -> latest run's verdict and run id."""
    cells: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in sorted(rows, key=lambda r: r["started"] or 0):
        cells[r["scenario"]][r["build"]] = {"verdict": r["verdict"], "run_id": r["run_id"],
                                            "reason": r["first_divergence"]}
    return cells


def _flakiness(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        groups[(r["scenario"], r["build"])][r["verdict"]] += 1
    return [{"scenario": s, "build": b, "runs": sum(c.values()), "verdicts": dict(c),
             "flaky": len(c) > 1} for (s, b), c in sorted(groups.items())]


def _trends(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """build -> one entry per UTC day with runs (oldest first): how many ran, their
    verdicts and the share that conformed among the runs that were judged (UNSUPPORTED
    and unfinished runs judge nothing), so a release manager sees a build getting better
    or worse across nightly runs."""
    per_day: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for r in rows:
        day = (time.strftime("%Y-%m-%d", time.gmtime(r["started"])) if r["started"]
               else "unknown")
        per_day[r["build"]][day][r["verdict"]] += 1
    return {b: [_trend_point(day, c) for day, c in sorted(days.items())]
            for b, days in sorted(per_day.items())}


def _trend_point(day: str, verdicts: Counter[str]) -> dict[str, Any]:
    judged = sum(n for v, n in verdicts.items() if v in ("CONFORMS", "DIVERGES", "ERROR"))
    rate = round(verdicts["CONFORMS"] / judged, 3) if judged else None
    return {"day": day, "runs": sum(verdicts.values()), "verdicts": dict(verdicts),
            "conform_rate": rate}
