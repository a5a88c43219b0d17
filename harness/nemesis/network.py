"""Link faults on the per-link proxies: isolate, partition, cut, heal, latency, bandwidth.

A partition is a blackhole, not a reset: Toxiproxy's `timeout` toxic with timeout=0 drops
the bytes and keeps the connection open, as a real network partition does. The table of
blocked flows is also the harness's knowledge of who can reach whom, which the observer
uses to pick a broker whose view is current.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.cluster.topology import CLIENT
from harness.infra.errors import UsageError

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

_BLACKHOLE = "blackhole"


class Network:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.blocked: set[tuple[int, int]] = set()  # directed flows whose bytes are dropped
        self._applied: set[tuple[str, str]] = set()  # (proxy, stream) with a blackhole
        self._links = set(cluster.shape.links())
        self._shaped: set[tuple[str, str]] = set()  # (proxy, toxic name) for latency/bandwidth
        self.paused: set[int] = set()  # nodes SIGSTOPped (Faults keeps it up to date)

    def _check(self, *nodes: int) -> None:
        known = set(self.cluster.shape.nodes) | {CLIENT}
        unknown = [n for n in nodes if n not in known]
        if unknown:
            raise UsageError(f"unknown node(s) {unknown}; this cluster has {sorted(known)}")

    # -- faults -----------------------------------------------------------------------
    def cut(self, src: int, dst: int, direction: str = "both") -> None:
        """Drop bytes from src to dst (and dst to src when direction is 'both')."""
        self._check(src, dst)
        if direction not in ("both", "oneway"):
            raise UsageError(f"direction {direction!r}: use 'both' or 'oneway'")
        self.blocked.add((src, dst))
        if direction == "both":
            self.blocked.add((dst, src))
        self._apply()

    def isolate(self, node: int) -> None:
        """Cut `node` from every other node and from the harness's clients."""
        self._check(node)
        for other in [*self.cluster.shape.nodes, CLIENT]:
            if other != node:
                self.blocked |= {(node, other), (other, node)}
        self._apply()

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        """Cut every link between nodes of different groups; unlisted nodes keep all links."""
        sets = [set(g) for g in groups]
        self._check(*[n for g in sets for n in g])
        for i, left in enumerate(sets):
            for right in sets[i + 1:]:
                self.blocked |= {(a, b) for a in left for b in right}
                self.blocked |= {(b, a) for a in left for b in right}
        self._apply()

    def heal(self) -> None:
        self.blocked.clear()
        self.cluster.toxiproxy().reset()
        self._applied.clear()
        self._shaped.clear()

    def latency(self, src: int, dst: int, ms: int, jitter_ms: int = 0) -> None:
        """Delay the bytes flowing from src to dst by ms (+/- jitter_ms)."""
        self._shape(src, dst, "latency", {"latency": ms, "jitter": jitter_ms})

    def bandwidth(self, src: int, dst: int, kbps: int) -> None:
        """Limit the bytes flowing from src to dst to kbps KB/s."""
        self._shape(src, dst, "bandwidth", {"rate": kbps})

    def connected(self, a: int, b: int) -> bool:
        """Whether a and b reach each other: no blackhole either way and neither paused
        (a SIGSTOPped node answers nobody)."""
        if a in self.paused or b in self.paused:
            return False
        return (a, b) not in self.blocked and (b, a) not in self.blocked

    # -- mechanics ----------------------------------------------------------------------
    def _shape(self, src: int, dst: int, kind: str, attrs: dict[str, float]) -> None:
        self._check(src, dst)
        api = self.cluster.toxiproxy()
        for proxy, stream in self._streams(src, dst):
            name = f"{kind}-{stream}"
            api.remove_toxic(proxy, name)
            api.add_toxic(proxy, name, kind, stream, attrs)
            self._shaped.add((proxy, name))

    def _streams(self, src: int, dst: int) -> list[tuple[str, str]]:
        """The proxy streams that carry bytes flowing from src to dst."""
        out = []
        if (src, dst) in self._links:
            out.append((self.cluster.proxy_name(src, dst), "upstream"))
        if (dst, src) in self._links:
            out.append((self.cluster.proxy_name(dst, src), "downstream"))
        return out

    def _apply(self) -> None:
        wanted = {s for flow in self.blocked for s in self._streams(*flow)}
        api = self.cluster.toxiproxy()
        for proxy, stream in sorted(wanted - self._applied):
            api.add_toxic(proxy, f"{_BLACKHOLE}-{stream}", "timeout", stream, {"timeout": 0})
        for proxy, stream in sorted(self._applied - wanted):
            api.remove_toxic(proxy, f"{_BLACKHOLE}-{stream}")
        self._applied = wanted
