"""What a run returns: each step's result and the run's (its step-wise lockstep verdict,
its data checks and its three axes; the headline is derived from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.judge.axes import AxisVerdict
from harness.judge.headline import Headline, headline


@dataclass
class StepResult:
    index: int
    kind: str
    line: int | None
    predicted: str
    observed: str
    verdict: str
    reason: str = ""


@dataclass
class RunResult:
    scenario: str
    build: str
    run_dir: Path
    profile: str
    #: The step-wise lockstep result (settled states against the model), not the run's
    #: verdict: that is ``headline``.
    verdict: str
    steps: list[StepResult] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    wall_s: float = 0.0
    axes: dict[str, AxisVerdict] = field(default_factory=dict)

    @property
    def headline(self) -> Headline:
        """The run's verdict, from its three axes and the scenario's declarations
        (harness/judge/headline.py); ``verdict`` is the step-wise lockstep result only."""
        return headline(self.axes, self.verdict, self.reason)

    @property
    def as_expected(self) -> bool:
        """Every axis clean or as the scenario declares for this build; no ERROR."""
        return self.headline.passed
