"""Controller-quorum bring-up (issue 12): how long a cluster of C controllers + B brokers
takes from start to every broker registered and unfenced (base.Cluster.start,
timings.bring_up_s), and what DescribeQuorum then shows (leader, epoch, voters' lag).

Run (it starts Kafka: hold the cluster lock):
  flock /tmp/kafka-chaos-cluster.lock python bench/quorum.py 4.3.1 --backend local \\
      --controllers 3 --brokers 5 --repeats 3
Prints one markdown table; results are kept in bench/RESULTS-quorum.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# This tree's harness, and not bench/ first (bench/docker.py would shadow the Docker SDK).
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from harness.client.observe import ObserveError  # noqa: E402
from harness.client.session import open_session  # noqa: E402
from harness.cluster import builds  # noqa: E402
from harness.cluster.topology import ClusterShape  # noqa: E402
from harness.infra.history import History  # noqa: E402
from harness.infra.wait import until  # noqa: E402


def one(build: builds.Build, shape: ClusterShape, backend: str, run_dir: Path
        ) -> dict[str, Any]:
    history = History(run_dir)
    t0 = time.monotonic()
    with open_session(build, shape, run_dir, backend, history=history) as s:
        up = history.meta["timings"]["bring_up_s"]
        def ask() -> dict[str, Any] | None:
            try:
                return s.observer.quorum()
            except ObserveError:
                return None

        q = until(ask, lambda x: x is not None and x["leader"] >= 0, "a quorum leader", 30)
        assert q is not None
        voters = sorted(q["voters"])
        result = {"bring_up_s": up, "leader": q["leader"], "epoch": q["leader_epoch"],
                  "voters": voters, "lag": q["lag"], "observers": sorted(q["observers"])}
    result["total_s"] = round(time.monotonic() - t0, 2)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("version")
    ap.add_argument("--backend", default="local")
    ap.add_argument("--controllers", type=int, default=3)
    ap.add_argument("--brokers", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    build = builds.resolve(a.version)
    shape = ClusterShape(brokers=a.brokers, controllers=a.controllers)
    root = Path(tempfile.mkdtemp(prefix="kafka-chaos-bench-quorum-"))
    rows = [one(build, shape, a.backend, root / f"run-{i}") for i in range(a.repeats)]
    ups = [r["bring_up_s"] for r in rows]
    print(f"Kafka {build.version}, backend {a.backend}, {a.controllers} controllers + "
          f"{a.brokers} brokers, {os.cpu_count()} cores, {platform.platform()}\n")
    print("| run | bring-up s | start to teardown s | leader | epoch | voters | observers | lag |")
    print("|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(rows):
        print(f"| {i + 1} | {r['bring_up_s']} | {r['total_s']} | {r['leader']} | {r['epoch']} "
              f"| {r['voters']} | {r['observers']} | {r['lag']} |")
    print(f"\nbring-up: median {statistics.median(ups):.1f} s, min {min(ups):.1f} s, "
          f"max {max(ups):.1f} s over {len(ups)} runs")


if __name__ == "__main__":
    main()
