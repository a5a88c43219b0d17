"""The traffic checks (harness/traffic, docs/TRAFFIC.md): for each check a crafted history
where it fails and one where it passes; the loss budget; the file format; in process and
on Spark alike; memory bounded by distinct ids, not events."""

from __future__ import annotations

import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.traffic.checks import (
    CHECKS,
    LossBudget,
    Summary,
    check_events,
    check_file,
    commit_order,
    duplicates,
    inconsistent_offsets,
    lost_after_read,
    lost_writes,
    poll_order,
    unseen_acked,
)
from harness.traffic.history import TRAFFIC_FILE, Event, TrafficFile, TrafficRecorder, TrafficWriter
from harness.traffic.index import TrafficIndex
from harness.traffic.synthetic import ANOMALIES, Shape, play, synthetic_history

Story = Callable[[TrafficRecorder], None]


def _history(*stories: Story) -> list[Event]:
    events: list[Event] = []
    recorder = TrafficRecorder(events.append)
    recorder.start("test")
    for story in stories:
        story(recorder)
    return events


def _writes(ids: list[str], partition: int = 0, producer: str = "p", first: int = 0,
            acks: str = "all", idempotent: bool = True) -> Story:
    """The producer sends and has acked each id, at consecutive offsets from `first`."""
    def story(rec: TrafficRecorder) -> None:
        rec.producer(producer, acks, idempotent)
        for seq, rid in enumerate(ids):
            rec.send(producer, seq, rid, "t", partition)
            rec.ack(producer, seq, rid, "t", partition, first + seq)
    return story


def _polls(ids: list[str | None], consumer: str = "c", session: int = 0, partition: int = 0,
           first: int = 0) -> Story:
    """The consumer polls id i at offset first + i (None: that offset is not polled)."""
    def story(rec: TrafficRecorder) -> None:
        for i, rid in enumerate(ids):
            if rid is not None:
                rec.poll(consumer, session, "t", partition, first + i, rid)
    return story


def _final(ids: list[str | None], partition: int = 0, complete: bool = True) -> Story:
    """The final read of the partition: id i at offset i (None: no record there)."""
    def story(rec: TrafficRecorder) -> None:
        for offset, rid in enumerate(ids):
            if rid is not None:
                rec.final_read("t", partition, offset, rid)
        rec.final_read_end("t", partition, complete)
    return story


def _clean() -> list[Event]:
    ids = ["a", "b", "c"]
    return _history(_writes(ids), _polls(list(ids)),
                    lambda rec: rec.commit("c", "g", "t", 0, 3), _final(list(ids)))


def _summary(events: list[Event], name: str, **options: Any) -> Summary:
    return {s.name: s for s in check_events(events, **options)}[name]


def test_a_clean_history_passes_every_check() -> None:
    summaries = check_events(_clean())
    assert [s.name for s in summaries] == list(CHECKS)
    assert all(s.ok and not s.examples for s in summaries), summaries
    assert _summary(_clean(), "lost_writes").counts["acked"] == 3
    assert _summary(_clean(), "poll_order").counts == {"polls": 3, "back": 0, "skip": 0}


# --- lost writes -------------------------------------------------------------------------

def test_an_acked_record_missing_from_the_final_read_is_a_lost_write() -> None:
    events = _history(_writes(["a", "b", "c"]), _polls(["a", "b", "c"]), _final(["a", None, "c"]))
    lost = lost_writes(events)
    assert not lost.ok and lost.unsafe
    assert lost.counts == {"acked": 3, "unjudged": 0, "lost": 1, "excused": 0, "counted": 1}
    assert lost.examples == [{"id": "b", "topic": "t", "partition": 0, "offset": 1,
                              "producer": "p", "excused": False}]
    assert lost_writes(_clean()).ok


def test_without_a_complete_final_read_loss_is_not_judged() -> None:
    events = _history(_writes(["a", "b"]), _final(["a"], complete=False))
    lost = lost_writes(events)
    assert lost.ok and lost.counts["unjudged"] == 2 and lost.counts["lost"] == 0


def test_a_lost_record_of_a_producer_without_acks_all_is_excused() -> None:
    events = _history(_writes(["a", "b"], acks="1"), _final(["a"]))
    lost = lost_writes(events)
    assert lost.ok and lost.counts["excused"] == 1 and lost.examples[0]["excused"]


def test_a_loss_within_the_fault_budget_is_reported_but_not_unsafe() -> None:
    events = _history(_writes(["a", "b", "c", "d"]), _final(["a", "b"]))
    by_range = lost_writes(events, LossBudget(offsets={("t", 0): (2, 4)}))
    by_count = lost_writes(events, LossBudget(records=2))
    for lost in (by_range, by_count):
        assert lost.ok and not lost.unsafe and lost.counts["lost"] == 2
        assert [e["id"] for e in lost.examples] == ["c", "d"]
    assert by_range.counts["excused"] == 2 and by_count.counts["counted"] == 2


def test_a_loss_beyond_the_fault_budget_is_unsafe() -> None:
    events = _history(_writes(["a", "b", "c", "d"]), _final(["a"]))
    lost = lost_writes(events, LossBudget(offsets={("t", 0): (2, 4)}))
    assert lost.unsafe and lost.counts == {"acked": 4, "unjudged": 0, "lost": 3,
                                           "excused": 2, "counted": 1}
    assert lost.examples[0] == {"id": "b", "topic": "t", "partition": 0, "offset": 1,
                                "producer": "p", "excused": False}  # counted ones first
    assert lost_writes(events, LossBudget(records=2)).unsafe


def test_the_kips_budget_allows_loss_only_past_min_isr_minus_one_lost_replicas() -> None:
    events = _history(_writes(["a", "b"]), _final(["a"]))
    assert lost_writes(events, LossBudget.for_lost_replicas(1, min_isr=2)).unsafe
    beyond = LossBudget.for_lost_replicas(2, min_isr=2)
    assert beyond.unlimited and "beyond min ISR - 1 = 1" in beyond.why
    assert lost_writes(events, beyond).ok


# --- duplicates --------------------------------------------------------------------------

def _duplicated(idempotent: bool) -> list[Event]:
    """"a" is written twice (a retry): at offsets 0 and 2 of the log."""
    return _history(_writes(["a", "b"], idempotent=idempotent), _polls(["a", "b", "a"]),
                    _final(["a", "b", "a"]))


def test_an_id_at_two_offsets_fails_with_idempotence_on() -> None:
    found = duplicates(_duplicated(idempotent=True))
    assert found.unsafe and found.counts == {"ids": 1, "failures": 1, "allowed_by_retries": 0,
                                             "allowed_by_client_epoch_bump": 0}
    assert found.examples == [{"id": "a", "idempotent": True, "allowed": None,
                               "positions": [["t", 0, 0], ["t", 0, 2]]}]
    assert duplicates(_clean()).ok


def test_without_idempotence_a_duplicate_is_allowed_by_retries() -> None:
    found = duplicates(_duplicated(idempotent=False))
    assert found.ok and found.counts == {"ids": 1, "failures": 0, "allowed_by_retries": 1,
                                         "allowed_by_client_epoch_bump": 0}
    assert duplicates(_duplicated(idempotent=False), idempotent=True).unsafe


def test_an_ack_at_another_offset_than_the_read_is_a_duplicate() -> None:
    events = _history(_writes(["a"], first=5), _final(["a"]))
    assert duplicates(events).examples[0]["positions"] == [["t", 0, 0], ["t", 0, 5]]


# --- inconsistent offsets ----------------------------------------------------------------

def test_one_offset_read_with_two_ids_is_inconsistent() -> None:
    events = _history(_writes(["a", "b"]), _polls(["a", "b"], consumer="c1"),
                      _polls(["a", "x"], consumer="c2"), _final(["a", "b"]))
    found = inconsistent_offsets(events)
    assert found.unsafe and found.counts == {"offsets_read": 2, "offsets": 1}
    assert found.examples == [{"topic": "t", "partition": 0, "offset": 1, "ids": ["b", "x"]}]
    agreeing = _history(_writes(["a", "b"]), _polls(["a", "b"], consumer="c1"),
                        _polls(["a", "b"], consumer="c2"), _final(["a", "b"]))
    assert inconsistent_offsets(agreeing).ok


def test_a_poll_and_the_final_read_disagreeing_is_inconsistent() -> None:
    events = _history(_writes(["a", "b"]), _polls(["a", "b"]), _final(["a", "z"]))
    assert inconsistent_offsets(events).examples[0]["ids"] == ["b", "z"]


# --- lost after read ---------------------------------------------------------------------

def test_a_polled_record_absent_from_the_final_read_is_lost_after_read() -> None:
    events = _history(_writes(["a", "b"]), _polls(["a", "b"]), _final(["a"]))
    found = lost_after_read(events)
    assert found.unsafe and found.counts == {"polled": 2, "lost": 1, "absent": 1, "replaced": 0}
    assert found.examples == [{"id": "b", "topic": "t", "partition": 0, "offset": 1,
                               "final_id": None, "in_final": False}]
    assert lost_after_read(_clean()).ok


def test_a_polled_offset_holding_another_id_at_the_end_is_lost_after_read() -> None:
    events = _history(_writes(["a", "b"]), _polls(["a", "b"]), _final(["b", "a"]))
    found = lost_after_read(events)
    assert found.counts == {"polled": 2, "lost": 2, "absent": 0, "replaced": 2}
    assert found.examples[0] == {"id": "a", "topic": "t", "partition": 0, "offset": 0,
                                 "final_id": "b", "in_final": True}


# --- order of polls and commits ----------------------------------------------------------

def test_polls_going_back_repeating_or_skipping_within_a_session_fail() -> None:
    def polls(rec: TrafficRecorder) -> None:
        for offset in (0, 1, 1, 0, 1, 2, 4):
            rec.poll("c", 0, "t", 0, offset, f"r{offset}")
    found = poll_order(_history(polls))
    assert found.unsafe and found.counts == {"polls": 7, "back": 2, "skip": 1}
    assert [(e["previous"], e["offset"], e["break"]) for e in found.examples] == [
        (1, 1, "back"), (1, 0, "back"), (2, 4, "skip")]
    assert found.examples[0]["consumer"] == "c" and found.examples[0]["session"] == 0


def test_a_new_session_or_another_partition_may_start_anywhere() -> None:
    events = _history(_polls(["a", "b", "c"]), _polls(["b", "c"], session=1, first=1),
                      _polls(["x"], partition=1, first=7), _polls(["a", "b"], consumer="d"))
    assert poll_order(events).ok


def test_a_committed_offset_going_back_fails() -> None:
    def commits(rec: TrafficRecorder) -> None:
        for consumer, offset in (("c1", 3), ("c1", 5), ("c2", 5), ("c2", 4)):
            rec.commit(consumer, "g", "t", 0, offset)
        rec.commit("c3", "other", "t", 0, 1)  # another group: its own offsets
    found = commit_order(_history(commits))
    assert found.unsafe and found.counts == {"commits": 5, "back": 1}
    assert found.examples == [{"group": "g", "consumer": "c2", "topic": "t", "partition": 0,
                               "previous": 5, "offset": 4, "break": "back", "line": 4}]
    assert commit_order(_clean()).ok


# --- unseen ------------------------------------------------------------------------------

def test_an_acked_record_no_consumer_polled_is_unseen_but_not_unsafe() -> None:
    events = _history(_writes(["a", "b", "c"]), _polls(["a"]), _final(["a", "b"]))
    found = unseen_acked(events)
    assert not found.ok and not found.unsafe
    assert found.counts == {"acked": 3, "unseen": 1}  # "c" is lost, not unseen
    assert found.examples == [{"id": "b", "topic": "t", "partition": 0, "offset": 1}]
    assert unseen_acked(_clean()).ok


# --- summaries and the safety axis -------------------------------------------------------

def test_examples_are_the_first_in_the_checks_order_and_bounded() -> None:
    ids = [f"r{i:02}" for i in range(40)]
    events = _history(_writes(ids), _final(ids[:5]))
    found = check_events(reversed(events), examples=4)[0]  # order of events: irrelevant
    assert found.counts["lost"] == 35
    assert [e["id"] for e in found.examples] == ["r05", "r06", "r07", "r08"]


def test_only_unsafe_checks_reach_the_safety_axis(tmp_path: Path) -> None:
    with TrafficWriter(tmp_path, "run") as writer:
        for story in (_writes(["a", "b", "c", "d"]), _polls(["a", "b"]),
                      _final(["a", "b", None, "d"])):
            story(writer)
    verdict = check_file(tmp_path / TRAFFIC_FILE)
    assert [s.name for s in verdict.unsafe] == ["lost_writes"]
    assert not verdict.by_name()["unseen_acked"].ok  # "d": never polled, but not lost
    findings = verdict.safety_findings()
    assert [f["rule"] for f in findings] == ["traffic-lost_writes"]
    assert findings[0]["records"][0]["id"] == "c" and "counted 1" in findings[0]["why"]


# --- the file ----------------------------------------------------------------------------

def test_the_file_is_streamed_back_as_written_skipping_bad_lines(tmp_path: Path) -> None:
    with TrafficWriter(tmp_path, "run", flush_every=2) as writer:
        writer.producer("p", "all", True)
        writer.send("p", 0, "a", "t", 0)
        writer.ack("p", 0, "a", "t", 0, 7)
    path = tmp_path / TRAFFIC_FILE
    with open(path, "ab") as fh:
        fh.write(b'{"n": 4, "kind": "poll", "offset": "7"}\n\n')  # ill-typed, then blank
        fh.write(b'{"n": 5, "kind": "ack", "producer": "p", "se')  # torn last line
    history = TrafficFile(path)
    events = list(history)
    assert [e["kind"] for e in events] == ["traffic_start", "producer", "send", "ack"]
    assert [e["n"] for e in events] == [0, 1, 2, 3] and history.skipped == 2
    assert events[3]["offset"] == 7 and events[0]["run_id"] == "run"
    assert list(history) == events  # every iteration streams the file again


def test_an_ack_without_an_offset_is_recorded_as_null() -> None:
    events = _history(lambda rec: rec.ack("p", 0, "a", "t", 0, -1))
    assert events[-1]["offset"] is None
    assert lost_writes(_history(lambda rec: rec.ack("p", 0, "a", "t", 0, -1),
                                _final([]))).examples[0]["offset"] is None


def test_a_run_without_traffic_has_no_traffic_verdict(tmp_path: Path) -> None:
    from harness.traffic.spark import check_run
    assert check_run(tmp_path) is None
    with TrafficWriter(tmp_path, "run") as writer:
        _writes(["a"])(writer)
    verdict = check_run(tmp_path)
    assert verdict is not None and verdict.engine == "in-process" and verdict.events == 4


def test_a_run_directory_holds_one_traffic_history(tmp_path: Path) -> None:
    TrafficWriter(tmp_path, "run").close()
    with pytest.raises(FileExistsError):
        TrafficWriter(tmp_path, "run")


# --- synthetic histories -----------------------------------------------------------------

CHECK_OF_ANOMALY = {"lost": "lost_writes", "duplicate": "duplicates",
                    "inconsistent": "inconsistent_offsets", "lost_after_read": "lost_after_read",
                    "poll_back": "poll_order", "poll_skip": "poll_order",
                    "commit_back": "commit_order"}


def test_a_clean_synthetic_history_passes_and_each_anomaly_fails_its_check() -> None:
    assert set(CHECK_OF_ANOMALY) == set(ANOMALIES)
    assert all(s.ok for s in check_events(synthetic_history(Shape(records=600))))
    summaries = {s.name: s for s in check_events(synthetic_history(
        Shape(records=3000, anomaly_rate=0.03, seed=4, unpolled_tail=2)))}
    assert all(not summaries[name].ok for name in CHECK_OF_ANOMALY.values())
    assert summaries["unseen_acked"].counts["unseen"] == 6  # 2 a partition, 3 partitions


def test_a_shape_gives_the_same_history_every_time() -> None:
    shape = Shape.about(5_000, anomaly_rate=0.02, seed=9)
    first = list(synthetic_history(shape))
    assert first == list(synthetic_history(shape))
    assert 4_500 < len(first) < 5_500


# --- Spark --------------------------------------------------------------------------------

def _every_check_failing(run_dir: Path, then: Shape | None = None) -> Path:
    """A history where every check fails (under BUDGET too), with an ill-typed line and a
    torn last one; `then`
    adds a synthetic history's traffic (its own topic, producers, groups and ids)."""
    def commits(rec: TrafficRecorder) -> None:
        for offset in (2, 4, 3):
            rec.commit("c1", "g", "t", 0, offset)
    stories = [_writes(["a", "b", "c", "d", "e", "f", "h"]),
               _writes(["k"], producer="q", acks="1", partition=1),
               _polls(["a", "b", "x", "a", "e"], consumer="c1"),
               _polls(["a", None, "c"], consumer="c2", session=3), commits,
               _final(["a", "b", "c", "h", "e", "a", "h"]), _final([], partition=1)]
    run_dir.mkdir(parents=True)
    with TrafficWriter(run_dir, "crafted") as writer:
        for story in stories:
            story(writer)
        for _ in play(then, writer) if then else ():
            pass
    with open(writer.path, "ab") as fh:
        fh.write(b'{"n": 998, "kind": "poll", "consumer": "c1", "session": 0, "topic": "t", '
                 b'"partition": 0, "offset": -2, "id": "a", "t": 1.0}\n')  # no such offset
        fh.write(b'{"n": 999, "kind": "final_read", "topic": "t"')  # torn
    return writer.path


#: excuses "f" (t/0 offset 5), and the synthetic part's first 600 offsets of s/1
BUDGET = LossBudget(offsets={("t", 0): (5, 6), ("s", 1): (0, 600)})


def test_the_crafted_history_for_spark_fails_every_check(tmp_path: Path) -> None:
    crafted = check_file(_every_check_failing(tmp_path / "run"), budget=BUDGET)
    assert not any(s.ok for s in crafted.summaries), crafted.summaries
    assert crafted.by_name()["lost_writes"].counts == {"acked": 8, "unjudged": 0, "lost": 3,
                                                       "excused": 2, "counted": 1}
    assert crafted.by_name()["lost_after_read"].counts == {"polled": 5, "lost": 2, "absent": 1,
                                                           "replaced": 1}  # x; a at 3
    assert crafted.skipped_lines == 2


@pytest.mark.skipif(shutil.which("java") is None,
                    reason="the Spark engine needs Java 17 on PATH (no `java` found)")
def test_in_process_and_spark_give_the_same_summaries(tmp_path: Path) -> None:
    """One history: the crafted one above, then a synthetic one with every anomaly,
    duplicates without idempotence, unseen records and more findings than examples."""
    pytest.importorskip("pyspark")
    from harness.infra.spark import session
    from harness.traffic.spark import check_history
    shape = Shape(records=3000, anomaly_rate=0.03, seed=4, unpolled_tail=2, idempotent=False,
                  topic="s")
    path = _every_check_failing(tmp_path / "run", then=shape)
    here = check_history(path, threshold_bytes=1 << 40, budget=BUDGET, examples=5)
    there = check_history(path, threshold_bytes=0, budget=BUDGET, examples=5,
                          spark=session(app="kafka-chaos-traffic-test"))
    assert (here.engine, there.engine) == ("in-process", "spark")
    assert (here.events, here.skipped_lines) == (there.events, there.skipped_lines)
    for mine, theirs in zip(here.summaries, there.summaries, strict=True):
        assert mine == theirs, mine.name
    found = {s.name: s.counts for s in here.summaries}
    assert found["lost_writes"]["excused"] > 2 and found["lost_writes"]["counted"] > 1
    assert found["duplicates"]["failures"] == 2 and found["duplicates"]["allowed_by_retries"] > 0
    assert found["lost_after_read"]["absent"] > 0 and found["lost_after_read"]["replaced"] == 1
    assert all(len(s.examples) == 5 for s in here.summaries)


# --- memory ------------------------------------------------------------------------------

def _peak_bytes(events: Any) -> tuple[int, TrafficIndex]:
    tracemalloc.start()
    try:
        index = TrafficIndex.build(events)
        check_events(index)
        return tracemalloc.get_traced_memory()[1], index
    finally:
        tracemalloc.stop()


def test_a_million_events_are_checked_in_bounded_memory() -> None:
    """About 165,000 records, each sent, acked, polled by 3 consumers and finally read:
    holding the events would take ~400 MB; the index keeps ~170 bytes an id."""
    peak, index = _peak_bytes(synthetic_history(Shape.about(1_000_000)))
    assert index.events >= 1_000_000
    assert peak < 64 << 20, f"{peak / 2**20:.1f} MiB"
    assert peak / len(index.ids) < 300, f"{peak / len(index.ids):.0f} bytes an id"


def test_memory_grows_with_ids_not_with_events() -> None:
    few, index = _peak_bytes(synthetic_history(Shape(records=20_000, consumers=1)))
    many, more = _peak_bytes(synthetic_history(Shape(records=20_000, consumers=10)))
    assert more.events > 2.5 * index.events
    assert many < 1.2 * few, (few, many)
