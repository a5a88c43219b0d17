"""A cluster with tiered storage (``cluster.tiered_storage``), checked before any cluster
starts: the build must have KIP-405's broker side (a file:line error otherwise: bad input,
not a verdict), and LocalTieredStorage's jar is fetched now (harness/cluster/tiered.py), so
a missing jar is said with the line too, before anything runs."""

from __future__ import annotations

from harness.cluster import tiered
from harness.cluster.builds import Build
from harness.infra.errors import BuildError
from harness.scenario.loader import Scenario

#: Backends that put LocalTieredStorage's jar on a broker's class path and share the remote
#: tier between brokers (docker: bound into each container, harness/cluster/backends/docker.py).
TIERED_BACKENDS = ("local", "docker")


def tiered_gap(scenario: Scenario, backend: str) -> str | None:
    """Why this backend cannot run the scenario's tiered storage (UNSUPPORTED), or None."""
    if getattr(scenario.cluster, "tiered_storage", False) and backend not in TIERED_BACKENDS:
        return (f"cluster.tiered_storage runs on the {' and '.join(TIERED_BACKENDS)} "
                f"backends, not on {backend}")
    return None


def check_tiered(scenario: Scenario, build: Build) -> None:
    """A BuildError naming the file and line of ``cluster.tiered_storage`` when ``build``
    cannot run it or LocalTieredStorage's jar cannot be had."""
    shape = scenario.cluster
    if not getattr(shape, "tiered_storage", False):
        return
    where = f"{scenario.path}:{shape.line('tiered_storage')}: cluster.tiered_storage"
    why = tiered.gap(build.version_tuple)
    if why:
        raise BuildError(f"{where}: {why}; run it with --kafka-version 3.6.0 or later "
                         "(production ready from 3.9.0)")
    try:
        tiered.rsm_classpath(build)
    except BuildError as exc:
        raise BuildError(f"{where}: {exc}") from None
