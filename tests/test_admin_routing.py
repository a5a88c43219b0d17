"""Requests a broker forwards to the controller go only through brokers that reach it, and a
request that timed out is not sent again (harness.client.admin.to_controller).

Seen on 4.3.1 (hunt fuzz-s36-4): an isolated broker kept a reassignment queued and forwarded
it after the heal, after the harness had sent it again through another broker and then
cancelled it: the controller applied it a second time, and the run diverged on the replicas.
"""

from __future__ import annotations

from typing import Any

import kafka.errors as kafka_errors
import pytest

from harness.client import admin


class Brokers:
    """An observer whose brokers answer as told: node -> answer or exception."""

    def __init__(self, current: list[int], answers: dict[int, Any]) -> None:
        self.current, self.answers, self.asked = current, answers, []

    def admin(self) -> Any:
        raise AssertionError("not used")

    def _send(self, node: int, request: Any) -> Any:
        self.asked.append(node)
        answer = self.answers[node]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def _running_brokers(self) -> list[int]:
        return sorted(self.answers)

    def current_brokers(self) -> list[int]:
        return list(self.current)


def test_only_brokers_that_reach_the_controller_are_asked() -> None:
    obs = Brokers(current=[2, 3], answers={1: "cut off", 2: "answer of 2", 3: "answer of 3"})
    assert admin.to_controller(obs, object(), "reassigning t-0") == "answer of 2"
    assert obs.asked == [2]


def test_a_request_not_delivered_goes_to_the_next_broker() -> None:
    obs = Brokers(current=[2, 3], answers={2: kafka_errors.NodeNotReadyError(), 3: "ok"})
    assert admin.to_controller(obs, object(), "reassigning t-0") == "ok"
    assert obs.asked == [2, 3]


@pytest.mark.parametrize("timeout", [kafka_errors.RequestTimedOutError(),
                                     kafka_errors.KafkaTimeoutError()])
def test_a_request_that_timed_out_is_not_sent_again(timeout: Exception) -> None:
    obs = Brokers(current=[2, 3], answers={2: timeout, 3: "ok"})
    with pytest.raises(admin.AdminError, match="not sent again"):
        admin.to_controller(obs, object(), "reassigning t-0")
    assert obs.asked == [2]


def test_no_broker_reaching_the_controller_is_said_before_sending() -> None:
    obs = Brokers(current=[], answers={1: "cut off"})
    with pytest.raises(admin.AdminError, match="no running broker reaches the active"):
        admin.to_controller(obs, object(), "cancelling the reassignment of t-0")
    assert obs.asked == []


def test_an_election_goes_through_a_broker_that_reaches_the_controller() -> None:
    class Partition:
        def __init__(self, code: int) -> None:
            self.error_code = code

    class Result:
        partition_result = [Partition(kafka_errors.ElectionNotNeededError.errno)]

    class Response:
        error_code = 0
        replica_election_results = [Result()]

    obs = Brokers(current=[3], answers={1: "cut off", 3: Response()})
    assert admin.elect_leaders(obs, "preferred", "t") == "ElectionNotNeeded"
    assert obs.asked == [3]
