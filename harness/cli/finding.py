"""`kafka-chaos finding RUN_DIR... [--out FILE]`: a Kafka ticket's first draft from runs
with a failing axis (harness/report/finding/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.infra import progress
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "finding", help="draft a Kafka ticket from runs with a failing axis",
        description="Re-judge each run from its files (as `audit` does) and write the draft "
                    "of a Kafka ticket per scenario: title, affected versions (the builds "
                    "measured), environment, steps to reproduce (the scenario, shrunk when "
                    "the run holds minimal.yaml, and the command), expected (each failing "
                    "axis's rules with their KIP-966 citations), actual (the first violating "
                    "metadata records decoded, the data checks that failed with the records "
                    "named), impact, fix and how it was found. A run with no failing axis, "
                    "or one that ended in ERROR, is refused; under a directory of runs such "
                    "runs are listed as left out.")
    p.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR",
                   help="a run directory, or a directory of run directories")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the draft (markdown) here instead of to stdout")
    p.set_defaults(func=_finding)


def _finding(args: argparse.Namespace) -> int:
    from harness.report.finding import finding_text
    if args.out is not None and args.out.is_dir():
        raise UsageError(f"finding: --out {args.out} is a directory; give a file name")
    text = finding_text(args.paths)
    if args.out is None:
        print(text, end="")
    else:
        args.out.write_text(text)
        progress.say(f"finding: draft written to {args.out}")
    return 0
