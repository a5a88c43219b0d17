"""What a campaign found and did: each ``Failure`` (a signature, its re-run rate, its
shrunk schedule) and the ``CampaignResult`` it prints and writes as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.search.fuzz.outcome import signature_text
from harness.search.shrink import ShrinkResult, Signature, Steps


@dataclass
class Failure:
    signature: Signature
    name: str
    scenario_seed: int
    steps: Steps
    first_run: Path | None
    runs: list[str] = field(default_factory=list)
    #: Runs of the failing schedule itself and how many gave the signature.
    tries: int = 0
    hits: int = 0
    minimal: Path | None = None
    shrink: ShrinkResult | None = None
    minimal_steps: Steps | None = None
    #: Re-runs of the minimal schedule after shrinking, and how many gave the signature.
    minimal_tries: int = 0
    minimal_hits: int = 0
    #: The first run's reasons (``Outcome.reason``).
    reason: str = ""

    @property
    def flaky(self) -> bool:
        return self.tries > 1 and self.hits < self.tries

    @property
    def status(self) -> str:
        if self.tries <= 1:
            return "unconfirmed"
        if self.hits == self.tries:
            return "reproducible"
        return "flaky" if self.hits <= 1 else "intermittent"

    def to_json(self) -> dict[str, Any]:
        return {"signature": signature_text(self.signature), "reason": self.reason,
                "schedule": self.name,
                "steps": len(self.steps), "first_run": str(self.first_run or ""),
                "occurrences": len(self.runs), "runs": self.runs,
                "status": self.status, "rate": f"{self.hits}/{self.tries}",
                "minimal": str(self.minimal or ""),
                "minimal_steps": None if self.minimal_steps is None else len(self.minimal_steps),
                "minimal_rate": f"{self.minimal_hits}/{self.minimal_tries}",
                "shrink": None if self.shrink is None else self.shrink.to_json()}


@dataclass
class CampaignResult:
    """What a fuzz campaign did (counts and times) and found (errors, failures): the
    summary it prints and writes as JSON."""

    #: Runs on a cluster: the generated schedules, their re-runs and the shrink runs.
    runs: int = 0
    #: Generated schedules run.
    generated: int = 0
    #: Generated schedules the model said would tell nothing (``guided``): never run.
    skipped_by_model: int = 0
    as_expected: int = 0
    #: Why the campaign stopped: its run count done, its budget spent, or no schedule
    #: the guide selects.
    stopped: str = ""
    errors: list[dict[str, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    run_seconds: float = 0.0
    shrink_seconds: float = 0.0
    #: The generated runs whose cluster was born on an older build: name -> that build
    #: (the others were born on the campaign's build).
    births: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "generated": self.generated,
                "skipped_by_model": self.skipped_by_model,
                "as_expected": self.as_expected, "errors": self.errors,
                "failures": [f.to_json() for f in self.failures],
                "seconds": round(self.seconds, 1), "run_seconds": round(self.run_seconds, 1),
                "shrink_seconds": round(self.shrink_seconds, 1),
                "runs_per_hour": round(3600 * self.runs / self.run_seconds, 1)
                if self.run_seconds else None,
                "runs_per_hour_wall": round(3600 * self.runs / self.seconds, 1)
                if self.seconds else None, "stopped": self.stopped,
                "births": dict(self.births)}
