"""`kafka-chaos audit RUN_DIR...`: re-judge finished runs from their files alone."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.judges import AXES


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    audit = sub.add_parser("audit", help="re-judge run directories offline (three axes and the "
                                         "controllers' metadata logs)")
    audit.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR",
                       help="a run directory, or a directory of run directories")
    audit.add_argument("--json", type=Path, help="also write every result to this JSON file")
    audit.add_argument("--matrix", type=Path, metavar="FILE",
                       help="also write a scenario x build markdown table of the three axes")
    audit.add_argument("--scenarios", type=Path, metavar="DIR",
                       help="judge with the scenario files of the same name in DIR (today's "
                            "expectations) instead of the copy each run kept")
    audit.set_defaults(func=_audit)


def run_dirs(paths: list[Path]) -> list[Path]:
    """Every run directory named or directly below a named directory; a path that does not
    exist or holds no run is an error naming it."""
    out: list[Path] = []
    for path in paths:
        if (path / "run.json").is_file():
            out.append(path)
            continue
        if not path.is_dir():
            raise UsageError(f"audit: {path} does not exist or is not a directory")
        found = sorted(p for p in path.iterdir() if (p / "run.json").is_file())
        if not found:
            raise UsageError(f"audit: {path} holds no run directory (none with a run.json)")
        out.extend(found)
    return out


def _audit(args: argparse.Namespace) -> int:
    from harness.audit import audit, summary_line
    if args.scenarios is not None and not args.scenarios.is_dir():
        raise UsageError(f"audit: --scenarios {args.scenarios} is not a directory")
    results = [audit(d, scenarios=args.scenarios) for d in run_dirs(args.paths)]
    for r in results:
        print(summary_line(r))
        for axis in r.axes.values():
            if axis.reason and not axis.as_expected:
                print(f"    {axis.axis}: {axis.reason}")
            elif axis.expected is not None:
                print(f"    {axis.axis}: {axis.verdict} as declared ({axis.expected['reason']})")
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in results], indent=1))
    if args.matrix:
        args.matrix.write_text(axes_matrix(results))
    bad = [r for r in results if not r.as_expected]
    print(f"{len(results)} run(s) audited, {len(bad)} not as expected")
    return 1 if bad else 0


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
    return " / ".join(r.axes[a].verdict + ("" if r.axes[a].as_expected else " (!)")
                      for a in AXES)


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
