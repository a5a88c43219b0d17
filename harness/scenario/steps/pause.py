"""pause / resume: SIGSTOP / SIGCONT of a node (a broker or a controller). The model
(reference.model.steps.Pause / Resume) sees a paused node as a silenced one, its log
unchanged; resume gives the node back, not the network (cuts an isolate or cut made stay
until heal), as SIGCONT does."""

from __future__ import annotations

from harness.client.session import Session
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.network import concrete, parse_node
from reference.model.steps import Pause, Resume
from reference.search import generators as G


def _pause(s: Session, at: Target, step: Pause, out: StepOutcome) -> None:
    s.faults.pause(concrete(step.node))


def _resume(s: Session, at: Target, step: Resume, out: StepOutcome) -> None:
    s.faults.resume(concrete(step.node))


KINDS = (
    StepKind("pause", "pause: {node: N|active|last_active}: SIGSTOP the node; silent on "
             "every link, log kept",
             lambda c, it, n, w, cl: Pause(parse_node(c, it, n, w, cl)), _pause,
             generator=G.PAUSE),
    StepKind("resume", "resume: {node: N|last_active}: SIGCONT a paused node; it answers "
             "again (cut links stay cut)",
             lambda c, it, n, w, cl: Resume(parse_node(c, it, n, w, cl)), _resume,
             generator=G.RESUME),
)
