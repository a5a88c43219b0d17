"""Report benchmark (issue 6): generated histories with ~10 million produce+consume events
through the whole report in Spark local mode. Run: python bench/report.py [WORKDIR]
Prints records/s through the data checks, peak RSS (driver JVM + Python), wall time, the
time of the two Spark phases and the machine's load average while it ran (the machine may
be shared: compare runs at similar load).
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_histories  # noqa: E402

from harness.report import spark_jobs  # noqa: E402
from harness.report.build import make_report  # noqa: E402

RUNS, RECORDS = 20, 250_000  # 5M produce + 5M consume (+ 5M acks) events


def _children_rss_kb() -> int:
    total = 0
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[1] != me:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/kafka-chaos-report-bench")
    runs = work / "runs"
    if not (runs / f"gen-1-{RUNS - 1:04d}" / "run.json").exists():
        t0 = time.monotonic()
        for i in range(RUNS):
            gen_histories.write_run(runs, i, RECORDS, seed=1)
        print(f"generated {RUNS} runs x {RECORDS} records in {time.monotonic() - t0:.0f}s")
    peak = [0]
    loads: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            peak[0] = max(peak[0], _children_rss_kb())
            loads.append(os.getloadavg()[0])

    phases: dict[str, float] = {}
    for name in ("session", "read_events", "collect_facts"):
        _time_phase(name, phases)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    load_before = os.getloadavg()
    t0 = time.monotonic()
    summary = make_report([runs], work / "out")
    wall = time.monotonic() - t0
    stop.set()
    py_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    events = sum(r["events"] for r in summary["runs"])
    records = 2 * RUNS * RECORDS
    print(f"### {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, Spark local[2]")
    print(f"- histories: {RUNS} runs, {events:,} events ({records:,} produce+consume), "
          f"{sum(f.stat().st_size for f in runs.rglob('events.jsonl')) / 1e9:.2f} GB")
    print(f"- whole report: {wall:.1f} s; {records / wall:,.0f} produce+consume records/s "
          f"({events / wall:,.0f} events/s)")
    print(f"- peak RSS: driver JVM {peak[0] / 1024:.0f} MiB, Python {py_rss / 1024:.0f} MiB")
    print(f"- phases: JVM + Spark session {phases.get('session', 0):.1f} s, parse + partition + "
          f"cache {phases.get('read_events', 0):.1f} s, checks + timelines "
          f"{phases.get('collect_facts', 0):.1f} s, rest (discovery, page, files) "
          f"{wall - sum(phases.values()):.1f} s")
    mean = sum(loads) / max(len(loads), 1)
    print(f"- load average (1 min): {load_before[0]:.2f} before, mean {mean:.2f} / max "
          f"{max(loads, default=0):.2f} during (sampled every 0.5 s), {os.getloadavg()[0]:.2f} "
          f"after, on {os.cpu_count()} cores")


def _time_phase(name: str, phases: dict[str, float]) -> None:
    inner = getattr(spark_jobs, name)

    def timed(*args: object, **kwargs: object) -> object:
        t0 = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + time.monotonic() - t0

    setattr(spark_jobs, name, timed)


if __name__ == "__main__":
    main()
