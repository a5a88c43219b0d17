"""A partition's ongoing reassignment (adding and removing replicas):
ListPartitionReassignments (API key 46) asked of the broker whose view the observer took."""

from __future__ import annotations

from kafka.protocol.admin import ListPartitionReassignmentsRequest

from harness.client.observe.connection import _REQUEST_TIMEOUT_MS, Connection, ObserveError


def reassignment_state(observer: Connection, node: int, topic: str, partition: int,
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
