"""Cluster backends. One interface (`base.Cluster`); suites never know which one runs.

May import: harness.infra and the rest of harness.cluster.
"""

from __future__ import annotations

from pathlib import Path

from harness.cluster.backends.base import Cluster, Readiness
from harness.cluster.builds import Build
from harness.cluster.topology import ClusterShape
from harness.infra.errors import UsageError
from harness.infra.history import History

BACKENDS = ("local", "docker")


def make_cluster(backend: str, build: Build, shape: ClusterShape, run_dir: Path,
                 history: History, readiness: Readiness) -> Cluster:
    if backend == "local":
        from harness.cluster.backends.local import LocalCluster
        return LocalCluster(build, shape, run_dir, history, readiness)
    if backend == "docker":
        from harness.cluster.backends.docker import DockerCluster  # type: ignore[import-not-found,unused-ignore]
        return DockerCluster(build, shape, run_dir, history, readiness)  # type: ignore[no-any-return,unused-ignore]
    raise UsageError(f"--backend {backend!r}: choose one of {', '.join(BACKENDS)}")
