"""Re-judge a finished run from its files alone (`kafka-chaos audit RUN_DIR...`).

A run directory holds run.json, events.jsonl, the scenario it ran (scenario.yaml; older
runs name the file) and the controllers' metadata logs (metadata/<node>/). From those the
audit replays the recorded steps through the model on the recorded settled observations
(release and kip axes), runs the data checks (safety axis) and validates every committed
metadata record (trace). No cluster, no JVM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.cluster.builds import version_tuple
from harness.infra.errors import HarnessError, UsageError
from harness.infra.history import RecordedRun, SchemaError, check_schema, read_events
from harness.judge import datachecks, trace_check
from harness.judge.axes import (
    AXES,
    CONFORMS,
    DIVERGES,
    ERROR,
    INCOMPLETE,
    NOT_JUDGED,
    UNSUPPORTED,
    AxisVerdict,
    KipJudge,
    RunEvidence,
    judge_run,
    upgrade_profiles,
)
from harness.judge.compare import (
    ack_mismatch,
    await_mismatch,
    consume_mismatch,
    model_for,
    observed_state,
    predicts_hwm_drop,
    refusal_mismatch,
    run_data_checks,
    with_checks,
)
from harness.judge.datachecks import CheckResult
from harness.judge.headline import Headline, headline
from harness.judge.lanes import lane_events, lanes, merge_axes, single
from harness.judge.lockstep import kip_steps
from harness.judge.tiered import apply_tiered, kip_profile, local_log_steps
from harness.judge.traffic import apply_traffic, hwm_drop_allowed, model_view, tick_step
from harness.scenario import steps as step_kinds
from harness.scenario.loader import Expectation, Scenario, load_scenario
from harness.scenario.steps import StepOutcome
from reference.model import steps as S
from reference.releases.catalog import get_profile
from reference.releases.profiles import Profile

REPO_SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"


@dataclass
class AuditResult:
    run_dir: Path
    scenario: str
    build: str
    profile: str
    axes: dict[str, AxisVerdict] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    recorded: dict[str, str] = field(default_factory=dict)
    #: The traffic checks' summaries (docs/TRAFFIC.md), for a run with traffic.jsonl.
    traffic: dict[str, Any] | None = None

    @property
    def headline(self) -> Headline:
        """The run's verdict re-derived from the re-judged axes (harness/judge/headline.py),
        whatever the history recorded."""
        return headline(self.axes)

    @property
    def as_expected(self) -> bool:
        return self.headline.passed

    def to_json(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "scenario": self.scenario, "build": self.build,
                "profile": self.profile, "headline": self.headline.to_json(),
                "axes": {a: v.to_json() for a, v in self.axes.items()},
                "trace": self.trace, "recorded": self.recorded, "traffic": self.traffic}


@dataclass
class RecordedStep:
    index: int
    kind: str
    params: dict[str, Any]
    verdict: str | None
    observed: dict[str, Any] | None
    outcome: StepOutcome
    #: The last storage event before the step (tiered clusters): KIP-1303's local logs.
    storage: dict[str, Any] | None = None


def audit(run_dir: Path, events: list[dict[str, Any]] | None = None,
          scenarios: Path | None = None) -> AuditResult:
    """Re-judge one run directory; ``events`` if the caller has read them already;
    ``scenarios``: a directory whose scenario files of the same name replace the run's own
    copy (to judge old runs under today's declared expectations)."""
    if not run_dir.is_dir():
        raise UsageError(f"audit: {run_dir} is not a run directory (give a directory with "
                         "run.json and events.jsonl)")
    try:
        meta = check_schema(run_dir)
        events = list(read_events(run_dir)) if events is None else events
    except (SchemaError, OSError) as exc:
        raise UsageError(f"audit: {exc}") from None
    scenario = _scenario(run_dir, meta, scenarios)
    result = AuditResult(run_dir, scenario.name, str(meta["build"]["version"]),
                         str(meta.get("profile")),
                         recorded={a: v.get("verdict") for a, v in
                                   (meta.get("axes") or {}).items()} or
                         {"release": str(meta.get("verdict"))})
    if not RecordedRun(run_dir, meta, events).complete:
        why = "the history was cut short (no run_end): the run crashed, was killed or is running"
        result.axes = {a: AxisVerdict(a, INCOMPLETE, why) for a in AXES}
        return result
    if _recorded_end(events) == ERROR:
        # The harness failed (a step could not be executed): the observations stop short
        # of the scenario, and judging that prefix would blame the build for it.
        why = _recorded_reason(events) or "the run ended in ERROR (harness failure)"
        result.axes = {a: AxisVerdict(a, ERROR, why) for a in AXES}
        return result
    _judge(result, scenario, meta, events)
    return result


def _scenario(run_dir: Path, meta: dict[str, Any], scenarios: Path | None) -> Scenario:
    named = (meta.get("scenario") or {})
    candidates = [run_dir / "scenario.yaml"]
    if scenarios is not None and named.get("name"):
        candidates.insert(0, scenarios / f"{named['name']}.yaml")
    if named.get("file"):
        candidates.append(Path(named["file"]))
    if named.get("name"):
        candidates.append(REPO_SCENARIOS / f"{named['name']}.yaml")
    for path in candidates:
        if path.is_file():
            scenario = load_scenario(path)
            return _with_current_names(scenario, REPO_SCENARIOS / f"{scenario.name}.yaml")
    raise UsageError(f"audit: {run_dir}: no scenario file (looked for "
                     f"{', '.join(str(p) for p in candidates)})")


def _with_current_names(scenario: Scenario, current: Path) -> Scenario:
    """The run's scenario with the names (known_bug, deviation) that the repository's file
    of the same name now gives its declarations: a run recorded before a failure was named
    is shown by that name. Only names: each declaration is matched on its axis, verdict and
    versions, and what is judged stays the run's own."""
    if not current.is_file() or not scenario.expectations:
        return scenario
    try:
        now = load_scenario(current).expectations
    except HarnessError:
        return scenario
    def named(e: Expectation) -> Expectation:
        same = next((n for n in now if (n.axis, n.verdict, n.min_version, n.max_version)
                     == (e.axis, e.verdict, e.min_version, e.max_version)), None)
        if same is None or e.known_bug or e.deviation:
            return e
        return replace(e, known_bug=same.known_bug, deviation=same.deviation)
    return replace(scenario, expectations=tuple(named(e) for e in scenario.expectations))


def _elr_enabled(scenario: Scenario, features: list[str]) -> bool:
    from harness.cluster.storage import born_with_elr
    return born_with_elr(scenario.cluster, "elr" in features, "elr_default_on" in features)


def _birth_if_following(meta: dict[str, Any]) -> str | None:
    """The build the run was born on when its rules followed the builds (a rolling upgrade
    judged by the auto profile): trace_check.memo then judges each record by its writer."""
    if not meta.get("profile_follows_builds"):
        return None
    version = (meta.get("build") or {}).get("version")
    return None if version is None else str(version)


def _judge(result: AuditResult, scenario: Scenario, meta: dict[str, Any],
           events: list[dict[str, Any]]) -> None:
    elr = _elr_enabled(scenario, list(meta["build"].get("features") or []))
    logs = trace_check.read_logs(result.run_dir)
    result.axes = judge_lanes(scenario, get_profile(result.profile), result.build, meta, events,
                              datachecks.run_checks(events),
                              trace_check.memo(logs, scenario, events, elr,
                                               _birth_if_following(meta)), elr)
    verdict = apply_traffic(result.axes, result.run_dir, scenario, events)
    apply_tiered(result.axes, result.run_dir, scenario, events)
    if verdict is not None:
        result.traffic = verdict.to_json()
    result.trace = {"summary": trace_check.describe(result.axes["release"].details, logs),
                    "records": sum(len(r) for r in logs.by_controller.values()),
                    "controllers": sorted(logs.by_controller)}


def judge_axes(scenario: Scenario, profile: Profile, build: str, meta: dict[str, Any],
               events: list[dict[str, Any]], raw_checks: list[CheckResult],
               trace_under: Callable[[Any], list[dict[str, Any]]], elr: bool,
               mutate: Callable[[Profile], Profile] = lambda p: p) -> dict[str, AxisVerdict]:
    """The three axes of a recorded run, every profile the judges use passed through
    ``mutate`` (identity for the audit; a model mutant for ``kafka-chaos mutate``)."""

    def model_under(prof: Profile) -> Any:
        return model_for(scenario, mutate(prof), elr)

    follows = bool(meta.get("profile_follows_builds"))
    model = model_for(scenario, mutate(profile), elr, follow_builds=follows)
    kip = KipJudge(model_under, profile, elr, _outcome_mismatch,
                   upgrade_profiles(scenario, elr) if follows else (), kip_profile(scenario))
    release, reason = _replay(model, kip, scenario, recorded_steps(events),
                              str(meta.get("verdict")), _recorded_reason(events))
    checks = run_data_checks(raw_checks, model, predicts_hwm_drop(events)
                             or hwm_drop_allowed(scenario, events))
    if release not in NOT_JUDGED:
        release, reason = with_checks(release, reason, checks)
    evidence = RunEvidence(scenario, version_tuple(build), events, raw_checks,
                           lambda p: trace_under(mutate(p)), trace_check.SAFETY_RULES)
    return judge_run(AxisVerdict("release", release, reason), model.profile, kip, evidence)


def judge_lanes(scenario: Scenario, profile: Profile, build: str, meta: dict[str, Any],
                events: list[dict[str, Any]], raw_checks: list[CheckResult],
                trace_under: Callable[[Any], list[dict[str, Any]]], elr: bool,
                mutate: Callable[[Profile], Profile] = lambda p: p) -> dict[str, AxisVerdict]:
    """``judge_axes`` of each partition's lane (harness/judge/lanes.py), merged; with one
    partition, ``judge_axes`` itself (``raw_checks``: the data checks over ``events``)."""
    per_lane = []
    for lane in lanes(scenario):
        mine = lane_events(events, scenario, lane)
        checks = raw_checks if single(scenario) else datachecks.run_checks(mine)
        per_lane.append((lane, judge_axes(lane.scenario, profile, build, meta, mine, checks,
                                          trace_under, elr, mutate)))
    return merge_axes(per_lane)


def recorded_steps(events: list[dict[str, Any]]) -> list[RecordedStep]:
    """Each executed step with its settled observation and outcome, from the events."""
    out: list[RecordedStep] = []
    current: RecordedStep | None = None
    epoch: int | None = None  # the quorum epoch last recorded (DescribeQuorum, observations)
    epoch_at_start: int | None = None
    storage: dict[str, Any] | None = None  # the last storage event (one partition's lane)
    for e in events:
        kind = e["kind"]
        if kind == "quorum":
            epoch = (e.get("state") or {}).get("leader_epoch", epoch)
        if kind == "storage" and "error" not in e:
            storage = e
        if kind == "step" and e.get("phase") == "start":
            ((name, params),) = dict(e["step"]).items()
            current = RecordedStep(int(e["index"]), str(name), dict(params or {}), None, None,
                                   StepOutcome(), storage)
            out.append(current)
            # Recorded since schema 1.5 runs of 2026-11-27 (None: DescribeQuorum unanswered
            # when the step began); older runs: the last epoch recorded before the step.
            epoch_at_start = e.get("quorum_epoch_at_start", epoch)
        elif current is None:
            continue
        elif kind == "observation":
            current.observed = with_quorum_elected(e.get("state"), epoch_at_start)
            epoch = (e.get("state") or {}).get("quorum_epoch", epoch)
        elif kind == "ack":
            off = e.get("offset") if not e.get("error") else None
            current.outcome.acks[e["record_id"]] = off
            if e.get("error"):
                current.outcome.errors[e["record_id"]] = str(e["error"])
        elif kind == "feature":  # harness/scenario/steps/features.py
            current.outcome.refused = e.get("refused")
            current.outcome.declared_refused = e.get("declared_refused")
        elif kind == "consume" and _reads(current.kind):
            current.outcome.consumed = (current.outcome.consumed or []) + [
                (int(e["offset"]), str(e["record_id"]))]
        elif kind == "verdict" and e.get("index") == current.index:
            current.verdict = str(e["verdict"])
    return out


def _before(scenario: Scenario, rec: RecordedStep) -> tuple[Any, ...]:
    """The kip model's steps before ``rec``: the local logs last observed, when the kip
    axis judges KIP-1303 (harness/judge/tiered.py); as the runner passes them."""
    return local_log_steps(rec.storage) if kip_profile(scenario) is not None else ()


def with_quorum_elected(state: dict[str, Any] | None, epoch_at_start: int | None
                        ) -> dict[str, Any] | None:
    """The observation as the runner judged it: with several controllers it adds whether
    the quorum epoch moved since the step started (Runner._observe), which the recorded
    observation does not carry."""
    if state is None or epoch_at_start is None or state.get("quorum_epoch") is None:
        return state
    return {**state, "quorum_elected": state["quorum_epoch"] != epoch_at_start}


def _reads(step_name: str) -> bool:
    """Whether the recorded step reads records (its consume events are its outcome)."""
    kind = step_kinds.KINDS.get(step_name)
    return kind is not None and kind.reads


def _recorded_end(events: list[dict[str, Any]]) -> str | None:
    return next((str(e.get("verdict")) for e in reversed(events) if e["kind"] == "run_end"),
                None)


def _recorded_reason(events: list[dict[str, Any]]) -> str:
    """The whole-run verdict's reason as the run recorded it."""
    return next((str(e.get("reason") or "") for e in reversed(events)
                 if e["kind"] == "verdict" and e.get("index") is None), "")


def _replay(model: Any, kip: KipJudge, scenario: Scenario, steps: list[RecordedStep],
            run_verdict: str, run_reason: str) -> tuple[str, str]:
    """The release verdict of the recorded steps, re-judged by the model."""
    from harness.judge.axes import read_of

    if run_verdict in NOT_JUDGED and not steps:
        return run_verdict, run_reason or f"{run_verdict} (recorded)"
    for rec in steps:
        kind = step_kinds.KINDS[rec.kind]
        step: Any = kind.with_records(scenario.steps[rec.index].step,
                                      tuple(rec.params.get("record_ids", ())))
        if rec.params.get("resolved"):  # controller roles, as the run resolved them
            step = S.with_resolved(step, dict(rec.params["resolved"]))
        pred = model.apply(step)
        if rec.verdict in (UNSUPPORTED, ERROR) or pred.unsupported:
            return rec.verdict or UNSUPPORTED, f"step {rec.index + 1}: {rec.verdict} (recorded)"
        # Under traffic the model sees the traffic go on after the step (as the runner).
        tick = tick_step(scenario, rec.index, scenario.topic.name)
        if tick is not None:
            model.apply(tick, continues_step=True)
        if not kind.settles(step):  # not waited for: the steps after it check it
            kip_steps(kip, rec.index, step, None, rec.outcome, tick, _before(scenario, rec))
            continue
        if kind.reads and rec.outcome.consumed is None:
            rec.outcome.consumed = []
        observed = None if rec.observed is None else \
            observed_state(model_view(rec.observed, scenario, rec.index,
                                      scenario.topic.name))
        why = (model.explain(observed) if observed is not None else "no observation recorded") \
            or await_mismatch(kind.expects(rec.params), rec.observed or {}) \
            or _outcome_mismatch(pred, rec.outcome)
        kip_steps(kip, rec.index, step, observed, rec.outcome, tick, _before(scenario, rec))
        if why is not None:
            return DIVERGES, f"step {rec.index + 1} {rec.kind}: {why}"
        model.resolve(observed, rec.outcome.acks, read_of(rec.outcome))
    return CONFORMS, ""


def _outcome_mismatch(pred: Any, outcome: Any) -> str | None:
    return (ack_mismatch(pred, outcome) or consume_mismatch(pred, outcome)
            or refusal_mismatch(pred, outcome))


def summary_line(r: AuditResult) -> str:
    cells = []
    for axis in AXES:
        v = r.axes[axis]
        mark = "" if v.as_expected else " (!)"
        cells.append(f"{axis} {v.verdict}{mark}")
    trace = r.trace.get("summary", "trace: no metadata log")
    return f"{r.run_dir.name}: {r.headline.text}; {', '.join(cells)}; {trace}"
