"""Recorded scenario cells judged again with today's judges when the report is written, as
`audit` does for one run directory: a judge fixed since the run (a model gap closed, a client
behaviour cited, e.g. librdkafka's epoch-bump duplicates) must not leave a regression in the
answer that today's code would not give. Only cells recorded as not clean are judged again
(failing or declared: those the answer could call a regression or a fix); a clean cell stands
as recorded. A re-judged cell keeps what it was recorded as under ``rejudged``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.certify import compare
from harness.judge.axes import CLEAN, UNSUPPORTED

Audit = Callable[[Path], Any]


def declared_failures(axes: Iterable[Any]) -> tuple[list[str], list[str]]:
    """(known bugs, deviations) the scenario declared and the run met, from its axes."""
    bugs, devs = [], []
    for ax in axes:
        e = ax.expected
        if e and ax.as_expected and ax.verdict not in CLEAN.get(ax.axis, ()) and \
                ax.verdict != UNSUPPORTED:
            bugs += [e["known_bug"]] if e.get("known_bug") else []
            devs += [e["deviation"]] if e.get("deviation") else []
    return sorted(set(bugs)), sorted(set(devs))


def _audit(run_dir: Path) -> Any:
    from harness.judge.audit import audit
    return audit(run_dir)


def cell(c: Mapping[str, Any], audit: Audit = _audit) -> dict[str, Any]:
    """The cell as today's judges say it, or as recorded (clean, no run directory here, or a
    run the judges cannot read again)."""
    status = compare.cell_status(c["verdict"], c.get("label", ""))
    run_dir = Path(str(c.get("run_dir") or ""))
    if status not in (compare.FAILING, compare.DECLARED) or not c.get("run_dir") or \
            not run_dir.is_dir():
        return dict(c)
    try:
        result = audit(run_dir)
    except Exception:  # noqa: BLE001 - a report is written whatever one old run holds
        return dict(c)
    h = result.headline
    if (h.verdict, h.label) == (c["verdict"], c.get("label", "")):
        return dict(c)
    from harness.search.hunt import kip_of_run
    bugs, devs = declared_failures(result.axes.values())
    _, adopted = kip_of_run(run_dir)
    return {**c, "verdict": h.verdict, "label": h.label, "shown": h.short,
            "text": f"{h.text} (re-judged with today's judges; recorded: "
                    f"{c.get('text') or c['verdict']})",
            "known_bugs": bugs, "deviations": sorted(set(devs) | set(adopted)),
            "rejudged": {"verdict": c["verdict"], "label": c.get("label", ""),
                         "text": c.get("text")}}
