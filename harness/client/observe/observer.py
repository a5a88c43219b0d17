"""The observer: one partition's state composed from the reads of each API (the broker
views, fencing, the HWM, the reassignment, the quorum; the controller's metadata log when
no broker has a current view), recorded in the cluster's history."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka import KafkaAdminClient

from harness.client.answers import AnswerBook, book_for
from harness.client.observe.brokers import BrokerStates
from harness.client.observe.connection import ObserveError
from harness.client.observe.controller_log import ControllerLog
from harness.client.observe.logdirs import LogDirs
from harness.client.observe.offsets import HighWatermarks
from harness.client.observe.partitions import PartitionViews, _freshest
from harness.client.observe.quorum import QuorumState
from harness.client.observe.reassignment import reassignment_state
from harness.client.observe.storage import ReplicaLogs

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

#: The state fields an observation may hold; a None value is a field the build cannot show.
STATE_FIELDS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
                "fenced")


class Observer(PartitionViews, BrokerStates, HighWatermarks, QuorumState, ControllerLog,
               LogDirs, ReplicaLogs):
    def __init__(self, cluster: Cluster, record: bool = True,
                 current_brokers: Callable[[], list[int]] | None = None) -> None:
        self.cluster = cluster
        self.record = record
        self._current = current_brokers or self._running_brokers
        self._admin: KafkaAdminClient | None = None
        build = getattr(cluster, "build", None)
        features = getattr(build, "features", None)
        #: Decided once per build from its probed features: DescribeTopicPartitions (3.8+)
        #: or the Metadata API.
        self.api = ("DescribeTopicPartitions"
                    if features is None or features.describe_topic_partitions else "Metadata")
        #: The highest leader epoch seen per partition (views older than it are stale).
        self._epochs: dict[tuple[str, int], int] = {}
        #: (topic, partition, leader, epoch) -> where that leader's epoch starts (``hwm``);
        #: -1 when the leader gave no bound.
        self._epoch_starts: dict[tuple[str, int, int, int], int] = {}
        #: Answers shared by the partitions of one look (``one_look``), by request.
        self._look: dict[tuple[Any, ...], Any] | None = None
        #: Every answer is checked to come from this cluster (and logged on request).
        self.answers: AnswerBook = book_for(cluster)
        #: Connections whose broker said which cluster it belongs to (DescribeCluster).
        self._verified: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def __enter__(self) -> Observer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
        """(state, source) of one partition; state follows SCHEMA.md. The source is the
        broker whose view was taken, or a controller id when no broker had a current view
        and the state was read from that controller's metadata log."""
        current = self._current()
        views, last = self._views(current, topic, partition)
        if views:
            node, state = self._not_stale(topic, partition, _freshest(views))
            if state.get("absent"):
                absent = self._absent(topic, state, node)
                return self._observed(topic, partition, absent, node), node
            if self.api == "Metadata":
                elr = self._elr_from_log(topic, partition)
                state["elr"], state["last_known_elr"] = elr if elr else (None, None)
            try:
                state["fenced"] = sorted(b for b, f in self.broker_states(node).items() if f)
                state["hwm"], state["hwm_epoch"] = self.hwm(topic, partition, state["leader"],
                                                            state["leader_epoch"])
                if state["hwm"] is None:
                    below = self.hidden_below(topic, partition, state["leader"],
                                              state["leader_epoch"])
                    if below is not None:
                        state["hwm_below"] = below
            except Exception as exc:  # noqa: BLE001 - e.g. a restarted leader not yet known
                raise ObserveError(
                    f"{topic}-{partition}: HWM/fencing not readable ({exc})") from exc
            try:
                state.update(reassignment_state(self, node, topic, partition,
                                                      state["replicas"]))
            except ObserveError:
                # With several controllers a broker may forward to an active controller
                # that is gone (cut off, killed on docker) for tens of seconds (seen on
                # 4.3.1 after isolating the active controller): the reassignment is then
                # not known for this poll, not a reason to lose the whole observation.
                # So with a single controller that is down (the brokers keep serving
                # their metadata; fixtures/scenarios/single-controller-restart.yaml).
                ids = self.cluster.shape.controller_ids
                if len(ids) < 2 and all(self.cluster.is_running(c) for c in ids):
                    raise
                state.update({"adding": None, "removing": None})
            state.update(self.quorum_fields())
            return self._observed(topic, partition, state, node), node
        from_log = None if current else self._from_controller_log(topic, partition)
        if from_log is not None:
            state, controller = from_log
            return self._observed(topic, partition, state, controller), controller
        raise ObserveError(f"no current broker described {topic}-{partition} ({last})")

    def _absent(self, topic: str, state: dict[str, Any], node: int) -> dict[str, Any]:
        """A topic no current broker holds: its brokers' fencing, the quorum, nothing else
        to read (no leader, no HWM, no reassignment)."""
        state = {k: v for k, v in state.items() if k != "absent"}
        # A topic created again under the name starts at leader epoch 0 (a new topic id):
        # the epochs seen of the deleted one no longer bound what is current.
        for key in [k for k in self._epochs if k[0] == topic]:
            del self._epochs[key]
        try:
            state["fenced"] = sorted(b for b, f in self.broker_states(node).items() if f)
        except Exception as exc:  # noqa: BLE001 - as for a partition that exists
            raise ObserveError(f"fencing not readable ({exc})") from exc
        state.update({"hwm": None, "hwm_epoch": None, "adding": None, "removing": None})
        state.update(self.quorum_fields())
        return state

    def _observed(self, topic: str, partition: int, state: dict[str, Any],
                  source: int) -> dict[str, Any]:
        if self.record:
            self.cluster.history.record("observation", topic=topic, partition=partition,
                                        state=state, source=source)
        return state
