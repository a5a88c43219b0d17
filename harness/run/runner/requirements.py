"""What a scenario needs of a build (its requirement gap: the run is then UNSUPPORTED) and
what the build makes of the scenario (ELR on or off, the model's profile)."""

from __future__ import annotations

from typing import Any

from harness.cluster import builds
from harness.cluster.builds import Build, version_tuple
from harness.cluster.storage import born_with_elr
from harness.infra.errors import BuildError
from harness.scenario.loader import Scenario
from reference.model import metadata_version as MV


def requirement_gap(scenario: Scenario, build: Build) -> str | None:
    """Why this build cannot run the scenario (its verdict is then UNSUPPORTED), or None."""
    req = scenario.requires
    low, high = _as_version(req.min_version), _as_version(req.max_version)
    if low and build.version_tuple < low:
        return f"needs Kafka >= {'.'.join(map(str, low))}, build is {build.version}"
    if high and build.version_tuple > high:
        return f"needs Kafka <= {'.'.join(map(str, high))}, build is {build.version}"
    missing = sorted(set(req.features) - build.features.names())
    if missing:
        return f"build {build.version} lacks feature(s): {', '.join(missing)}"
    if scenario.cluster.elr and not build.features.elr:
        return f"scenario wants ELR on; Kafka {build.version} has no ELR feature"
    return downgrade_gap(scenario, build)


def _upgrades(scenario: Scenario) -> list[tuple[int, str]]:
    """(line, version) of each step that names a build (``upgrade``), in order."""
    out: list[tuple[int, str]] = []
    for loaded in scenario.steps:
        version = getattr(loaded.step, "version", None) if loaded.kind == "upgrade" else None
        if version is not None:
            out.append((loaded.line, str(version)))
    return out


def downgrade_gap(scenario: Scenario, birth: Build) -> str | None:
    """A step that starts a node on a build older than the release line the cluster was
    born on: that build cannot read the cluster's metadata.version, which the birth build
    finalized at format time as its newest production level (3.9.2: 3.9-IV0; 4.3.1:
    4.3-IV0), and nothing here raises or lowers it. Kafka refuses such a node (a
    software downgrade is supported only while the metadata.version is one the older
    build knows: docs/upgrade.html "Downgrading"). Seen (2026-11-28, a cluster born on
    4.0.2, broker 1 restarted on 3.9.2): the JVM exits within a second, "Exiting Kafka due
    to fatal exception ... IllegalArgumentException: No MetadataVersion with feature level
    25" (MetadataVersion.fromFeatureLevel <- BootstrapMetadata.fromRecords <-
    BootstrapDirectory.read <- KafkaRaftServer.initializeLogDirs: the data dir's
    bootstrap.checkpoint). Predicted UNSUPPORTED rather than tried; tried anyway (a
    prediction missed), the upgrade's start wait fails at once with the node's log."""
    line = birth.version_tuple[:2]
    born_at = getattr(scenario.cluster, "metadata_version", None)
    if born_at:  # born at a given level: its release line
        line = MV.release_line(MV.BY_NAME[born_at])
    for at, version in _upgrades(scenario):
        if version_tuple(version)[:2] < line:
            return (f"step at line {at} starts a node on Kafka {version}, below the cluster's "
                    f"metadata.version ({line[0]}.{line[1]}-IVx, set by its birth build "
                    f"{birth.version}): Kafka does not downgrade below the metadata.version; "
                    f"run it with --kafka-version {version} or older, or pin "
                    f"requires.max_version")
    return None


def step_builds(scenario: Scenario) -> dict[str, Build]:
    """Every build the scenario's steps name, resolved (downloaded and cached on first
    use) before any cluster starts; a BuildError names the step's line and the fix."""
    out: dict[str, Build] = {}
    for at, version in _upgrades(scenario):
        if version in out:
            continue
        try:
            out[version] = builds.from_maven(version)
        except BuildError as exc:
            raise BuildError(f"{scenario.path}:{at}: upgrade to {version}: this build cannot "
                             f"be resolved: {exc} (name a released version on Maven "
                             "Central, or resolve it once with `kafka-chaos run ... "
                             f"--kafka-version {version}` where the network allows)") from None
    return out


def _as_version(value: Any) -> tuple[int, int, int] | None:
    if not value:
        return None
    if isinstance(value, str):
        return version_tuple(value)
    major, minor, patch = tuple(value)[:3]
    return int(major), int(minor), int(patch)


def elr_enabled(scenario: Scenario, build: Build) -> bool:
    """ELR at birth (storage.born_with_elr: never below metadata.version 4.0-IV1)."""
    return born_with_elr(scenario.cluster, build.features.elr, build.features.elr_default_on)


def choose_profile(scenario: Scenario, build: Build, override: str | None) -> str:
    from reference import profile_for_build
    if override:
        return override
    if scenario.profile and scenario.profile != "auto":
        return str(scenario.profile)
    return str(profile_for_build(build.version_tuple, elr_enabled(scenario, build)))


def follows_builds(scenario: Scenario, override: str | None) -> bool:
    """Whether the model's rules follow the active controller's build (reference Model
    ``follow_builds``): the run's profile is the build's own (not pinned by --profile or
    the scenario) and a step runs a node on another build."""
    auto = not override and (not scenario.profile or scenario.profile == "auto")
    return auto and bool(_upgrades(scenario) or getattr(scenario.cluster, "builds", ()))
