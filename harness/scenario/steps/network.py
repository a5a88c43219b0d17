"""Network steps (Toxiproxy blackholes, no RST): isolate, partition, cut, heal."""

from __future__ import annotations

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.infra.errors import HarnessError
from harness.scenario.nodes import Items, Reader, check_node
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import steps as S
from reference.search import generators as G


def node_ref(c: Reader, node: Node, where: str, cl: ClusterShape) -> S.NodeRef:
    """A broker or controller id, or a controller role: ``active`` (the quorum leader when
    the step runs), ``last_active`` (what the latest ``active`` resolved to) or
    ``follower`` (the lowest-id controller that is not active)."""
    v = c.scalar(node, where)
    if isinstance(v, str):
        if v not in S.ROLES:
            raise c.fail(node, where, "expected a node id, active, last_active or follower, "
                         f"got {v!r}")
        if v == S.FOLLOWER and len(cl.controller_ids) < 2:
            raise c.fail(node, where, "follower names a controller that is not active: "
                         "this cluster has one controller (set cluster.controllers: 3)")
        return v
    v = c.int_(node, where)
    check_node(c, node, where, v, cl)
    return v


def concrete(ref: S.NodeRef) -> int:
    """The node id the runner resolved a role to (steps run with ids only)."""
    if not isinstance(ref, int):
        raise HarnessError(f"{ref!r} was not resolved to a controller before the step ran")
    return ref


def parse_node(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.NodeRef:
    """The step's one key, ``node``: a broker or a controller of the cluster, or a role."""
    c.unknown(it, ("node",), w)
    return node_ref(c, c.required(it, "node", n, w), f"{w}.node", cl)


def _parse_partition(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Partition:
    c.unknown(it, ("groups",), w)
    gnode = c.required(it, "groups", n, w)
    groups: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for i, g in enumerate(c.sequence(gnode, f"{w}.groups")):
        members: list[int] = []
        for j, x in enumerate(c.sequence(g, f"{w}.groups[{i}]")):
            v = c.int_(x, f"{w}.groups[{i}][{j}]")
            check_node(c, x, f"{w}.groups[{i}][{j}]", v, cl)
            if v in seen:
                raise c.fail(x, f"{w}.groups[{i}][{j}]", f"node {v} is in two groups")
            seen.add(v)
            members.append(v)
        if not members:
            raise c.fail(g, f"{w}.groups[{i}]", "empty group")
        groups.append(tuple(members))
    if len(groups) < 2:
        raise c.fail(gnode, f"{w}.groups", "need at least two groups")
    return S.Partition(tuple(groups))


def _parse_cut(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Cut:
    c.unknown(it, ("src", "dst", "direction"), w)
    vals = [node_ref(c, c.required(it, key, n, w), f"{w}.{key}", cl) for key in ("src", "dst")]
    if vals[0] == vals[1]:
        raise c.fail(it["dst"][1], f"{w}.dst", "src and dst are the same node")
    direction = "both"
    if "direction" in it:
        direction = c.str_(it["direction"][1], f"{w}.direction")
        if direction not in ("both", "oneway"):
            raise c.fail(it["direction"][1], f"{w}.direction",
                         f"direction must be both or oneway, got {direction!r}")
    return S.Cut(vals[0], vals[1], direction)


def _parse_heal(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Heal:
    c.unknown(it, (), w)
    return S.Heal()


def _isolate(s: Session, at: Target, step: S.Isolate, out: StepOutcome) -> None:
    s.faults.isolate(concrete(step.node))


def _partition(s: Session, at: Target, step: S.Partition, out: StepOutcome) -> None:
    s.faults.partition(step.groups)


def _cut(s: Session, at: Target, step: S.Cut, out: StepOutcome) -> None:
    s.faults.cut(concrete(step.src), concrete(step.dst), step.direction)


def _heal(s: Session, at: Target, step: S.Heal, out: StepOutcome) -> None:
    s.faults.heal()


KINDS = (
    StepKind("isolate", "isolate: {node: N|active|last_active}: cut every link to and from "
             "node N",
             lambda c, it, n, w, cl: S.Isolate(parse_node(c, it, n, w, cl)), _isolate,
             generator=G.ISOLATE),
    StepKind("partition", "partition: {groups: [[...], [...]]}: cut every link between groups",
             _parse_partition, _partition, generator=G.PARTITION),
    StepKind("cut", "cut: {src: A, dst: B, direction: both|oneway}: cut one link (A, B: "
             "ids, active or last_active)",
             _parse_cut, _cut, generator=G.CUT),
    StepKind("heal", "heal: {}: restore every link", _parse_heal, _heal,
             generator=G.HEAL),
)
