"""await: an explicit expectation the cluster must reach (leaderless: ``leader: null``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import MAX_OFFSET, Items, Reader, broker_ids, check_broker
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import steps as S

AWAIT_KEYS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
              "fenced", "adding", "removing", "ready", "timeout_s")


def _parse_await(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Await:
    c.unknown(it, AWAIT_KEYS, w)
    expect: dict[str, Any] = {}
    timeout = 30.0
    for key, (_, v) in it.items():
        where = f"{w}.{key}"
        if key == "timeout_s":
            timeout = c.seconds(v, where)
        elif key == "leader":
            val = c.scalar(v, where)
            if val is not None:
                val = c.int_(v, where)
                check_broker(c, v, where, val, cl)
            expect[key] = val
        elif key in ("leader_epoch", "hwm"):
            expect[key] = c.int_(v, where, 0, MAX_OFFSET)
        else:
            expect[key] = broker_ids(c, v, where, cl)
    return S.Await(expect, timeout)


def _await(s: Session, at: Target, step: S.Await, out: StepOutcome) -> None:
    """Nothing to do: the runner polls until the expectation (and the model) hold."""


def _expects(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return params


KINDS = (
    StepKind("await", "await: {leader: N|null, leader_epoch: E, replicas: [...], isr: [...], "
             "elr: [...], hwm: H, adding: [...], removing: [...], ..., ready: [...], "
             "timeout_s: T}: wait until the cluster shows these fields (replicas in order; "
             "ready: these brokers' servers started since their last restart, registered "
             "and unfenced)",
             _parse_await, _await, expects=_expects, on_partitions=True),
)
