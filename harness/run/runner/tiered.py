"""A cluster with tiered storage (``cluster.tiered_storage``), checked before any cluster
starts: the build must have KIP-405's broker side (a file:line error otherwise: bad input,
not a verdict), and LocalTieredStorage's jar is fetched now (harness/cluster/tiered.py), so
a missing jar is said with the line too, before anything runs."""

from __future__ import annotations

from collections.abc import Mapping

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
    check_topic_keys(scenario, build)
    try:
        tiered.rsm_classpath(build)
    except BuildError as exc:
        raise BuildError(f"{where}: {exc}") from None


def check_topic_keys(scenario: Scenario, build: Build) -> None:
    """A BuildError naming the file and line of a tiered topic config ``build`` does not
    have (tiered.TOPIC_KEYS_SINCE: KIP-950's, 3.9.0), in a declared topic's config, a
    create_topic's or a topic-scope alter_config's, before any cluster starts."""
    for key, line in _topic_keys(scenario):
        since = tiered.TOPIC_KEYS_SINCE.get(key)
        if since is not None and build.version_tuple < since:
            first = ".".join(map(str, since))
            raise BuildError(f"{scenario.path}:{line}: {key}: Kafka {build.version} has no "
                             f"such topic config (KIP-950, from {first}; its controller "
                             f"refuses it: \"Unknown topic config name\"); run it with "
                             f"--kafka-version {first} or later, or drop the key")


def _topic_keys(scenario: Scenario) -> list[tuple[str, int]]:
    """(topic config key, its line) of the declared topics (the key's first line in the
    file, else the line of cluster.tiered_storage) and of the steps (the step's line)."""
    out: list[tuple[str, int]] = []
    text: list[str] = []
    try:
        with open(scenario.path, encoding="utf-8") as f:
            text = f.read().splitlines()
    except (OSError, ValueError):
        pass
    fallback = scenario.cluster.line("tiered_storage")
    for topic in scenario.every_topic():
        for key in topic.config:
            line = next((i + 1 for i, t in enumerate(text)
                         if f"{key}:" in t.split("#", 1)[0]), fallback)
            out.append((key, line))
    for loaded in scenario.steps:
        cfg = getattr(loaded.step, "config", None)
        if isinstance(cfg, Mapping) and getattr(loaded.step, "scope", "topic") == "topic":
            out.extend((key, loaded.line) for key in cfg)
    return out
