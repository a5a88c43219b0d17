"""Broker registrations: which brokers are fenced (or not registered), DescribeCluster
(API key 60) asked of a current broker."""

from __future__ import annotations

from kafka.protocol.admin import DescribeClusterRequest

from harness.client.observe.connection import Connection, ObserveError


class BrokerStates(Connection):
    def broker_states(self, via: int | None = None) -> dict[int, bool]:
        """broker id -> fenced (or not registered), in the view of broker `via`."""
        nodes = [via] if via is not None else self._current()
        last: Exception | None = None
        for node in nodes:
            try:
                resp = self._send_once(("DescribeCluster",), node,
                                       DescribeClusterRequest(include_fenced_brokers=True))
                states = {b.broker_id: bool(getattr(b, "is_fenced", False)) for b in resp.brokers}
                # Before 4.0 (DescribeCluster < v2) fenced brokers are simply left out.
                return {b: states.get(b, True) for b in self.cluster.shape.broker_ids}
            except Exception as exc:  # noqa: BLE001 - try the next broker
                last = exc
        raise ObserveError(f"no broker answered DescribeCluster ({last})")

    def unfenced_brokers(self) -> set[int]:
        try:
            return {b for b, fenced in self.broker_states().items() if not fenced}
        except ObserveError:
            return set()
