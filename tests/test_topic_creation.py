"""Topic creation retries only while the admin client does not know a broker of the
assignment (issue 30: UnknownBrokerIdError on 3.8.1 with 5 controllers under load)."""

from __future__ import annotations

from typing import Any

import kafka.errors as kafka_errors
import pytest

from harness.client import admin


class FakeMetadata:
    def __init__(self, known: set[int]) -> None:
        self.known = known
        self.updates = 0

    def broker_metadata(self, broker: int) -> object | None:
        return object() if broker in self.known else None

    def request_update(self) -> None:
        self.updates += 1


class FakeAdmin:
    """Answers create_topics with the next of ``outcomes`` (an exception is raised)."""

    def __init__(self, outcomes: list[BaseException | None], known: set[int]) -> None:
        self.outcomes = outcomes
        self.calls = 0
        self._manager = type("Manager", (), {})()
        self._manager.cluster = FakeMetadata(known)

    def create_topics(self, topics: list[Any], timeout_ms: int) -> None:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome


class FakeObserver:
    def __init__(self, client: FakeAdmin) -> None:
        self.client = client

    def admin(self) -> FakeAdmin:
        return self.client


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin, "CREATE_INTERVAL_S", 0.0)


def create(client: FakeAdmin) -> None:
    admin.create_topic(FakeObserver(client), "t", [1, 2, 3], {})  # type: ignore[arg-type]


def test_retries_while_a_broker_of_the_assignment_is_unknown() -> None:
    unknown = kafka_errors.UnknownBrokerIdError(3)
    client = FakeAdmin([unknown, unknown, None], known={1, 2})
    create(client)
    assert client.calls == 3
    assert client._manager.cluster.updates == 2  # metadata refreshed before each retry


def test_an_unknown_broker_outside_the_assignment_is_retried_while_one_inside_is_missing(
) -> None:
    client = FakeAdmin([kafka_errors.UnknownBrokerIdError(7), None], known={1, 2})
    create(client)
    assert client.calls == 2


def test_an_unknown_broker_outside_a_known_assignment_fails_at_once() -> None:
    client = FakeAdmin([kafka_errors.UnknownBrokerIdError(7), None], known={1, 2, 3})
    with pytest.raises(admin.AdminError, match="UnknownBrokerIdError"):
        create(client)
    assert client.calls == 1


@pytest.mark.parametrize("error", [kafka_errors.TopicAlreadyExistsError(),
                                   kafka_errors.InvalidReplicationAssignmentError(),
                                   kafka_errors.KafkaTimeoutError()])
def test_any_other_error_fails_at_once(error: Exception) -> None:
    client = FakeAdmin([error, None], known={1})
    with pytest.raises(admin.AdminError, match="creating topic t"):
        create(client)
    assert client.calls == 1


def test_the_retries_are_bounded() -> None:
    client = FakeAdmin([kafka_errors.UnknownBrokerIdError(3)] * 100, known={1, 2})
    with pytest.raises(admin.AdminError, match="UnknownBrokerIdError"):
        create(client)
    assert client.calls == admin.CREATE_ATTEMPTS
