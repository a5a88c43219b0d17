"""`kafka-chaos report RUNS_DIR... --out DIR [--master URL]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import progress


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rep = sub.add_parser("report", help="conformance report over run histories (PySpark)")
    rep.add_argument("runs", nargs="+", type=Path, metavar="RUNS_DIR")
    rep.add_argument("--out", type=Path, required=True, help="directory for the report")
    rep.add_argument("--master", help="Spark master URL (default: local[2])")
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from harness.report.build import make_report
    summary = make_report(args.runs, args.out, args.master)
    for skipped in summary["skipped"]:
        progress.say(f"skipped {skipped['dir']}: {skipped['reason']}")
    progress.say(f"{len(summary['runs'])} runs -> {args.out / 'index.html'}, junit.xml, "
                 f"summary.json in {summary['report_seconds']}s")
    return 0
