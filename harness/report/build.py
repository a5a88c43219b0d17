"""Assemble the report: per-run facts, matrix, flakiness, trends; write the three files."""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.infra.errors import UsageError
from harness.infra.spark import session as spark_session
from harness.judge.axes import AXES, CONFORMS, INCOMPLETE, UNSUPPORTED, axis_as_expected
from harness.judge.headline import headline, lockstep_label
from harness.report import html, junit, spark_jobs
from harness.report.load import Runs, discover, is_number

MAX_POINTS_PER_RUN = 4000


def make_report(roots: list[Path], out: Path, master: str | None = None) -> dict[str, Any]:
    """Judge every history under `roots` and write the report into `out`. Raises
    UsageError (exit 2), writing nothing, when there is no run to judge: an empty report
    and a junit.xml of 0 tests would pass in CI on a mistyped path."""
    runs = discover(roots)
    _require_runs(runs, roots)
    t0 = time.monotonic()
    facts = _spark_facts(runs, master)
    _drop_unjudgeable(runs, facts["problems"])
    _require_runs(runs, roots)
    summary = _summary(runs, facts)
    summary["report_seconds"] = round(time.monotonic() - t0, 2)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str),
                                      encoding="utf-8")
    (out / "junit.xml").write_text(junit.render(summary), encoding="utf-8")
    (out / "index.html").write_text(html.render(summary, facts["timelines"]), encoding="utf-8")
    return summary


def _require_runs(runs: Runs, roots: list[Path]) -> None:
    if runs.good:
        return
    where = ", ".join(str(r) for r in roots)
    why = "".join(f"\n  skipped {d}: {r}" for d, r in runs.skipped[:20])
    raise UsageError(f"no run history to judge under {where}: nothing was reported "
                     f"({len(runs.skipped)} skipped){why}")


def _spark_facts(runs: Runs, master: str | None) -> dict[str, Any]:
    """Facts per run, keyed by run directory (two histories may carry the same run_id)."""
    spark = spark_session(master)
    judged = spark_jobs.judge_runs(spark, [(str(d), d / "events.jsonl") for d, _ in runs.good])
    timelines = {f.run_id: sorted(f.timeline, key=lambda p: p["seq"])[:MAX_POINTS_PER_RUN]
                 for f in judged}
    return {"checks": {f.run_id: f.checks for f in judged}, "timelines": timelines,
            "counts": {f.run_id: f.events for f in judged},
            "ended": {f.run_id: f.ended for f in judged},
            "problems": {f.run_id: f.problem for f in judged if f.problem},
            "axes": {f.run_id: f.axes for f in judged},
            "trace": {f.run_id: f.trace or [] for f in judged},
            "audit_problems": {f.run_id: f.audit_problem for f in judged if f.audit_problem},
            "traffic": {f.run_id: f.traffic for f in judged if f.traffic},
            "corrupt_lines": sum(f.corrupt_lines for f in judged)}


def _drop_unjudgeable(runs: Runs, problems: dict[str, str]) -> None:
    """A history the data checks failed on is named among the skipped, not shown judged."""
    runs.skipped += [(d, f"data checks could not judge it: {p}") for d, p in problems.items()]
    runs.good = [(d, m) for d, m in runs.good if str(d) not in problems]


def _summary(runs: Runs, facts: dict[str, Any]) -> dict[str, Any]:
    run_rows = [_run_row(i, run_dir, meta, facts) for i, (run_dir, meta) in enumerate(runs.good)]
    return {"runs": run_rows, "skipped": [{"dir": d, "reason": r} for d, r in runs.skipped],
            "corrupt_lines": facts["corrupt_lines"], "matrix": _matrix(run_rows),
            "flakiness": _flakiness(run_rows), "trends": _trends(run_rows)}


def _run_row(index: int, run_dir: Path, meta: dict[str, Any],
             facts: dict[str, Any]) -> dict[str, Any]:
    key, rid = str(run_dir), meta["run_id"]
    first = next((e for e in facts["timelines"].get(key, [])
                  if e["kind"] == "verdict" and e.get("verdict") in ("DIVERGES", "ERROR")),
                 None)
    ended = facts["ended"].get(key, False)
    axes = run_axes(meta, facts["axes"].get(key), ended)
    lockstep = run_verdict(meta, ended)
    # The run's verdict is its headline, derived here from its axes (re-judged, else as
    # recorded): never run.json's `verdict` (the lockstep's) nor a stored headline.
    head = headline(axes, lockstep, (first or {}).get("reason") or "",
                    lockstep != INCOMPLETE)
    return {
        "run_id": rid, "anchor": f"run-{index}", "dir": key,
        "scenario": (meta.get("scenario") or {}).get("name") or rid,
        "build": (meta.get("build") or {}).get("version") or "?",
        "backend": meta.get("backend"), "profile": meta.get("profile"),
        "verdict": head.verdict, "label": head.shown, "what": head.what,
        "headline": head.text,
        "message": head.message,
        "passed": head.passed, "lockstep": lockstep_label(lockstep),
        "started": meta.get("started_wall"),
        "first_divergence": (first or {}).get("reason"),
        "events": facts["counts"].get(key, 0),
        "checks": dict(facts["checks"].get(key, {})),
        "axes": axes,
        "axes_note": facts["audit_problems"].get(key),
        "trace": facts["trace"].get(key, []),
        "traffic": run_traffic(meta, facts.get("traffic", {}).get(key)),
    }


def run_axes(meta: dict[str, Any], rejudged: dict[str, dict[str, Any]] | None,
             has_run_end: bool) -> dict[str, dict[str, Any]] | None:
    """The three axes as re-judged now (audit), else as the run recorded them; a run cut
    short has none (INCOMPLETE)."""
    if meta.get("ended_wall") is None or not has_run_end:
        return None
    recorded = meta.get("axes")
    axes = rejudged or (recorded if isinstance(recorded, dict) else None)
    if not axes or not all(isinstance(axes.get(a), dict) for a in AXES):
        return None
    out = {}
    for a in AXES:
        verdict, expected = str(axes[a].get("verdict")), axes[a].get("expected")
        expected = expected if isinstance(expected, dict) else None
        out[a] = {"verdict": verdict, "reason": str(axes[a].get("reason") or ""),
                  "as_expected": axis_as_expected(a, verdict, expected,
                                                  str(axes[a].get("reason") or "")),
                  "expected": expected}
    return out


#: The throughput figures of run.json's ``traffic.summary`` the page shows (docs/TRAFFIC.md).
THROUGHPUT = ("seconds", "producing_s", "sent", "acked", "failed", "acked_per_s",
              "acked_all_per_s", "polled")
#: Lost ids named on the page (as the safety axis's reason names them).
LOST_IDS = 10


def run_traffic(meta: dict[str, Any], rejudged: dict[str, Any] | None
                ) -> dict[str, Any] | None:
    """What a run's client traffic did (docs/TRAFFIC.md), None for a run without any:
    throughput from run.json's ``traffic.summary`` (sent and acknowledged records, records
    per second), the problems of its threads, and every check's result, re-judged now
    (``rejudged``: the audit's) or else as the run recorded them, with the lost records
    (counts, and the first ids). Only numbers that are numbers are kept; text is escaped by
    the page."""
    if not isinstance(meta.get("traffic"), dict) and not isinstance(rejudged, dict):
        return None
    recorded = _dict(meta.get("traffic"))
    summary = _dict(recorded.get("summary"))
    throughput = {k: summary[k] for k in THROUGHPUT if is_number(summary.get(k))}
    sent, producing = throughput.get("sent"), throughput.get("producing_s")
    if sent is not None and producing:
        throughput["sent_per_s"] = round(sent / producing, 1)
    doc = rejudged if isinstance(rejudged, dict) else _dict(recorded.get("checks"))
    checks = [_traffic_check(c) for c in _list(doc.get("checks")) if isinstance(c, dict)]
    skipped = doc.get("skipped_lines")
    return {"throughput": throughput, "rejudged": isinstance(rejudged, dict),
            "problems": [str(p) for p in _list(recorded.get("problems"))],
            "engine": str(doc.get("engine") or ""),
            "skipped_lines": skipped if is_number(skipped) else 0,
            "checks": checks, "lost": _lost(_list(doc.get("checks")))}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _traffic_check(c: dict[str, Any]) -> dict[str, Any]:
    return {"name": str(c.get("name")), "ok": c.get("ok") is True,
            "unsafe": c.get("unsafe") is True,
            "counts": {str(k): v for k, v in _dict(c.get("counts")).items() if is_number(v)}}


def _lost(checks: list[Any]) -> dict[str, Any] | None:
    """lost_writes' counts and its first lost ids (the ones counted against the fault
    budget first, as the check orders its examples), each marked excused or not."""
    lost = next((c for c in checks if isinstance(c, dict) and c.get("name") == "lost_writes"),
                None)
    if lost is None:
        return None
    ids = [{"id": str(e.get("id")), "excused": e.get("excused") is True}
           for e in _list(lost.get("examples")) if isinstance(e, dict)
           and e.get("id") is not None]
    return {"counts": {str(k): v for k, v in _dict(lost.get("counts")).items()
                       if is_number(v)}, "ids": ids[:LOST_IDS]}


def run_verdict(meta: dict[str, Any], has_run_end: bool) -> str:
    """The recorded step-wise lockstep verdict (run.json `verdict`; a pytest-plugin run's:
    its test's outcome). A history cut short (no run_end event, or ended_wall null) proves
    nothing whatever its run.json says: INCOMPLETE. Not the run's verdict: that is the
    headline (`_run_row`)."""
    if meta.get("ended_wall") is None or not has_run_end:
        return "INCOMPLETE"
    return str(meta.get("verdict") or "NONE")


def _matrix(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """scenario -> build -> latest run's verdict and run id."""
    cells: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in sorted(rows, key=lambda r: r["started"] or 0):
        cells[r["scenario"]][r["build"]] = {"verdict": r["verdict"], "label": r["label"],
                                            "what": r["what"],
                                            "run_id": r["run_id"],
                                            "anchor": r["anchor"],
                                            "headline": r["headline"],
                                            "message": r["message"], "passed": r["passed"],
                                            "reason": r["first_divergence"],
                                            "axes": r["axes"]}
    return cells


def _flakiness(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        # by what the run shows (KNOWN BUG, DEVIATION, ... for a declared failure)
        groups[(r["scenario"], r["build"])][r.get("label") or r["verdict"]] += 1
    return [{"scenario": s, "build": b, "runs": sum(c.values()), "verdicts": dict(c),
             "flaky": len(c) > 1} for (s, b), c in sorted(groups.items())]


def _trends(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """build -> one entry per UTC day with runs (oldest first): how many ran, their
    verdicts (headlines) and the share that conformed (every axis clean or as declared)
    among the runs that were judged (UNSUPPORTED and unfinished runs judge nothing), so a
    release manager sees a build getting better or worse across nightly runs."""
    per_day: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for r in rows:
        per_day[r["build"]][_day(r["started"])][r["verdict"]] += 1
    return {b: [_trend_point(day, c) for day, c in sorted(days.items())]
            for b, days in sorted(per_day.items())}


def _day(started: float | None) -> str:
    try:
        return time.strftime("%Y-%m-%d", time.gmtime(started)) if started else "unknown"
    except (OverflowError, OSError, ValueError):  # a number, but no date
        return "unknown"


def _trend_point(day: str, verdicts: Counter[str]) -> dict[str, Any]:
    judged = sum(n for v, n in verdicts.items() if v not in (UNSUPPORTED, INCOMPLETE))
    rate = round(verdicts[CONFORMS] / judged, 3) if judged else None
    return {"day": day, "runs": sum(verdicts.values()), "verdicts": dict(verdicts),
            "conform_rate": rate}
