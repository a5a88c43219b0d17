"""Explorer benchmark: states per second, and the time to exhaust every schedule of
the default step alphabet for 3 brokers, min ISR 2, depth 8.

    python bench/explorer.py                       # kip966, kafka-4.1, pre-elr at depth 8
    python bench/explorer.py --profiles kip966 --depth 6

Prints one line per profile and a Markdown table to paste into RESULTS-explorer.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reference.search.explorer import default_moves, explore  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["kip966", "kafka-4.1", "pre-elr"])
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--min-isr", type=int, default=2)
    ap.add_argument("--depth", type=int, default=8)
    args = ap.parse_args(argv)
    ids = tuple(range(1, args.brokers + 1))
    print(f"python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs; alphabet: {len(default_moves(ids))} moves "
          f"(produce acks=all, isolate/kill/kill+lose/stop/restart per broker, heal)")
    rows = []
    for prof in args.profiles:
        t0 = time.perf_counter()
        r = explore(prof, brokers=args.brokers, min_isr=args.min_isr, depth=args.depth)
        secs = time.perf_counter() - t0
        first = r.counterexamples[0] if r.counterexamples else None
        cx = ", ".join(f"{c.invariant}@{len(c.moves)}" for c in r.counterexamples) or "none"
        rows.append((prof, r.states, r.transitions, secs, r.states / secs, cx))
        print(f"{prof}: {r.states} states, {r.transitions} transitions, {secs:.1f} s, "
              f"{r.states / secs:.0f} states/s, levels {r.levels}, counterexamples: {cx}"
              + (f" (shortest: {len(first.moves)} moves)" if first else ""), flush=True)
    print("\n| profile | states | transitions | time (s) | states/s | counterexamples (moves) |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for prof, st, tr, secs, rate, cx in rows:
        print(f"| {prof} | {st} | {tr} | {secs:.1f} | {rate:.0f} | {cx} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
