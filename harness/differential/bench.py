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

``--campaign N`` instead: a `kafka-chaos diff` campaign (the model and every oracle on,
``--seed``, ``--lanes``, no shrinking) stopped after N events, then the same batches of
events sent to a fresh driver alone (no model, no comparison) in the same run; per part:
the driver's JVM (CPU), the protocol (encoding, pipes, decoding, in this process), the
model (``apply``), the comparison (the rest of ``Comparator.step``), and the rest of the
harness (the generator, the lanes' logs, findings); their ratio to the driver alone
(issue 44 item 3). JVM starts are counted apart.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.driver import ControllerDriver, compile_driver, cpu_seconds
from harness.differential.protocol import Settings
from harness.differential.workload import RandomEvents, cycle
from harness.infra import machine

if TYPE_CHECKING:
    from harness.differential.campaign import Session


def start_to_first_event(build: builds.Build) -> float:
    t0 = time.monotonic()
    with ControllerDriver.for_build(build, Settings(brokers=(1, 2, 3))) as driver:
        answer = driver.send(p.create_topic("a", [[1, 2, 3]]))
        elapsed = time.monotonic() - t0
        assert answer.ok, answer.error
    return elapsed


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


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def campaign_parts(build: builds.Build, events: int, seed: int, lanes: int,
                   out_dir: Path) -> list[str]:
    """A campaign of ``events`` events (the model and oracles on), then the same batches on
    the driver alone; Markdown lines, per part."""
    from harness.differential.campaign import Campaign, Config
    from harness.differential.campaign.session import Session as _Session
    from harness.differential.compare import Comparator

    class Recorded(Campaign):
        sessions: list[tuple[_Session, list[list[dict[str, Any]]]]]

        def _compare(self, s: Session, events: Sequence[dict[str, Any]],
                     answers: Sequence[p.Answer], logs: list[list[dict[str, Any]]],
                     t0: float) -> None:
            if not self.sessions or self.sessions[-1][0] is not s:
                self.sessions.append((s, []))
            self.sessions[-1][1].append(list(events))
            super()._compare(s, events, answers, logs, t0)

    Comparator.timed = True
    cfg = Config(seed=seed, budget_s=24 * 3600.0, lanes=lanes, shrink=False,
                 elr_both=build.features.elr, max_events=events)
    c = Recorded(build, cfg, out_dir, say=lambda _: None)
    c.sessions = []
    load0 = _load()
    c.run()
    st = c.stats
    start_wall = st.start_seconds
    start_cpu = sum(s.start_cpu_s for s, _ in c.sessions)
    drivers = list({id(s.driver): s.driver for s, _ in c.sessions}.values())
    part = {k: sum(d.timing[k] for d in drivers) for k in ("wait", "protocol")}
    part |= {k: sum(s.comparator.timing[k] for s, _ in c.sessions) for k in ("model", "compare")}
    wall = st.seconds - start_wall
    java = st.driver_cpu_s - start_cpu
    python = st.harness_cpu_s
    rest = max(0.0, python - part["protocol"] - part["model"] - part["compare"])
    n = st.events
    # The driver alone: the same batches, in sessions as the campaign's (one JVM, a new
    # session in it for each), no model.
    alone_wall = alone_java = alone_py = 0.0
    d = ControllerDriver.for_build(build, c.sessions[0][0].settings)
    try:
        for n_session, (s, batches) in enumerate(c.sessions):
            if n_session == 0:
                d.start()
            else:
                d.restart(s.settings)
            clock = Clock(d.pid)
            for batch in batches:
                d.send_many(batch)
            alone_wall += time.monotonic() - clock.wall
            alone_java += cpu_seconds(d.pid) - clock.java
            alone_py += time.process_time() - clock.python
        alone_proto = d.timing["protocol"]
    finally:
        d.close()
    load1 = _load()

    def us(x: float) -> str:
        return f"{x / n * 1e6:,.0f} us"
    full_cpu = java + python
    alone_cpu = alone_java + alone_py
    return [
        f"Kafka {build.version}, seed {seed}, {lanes} lanes, {n:,} events, "
        f"{st.sessions} sessions (JVM starts {start_wall:.1f} s wall, {start_cpu:.1f} s CPU, "
        f"not counted below); load average {load0} at start, {load1} at the end",
        "",
        "| per event | full (model + oracles) | driver alone |",
        "|---|---|---|",
        f"| wall | {us(wall)} | {us(alone_wall)} |",
        f"| driver JVM, CPU | {us(java)} | {us(alone_java)} |",
        f"| this process, CPU | {us(python)} | {us(alone_py)} |",
        f"| - protocol (encode, pipes, decode) | {us(part['protocol'])} | {us(alone_proto)} |",
        f"| - model (apply) | {us(part['model'])} | - |",
        f"| - compare (rest of Comparator.step) | {us(part['compare'])} | - |",
        f"| - generator, lane logs, findings (the rest) | {us(rest)} | - |",
        f"| waiting for the driver (wall) | {us(part['wait'])} | - |",
        f"| events per wall second | {n / wall:,.0f} | {n / alone_wall:,.0f} |",
        f"| events per CPU second (driver + harness) | {n / full_cpu:,.0f} | "
        f"{n / alone_cpu:,.0f} |",
        "",
        f"Full / driver alone: {alone_wall / wall:.2f} of its wall rate, "
        f"{alone_cpu / full_cpu:.2f} of its rate per CPU second. Findings: "
        f"{len(c.found)} signature(s); verdicts {dict(sorted(st.verdicts.items()))}",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", default=",".join(builds.DEFAULT_MATRIX_VERSIONS))
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--campaign", type=int, default=0, metavar="N",
                        help="a campaign of N events against the driver alone, per part")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--lanes", type=int, default=8)
    parser.add_argument("--out", default="/tmp/kafka-chaos-bench-diff")
    args = parser.parse_args(argv)
    m = machine.describe()
    if args.campaign:
        print(f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB")
        for version in args.versions.split(","):
            build = builds.from_maven(version)
            compile_driver(build)
            print()
            for line in campaign_parts(build, args.campaign, args.seed, args.lanes,
                                       Path(args.out) / version):
                print(line, flush=True)
        return
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
