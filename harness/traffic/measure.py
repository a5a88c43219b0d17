"""Time and memory of the traffic checks on a synthetic history (docs/TRAFFIC.md
"Measured"): `python -m harness.traffic.measure [--events N] [--dir DIR] [--no-spark]`.

Writes a history of about N events (default 1,000,000; clean, 3 consumers), then checks it
in this process twice (once timed, once under tracemalloc for the peak) and once on Spark
(local[2], the session's start-up timed apart), and prints one JSON object with the
machine and its load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.infra import machine
from harness.traffic.checks import TrafficVerdict, check_file
from harness.traffic.synthetic import Shape, write_synthetic


def main(argv: list[str] | None = None) -> None:
    options = _parser().parse_args(argv)
    run_dir = Path(options.dir or tempfile.mkdtemp(prefix="kafka-chaos-traffic-"))
    result: dict[str, Any] = {"machine": machine.describe(), "load_before": os.getloadavg()}
    started = time.perf_counter()
    path = write_synthetic(run_dir, Shape.about(options.events))
    result["write_s"] = round(time.perf_counter() - started, 1)
    result["file_mb"] = round(path.stat().st_size / 1e6, 1)
    result["in_process"] = _in_process(path)
    if not options.no_spark:
        result["spark"] = _on_spark(path)
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness.traffic.measure")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--dir", help="an empty directory for traffic.jsonl (default: a new one)")
    parser.add_argument("--no-spark", action="store_true")
    return parser


def _timed(check: Callable[[], TrafficVerdict]) -> tuple[float, TrafficVerdict]:
    started = time.perf_counter()
    verdict = check()
    return round(time.perf_counter() - started, 1), verdict


def _in_process(path: Path) -> dict[str, Any]:
    seconds, verdict = _timed(lambda: check_file(path))
    tracemalloc.start()
    try:
        check_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ids = verdict.by_name()["lost_writes"].counts["acked"]
    return {"events": verdict.events, "ids": ids, "seconds": seconds,
            "peak_mib": round(peak / 2**20, 1), "bytes_per_id": round(peak / ids),
            "ok": all(s.ok for s in verdict.summaries)}


def _on_spark(path: Path) -> dict[str, Any]:
    from harness.infra.spark import session
    from harness.traffic.spark import check_on_spark
    started = time.perf_counter()
    spark = session(app="kafka-chaos-traffic-measure")
    start_s = round(time.perf_counter() - started, 1)
    seconds, verdict = _timed(lambda: check_on_spark(spark, path))
    same = check_file(path).summaries == verdict.summaries
    return {"session_s": start_s, "seconds": seconds, "master": spark.sparkContext.master,
            "same_as_in_process": same}


if __name__ == "__main__":
    main()
