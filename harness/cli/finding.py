"""`kafka-chaos finding PATH... [--out FILE]`: a Kafka ticket's first draft from runs
with a failing axis, or from differential findings (harness/report/finding/, diff.py)."""

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
                    "runs are listed as left out. A differential finding (the "
                    "findings/NN-<signature>.json a `kafka-chaos diff` campaign writes), or a "
                    "diff campaign's directory (each of its findings), gives a draft per "
                    "finding class key (axis:name:op): its class and label (known bug or "
                    "not triaged), the builds, the session's settings, the events and the "
                    "`kafka-chaos diff --replay` command, what must hold (with the KIP-966 "
                    "clause where the class has one) and what the build did.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="a run directory, or a directory of run directories; or a diff "
                        "finding file, or a diff campaign directory")
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
