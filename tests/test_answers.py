"""Every answer the observer takes comes from this cluster's broker: the connection reaches
that broker's address and the broker said, on it, that it belongs to this run's cluster.
Anything else is a harness ERROR, never an observation (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.admin import DescribeClusterRequest

from harness.client import answers
from harness.client.answers import AnswerBook, ForeignAnswer
from harness.client.observe import Observer
from harness.infra.errors import HarnessError

OURS, THEIRS = "ours-cluster-id", "another-cluster"


def address(node: int) -> tuple[str, int]:
    return f"127.9.0.{node}", 9095


class FakeCluster:
    """What the observer reads of a cluster (hashable, like the real ones)."""

    def __init__(self, run_dir: Path) -> None:
        self.cluster_id = OURS
        self.run_dir = run_dir
        self.build = None
        self.shape = SimpleNamespace(broker_ids=(1, 2, 3), controller_ids=(100,))
        self.observer_address = address

    def is_running(self, node: int) -> bool:
        return True


class FakeConnection:
    def __init__(self, peer: str) -> None:
        self.transport = SimpleNamespace(getPeer=lambda: (*peer.split(":"),))


class FakeManager:
    """kafka-python's connection manager: answers every request from ``respond``; each
    node's connection reaches ``peers[node]``."""

    def __init__(self, respond: Any, peers: dict[int, str]) -> None:
        self.respond = respond
        self._conns = {n: FakeConnection(p) for n, p in peers.items()}
        self.sent: list[tuple[int, Any]] = []

    def send(self, request: Any, node_id: int) -> Any:
        self.sent.append((node_id, request))

        async def answer() -> Any:
            return self.respond(node_id, request)

        return answer()

    def run(self, call: Any) -> Any:
        import asyncio
        return asyncio.run(call())


def observer(tmp_path: Path, respond: Any, peers: dict[int, str] | None = None) -> Observer:
    obs = Observer(FakeCluster(tmp_path))  # type: ignore[arg-type]
    manager = FakeManager(respond, peers or {n: "{}:{}".format(*address(n)) for n in (1, 2, 3)})
    obs._admin = SimpleNamespace(_manager=manager)  # type: ignore[assignment]
    return obs


def describe_cluster(cluster_id: str) -> Any:
    return SimpleNamespace(API_VERSION=1, error_code=0, cluster_id=cluster_id, brokers=[])


def view(cluster_id: str) -> Any:
    """DescribeCluster answers with ``cluster_id``; any other request gets an answer that
    carries no cluster id (as DescribeTopicPartitions and ListOffsets)."""
    def respond(node: int, request: Any) -> Any:
        if isinstance(request, DescribeClusterRequest):
            return describe_cluster(cluster_id)
        return SimpleNamespace(API_VERSION=0, topics=[])
    return respond


def test_an_answer_from_this_cluster_is_taken_and_its_connection_checked_once(
        tmp_path: Path) -> None:
    obs = observer(tmp_path, view(OURS))
    request = SimpleNamespace(API_VERSION=0)
    assert obs._send(2, request) is not None
    assert obs._send(2, request) is not None
    kinds = [type(r).__name__ for _, r in obs._admin._manager.sent]  # type: ignore[union-attr]
    assert kinds.count("DescribeClusterRequest") == 1  # once per connection
    assert obs.answers.foreign is None


def test_a_view_from_another_cluster_id_is_refused_as_a_harness_error(tmp_path: Path) -> None:
    obs = observer(tmp_path, view(THEIRS))
    with pytest.raises(ForeignAnswer, match=f"cluster {THEIRS}, not this run's {OURS}"):
        obs._send(2, SimpleNamespace(API_VERSION=0))
    assert isinstance(ForeignAnswer("x"), HarnessError)  # the runner makes it ERROR
    with pytest.raises(ForeignAnswer):  # sticky: a sampler that swallowed it leaves a mark
        obs.answers.check_foreign()


def test_a_batch_answer_from_another_cluster_is_refused_too(tmp_path: Path) -> None:
    obs = observer(tmp_path, view(THEIRS))
    with pytest.raises(ForeignAnswer):
        obs._send_each({1: SimpleNamespace(API_VERSION=0), 2: SimpleNamespace(API_VERSION=0)})


def test_an_answer_over_a_connection_to_another_address_is_refused(tmp_path: Path) -> None:
    obs = observer(tmp_path, view(OURS), peers={2: "127.8.0.2:9095"})
    with pytest.raises(ForeignAnswer, match="came from 127.8.0.2:9095, not its address "
                                            "127.9.0.2:9095"):
        obs._send(2, SimpleNamespace(API_VERSION=0))


def test_the_answer_log_names_node_address_cluster_version_epochs_and_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(answers.ANSWER_LOG_ENV, "1")
    part = SimpleNamespace(partition_index=0, error_code=0, offset=4, leader_epoch=1)
    offsets = SimpleNamespace(API_VERSION=9, topics=[SimpleNamespace(name="t",
                                                                     partitions=[part])])

    def respond(node: int, request: Any) -> Any:
        return describe_cluster(OURS) if isinstance(request, DescribeClusterRequest) \
            else offsets
    obs = observer(tmp_path, respond)
    obs._send(2, SimpleNamespace(API_VERSION=9))
    obs.answers.close()
    lines = [json.loads(x) for x in (tmp_path / answers.ANSWER_LOG_FILE).read_text()
             .splitlines()]
    last = lines[-1]
    assert last["node"] == 2 and last["peer"] == "127.9.0.2:9095" and last["version"] == 9
    assert last["verified_cluster_id"] == OURS and last["foreign"] is None
    assert last["partitions"] == [{"topic": "t", "partition_index": 0, "error_code": 0,
                                   "leader_epoch": 1, "offset": 4}]
    assert last["sent"] <= last["received"]


def test_no_answer_log_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(answers.ANSWER_LOG_ENV, raising=False)
    obs = observer(tmp_path, view(OURS))
    obs._send(1, SimpleNamespace(API_VERSION=0))
    assert not (tmp_path / answers.ANSWER_LOG_FILE).exists()


def test_every_cluster_gets_its_own_id() -> None:
    from harness.cluster import storage
    assert storage.new_cluster_id() != storage.new_cluster_id()


def test_a_book_without_a_cluster_id_checks_addresses_only() -> None:
    book = AnswerBook(None, address)
    book.take(answers.Answer(node=1, api="X", version=0, peer="127.9.0.1:9095", sent=0,
                             received=0, cluster_id=THEIRS))
    assert book.foreign is None
