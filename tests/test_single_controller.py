"""One controller restarted (issue 43): the controller that is down decides nothing, and
once it is back it rebuilds its heartbeat manager with a fresh session for every
registered broker (apache/kafka ClusterControlManager.activate, 3.9 and 4.3.1), so only a
broker that does not heartbeat again is fenced. The old model took the restart for an
outage that fenced every broker."""

from __future__ import annotations

from typing import Any

import pytest

from harness.scenario.loader import parse_scenario
from reference import Model
from reference.model import steps as S
from reference.model.state import PartitionState

HEAD = """version: 1
name: one-controller
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - produce: {count: 1}
"""


def model(profile: str) -> Model:
    sc = parse_scenario(HEAD)
    return Model(profile, sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)


def only(m: Model) -> PartitionState:
    allowed = m.allowed()
    assert len(allowed) == 1, allowed
    return allowed[0]


@pytest.mark.parametrize("profile", ["kafka-4.3", "pre-elr"])
@pytest.mark.parametrize("down", [S.KillController(100), S.StopController(100)])
def test_a_single_controller_down_fences_nobody_and_its_restart_neither(
        profile: str, down: Any) -> None:
    m = model(profile)
    m.apply(S.Produce(count=2, acks="all"))
    before = only(m)
    m.apply(down)
    s = only(m)
    assert (s.leader, s.isr, s.fenced) == (before.leader, before.isr, frozenset())
    m.apply(S.RestartController(100))
    s = only(m)
    assert (s.leader, s.leader_epoch, s.isr, s.fenced) == (
        before.leader, before.leader_epoch, before.isr, frozenset())


def test_a_broker_killed_while_the_controller_is_down_is_fenced_after_its_restart() -> None:
    m = model("kafka-4.3")
    m.apply(S.Produce(count=2, acks="all"))
    m.apply(S.KillController(100))
    m.apply(S.Kill(1))                 # the leader: nobody can fence it or shrink the ISR
    s = only(m)                        # (the metadata still shows it unfenced)
    assert (s.leader, s.isr, s.fenced) == (1, frozenset({1, 2, 3}), frozenset())
    m.apply(S.RestartController(100))  # its session ends one timeout after the restart
    s = only(m)
    assert s.fenced == frozenset({1}) and s.leader in (2, 3) and 1 not in s.isr


def test_a_single_controller_upgrade_fences_nobody() -> None:
    from reference.model.upgrade import UpgradeController
    m = model("kafka-4.3")
    m.apply(S.Produce(count=2, acks="all"))
    before = only(m)
    m.apply(UpgradeController(100, "4.4.0"))
    s = only(m)
    assert (s.leader, s.leader_epoch, s.fenced) == (before.leader, before.leader_epoch,
                                                     frozenset())
