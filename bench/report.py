"""Report benchmark (issue 6): generated histories with ~10 million produce+consume events
through the whole report in Spark local mode. Run: python bench/report.py [WORKDIR]
Prints records/s through the data checks, peak RSS (driver JVM, Python workers, driver
Python), wall time, the time of the Spark session and of the judging job, and the machine's
load average while it ran (the machine may be shared: compare runs at similar load).
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


def _descendants_rss_kb() -> tuple[int, int]:
    """(JVM, Python workers) resident memory of every process below this one, in KiB."""
    parent: dict[str, str] = {}
    rss: dict[str, tuple[str, int]] = {}
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            parent[proc.name] = stat.rsplit(")", 1)[1].split()[1]
            kb = next(int(line.split()[1]) for line in (proc / "status").read_text().splitlines()
                      if line.startswith("VmRSS:"))
            rss[proc.name] = ((proc / "comm").read_text().strip(), kb)
        except (OSError, IndexError, ValueError, StopIteration):
            continue
    me, jvm, python = str(os.getpid()), 0, 0
    for pid, (comm, kb) in rss.items():
        up = parent.get(pid)
        while up is not None and up != me:
            up = parent.get(up)
        if up == me:
            if comm == "java":
                jvm += kb
            else:
                python += kb
    return jvm, python


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/kafka-chaos-report-bench")
    runs = work / "runs"
    if not (runs / f"gen-1-{RUNS - 1:04d}" / "run.json").exists():
        t0 = time.monotonic()
        for i in range(RUNS):
            gen_histories.write_run(runs, i, RECORDS, seed=1)
        print(f"generated {RUNS} runs x {RECORDS} records in {time.monotonic() - t0:.0f}s")
    peak = [0, 0]
    loads: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            jvm, workers = _descendants_rss_kb()
            peak[0], peak[1] = max(peak[0], jvm), max(peak[1], workers)
            loads.append(os.getloadavg()[0])

    phases: dict[str, float] = {}
    for name in ("session", "judge_runs"):
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
    print(f"- peak RSS: driver JVM {peak[0] / 1024:.0f} MiB, Python workers (together) "
          f"{peak[1] / 1024:.0f} MiB, driver Python {py_rss / 1024:.0f} MiB")
    print(f"- phases: JVM + Spark session {phases.get('session', 0):.1f} s, judging the runs "
          f"(read, check, collect) {phases.get('judge_runs', 0):.1f} s, rest (discovery, "
          f"page, files) {wall - sum(phases.values()):.1f} s")
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
