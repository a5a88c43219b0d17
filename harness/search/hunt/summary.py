"""Summaries of a hunt: DIR/hunt.json and DIR/hunt.md, and the table the command prints
(docs/HUNT.md "Output")."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.search.hunt.classification import CLASSES
from harness.search.hunt.reach import RULE_NAMES, TRANSITION_NAMES
from harness.search.hunt.state import BuildState, HuntState

# --- the summary -----------------------------------------------------------------------------

def build_summary(st: BuildState) -> dict[str, Any]:
    classes = {c: sum(1 for k in st.known if k.cls == c) for c in CLASSES}
    return {"build": st.version, "runs": st.runs, "generated": st.generated,
            "mutated": st.mutated, "directed": st.directed, "errors": st.errors,
            "minutes": round(st.seconds / 60, 1),
            "runs_per_hour": round(3600 * st.runs / st.seconds, 1) if st.seconds else None,
            "transitions": f"{len(st.transitions())}/{len(TRANSITION_NAMES)}",
            "rules": f"{len(st.rules())}/{len(RULE_NAMES)}",
            "signatures": len(st.known), "classes": classes, "corpus": len(st.corpus),
            "deviations_met": st.deviations_met(),
            "never_reached": {
                "transitions": [t for t in TRANSITION_NAMES if t not in st.transitions()],
                "rules": [r for r in RULE_NAMES if r not in st.rules()]}}


def write_summary(campaign_dir: Path, state: HuntState, order: Sequence[str] = ()) -> str:
    """hunt.json and hunt.md in the campaign dir; returns the markdown table."""
    versions = list(dict.fromkeys([*order, *state.builds]))
    builds = [state.builds[v] for v in versions if v in state.builds]
    summary = {"settings": state.settings, "builds": [build_summary(b) for b in builds],
               "signatures": [{"build": b.version, **k.to_json()} for b in builds
                              for k in b.known]}
    campaign_dir.mkdir(parents=True, exist_ok=True)
    (campaign_dir / "hunt.json").write_text(json.dumps(summary, indent=1))
    table = summary_table(builds)
    lines = [f"# kafka-chaos hunt, seed {state.settings.get('seed')}", "", table, "",
             "## Signatures", ""]
    for b in builds:
        for k in b.known:
            lines.append(f"- **{b.version}** `{k.key}`: **{k.cls}** ({k.status}, "
                         f"{k.occurrences} occurrence(s), first after {k.found_at_run} runs / "
                         f"{k.found_after_s:.0f} s): {k.why}. First run: {k.first_run}"
                         + (f"; minimal: {k.minimal} ({k.minimal_steps} steps)" if k.minimal
                            else ""))
    if not any(b.known for b in builds):
        lines.append("none")
    lines += ["", "## Cited deviations met (the kip axis needed them; first run)", ""]
    for b in builds:
        lines.append(f"- **{b.version}**: {deviations_text(b.deviations_met())}")
    lines += ["", "## Never reached", ""]
    for b in builds:
        nr = build_summary(b)["never_reached"]
        lines.append(f"- **{b.version}**: transitions {', '.join(nr['transitions']) or 'none'}; "
                     f"rules {', '.join(nr['rules']) or 'none'}")
    (campaign_dir / "hunt.md").write_text("\n".join(lines) + "\n")
    return table


def deviations_text(met: Mapping[str, Mapping[str, Any]]) -> str:
    """``BuildState.deviations_met`` as one line: each deviation with its first run and
    minute (hunt.md and the campaign report)."""
    return ", ".join(f"{d} ({m['run']}" + ("" if m["minutes"] is None
                                          else f", {m['minutes']} min") + ")"
                     for d, m in met.items()) or "none"


def summary_table(builds: Sequence[BuildState]) -> str:
    rows = ["| build | runs | runs/h | minutes | transitions | rules | signatures | classes |",
            "|---|---|---|---|---|---|---|---|"]
    for b in builds:
        s = build_summary(b)
        classes = ", ".join(f"{c} {n}" for c, n in s["classes"].items() if n) or "-"
        per_hour = s['runs_per_hour'] if s['runs_per_hour'] is not None else '-'
        rows.append(f"| {b.version} | {s['runs']} ({s['generated']} generated, {s['mutated']} "
                    f"mutated, {s.get('directed', 0)} directed) | {per_hour} "
                    f"| {s['minutes']} | {s['transitions']} | {s['rules']} | {s['signatures']} "
                    f"| {classes} |")
    return "\n".join(rows)
