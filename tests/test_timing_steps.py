"""Timing steps (latency, bandwidth, sleep, restart wait: false, await ready): what the
loader takes and refuses (file:line), and what the model predicts after each."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from harness.judge.compare import await_mismatch
from harness.scenario.loader import parse_scenario
from harness.scenario.nodes import ScenarioError
from reference import Model
from reference.model.steps import step_to_dict

HEAD = """version: 1
name: timing
cluster: {brokers: 3, controllers: 1}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""


def _load(*written: str, broker_config: str = "") -> Any:
    head = HEAD if not broker_config else HEAD.replace(
        "controllers: 1}", f"controllers: 1, broker_config: {broker_config}}}")
    return parse_scenario(head + "".join(f"  - {w}\n" for w in written))


def _predictions(*written: str) -> list[Any]:
    sc = _load(*written)
    model = Model("kafka-4.1", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
    return [model.apply(s.step) for s in sc.steps]


@pytest.mark.parametrize("text", [
    "latency: {src: 3, dst: 1, direction: both, ms: 1000}",
    "latency: {src: 3, dst: 1, direction: oneway, ms: 1000, jitter_ms: 200}",
    "latency: {node: 3, ms: 100}",
    "latency: {src: 3, dst: 100, direction: both, ms: 200}",
    "bandwidth: {src: 3, dst: 1, direction: both, kbps: 40}",
    "bandwidth: {node: 2, kbps: 100}",
    "sleep: {seconds: 5}",
    "sleep: {seconds: 0.5}",
    "restart: {broker: 3, wait: false}",
    "await: {ready: [2, 3]}",
])
def test_a_timing_step_serialises_to_what_was_written(text: str) -> None:
    pre = ["kill: {broker: 3}"] if text.startswith("restart") else []
    sc = _load(*pre, text)
    assert step_to_dict(sc.steps[-1].step) == {
        k: ({**v, "timeout_s": 30.0} if k == "await" else v)
        for k, v in yaml.safe_load(text).items()}


@pytest.mark.parametrize("text, error", [
    ("latency: {src: 3, dst: 1, ms: 60001}", "latency.ms: must be <= 60000"),
    ("latency: {src: 3, dst: 1, ms: -1}", "latency.ms: must be >= 0"),
    ("latency: {src: 3, dst: 1, ms: 100, jitter_ms: 101}", "jitter_ms: must be <= 100"),
    ("latency: {src: 3, dst: 3, ms: 100}", "src and dst are the same node"),
    ("latency: {src: 3, dst: 1, ms: 100, direction: up}", "direction must be both or oneway"),
    ("latency: {src: 3, ms: 100}", "missing required key 'dst'"),
    ("latency: {node: 100, ms: 100}", "100 is not a broker"),
    ("latency: {node: 3, src: 1, ms: 100}", "unknown key 'src'"),
    ("latency: {src: 3, dst: 1}", "missing required key 'ms'"),
    ("latency: {src: 3, dst: 1, ms: 15000}", "too close to request.timeout.ms = 30000"),
    ("latency: {src: 3, dst: 1, ms: 14500, direction: both}", "too close to request.timeout"),
    ("latency: {src: 3, dst: 100, ms: 1500}", "on a link with a controller"),
    ("bandwidth: {src: 3, dst: 1, kbps: 34}", "use at least 35 KB/s"),
    ("bandwidth: {src: 3, dst: 1, kbps: 0}", "must be >= 1"),
    ("bandwidth: {src: 3, dst: 100, kbps: 100}", "100 is not a broker"),
    ("sleep: {seconds: 0}", "expected seconds, a number > 0 and <= 120"),
    ("sleep: {seconds: 121}", "expected seconds, a number > 0 and <= 120"),
    ("sleep: {seconds: .inf}", "expected seconds"),
    ("sleep: {seconds: true}", "expected seconds"),
    ("sleep: {}", "missing required key 'seconds'"),
    ("restart: {broker: 3, wait: 'no'}", "restart.wait: expected true or false"),
    ("await: {ready: [4]}", "await.ready[0]: 4 is not a broker"),
])
def test_a_bad_timing_step_is_refused_with_its_line(text: str, error: str) -> None:
    pre = ["kill: {broker: 3}"] if text.startswith("restart") else []
    with pytest.raises(ScenarioError) as exc:
        _load("produce: {count: 1}", *pre, text)
    assert f"<scenario>:{7 + len(pre)}: " in str(exc.value), str(exc.value)
    assert error in str(exc.value), str(exc.value)


def test_the_limits_follow_the_effective_broker_config() -> None:
    # request.timeout.ms 10 s: 2 x 4 s is below it and 2 x 6 s above; 2 x 5 s is too close.
    cfg = "{request.timeout.ms: '10000'}"
    _load("latency: {src: 3, dst: 1, ms: 4000}", broker_config=cfg)
    _load("latency: {src: 3, dst: 1, ms: 6000}", broker_config=cfg)
    with pytest.raises(ScenarioError, match="request.timeout.ms = 10000"):
        _load("latency: {src: 3, dst: 1, ms: 5000}", broker_config=cfg)
    # A smaller replica.fetch.max.bytes lets a slower link carry a full fetch response.
    _load("bandwidth: {src: 3, dst: 1, kbps: 5}",
          broker_config="{replica.fetch.max.bytes: '65536'}")


def test_latency_below_the_request_timeout_changes_no_prediction() -> None:
    slow = _predictions("produce: {count: 2}", "latency: {src: 3, dst: 1, ms: 1000}",
                        "produce: {count: 2}")
    plain = _predictions("produce: {count: 2}", "heal: {}", "produce: {count: 2}")
    assert [p.allowed for p in slow] == [p.allowed for p in plain]
    assert {s.isr for s in slow[-1].allowed} == {frozenset({1, 2, 3})}


def test_latency_at_the_request_timeout_drops_the_follower_until_heal() -> None:
    preds = _predictions("produce: {count: 2}", "latency: {src: 3, dst: 1, ms: 16000}",
                         "produce: {count: 2}", "heal: {}")
    # With no new records the slowed follower stays in the ISR (it is at the log end).
    assert {s.isr for s in preds[1].allowed} == {frozenset({1, 2, 3})}
    after = preds[2].allowed
    assert {(s.leader, s.isr, s.hwm) for s in after} == {(1, frozenset({1, 2}), 4)}
    assert preds[2].expected_acks == "acked"
    assert {s.isr for s in preds[3].allowed} == {frozenset({1, 2, 3})}


def test_node_latency_shapes_only_links_between_brokers() -> None:
    preds = _predictions("latency: {node: 1, ms: 16000}", "produce: {count: 1}")
    # Leader 1's followers both lose it; the controller link is untouched: 1 keeps leading
    # alone and min ISR 2 refuses the write.
    assert {(s.leader, s.isr) for s in preds[-1].allowed} == {(1, frozenset({1}))}
    assert preds[-1].expected_acks == "rejected"


def test_bandwidth_and_sleep_change_no_settled_state() -> None:
    shaped = _predictions("kill: {broker: 3}", "produce: {count: 3}",
                          "bandwidth: {src: 3, dst: 1, kbps: 40}", "restart: {broker: 3}",
                          "sleep: {seconds: 10}")
    plain = _predictions("kill: {broker: 3}", "produce: {count: 3}", "heal: {}",
                         "restart: {broker: 3}", "heal: {}")
    assert [p.allowed for p in shaped] == [p.allowed for p in plain]


def test_sleep_moves_only_the_models_clock() -> None:
    sc = _load("sleep: {seconds: 2.5}")
    model = Model("kafka-4.1", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
    before = model.branches[0]
    model.apply(sc.steps[0].step)
    assert model.branches[0].now_ms == before.now_ms + 2500
    assert model.branches[0].partition == before.partition


def test_a_restart_not_waited_for_predicts_what_a_waited_one_does() -> None:
    from harness.scenario.steps import KINDS
    waited = _predictions("kill: {broker: 3}", "restart: {broker: 3}", "produce: {count: 1}")
    sc = _load("kill: {broker: 3}", "restart: {broker: 3, wait: false}",
               "produce: {count: 1}")
    model = Model("kafka-4.1", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
    assert [model.apply(s.step).allowed for s in sc.steps] == [p.allowed for p in waited]
    restart = KINDS["restart"]
    assert not restart.settles(sc.steps[1].step)
    assert restart.settles(_load("kill: {broker: 3}", "restart: {broker: 3}").steps[1].step)


def test_await_ready_fails_while_a_broker_is_fenced_or_unregistered() -> None:
    state = {"leader": 1, "isr": [1, 2], "fenced": [3]}
    assert await_mismatch({"ready": [3]}, state) == \
        "ready: brokers [3] fenced or not registered"
    assert await_mismatch({"ready": [2]}, state) is None
