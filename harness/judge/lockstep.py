"""The models a run drives beside the cluster: one per lane (harness/judge/lanes.py), each
with the kip judge that follows it. With one partition this is one model and one judge; with
several, each step is predicted, observed and resolved partition by partition, and a verdict
or a reason names the partition (``t-3: leader: ...``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.judge.axes import KipJudge, Mismatch, ObservedStep, read_of, upgrade_profiles
from harness.judge.lanes import Lane, lanes
from harness.judge.tiered import kip_profile
from harness.scenario import steps as step_kinds
from harness.scenario.loader import Scenario
from harness.scenario.steps.topics import for_lane


@dataclass
class LaneModel:
    lane: Lane
    model: Any
    kip: KipJudge


class Lockstep:
    def __init__(self, scenario: Scenario, profile: Any, elr: bool, mismatch: Mismatch,
                 model_for: Callable[..., Any], follow_builds: bool = False) -> None:
        """``follow_builds``: the run's model follows the active controller's build
        (reference Model); the kip judge's models keep their profile."""
        self.scenario = scenario
        self.lanes: list[LaneModel] = []
        for ln in lanes(scenario):
            model = (model_for(ln.scenario, profile, elr, follow_builds=True) if follow_builds
                     else model_for(ln.scenario, profile, elr))
            more = upgrade_profiles(scenario, elr) if follow_builds else []
            kip = KipJudge(_factory(model_for, ln.scenario, elr), model.profile, elr, mismatch,
                           more, kip_profile(scenario))
            self.lanes.append(LaneModel(ln, model, kip))
        self.multi = len(self.lanes) > 1

    @property
    def first(self) -> Any:
        return self.lanes[0].model

    def said(self, lane: LaneModel, text: str) -> str:
        """``text`` about one lane, naming its partition when there are several."""
        return f"{lane.lane.label}: {text}" if self.multi else text

    def grouped(self, texts: Sequence[str]) -> str:
        """One text per lane, partitions that read alike named together:
        ``t-{0,3}: L=1 ...; t-{1,4}: L=3 ...`` (a lane with several allowed states
        lists them with " | ")."""
        if not self.multi:
            return texts[0]
        by_text: dict[str, dict[str, list[int]]] = {}
        for lm, text in zip(self.lanes, texts, strict=True):
            by_text.setdefault(text, {}).setdefault(lm.lane.topic, []).append(lm.lane.partition)
        return "; ".join(f"{_names(by_topic)}: {text}" for text, by_topic in by_text.items())

    def steps_at(self, index: int, step: Any, record_ids: Sequence[str]) -> list[Any]:
        """Each lane's step ``index`` (``step``: the scenario's step with its controller
        roles resolved), with the records it writes: ``record_ids`` split, in partition
        order, among the lanes the step names."""
        loaded = self.scenario.steps[index]
        kind = step_kinds.KINDS[loaded.kind]
        if not loaded.names_lanes():
            return [self._own(step, lm, index) for lm in self.lanes]
        if not kind.on_partitions:  # a step on one topic: the other topics' lanes await
            return [self._own(step, lm, index)
                    if loaded.targets(lm.lane.partition, lm.lane.topic)
                    else lm.lane.scenario.steps[index].step for lm in self.lanes]
        count = kind.records(loaded.step)
        steps: list[Any] = []
        taken = 0
        for lm in self.lanes:
            own = lm.lane.scenario.steps[index].step
            if loaded.targets(lm.lane.partition, lm.lane.topic):
                own = kind.with_records(own, tuple(record_ids[taken:taken + count]))
                taken += count
            steps.append(own)
        return steps

    @staticmethod
    def _own(step: Any, lm: LaneModel, index: int) -> Any:
        """``step`` as the lane runs it (add_partitions: a new partition's own replicas; an
        existing partition's lane does not see it: its own step, an empty await)."""
        own = for_lane(step, lm.lane.partition)
        return lm.lane.scenario.steps[index].step if own is None else own

    def targeted(self, index: int) -> list[Lane]:
        """The lanes step ``index`` acts on (a step not on partitions: the first, where it
        runs once)."""
        loaded = self.scenario.steps[index]
        if not loaded.names_lanes():
            return [self.lanes[0].lane]
        named = [lm.lane for lm in self.lanes
                 if loaded.targets(lm.lane.partition, lm.lane.topic)]
        return named if step_kinds.KINDS[loaded.kind].on_partitions else named[:1]

    def expects(self, index: int) -> list[Mapping[str, Any]]:
        """What each lane's step ``index`` itself expects (an await's fields)."""
        out = []
        for lm in self.lanes:
            loaded = lm.lane.scenario.steps[index]
            ((name, params),) = dict(loaded.mapping).items()
            out.append(step_kinds.KINDS[name].expects(dict(params or {})))
        return out

    def apply(self, steps: Sequence[Any]) -> list[Any]:
        return [lm.model.apply(s) for lm, s in zip(self.lanes, steps, strict=True)]

    def ticks(self, index: int) -> list[Any]:
        """Under traffic, each lane's traffic after step ``index`` (judge/traffic.py
        ``tick_step``; None for a lane no producer writes to, or without traffic)."""
        from harness.judge.traffic import tick_step
        return [tick_step(self.scenario, index, lm.lane.topic) for lm in self.lanes]

    def apply_ticks(self, ticks: Sequence[Any], preds: Sequence[Any]) -> list[Any]:
        """The model after the traffic's tick: each lane's prediction of its settled
        state (``preds``, the step's own, where a lane has no tick)."""
        return [pred if tick is None else lm.model.apply(tick, continues_step=True)
                for lm, tick, pred in zip(self.lanes, ticks, preds, strict=True)]

    def explain(self, observed: Sequence[Any]) -> str | None:
        for lm, state in zip(self.lanes, observed, strict=True):
            why = lm.model.explain(state)
            if why is not None:
                return self.said(lm, why)
        return None

    def resolve(self, observed: Sequence[Any], outcomes: Sequence[Any]) -> None:
        for lm, state, outcome in zip(self.lanes, observed, outcomes, strict=True):
            lm.model.resolve(state, outcome.acks, read_of(outcome))

    def kip_step(self, index: int, steps: Sequence[Any], observed: Sequence[Any] | None,
                 outcomes: Sequence[Any], ticks: Sequence[Any] | None = None,
                 before: Sequence[tuple[Any, ...]] | None = None) -> None:
        """``before``: each lane's model steps the kip model takes first (the local logs
        observed at the previous step's end: tiered.local_log_steps)."""
        for i, lm in enumerate(self.lanes):
            seen = None if observed is None else observed[i]
            kip_steps(lm.kip, index, steps[i], seen, outcomes[i],
                      None if ticks is None else ticks[i], () if before is None else before[i])


def kip_steps(kip: KipJudge, index: int, step: Any, observed: Any, outcome: Any,
              tick: Any, before: tuple[Any, ...] = ()) -> None:
    """The kip judge's view of one step: the step with its outcome and observation, or
    under traffic the step with its outcome (its acks checked), then the traffic's tick
    with the observation (the state compared); runner and audit alike. ``before``: model
    steps taken first (ObservedStep.before)."""
    if tick is None:
        kip.step(ObservedStep(index, step, observed, outcome, before=before))
        return
    from harness.scenario.steps import StepOutcome
    kip.step(ObservedStep(index, step, None, outcome, before=before))
    kip.step(ObservedStep(index, tick, observed, StepOutcome(), continues=True))


def _names(by_topic: Mapping[str, list[int]]) -> str:
    """``t-{0,3}`` for partitions 0 and 3 of t; topics joined with commas."""
    return ",".join(f"{t}-{ps[0]}" if len(ps) == 1 else f"{t}-{{{','.join(map(str, ps))}}}"
                    for t, ps in by_topic.items())


def _factory(model_for: Callable[[Any, Any, bool], Any], scenario: Scenario, elr: bool
             ) -> Callable[[Any], Any]:
    return lambda profile: model_for(scenario, profile, elr)

