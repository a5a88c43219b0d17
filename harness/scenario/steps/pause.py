"""pause / resume: SIGSTOP / SIGCONT of a node (a broker or a controller).

The model sees a paused node as silent on every link, as an isolated one, with its log
unchanged; resume restores that node's links (the other nodes' cuts stay)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.network import concrete, parse_node
from reference.model.controller import Ctx
from reference.model.state import World
from reference.model.steps import NodeRef, isolate, rejoin, resolve_ref


@dataclass(frozen=True, slots=True)
class _OnNode:
    node: NodeRef

    def params(self) -> dict[str, Any]:
        return {"node": self.node}


@dataclass(frozen=True, slots=True)
class Pause(_OnNode):
    kind: ClassVar[str] = "pause"

    def transition(self, w: World, ctx: Ctx) -> World:
        w, n = resolve_ref(w, self.node)
        return w if n is None else isolate(w, n)


@dataclass(frozen=True, slots=True)
class Resume(_OnNode):
    kind: ClassVar[str] = "resume"

    def transition(self, w: World, ctx: Ctx) -> World:
        w, n = resolve_ref(w, self.node)
        return w if n is None else rejoin(w, n)


def _pause(s: Any, at: Target, step: Pause, out: StepOutcome) -> None:
    s.faults.pause(concrete(step.node))


def _resume(s: Any, at: Target, step: Resume, out: StepOutcome) -> None:
    s.faults.resume(concrete(step.node))


KINDS = (
    StepKind("pause", "pause: {node: N|active|last_active}: SIGSTOP the node; silent on "
             "every link, log kept",
             lambda c, it, n, w, cl: Pause(parse_node(c, it, n, w, cl)), _pause),
    StepKind("resume", "resume: {node: N|last_active}: SIGCONT a paused node; its links are back",
             lambda c, it, n, w, cl: Resume(parse_node(c, it, n, w, cl)), _resume),
)
