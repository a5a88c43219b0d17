"""Where every answer the observer takes came from: the node it was sent to, the address
the connection actually reached, the cluster id that broker gave, the API and version, the
answer's leader epochs, offsets and error codes, and when it was sent and received.

An answer from anywhere but this cluster's broker is a harness fault, never an
observation: its connection must reach the address the cluster gave that broker, and the
broker must have said, on that connection, that it belongs to this cluster
(DescribeCluster's cluster id, asked once per connection). ``KAFKA_CHAOS_ANSWER_LOG=1``
also writes every answer to ``answers.jsonl`` in the run directory, to find where an
observation came from afterwards (issue 30: an HWM read lower than the leader's).
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.infra.errors import HarnessError

ANSWER_LOG_ENV = "KAFKA_CHAOS_ANSWER_LOG"
ANSWER_LOG_FILE = "answers.jsonl"


class ForeignAnswer(HarnessError):
    """An answer that did not come from this cluster's broker: the run is an ERROR."""


@dataclass
class Answer:
    node: int
    api: str
    version: int | None
    peer: str | None  # host:port the connection reached (None: not connected any more)
    sent: float  # time.monotonic() when the request was handed to the client
    received: float
    cluster_id: str | None = None  # when the answer carries one (DescribeCluster, Metadata)
    error_code: int | None = None
    partitions: list[dict[str, Any]] = field(default_factory=list)
    verified_cluster_id: str | None = None  # what the broker said on this connection


def describe(node: int, request: Any, response: Any, peer: str | None, sent: float,
             received: float) -> Answer:
    """The facts of one answer, read off kafka-python's request and response objects."""
    version = getattr(response, "API_VERSION", None)
    if version is None:
        version = getattr(request, "API_VERSION", None)
    return Answer(node=node, api=type(request).__name__.removesuffix("Request"),
                  version=version, peer=peer, sent=round(sent, 6), received=round(received, 6),
                  cluster_id=getattr(response, "cluster_id", None),
                  error_code=getattr(response, "error_code", None),
                  partitions=_partitions(response))


def _partitions(response: Any) -> list[dict[str, Any]]:
    """Per partition: index, error code, leader, leader epoch, offset (what it carries)."""
    found = []
    for topic in getattr(response, "topics", None) or []:
        for p in getattr(topic, "partitions", None) or []:
            # OffsetForLeaderEpoch names its fields topic / partition / end_offset
            item = {"topic": getattr(topic, "name", None) or getattr(topic, "topic", None)}
            for name in ("partition_index", "partition", "error_code", "leader_id",
                         "leader_epoch", "offset", "end_offset"):
                value = getattr(p, name, None)
                if isinstance(value, int):
                    item[name] = value
            found.append(item)
    return found


class AnswerBook:
    """Checks every answer against this cluster and keeps the optional answer log. Shared
    by the observers of one cluster (the runner's and the sampler's), across threads."""

    def __init__(self, cluster_id: str | None,
                 address: Callable[[int], tuple[str, int]] | None,
                 log_dir: Path | None = None) -> None:
        self.cluster_id = cluster_id
        self.address = address
        self._lock = threading.Lock()
        self._log: TextIO | None = None
        if log_dir is not None and os.environ.get(ANSWER_LOG_ENV, "") not in ("", "0"):
            self._log = (log_dir / ANSWER_LOG_FILE).open("a", encoding="utf-8")
        #: The first foreign answer: sticky, so that a sampler that swallows the exception
        #: still leaves the run an ERROR.
        self.foreign: str | None = None
        self.count = 0

    def expected_peer(self, node: int) -> str | None:
        if self.address is None:
            return None
        host, port = self.address(node)
        return f"{host}:{port}"

    def take(self, answer: Answer) -> None:
        """Log the answer; raise ForeignAnswer unless it came from this cluster's broker."""
        why = self._foreign(answer)
        with self._lock:
            self.count += 1
            if self._log is not None and not self._log.closed:
                self._log.write(json.dumps({**asdict(answer), "foreign": why},
                                           separators=(",", ":")) + "\n")
            if why is not None and self.foreign is None:
                self.foreign = why
        if why is not None:
            raise ForeignAnswer(why)

    def _foreign(self, answer: Answer) -> str | None:
        expected = self.expected_peer(answer.node)
        if answer.peer is not None and expected is not None and answer.peer != expected:
            return (f"{answer.api} answer for broker {answer.node} came from {answer.peer}, "
                    f"not its address {expected}")
        for said in (answer.cluster_id, answer.verified_cluster_id):
            if self.cluster_id is not None and said is not None and said != self.cluster_id:
                return (f"{answer.api} answer from broker {answer.node} ({answer.peer}) "
                        f"belongs to cluster {said}, not this run's {self.cluster_id}")
        return None

    def check_foreign(self) -> None:
        """Raise ForeignAnswer if any answer so far was foreign (e.g. one a sampler took)."""
        if self.foreign is not None:
            raise ForeignAnswer(self.foreign)

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()


_BOOKS: weakref.WeakKeyDictionary[Any, AnswerBook] = weakref.WeakKeyDictionary()
_BOOKS_LOCK = threading.Lock()


def book_for(cluster: Any) -> AnswerBook:
    """The one book of a cluster, shared by all its observers (runner, sampler, readiness).
    A stand-in cluster of a test that cannot be weakly referenced gets a book of its own."""
    with _BOOKS_LOCK:
        try:
            book = _BOOKS.get(cluster)
        except TypeError:
            return _new_book(cluster)
        if book is None:
            book = _BOOKS[cluster] = _new_book(cluster)
        return book


def _new_book(cluster: Any) -> AnswerBook:
    run_dir = getattr(cluster, "run_dir", None)
    return AnswerBook(getattr(cluster, "cluster_id", None),
                      getattr(cluster, "observer_address", None),
                      run_dir if isinstance(run_dir, Path) else None)
