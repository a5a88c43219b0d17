"""The generators of the timing steps: ``latency`` and ``bandwidth`` toxics (one at a
time, by the loader's rules around request.timeout.ms), a short ``sleep`` and a
``snapshot`` (time passes while every controller snapshots its metadata log)."""

from __future__ import annotations

import random

from reference.model import steps as S
from reference.model import timing as T
from reference.model.snapshot import DEFAULT_TIMEOUT_S, Snapshot
from reference.search.generators.generator import Gen, Generator, Track

#: Kafka's defaults for the configs the loader's timing rules read (timing.KAFKA_DEFAULTS).
REQUEST_TIMEOUT_MS = 30_000
FETCH_WAIT_MAX_MS = 500
FETCH_MAX_BYTES = 1_048_576
#: The loader's margin around a request timeout (harness/scenario/steps/timing.MARGIN_MS).
MARGIN_MS = 1_000
#: Seconds a generated sleep lasts (short: time as an input, not a wait).
SLEEPS = (1, 2, 3, 5)


def _links(g: Gen) -> list[tuple[int | None, int | None, int | None]]:
    """Where a generated timing toxic goes (src, dst, node): every replication link of a
    broker (node), or one link between two brokers, both ways."""
    return [(None, None, b) for b in g.brokers] + [
        (a, b, None) for a in g.brokers for b in g.brokers if a < b]


def _latency_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    """A short delay (nothing settled changes) or, one time in four, one whose round trip
    passes request.timeout.ms (every fetch over it times out: as good as cut)."""
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    out: list[S.Step] = []
    for src, dst, node in _links(g):
        if rng.random() < 0.25:
            ms = -(-(timeout + MARGIN_MS) // 2) + rng.randint(0, 500)
            jitter = 0
        else:
            ms = rng.randint(20, 400)
            jitter = rng.randint(0, ms // 4)
        out.append(T.Latency(ms, jitter, src=src, dst=dst, node=node,
                             request_timeout_ms=timeout))
    return out


def _shaping_guard(g: Gen, src: int | None, dst: int | None, node: int | None,
                   direction: str) -> str | None:
    ends = [node] if node is not None else [src, dst]
    if not all(isinstance(n, int) and n in g.brokers for n in ends) or \
            (node is None and (src == dst or direction != "both")):
        return "a generated timing toxic is on a broker's links or a broker link, both ways"
    if g.track.shaped:
        return "a link is shaped already (one toxic at a time: heal first)"
    return None


def _latency_guard(step: S.Step, g: Gen) -> str | None:
    """As the loader's rule (timing.py): a round trip near request.timeout.ms is refused
    (whether a fetch makes it then depends on scheduling)."""
    assert isinstance(step, T.Latency)
    why = _shaping_guard(g, step.src, step.dst, step.node, step.direction)
    if why is not None:
        return why
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    if step.request_timeout_ms != timeout:
        return f"request_timeout_ms {step.request_timeout_ms} is not the brokers' {timeout}"
    rtt = step.round_trip_ms()
    low = timeout - MARGIN_MS - g.broker_config("replica.fetch.wait.max.ms", FETCH_WAIT_MAX_MS)
    if not 0 <= step.jitter_ms <= step.ms <= 60_000 or low <= rtt < timeout + MARGIN_MS:
        return (f"a round trip of {rtt} ms is too close to request.timeout.ms = {timeout} ms "
                "(or out of bounds)")
    return None


def _shaped_after(step: S.Step, track: Track) -> None:
    track.shaped = True


LATENCY = Generator("latency", T.Latency, 1, _latency_steps, _latency_guard, _shaped_after)


def _min_kbps(g: Gen) -> int:
    """The loader's floor: a full fetch response within request.timeout.ms."""
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    fetch_max = g.broker_config("replica.fetch.max.bytes", FETCH_MAX_BYTES)
    return -(-fetch_max * 1000 // (1024 * timeout))


def _bandwidth_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    low = _min_kbps(g)
    return [T.Bandwidth(rng.randint(2 * low, 20 * low), src=src, dst=dst, node=node)
            for src, dst, node in _links(g)]


def _bandwidth_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, T.Bandwidth)
    why = _shaping_guard(g, step.src, step.dst, step.node, step.direction)
    if why is None and not _min_kbps(g) <= step.kbps <= 1_000_000:
        why = (f"{step.kbps} KB/s is below {_min_kbps(g)} KB/s (a full fetch response within "
               "request.timeout.ms)")
    return why


BANDWIDTH = Generator("bandwidth", T.Bandwidth, 1, _bandwidth_steps, _bandwidth_guard,
                      _shaped_after)


def _sleep_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, T.Sleep)
    return None if step.seconds in SLEEPS else f"a generated sleep is one of {SLEEPS} s"


SLEEP = Generator("sleep", T.Sleep, 1, lambda g, rng: [T.Sleep(rng.choice(SLEEPS))],
                  _sleep_guard)


def _snapshot_guard(step: S.Step, g: Gen) -> str | None:
    """The step reads the committed offset with DescribeQuorum, which a broker forwards to
    the active controller (as a request to the controller)."""
    assert isinstance(step, Snapshot)
    if step.timeout_s != DEFAULT_TIMEOUT_S:
        return f"a generated snapshot waits the default {DEFAULT_TIMEOUT_S:g} s"
    return g.controller_request("snapshot")


SNAPSHOT = Generator("snapshot", Snapshot, 1, lambda g, rng: [Snapshot()], _snapshot_guard)
