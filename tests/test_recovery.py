"""The recovery read (harness/run/recovery.py) without a cluster: which records it looks
for, what it heals, what it records."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.run import recovery


def test_only_acks_all_records_the_final_read_missed_are_looked_for() -> None:
    checks = [{"name": "gaps", "details": [{"record_id": "x", "acks": "all"}]},
              {"name": "acked_lost", "ok": False, "details": [
                  {"record_id": "a", "acks": "all", "topic": "t", "partition": 0},
                  {"record_id": "b", "acks": "1", "topic": "t", "partition": 0},
                  {"record_id": "c", "acks": "all", "topic": "u", "partition": 2}]}]
    assert recovery.unread_acks_all(checks) == {("t", 0): ["a"], ("u", 2): ["c"]}
    assert recovery.unread_acks_all([{"name": "acked_lost", "ok": True, "details": []}]) == {}


class _Cluster:
    def __init__(self) -> None:
        self.shape = SimpleNamespace(controller_ids=(100,), broker_ids=(1, 2, 3))
        self.running = {100, 1}
        self.calls: list[str] = []

    def is_running(self, node: int) -> bool:
        return node in self.running

    def start_node(self, node: int) -> None:
        if node == 3:
            raise RuntimeError("log dir locked")
        self.calls.append(f"start {node}")
        self.running.add(node)

    def resume(self, node: int) -> None:
        self.calls.append(f"resume {node}")


class _Observer:
    def __init__(self, cluster: Any, record: bool = True) -> None:
        assert record is False  # the recovery's looks are not the run's observations
        self.looks = 0

    def partition_state(self, topic: str, partition: int) -> tuple[dict[str, Any], int]:
        self.looks += 1
        return {"leader": 1, "replicas": [1, 2], "isr": [1, 2]}, 1

    def close(self) -> None:
        pass


def test_the_cluster_is_healed_read_again_and_one_event_says_what_was_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recovery, "Observer", _Observer)
    cluster, events, reads = _Cluster(), [], []
    network = SimpleNamespace(paused={2}, healed=[])
    network.heal = lambda: network.healed.append(True)

    def consume_all(topic: str, partition: int, timeout_s: float, record: bool
                    ) -> list[tuple[int, str]]:
        reads.append((topic, partition, record))
        return [(0, "a"), (1, "b")]
    session = SimpleNamespace(
        cluster=cluster, faults=SimpleNamespace(network=network),
        workload=SimpleNamespace(consume_all=consume_all),
        history=SimpleNamespace(record=lambda kind, **f: events.append({"kind": kind, **f})))
    recovery.recover_and_reread(session, {("t", 0): ["a", "z"]})  # type: ignore[arg-type]
    assert network.healed == [True] and network.paused == set()
    assert cluster.calls == ["resume 2", "start 2"]  # 3 failed to start: said, not raised
    assert reads == [("t", 0, False)]  # the re-read writes no consume/read events
    (event,) = events
    assert event["kind"] == "recovery" and (event["topic"], event["partition"]) == ("t", 0)
    assert event["readable"] == ["a"] and event["unread"] == ["z"]
    assert event["resumed"] == [2] and event["started"] == [2] and event["settled"] is True
    assert event["start_failed"] == ["3: RuntimeError: log dir locked"]


def test_the_run_table_says_not_read_and_leaves_lost_or_hidden_to_the_safety_line() -> None:
    from harness.cli.run import _describe_findings
    check = {"name": "acked_lost", "details": [{"acks": "all"}, {"acks": "all"}, {"acks": "1"}]}
    assert _describe_findings(check) == ("1 acks=1 record(s) not in the final read, "
                                         "2 acks=all record(s) not in the final read")
