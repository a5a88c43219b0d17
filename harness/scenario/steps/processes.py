"""Process steps on a broker or a controller: kill (SIGKILL), stop (clean shutdown),
restart, and lose_unflushed (after a kill, the replica cut back as a power loss leaves it).
A controller is named ``controller: N``, ``active`` or ``last_active``."""

from __future__ import annotations

from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import MAX_OFFSET, Items, Reader, check_broker
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.network import concrete, node_ref
from reference.model import steps as S
from reference.search import generators as G


def parse_broker(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape,
                 more: tuple[str, ...] = ()) -> int:
    """The step's ``broker`` key: a broker of the cluster (``more``: its other keys)."""
    c.unknown(it, ("broker",) + more, w)
    node = c.required(it, "broker", n, w)
    b = c.int_(node, f"{w}.broker")
    check_broker(c, node, f"{w}.broker", b, cl)
    return b


def parse_controller(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.NodeRef:
    """The step's ``controller`` key: a controller id of the cluster or a role."""
    c.unknown(it, ("controller",), w)
    node = it["controller"][1]
    ref = node_ref(c, node, f"{w}.controller", cl)
    if isinstance(ref, int) and ref not in cl.controller_ids:
        raise c.fail(node, f"{w}.controller", f"{ref} is not a controller (controllers are "
                     f"{cl.controller_ids[0]}..{cl.controller_ids[-1]})")
    return ref


def _parse_kill(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Step:
    if "controller" in it:
        return S.KillController(parse_controller(c, it, n, w, cl))
    return S.Kill(parse_broker(c, it, n, w, cl))


def _parse_stop(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Step:
    if "controller" in it:
        return S.StopController(parse_controller(c, it, n, w, cl))
    return S.Stop(parse_broker(c, it, n, w, cl))


def _parse_lose(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.LoseUnflushed:
    b = parse_broker(c, it, n, w, cl, ("offset",))
    off = c.int_(c.required(it, "offset", n, w), f"{w}.offset", 0, MAX_OFFSET)
    return S.LoseUnflushed(b, off)


def _goes_down(down: set[int], step: Any) -> None:
    if isinstance(step, S.OnBroker):
        down.add(step.broker)


def _comes_back(down: set[int], step: Any) -> None:
    if isinstance(step, S.OnBroker):
        down.discard(step.broker)


def _after_its_kill(down: set[int], step: Any) -> str | None:
    if step.broker in down:
        return None
    return (f"lose_unflushed of broker {step.broker} must follow a kill of that broker "
            "(before its restart)")


def _node(step: Any) -> int:
    return concrete(step.controller) if isinstance(step, S.OnController) else int(step.broker)


def _kill(s: Session, at: Target, step: Any, out: StepOutcome) -> None:
    s.faults.kill(_node(step))


def _stop(s: Session, at: Target, step: Any, out: StepOutcome) -> None:
    s.faults.stop(_node(step))


def _parse_restart(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Step:
    if "controller" in it:
        return S.RestartController(parse_controller(c, it, n, w, cl))
    b = parse_broker(c, it, n, w, cl, ("wait",))
    wait = c.bool_(it["wait"][1], f"{w}.wait") if "wait" in it else True
    return S.Restart(b, wait)


def _restart(s: Session, at: Target, step: Any, out: StepOutcome) -> None:
    s.faults.restart(_node(step), wait=getattr(step, "wait", True))


def _lose(s: Session, at: Target, step: S.LoseUnflushed, out: StepOutcome) -> None:
    s.faults.lose_unflushed(step.broker, at.topic, at.partition, step.offset)


KINDS = (
    StepKind("kill", "kill: {broker: N} | {controller: N|active|last_active}: SIGKILL the "
             "node (no clean-shutdown file)", _parse_kill, _kill,
             follows=lambda down, step: _goes_down(down, step), generator=G.KILL),
    StepKind("lose_unflushed", "lose_unflushed: {broker: N, offset: O}: after its kill, the "
             "broker's replica keeps only offsets < O", _parse_lose, _lose,
             follows=_after_its_kill, on_partitions=True, generator=G.LOSE_UNFLUSHED),
    StepKind("stop", "stop: {broker: N} | {controller: N|active|last_active}: clean "
             "shutdown (SIGTERM)", _parse_stop, _stop,
             follows=lambda down, step: _goes_down(down, step), generator=G.STOP),
    StepKind("restart", "restart: {broker: N, wait: true|false} | {controller: "
             "N|last_active}: start a killed or stopped node again; wait: false goes on once "
             "its process runs (not settled: the next step or an await {ready: [N]} checks "
             "it)", _parse_restart, _restart,
             follows=lambda down, step: _comes_back(down, step),
             settles=lambda step: bool(getattr(step, "wait", True)), generator=G.RESTART),
)
