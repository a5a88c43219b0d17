"""The cluster's birth, checked before any cluster starts (FORMAT.md "The cluster's birth"):
every build ``cluster.builds`` names is resolved (as ``upgrade`` steps' are,
requirements.step_builds), then each node's build formats its storage template with the
scenario's metadata.version, feature levels and unstable switch (harness.cluster.storage
.birth_args; the template is cached, so the cluster's own format copies it). A level, feature
or version the build does not know is its storage tool's refusal, reported as an ERROR
naming the file and line of the key, with the tool's words."""

from __future__ import annotations

import re

from harness.cluster import builds, logdirs, storage
from harness.cluster.builds import Build
from harness.infra.errors import BuildError
from harness.scenario.loader import Scenario

#: Lines of a storage tool's output that are not its answer: stack frames, log4j's warnings,
#: a log line, the config it echoes ("unstable.feature.versions.enable = false").
_NOISE = re.compile(r"^(at |\.\.\. \d+ more|log4j:|\[|SLF4J|[a-z0-9._-]+ = )")


def birth_builds(scenario: Scenario) -> dict[int, Build]:
    """Node -> its resolved birth build, for the nodes ``cluster.builds`` names."""
    shape = scenario.cluster
    out: dict[int, Build] = {}
    for node, version in shape.builds:
        try:
            out[node] = builds.from_maven(version)
        except BuildError as exc:
            raise BuildError(f"{scenario.path}:{shape.line(f'builds.{node}')}: cluster.builds."
                             f"{node}: Kafka {version} cannot be resolved: {exc} (name a "
                             "released version on Maven Central)") from None
    return out


#: Backends that give a broker several log directories (loop mounts made on the host; the
#: docker backend binds each into its broker's container: harness/cluster/backends/docker.py).
LOG_DIRS_BACKENDS = ("local", "docker")


def birth_gap(scenario: Scenario, backend: str) -> str | None:
    """Why this backend cannot give the cluster its birth (the run is UNSUPPORTED)."""
    if getattr(scenario.cluster, "builds", ()) and backend != "local":
        return ("cluster.builds: nodes born on different builds run on the local backend "
                f"only (the {backend} backend launches every node on one image)")
    if getattr(scenario.cluster, "log_dirs", 1) > 1:
        if backend not in LOG_DIRS_BACKENDS:
            return (f"cluster.log_dirs: several log directories run on the "
                    f"{' and '.join(LOG_DIRS_BACKENDS)} backends (docs/LOG-DIRS.md), "
                    f"not on {backend}")
        why = logdirs.require()
        if why:
            return f"cluster.log_dirs: {why}"
    return None


#: The first release whose KRaft brokers take several log directories (KIP-858, "JBOD in
#: KRaft", 3.7.0): before it KRaft has no directory assignment, and a KRaft broker tells
#: the controller nothing of a failed directory (3.6 ReplicaManager.handleLogDirFailure:
#: "Unable to propagate log dir failure via Zookeeper in KRaft mode"): its partitions there
#: keep it as leader and ISR member, which is what KIP-858 fixed.
JBOD_RELEASE = (3, 7, 0)


def check_log_dirs(scenario: Scenario, build: Build, born: dict[int, Build]) -> None:
    """Several log directories on a build before 3.7: a BuildError naming the file:line
    of ``cluster.log_dirs``, before any cluster starts."""
    shape = scenario.cluster
    if getattr(shape, "log_dirs", 1) <= 1:
        return
    for node in shape.broker_ids:
        b = born.get(node, build)
        if b.version_tuple < JBOD_RELEASE:
            raise BuildError(f"{scenario.path}:{shape.line('log_dirs')}: cluster.log_dirs: "
                             f"Kafka {b.version} (broker {node}) has no KRaft JBOD: several "
                             "log directories per broker need 3.7+ (KIP-858)")


def _where(scenario: Scenario, node: int | None) -> tuple[int, str]:
    """The line and key an error about the birth format names."""
    shape = scenario.cluster
    for key in ("metadata_version", "features", "unstable_features"):
        if shape.line(key):
            return shape.line(key), f"cluster.{key}"
    if node is not None and shape.line(f"builds.{node}"):
        return shape.line(f"builds.{node}"), f"cluster.builds.{node}"
    return shape.line("builds"), "cluster.builds"


def tool_words(output: str) -> str:
    """What a storage tool said, without its stack frames, logging and config dump."""
    kept = [ln.strip() for ln in output.splitlines()
            if ln.strip() and not _NOISE.match(ln.strip())]
    return " / ".join(kept[-2:])


def check_birth(scenario: Scenario, build: Build, born: dict[int, Build]) -> None:
    """Format each birth build's storage template as the cluster will be formatted; a
    refusal is a BuildError naming the file:line of the birth key and the build."""
    shape = scenario.cluster
    if not (shape.metadata_version or shape.features or shape.unstable_features
            or shape.builds):
        return
    every = {node: born.get(node, build) for node in shape.nodes}
    seen: set[str] = set()
    for node, b in sorted(every.items()):
        if b.version in seen:
            continue
        seen.add(b.version)
        try:
            args, props = storage.birth_args(b, shape, build.version_tuple)
            storage.template(b, shape.elr, args, props)
        except BuildError as exc:
            line, key = _where(scenario, node if b is not build else None)
            tool = tool_words(str(exc))
            raise BuildError(f"{scenario.path}:{line}: {key}: Kafka {b.version} (node {node}) "
                             f"refuses the cluster's birth ({' '.join(args + props)}): "
                             f"{tool}") from None
