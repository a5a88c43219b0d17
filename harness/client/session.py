"""A chaos session: one started cluster with its faults, observer and workload.

Used by the CLI (demo, runner) and by the pytest plugin, whose fixtures are its parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.client.answers import book_for
from harness.client.observe import Observer
from harness.client.readiness import BrokersUnfenced
from harness.client.workload import Workload
from harness.cluster.backends import make_cluster
from harness.cluster.backends.base import Cluster
from harness.cluster.builds import Build
from harness.cluster.topology import ClusterShape
from harness.infra.history import History
from harness.nemesis.faults import Faults


@dataclass
class Session:
    cluster: Cluster
    faults: Faults
    observer: Observer
    workload: Workload

    @property
    def history(self) -> History:
        return self.cluster.history


def quorum_side(cluster: Cluster, faults: Faults) -> list[int]:
    """Controllers that, as far as the fault table knows, are running and reach a majority
    of the voters both ways: where the active controller is (every controller with one)."""
    shape = cluster.shape
    cs = shape.controller_ids
    up = [c for c in cs if cluster.is_running(c) and c not in faults.network.paused]
    return [c for c in up
            if 2 * sum(1 for d in up if d == c or faults.network.connected(c, d)) > len(cs)]


def current_brokers(cluster: Cluster, faults: Faults) -> list[int]:
    """Brokers whose metadata view is current: running and connected to every controller on
    the quorum's majority side (with one controller: to it, whatever its state)."""
    shape = cluster.shape
    side = shape.controller_ids if len(shape.controller_ids) == 1 else \
        quorum_side(cluster, faults)
    return [b for b in shape.broker_ids if cluster.is_running(b)
            and all(faults.network.connected(b, c) for c in side)]


@contextmanager
def open_session(build: Build, shape: ClusterShape, run_dir: Path, backend: str = "local",
                 history: History | None = None) -> Iterator[Session]:
    history = history or History(run_dir)
    if history.meta.get("build") is None:
        history.update(build=build.describe(), backend=backend)
    cluster = make_cluster(backend, build, shape, run_dir, history, BrokersUnfenced())
    cluster.start()
    try:
        faults = Faults(cluster)
        with Observer(cluster, current_brokers=lambda: current_brokers(cluster, faults)) as obs:
            load = Workload(cluster)
            try:
                yield Session(cluster, faults, obs, load)
            finally:
                load.close()
    finally:
        cluster.teardown()
        book_for(cluster).close()
