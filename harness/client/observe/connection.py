"""How the observer asks: its admin client (bootstrapped only from brokers that answer),
a request to one broker, to several at once or to any, every answer checked to come from
this cluster's broker (``harness.client.answers``), and the answers one look shares.

``Connection`` is the base every API's reads build on (``harness.client.observe.observer``
composes them); the state it reads is set by ``Observer.__init__``.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import DescribeClusterRequest

from harness.client.answers import AnswerBook, describe

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

logging.getLogger("kafka").setLevel(logging.CRITICAL)
_REQUEST_TIMEOUT_MS = 4000
_BOOTSTRAP_TIMEOUT_MS = 10_000


class ObserveError(Exception):
    """No current broker answered."""



class Connection:
    # Set by Observer.__init__ (declared here for the type checker).
    cluster: Cluster
    record: bool
    _current: Callable[[], list[int]]
    _admin: KafkaAdminClient | None
    _look: dict[tuple[Any, ...], Any] | None
    answers: AnswerBook
    _verified: weakref.WeakKeyDictionary[Any, str]

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

    def _send_any(self, request: Any) -> Any:
        """``request`` to whichever broker the client picks (none is current)."""
        admin = self.admin()

        async def call() -> Any:
            return await admin._manager.send(request)

        return admin._manager.run(call)


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

