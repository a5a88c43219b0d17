"""Docker backend benchmark (issue 5): bring-up time of 3 brokers + 1 controller and one
kill/restart cycle (SIGKILL broker 3, start it again, wait until it is unfenced), docker vs
local. Run: python bench/docker.py [VERSION] [REPEATS]
Writes a markdown block to stdout; results are kept in bench/RESULTS-docker.md.
Image builds are done (and timed) once before the measured runs.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys

# This file is named docker.py: keep its folder off sys.path so `import docker` finds the SDK.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)
import tempfile
import time
from pathlib import Path

from harness.client.readiness import BrokersUnfenced
from harness.cluster import builds
from harness.cluster import images as dockerimages
from harness.cluster.backends import make_cluster
from harness.cluster.topology import ClusterShape
from harness.infra import dockerengine, toxiproxy
from harness.infra.history import History


def cycle(backend: str, build: builds.Build, root: Path, i: int) -> tuple[float, float, float]:
    run_dir = root / f"{backend}-{i}"
    history = History(run_dir)
    cluster = make_cluster(backend, build, ClusterShape(), run_dir, history, BrokersUnfenced())
    t0 = time.monotonic()
    with cluster:
        up = time.monotonic() - t0
        t1 = time.monotonic()
        cluster.kill(3)
        killed = time.monotonic() - t1
        t2 = time.monotonic()
        cluster.start_node(3)
        BrokersUnfenced().wait(cluster, timeout_s=90)
        restart = time.monotonic() - t2
    history.close("CONFORMS")
    return up, killed, restart


def main() -> None:
    version = sys.argv[1] if len(sys.argv) > 1 else builds.DEFAULT_KAFKA_VERSION
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    build = builds.resolve(version)
    dockerengine.ensure_engine()
    t0 = time.monotonic()
    dockerimages.ensure_kafka_image(build)
    dockerimages.ensure_toxiproxy_image()
    images_s = time.monotonic() - t0
    toxiproxy.ensure_server_binary()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="kc-bench-docker-") as tmp:
        for backend in ("local", "docker"):
            rows[backend] = [cycle(backend, build, Path(tmp), i) for i in range(repeats)]
    print(f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Kafka {build.version}")
    print(f"Machine: {os.cpu_count()} cores, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
          f"{platform.system()} {platform.release()}; {repeats} runs per backend; "
          f"image check/build before the runs: {images_s:.1f}s (cached images: ~0 s)\n")
    print("| backend | bring-up 3b+1c (s), median [min-max] | SIGKILL broker (s) "
          "| restart until unfenced (s), median [min-max] |")
    print("|---|---|---|---|")
    for backend, vals in rows.items():
        ups, kills, restarts = zip(*vals, strict=True)
        print(f"| {backend} | {statistics.median(ups):.1f} [{min(ups):.1f}-{max(ups):.1f}] "
              f"| {statistics.median(kills):.2f} | {statistics.median(restarts):.1f} "
              f"[{min(restarts):.1f}-{max(restarts):.1f}] |")


if __name__ == "__main__":
    main()
