"""Traffic across a topic deleted and created again (harness/traffic/incarnations.py,
docs/TRAFFIC.md "Topics deleted and created again"): each incarnation judged apart. For
each rule a crafted history where it fails and one where it passes."""

from __future__ import annotations

from pathlib import Path

from harness.traffic.checks import check_file, check_lives
from harness.traffic.history import Event, TrafficRecorder, TrafficWriter


def _base(rec: TrafficRecorder) -> None:
    """Producer p (acks=all, idempotent) acks a0, a1 at offsets 0, 1 of incarnation 0; a
    consumer polls both; the topic is deleted and created again (settled)."""
    rec.producer("p", "all", True)
    for seq, rid in enumerate(("a0", "a1")):
        rec.send("p", seq, rid, "t", 0)
        rec.ack("p", seq, rid, "t", 0, seq)
    rec.polls("c", 0, [("t", 0, 0, "a0"), ("t", 0, 1, "a1")])
    rec.topic_life("topic_deleted", "t", "requested")
    rec.send("p", 2, "x2", "t", 0)
    rec.send_error("p", 2, "x2", "t", "UNKNOWN_TOPIC_OR_PART", 0)
    rec.topic_life("topic_created", "t", "requested")
    rec.topic_life("topic_created", "t", "settled")


def _history(after_creation: bool, in_final: bool) -> list[Event]:
    """_base, then b0 sent and acked at offset 0 after the re-creation; the final read of
    incarnation 1 holds b0 (``in_final``) or nothing."""
    events: list[Event] = []
    rec = TrafficRecorder(events.append)
    rec.start("test")
    _base(rec)
    if after_creation:
        rec.send("p", 3, "b0", "t", 0)
        rec.ack("p", 3, "b0", "t", 0, 0)
        rec.polls("c", 1, [("t", 0, 0, "b0")], incarnation=1)
    if in_final:
        rec.final_read("t", 0, 0, "b0")
    rec.final_read_end("t", 0, True)
    return events


def _by_name(events: list[Event]) -> tuple[dict[str, dict[str, int]], dict[str, object]]:
    summaries, lives = check_lives(events)
    assert lives is not None
    return {s.name: s.counts for s in summaries}, lives


def test_old_incarnation_records_are_gone_by_request_not_lost() -> None:
    counts, lives = _by_name(_history(after_creation=True, in_final=True))
    assert counts["lost_writes"]["lost"] == 0
    assert counts["lost_writes"]["gone_by_request"] == 2
    assert counts["lost_writes"]["acked"] == 1  # b0, judged in incarnation 1
    assert counts["lost_after_read"]["lost"] == 0  # a0, a1 were polled in incarnation 0
    assert counts["inconsistent_offsets"]["offsets"] == 0  # offset 0 of two logs
    assert counts["unseen_acked"]["unseen"] == 0
    assert lives["expected_errors"] == 1
    assert lives["expected_errors_by_name"] == {"UNKNOWN_TOPIC_OR_PART": 1}
    assert lives["indeterminate"] == 0


def test_without_incarnations_the_old_records_read_as_lost() -> None:
    """The same history with its topic_life lines removed (as the checks read every topic
    as one log before schema 1.1): the old incarnation's records count as lost, and offset
    0 as read with two ids. The rule above is what makes them gone by request."""
    events = [e for e in _history(after_creation=True, in_final=True)
              if e["kind"] not in ("topic_deleted", "topic_created")]
    summaries, lives = check_lives(events)
    assert lives is None
    counts = {s.name: s for s in summaries}
    assert not counts["lost_writes"].ok and counts["lost_writes"].counts["lost"] == 2
    assert not counts["inconsistent_offsets"].ok


def test_a_record_acked_after_the_recreation_and_missing_is_lost() -> None:
    summaries, lives = check_lives(_history(after_creation=True, in_final=False))
    lost = next(s for s in summaries if s.name == "lost_writes")
    assert not lost.ok and lost.unsafe
    assert lost.counts["lost"] == 1 and lost.counts["gone_by_request"] == 2
    assert lost.examples[0]["id"] == "b0" and lost.examples[0]["topic"] == "t#1"
    assert lives is not None and lives["indeterminate"] == 0


def _racing(in_final: bool) -> list[Event]:
    """r sent before the deletion, acked after the re-creation: either incarnation."""
    events: list[Event] = []
    rec = TrafficRecorder(events.append)
    rec.start("test")
    rec.producer("p", "all", True)
    rec.send("p", 0, "r", "t", 0)
    rec.topic_life("topic_deleted", "t", "requested")
    rec.topic_life("topic_created", "t", "requested")
    rec.topic_life("topic_created", "t", "settled")
    rec.ack("p", 0, "r", "t", 0, 0)
    if in_final:
        rec.final_read("t", 0, 0, "r")
    rec.final_read_end("t", 0, True)
    return events


def test_a_send_racing_the_deletion_is_indeterminate_when_not_in_the_new_log() -> None:
    counts, lives = _by_name(_racing(in_final=False))
    assert lives["indeterminate"] == 1
    assert lives["indeterminate_examples"] == [
        {"id": "r", "topic": "t", "partition": 0, "offset": 0, "producer": "p",
         "ack_line": 6, "incarnations": [0, 1]}]
    assert counts["lost_writes"]["lost"] == 0 and counts["lost_writes"]["acked"] == 0


def test_a_send_racing_the_deletion_found_in_the_new_log_is_judged_there() -> None:
    counts, lives = _by_name(_racing(in_final=True))
    assert lives["indeterminate"] == 0 and lives["resolved_by_final_read"] == 1
    assert counts["lost_writes"]["acked"] == 1 and counts["lost_writes"]["lost"] == 0
    assert counts["unseen_acked"]["unseen"] == 1


def test_a_topic_deleted_at_the_end_loses_nothing() -> None:
    events: list[Event] = []
    rec = TrafficRecorder(events.append)
    rec.start("test")
    rec.producer("p", "all", True)
    rec.send("p", 0, "a", "t", 0)
    rec.ack("p", 0, "a", "t", 0, 0)
    rec.topic_life("topic_deleted", "t", "requested")
    rec.send("p", 1, "b", "t", 0)
    rec.ack("p", 1, "b", "t", 0, 1)  # acked by a broker that had not deleted it yet
    counts, lives = _by_name(events)
    assert counts["lost_writes"]["gone_by_request"] == 2
    assert lives["acked_during_deletion"] == 1 and lives["indeterminate"] == 0
    assert lives["topics"] == {"t": {"incarnations": 1, "deleted_at_end": True}}


def test_an_id_in_both_incarnations_is_not_a_duplicate() -> None:
    """Appended to the old log (a consumer polled it there), its answer lost with the
    deletion, retried into the new one: once in each log."""
    events = _racing(in_final=True)
    events.insert(3, {**events[2], "kind": "poll", "consumer": "c", "session": 0,
                      "topic": "t", "partition": 0, "offset": 7, "id": "r"})
    for n, e in enumerate(events):
        e["n"] = n
    counts, _ = _by_name(events)
    assert counts["duplicates"]["failures"] == 0
    assert counts["duplicates"]["across_incarnations"] == 1


def test_a_refused_deletion_changes_nothing() -> None:
    events: list[Event] = []
    rec = TrafficRecorder(events.append)
    rec.start("test")
    rec.producer("p", "all", True)
    rec.topic_life("topic_deleted", "t", "requested")
    rec.topic_life("topic_deleted", "t", "refused")
    rec.send("p", 0, "a", "t", 0)
    rec.ack("p", 0, "a", "t", 0, 0)
    rec.final_read_end("t", 0, True)
    summaries, _ = check_lives(events)
    lost = next(s for s in summaries if s.name == "lost_writes")
    assert not lost.ok and lost.counts["lost"] == 1  # one log: a is lost


def test_the_file_is_judged_the_same_and_says_its_incarnations(tmp_path: Path) -> None:
    with TrafficWriter(tmp_path, "test") as writer:
        _base(writer)
        writer.send("p", 3, "b0", "t", 0)
        writer.ack("p", 3, "b0", "t", 0, 0)
        writer.final_read("t", 0, 0, "b0")
        writer.final_read_end("t", 0, True)
    verdict = check_file(tmp_path / "traffic.jsonl")
    assert verdict.skipped_lines == 0
    assert verdict.incarnations is not None
    assert verdict.incarnations["topics"] == {"t": {"incarnations": 2,
                                                    "deleted_at_end": False}}
    assert not verdict.unsafe
    lines = (tmp_path / "traffic.jsonl").read_text().splitlines()
    assert '"incarnation":1' in lines[-1]  # the final read names the new incarnation
    assert verdict.to_json()["incarnations"]["expected_errors"] == 1
