"""harness/client/traffic.py without a cluster: the group consumer's record-by-record
fetch takes every record (a record polled past a batch's end was once dropped: a skip of
one offset every 1,001 records in the poll_order check), and a recorder's batch of polls
is numbered like single polls."""

from __future__ import annotations

from typing import Any

from harness.client.traffic import POLL_BATCH, ConsumerLoop, ConsumerSpec
from harness.traffic.history import TrafficRecorder, well_typed


class _Msg:
    def __init__(self, i: int) -> None:
        self.i = i


class _Consumer:
    def __init__(self, n: int) -> None:
        self.n, self.i = n, 0

    def poll(self, timeout: float) -> Any:
        if self.i >= self.n:
            return None
        self.i += 1
        return _Msg(self.i - 1)


def test_group_fetch_takes_every_record_batch_after_batch() -> None:
    loop = ConsumerLoop.__new__(ConsumerLoop)
    loop.spec = ConsumerSpec(topic="t", mode="group")
    consumer = _Consumer(2 * POLL_BATCH + 5)
    got: list[int] = []
    sizes = []
    while batch := [m.i for m in loop._fetch(consumer)]:
        got += batch
        sizes.append(len(batch))
    assert got == list(range(2 * POLL_BATCH + 5))
    assert sizes == [POLL_BATCH, POLL_BATCH, 5]


def test_a_batch_of_polls_is_numbered_in_order() -> None:
    out: list[dict[str, Any]] = []
    rec = TrafficRecorder(out.append, clock=lambda: 1.5)
    rec.poll("c", 0, "t", 0, 0, "a")
    rec.polls("c", 1, [("t", 0, 1, "b"), ("t", 1, 0, "c")])
    rec.polls("c", 1, [])
    assert [(e["n"], e["session"], e["id"]) for e in out] == [(0, 0, "a"), (1, 1, "b"),
                                                             (2, 1, "c")]
    assert all(well_typed(e) and e["kind"] == "poll" for e in out)
