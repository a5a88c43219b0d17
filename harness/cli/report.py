"""`kafka-chaos report RUNS_DIR... --out DIR [--master URL]` (the conformance report) and
`kafka-chaos report --campaign DIR [--out DIR] [--master URL]` (a hunt campaign's report)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.infra import progress
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rep = sub.add_parser("report", help="conformance report over run histories, or a hunt "
                                        "campaign's report (--campaign DIR) (PySpark)")
    rep.add_argument("runs", nargs="*", type=Path, metavar="RUNS_DIR")
    rep.add_argument("--out", type=Path, help="directory for the report (required with "
                                              "RUNS_DIR; with --campaign default the campaign "
                                              "directory)")
    rep.add_argument("--campaign", type=Path, metavar="DIR",
                     help="a `kafka-chaos hunt` campaign directory: report.html, report.md "
                          "and report.json (coverage over time, signatures with their shrunk "
                          "scenarios and class, runs per hour, what was never reached)")
    rep.add_argument("--diff", type=Path, action="append", metavar="DIR",
                     help="with --campaign: a `kafka-chaos diff` run directory, or a "
                          "directory of them, whose findings the report lists by class "
                          "beside those under the campaign's own DIR/diff (repeatable)")
    rep.add_argument("--master", help="Spark master URL (default: local[2])")
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from harness.report.build import make_report
    if args.campaign is not None:
        return _campaign(args)
    if not args.runs or args.out is None:
        raise UsageError("report: give RUNS_DIR... --out DIR (the conformance report of run "
                         "histories) or --campaign DIR (a hunt campaign's report)")
    if args.diff:
        raise UsageError("report: --diff goes with --campaign DIR (the differential "
                         "findings of a hunt campaign's report)")
    check_out_dir(args.out)
    summary = make_report(args.runs, args.out, args.master)
    for skipped in summary["skipped"]:
        progress.say(f"skipped {skipped['dir']}: {skipped['reason']}")
    progress.say(f"{len(summary['runs'])} runs -> {args.out / 'index.html'}, junit.xml, "
                 f"summary.json in {summary['report_seconds']}s")
    return 0


def _campaign(args: argparse.Namespace) -> int:
    from harness.report.campaign import make_campaign_report
    if args.runs:
        raise UsageError(f"report --campaign {args.campaign}: takes no RUNS_DIR (got "
                         f"{', '.join(map(str, args.runs))}): the campaign's runs are read from "
                         "its runs/ directory; give one of the two forms")
    out: Path = args.out or args.campaign
    check_out_dir(out)
    for d in args.diff or []:
        if not d.is_dir():
            raise UsageError(f"report --campaign {args.campaign} --diff {d}: no such "
                             "directory; give a `kafka-chaos diff` run directory "
                             "(it holds summary.json and findings/) or a directory of them")
    report = make_campaign_report(args.campaign, out, args.master, diff_dirs=args.diff)
    for b in report["builds"]:
        progress.say(f"campaign report {b['build']}: {b['runs']} runs, {b['runs_per_hour']} "
                     f"runs/h, transitions {b['transitions']}/{b['transitions_total']}, rules "
                     f"{b['rules']}/{b['rules_total']}, {len(b['signatures'])} signature(s)")
    for c in report.get("diff") or []:
        progress.say(f"campaign report diff {c['build']} ({c['dir']}): "
                     f"{len(c['findings'])} signature(s) by class: "
                     + (", ".join(f"{k} {n}" for k, n in c["classes"].items()) or "none"))
    progress.say(f"campaign report -> {out / 'report.html'}, report.md, report.json in "
                 f"{report['report_seconds']}s")
    return 0


def check_out_dir(out: Path) -> None:
    """--out must be a directory it can write, checked before Spark starts."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory for index.html, junit.xml "
                         "and summary.json")
    parent = next((p for p in (out, *out.parents) if p.exists()), Path("."))
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--out {out}: {parent} is not writable")
