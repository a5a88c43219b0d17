"""The observer: reads cluster state over the wire on a path faults never touch.

Per partition: leader, leader epoch, replicas, ISR, ELR, LastKnownELR (DescribeTopicPartitions,
API key 75), HWM (ListOffsets to the leader), and which brokers are fenced (DescribeCluster).
It asks a broker whose view is current: one that is running and, as far as the harness's
own fault table knows, connected to the controllers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka import KafkaAdminClient
from kafka.admin import OffsetSpec
from kafka.protocol.admin import DescribeClusterRequest, DescribeTopicPartitionsRequest
from kafka.structs import TopicPartition

if TYPE_CHECKING:
    from harness.backends.base import Cluster

logging.getLogger("kafka").setLevel(logging.CRITICAL)
_REQUEST_TIMEOUT_MS = 4000


class ObserveError(Exception):
    """No current broker answered."""


class Observer:
    def __init__(self, cluster: Cluster, record: bool = True,
                 current_brokers: Callable[[], list[int]] | None = None) -> None:
        self.cluster = cluster
        self.record = record
        self._current = current_brokers or self._running_brokers
        self._admin: KafkaAdminClient | None = None

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def _running_brokers(self) -> list[int]:
        return [b for b in self.cluster.shape.broker_ids if self.cluster.is_running(b)]

    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            servers = [f"{h}:{p}" for h, p in (self.cluster.observer_address(b)
                                               for b in self.cluster.shape.broker_ids)]
            self._admin = KafkaAdminClient(
                bootstrap_servers=servers, client_id="kafka-chaos-observer",
                request_timeout_ms=_REQUEST_TIMEOUT_MS, metadata_max_age_ms=1000,
                reconnect_backoff_max_ms=500)
        return self._admin

    def _send(self, node: int, request: Any) -> Any:
        admin = self.admin()

        async def call() -> Any:
            return await admin._manager.send(request, node_id=node)

        try:
            return admin._manager.run(call)
        except Exception:
            admin._manager.cluster.request_update()
            raise

    # -- brokers --------------------------------------------------------------------
    def broker_states(self, via: int | None = None) -> dict[int, bool]:
        """broker id -> fenced (or not registered), in the view of broker `via`."""
        nodes = [via] if via is not None else self._current()
        last: Exception | None = None
        for node in nodes:
            try:
                resp = self._send(node, DescribeClusterRequest(include_fenced_brokers=True))
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

    def quorum(self) -> dict[str, Any]:
        """KRaft quorum of the metadata log: leader, epoch, high watermark, voters' lag."""
        raw = self.admin().describe_metadata_quorum()
        part = raw["topics"][0]["partitions"][0]
        state = {"leader": part["leader_id"], "leader_epoch": part["leader_epoch"],
                 "high_watermark": part["high_watermark"],
                 "voters": {v["replica_id"]: v["log_end_offset"] for v in part["current_voters"]},
                 "observers": {o["replica_id"]: o["log_end_offset"] for o in part["observers"]}}
        if self.record:
            self.cluster.history.record("quorum", state=state)
        return state

    # -- partitions -----------------------------------------------------------------
    def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
        """(state, source broker) of one partition; state follows SCHEMA.md."""
        last: Exception | None = None
        for node in self._current():
            try:
                state = self._describe(node, topic, partition)
                state["fenced"] = sorted(b for b, f in self.broker_states(node).items() if f)
                state["hwm"] = self.hwm(topic, partition, state["leader"])
                if self.record:
                    self.cluster.history.record("observation", topic=topic, partition=partition,
                                                state=state, source=node)
                return state, node
            except Exception as exc:  # noqa: BLE001 - try the next broker
                last = exc
        raise ObserveError(f"no current broker described {topic}-{partition} ({last})")

    def _describe(self, node: int, topic: str, partition: int) -> dict[str, Any]:
        req = DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)],
            response_partition_limit=2000, cursor=None)
        resp = self._send(node, req)
        for t in resp.topics:
            for p in t.partitions:
                if t.name == topic and p.partition_index == partition:
                    if p.error_code:
                        raise ObserveError(f"{topic}-{partition}: error {p.error_code}")
                    return {
                        "leader": p.leader_id if p.leader_id >= 0 else None,
                        "leader_epoch": p.leader_epoch,
                        "replicas": list(p.replica_nodes),
                        "isr": sorted(p.isr_nodes),
                        "elr": sorted(p.eligible_leader_replicas or []),
                        "last_known_elr": sorted(p.last_known_elr or []),
                    }
        raise ObserveError(f"{topic}-{partition} not found on broker {node}")

    def hwm(self, topic: str, partition: int, leader: int | None) -> int | None:
        if leader is None or not self.cluster.is_running(leader):
            return None
        tp = TopicPartition(topic, partition)
        admin = self.admin()
        req = admin._list_partition_offsets_request({tp: OffsetSpec.LATEST}, 0)
        try:
            resp = self._send(leader, req)
            return int(admin._list_partition_offsets_process_response(resp)[tp].offset)
        except Exception:  # noqa: BLE001 - a leader in transition has no HWM to report
            return None
