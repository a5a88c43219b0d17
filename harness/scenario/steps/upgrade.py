"""upgrade: one node stopped cleanly and started again on another build of Kafka, from its
same data dir (a rolling upgrade or downgrade, one node a step; the cluster runs mixed
builds for as many steps as the scenario likes). The model: reference.model.upgrade.

The build is named as ``--kafka-version`` names one (``version: "X.Y.Z"``, quoted), resolved
and cached by harness.cluster.builds; the runner resolves every build a scenario names
before any cluster starts (run/runner/requirements.py ``step_builds``). The run's own build
(``--kafka-version``) is the one the cluster is born on: formatted with, its
metadata.version the newest that build makes by default. Only the local backend runs a
node on another build (Cluster.switch_build); elsewhere the step is UNSUPPORTED."""

from __future__ import annotations

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.network import concrete, node_ref
from harness.scenario.steps.processes import parse_broker, parse_controller
from reference.model import steps as S
from reference.model.upgrade import UpgradeBroker, UpgradeController
from reference.search import generators as G


def parse_version(c: Reader, it: Items, n: Node, w: str) -> str:
    """The step's ``version``: a quoted "X.Y.Z" (unquoted 4.3 would be a number)."""
    node = c.required(it, "version", n, w)
    c.version(node, f"{w}.version")
    return str(c.scalar(node, f"{w}.version"))


def _parse(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Step:
    version = parse_version(c, it, n, w)
    rest = {k: v for k, v in it.items() if k != "version"}
    named = [k for k in ("broker", "controller", "node") if k in rest]
    if len(named) != 1:
        raise c.fail(n, w, "name one node: broker: N, controller: N|active|last_active|"
                     "follower, or node: N (with version: \"X.Y.Z\")")
    if named[0] == "broker":
        return UpgradeBroker(parse_broker(c, rest, n, w, cl), version)
    if named[0] == "controller":
        return UpgradeController(parse_controller(c, rest, n, w, cl), version)
    c.unknown(rest, ("node",), w)
    ref = node_ref(c, rest["node"][1], f"{w}.node", cl)
    if isinstance(ref, int) and ref in cl.broker_ids:
        return UpgradeBroker(ref, version)
    return UpgradeController(ref, version)


def _node(step: UpgradeBroker | UpgradeController) -> int:
    return step.broker if isinstance(step, UpgradeBroker) else concrete(step.controller)


def _upgrade(s: Session, at: Target, step: UpgradeBroker | UpgradeController,
             out: StepOutcome) -> None:
    gap = s.cluster.builds_per_node_gap()
    if gap:
        out.unsupported = f"upgrade to {step.version}: {gap}"
        return
    node = _node(step)
    was = s.cluster.build_of(node).version
    s.faults.upgrade(node, builds.from_maven(step.version))
    out.note = f"node {node}: Kafka {was} -> {step.version}"


def _comes_back(down: set[int], step: object) -> None:
    if isinstance(step, UpgradeBroker):
        down.discard(step.broker)


KINDS = (
    StepKind("upgrade", "upgrade: {broker: N | controller: N|active|last_active|follower | "
             "node: N, version: \"X.Y.Z\"}: stop the node cleanly and start it on Kafka "
             "X.Y.Z's jars (resolved like --kafka-version) from its same data dir, waited for "
             "as restart; a downgrade to a build older than the cluster's metadata.version "
             "is UNSUPPORTED (local backend only)", _parse, _upgrade,
             follows=lambda down, step: _comes_back(down, step), generator=G.UPGRADE),
)
