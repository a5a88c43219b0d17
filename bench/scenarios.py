"""Scenario benchmarks (issue 4): wall time per scenario end to end and verdict counts over
repeated runs (false divergences on a conforming build). Run:
    python bench/scenarios.py [--kafka-version V] [--repeat N] [--runs-dir DIR] [SCENARIO...]
Prints a markdown block, one row as each scenario finishes; results are kept in
bench/RESULTS-scenarios.md. Histories stay under --runs-dir (default: a temporary
directory), so `kafka-chaos report DIR` can re-judge them and show flakiness per scenario.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness import builds
from harness.runner import CONFORMS, UNSUPPORTED, Runner
from harness.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="*", type=Path)
    ap.add_argument("--kafka-version")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs-dir", type=Path, help="keep the run histories here")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    paths = args.scenarios or sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
    scenarios = [load_scenario(p) for p in paths]  # every file validated before any run
    build = builds.resolve(args.kafka_version)
    if args.runs_dir:
        args.runs_dir.mkdir(parents=True, exist_ok=True)
        _bench(scenarios, build, args.repeat, args.runs_dir)
    else:
        with tempfile.TemporaryDirectory() as runs:
            _bench(scenarios, build, args.repeat, Path(runs))


def _bench(scenarios: list, build: builds.Build, repeat: int, runs: Path) -> None:
    print(f"### Kafka {build.version}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
          f"{repeat} runs per scenario, local backend, histories in {runs}", flush=True)
    print("| scenario | runs | verdicts | median wall s | max wall s |")
    print("|---|---|---|---|---|", flush=True)
    t_all = time.monotonic()
    bad = 0
    for sc in scenarios:
        verdicts: Counter[str] = Counter()
        walls, reasons = [], set()
        for _ in range(repeat):
            result = Runner(sc, build, runs_dir=runs).run()
            verdicts[result.verdict] += 1
            walls.append(result.wall_s)
            if result.verdict not in (CONFORMS, UNSUPPORTED):
                reasons.add(f"{result.run_dir.name}: {result.reason[:160]}")
                bad += 1
            if result.verdict == UNSUPPORTED:
                break  # decided before any cluster starts: the same every time
        counts = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
        print(f"| {sc.name} | {sum(verdicts.values())} | {counts} | "
              f"{statistics.median(walls):.1f} | {max(walls):.1f} |", flush=True)
        for reason in sorted(reasons):
            print(f"|  | | {reason} | | |", flush=True)
    total = time.monotonic() - t_all
    print(f"\nAll {len(scenarios)} scenarios x {repeat}: {total / 60:.1f} min; "
          f"non-conforming runs of runnable scenarios: {bad}", flush=True)


if __name__ == "__main__":
    main()
