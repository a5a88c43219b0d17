"""Reading the runs of `kafka-chaos finding`: each run re-judged from its files alone
(harness.judge.audit, as `kafka-chaos audit` does), kept as ``Evidence`` when an axis fails,
else refused (``NotAFinding``) or, under a directory of runs, left out with its reason
(``LeftOut``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.infra.errors import HarnessError, UsageError
from harness.infra.history import RecordedRun, runs_below
from harness.judge import datachecks, trace_check
from harness.judge.audit import AuditResult, audit
from harness.judge.axes import AXES, CLEAN, ERROR, INCOMPLETE, UNSUPPORTED


@dataclass
class LeftOut:
    """A run that is no finding, as the drafts mention it: a build a finding does not
    affect (clean or UNSUPPORTED, with the reason), or a run that proves nothing (ERROR)."""

    run_dir: Path
    why: str
    scenario: str = ""
    version: str = ""
    verdicts: str = ""
    reason: str = ""


class NotAFinding(UsageError):
    """A run the command refuses: no failing axis, or ERROR / INCOMPLETE."""

    def __init__(self, message: str, left: LeftOut | None = None) -> None:
        super().__init__(message)
        self.left = left


@dataclass
class Evidence(RecordedRun):
    """One run, re-judged, with what the draft needs from its directory."""

    result: AuditResult
    scenario_text: str
    scenario_file: str
    minimal: Path | None = None
    shrink: dict[str, Any] | None = None
    checks: list[datachecks.CheckResult] = field(default_factory=list)
    logs: trace_check.TraceLogs | None = None

    @property
    def failing(self) -> list[str]:
        return failing_axes(self.result)


def failing_axes(result: AuditResult) -> list[str]:
    """The axes whose verdict is neither clean nor a verdict that judges nothing."""
    return [a for a in AXES if result.axes[a].verdict not in CLEAN[a]
            and result.axes[a].verdict not in (UNSUPPORTED, ERROR, INCOMPLETE)]



def gather(paths: Sequence[Path]) -> tuple[list[Evidence], list[LeftOut]]:
    """The failing runs among ``paths`` and a note for each run left out. A path that is a
    run directory (it holds run.json) must be a finding, else ``NotAFinding``; under a
    directory of runs, the runs that are not findings are left out with their reason (they
    are the builds a finding does not affect), and at least one must be a finding."""
    found: list[Evidence] = []
    left_out: list[LeftOut] = []
    for path in paths:
        if (path / "run.json").is_file():
            found.append(examine(path))
            continue
        runs = runs_below(path, "finding")
        mine: list[Evidence] = []
        theirs: list[LeftOut] = []
        for run in runs:
            try:
                mine.append(examine(run))
            except NotAFinding as exc:
                theirs.append(exc.left or LeftOut(run, str(exc).removeprefix("finding: ")))
        if not mine:
            raise NotAFinding(f"finding: {path}: none of its {len(runs)} run(s) has a failing "
                              "axis: " + "; ".join(t.why for t in theirs))
        left_out.extend(theirs)
        found.extend(mine)
    return found, left_out


def examine(run_dir: Path) -> Evidence:
    """Re-judge one run directory; ``NotAFinding`` unless an axis fails."""
    if not (run_dir / "run.json").is_file():
        raise UsageError(f"finding: {run_dir} is not a run directory (no run.json in it)")
    try:
        result = audit(run_dir)
        meta = json.loads((run_dir / "run.json").read_text())
        events = _events(run_dir)
    except HarnessError as exc:
        raise UsageError(f"finding: {str(exc).removeprefix('audit: ')}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"finding: {run_dir}: unreadable history ({exc})") from None
    stops = {a.verdict for a in result.axes.values()} & {ERROR, INCOMPLETE}
    if stops:
        stop = INCOMPLETE if INCOMPLETE in stops else ERROR
        why = next(a.reason for a in result.axes.values() if a.verdict == stop)
        what = ("ended in ERROR (a harness failure, not evidence about Kafka: rerun it)"
                if stop == ERROR else "is INCOMPLETE (its history was cut short)")
        raise NotAFinding(f"finding: {run_dir.name} {what}: {why}",
                          LeftOut(run_dir, f"{run_dir.name} {what}: {why}", result.scenario,
                                  result.build, stop, why))
    if not failing_axes(result):
        verdicts = ", ".join(f"{a} {result.axes[a].verdict}" for a in AXES)
        why = f"{run_dir.name} has no failing axis ({verdicts}): nothing to report"
        if len({result.axes[a].verdict for a in AXES}) == 1:
            verdicts = result.axes["release"].verdict
        reason = next((v.reason for v in result.axes.values() if v.reason), "")
        raise NotAFinding(f"finding: {why}", LeftOut(run_dir, why, result.scenario,
                                                       result.build, verdicts, reason))
    ev = Evidence(run_dir, meta, events, result, "", "")
    ev.scenario_text, ev.scenario_file = _scenario_text(run_dir, meta)
    if (run_dir / "minimal.yaml").is_file():
        ev.minimal = run_dir / "minimal.yaml"
        try:
            ev.shrink = json.loads((run_dir / "shrink.json").read_text())
        except (OSError, ValueError):
            ev.shrink = None
    ev.checks = datachecks.run_checks(events)
    return ev


def _events(run_dir: Path) -> list[dict[str, Any]]:
    from harness.infra.history import read_events
    return list(read_events(run_dir))


def _scenario_text(run_dir: Path, meta: Mapping[str, Any]) -> tuple[str, str]:
    """The scenario the run ran (its copy, else the file it names) and the path to give
    `kafka-chaos run`: the named file when it still holds that scenario, else the copy.
    Only its `expect:` declarations (bookkeeping of known verdicts, read last) may have
    changed since: the reproduction is the same."""
    named = (meta.get("scenario") or {}).get("file")
    copy = run_dir / "scenario.yaml"
    text = copy.read_text() if copy.is_file() else ""
    if named and Path(named).is_file() and (
            not text or without_expect(Path(named).read_text()) == without_expect(text)):
        return Path(named).read_text(), str(named)
    return text, str(copy)


def without_expect(text: str) -> str:
    """The scenario as a reproduction: its top-level ``expect:`` block (the harness's own
    bookkeeping of known verdicts) left out, up to the next top-level key (a ``traffic:``
    after it stays)."""
    return re.sub(r"^expect:.*\n(?:(?:[ #-].*)?\n)*", "", text + "\n", flags=re.MULTILINE)
