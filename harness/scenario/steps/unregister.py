"""unregister: UnregisterBroker (KIP-631) of a broker that is down, sent with Kafka's own
ClusterTool from the build's jars (kafka-python has no UnregisterBroker request). The
controller drops the registration; the partitions change as at a fencing (the model:
reference.model.steps.Unregister)."""

from __future__ import annotations

import subprocess
from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.infra import tools
from harness.infra.errors import HarnessError
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.processes import parse_broker
from reference.model import steps as S
from reference.search import generators as G

TOOL = "org.apache.kafka.tools.ClusterTool"
TIMEOUT_S = 60


def _parse(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Unregister:
    return S.Unregister(parse_broker(c, it, n, w, cl))


def _after_its_shutdown(down: set[int], step: Any) -> str | None:
    if step.broker in down:
        return None
    return (f"unregister of broker {step.broker} must follow a kill or stop of that broker "
            "(a running broker registers again at its next heartbeat)")


def unregister_broker(s: Session, broker: int) -> str | None:
    """`kafka-cluster.sh unregister --id BROKER` with the build's own ClusterTool: None when
    the controller took it, else the tool's whole output."""
    # Through a broker that reaches the active controller: one cut from it would forward
    # the request late, maybe after the broker has registered again (admin.to_controller).
    current = s.observer.current_brokers()
    if not current:
        raise HarnessError(f"unregister broker {broker}: no running broker reaches the "
                           "active controller to forward UnregisterBroker")
    host, port = s.cluster.observer_address(current[0])
    build = s.cluster.build
    cmd = [str(tools.require_java(build.java_major)), "-cp", build.classpath(), TOOL,
           "unregister", "--bootstrap-server", f"{host}:{port}", "--id", str(broker)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        return (done.stdout + done.stderr).strip()
    return None


def _unregister(s: Session, at: Target, step: S.Unregister, out: StepOutcome) -> None:
    refused = unregister_broker(s, step.broker)
    if refused is not None:
        out.note = f"UnregisterBroker refused: {refused[-300:]}"


KINDS = (
    StepKind("unregister", "unregister: {broker: N}: UnregisterBroker of a broker that is down "
             "(after its kill or stop): its registration dropped",
             _parse, _unregister, follows=_after_its_shutdown, generator=G.UNREGISTER),
)
