"""What a scenario needs of a build (its requirement gap: the run is then UNSUPPORTED) and
what the build makes of the scenario (ELR on or off, the model's profile)."""

from __future__ import annotations

from typing import Any

from harness.cluster.builds import Build, version_tuple
from harness.scenario.loader import Scenario


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
    return None


def _as_version(value: Any) -> tuple[int, int, int] | None:
    if not value:
        return None
    if isinstance(value, str):
        return version_tuple(value)
    major, minor, patch = tuple(value)[:3]
    return int(major), int(minor), int(patch)


def elr_enabled(scenario: Scenario, build: Build) -> bool:
    if not build.features.elr:
        return False
    wanted = scenario.cluster.elr
    return build.features.elr_default_on if wanted is None else bool(wanted)


def choose_profile(scenario: Scenario, build: Build, override: str | None) -> str:
    from reference import profile_for_build
    if override:
        return override
    if scenario.profile and scenario.profile != "auto":
        return str(scenario.profile)
    return str(profile_for_build(build.version_tuple, elr_enabled(scenario, build)))
