"""Each broker decides by its own build's rules (issue 43: "the active controller's for
controller decisions, each broker's for its own"): the leader's HWM advance
(Partition.maybeIncrementLeaderHW; KIP-966's HWM rule shipped in 3.7) follows the
leader's build, not the active controller's. A cluster born on 3.6.2 (pre-3.7: no HWM
rule) with one node upgraded to 3.7.2."""

from __future__ import annotations

from harness.scenario.loader import parse_scenario
from reference import Model
from reference.model import steps as S
from reference.model.upgrade import UpgradeBroker, UpgradeController

HEAD = """version: 1
name: broker-rules
cluster: {brokers: 2, controllers: 1}
topic: {name: t, replicas: [1, 2], min_insync_replicas: 2}
steps:
  - produce: {count: 1}
"""


def born_36() -> Model:
    sc = parse_scenario(HEAD)
    return Model("pre-3.7", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False,
                 follow_builds=True)


def leader_1_alone(m: Model) -> set[int]:
    """Broker 2 killed: ISR [1] under min ISR 2; two acks=1 records on leader 1. The HWMs
    the model allows afterwards."""
    m.apply(S.Produce(count=2, acks="all"))
    m.apply(S.Kill(2))
    assert {s.leader for s in m.allowed()} == {1} and {len(s.isr) for s in m.allowed()} == {1}
    m.apply(S.Produce(count=2, acks="1"))
    return {s.hwm for s in m.allowed() if s.hwm is not None}


def test_an_upgraded_leader_applies_its_builds_hwm_rule_under_an_old_controller() -> None:
    m = born_36()
    m.apply(UpgradeBroker(1, "3.7.2"))
    m.apply(S.Elect("preferred"))        # 1 leads again (it is the preferred replica)
    assert leader_1_alone(m) == {2}      # 3.7.2's leader: under min ISR the HWM stays


def test_an_old_leader_keeps_its_builds_rule_under_an_upgraded_controller() -> None:
    m = born_36()
    m.apply(UpgradeController(100, "3.7.2"))
    assert leader_1_alone(m) == {4}      # 3.6.2's leader advances with the ISR alone
