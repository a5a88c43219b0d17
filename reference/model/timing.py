"""Timing steps (fixtures/scenarios/FORMAT.md "Semantics"): what latency, bandwidth and a
sleep change in a settled world. The model has no clock for the protocol's timeouts: it
predicts settled states, in which every timeout that was due has fired. A timing fault
therefore changes a prediction only where it makes a request never complete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from reference.model.controller import Ctx
from reference.model.protocol import cut_links
from reference.model.state import World, evolve

#: Kafka's default ``request.timeout.ms``: a follower's fetch to its leader is abandoned
#: when no response came within it (BrokerBlockingSender's NetworkClient is built with
#: brokerConfig.requestTimeoutMs; replica.socket.timeout.ms only bounds the connect).
DEFAULT_REQUEST_TIMEOUT_MS = 30_000


def shaped_pairs(w: World, src: int | None, dst: int | None,
                 node: int | None) -> list[tuple[int, int]]:
    """The node pairs a link step shapes: (src, dst), or every pair of broker ``node``
    with another broker (its replication links)."""
    if node is not None:
        return [(node, b.id) for b in w.brokers if b.id != node]
    assert src is not None and dst is not None
    return [(src, dst)]


def _where(node: int | None, src: int | None, dst: int | None,
           direction: str) -> dict[str, Any]:
    if node is not None:
        return {"node": node}
    return {"src": src, "dst": dst, "direction": direction}


@dataclass(frozen=True, slots=True)
class Latency:
    """Delay on the bytes of a link (both directions, or src -> dst only) or of every
    replication link of a broker. A request over a link pair waits a round trip; when
    that round trip (jitter included) reaches the request's timeout, the request never
    completes and the pair is, for the settled state, as good as cut. Only broker-broker
    pairs may get there (a follower's fetch, timed out by the broker's
    ``request.timeout.ms``: ``request_timeout_ms``); the loader keeps pairs with a
    controller below their limit. Below it nothing settled changes: a follower slowed
    down has every record once the records stop (Replica.isCaughtUp: a follower at the
    leader's log end is caught up however late its fetches come), so an ISR shrink the
    delay causes is transient."""

    kind: ClassVar[str] = "latency"
    ms: int
    jitter_ms: int = 0
    src: int | None = None
    dst: int | None = None
    node: int | None = None
    direction: str = "both"  # "both" | "oneway" (links only)
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS

    def params(self) -> dict[str, Any]:
        out = _where(self.node, self.src, self.dst, self.direction)
        out["ms"] = self.ms
        if self.jitter_ms:
            out["jitter_ms"] = self.jitter_ms
        return out

    def round_trip_ms(self) -> int:
        """The longest round trip over a shaped pair."""
        one_way = self.ms + self.jitter_ms
        return one_way if self.node is None and self.direction == "oneway" else 2 * one_way

    def transition(self, w: World, ctx: Ctx) -> World:
        if self.round_trip_ms() < self.request_timeout_ms:
            return w
        pairs = [(a, b) for a, b in shaped_pairs(w, self.src, self.dst, self.node)
                 if a not in w.controllers and b not in w.controllers]
        return cut_links(w, pairs + [(b, a) for a, b in pairs])


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """A rate limit (KB/s) on the bytes of a broker link or of every replication link of
    a broker. Every byte still arrives, and the loader keeps the rate high enough that a
    full fetch response (``replica.fetch.max.bytes``) arrives within
    ``request.timeout.ms``: nothing settled changes, a follower behind catches up later."""

    kind: ClassVar[str] = "bandwidth"
    kbps: int
    src: int | None = None
    dst: int | None = None
    node: int | None = None
    direction: str = "both"

    def params(self) -> dict[str, Any]:
        out = _where(self.node, self.src, self.dst, self.direction)
        out["kbps"] = self.kbps
        return out

    def transition(self, w: World, ctx: Ctx) -> World:
        return w


@dataclass(frozen=True, slots=True)
class Sleep:
    """Time passes and nothing else happens. A settled world has had every timeout it
    was due (fencing, ISR shrink, elections), so it stays as it is: a sleep checks that
    the cluster's state holds still too (but for an election still pending without
    Pre-Vote, protocol.pending_disruptions, as at the start of any step). Only the model's
    clock moves (the ages KIP-1303 compares)."""

    kind: ClassVar[str] = "sleep"
    seconds: float

    def params(self) -> dict[str, Any]:
        return {"seconds": self.seconds}

    def transition(self, w: World, ctx: Ctx) -> World:
        return evolve(w, now_ms=w.now_ms + int(self.seconds * 1000))
