"""What one run holds across its jobs: the scenario, the build, the model in lockstep (one
lane per partition), the run's events and checks once read, the traffic, and the quorum
roles seen so far. The Runner's constructor; every other part of the runner builds on it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.cluster.storage import resolve_birth
from harness.cluster.topology import ClusterShape
from harness.judge.compare import (
    ack_mismatch,
    consume_mismatch,
    model_for,
    refusal_mismatch,
    shape_of,
)
from harness.judge.lockstep import Lockstep
from harness.run.runner.requirements import choose_profile, elr_enabled, follows_builds
from harness.run.runner.results import StepResult
from harness.scenario.loader import Scenario

DEFAULT_STEP_TIMEOUT_S = 30.0


class RunnerState:
    """The state a run holds across its jobs, and the constructor every part builds on."""

    def __init__(self, scenario: Scenario, build: Build, backend: str = "local",
                 runs_dir: Path = Path("runs"), profile: str | None = None,
                 step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
                 on_step: Callable[[StepResult], None] | None = None) -> None:
        # Nodes born on other builds: the metadata.version the cluster is formatted at is
        # named (storage.resolve_birth), for the model and every node's tool alike.
        shape = resolve_birth(scenario.cluster, build.version_tuple)
        if shape is not scenario.cluster:
            scenario = replace(scenario, cluster=shape)
        self.scenario, self.build, self.backend = scenario, build, backend
        self.runs_dir, self.step_timeout_s = runs_dir, step_timeout_s
        self.profile = choose_profile(scenario, build, profile)
        #: The profile is the build's, and a step runs nodes on other builds: the model's
        #: rules follow the active controller's build (reference Model ``follow_builds``).
        self.follow_builds = follows_builds(scenario, profile)
        self.on_step = on_step or (lambda r: None)
        self._events: list[dict[str, Any]] = []
        #: Each lane's data checks (datachecks.CheckResult lists), once the run has read.
        self._raw_checks: list[list[Any]] | None = None
        self._data_dirs: dict[int, Path] = {}
        #: Whether the metadata log was archived while the cluster ran (before a recovery).
        self._archived = False
        #: The quorum epoch when the current step started; the controller the latest
        #: ``active`` resolved to (several controllers only).
        self._epoch_before: int | None = None
        self._last_active: int | None = None
        #: The run's producers and consumers and their traffic.jsonl (a scenario with
        #: traffic only).
        self._traffic: Any = None
        self._traffic_writer: Any = None
        self.lockstep = Lockstep(scenario, self.profile, elr_enabled(scenario, build),
                                 lambda pred, outcome: ack_mismatch(pred, outcome)
                                 or consume_mismatch(pred, outcome)
                                 or refusal_mismatch(pred, outcome), self.model_for,
                                 follow_builds=self.follow_builds)

    @property
    def model(self) -> Any:
        """Partition 0's model (the only one of a one-partition topic)."""
        return self.lockstep.first

    model_for = staticmethod(model_for)

    def shape(self) -> ClusterShape:
        return shape_of(self.scenario)
