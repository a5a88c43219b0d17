"""`kafka-chaos report RUNS_DIR... --out DIR [--master URL]`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.infra import progress
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rep = sub.add_parser("report", help="conformance report over run histories (PySpark)")
    rep.add_argument("runs", nargs="+", type=Path, metavar="RUNS_DIR")
    rep.add_argument("--out", type=Path, required=True, help="directory for the report")
    rep.add_argument("--master", help="Spark master URL (default: local[2])")
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from harness.report.build import make_report
    check_out_dir(args.out)
    summary = make_report(args.runs, args.out, args.master)
    for skipped in summary["skipped"]:
        progress.say(f"skipped {skipped['dir']}: {skipped['reason']}")
    progress.say(f"{len(summary['runs'])} runs -> {args.out / 'index.html'}, junit.xml, "
                 f"summary.json in {summary['report_seconds']}s")
    return 0


def check_out_dir(out: Path) -> None:
    """--out must be a directory it can write, checked before Spark starts."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory for index.html, junit.xml "
                         "and summary.json")
    parent = next((p for p in (out, *out.parents) if p.exists()), Path("."))
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--out {out}: {parent} is not writable")
