"""Kafka log segments on disk: read batch boundaries, and cut a log back as a power loss would.

Record batch v2 header: baseOffset int64 @0, batchLength int32 @8, partitionLeaderEpoch
int32 @12, magic int8 @16, crc @17, attributes @21, lastOffsetDelta int32 @23.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from harness.infra.errors import UsageError

_HEADER = 27


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int
    position: int  # byte position in its segment file
    segment: Path


def segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"), key=lambda p: int(p.stem))


def batches(partition_dir: Path) -> list[Batch]:
    """Complete batches of every segment, in offset order (a torn tail is ignored)."""
    out = []
    for seg in segments(partition_dir):
        data = seg.read_bytes()
        pos = 0
        while pos + _HEADER <= len(data):
            base, length, epoch = struct.unpack_from(">qii", data, pos)
            (delta,) = struct.unpack_from(">i", data, pos + 23)
            if length <= 0 or pos + 12 + length > len(data):
                break
            out.append(Batch(base, base + delta, epoch, pos, seg))
            pos += 12 + length
    return out


def log_end_offset(partition_dir: Path) -> int:
    found = batches(partition_dir)
    if found:
        return found[-1].last_offset + 1
    segs = segments(partition_dir)
    return int(segs[-1].stem) if segs else 0


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    return data_dir / f"{topic}-{partition}"


def truncate(data_dir: Path, topic: str, partition: int, offset: int) -> int:
    """Cut the replica's log back to `offset` (exclusive end), with checkpoints consistent.

    Only for a stopped broker. Returns the number of records removed.
    """
    pdir = partition_dir(data_dir, topic, partition)
    if not pdir.is_dir():
        raise UsageError(f"lose_unflushed: no replica of {topic}-{partition} in {data_dir}")
    all_batches = batches(pdir)
    leo = log_end_offset(pdir)
    boundaries = sorted({b.base_offset for b in all_batches} | {leo})
    if offset not in boundaries:
        raise UsageError(f"lose_unflushed offset {offset} is not a batch boundary of "
                         f"{topic}-{partition} (log end {leo}); choose one of {boundaries[:20]}")
    for batch in all_batches:
        if batch.base_offset == offset:
            _cut_segment_at(batch.segment, batch.position)
            break
    for seg in segments(pdir):
        if int(seg.stem) >= offset and int(seg.stem) > 0:
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                seg.with_suffix(suffix).unlink(missing_ok=True)
    for snap in pdir.glob("*.snapshot"):
        if int(snap.stem) > offset:
            snap.unlink()
    _truncate_epoch_cache(pdir / "leader-epoch-checkpoint", offset)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        _cap_checkpoint(data_dir / name, topic, partition, offset)
    (data_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    return leo - offset


def _cut_segment_at(segment: Path, position: int) -> None:
    with open(segment, "r+b") as fh:
        fh.truncate(position)
    # Indexes may point past the cut; the broker rebuilds them during recovery.
    for suffix in (".index", ".timeindex"):
        segment.with_suffix(suffix).unlink(missing_ok=True)


def _truncate_epoch_cache(path: Path, offset: int) -> None:
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    entries = [ln for ln in lines[2:] if ln.strip() and int(ln.split()[1]) < offset]
    path.write_text("\n".join([lines[0], str(len(entries)), *entries]) + "\n")


def _cap_checkpoint(path: Path, topic: str, partition: int, offset: int) -> None:
    """Lower this partition's entry to `offset`; an empty (torn) file becomes a valid empty one."""
    if not path.exists():
        return
    entries = []
    for ln in path.read_text().splitlines()[2:]:
        parts = ln.split()
        if len(parts) != 3:
            continue
        if parts[0] == topic and int(parts[1]) == partition:
            parts[2] = str(min(int(parts[2]), offset))
        entries.append(" ".join(parts))
    path.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")
