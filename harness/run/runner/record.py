"""What the runner records and prints of a step: the model's prediction and the step's
verdict in the history, the step's result handed on, and the short forms of predicted and
observed states the progress lines and results show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.infra.history import History
from harness.judge.compare import DIVERGES
from harness.run.runner.results import RunResult, StepResult
from harness.run.runner.state import RunnerState


class RecordMixin(RunnerState):
    """Recording a step's prediction and verdict; the short forms the runner prints."""

    def _summary(self, preds: list[Any]) -> str:
        return self.lockstep.grouped([_summary(p) for p in preds])

    def _fmt(self, observed: list[dict[str, Any]] | None) -> str:
        if observed is None:
            return _fmt(None)
        return self.lockstep.grouped([_fmt(o) for o in observed])

    def _record_predictions(self, history: History, index: int, preds: list[Any]) -> None:
        for lm, pred in zip(self.lockstep.lanes, preds, strict=True):
            if self.lockstep.multi:
                self._record_prediction(history, index, pred, topic=lm.lane.topic,
                                        partition=lm.lane.partition)
            else:
                self._record_prediction(history, index, pred)

    def _record_prediction(self, history: History, index: int, pred: Any,
                           **where: Any) -> None:
        history.record("prediction", index=index, profile=self.profile, **where,
                       allowed=[s.to_json() for s in pred.allowed],
                       must_survive=sorted(pred.must_survive), hwm_may_move=pred.hwm_may_move,
                       expected_acks=pred.expected_acks, unsupported=pred.unsupported)

    def _finish_step(self, history: History, result: RunResult, step: StepResult) -> str:
        history.record("verdict", index=step.index, verdict=step.verdict, reason=step.reason,
                       field=step.reason.split(":", 1)[0]
                       if step.verdict == DIVERGES and step.reason else None)
        result.steps.append(step)
        self.on_step(step)
        return step.verdict


def _summary(pred: Any) -> str:
    if not pred.allowed:
        return "-"
    return " | ".join(_fmt(s.to_json()) for s in pred.allowed[:3]) + (
        f" (+{len(pred.allowed) - 3})" if len(pred.allowed) > 3 else "")


#: What a step that did not settle prints of its last observation beside the short form:
#: the fields that say why a fault had no effect (who leads the quorum, whether it changed
#: during the step, who is fenced) for a failure seen only in a CI log.
_UNSETTLED_FIELDS = ("leader", "leader_epoch", "isr", "elr", "fenced", "hwm", "controller",
                     "quorum_epoch", "quorum_elected")


def _unsettled(observed: list[dict[str, Any]] | None) -> str:
    if observed is None:
        return "nothing (the observer saw no broker)"
    return "; ".join(", ".join(f"{k}={o[k]}" for k in _UNSETTLED_FIELDS if k in o)
                     for o in observed)


def _fmt(state: Mapping[str, Any] | None) -> str:
    if state is None:
        return "-"
    parts = [f"L={state.get('leader')}", f"ISR={_ids(state.get('isr'))}"]
    if state.get("elr") is not None:
        parts.append(f"ELR={_ids(state.get('elr'))}")
    if state.get("last_known_elr"):
        parts.append(f"LKE={_ids(state.get('last_known_elr'))}")
    if state.get("hwm") is not None:
        parts.append(f"HWM={state.get('hwm')}")
    return " ".join(parts)


def _ids(ids: Any) -> str:
    return "[" + ",".join(str(i) for i in sorted(ids or [])) + "]"
