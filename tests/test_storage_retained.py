"""The bytes a tiered partition retains as the observer counts them (issue 45, the 3.7.2
false positive of bench/RESULTS-storage.md): a leader that was a follower rolled its own
segments, so its active segment straddles the remote tier's end; only its records above that
end count, neither none of them (the old undercount) nor the whole segment."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from test_tiered import TIERED

from harness.client.observe.storage import local_bytes_after, remote_segments, retained_bytes
from harness.judge.tiered import LOG_START_RULE, log_start_findings
from harness.scenario.loader import parse_scenario

BODY = 100  # bytes of one crafted batch's records


def _batch(base: int, records: int, body: int = BODY) -> bytes:
    """A v2 record batch: its 27-byte header (baseOffset, batchLength, epoch, magic, crc,
    attributes, lastOffsetDelta) and a body."""
    header = struct.pack(">qii", base, 15 + body, 0) + b"\x02" + b"\0" * 6
    return header + struct.pack(">i", records - 1) + b"\0" * body


BATCH = len(_batch(0, 1))


def _segment(pdir: Path, base: int, batches: list[tuple[int, int]]) -> bytes:
    data = b"".join(_batch(b, n) for b, n in batches)
    (pdir / f"{base:020d}.log").write_bytes(data)
    return data


def _remote(root: Path, segments: list[tuple[int, list[tuple[int, int]]]]) -> None:
    pdir = root / "t-0-2x7MMfnoQL6k2roW89be1g"
    pdir.mkdir(parents=True)
    for base, batches in segments:
        (pdir / f"{base:020d}-sB1DtXTNQI6-7qmOdbjsLA.log").write_bytes(
            b"".join(_batch(b, n) for b, n in batches))


def _straddling_leader(data_dir: Path) -> Path:
    """A new leader that rolled at 0 and 50 while the old one rolled at 0, 20 and 40: its
    active segment 50 holds 50-89, the remote tier ends at 69."""
    pdir = data_dir / "t-0"
    pdir.mkdir(parents=True)
    _segment(pdir, 0, [(0, 10), (10, 10), (20, 10), (30, 10), (40, 10)])
    _segment(pdir, 50, [(50, 10), (60, 10), (70, 10), (80, 10)])
    return pdir


def _old_count(data_dir: Path, offset: int) -> int:
    """What the observer counted before: whole segments whose base offset is above."""
    return sum(p.stat().st_size for p in (data_dir / "t-0").glob("*.log")
               if int(p.stem) > offset)


def test_a_straddling_active_segment_counts_its_records_above_the_remote_end(
        tmp_path: Path) -> None:
    _straddling_leader(tmp_path)
    assert _old_count(tmp_path, 69) == 0  # the undercount
    assert local_bytes_after(tmp_path, "t", 0, 69) == 2 * BATCH  # 70-79 and 80-89 only
    # not the whole segment (four batches), which would count 50-69 twice
    assert local_bytes_after(tmp_path, "t", 0, 69) < (tmp_path / "t-0" / f"{50:020d}.log"
                                                      ).stat().st_size


def test_aligned_segments_count_as_before(tmp_path: Path) -> None:
    """The leader that uploaded: its segment boundaries are the remote tier's."""
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    _segment(pdir, 0, [(0, 10), (10, 10)])
    _segment(pdir, 20, [(20, 10), (30, 10)])
    _segment(pdir, 40, [(40, 5)])
    assert local_bytes_after(tmp_path, "t", 0, 39) == _old_count(tmp_path, 39) == BATCH
    assert local_bytes_after(tmp_path, "t", 0, 19) == 3 * BATCH
    assert local_bytes_after(tmp_path, "t", 0, 44) == 0  # everything uploaded
    assert local_bytes_after(tmp_path, "t", 0, -1) == 5 * BATCH  # nothing uploaded


def test_the_offset_index_is_a_start_and_a_wrong_one_is_not_trusted(tmp_path: Path) -> None:
    pdir = _straddling_leader(tmp_path)
    index = pdir / f"{50:020d}.index"
    # Kafka's entries (offset - base, position): one after 50-59 and 60-69 were appended
    # (largest offset 69, the append starting at 0), one at 70-79; then preallocated zeros.
    index.write_bytes(struct.pack(">ii", 9, BATCH) + struct.pack(">ii", 29, 2 * BATCH)
                      + b"\0" * 64)
    assert local_bytes_after(tmp_path, "t", 0, 69) == 2 * BATCH
    assert local_bytes_after(tmp_path, "t", 0, 79) == BATCH
    for rel, pos in ((5, 7), (9, 5), (9, BATCH + 3), (1, 2 * BATCH - 12)):  # not on a header
        index.write_bytes(struct.pack(">ii", rel, pos) + b"\0" * 16)
        assert local_bytes_after(tmp_path, "t", 0, 69) == 2 * BATCH


def _scenario(retention_bytes: int) -> Any:
    """test_tiered's tiered scenario, with this retention by bytes and a long one by time."""
    return parse_scenario(TIERED.replace('retention.bytes: "1000"',
                                         f'retention.bytes: "{retention_bytes}"\n'
                                         '    retention.ms: "600000"'), "t.yaml")


def _events(tmp_path: Path) -> list[dict[str, Any]]:
    """The old leader's observation (log start 0), then the new leader's after remote
    retention deleted segment 0-19 (log start 20): remote 20-69, local above 69."""
    data_dir = tmp_path / "broker4"
    _straddling_leader(data_dir)
    root = tmp_path / "remote"
    _remote(root, [(20, [(20, 10), (30, 10)]), (40, [(40, 10), (50, 10), (60, 10)])])
    segs = remote_segments(root, "t", 0)
    retained = retained_bytes(segs, 20, data_dir, "t", 0)
    assert retained == 7 * BATCH  # 20-69 remote, 70-89 local
    base = {"kind": "storage", "topic": "t", "partition": 0, "log_end": 90}
    return [{**base, "index": 0, "leader": 1, "log_start": 0, "retained_bytes": 9 * BATCH,
             "t_wall": 10.0},
            {**base, "index": 1, "leader": 4, "log_start": 20, "retained_bytes": retained,
             "t_wall": 12.0}]


def test_retention_explains_the_advance_once_the_straddling_records_count(
        tmp_path: Path) -> None:
    """The 3.7.2 shape: with the records of the straddling segment, what is retained is at
    least retention.bytes (the old count, 5 batches, was under it: UNSAFE wrongly)."""
    events = _events(tmp_path)
    assert log_start_findings(_scenario(6 * BATCH), events) == []
    assert log_start_findings(_scenario(7 * BATCH), events) == []


def test_the_check_still_fails_when_the_retained_bytes_are_under_retention(
        tmp_path: Path) -> None:
    """The same layout under retention.bytes above what is really retained (7 batches):
    the deletion is not explained, and counting the straddling segment whole (9 batches)
    would have hidden it."""
    events = _events(tmp_path)
    found = log_start_findings(_scenario(8 * BATCH), events)
    assert [f["rule"] for f in found] == [LOG_START_RULE]
    assert found[0]["retained_bytes"] == 7 * BATCH
    assert "advanced from 0 to 20" in found[0]["why"]
