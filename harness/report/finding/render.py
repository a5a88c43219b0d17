"""Rendering `kafka-chaos finding`'s drafts: one per scenario, in the form of a Kafka
ticket (title, type, priority, affected versions, then the sections of reproduce.py,
expected.py, actual.py and impact.py), and the runs left out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cluster.builds import version_tuple
from harness.judge.axes import AXES, CLEAN
from harness.report.finding.actual import _actual
from harness.report.finding.expected import _expected
from harness.report.finding.impact import _how_found, _impact, _lost_all
from harness.report.finding.reproduce import _environment, _steps
from harness.report.finding.runs import Evidence, LeftOut, gather


def render(found: Sequence[Evidence], left_out: Sequence[LeftOut] = (),
           today: dt.date | None = None) -> str:
    """The drafts, one per scenario, in the order the scenarios first appear. A left-out
    run of a scenario with a draft is a build it does not affect (listed in its draft);
    the others are listed at the end."""
    by_scenario: dict[str, list[Evidence]] = {}
    for ev in found:
        by_scenario.setdefault(ev.result.scenario, []).append(ev)
    day = (today or dt.date.today()).isoformat()
    drafts = [_draft(runs, day, [lo for lo in left_out if lo.scenario == name])
              for name, runs in by_scenario.items()]
    text = "\n\n---\n\n".join(drafts)
    rest = [lo for lo in left_out if lo.scenario not in by_scenario]
    if rest:
        text += ("\n\n## Runs left out (not findings)\n\n"
                 + "\n".join(f"- {lo.why}" for lo in rest) + "\n")
    return text


def _draft(runs: list[Evidence], day: str, unaffected: Sequence[LeftOut] = ()) -> str:
    runs = sorted(runs, key=lambda e: (version_tuple(e.version), e.run_dir.name), reverse=True)
    main = runs[0]
    out: list[str] = []
    lost = _lost_all(main)
    out.append(f"# TO WRITE: title. Suggested: {_title(main, lost)}")
    out.append("")
    out.append(f"Draft written by `kafka-chaos finding` on {day} from {len(runs)} run(s); "
               "every `TO WRITE` is for a person.")
    out.append("")
    out.append("- **Type:** Bug")
    out.append("- **Component:** TO WRITE (KRaft controller? broker?)")
    out.append(f"- **Priority (suggested):** {_priority(main, lost)}")
    out.append(f"- **Affected versions (measured):** "
               f"{', '.join(sorted({e.version for e in runs}, key=version_tuple))}")
    out += ["", "## Affected versions (measured)", ""]
    out += _versions_table(runs)
    if unaffected:
        out += ["", "Not affected, or not judged (measured with the same scenario):", "",
                "| build | verdicts | why | run |", "|---|---|---|---|"]
        for lo in sorted(unaffected, key=lambda lo: (version_tuple(lo.version or "0.0.0"),
                                                     lo.run_dir.name)):
            out.append(f"| {lo.version} | {lo.verdicts} | {lo.reason or '-'} | `{lo.run_dir}` |")
    out += ["", "## Environment", ""]
    out += _environment(main)
    out += ["", "## Steps to reproduce", ""]
    out += _steps(main)
    out += ["", "## Expected", ""]
    out += _expected(main)
    out += ["", "## Actual", ""]
    out += _actual(main)
    out += ["", "## Impact", "", "TO WRITE. From the run:", ""]
    out += _impact(main, lost)
    out += ["", "## Suggested fix", "", "TO WRITE.", ""]
    out += ["## How the harness found it", ""]
    out += _how_found(main)
    return "\n".join(out).rstrip() + "\n"


def _title(ev: Evidence, lost: list[dict[str, Any]]) -> str:
    first = ev.failing[0]
    reason = ev.result.axes[first].reason.split("; ")[0]
    if lost:
        return (f"{len(lost)} acks=all record(s) lost in scenario {ev.result.scenario} "
                f"(Kafka {ev.version}): {reason}")
    return (f"{ev.result.scenario} on Kafka {ev.version}: {first} "
            f"{ev.result.axes[first].verdict}: {reason}")


def _priority(ev: Evidence, lost: list[dict[str, Any]]) -> str:
    if lost:
        return (f"Critical: data loss ({len(lost)} acks=all record(s) lost while at most "
                "min ISR - 1 replicas lost unflushed data)")
    if "safety" in ev.failing:
        return "Major: a committed state outside KIP-966's invariants, no record lost in the run"
    return "Minor/Major: the behaviour differs from KIP-966 or from the release's own line; " \
           "no safety rule broken"


def _versions_table(runs: list[Evidence]) -> list[str]:
    rows = ["| build | profile | verdict | release | kip | safety | run |",
            "|---|---|---|---|---|---|---|"]
    for ev in sorted(runs, key=lambda e: (version_tuple(e.version), e.run_dir.name)):
        cells, declared = [], []
        for a in AXES:
            v = ev.result.axes[a]
            mark = " (declared)" if v.expected is not None and v.as_expected \
                and v.verdict not in CLEAN[a] else ""
            if mark:
                declared.append(a)
            cells.append(f"{v.verdict}{mark}")
        verdict = ev.result.headline.verdict
        if verdict == "CONFORMS" and declared:
            # The suite passes a run that fails as its scenario declares (a known bug): a
            # ticket says what failed, not a bare CONFORMS.
            verdict = f"fails as declared ({', '.join(declared)})"
        rows.append(f"| {ev.version} | {ev.result.profile} | {verdict} | "
                    f"{' | '.join(cells)} | `{ev.run_dir}` |")
    return rows


def finding_text(paths: Sequence[Path], today: dt.date | None = None) -> str:
    """What `kafka-chaos finding` prints: the drafts for the failing runs under ``paths``,
    then those of the differential findings among them (diff.py: finding files, diff
    campaign directories)."""
    from harness.report.finding.diff import diff_text, split
    diff, runs = split(paths)
    parts = []
    if runs:
        found, left_out = gather(runs)
        parts.append(render(found, left_out, today))
    if diff:
        parts.append(diff_text(diff, (today or dt.date.today()).isoformat()))
    return "\n\n---\n\n".join(p.rstrip("\n") for p in parts) + "\n"
