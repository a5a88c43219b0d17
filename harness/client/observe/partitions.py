"""Each current broker's view of a partition (leader, leader epoch, replicas, ISR, ELR,
LastKnownELR): DescribeTopicPartitions (API key 75, 3.8+) or the Metadata API (API key 3)
on older builds, and which of the views to trust (the freshest, never one older than a
leader epoch seen before)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka.protocol.admin import DescribeTopicPartitionsRequest
from kafka.protocol.metadata import MetadataRequest

from harness.client.observe.connection import Connection, ObserveError

#: Metadata v7 is the first to carry a partition's leader epoch (KIP-320).
_METADATA_LEADER_EPOCH_SINCE = 7


def _freshest(views: list[tuple[int, dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
    """The view to trust among brokers the fault table calls current. A broker that was
    just healed or restarted can still hold stale metadata (an old leader, an old ISR), so
    take the highest leader epoch, and among those the view most brokers share."""
    epochs = [v["leader_epoch"] for _, v in views if v["leader_epoch"] is not None]
    top = max(epochs) if epochs else None
    newest = [(n, v) for n, v in views if top is None or v["leader_epoch"] == top]

    def key(v: dict[str, Any]) -> tuple[Any, ...]:
        return (v["leader"], tuple(v["isr"]), tuple(v["elr"] or ()),
                tuple(v["last_known_elr"] or ()))

    counts = Counter(key(v) for _, v in newest)
    return max(newest, key=lambda nv: counts[key(nv[1])])


#: UNKNOWN_TOPIC_OR_PARTITION: the broker's metadata holds no such topic.
UNKNOWN_TOPIC = 3


def absent_view() -> dict[str, Any]:
    """A broker's view of a topic its metadata does not hold (deleted, or not created
    yet): no replicas, no leader. The model predicts the same of a deleted topic's
    partition (reference.model.topics.DeleteTopic); before step 0, and for a topic that
    should exist, it matches no prediction and the caller polls on."""
    return {"leader": -1, "leader_epoch": None, "replicas": [], "isr": [], "elr": [],
            "last_known_elr": [], "absent": True}


class PartitionViews(Connection):
    # Set by Observer.__init__ (declared here for the type checker).
    api: str
    _epochs: dict[tuple[str, int], int]

    def freshest_view(self, topic: str, partition: int = 0) -> tuple[int, dict[str, Any]]:
        """(broker, its view) of one partition: the freshest among the current brokers'
        metadata views, before any HWM, fencing, reassignment or metadata-log read."""
        views, last = self._views(self._current(), topic, partition)
        if not views:
            raise ObserveError(f"no current broker described {topic}-{partition} ({last})")
        return self._not_stale(topic, partition, _freshest(views))

    def _not_stale(self, topic: str, partition: int, view: tuple[int, dict[str, Any]]
                   ) -> tuple[int, dict[str, Any]]:
        """``view`` unless its leader epoch is older than one seen before: a broker just
        healed or restarted may still hold the partition as it was when it was cut off (seen
        on 4.3.1, fuzz-s1127-34: the only live broker, healed, still showed itself leader at
        epoch 0 with HWM 4 after epoch 2). Clients refuse such metadata too (KIP-320), so it
        is no observation: ObserveError, and the caller polls again."""
        node, state = view
        epoch, seen = state.get("leader_epoch"), self._epochs.get((topic, partition))
        if epoch is not None and seen is not None and epoch < seen:
            raise ObserveError(f"{topic}-{partition}: broker {node} shows leader epoch {epoch}, "
                               f"older than epoch {seen} seen before (its metadata has not "
                               "caught up)")
        if epoch is not None:
            self._epochs[(topic, partition)] = max(epoch, seen or 0)
        return view

    def _views(self, nodes: list[int], topic: str, partition: int
               ) -> tuple[list[tuple[int, dict[str, Any]]], Exception | None]:
        key = self._view_key(topic)
        requests = {n: self._view_request(topic) for n in nodes}
        if self._look is None:
            answers = self._send_each(requests)
        else:
            todo = {n: r for n, r in requests.items() if (n, *key) not in self._look}
            answers = {n: self._look[(n, *key)] for n in nodes if n not in todo}
            for node, answer in self._send_each(todo).items():
                answers[node] = answer
                if not isinstance(answer, Exception):
                    self._look[(node, *key)] = answer
        views, last = [], None
        for node in nodes:
            try:
                if isinstance(answers[node], Exception):
                    raise answers[node]
                views.append((node, self._view(node, answers[node], requests[node], topic,
                                               partition)))
            except Exception as exc:  # noqa: BLE001 - the other brokers may answer
                last = exc
        return views, last

    def _describe(self, node: int, topic: str, partition: int) -> dict[str, Any]:
        """One broker's view of a partition."""
        request = self._view_request(topic)
        answer = self._send_once(self._view_key(topic), node, request)
        return self._view(node, answer, request, topic, partition)

    def _view_key(self, topic: str) -> tuple[str, str]:
        return (self.api, topic)

    def _view_request(self, topic: str) -> Any:
        """A new request per broker: the client sets the version it negotiates on it."""
        if self.api == "Metadata":
            return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                   allow_auto_topic_creation=False)
        return DescribeTopicPartitionsRequest(
            topics=[DescribeTopicPartitionsRequest.TopicRequest(name=topic)],
            response_partition_limit=2000, cursor=None)

    def _view(self, node: int, resp: Any, req: Any, topic: str, partition: int
              ) -> dict[str, Any]:
        if self.api == "Metadata":
            return self._metadata_view(node, resp, req, topic, partition)
        return self._dtp_view(node, resp, topic, partition)

    @staticmethod
    def _metadata_view(node: int, resp: Any, req: Any, topic: str, partition: int
                       ) -> dict[str, Any]:
        """Metadata API view (builds before 3.8): the client negotiates the newest version
        both sides speak (3.6 and 3.7 brokers: v12); the leader epoch needs v7+."""
        version = getattr(resp, "API_VERSION", None) or getattr(req, "API_VERSION", None) or 0
        for t in resp.topics:
            if t.name != topic:
                continue
            if t.error_code == UNKNOWN_TOPIC:
                return absent_view()
            if t.error_code:
                raise ObserveError(f"{topic}: Metadata error {t.error_code} on broker {node}")
            if all(p.partition_index != partition for p in t.partitions):
                return absent_view()  # a partition not created yet (add_partitions)
            for p in t.partitions:
                if p.partition_index != partition:
                    continue
                if p.error_code and p.error_code != 5:  # 5: LEADER_NOT_AVAILABLE, leaderless
                    raise ObserveError(f"{topic}-{partition}: error {p.error_code}")
                epoch = p.leader_epoch if version >= _METADATA_LEADER_EPOCH_SINCE else None
                return {
                    "leader": p.leader_id,  # -1: leaderless
                    "leader_epoch": epoch,
                    "replicas": list(p.replica_nodes),
                    "isr": sorted(p.isr_nodes),
                    "elr": None,  # filled from the controller's log by partition_state
                    "last_known_elr": None,
                }
        raise ObserveError(f"{topic}-{partition} not found on broker {node}")

    @staticmethod
    def _dtp_view(node: int, resp: Any, topic: str, partition: int) -> dict[str, Any]:
        for t in resp.topics:
            if t.name == topic and getattr(t, "error_code", 0) == UNKNOWN_TOPIC:
                return absent_view()
            for p in t.partitions:
                if t.name == topic and p.partition_index == partition:
                    if p.error_code:
                        raise ObserveError(f"{topic}-{partition}: error {p.error_code}")
                    return {
                        "leader": p.leader_id,  # -1: leaderless
                        "leader_epoch": p.leader_epoch,
                        "replicas": list(p.replica_nodes),
                        "isr": sorted(p.isr_nodes),
                        "elr": sorted(p.eligible_leader_replicas or []),
                        "last_known_elr": sorted(p.last_known_elr or []),
                    }
            if t.name == topic and not getattr(t, "error_code", 0) and t.partitions:
                # The topic without this partition: not created yet (add_partitions). Only
                # a complete answer says so (response_partition_limit 2000 > 24 partitions).
                return absent_view()
        raise ObserveError(f"{topic}-{partition} not found on broker {node}")
