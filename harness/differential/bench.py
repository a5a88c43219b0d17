"""Benchmark of the differential driver per build: `python -m harness.differential.bench
[--versions 3.6.2,4.3.1] [--events N]`; a Markdown table on stdout (bench/RESULTS-diff.md).

Per build, with the driver already compiled (the cache warm):
- start: from ControllerDriver.for_build (cache look-up included) to the first event's
  answer (3 settings brokers registered and unfenced, one topic created); median and
  worst of --starts runs;
- after a warm-up of --warmup events, on the same JVM: pipelined (send_many of --events
  events of workload.cycle), lockstep (the same events one send at a time, each answer
  read before the next event is written), and random (workload.RandomEvents, lockstep:
  each event chosen from the previous answer's state, as a model comparison would).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import time
from collections.abc import Sequence

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.driver import ControllerDriver, compile_driver
from harness.differential.protocol import Settings
from harness.differential.workload import RandomEvents, cycle
from harness.infra import machine


def start_to_first_event(build: builds.Build) -> float:
    t0 = time.monotonic()
    with ControllerDriver.for_build(build, Settings(brokers=(1, 2, 3))) as driver:
        answer = driver.send(p.create_topic("a", [[1, 2, 3]]))
        elapsed = time.monotonic() - t0
        assert answer.ok, answer.error
    return elapsed


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) the process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Clock:
    """Wall time, and CPU time of the driver and of this process, over a stretch."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.wall = time.monotonic()
        self.java = cpu_seconds(pid)
        self.python = time.process_time()

    def rates(self, events: int) -> tuple[float, float]:
        """(events per wall second, events per CPU second of driver + harness)."""
        wall = time.monotonic() - self.wall
        cpu = cpu_seconds(self.pid) - self.java + time.process_time() - self.python
        return events / wall, events / max(cpu, 1e-9)


def throughput(build: builds.Build, events: int, warmup: int) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    with ControllerDriver.for_build(build, Settings(brokers=(1, 2, 3, 4, 5), min_isr=2)) as d:
        d.send(p.create_topic("a", [[1, 2, 3]]))
        d.send_many(list(itertools.islice(cycle("a", [1, 2, 3]), warmup)))
        batch = list(itertools.islice(cycle("a", [1, 2, 3]), events))
        clock = Clock(d.pid)
        answers = d.send_many(batch)
        out["pipelined"] = clock.rates(events)
        assert all(a.ok for a in answers), [a.error for a in answers if not a.ok][:3]
        lock = batch[: events // 2]
        clock = Clock(d.pid)
        for event in lock:
            d.send(event)
        out["lockstep"] = clock.rates(len(lock))
        gen = RandomEvents(random.Random(1), [1, 2, 3, 4, 5], ["r0", "r1", "r2"])
        last = d.send_many(gen.setup())[-1]
        n = events // 5
        clock = Clock(d.pid)
        for _ in range(n):
            last = d.send(gen.next(last.partitions, last.brokers))
        out["random"] = clock.rates(n)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", default=",".join(builds.DEFAULT_MATRIX_VERSIONS))
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args(argv)
    m = machine.describe()
    print(f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at start")
    print()
    print("Events per second of wall time, and (in brackets) per CPU second of driver and "
          "harness together: the machine's other load cannot lower the second.")
    print()
    print("| build | start to first event, median (worst) | pipelined ev/s | lockstep ev/s "
          "| random lockstep ev/s |")
    print("|---|---|---|---|---|")
    for version in args.versions.split(","):
        build = builds.from_maven(version)
        compile_driver(build)  # the cache warm: compiled before anything is timed
        starts = [start_to_first_event(build) for _ in range(args.starts)]
        speed = throughput(build, args.events, args.warmup)
        cells = " | ".join(f"{wall:,.0f} ({cpu:,.0f})" for wall, cpu in
                           (speed["pipelined"], speed["lockstep"], speed["random"]))
        print(f"| {version} | {statistics.median(starts):.2f} s ({max(starts):.2f} s) "
              f"| {cells} |", flush=True)
    print()
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
