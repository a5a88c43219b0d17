"""Foundation benchmarks (issue 2): bring-up time, isolate -> fenced-and-out-of-ISR time,
produce throughput through the proxies vs direct. Run: python bench/foundation.py [VERSION]
Writes a markdown block to stdout; results are kept in bench/RESULTS-foundation.md.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from harness.client import admin
from harness.client.session import open_session
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.infra.history import History
from harness.infra.wait import until

REPEATS = 3
RECORDS = 50_000
VALUE = b"x" * 1024


def bring_up_and_isolate(build: builds.Build, root: Path, i: int) -> tuple[float, float]:
    run_dir = root / f"bench-{i}"
    history = History(run_dir)
    with open_session(build, ClusterShape(), run_dir, history=history) as s:
        up = history.meta["timings"]["bring_up_s"]
        admin.create_topic(s.observer, "b", [1, 2, 3], {"min.insync.replicas": "2"})
        until(lambda: s.observer.partition_state("b")[0], lambda st: len(st["isr"]) == 3, "isr")
        t0 = time.monotonic()
        s.faults.isolate(1)
        until(lambda: s.observer.partition_state("b")[0],
              lambda st: 1 in (st["fenced"] or []) and 1 not in st["isr"], "fenced", 60, 0.05)
        return up, time.monotonic() - t0


def throughput(build: builds.Build, root: Path) -> tuple[float, float]:
    run_dir = root / "bench-tput"
    with open_session(build, ClusterShape(), run_dir) as s:
        admin.create_topic(s.observer, "p", [1, 2, 3], {"min.insync.replicas": "2"})
        admin.create_topic(s.observer, "d", [1, 2, 3], {"min.insync.replicas": "2"})
        until(lambda: s.observer.partition_state("d")[0], lambda st: len(st["isr"]) == 3, "isr")
        direct = ",".join("{}:{}".format(*s.cluster.observer_address(b)) for b in (1, 2, 3))
        return (_produce(s.cluster.client_bootstrap(), "p"), _produce(direct, "d"))


def _produce(bootstrap: str, topic: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 262144, "log_level": 3})
    t0 = time.monotonic()
    for _ in range(RECORDS):
        while True:
            try:
                producer.produce(topic, VALUE, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    remaining = producer.flush(120)
    elapsed = time.monotonic() - t0
    assert remaining == 0, f"{remaining} records undelivered"
    return RECORDS * len(VALUE) / elapsed / 1e6


def main() -> None:
    build = builds.resolve(sys.argv[1] if len(sys.argv) > 1 else None)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runs = [bring_up_and_isolate(build, root, i) for i in range(REPEATS)]
        via_proxy, direct = throughput(build, root)
    ups, fences = [r[0] for r in runs], [r[1] for r in runs]
    print(f"### Kafka {build.version}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"- bring-up 3 brokers + 1 controller: median {statistics.median(ups):.1f} s "
          f"(runs: {', '.join(f'{u:.1f}' for u in ups)}); target < 15 s")
    print(f"- isolate(leader) -> fenced and out of ISR: median {statistics.median(fences):.1f} s "
          f"(runs: {', '.join(f'{f:.1f}' for f in fences)}); session timeout 3 s")
    print(f"- produce acks=all, {RECORDS} x 1 KiB: through proxies {via_proxy:.1f} MB/s, direct "
          f"{direct:.1f} MB/s = {100 * via_proxy / direct:.0f}% of direct; target >= 50%")


if __name__ == "__main__":
    main()
