"""Timing steps: latency and bandwidth on links (Toxiproxy toxics; `heal` removes them) and
sleep, the one deliberate wait (for scenarios where time itself is the input).

What each predicts is the model step's (reference/model/steps.py Latency, Bandwidth, Sleep); the
loader keeps every value inside what that prediction covers, against the brokers' effective
configuration (the harness's presets, then the scenario's ``broker_config``)."""

from __future__ import annotations

import time
from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader, check_broker, check_node
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import timing as T
from reference.search import generators as G

MAX_LATENCY_MS = 60_000
MAX_KBPS = 1_000_000
MAX_SLEEP_S = 120
#: Round trips this close to a request timeout are refused: whether the request makes it
#: then depends on scheduling (a fetch may also wait replica.fetch.wait.max.ms).
MARGIN_MS = 1_000
#: Kafka's defaults for the configs these rules read.
KAFKA_DEFAULTS = {"request.timeout.ms": 30_000, "replica.fetch.max.bytes": 1_048_576,
                  "broker.session.timeout.ms": 9_000, "broker.heartbeat.interval.ms": 2_000,
                  "replica.fetch.wait.max.ms": 500}


def effective(cl: ClusterShape, key: str) -> int:
    """A broker config as the brokers run with it (presets, then the scenario's)."""
    from harness.cluster.config import TEST_FRIENDLY_BROKER
    value = {**TEST_FRIENDLY_BROKER, **cl.broker_config}.get(key)
    try:
        return int(value) if value is not None else KAFKA_DEFAULTS[key]
    except ValueError:
        return KAFKA_DEFAULTS[key]


def _link(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape, value_keys: tuple[str, ...],
          brokers_only: bool) -> dict[str, Any]:
    """``node: N`` (a broker: its links to the other brokers) or ``src``/``dst`` (one
    link, ``direction`` both | oneway)."""
    if "node" in it:
        c.unknown(it, ("node",) + value_keys, w)
        node = it["node"][1]
        v = c.int_(node, f"{w}.node")
        check_broker(c, node, f"{w}.node", v, cl)
        return {"node": v}
    c.unknown(it, ("src", "dst", "direction") + value_keys, w)
    out: dict[str, Any] = {}
    for key in ("src", "dst"):
        node = c.required(it, key, n, f"{w} (give src and dst, or node)")
        v = c.int_(node, f"{w}.{key}")
        (check_broker if brokers_only else check_node)(c, node, f"{w}.{key}", v, cl)
        out[key] = v
    if out["src"] == out["dst"]:
        raise c.fail(it["dst"][1], f"{w}.dst", "src and dst are the same node")
    out["direction"] = "both"
    if "direction" in it:
        d = c.str_(it["direction"][1], f"{w}.direction")
        if d not in ("both", "oneway"):
            raise c.fail(it["direction"][1], f"{w}.direction",
                         f"direction must be both or oneway, got {d!r}")
        out["direction"] = d
    return out


def _parse_latency(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.Latency:
    where = _link(c, it, n, w, cl, ("ms", "jitter_ms"), brokers_only=False)
    ms_node = c.required(it, "ms", n, w)
    ms = c.int_(ms_node, f"{w}.ms", 0, MAX_LATENCY_MS)
    jitter = 0
    if "jitter_ms" in it:
        jitter = c.int_(it["jitter_ms"][1], f"{w}.jitter_ms", 0, ms)
    step = T.Latency(ms, jitter, request_timeout_ms=effective(cl, "request.timeout.ms"),
                     **where)
    rtt = step.round_trip_ms()
    controllers = set(cl.controller_ids)
    if {where.get("src"), where.get("dst")} & controllers:
        # Heartbeats: the next one leaves a heartbeat interval after the last reply; past
        # the session timeout the broker is fenced and unfenced in turn (not a settled state).
        limit = (effective(cl, "broker.session.timeout.ms")
                 - effective(cl, "broker.heartbeat.interval.ms") - MARGIN_MS)
        if rtt >= limit:
            raise c.fail(ms_node, f"{w}.ms", f"a round trip of {rtt} ms on a link with a "
                         f"controller reaches broker.session.timeout.ms - "
                         f"broker.heartbeat.interval.ms - {MARGIN_MS} = {limit} ms: the "
                         "broker would be fenced and unfenced in turn, which no settled "
                         "state describes (keep it below, or cut the link)")
        return step
    timeout = step.request_timeout_ms
    low = timeout - MARGIN_MS - effective(cl, "replica.fetch.wait.max.ms")
    if low <= rtt < timeout + MARGIN_MS:
        raise c.fail(ms_node, f"{w}.ms", f"a round trip of {rtt} ms (ms + jitter_ms, both "
                     f"ways) is too close to request.timeout.ms = {timeout} ms to say whether "
                     f"a fetch completes: keep it below {low} or at least "
                     f"{timeout + MARGIN_MS}")
    return step


def _parse_bandwidth(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.Bandwidth:
    where = _link(c, it, n, w, cl, ("kbps",), brokers_only=True)
    node = c.required(it, "kbps", n, w)
    kbps = c.int_(node, f"{w}.kbps", 1, MAX_KBPS)
    timeout = effective(cl, "request.timeout.ms")
    fetch_max = effective(cl, "replica.fetch.max.bytes")
    if kbps * 1024 * timeout < fetch_max * 1000:
        need = -(-fetch_max * 1000 // (1024 * timeout))
        raise c.fail(node, f"{w}.kbps", f"at {kbps} KB/s a full fetch response "
                     f"(replica.fetch.max.bytes = {fetch_max}) takes longer than "
                     f"request.timeout.ms = {timeout} ms, so a follower might never catch up: "
                     f"use at least {need} KB/s (or lower replica.fetch.max.bytes)")
    return T.Bandwidth(kbps, **where)


def _parse_sleep(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.Sleep:
    c.unknown(it, ("seconds",), w)
    node = c.required(it, "seconds", n, w)
    t = c.scalar(node, f"{w}.seconds")
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= MAX_SLEEP_S:
        raise c.fail(node, f"{w}.seconds", f"expected seconds, a number > 0 and <= "
                     f"{MAX_SLEEP_S}, got {t!r}")
    return T.Sleep(t)


def pairs_of(step: Any, brokers: tuple[int, ...]) -> list[tuple[int, int]]:
    """The directed flows (src, dst) whose bytes the step shapes."""
    if step.node is not None:
        others = [b for b in brokers if b != step.node]
        return [(step.node, b) for b in others] + [(b, step.node) for b in others]
    out = [(step.src, step.dst)]
    return out + [(step.dst, step.src)] if step.direction == "both" else out


def _latency(s: Session, at: Target, step: T.Latency, out: StepOutcome) -> None:
    s.faults.latency(pairs_of(step, s.cluster.shape.broker_ids), step.ms, step.jitter_ms,
                     step.params())


def _bandwidth(s: Session, at: Target, step: T.Bandwidth, out: StepOutcome) -> None:
    s.faults.bandwidth(pairs_of(step, s.cluster.shape.broker_ids), step.kbps, step.params())


def _sleep(s: Session, at: Target, step: T.Sleep, out: StepOutcome) -> None:
    s.history.record("sleep", seconds=step.seconds)
    time.sleep(step.seconds)  # the one deliberate sleep: time itself is the step's input


KINDS = (
    StepKind("latency", "latency: {src: A, dst: B, direction: both|oneway, ms: M, "
             "jitter_ms: J} or {node: N, ms: M}: delay the link's bytes (node: every link "
             "between broker N and another broker); heal removes it",
             _parse_latency, _latency, generator=G.LATENCY),
    StepKind("bandwidth", "bandwidth: {src: A, dst: B, direction: both|oneway, kbps: R} or "
             "{node: N, kbps: R}: limit a broker link to R KB/s; heal removes it",
             _parse_bandwidth, _bandwidth, generator=G.BANDWIDTH),
    StepKind("sleep", f"sleep: {{seconds: S}}: let S seconds pass (0 < S <= {MAX_SLEEP_S}), "
             "observing", _parse_sleep, _sleep, generator=G.SLEEP),
)
