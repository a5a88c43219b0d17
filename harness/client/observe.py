"""The observer: reads cluster state over the wire on a path faults never touch.

Per partition: leader, leader epoch, replicas, ISR, ELR, LastKnownELR (DescribeTopicPartitions,
API key 75), HWM (ListOffsets to the leader), and which brokers are fenced (DescribeCluster).
It asks a broker whose view is current: one that is running and, as far as the harness's
own fault table knows, connected to the controllers.

DescribeTopicPartitions exists from Kafka 3.8 (KIP-966). A build without it (the probed
feature ``describe_topic_partitions``, decided once per build, not per poll) is observed with
the Metadata API (leader, leader epoch, replicas, ISR), and ELR and LastKnownELR are taken from
the controller's metadata log where its partition records carry them (PartitionRecord /
PartitionChangeRecord version 2+, written only under a metadata.version with ELR support);
otherwise they are None: unobservable, which the model comparison skips (never ``[]``, which
would claim "known empty").
"""

from __future__ import annotations

import logging
import subprocess
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient
from kafka.admin import OffsetSpec
from kafka.protocol.admin import (
    DescribeClusterRequest,
    DescribeQuorumRequest,
    DescribeTopicPartitionsRequest,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.structs import TopicPartition

from harness.client.answers import AnswerBook, book_for, describe

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

logging.getLogger("kafka").setLevel(logging.CRITICAL)
_REQUEST_TIMEOUT_MS = 4000
_BOOTSTRAP_TIMEOUT_MS = 10_000
#: Metadata v7 is the first to carry a partition's leader epoch (KIP-320).
_METADATA_LEADER_EPOCH_SINCE = 7
#: PartitionRecord and PartitionChangeRecord carry EligibleLeaderReplicas/LastKnownElr from
#: version 2 (metadata/src/main/resources/common/metadata/Partition*Record.json, 3.7+).
_ELR_RECORD_SINCE = 2
#: The state fields an observation may hold; a None value is a field the build cannot show.
STATE_FIELDS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
                "fenced")


class ObserveError(Exception):
    """No current broker answered."""


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


class Observer:
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

    @contextmanager
    def one_look(self) -> Iterator[None]:
        """Observe several partitions as one look: a broker's DescribeTopicPartitions (or
        Metadata) answer covers every partition of the topic and its DescribeCluster every
        broker, so each is asked once per broker in the look, not once per partition. The
        partitions' states are then also the same moment of each broker's view."""
        self._look = {}
        try:
            yield
        finally:
            self._look = None

    def _send_once(self, key: tuple[Any, ...], node: int, request: Any) -> Any:
        """``_send``, answered from the current look when the same request was sent in it."""
        if self._look is None:
            return self._send(node, request)
        if (node, *key) not in self._look:
            self._look[(node, *key)] = self._send(node, request)
        return self._look[(node, *key)]

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

    def current_brokers(self) -> list[int]:
        """Brokers whose view is current: running and reaching the active controller (as
        the session's fault table knows it; every running broker without one)."""
        return self._current()

    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            # Bootstrap only from brokers that answer: kafka-python picks a bootstrap
            # address at random and gives that one connect the whole bootstrap deadline,
            # so a killed container's address (packets dropped, no refusal) or a paused
            # broker costs all of it. The current brokers first (running, not paused, with
            # the controller); any running one when none is.
            running = self._current() or self._running_brokers()
            if not running:
                raise ObserveError("no broker is running")
            servers = [f"{h}:{p}" for h, p in map(self.cluster.observer_address, running)]
            self._admin = KafkaAdminClient(
                bootstrap_servers=servers, client_id="kafka-chaos-observer",
                request_timeout_ms=_REQUEST_TIMEOUT_MS, metadata_max_age_ms=1000,
                reconnect_backoff_max_ms=500, bootstrap_timeout_ms=_BOOTSTRAP_TIMEOUT_MS)
        return self._admin

    def _send(self, node: int, request: Any) -> Any:
        admin = self.admin()
        manager = admin._manager

        async def call() -> tuple[Any, Any]:
            future = manager.send(request, node_id=node)
            return _connection(manager, node), await future

        sent = time.monotonic()
        try:
            conn, response = manager.run(call)
        except Exception as exc:
            self._after_failure(admin, exc)
            raise
        return self._take(node, request, response, conn, sent)

    def _take(self, node: int, request: Any, response: Any, conn: Any, sent: float) -> Any:
        """``response`` once its connection is known to reach this cluster's broker
        ``node``; ForeignAnswer (a harness ERROR) otherwise."""
        answer = describe(node, request, response, _peer(conn), sent, time.monotonic())
        if conn is not None and conn not in self._verified:
            if answer.api == "DescribeCluster" and answer.cluster_id is not None:
                self._verified[conn] = answer.cluster_id
            else:
                self._verify(node)
        answer.verified_cluster_id = self._verified.get(conn) if conn is not None else None
        self.answers.take(answer)
        return response

    def _verify(self, node: int) -> None:
        """Ask broker ``node`` which cluster it belongs to, on the connection in use."""
        self._send(node, DescribeClusterRequest(include_fenced_brokers=True))

    def _send_each(self, requests: dict[int, Any]) -> dict[int, Any]:
        """``_send`` to several brokers at once: node -> its answer, or the exception its
        request raised. The requests go out together and the caller hands over to the
        client's I/O thread once, not once per broker: one after another, the round trips
        and hand-offs of a look kept the sampler below the 5 looks a second it promises
        whenever 4 clusters shared 2 cores."""
        if len(requests) < 2:
            return {node: self._answer(node, request) for node, request in requests.items()}
        admin = self.admin()
        manager = admin._manager

        async def call() -> dict[int, tuple[Any, Any]]:
            sent: dict[int, tuple[Any, Any]] = {}
            for node, request in requests.items():
                try:
                    future = manager.send(request, node_id=node)
                    sent[node] = (_connection(manager, node), future)
                except Exception as exc:  # noqa: BLE001 - answered as that node's failure
                    sent[node] = (None, exc)
            answers: dict[int, tuple[Any, Any]] = {}
            for node, (conn, future) in sent.items():
                try:
                    answers[node] = (conn, future if isinstance(future, Exception)
                                     else await future)
                except Exception as exc:  # noqa: BLE001 - the other nodes' answers stand
                    answers[node] = (conn, exc)
            return answers

        t_sent = time.monotonic()
        raw: dict[int, tuple[Any, Any]] = manager.run(call)
        answers: dict[int, Any] = {}
        for node, (conn, answer) in raw.items():
            if isinstance(answer, Exception):
                self._after_failure(admin, answer)
                answers[node] = answer
                continue
            try:
                answers[node] = self._take(node, requests[node], answer, conn, t_sent)
            except admin_errors() as exc:
                answers[node] = exc
        return answers

    def _answer(self, node: int, request: Any) -> Any:
        try:
            return self._send(node, request)
        except Exception as exc:  # noqa: BLE001 - returned, as _send_each does
            return exc

    def _after_failure(self, admin: KafkaAdminClient, exc: Exception) -> None:
        manager = admin._manager
        if isinstance(exc, kafka_errors.UnknownBrokerIdError):
            # The client's broker list came from brokers that are gone (the last ones died
            # while the restarted one was still fenced) and its metadata refresh only asks
            # brokers on that list: start over from the bootstrap addresses.
            self.close()
        elif self._admin is admin:  # not one closed by an earlier failure of the same batch
            manager.cluster.request_update()

    # -- brokers --------------------------------------------------------------------
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

    def quorum(self) -> dict[str, Any]:
        """KRaft quorum of the metadata log: leader (the active controller), epoch, high
        watermark, voters' and observers' log end offsets and the voters' lag behind the
        high watermark."""
        part = self._describe_quorum()
        hw = part["high_watermark"]
        voters = {v["replica_id"]: v["log_end_offset"] for v in part["current_voters"]}
        state = {"leader": part["leader_id"], "leader_epoch": part["leader_epoch"],
                 "high_watermark": hw, "voters": voters,
                 "observers": {o["replica_id"]: o["log_end_offset"] for o in part["observers"]},
                 "lag": {c: max(0, hw - leo) for c, leo in voters.items()
                         if leo is not None and leo >= 0}}
        # Brokers replicate the metadata log as observers: how far each one's view is
        # behind the quorum's high watermark (what that broker believes lags by so much).
        state["observer_lag"] = {b: max(0, hw - leo) for b, leo in state["observers"].items()
                                 if leo is not None and leo >= 0}
        if self.record:
            self.cluster.history.record("quorum", state=state)
        return state

    def _describe_quorum(self) -> dict[str, Any]:
        """The metadata partition of DescribeQuorum, asked of a current broker (it forwards
        the request to the active controller it knows). Sent here rather than through
        KafkaAdminClient.describe_metadata_quorum, which (kafka-python 3.0.12) reads a
        per-partition error_message that versions 0-1 (Kafka 3.7 and older) do not carry."""
        request = self._quorum_request()
        last: Exception | None = None
        nodes: list[int | None] = [*self._current()] or [None]
        for node in nodes:
            try:
                resp = self._send_any(request) if node is None else \
                    self._send_once(("DescribeQuorum",), node, request)
            except Exception as exc:  # noqa: BLE001 - the next current broker may answer
                last = exc
                continue
            part = resp.to_dict()["topics"][0]["partitions"][0]
            if part.get("error_code"):
                last = ObserveError(f"DescribeQuorum: error {part['error_code']}")
                continue
            return dict(part)
        raise ObserveError(f"DescribeQuorum: no current broker answered ({last})")

    @staticmethod
    def _quorum_request() -> Any:
        topic = DescribeQuorumRequest.TopicData
        return DescribeQuorumRequest(topics=[topic(
            topic_name="__cluster_metadata",
            partitions=[topic.PartitionData(partition_index=0)])])

    def _send_any(self, request: Any) -> Any:
        """``request`` to whichever broker the client picks (none is current)."""
        admin = self.admin()

        async def call() -> Any:
            return await admin._manager.send(request)

        return admin._manager.run(call)

    def quorum_fields(self) -> dict[str, Any]:
        """What a partition observation carries of the quorum when there are several
        controllers: ``controller`` (the active one), ``quorum_epoch``, the voters'
        ``quorum_lag`` and each broker's ``broker_metadata_lag`` (its metadata log behind the
        high watermark, DescribeQuorum's observers); None where DescribeQuorum could not be
        answered."""
        if len(self.cluster.shape.controller_ids) < 2:
            return {}
        try:
            q = self.quorum()
        except Exception:  # noqa: BLE001 - e.g. no broker reaches the active controller
            return {"controller": None, "quorum_epoch": None, "quorum_lag": None,
                    "broker_metadata_lag": None}
        leader = q["leader"]
        return {"controller": leader if leader is not None and leader >= 0 else -1,
                "quorum_epoch": q["leader_epoch"], "quorum_lag": q["lag"],
                "broker_metadata_lag": q["observer_lag"]}

    # -- partitions -----------------------------------------------------------------
    def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
        """(state, source) of one partition; state follows SCHEMA.md. The source is the
        broker whose view was taken, or a controller id when no broker had a current view
        and the state was read from that controller's metadata log."""
        current = self._current()
        views, last = self._views(current, topic, partition)
        if views:
            node, state = self._not_stale(topic, partition, _freshest(views))
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
                if len(self.cluster.shape.controller_ids) < 2:
                    raise
                state.update({"adding": None, "removing": None})
            state.update(self.quorum_fields())
            return self._observed(topic, partition, state, node), node
        from_log = None if current else self._from_controller_log(topic, partition)
        if from_log is not None:
            state, controller = from_log
            return self._observed(topic, partition, state, controller), controller
        raise ObserveError(f"no current broker described {topic}-{partition} ({last})")

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

    def _observed(self, topic: str, partition: int, state: dict[str, Any],
                  source: int) -> dict[str, Any]:
        if self.record:
            self.cluster.history.record("observation", topic=topic, partition=partition,
                                        state=state, source=source)
        return state

    def _controller_records(self) -> tuple[list[dict[str, Any]], int] | None:
        """The records of the controller with the longest metadata log, and its id."""
        from harness.client import metadata_log
        best: tuple[int, int] | None = None
        for c in self.cluster.shape.controller_ids:
            log_dir = self.cluster.data_dir(c) / "__cluster_metadata-0"
            size = sum(f.stat().st_size for f in log_dir.glob("*.log")) if log_dir.is_dir() else 0
            if size and (best is None or size > best[0]):
                best = (size, c)
        if best is None:
            return None
        try:
            records = metadata_log.decode(self.cluster.build,
                                          self.cluster.data_dir(best[1]) / "__cluster_metadata-0")
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        return records, best[1]

    def _from_controller_log(self, topic: str, partition: int
                             ) -> tuple[dict[str, Any], int] | None:
        """The controller's committed view, decoded from its metadata log on disk."""
        from harness.client import metadata_log
        found = self._controller_records()
        if found is None:
            return None
        records, controller = found
        state = metadata_log.replay(records, topic, partition, self.cluster.shape.broker_ids)
        if state is None:
            return None
        if self.api == "Metadata":  # the records say whether the build writes ELR at all
            elr = elr_from_records(records, topic, partition)
            state["elr"], state["last_known_elr"] = elr if elr else (None, None)
        return state, controller

    def _elr_from_log(self, topic: str, partition: int
                      ) -> tuple[list[int], list[int]] | None:
        """(ELR, LastKnownELR) from the controller's metadata log, or None when the log's
        records of this partition do not carry them (a version before 2: the build, or the
        metadata.version the cluster runs, writes no ELR)."""
        found = self._controller_records()
        return None if found is None else elr_from_records(found[0], topic, partition)

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
            if t.error_code:
                raise ObserveError(f"{topic}: Metadata error {t.error_code} on broker {node}")
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
        raise ObserveError(f"{topic}-{partition} not found on broker {node}")

    def hwm(self, topic: str, partition: int, leader: int | None,
            leader_epoch: int | None = None) -> tuple[int | None, int | None]:
        """(the leader's HWM, the leader epoch its answer gave); (None, None) when there is
        no running leader, or when the leader does not
        know its HWM yet (OFFSET_NOT_AVAILABLE: a new leader whose HWM is below the start of
        its epoch, or cannot advance while the ISR is below min ISR). With ``leader_epoch``
        (the metadata view's) the request carries it as a consumer's does (KIP-320), so the
        HWM is the one of that leader epoch: a leader at another epoch answers
        FENCED/UNKNOWN_LEADER_EPOCH, raised as ObserveError (ask again). Other errors are
        raised too.

        The observer applies the OFFSET_NOT_AVAILABLE condition itself too: an answer below
        the start of its leader epoch gives (None, None). The broker's check (the KIP-207
        guard) is raced: Partition.fetchOffsetForTimestamp reads the HWM twice (3.9
        Partition.scala:1583/1596), so a follower fetch between the reads lets the stale HWM
        through (seen on 3.9.1: HWM 4 at epoch 1, which starts at 5). The epoch start is
        asked once per leader epoch (``_epoch_start``)."""
        if leader is None or leader < 0 or not self.cluster.is_running(leader):
            return None, None
        tp = TopicPartition(topic, partition)
        req = KafkaAdminClient._list_partition_offsets_request({tp: OffsetSpec.LATEST}, 0)
        if leader_epoch is not None and leader_epoch >= 0:
            req.topics[0].partitions[0].current_leader_epoch = leader_epoch
        resp = self._send(leader, req)
        try:
            found = KafkaAdminClient._list_partition_offsets_process_response(resp)[tp]
        except kafka_errors.OffsetNotAvailableError:
            return None, None
        except (kafka_errors.FencedLeaderEpochError, kafka_errors.UnknownLeaderEpochError) as exc:
            raise ObserveError(f"{topic}-{partition}: broker {leader} is not the leader at "
                               f"epoch {leader_epoch} ({type(exc).__name__})") from exc
        offset, epoch = int(found.offset), found.leader_epoch
        if epoch is not None and epoch > 0 and offset < self._epoch_start(
                topic, partition, leader, epoch):
            return None, None
        return offset, epoch

    def hidden_below(self, topic: str, partition: int, leader: int | None,
                     leader_epoch: int | None) -> int | None:
        """When ``hwm`` gave None for a running leader at ``leader_epoch`` (> 0), the bound
        the hidden HWM is below: the start of that epoch (both the broker's
        OFFSET_NOT_AVAILABLE and the observer's own guard mean exactly "HWM below it"), kept in
        the observation as ``hwm_below``: a new leader that has not learned the HWM yet can
        be told from one that has, offline. None: no leader, or no epoch before."""
        if leader is None or leader < 0 or not leader_epoch or leader_epoch <= 0 \
                or not self.cluster.is_running(leader):
            return None
        start = self._epoch_start(topic, partition, leader, leader_epoch)
        return start if start > 0 else None

    def _epoch_start(self, topic: str, partition: int, leader: int, epoch: int) -> int:
        """Where leader epoch ``epoch`` starts on broker ``leader`` (-1: no bound), asked once
        per (partition, leader, epoch): OffsetsForLeaderEpoch as a consumer asks it, for the
        end of epoch ``epoch - 1``, which is the start the leader gave ``epoch`` in its epoch
        cache when it became leader (Partition.makeLeader, maybeAssignEpochStartOffset). An
        error (the leader moved on, or is not the leader) raises ObserveError: ask again."""
        key = (topic, partition, leader, epoch)
        if key not in self._epoch_starts:
            _Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
            req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[_Topic(
                topic=topic, partitions=[_Topic.OffsetForLeaderPartition(
                    partition=partition, current_leader_epoch=epoch,
                    leader_epoch=epoch - 1)])])
            resp = self._send(leader, req)
            found = [p for t in resp.topics if t.topic == topic
                     for p in t.partitions if p.partition == partition]
            if not found:
                raise ObserveError(f"{topic}-{partition}: no OffsetsForLeaderEpoch answer "
                                   f"from broker {leader}")
            if found[0].error_code:
                error = kafka_errors.for_code(found[0].error_code).__name__
                raise ObserveError(f"{topic}-{partition}: broker {leader} gave no start of "
                                   f"epoch {epoch} ({error})")
            end = int(found[0].end_offset)
            self._epoch_starts[key] = end if end >= 0 else -1
        return self._epoch_starts[key]


def reassignment_state(observer: Observer, node: int, topic: str, partition: int,
                       replicas: list[int]) -> dict[str, list[int]]:
    """The partition's ongoing reassignment, ``{"adding": [...], "removing": [...]}``
    (both empty when none is in progress): ListPartitionReassignments asked of broker
    ``node`` (the one whose view the observer took; the broker forwards it to the active
    controller, whose committed state answers). When the controller's replica list
    differs from ``replicas`` (the broker's view is behind the controller), the view
    cannot be combined: ObserveError, the observer asks again."""
    req = ListPartitionReassignmentsRequest(
        timeout_ms=_REQUEST_TIMEOUT_MS,
        topics=[ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
            name=topic, partition_indexes=[partition])])
    try:
        resp = observer._send(node, req)
    except Exception as exc:  # noqa: BLE001 - the observer's callers retry
        raise ObserveError(f"{topic}-{partition}: ListPartitionReassignments failed "
                           f"({exc})") from exc
    if resp.error_code:
        raise ObserveError(f"{topic}-{partition}: ListPartitionReassignments error "
                           f"{resp.error_code}")
    for t in resp.topics:
        for p in t.partitions:
            if t.name == topic and p.partition_index == partition:
                if list(p.replicas) != list(replicas):
                    raise ObserveError(
                        f"{topic}-{partition}: broker {node} shows replicas {replicas}, the "
                        f"controller's reassignment {list(p.replicas)}: views disagree")
                return {"adding": sorted(p.adding_replicas),
                        "removing": sorted(p.removing_replicas)}
    return {"adding": [], "removing": []}


def _connection(manager: Any, node: int) -> Any:
    """The client's connection to ``node`` (kafka-python keeps one per node)."""
    return getattr(manager, "_conns", {}).get(node)


def _peer(conn: Any) -> str | None:
    """host:port a kafka-python connection reached, or None when it has none (closed)."""
    transport = getattr(conn, "transport", None)
    get_peer = getattr(transport, "getPeer", None)
    if get_peer is None:
        return None
    try:
        host, port = get_peer()[0:2]
    except Exception:  # noqa: BLE001 - a transport being torn down
        return None
    return f"{host}:{port}"


def admin_errors() -> tuple[type[Exception], ...]:
    """What taking a batch answer may raise for that broker alone: a failed check of its
    connection (ObserveError, a client error). A foreign answer is not among them."""
    return (ObserveError, kafka_errors.KafkaError, OSError)


def elr_from_records(records: list[dict[str, Any]], topic: str, partition: int
                     ) -> tuple[list[int], list[int]] | None:
    """(ELR, LastKnownELR) of a partition replayed from metadata records, or None when its
    records never carried the fields (PartitionRecord/PartitionChangeRecord before version 2).
    A change record of version 2+ that leaves them out (null: unchanged) keeps the last
    values; a PartitionRecord of version 2+ without them means empty."""
    topic_id = None
    elr: list[int] | None = None
    lke: list[int] | None = None
    for rec in records:
        kind, data = rec.get("type"), rec.get("data", {})
        if kind == "TOPIC_RECORD" and data.get("name") == topic:
            topic_id, elr, lke = data["topicId"], None, None
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            if data.get("topicId") != topic_id or data.get("partitionId") != partition:
                continue
            if int(rec.get("version") or 0) < _ELR_RECORD_SINCE:
                if kind == "PARTITION_RECORD":
                    elr, lke = None, None
                continue
            if kind == "PARTITION_RECORD" or elr is None:
                elr, lke = [], []
            if data.get("eligibleLeaderReplicas") is not None:
                elr = sorted(data["eligibleLeaderReplicas"])
            if data.get("lastKnownElr") is not None:
                lke = sorted(data["lastKnownElr"])
        elif (kind == "CLEAR_ELR_RECORD" and elr is not None
              and data.get("topicName") in (None, "", topic)):
            elr, lke = [], []
    if elr is None or lke is None:
        return None
    return elr, lke
