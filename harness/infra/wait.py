"""Bounded waits that poll observed state (tenacity), never a bare sleep."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from harness.infra import procs

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The observed state did not reach the expected one in time; carries the last value."""

    def __init__(self, what: str, timeout_s: float, last: object) -> None:
        super().__init__(f"{what}: not reached in {timeout_s:.0f}s; last observed: {last}")
        self.last = last


def until(observe: Callable[[], T], ok: Callable[[T], bool], what: str,
          timeout_s: float = 30.0, interval_s: float = 0.25) -> T:
    """Poll `observe()` until `ok(value)`; return that value or raise WaitTimeout."""
    last: list[T] = []

    def attempt() -> T:
        procs.check_interrupted()
        value = observe()
        last[:] = [value]
        return value

    try:
        for attempt_ctx in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(interval_s),
                                    retry=retry_if_result(lambda v: not ok(v))):
            with attempt_ctx:
                value = attempt()
            if not attempt_ctx.retry_state.outcome.failed:  # type: ignore[union-attr]
                attempt_ctx.retry_state.set_result(value)
        return value
    except RetryError:
        raise WaitTimeout(what, timeout_s, last[0] if last else None) from None
