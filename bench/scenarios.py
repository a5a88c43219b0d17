"""Scenario benchmarks (issue 4): wall time per scenario end to end and verdict counts over
repeated runs (false divergences on a conforming build). Run:
    python bench/scenarios.py [--kafka-version V] [--repeat N] [--max-minutes M]
                              [--runs-dir DIR] [--out FILE] [SCENARIO...]
Runs in passes (every scenario once per pass), so a time-boxed run still covers every
scenario equally; after each pass the markdown table so far is rewritten to --out (and
printed at the end). Histories stay under --runs-dir (default: a temporary directory), so
`kafka-chaos report DIR` can re-judge them and show flakiness per scenario.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.cluster import builds
from harness.judge.axes import AXES
from harness.judge.compare import UNSUPPORTED
from harness.run.runner import Runner
from harness.scenario.loader import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="*", type=Path)
    ap.add_argument("--kafka-version")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the scenarios")
    ap.add_argument("--max-minutes", type=float, help="start no new pass after this long")
    ap.add_argument("--runs-dir", type=Path, help="keep the run histories here")
    ap.add_argument("--out", type=Path, help="rewrite the table here after every pass")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    paths = args.scenarios or sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
    scenarios = [load_scenario(p) for p in paths]  # every file validated before any run
    build = builds.resolve(args.kafka_version)
    if args.runs_dir:
        args.runs_dir.mkdir(parents=True, exist_ok=True)
        table = _bench(scenarios, build, args, args.runs_dir)
    else:
        with tempfile.TemporaryDirectory() as runs:
            table = _bench(scenarios, build, args, Path(runs))
    print(table)


class Tally:
    def __init__(self) -> None:
        self.verdicts: dict[str, Counter[str]] = defaultdict(Counter)
        self.walls: dict[str, list[float]] = defaultdict(list)
        self.reasons: dict[str, list[str]] = defaultdict(list)

    def add(self, name: str, result: Any) -> None:
        self.verdicts[name][_axes(result)] += 1
        self.walls[name].append(result.wall_s)
        if result.verdict != UNSUPPORTED and not result.as_expected:
            self.reasons[name].append(f"{result.run_dir.name}: {_why(result)[:160]}")

    def table(self, header: str, passes: int, minutes: float) -> str:
        lines = [header,
                 "| scenario | runs | release / kip / safety | median wall s | max wall s |",
                 "|---|---|---|---|---|"]
        for name, verdicts in self.verdicts.items():
            counts = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
            walls = self.walls[name]
            lines.append(f"| {name} | {sum(verdicts.values())} | {counts} | "
                         f"{statistics.median(walls):.1f} | {max(walls):.1f} |")
            lines += [f"|  | | {r} | | |" for r in self.reasons[name]]
        bad = sum(len(r) for r in self.reasons.values())
        lines.append(f"\n{passes} passes in {minutes:.1f} min; runs of runnable scenarios "
                     f"with an axis neither clean nor as declared (or ERROR): {bad}")
        return "\n".join(lines)


def _axes(result: Any) -> str:
    """The run's three axes, '(declared)' when a non-clean one is as the scenario says."""
    if not result.axes:
        return str(result.verdict)
    cells = "/".join(result.axes[a].verdict for a in AXES)
    declared = any(a.expected is not None for a in result.axes.values())
    return f"{cells} (declared)" if declared and result.as_expected else cells


def _why(result: Any) -> str:
    bad = [a for a in result.axes.values() if not a.as_expected]
    return "; ".join(f"{a.axis}: {a.reason}" for a in bad) or str(result.reason)


def _bench(scenarios: list[Any], build: builds.Build, args: argparse.Namespace,
           runs: Path) -> str:
    header = (f"### Kafka {build.version}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} "
              f"cores, local backend, histories in {runs}")
    tally, t0, passes = Tally(), time.monotonic(), 0
    unsupported: set[str] = set()
    table = ""
    while passes < args.repeat:
        if args.max_minutes and time.monotonic() - t0 > args.max_minutes * 60:
            break
        for sc in scenarios:
            if sc.name in unsupported:
                continue  # decided before any cluster starts: the same every pass
            result = Runner(sc, build, runs_dir=runs).run()
            tally.add(sc.name, result)
            if result.verdict == UNSUPPORTED:
                unsupported.add(sc.name)
        passes += 1
        table = tally.table(header, passes, (time.monotonic() - t0) / 60)
        print(f"pass {passes}/{args.repeat} done", file=sys.stderr, flush=True)
        if args.out:
            args.out.write_text(table + "\n")
    return table


if __name__ == "__main__":
    main()
