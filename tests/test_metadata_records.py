"""The pure-Python metadata-log decoder against Kafka's own DumpLogSegments output.

fixtures/metadata/<version>/ holds a controller's real metadata log (segment, newest
snapshot, quorum-state) and DumpLogSegments' output for it, as printed; synthetic/<version>/
holds every record type and version of that build, serialized by Kafka's own serde (see
its make.py). No JVM runs here: the expected records are parsed from the saved output.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from harness.client import metadata_log, metadata_records
from harness.client.metadata_records import METADATA_DIR, SCHEMAS, read_log_dir

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "metadata"
VERSIONS = ("4.3.1", "3.9.1")


def kafkas_records(case: Path, latest_snapshot: bool) -> list[dict[str, Any]]:
    """What DumpLogSegments printed for the case, cut the way the decoder reads the dir."""
    text = (case / "dumplogsegments.txt").read_text()
    printed = metadata_log.parse_dump(text)
    assert len(printed) == text.count(" payload: {")  # no record Kafka printed is missed
    return metadata_log.select(printed, metadata_records.plan(case / METADATA_DIR,
                                                              latest_snapshot))


# -- equal to Kafka, record for record ---------------------------------------------------
@pytest.mark.parametrize("latest_snapshot", [False, True], ids=["history", "latest-snapshot"])
@pytest.mark.parametrize("version", VERSIONS)
def test_real_controller_log_decodes_as_dump_log_segments_does(version: str,
                                                               latest_snapshot: bool) -> None:
    case = FIXTURES / version
    expected = kafkas_records(case, latest_snapshot)
    got = read_log_dir(case / METADATA_DIR, latest_snapshot=latest_snapshot)
    assert len(got) == len(expected) > 60
    for ours, kafka in zip(got, expected, strict=True):
        assert ours == kafka


def test_real_logs_hold_the_kip966_fields_we_rely_on() -> None:
    changes = [r["data"] for r in read_log_dir(FIXTURES / "4.3.1" / METADATA_DIR)
               if r["type"] == "PARTITION_CHANGE_RECORD"]
    seen = {field for data in changes for field in data}
    assert {"eligibleLeaderReplicas", "lastKnownElr", "leaderRecoveryState", "addingReplicas",
            "removingReplicas", "directories", "leader", "isr", "replicas"} <= seen


@pytest.mark.parametrize("version", VERSIONS)
def test_every_record_type_and_version_decodes_as_dump_log_segments_does(version: str) -> None:
    case = FIXTURES / "synthetic" / version
    expected = kafkas_records(case, latest_snapshot=False)
    got = read_log_dir(case / METADATA_DIR)
    assert len(got) == len(expected)
    for ours, kafka in zip(got, expected, strict=True):
        assert ours == kafka
    if version == "4.3.1":  # the newest build: every key and version of our tables
        covered = {(r["type"], r["version"]) for r in got}
        assert covered == {(s.type_name, v) for s in SCHEMAS.values()
                           for v in range(s.max_version + 1)}


def test_snapshot_of_a_real_log_starts_where_the_log_is_cut() -> None:
    records = read_log_dir(FIXTURES / "4.3.1" / METADATA_DIR, latest_snapshot=True)
    sources = [r["source"] for r in records]
    first_log = sources.index("log")
    assert set(sources[:first_log]) == {"snapshot"} and set(sources[first_log:]) == {"log"}
    assert records[first_log]["offset"] == 107  # the snapshot's end offset


def test_replay_agrees_between_history_and_latest_snapshot() -> None:
    log_dir = FIXTURES / "4.3.1" / METADATA_DIR
    brokers = (1, 2, 3, 4)
    full = metadata_log.replay(read_log_dir(log_dir), "t", 0, brokers)
    assert full == metadata_log.replay(metadata_log.decode(None, log_dir), "t", 0, brokers)
    assert full is not None
    assert (full["leader"], full["replicas"], full["isr"], full["elr"]) == (
        2, [2, 3, 4], [2, 4], [])


# -- synthetic batches -------------------------------------------------------------------
def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def compact_string(s: str) -> bytes:
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


NOOP = b"\x01\x14\x00\x00"  # frame 1, api key 20, version 0, no tagged fields


def topic_record(name: str, uuid_byte: int = 7) -> bytes:
    return b"\x01\x02\x00" + compact_string(name) + bytes([uuid_byte] * 16) + b"\x00"


def batch(base_offset: int, values: list[bytes], leader_epoch: int = 3,
          timestamp: int = 1_000) -> bytes:
    """A v2 batch; base offset and leader epoch sit outside the CRC, so patch them in."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    out = builder.build()
    out[0:8] = struct.pack(">q", base_offset)
    out[12:16] = struct.pack(">i", leader_epoch)
    return bytes(out)


def noops(base_offset: int, count: int) -> bytes:
    return batch(base_offset, [NOOP] * count)


def test_a_torn_last_batch_is_dropped_not_fatal(tmp_path: Path) -> None:
    whole = noops(0, 3) + noops(3, 2) + noops(5, 4)
    last_start = len(whole) - len(noops(5, 4))
    flipped = whole[:-3] + bytes([whole[-3] ^ 0xFF]) + whole[-2:]  # CRC no longer matches
    torn = [whole[:last_start + cut] for cut in (5, 20, 70)] + [whole[:-1], flipped]
    for data in torn:
        (tmp_path / "00000000000000000000.log").write_bytes(data)
        assert [r["offset"] for r in read_log_dir(tmp_path)] == [0, 1, 2, 3, 4]
    # Zeros after the last batch (a crash can leave the file longer than its data).
    (tmp_path / "00000000000000000000.log").write_bytes(whole + b"\x00" * 64)
    assert [r["offset"] for r in read_log_dir(tmp_path)] == list(range(9))


def test_segments_after_a_corrupt_one_are_dropped_as_kafka_recovery_does(
        tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(noops(0, 3) + noops(3, 2)[:-4])
    (tmp_path / "00000000000000000005.log").write_bytes(noops(5, 2))
    assert [r["offset"] for r in read_log_dir(tmp_path)] == [0, 1, 2]


def test_unknown_api_keys_and_versions_are_kept_and_skipped_over(tmp_path: Path) -> None:
    unknown_key = b"\x01" + uvarint(99) + b"\x00" + b"whatever follows"
    future_version = b"\x01\x05\x09" + b"\xff" * 40  # PartitionChangeRecord v9
    garbled = b"\x01\x02\x00" + compact_string("t")  # TopicRecord cut before its uuid
    values = [unknown_key, topic_record("t"), future_version, garbled, NOOP]
    (tmp_path / "00000000000000000000.log").write_bytes(batch(0, values))
    got = read_log_dir(tmp_path)
    assert [(r["type"], r["offset"]) for r in got] == [
        ("UNKNOWN", 0), ("TOPIC_RECORD", 1), ("UNKNOWN", 2), ("UNKNOWN", 3), ("NO_OP_RECORD", 4)]
    assert {k: got[0][k] for k in ("api_key", "version", "data")} == {
        "api_key": 99, "version": 0, "data": {}}
    assert (got[2]["api_key"], got[2]["version"]) == (5, 9) and "error" not in got[2]
    assert got[1]["data"] == {"name": "t", "topicId": "BwcHBwcHBwcHBwcHBwcHBw"}
    assert "TopicRecord v0" in got[3]["error"]
    assert (got[4]["leader_epoch"], got[4]["append_time_ms"], got[4]["source"]) == (
        3, 1_004, "log")


def write_snapshot(log_dir: Path, end_offset: int, name: str) -> None:
    snapshot = log_dir / f"{end_offset:020d}-{1:010d}.checkpoint"
    snapshot.write_bytes(batch(0, [topic_record(name)]))


def test_snapshot_and_log_are_stitched_at_the_snapshot_end(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(noops(0, 6) + noops(6, 4))
    for end, name in ((3, "old"), (7, "new")):
        write_snapshot(tmp_path, end, name)
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")  # not a snapshot
    # The whole log is still there: it is the history, no snapshot needed.
    assert [r["offset"] for r in read_log_dir(tmp_path)] == list(range(10))
    latest = read_log_dir(tmp_path, latest_snapshot=True)
    assert [(r["source"], r["type"], r["offset"]) for r in latest] == [
        ("snapshot", "TOPIC_RECORD", 0), ("log", "NO_OP_RECORD", 7), ("log", "NO_OP_RECORD", 8),
        ("log", "NO_OP_RECORD", 9)]
    assert latest[0]["data"]["name"] == "new"


def test_a_log_whose_prefix_was_deleted_starts_from_the_snapshot_reaching_it(
        tmp_path: Path) -> None:
    (tmp_path / "00000000000000000005.log").write_bytes(noops(5, 5))
    (tmp_path / "00000000000000000010.log").write_bytes(noops(10, 2))
    for end, name in ((3, "too-old"), (5, "exact"), (8, "newer")):
        write_snapshot(tmp_path, end, name)
    got = read_log_dir(tmp_path)
    assert got[0]["data"]["name"] == "exact"
    assert [r["offset"] for r in got[1:]] == list(range(5, 12))
    newest = read_log_dir(tmp_path, latest_snapshot=True)
    assert newest[0]["data"]["name"] == "newer"
    assert [r["offset"] for r in newest[1:]] == [8, 9, 10, 11]


def test_an_empty_or_missing_dir_has_no_records(tmp_path: Path) -> None:
    assert read_log_dir(tmp_path) == []
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    assert read_log_dir(tmp_path) == []


# -- archiving -------------------------------------------------------------------------
def test_archive_copies_segments_snapshots_and_quorum_state_only(tmp_path: Path) -> None:
    data = tmp_path / "nodes" / "controller-100" / "data"
    src = data / METADATA_DIR
    shutil.copytree(FIXTURES / "4.3.1" / METADATA_DIR, src)
    for extra in ("00000000000000000000.index", "00000000000000000000.timeindex",
                  "leader-epoch-checkpoint", "partition.metadata"):
        (src / extra).write_bytes(b"\x00" * 16)
    run_dir = tmp_path / "run"
    written = metadata_records.archive(run_dir, {100: data, 101: tmp_path / "never-started"})
    assert written == {100: run_dir / "metadata" / "100"}
    assert sorted(p.name for p in written[100].iterdir()) == [
        "00000000000000000000.log", "00000000000000000107-0000000001.checkpoint", "quorum-state"]
    assert read_log_dir(written[100]) == read_log_dir(src)


# -- the observer's fallback -------------------------------------------------------------
def test_observer_fallback_refuses_a_log_it_cannot_fully_read(tmp_path: Path) -> None:
    future_change = b"\x01\x05\x09" + b"\xff" * 8  # PartitionChangeRecord v9
    (tmp_path / "00000000000000000000.log").write_bytes(batch(0, [NOOP, future_change]))
    with pytest.raises(ValueError, match="api key 5, version 9"):
        metadata_log.decode(None, tmp_path)
    unknown_key = b"\x01" + uvarint(99) + b"\x00"  # not a record replay reads: harmless
    (tmp_path / "00000000000000000000.log").write_bytes(batch(0, [NOOP, unknown_key]))
    assert len(metadata_log.decode(None, tmp_path)) == 2


def test_replay_forgets_a_deleted_topic() -> None:
    def partition(tid: str, isr: list[int], **extra: Any) -> dict[str, Any]:
        return {"type": "PARTITION_RECORD", "data": {"partitionId": 0, "topicId": tid,
                                                     "replicas": [1, 2], "isr": isr,
                                                     "leader": isr[0], **extra}}
    records = [{"type": "TOPIC_RECORD", "data": {"name": "t", "topicId": "old"}},
               partition("old", [1], eligibleLeaderReplicas=[2]),
               {"type": "REMOVE_TOPIC_RECORD", "data": {"topicId": "old"}}]
    # Deleted: no replicas, no leader, as a broker shows it (the observer's absent view),
    # so a step after the deletion settles with no broker to ask (hunt fuzz-s4302-0).
    gone = metadata_log.replay(records, "t", 0, (1, 2))
    assert gone == {"leader": -1, "leader_epoch": None, "replicas": [], "isr": [], "elr": [],
                    "last_known_elr": [], "fenced": [1, 2]}
    assert metadata_log.replay(records[:0], "t", 0, (1, 2)) is None  # never there
    records += [{"type": "TOPIC_RECORD", "data": {"name": "t", "topicId": "new"}},
                partition("new", [1, 2])]
    state = metadata_log.replay(records, "t", 0, (1, 2))
    assert state is not None and (state["isr"], state["elr"]) == ([1, 2], [])


def test_replay_shows_a_partition_not_created_yet_absent() -> None:
    """A topic the log holds without the partition (add_partitions has not added it):
    absent, as brokers show it, so a step settles with no broker to ask."""
    records = [{"type": "TOPIC_RECORD", "data": {"name": "t", "topicId": "a"}},
               {"type": "PARTITION_RECORD", "data": {"partitionId": 0, "topicId": "a",
                                                     "replicas": [1], "isr": [1],
                                                     "leader": 1}}]
    absent = {"leader": -1, "leader_epoch": None, "replicas": [], "isr": [], "elr": [],
              "last_known_elr": [], "fenced": [1]}
    assert metadata_log.replay(records, "t", 1, (1,)) == absent
    assert metadata_log.replay(records, "u", 0, (1,)) is None  # no such topic: unknown
    state = metadata_log.replay(records, "t", 0, (1,))
    assert state is not None and state["leader"] == 1
