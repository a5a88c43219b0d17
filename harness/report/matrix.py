"""The scenario x build table of the three judging axes, in markdown (`kafka-chaos
audit --matrix`, `kafka-chaos matrix`)."""

from __future__ import annotations

import re
from typing import Any

from harness.judge.axes import AXES


def axes_matrix(results: list[Any]) -> str:
    """scenario x build markdown table of the three axes (the newest run per cell), then a
    reason line for every cell that is not clean on every axis."""
    cells: dict[tuple[str, str], Any] = {}
    for r in sorted(results, key=lambda r: r.run_dir.name):
        cells[(r.scenario, r.build)] = r
    builds = sorted({b for _, b in cells}, key=_version_key)
    names = sorted({s for s, _ in cells})
    lines = ["| scenario | " + " | ".join(builds) + " |", "|---" * (len(builds) + 1) + "|"]
    notes: list[str] = []
    for name in names:
        row = []
        for build in builds:
            r = cells.get((name, build))
            row.append("" if r is None else _cell(r))
            if r is not None:
                notes += _cell_notes(name, build, r)
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines + [""] + notes) + "\n"


def _version_key(version: str) -> tuple[tuple[int, ...], str]:
    """Releases in version order; a local build's odd version string sorts by its digits."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3]), version


def _cell(r: Any) -> str:
    if all(r.axes[a].verdict == "UNSUPPORTED" for a in AXES):
        return "UNSUPPORTED"
    axes = " / ".join(r.axes[a].verdict + ("" if r.axes[a].as_expected else " (!)")
                      for a in AXES)
    head = getattr(r, "headline", None)
    # A failure the scenario declares says what it is (KNOWN BUG name, DEVIATION name, AS
    # DECLARED) before the axes, so the cell never reads as a plain pass.
    if head is not None and head.label:
        return f"**{head.short}**: {axes}"
    return axes


def _cell_notes(name: str, build: str, r: Any) -> list[str]:
    if all(r.axes[a].verdict == "UNSUPPORTED" for a in AXES):
        return [f"- {build} × {name}: UNSUPPORTED: {r.axes['release'].reason}"]
    out = []
    for axis in AXES:
        v = r.axes[axis]
        if v.verdict in ("CONFORMS", "SAFE") or (v.verdict == "UNSUPPORTED" and axis != "release"):
            continue
        why = v.expected["reason"] if v.expected else v.reason
        tag = "declared" if v.expected and v.as_expected else "NOT EXPECTED" \
            if not v.as_expected else "clean"
        out.append(f"- {build} × {name}: {axis} {v.verdict} ({tag}): {why}")
    return out
