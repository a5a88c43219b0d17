"""The campaign report of a `kafka-chaos hunt` (issue 35, item 4): DIR/report.html,
report.md and report.json in the campaign directory (docs/HUNT.md, "Campaign report").

Per build: the runs (generated, re-runs, shrink attempts), runs per hour of the build's wall
time, coverage over time (transitions and trace rules reached against the build's campaign
minutes), every signature with its first hit, whether it reproduced, its class and why, and
its shrunk scenario (path and steps), and the transitions and rules never reached.

Where the numbers come from:

- DIR/hunt-state.json (harness/search/hunt/state.py): the counters, the coverage map (each
  transition or rule -> the run that reached it first), the signatures with their class, and,
  from campaigns of 2026-11-26 21:50 on, the run log (every run with the build's campaign
  seconds when it ended). Coverage over time is the coverage map placed at those times.
- The run directories (DIR/runs, or the hunt's --runs-dir), read on Spark as the conformance
  report reads histories (harness/infra/spark.py's session, one task per run directory):
  each run's name, build, wall clock start and end and verdict. For a campaign without a run
  log, when each run ended in the build's campaign time is derived from these wall clocks:
  the runs of a build in start order, with a pause of more than SESSION_GAP_S between one
  run's end and the next one's start taken as a break between two hunt sessions (not counted,
  as the state's seconds do not count it). The report says which source it used.
- DIR/<build>/fuzz-summary.json: the re-run rates of a signature confirmed in the last
  session (a signature of an earlier session shows its status only).
- The differential campaigns (`kafka-chaos diff`) under DIR/diff (and those `report
  --campaign DIR --diff D` names): their findings by class (harness/report/diff_findings.py),
  the section "Controller findings by class".
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from harness.infra.errors import UsageError
from harness.infra.spark import session as spark_session
from harness.report import diff_findings
from harness.report.html import COLOURS
from harness.report.text import html_text as escape
from harness.search import hunt

FILES = ("report.html", "report.md", "report.json")
#: A pause between two runs of a build longer than this is a break between hunt sessions
#: (within a session the next run starts within seconds: 2 s at most on seed 36 at load 40;
#: seed 35 was resumed 78 s after a stop).
SESSION_GAP_S = 60.0
KINDS = ("generated", "re-run", "shrink")


# --- input -----------------------------------------------------------------------------------

def load_campaign(campaign_dir: Path) -> hunt.HuntState:
    """The hunt state of ``campaign_dir``; a UsageError naming the directory and the fix when
    it is none."""
    fix = ("give the directory `kafka-chaos hunt --campaign-dir` wrote (it holds "
           f"{hunt.STATE_FILE}, hunt.json and hunt.md), e.g. runs/hunt-s36")
    if not campaign_dir.exists():
        raise UsageError(f"report --campaign {campaign_dir}: no such directory; {fix}")
    if not campaign_dir.is_dir():
        raise UsageError(f"report --campaign {campaign_dir}: not a directory; {fix}")
    path = campaign_dir / hunt.STATE_FILE
    if not path.is_file():
        raise UsageError(f"report --campaign {campaign_dir}: holds no {hunt.STATE_FILE}, so it "
                         f"is no hunt campaign; {fix} (run histories alone: kafka-chaos report "
                         "RUNS_DIR --out DIR)")
    try:
        return hunt.read_state(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"report --campaign {campaign_dir}: {hunt.STATE_FILE} is unreadable "
                         f"({exc}); {fix}") from None


def run_dirs(runs_dir: Path) -> list[Path]:
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.iterdir() if (p / "run.json").is_file())


def read_run(path: str) -> dict[str, Any]:
    """One Spark task: what the report needs of one run directory's run.json."""
    try:
        meta = json.loads((Path(path) / "run.json").read_text())
        scenario, build = meta.get("scenario") or {}, meta.get("build") or {}
        started, ended = meta.get("started_wall"), meta.get("ended_wall")
        return {"dir": path, "name": str(scenario.get("name") or meta.get("run_id")),
                "build": str(build.get("version") or "?"),
                "started": float(started) if _number(started) else None,
                "ended": float(ended) if _number(ended) else None,
                "verdict": str(meta.get("verdict") or "NONE"), "problem": None}
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        return {"dir": path, "name": Path(path).name, "build": "?", "started": None,
                "ended": None, "verdict": "NONE", "problem": f"{type(exc).__name__}: {exc}"}


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def spark_runs(spark: Any, dirs: list[Path]) -> list[dict[str, Any]]:
    """Every run directory's facts, one Spark task each."""
    if not dirs:
        return []
    items = [str(d.resolve()) for d in dirs]
    # A task reads one small file: a few per core, not one task per run.
    slices = max(1, min(len(items), 2 * spark.sparkContext.defaultParallelism))
    return list(spark.sparkContext.parallelize(items, slices).map(read_run).collect())


# --- the numbers (pure) ----------------------------------------------------------------------

def run_kind(name: str) -> str:
    """generated (fuzz-sS-N), re-run (-again: the confirming re-run; -minN: the shrunk
    schedule's), shrink (-shrinkN: a shrink attempt), else other."""
    if re.fullmatch(r".*-s\d+-\d+", name):
        return "generated"
    if re.fullmatch(r".*-(again|min\d+)", name):
        return "re-run"
    if re.fullmatch(r".*-shrink\d+", name):
        return "shrink"
    return "other"


def derived_end_times(rows: list[dict[str, Any]], gap_s: float = SESSION_GAP_S
                      ) -> dict[str, float]:
    """run name -> the build's campaign seconds when it ended, from the runs' wall clocks
    (one build's rows): time runs on while runs follow each other; a pause longer than
    ``gap_s`` is a break between sessions and not counted."""
    timed = sorted((r for r in rows if r["started"] is not None and r["ended"] is not None),
                   key=lambda r: (r["started"], r["ended"]))
    out: dict[str, float] = {}
    t, last = 0.0, None
    for r in timed:
        if last is None or r["started"] - last > gap_s:
            t += r["ended"] - r["started"]  # a new session: from this run's start
            last = r["ended"]
        elif r["ended"] > last:
            t += r["ended"] - last
            last = r["ended"]
        out[r["name"]] = round(t, 1)
    return out


def coverage_series(coverage: dict[str, str], ended: dict[str, float]
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """Coverage over time: one point per run that reached something first, with the
    transitions and rules reached by then (cumulative), from (0, 0, 0); and the features
    whose first run has no known end time (placed nowhere, said)."""
    by_run: dict[str, list[str]] = {}
    unplaced = []
    for feature, run in sorted(coverage.items()):
        if run in ended:
            by_run.setdefault(run, []).append(feature)
        else:
            unplaced.append(feature)
    points: list[dict[str, Any]] = [{"minutes": 0.0, "run": None, "new": [],
                                     "transitions": 0, "rules": 0}]
    tr = ru = 0
    for run, feats in sorted(by_run.items(), key=lambda kv: (ended[kv[0]], kv[0])):
        tr += sum(f.startswith("transition:") for f in feats)
        ru += sum(f.startswith("rule:") for f in feats)
        points.append({"minutes": round(ended[run] / 60, 2), "run": run, "new": feats,
                       "transitions": tr, "rules": ru})
    return points, unplaced


def per_hour(count: int, seconds: float) -> float | None:
    return round(3600 * count / seconds, 1) if seconds > 0 else None


def build_report(st: hunt.BuildState, rows: list[dict[str, Any]], campaign_dir: Path,
                 runs_dir: Path) -> dict[str, Any]:
    """One build's section (``rows``: that build's run directories)."""
    base = hunt.build_summary(st)
    if st.run_log:
        names = [str(e["run"]) for e in st.run_log]
        ended = {str(e["run"]): float(e["ended_s"]) for e in st.run_log}
        source = "the hunt's run log (hunt-state.json)"
    elif rows:
        names = [r["name"] for r in rows]
        ended = derived_end_times(rows)
        total = max(ended.values(), default=0.0)
        source = (f"the run directories' wall clocks ({len(rows)} runs; no run log in this "
                  f"campaign's state: pauses over {SESSION_GAP_S:.0f} s taken as breaks "
                  f"between sessions; derived total {total / 60:.1f} min, the state's "
                  f"{st.seconds / 60:.1f} min)")
        if len(rows) != st.runs:
            source += (f"; {len(rows)} run directories, the state counts {st.runs} runs (a run "
                       "stopped by Ctrl-C or SIGTERM is not counted)")
    else:
        names, ended = [], {}
        source = "none: no run log in the state and no run directory found"
    kinds = Counter(run_kind(n) for n in names)
    if not names:  # the counters only
        kinds = Counter({"generated": st.generated, "re-run or shrink": st.runs - st.generated})
    points, unplaced = coverage_series(st.coverage, ended)
    verdicts = Counter(r["verdict"] for r in rows)
    return {
        "build": st.version, "minutes": base["minutes"], "seconds": round(st.seconds, 1),
        "runs": st.runs, "generated": st.generated, "mutated": st.mutated,
        "directed": st.directed, "errors": st.errors, "kinds": dict(kinds), "runs_seen": len(names),
        "runs_per_hour": per_hour(st.runs, st.seconds),
        "generated_per_hour": per_hour(st.generated, st.seconds),
        "verdicts": dict(sorted(verdicts.items())),
        "transitions": len(st.transitions()), "transitions_total": len(hunt.TRANSITION_NAMES),
        "rules": len(st.rules()), "rules_total": len(hunt.RULE_NAMES),
        "time_source": source, "coverage": points, "unplaced": unplaced,
        "signatures": [_signature_row(k, st.version, campaign_dir, runs_dir,
                                      _first_hit(k, rows, ended)) for k in st.known],
        "classes": base["classes"], "corpus": len(st.corpus),
        "never_reached": base["never_reached"],
        "deviations_met": base.get("deviations_met", {}),
    }


def _first_hit(k: hunt.Known, rows: list[dict[str, Any]], ended: dict[str, float]
               ) -> float | None:
    """When the signature's first run ended, in the build's campaign seconds, from the same
    times as the coverage (a campaign before 2026-11-26 19:30 recorded the end of its re-run
    instead); None when that run is not among the run directories."""
    name = next((r["name"] for r in rows if Path(r["dir"]).name == Path(k.first_run).name),
                None)
    return ended.get(name) if name is not None else None


def _signature_row(k: hunt.Known, version: str, campaign_dir: Path,
                   runs_dir: Path, first_hit_s: float | None) -> dict[str, Any]:
    rates = _fuzz_rates(campaign_dir / version / "fuzz-summary.json").get(k.key, {})
    minimal = _find(k.minimal, campaign_dir, runs_dir) if k.minimal else None
    scenario, steps, problem = _minimal(minimal) if minimal else (None, [], None)
    if k.minimal and minimal is None:
        problem = f"{k.minimal}: not found"
    return {"key": k.key, "class": k.cls, "why": k.why, "status": k.status,
            "rate": rates.get("rate"), "minimal_rate": rates.get("minimal_rate"),
            "occurrences": k.occurrences, "first_run": k.first_run,
            "found_at_run": k.found_at_run,
            "found_after_min": round((k.found_after_s if first_hit_s is None
                                      else first_hit_s) / 60, 1),
            "recorded_after_min": round(k.found_after_s / 60, 1),
            "minimal": k.minimal or None, "minimal_file": str(minimal) if minimal else None,
            "minimal_steps": k.minimal_steps, "scenario": scenario, "steps": steps,
            "minimal_problem": problem}


def _fuzz_rates(path: Path) -> dict[str, dict[str, str]]:
    """signature -> its re-run rates, where that session re-ran it (not "0/0")."""
    try:
        failures = json.loads(path.read_text()).get("failures") or []
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(f.get("signature")): {k: str(f[k]) for k in ("rate", "minimal_rate")
                                      if f.get(k) and f.get(k) != "0/0"}
            for f in failures if isinstance(f, dict)}


def _find(path_text: str, campaign_dir: Path, runs_dir: Path) -> Path | None:
    """A path the hunt wrote (relative to where it ran): as given, in the campaign dir, or the
    same run directory in ``runs_dir``."""
    p = Path(path_text)
    for c in (p, campaign_dir / p, runs_dir / p.parent.name / p.name):
        if c.is_file():
            return c
    return None


def _minimal(path: Path) -> tuple[str | None, list[str], str | None]:
    """(the cluster and topic in a line, one line per step, or why not) of a scenario file."""
    try:
        doc = yaml.safe_load(path.read_text())
        steps = [_step_line(s) for s in doc.get("steps") or []]
        parts = [f"cluster {_flat(doc['cluster'])}" if doc.get("cluster") else "",
                 f"topic {_flat(doc['topic'])}" if doc.get("topic") else ""]
        return "; ".join(p for p in parts if p) or None, steps, None
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError) as exc:
        return None, [], f"{path}: unreadable ({type(exc).__name__}: {exc})"


def _step_line(step: Any) -> str:
    if isinstance(step, dict) and len(step) == 1:
        ((kind, args),) = step.items()
        return f"{kind} {_flat(args)}".rstrip() if args else str(kind)
    return _flat(step)


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_flat(v) if isinstance(v, dict) else json.dumps(v)}"
                         for k, v in value.items())
    return json.dumps(value)


def campaign_report(state: hunt.HuntState, rows: list[dict[str, Any]], campaign_dir: Path,
                    runs_dir: Path, diff: list[dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """The report's data from the state and the run directories' facts (pure but for the
    signatures' scenario files); ``diff``: the differential campaigns read
    (diff_findings.read_all)."""
    by_build: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_build.setdefault(r["build"], []).append(r)
    builds = [build_report(st, by_build.get(v, []), campaign_dir, runs_dir)
              for v, st in state.builds.items()]
    return {"campaign": str(campaign_dir), "settings": state.settings,
            "runs_dir": str(runs_dir), "builds": builds, "diff": diff or [],
            "unreadable_runs": [{"dir": r["dir"], "reason": r["problem"]} for r in rows
                                if r["problem"]]}


# --- the files -------------------------------------------------------------------------------

def make_campaign_report(campaign_dir: Path, out: Path | None = None,
                         master: str | None = None, runs_dir: Path | None = None,
                         diff_dirs: list[Path] | None = None) -> dict[str, Any]:
    """Read the campaign (UsageError when ``campaign_dir`` is none), read its run directories
    on Spark, write report.html, report.md and report.json into ``out`` (default: the
    campaign dir). The differential campaigns under DIR/diff and ``diff_dirs`` give the
    section "Controller findings by class". A Spark session this call started is stopped
    before it returns."""
    from pyspark.sql import SparkSession
    state = load_campaign(campaign_dir)
    runs_dir = runs_dir or campaign_dir / "runs"
    t0 = time.monotonic()
    dirs = run_dirs(runs_dir)
    rows: list[dict[str, Any]] = []
    if dirs:
        owned = SparkSession.getActiveSession() is None
        spark = spark_session(master)
        try:
            rows = spark_runs(spark, dirs)
        finally:
            if owned:
                spark.stop()
    diff = diff_findings.read_all([campaign_dir / "diff", *(diff_dirs or [])])
    report = campaign_report(state, rows, campaign_dir, runs_dir, diff)
    report["report_seconds"] = round(time.monotonic() - t0, 2)
    out = out or campaign_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    (out / "report.html").write_text(render(report), encoding="utf-8")
    return report


def _kinds_text(b: dict[str, Any]) -> str:
    return ", ".join(f"{n} {k}" for k, n in b["kinds"].items() if n) or "none"


def _classes_text(b: dict[str, Any]) -> str:
    return ", ".join(f"{c} {n}" for c, n in b["classes"].items() if n) or "none"


def _rate_text(s: dict[str, Any]) -> str:
    out = str(s["status"])
    if s["rate"]:
        out += f" ({s['rate']}"
        out += f"; shrunk schedule {s['minimal_rate']})" if s["minimal_rate"] else ")"
    return out


def _hit_text(s: dict[str, Any]) -> str:
    """When the first run ended (and the state's own figure where it differs)."""
    out = f"{s['found_after_min']} min (generated run {s['found_at_run']}"
    if s["recorded_after_min"] != s["found_after_min"]:
        out += f"; the state recorded {s['recorded_after_min']} min"
    return out + ")"


def markdown(r: dict[str, Any]) -> str:
    lines = [f"# Campaign report: {r['campaign']} (seed {r['settings'].get('seed')})", "",
             "| build | minutes | runs | runs/h | generated/h | transitions | rules | "
             "signatures |", "|---|---|---|---|---|---|---|---|"]
    for b in r["builds"]:
        lines.append(f"| {b['build']} | {b['minutes']} | {b['runs']} ({_kinds_text(b)}) | "
                     f"{b['runs_per_hour']} | {b['generated_per_hour']} | "
                     f"{b['transitions']}/{b['transitions_total']} | "
                     f"{b['rules']}/{b['rules_total']} | {len(b['signatures'])}: "
                     f"{_classes_text(b)} |")
    for b in r["builds"]:
        lines += ["", f"## {b['build']}", "", f"Times from {b['time_source']}.", "",
                  "Coverage over time (minutes of the build's campaign: transitions, rules; "
                  "the run that reached something first):", ""]
        lines += [f"- {p['minutes']:.1f} min: {p['transitions']}, {p['rules']}"
                  + (f" ({p['run']}: {', '.join(p['new'])})" if p["run"] else "")
                  for p in b["coverage"]]
        if b["unplaced"]:
            lines.append(f"- at no known time: {', '.join(b['unplaced'])}")
        lines += ["", "Signatures:", ""]
        for s in b["signatures"]:
            lines.append(f"- `{s['key']}`: **{s['class']}**, {_rate_text(s)}, first hit after "
                         f"{_hit_text(s)}, "
                         f"{s['occurrences']} occurrence(s): {s['why']}. First run: "
                         f"{s['first_run']}")
            if s["minimal"]:
                lines.append(f"  - shrunk scenario {s['minimal']} ({len(s['steps'])} steps)"
                             + (f": {s['scenario']}" if s["scenario"] else ""))
                lines += [f"    {i + 1}. {st}" for i, st in enumerate(s["steps"])]
            if s["minimal_problem"]:
                lines.append(f"  - shrunk scenario: {s['minimal_problem']}")
        if not b["signatures"]:
            lines.append("none")
        nr = b["never_reached"]
        met = hunt.deviations_text(b["deviations_met"])
        lines += ["", f"Cited deviations met: {met}",
                  "", f"Never reached: transitions {', '.join(nr['transitions']) or 'none'}; "
                      f"rules {', '.join(nr['rules']) or 'none'}"]
    lines += diff_findings.markdown(r.get("diff") or [])
    if r["unreadable_runs"]:
        lines += ["", "Unreadable run directories:", ""]
        lines += [f"- {u['dir']}: {u['reason']}" for u in r["unreadable_runs"]]
    return "\n".join(lines) + "\n"


_CSS = """body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;
margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;vertical-align:top}
section{border-top:2px solid #ddd;margin-top:1.5em}.small{font-size:12px;color:#555}
svg{background:#fafafa;border:1px solid #ddd}pre{margin:0;font-size:12px;white-space:pre-wrap}
.signatures td{max-width:30em;min-width:6em}"""
_CLASS_COLOURS = {"kafka-candidate": COLOURS["DIVERGES"], "harness-error": COLOURS["ERROR"],
                  "cited-deviation": COLOURS["DEVIATES"], "model-gap": COLOURS["INCOMPLETE"],
                  "undecided": COLOURS["UNSUPPORTED"], "known-bug": COLOURS["UNSAFE"]}


def render(r: dict[str, Any]) -> str:
    """report.html: one self-contained page (inline CSS and SVG); every value from a file is
    escaped (harness.report.text), the numbers are this module's."""
    head = "".join(
        f"<tr><td><a href='#build-{escape(b['build'])}'>{escape(b['build'])}</a></td>"
        f"<td>{b['minutes']}</td><td>{b['runs']} ({escape(_kinds_text(b))})</td>"
        f"<td>{b['runs_per_hour']}</td><td>{b['generated_per_hour']}</td>"
        f"<td>{b['transitions']}/{b['transitions_total']}</td>"
        f"<td>{b['rules']}/{b['rules_total']}</td><td>{len(b['signatures'])}: "
        f"{escape(_classes_text(b))}</td></tr>" for b in r["builds"])
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>kafka-chaos campaign "
             f"report</title><style>{_CSS}</style></head><body><h1>Campaign report: "
             f"{escape(r['campaign'])}</h1><p class='small'>seed "
             f"{escape(r['settings'].get('seed'))}, settings "
             f"{escape(json.dumps(r['settings'], sort_keys=True))}; runs read from "
             f"{escape(r['runs_dir'])}</p><table id='builds'><tr><th>build</th><th>minutes</th>"
             "<th>runs</th><th>runs/h</th><th>generated/h</th><th>transitions</th>"
             f"<th>rules</th><th>signatures</th></tr>{head}</table>"]
    parts += [_build_html(b) for b in r["builds"]]
    parts.append(diff_findings.html(r.get("diff") or [], escape))
    if r["unreadable_runs"]:
        parts.append("<h2>Unreadable run directories</h2><table>" + "".join(
            f"<tr><td>{escape(u['dir'])}</td><td>{escape(u['reason'])}</td></tr>"
            for u in r["unreadable_runs"]) + "</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _build_html(b: dict[str, Any]) -> str:
    pts = "".join(f"<tr><td>{p['minutes']:.1f}</td><td>{p['transitions']}</td>"
                  f"<td>{p['rules']}</td><td>{escape(p['run'] or '')}</td>"
                  f"<td>{escape(', '.join(p['new']))}</td></tr>" for p in b["coverage"])
    unplaced = (f"<p class='small'>reached at no known time: {escape(', '.join(b['unplaced']))}"
                "</p>" if b["unplaced"] else "")
    nr = b["never_reached"]
    never = (f"<h3>Never reached</h3><table class='never'><tr><th>transitions "
             f"({len(nr['transitions'])})</th><td>{escape(', '.join(nr['transitions']) or 'none')}"
             f"</td></tr><tr><th>rules ({len(nr['rules'])})</th><td>"
             f"{escape(', '.join(nr['rules']) or 'none')}</td></tr></table>")
    met = hunt.deviations_text(b["deviations_met"])
    never += f"<h3>Cited deviations met</h3><p class='small'>{escape(met)}</p>"
    verdicts = ", ".join(f"{k} {v}" for k, v in b["verdicts"].items()) or "no run directory"
    return (f"<section id='build-{escape(b['build'])}'><h2>{escape(b['build'])}</h2>"
            f"<p>{b['runs']} runs in {b['minutes']} min ({escape(_kinds_text(b))}; "
            f"{b['mutated']} mutated, {b.get('directed', 0)} directed, {b['errors']} ended in "
            f"ERROR): {b['runs_per_hour']} "
            f"runs/h, {b['generated_per_hour']} generated/h. Run directories' verdicts: "
            f"{escape(verdicts)}. Corpus {b['corpus']}.</p>"
            f"<h3>Coverage over time</h3><p class='small'>Times from {escape(b['time_source'])}."
            "</p>" + _chart(b) + unplaced +
            "<table class='coverage'><tr><th>minute</th><th>transitions</th><th>rules</th>"
            f"<th>run</th><th>reached first</th></tr>{pts}</table>"
            + _signatures_html(b) + never + "</section>")


def _chart(b: dict[str, Any]) -> str:
    """Transitions and rules reached against minutes: two step lines, each under its total."""
    width, height, left, top, bottom = 700, 220, 40, 10, 30
    span = float(max([b["seconds"] / 60] + [p["minutes"] for p in b["coverage"]] + [1e-6]))
    hi = float(max(b["transitions_total"], b["rules_total"], 1))

    def x(m: float) -> float:
        return left + m / span * (width - left - 10)

    def y(v: float) -> float:
        return top + (1 - v / hi) * (height - top - bottom)

    svg = [f"<svg class='chart' width='{width}' height='{height}' "
           "xmlns='http://www.w3.org/2000/svg'>"]
    for key, colour in (("transitions", "#1565c0"), ("rules", "#2e7d32")):
        total = b[f"{key}_total"]
        svg.append(f"<line x1='{left}' x2='{width - 10}' y1='{y(total):.1f}' "
                   f"y2='{y(total):.1f}' stroke='{colour}' stroke-dasharray='4 3'/>"
                   f"<text x='{width - 12}' y='{y(total) - 3:.1f}' font-size='10' "
                   f"text-anchor='end' fill='{colour}'>{key}: {total}</text>")
        coords, last = [], 0
        for p in b["coverage"]:
            coords += [(x(p["minutes"]), y(last)), (x(p["minutes"]), y(p[key]))]
            last = p[key]
        coords.append((x(span), y(last)))
        svg.append(f"<polyline class='{key}' fill='none' stroke='{colour}' stroke-width='2' "
                   "points='" + " ".join(f"{a:.1f},{c:.1f}" for a, c in coords) + "'/>"
                   f"<text x='{left - 4}' y='{y(last) + 4:.1f}' font-size='10' "
                   f"text-anchor='end' fill='{colour}'>{last}</text>")
    svg.append(f"<text x='{left}' y='{height - 8}' font-size='10'>0</text><text "
               f"x='{width - 10}' y='{height - 8}' font-size='10' text-anchor='end'>"
               f"{span:.1f} min</text></svg>")
    return "".join(svg) + ("<p class='small'>blue: transitions reached, green: trace rules "
                           "reached; dashed: how many there are</p>")


def _signatures_html(b: dict[str, Any]) -> str:
    if not b["signatures"]:
        return "<h3>Signatures</h3><p>none</p>"
    rows = []
    for s in b["signatures"]:
        colour = _CLASS_COLOURS.get(s["class"], "#999")
        steps = "".join(f"{i + 1}. {escape(st)}\n" for i, st in enumerate(s["steps"]))
        shrunk = ("" if not s["minimal"] else
                  f"{escape(s['minimal'])} ({len(s['steps'])} steps)<br>"
                  + (f"<span class='small'>{escape(s['scenario'])}</span>"
                     if s["scenario"] else "") + f"<pre>{steps}</pre>")
        if s["minimal_problem"]:
            shrunk += f"<span class='small'>{escape(s['minimal_problem'])}</span>"
        rows.append(
            f"<tr class='signature'><td><code>{escape(s['key'])}</code></td>"
            f"<td style='background:{colour};color:#fff;font-weight:bold'>"
            f"{escape(s['class'])}</td><td>{escape(s['why'])}</td>"
            f"<td>{escape(_rate_text(s))}</td><td>{escape(_hit_text(s))}</td>"
            f"<td>{s['occurrences']}</td><td>"
            f"{escape(s['first_run'])}</td><td>{shrunk or 'not shrunk'}</td></tr>")
    return ("<h3>Signatures</h3><table class='signatures'><tr><th>signature</th><th>class</th>"
            "<th>why</th><th>reproduced</th><th>first hit</th><th>occurrences</th>"
            "<th>first run</th><th>shrunk scenario</th></tr>" + "".join(rows) + "</table>")
