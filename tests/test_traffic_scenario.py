"""The scenario's traffic block (fixtures/scenarios/FORMAT.md "Traffic"): what it takes,
and every error with its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.client.traffic import ConsumerSpec, ProducerSpec, partition_of
from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "scenarios" / "traffic-last-replica-standing.yaml"

BASE = """\
version: 1
name: traffic-test
cluster: {brokers: 3}
topics:
  - {name: t, replicas: [1, 2, 3], partitions: 3, min_insync_replicas: 2}
  - {name: u, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - kill: {broker: 3}
  - restart: {broker: 3}
"""


def load(traffic: str, steps: str = "") -> object:
    text = BASE + steps + "traffic:\n" + traffic
    return parse_scenario(text, "s.yaml")


def test_the_fixture_loads_with_its_traffic() -> None:
    sc = load_scenario(FIXTURE)
    assert sc.traffic is not None
    assert sc.traffic.producers == (
        ProducerSpec(topic="t", count=2, rate=500, acks="all", idempotent=True, keys=1000,
                     records=None, line=25),
        ProducerSpec(topic="t", count=1, rate=200, acks="1", idempotent=False, keys=1000,
                     records=None, line=26))
    assert [c.mode for c in sc.traffic.consumers] == ["assign", "group"]
    assert sc.traffic.consumers[1].group == "readers" and sc.traffic.consumers[1].commit


def test_defaults_and_every_field() -> None:
    sc = load("  producers:\n"
              "    - {}\n"
              "    - {count: 3, rate: null, acks: 0, keys: 7, records: 50, topic: u}\n"
              "  consumers:\n"
              "    - {}\n"
              "    - {count: 2, mode: group, commit: true, isolation: read_committed}\n"
              "    - {mode: assign, group: mine, commit: true, topic: u}\n")
    p0, p1 = sc.traffic.producers
    assert (p0.topic, p0.count, p0.rate, p0.acks, p0.idempotent, p0.keys, p0.records) == \
        ("t", 1, 1000, "all", True, 1000, None)
    assert (p1.topic, p1.count, p1.rate, p1.acks, p1.idempotent, p1.keys, p1.records) == \
        ("u", 3, None, "0", False, 7, 50)
    c0, c1, c2 = sc.traffic.consumers
    assert c0 == ConsumerSpec(topic="t", line=c0.line)
    assert (c1.count, c1.mode, c1.group, c1.commit, c1.isolation) == \
        (2, "group", "traffic-g1", True, "read_committed")
    assert (c2.topic, c2.group, c2.mode) == ("u", "mine", "assign")


def test_a_scenario_without_traffic_has_none() -> None:
    assert parse_scenario(BASE, "s.yaml").traffic is None


def test_keys_spread_over_the_partitions() -> None:
    seen = {partition_of(f"key{i}", 3) for i in range(1000)}
    assert seen == {0, 1, 2}
    assert partition_of("key1", 3) == partition_of("key1", 3)


P, C = "  producers:\n    - ", "  consumers:\n    - "
BAD = [
    ("  producers: []\n", 11, "traffic: lists no producer and no consumer"),
    ("  producers: {count: 1}\n", 11, "traffic.producers: expected a list"),
    ("  producer: []\n", 11, "traffic: unknown key 'producer'"),
    (P + "{count: 0}\n", 12, "traffic.producers[0].count: must be >= 1"),
    (P + "{count: 9}\n", 12, "traffic.producers[0].count: must be <= 8"),
    (P + "{count: 5}\n    - {count: 4}\n", 12,
     "traffic.producers: 9 producers in all; at most 8"),
    (P + "{acks: 2}\n", 12, "traffic.producers[0].acks: acks must be 0, 1 or all"),
    (P + "{acks: 1, idempotent: true}\n", 12,
     "traffic.producers[0].idempotent: idempotence needs acks all"),
    (P + "{idempotent: maybe}\n", 12,
     "traffic.producers[0].idempotent: expected true or false"),
    (P + "{rate: 0}\n", 12, "traffic.producers[0].rate: must be >= 1"),
    (P + "{rate: 100001}\n", 12, "traffic.producers[0].rate: must be <= 100000"),
    (P + "{keys: 0}\n", 12, "traffic.producers[0].keys: must be >= 1"),
    (P + "{records: 0}\n", 12, "traffic.producers[0].records: must be >= 1"),
    (P + "{topic: v}\n", 12, "traffic.producers[0].topic: no topic 'v'"),
    (P + "{speed: 1}\n", 12, "traffic.producers[0]: unknown key 'speed'"),
    (C + "{mode: poll}\n", 12, "traffic.consumers[0].mode: mode must be assign"),
    (C + "{group: 'a b'}\n", 12, "traffic.consumers[0].group: invalid group id 'a b'"),
    (C + "{commit: 1}\n", 12, "traffic.consumers[0].commit: expected true or false"),
    (C + "{isolation: serializable}\n", 12, "traffic.consumers[0].isolation: isolation "
     "must be read_uncommitted or read_committed"),
    (C + "{count: 8}\n    - {}\n", 12, "traffic.consumers: 9 consumers in all; at most 8"),
    (C + "[1]\n", 12, "traffic.consumers[0]: expected a mapping"),
    ("  - 1\n", 11, "traffic: expected a mapping"),
]


@pytest.mark.parametrize(("traffic", "line", "message"), BAD, ids=[b[2] for b in BAD])
def test_bad_traffic_is_named_with_its_line(traffic: str, line: int, message: str) -> None:
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:{line}: {re.escape(message)}"):
        load(traffic)


def test_under_traffic_hwm_is_not_awaited_and_consume_steps_are_refused() -> None:
    ok = "  producers: [{}]\n"
    with pytest.raises(ScenarioError, match=r"^s\.yaml:10: steps\[2\]\.await\.hwm: under "
                                            r"traffic the HWM is judged by bounds"):
        load(ok, "  - await: {hwm: 5, isr: [1, 2, 3]}\n")
    with pytest.raises(ScenarioError, match=r"^s\.yaml:10: steps\[2\]\.consume: under traffic"):
        load(ok, "  - consume: {}\n")
    assert load(ok, "  - await: {isr: [1, 2, 3]}\n  - produce: {count: 2}\n").traffic
