"""Scenario benchmarks (issue 4): wall time per scenario end to end and verdict counts over
repeated runs (false divergences on a conforming build). Run:
    python bench/scenarios.py [--kafka-version V] [--repeat N] [SCENARIO...]
Prints a markdown block; results are kept in bench/RESULTS-scenarios.md.
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
from harness.runner import Runner
from harness.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenarios", nargs="*", type=Path)
    ap.add_argument("--kafka-version")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    paths = args.scenarios or sorted((ROOT / "fixtures" / "scenarios").glob("*.yaml"))
    scenarios = [load_scenario(p) for p in paths]
    build = builds.resolve(args.kafka_version)
    rows = []
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory() as runs:
        for sc in scenarios:
            verdicts: Counter[str] = Counter()
            walls = []
            reasons = set()
            for _ in range(args.repeat):
                result = Runner(sc, build, runs_dir=Path(runs)).run()
                verdicts[result.verdict] += 1
                walls.append(result.wall_s)
                if result.verdict not in ("CONFORMS", "UNSUPPORTED"):
                    reasons.add(result.reason[:120])
            rows.append((sc.name, verdicts, walls, reasons))
    total = time.monotonic() - t_all
    print(f"### Kafka {build.version}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
          f"{args.repeat} runs per scenario, local backend")
    print("| scenario | runs | verdicts | median wall s | max wall s |")
    print("|---|---|---|---|---|")
    for name, verdicts, walls, reasons in rows:
        counts = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
        print(f"| {name} | {sum(verdicts.values())} | {counts} | "
              f"{statistics.median(walls):.1f} | {max(walls):.1f} |")
        for reason in sorted(reasons):
            print(f"|  | | {reason} | | |")
    print(f"\nAll {len(rows)} scenarios x {args.repeat}: {total / 60:.1f} min "
          f"({total / args.repeat / 60:.1f} min per pass of the suite)")


if __name__ == "__main__":
    main()
