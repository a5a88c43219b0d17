"""What one run of a schedule found: its ``Outcome`` (the failure's ``signature``:
axis, verdict and rule names of every axis not as expected, and its ``reasons``), the
function that runs a schedule (``RunFn``), and the real ones: the Runner on a fresh
cluster (``real_runner``) or a Spark task (``spark_runner``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.search.fuzz.scenario import CLUSTERS, scenario_yaml
from harness.search.shrink import Signature, Steps
from reference.search import fuzzgen

# --- signatures ------------------------------------------------------------------------

_STEP_PREFIX = re.compile(r"^step \d+:\s*")
#: A multi-partition reason names its partition first (``t-1: replicas: ...``, or
#: ``t-{0,3}: ...``): the signature is the field, whichever partition showed it.
_LANE_PREFIX = re.compile(r"^[A-Za-z0-9._-]+-(\d+|\{[\d,]+\}):\s*")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_. -]{0,40}$")


def _reason_name(reason: str) -> str:
    text = _LANE_PREFIX.sub("", _STEP_PREFIX.sub("", reason or "").strip())
    if text.startswith("trace:"):
        rule = text[len("trace:"):].strip().split(" at offset", 1)[0].strip()
        return f"trace:{rule}"
    head = text.split(":", 1)[0].strip()
    return head if _NAME.match(head) else "other"


def axis_names(axis: Any) -> tuple[str, ...]:
    """The rule or check names an axis verdict broke."""
    rules = {str(d["rule"]) for d in (axis.details or []) if isinstance(d, Mapping)
             and "rule" in d and (axis.axis == "safety" or axis.axis == "release")}
    if axis.axis == "release" and rules:
        return tuple(sorted(f"trace:{r}" for r in rules))
    if axis.axis == "safety":
        return tuple(sorted(rules)) or ("other",)
    return (_reason_name(axis.reason),)


def signature(axes: Mapping[str, Any]) -> Signature | None:
    """(axis, verdict, rule/check names) of every axis not as expected; None when all are."""
    sig = tuple(sorted((a.axis, a.verdict, axis_names(a))
                       for a in axes.values() if not a.as_expected))
    return sig or None


def reasons(axes: Mapping[str, Any]) -> str:
    """The reasons of every axis not as expected (``axis: reason``), in axis order: what
    a signature leaves out (a traffic loss's count and lost ids, a divergence's step)."""
    return "; ".join(f"{a.axis}: {a.reason}" for a in axes.values()
                     if not a.as_expected and a.reason)


def signature_text(sig: Signature) -> str:
    return "; ".join(f"{axis} {verdict} [{', '.join(names)}]" for axis, verdict, names in sig)


def prefer_for(sig: Signature, new_model: Callable[[], Any]
               ) -> Callable[[Steps], bool] | None:
    """The shrinker's ordering hint for a signature: an acks=all loss the release model
    predicted (release as expected, safety UNSAFE acked-record-durable) is kept by the
    candidates the model still says lose data, so those run first. Other failures (the
    model disagrees with the broker) get no hint."""
    axes = {axis: names for axis, _, names in sig}
    if "release" in axes or "acked-record-durable" not in axes.get("safety", ()):
        return None
    return lambda steps: fuzzgen.predicts_acked_loss(new_model, steps)


# --- one run ---------------------------------------------------------------------------

@dataclass
class Outcome:
    """One run of a schedule: its signature (None: every axis as expected), whether the
    harness failed (ERROR: not a finding), and its history."""

    signature: Signature | None
    error: str | None = None
    run_dir: Path | None = None
    seconds: float = 0.0
    #: Why: the reasons of the axes not as expected (``reasons``; a traffic loss names
    #: the lost ids there), "" when every axis is.
    reason: str = ""
    #: The build the run's cluster was born on when it is not the campaign's (its nodes
    #: upgraded to the campaign's build by the schedule; run.json ``node_builds``).
    birth: str | None = None


#: (scenario name, scenario seed, steps) -> the run's outcome.
RunFn = Callable[[str, int, Steps], Outcome]


# --- the real run ----------------------------------------------------------------------

def born_on(build: Any, births: Mapping[str, Any], seed: int) -> tuple[Any, str | None]:
    """The build the schedule with scenario seed ``seed`` is started on (``--kafka-version``
    of its run): its cluster's birth build when it was drawn on an older one, else
    ``build``; and that birth's version (None: the campaign's build)."""
    cluster = CLUSTERS.of(seed)
    birth = cluster.birth if cluster is not None else None
    if birth is None or birth not in births:
        return build, None
    return births[birth], birth


def real_runner(build: Any, backend: str, runs_dir: Path, schedules_dir: Path,
                step_timeout_s: float, on_step: Callable[[Any], None] = lambda s: None,
                births: Mapping[str, Any] | None = None) -> RunFn:
    """Each schedule written as a scenario file, loaded by `run`'s loader, run by the
    Runner on a fresh cluster (born on its birth build: ``born_on``) and judged on every
    axis."""
    from harness.run.runner import Runner
    from harness.scenario.loader import load_scenario

    def run(name: str, seed: int, steps: Steps) -> Outcome:
        sc = load_scenario(_write_schedule(schedules_dir, name, seed, steps))
        born, birth = born_on(build, births or {}, seed)
        return _outcome(Runner(sc, born, backend, runs_dir, step_timeout_s=step_timeout_s,
                               on_step=on_step).run(), birth)
    return run


def spark_runner(spark: Any, build: Any, backend: str, runs_dir: Path, schedules_dir: Path,
                 step_timeout_s: float, births: Mapping[str, Any] | None = None) -> RunFn:
    """As real_runner, with each run a task on the Spark executors (harness.run.fanout)."""
    from harness.run.fanout import spec_for

    def run(name: str, seed: int, steps: Steps) -> Outcome:
        path = _write_schedule(schedules_dir, name, seed, steps)
        born, birth = born_on(build, births or {}, seed)
        return _outcome(spark.run(spec_for(path, born, backend, runs_dir, None,
                                           step_timeout_s)), birth)
    return run


def _write_schedule(schedules_dir: Path, name: str, seed: int, steps: Steps) -> Path:
    path = schedules_dir / f"{name}.yaml"
    path.write_text(scenario_yaml(name, seed, steps, "generated by kafka-chaos fuzz"))
    return path


def _outcome(result: Any, birth: str | None = None) -> Outcome:
    from harness.judge.compare import ERROR
    if result.verdict == ERROR:
        return Outcome(None, result.reason or "ERROR", result.run_dir, birth=birth)
    return Outcome(signature(result.axes), None, result.run_dir,
                   reason=reasons(result.axes), birth=birth)
