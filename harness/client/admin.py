"""Cluster administration over the observer's untouched path (kafka-python)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.protocol.admin import ElectionType
from kafka.structs import TopicPartition

from harness.infra.errors import HarnessError

if TYPE_CHECKING:
    from harness.client.observe import Observer

ELECTION_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}


class AdminError(HarnessError):
    """The cluster rejected an administrative request."""


def create_topic(observer: Observer, name: str, replicas: list[int],
                 config: Mapping[str, str]) -> None:
    topic = NewTopic(name, replica_assignments={0: list(replicas)},
                     topic_configs={k: str(v) for k, v in config.items()})
    try:
        observer.admin().create_topics([topic], timeout_ms=30000)
    except Exception as exc:
        raise AdminError(f"creating topic {name} with replicas {replicas} failed: {exc}") from exc


def alter_config(observer: Observer, scope: str, name: str, config: Mapping[str, str]) -> None:
    """scope 'topic' (name = topic) or 'cluster' (the default broker resource, name '')."""
    rtype = ConfigResourceType.TOPIC if scope == "topic" else ConfigResourceType.BROKER
    resource = ConfigResource(rtype, name if scope == "topic" else "",
                              {k: str(v) for k, v in config.items()})
    try:
        result = observer.admin().alter_configs([resource], incremental=True)
    except Exception as exc:
        raise AdminError(f"altering {scope} config {dict(config)} failed: {exc}") from exc
    _raise_on_errors(result, f"altering {scope} config {dict(config)}")


def elect_leaders(observer: Observer, election: str, topic: str, partition: int = 0) -> str | None:
    """Run ElectLeaders; returns the broker's error name for the partition, or None."""
    try:
        result = observer.admin().elect_leaders(ELECTION_TYPES[election], {topic: [partition]},
                                                timeout_ms=30000, raise_errors=False)
    except Exception as exc:  # noqa: BLE001 - the outcome is evidence, not a harness fault
        return type(exc).__name__
    return _partition_error(result)


def reassign(observer: Observer, topic: str, replicas: list[int], partition: int = 0) -> None:
    try:
        observer.admin().alter_partition_reassignments(
            {TopicPartition(topic, partition): list(replicas)}, timeout_ms=30000)
    except Exception as exc:
        raise AdminError(f"reassigning {topic}-{partition} to {replicas} failed: {exc}") from exc


def _partition_error(result: object) -> str | None:
    text = repr(result)
    for marker in ("ElectionNotNeeded", "EligibleLeadersNotAvailable",
                   "PreferredLeaderNotAvailable", "NotController", "UnknownTopicOrPartition",
                   "InvalidReplicationFactor"):
        if marker in text:
            return marker
    return None


def _raise_on_errors(result: object, what: str) -> None:
    text = repr(result)
    if "error_code=0" not in text and "error_code" in text:
        raise AdminError(f"{what}: {text[:500]}")
