"""The run's three axes: the release verdict is the lockstep run's; kip, safety and the
trace are asked of harness/judge lane by lane, as `audit` asks them offline, and recorded."""

from __future__ import annotations

from harness.infra.history import History
from harness.judge import trace_check
from harness.judge.axes import AXES, AxisVerdict, RunEvidence, judge_run
from harness.judge.lanes import lane_events, merge_axes
from harness.judge.tiered import apply_tiered
from harness.judge.traffic import apply_traffic
from harness.run.runner.requirements import elr_enabled
from harness.run.runner.results import RunResult
from harness.run.runner.state import RunnerState


class JudgingMixin(RunnerState):
    """The run's three axes, asked of harness/judge once the run has read."""

    def _judge_axes(self, history: History, result: RunResult) -> None:
        """The release verdict is the lockstep run's; kip, safety and the trace are judged
        here, lane by lane, as `audit` judges them offline (judges.judge_run)."""
        logs = trace_check.read_logs(history.run_dir)
        # A rolling upgrade: each record judged by its writer's build (trace_check.memo).
        trace_under = trace_check.memo(logs, self.scenario, self._events,
                                       elr_enabled(self.scenario, self.build),
                                       self.build.version if self.follow_builds else None)
        per_lane = []
        for i, lm in enumerate(self.lockstep.lanes):
            release = AxisVerdict("release", result.verdict, result.reason)
            evidence = RunEvidence(lm.lane.scenario, self.build.version_tuple,
                                   lane_events(self._events, self.scenario, lm.lane),
                                   None if self._raw_checks is None else self._raw_checks[i],
                                   trace_under, trace_check.SAFETY_RULES)
            per_lane.append((lm.lane, judge_run(release, lm.model.profile, lm.kip, evidence)))
        result.axes = merge_axes(per_lane)
        verdict = apply_traffic(result.axes, history.run_dir, self.scenario, self._events)
        apply_tiered(result.axes, history.run_dir, self.scenario, self._events)
        if verdict is not None:
            history.update(traffic={**(history.meta.get("traffic") or {}),
                                    "checks": verdict.to_json()})
        for finding in result.axes["release"].details:
            history.record("trace", profile=self.profile, **finding)
        for axis in AXES:
            history.record("axis", **result.axes[axis].to_json())
        history.update(axes={a: result.axes[a].to_json() for a in AXES},
                       trace=trace_check.describe(result.axes["release"].details, logs),
                       headline=result.headline.to_json())
