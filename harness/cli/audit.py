"""`kafka-chaos audit RUN_DIR...`: re-judge finished runs from their files alone."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.options import run_dirs
from harness.infra.errors import UsageError
from harness.report.matrix import axes_matrix


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


def _audit(args: argparse.Namespace) -> int:
    from harness.judge.audit import audit, summary_line
    from harness.judge.axes import fields_note
    if args.scenarios is not None and not args.scenarios.is_dir():
        raise UsageError(f"audit: --scenarios {args.scenarios} is not a directory")
    results = [audit(d, scenarios=args.scenarios) for d in run_dirs(args.paths, "audit")]
    for r in results:
        print(summary_line(r))
        fields = next((a.fields for a in r.axes.values() if a.fields is not None), None)
        if fields is not None:
            print(f"    {fields_note(fields)}")
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
