"""The duplicates check's allowance for librdkafka's epoch bump (harness/traffic/checks.py
`client_epoch_bump`): a duplicate it allows, and one history per condition where the same
duplicate stays a failure; the in-process and Spark engines count them alike."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.traffic.checks import Summary, duplicates
from harness.traffic.history import Event, TrafficRecorder, TrafficWriter

TIMED_OUT = "_MSG_TIMED_OUT"


class Clock:
    """The history's `t`: set by the story, read by the recorder."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


Story = Callable[[TrafficRecorder, Clock], None]


def bumped(*, timeout_at: float = 2.0, acked_at: int = 3, second_partition: int = 0,
           client: str | None = "librdkafka 2.16.0", producer: str = "p",
           own_error: bool = False) -> Story:
    """Producer `producer` sends "a" (t=1) and "w" (t=1.5); "w" times out (at
    `timeout_at`); "a" is in the log at offset 0 (the write whose answer was lost) and
    again at offset 3 of partition `second_partition` (the re-send under the new epoch),
    acknowledged at offset `acked_at` at t=3, or failed itself at t=3 (`own_error`)."""
    def story(rec: TrafficRecorder, clock: Clock) -> None:
        events: list[tuple[float, Callable[[], object]]] = [
            (0.0, lambda: rec.producer(producer, "all", True, client)),
            (1.0, lambda: rec.send(producer, 0, f"{producer}-a", "t", 0)),
            (1.5, lambda: rec.send(producer, 1, f"{producer}-w", "t", 0)),
            (timeout_at, lambda: rec.send_error(producer, 1, f"{producer}-w", "t", TIMED_OUT,
                                                0)),
            (3.0, (lambda: rec.send_error(producer, 0, f"{producer}-a", "t", TIMED_OUT, 0))
             if own_error else
             (lambda: rec.ack(producer, 0, f"{producer}-a", "t", 0 if acked_at == 0
                              else second_partition, acked_at))),
            (4.0, lambda: rec.final_read("t", 0, 0, f"{producer}-a")),
            (4.0, lambda: rec.final_read("t", second_partition, 3, f"{producer}-a"))]
        for t, record in sorted(events, key=lambda e: e[0]):
            clock.now = t
            record()
    return story


def history(*stories: Story) -> list[Event]:
    events: list[Event] = []
    clock = Clock()
    recorder = TrafficRecorder(events.append, clock)
    for story in stories:
        story(recorder, clock)
    return events


def test_a_duplicate_after_a_message_timeout_is_allowed_as_the_clients() -> None:
    found = duplicates(history(bumped()))
    assert found.ok, found
    assert found.counts == {"ids": 1, "failures": 0, "allowed_by_retries": 0,
                            "allowed_by_client_epoch_bump": 1}
    assert found.examples == [{"id": "p-a", "idempotent": True, "allowed": "client_epoch_bump",
                               "positions": [["t", 0, 0], ["t", 0, 3]]}]


def test_a_record_that_timed_out_itself_may_be_in_the_log_twice() -> None:
    assert duplicates(history(bumped(own_error=True))).ok
    # and a producer line of a history before schema 1.2 (no client) is librdkafka's
    assert duplicates(history(bumped(client=None))).ok


@pytest.mark.parametrize(("story", "why"), [
    (bumped(timeout_at=0.5), "the timeout came before the record was sent"),
    (bumped(timeout_at=3.5), "the timeout came after the record's answer"),
    (bumped(acked_at=0), "acknowledged at its earlier copy: an answered write is not re-sent"),
    (bumped(second_partition=1), "copies in two partitions"),
    (bumped(client="kafka-clients 4.1.0"), "not librdkafka"),
])
def test_every_condition_of_the_allowance_can_fail(story: Story, why: str) -> None:
    found = duplicates(history(story))
    assert found.unsafe, why
    assert found.counts["failures"] == 1 and found.counts["allowed_by_client_epoch_bump"] == 0
    assert found.examples[0]["allowed"] is None


def test_another_producers_timeout_allows_nothing() -> None:
    """The bump is one producer's: q's timeout does not excuse p's duplicate."""
    def q_times_out(rec: TrafficRecorder, clock: Clock) -> None:
        clock.now = 2.0
        rec.producer("q", "all", True, "librdkafka 2.16.0")
        rec.send_error("q", 0, "q-x", "t", TIMED_OUT, 0)
    found = duplicates(history(bumped(timeout_at=5.0), q_times_out))
    assert found.unsafe and found.counts["failures"] == 1


def test_failures_are_listed_before_the_allowed_duplicates() -> None:
    found = duplicates(history(bumped(producer="a"), bumped(producer="z", acked_at=0)))
    assert [e["id"] for e in found.examples] == ["z-a", "a-a"]


@pytest.mark.skipif(shutil.which("java") is None,
                    reason="the Spark engine needs Java 17 on PATH (no `java` found)")
def test_in_process_and_spark_allow_the_same_duplicates(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from harness.infra.spark import session
    from harness.traffic.spark import check_history
    stories = [bumped(producer="p1"), bumped(producer="p2", own_error=True),
               bumped(producer="p3", timeout_at=0.5), bumped(producer="p4", acked_at=0),
               bumped(producer="p5", second_partition=1),
               bumped(producer="p6", client="kafka-clients 4.1.0"),
               bumped(producer="p7", client=None)]
    clock = Clock()
    with TrafficWriter(tmp_path, "bump", clock=clock) as writer:
        for story in stories:
            story(writer, clock)
    here = check_history(writer.path, threshold_bytes=1 << 40)
    there = check_history(writer.path, threshold_bytes=0,
                          spark=session(app="kafka-chaos-traffic-test"))
    mine: Summary = here.by_name()["duplicates"]
    assert mine == there.by_name()["duplicates"]
    assert mine.counts == {"ids": 7, "failures": 4, "allowed_by_retries": 0,
                           "allowed_by_client_epoch_bump": 3}
