"""Helpers for chaos-test authors (installed with the package, unlike this repo's suites/):

    from harness.client.testing import TOPIC, create_topic, state, wait_state
"""

from __future__ import annotations

from typing import Any

from harness.client import admin
from harness.client.observe import Observer
from harness.infra.wait import until

__all__ = ["TOPIC", "create_topic", "state", "wait_state"]

TOPIC = "t"


def create_topic(observer: Observer, replicas: list[int], min_isr: int,
                 **config: str) -> dict[str, Any]:
    """Create the one-partition test topic and wait until every replica is in the ISR."""
    admin.create_topic(observer, TOPIC, replicas,
                       {"min.insync.replicas": str(min_isr), **config})
    return wait_state(observer, lambda s: s["leader"] == replicas[0]
                      and set(s["isr"]) == set(replicas), "topic created, full ISR")


def state(observer: Observer) -> dict[str, Any]:
    """The test topic's partition 0 as the observer sees it now."""
    return observer.partition_state(TOPIC)[0]


def wait_state(observer: Observer, ok: Any, what: str, timeout_s: float = 30) -> dict[str, Any]:
    """Poll until `ok(state)` holds (bounded); the timeout names `what` with the last state."""
    def observe() -> dict[str, Any] | None:
        try:
            return state(observer)
        except Exception:  # noqa: BLE001 - no current broker yet: keep polling
            return None
    found = until(observe, lambda s: s is not None and ok(s), what, timeout_s)
    assert found is not None  # until returns only a value that passed the check
    return found
