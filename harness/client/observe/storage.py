"""A tiered partition's storage as each replica and the remote tier hold it: every replica's
log start, local log start and log end (ListOffsets, API key 2, with the earliest, the
earliest-local and the latest timestamps), and the segments the remote tier holds (Kafka's
LocalTieredStorage's directory, read as files: harness/cluster/tiered.py).

A replica is asked as a debugging client (replica id -2, ListOffsetsRequest.DEBUGGING_REPLICA_ID):
a follower then answers from its own log (ReplicaManager.fetchOffset: ``fetchOnlyFromLeader =
replicaId != DEBUGGING_REPLICA_ID``), and without an isolation level the latest offset is its
log end, not the HWM (Partition.fetchOffsetForTimestamp). EARLIEST_LOCAL_TIMESTAMP (-4,
KIP-405) needs ListOffsets v8: the local log start (UnifiedLog.localLogStartOffset). The
timestamps are kafka-python's OffsetSpec (EARLIEST -2, EARLIEST_LOCAL -4, LATEST -1);
confluent-kafka's OffsetSpec has no earliest-local (2.16: earliest, latest, max_timestamp).
"""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

from kafka.protocol.consumer.offsets import ListOffsetsRequest, OffsetSpec

from harness.client.observe.connection import Connection

DEBUGGING_REPLICA_ID = -2
#: Field name -> the ListOffsets timestamp that asks for it.
SPECS = (("log_start", int(OffsetSpec.EARLIEST)),
         ("local_log_start", int(OffsetSpec.EARLIEST_LOCAL)),
         ("log_end", int(OffsetSpec.LATEST)))
_BATCH_HEADER = 27


class ReplicaLogs(Connection):
    """Per-replica offsets of a partition (mixed into the Observer)."""

    def replica_offsets(self, topic: str, partition: int, replicas: list[int]
                        ) -> dict[int, dict[str, int | None]]:
        """Replica -> {log_start, local_log_start, log_end}, for each running replica that
        answers; a field it refuses (an error code) is None."""
        out: dict[int, dict[str, int | None]] = {}
        for replica in replicas:
            if not self.cluster.is_running(replica):
                continue
            got: dict[str, int | None] = {}
            for name, ts in SPECS:
                try:
                    got[name] = self._offset(replica, topic, partition, ts)
                except Exception:  # noqa: BLE001 - one answer missing is a None, not a fault
                    got[name] = None
            if any(v is not None for v in got.values()):
                out[replica] = got
        return out

    def _offset(self, replica: int, topic: str, partition: int, ts: int) -> int | None:
        _Topic = ListOffsetsRequest.ListOffsetsTopic
        req = ListOffsetsRequest(
            replica_id=DEBUGGING_REPLICA_ID, isolation_level=0,
            topics=[_Topic(name=topic, partitions=[
                _Topic.ListOffsetsPartition(partition_index=partition, timestamp=ts)])],
            min_version=ListOffsetsRequest.min_version_for_timestamp(ts))
        resp = self._send(replica, req)
        part = resp.topics[0].partitions[0]
        if part.error_code != 0:
            return None
        offset = int(part.offset)
        return offset if offset >= 0 else None


def remote_segments(root: Path, topic: str, partition: int) -> list[dict[str, int]]:
    """The segments LocalTieredStorage holds for the partition (any topic id), in offset
    order: {base, end (last offset), bytes}. Its layout (LocalTieredStorage's class comment,
    RemoteTopicPartitionDirectory, RemoteLogSegmentFileset): ``<root>/<topic>-<partition>-
    <topic id>/<base offset, 20 digits>-<segment id>.log`` beside its indexes."""
    out: list[dict[str, int]] = []
    prefix = f"{topic}-{partition}-"
    if not root.is_dir():
        return out
    for pdir in root.iterdir():
        # The topic id is a 22-character URL-safe base64 Uuid: the rest of the name.
        if not (pdir.name.startswith(prefix) and len(pdir.name) == len(prefix) + 22):
            continue
        for seg in pdir.glob("*.log"):
            try:
                base = int(seg.name.split("-", 1)[0])
                data = seg.read_bytes()
            except (ValueError, OSError):
                continue  # being written or deleted right now
            out.append({"base": base, "end": _last_offset(data, base), "bytes": len(data)})
    return sorted(out, key=lambda s: (s["base"], s["end"]))


def _last_offset(data: bytes, base: int) -> int:
    """The last offset of a segment's complete batches (base offset + lastOffsetDelta of
    its last batch; the v2 batch header as harness/nemesis/logfiles.py reads it)."""
    pos, last = 0, base - 1
    while pos + _BATCH_HEADER <= len(data):
        first, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        if length <= 0 or pos + 12 + length > len(data):
            break
        last = first + delta
        pos += 12 + length
    return last


def local_bytes_after(data_dir: Path, topic: str, partition: int, offset: int) -> int:
    """Bytes of a replica's local log that hold records above ``offset`` (the remote tier's
    end: what is not in the remote tier yet): every local segment whose base offset is above
    it, and, of the segment that straddles it (the last one whose base offset is at or below
    it), the bytes from its first batch whose base offset is above it to its end.

    The leader that uploaded the remote tier rolls a segment right after the remote end, so
    whole segments are exact for it (UnifiedLog.onlyLocalLogSegmentsSize: segments with
    baseOffset >= highestOffsetInRemoteStorage). A replica that was a follower rolled its own
    segments (LogSegment boundaries are per replica; only batches are copied verbatim,
    ReplicaFetcherThread appends the leader's batches as they are), so once it leads, its
    active segment may hold records on both sides of the remote end: counting whole
    segments then misses them (the 3.7.2 false positive of bench/RESULTS-storage.md) and
    counting the straddling segment whole would count records the remote tier holds too.
    The remote tier's segments end on batch boundaries, and batches are the same on every
    replica, so the batches above the remote end are exactly its records above it."""
    pdir = data_dir / f"{topic}-{partition}"
    segs: list[tuple[int, Path]] = []
    for seg in pdir.glob("*.log"):
        try:
            segs.append((int(seg.stem), seg))
        except ValueError:
            continue
    segs.sort()
    total = 0
    straddling: tuple[int, Path] | None = None
    for base, seg in segs:
        if base > offset:
            try:
                total += seg.stat().st_size
            except OSError:
                continue  # deleted right now
        else:
            straddling = (base, seg)
    if straddling is not None:
        total += _bytes_above(straddling[1], straddling[0], offset)
    return total


def _bytes_above(seg: Path, base: int, offset: int) -> int:
    """Bytes of a segment from its first batch whose base offset is above ``offset`` to its
    end (0 if none): its batch headers read from a position its offset index gives."""
    try:
        size = seg.stat().st_size
        with seg.open("rb") as f:
            pos = _index_position(seg.with_suffix(".index"), base, offset, f, size)
            while pos + 12 <= size:
                f.seek(pos)
                head = f.read(12)
                if len(head) < 12:
                    return 0
                first, length = struct.unpack(">qi", head)
                if first > offset:
                    return size - pos
                if length <= 0:
                    return 0
                pos += 12 + length
    except OSError:
        return 0
    return 0


def _index_position(index: Path, base: int, offset: int, log: Any, size: int) -> int:
    """The position of the segment's last offset-index entry whose offset is at or below
    ``offset``, a safe start for the scan (0 without one). Kafka's OffsetIndex: 8-byte
    entries (offset - baseOffset int32, position int32); LogSegment.append adds one, after
    index.interval.bytes of appends, as (largest offset appended, position where that
    append starts), so every batch before an entry's position holds offsets below the ones
    at it. The active segment's index is preallocated with zeros: an entry at position 0
    (never a real one: the first is written only after index.interval.bytes) ends it. An
    entry that does not land on a v2 batch header (magic 2) whose base offset is from the
    segment's base to ``offset`` is not used: the scan then starts at 0."""
    try:
        data = index.read_bytes()
    except OSError:
        return 0
    best, last = 0, 0
    for rel, pos in struct.iter_unpack(">ii", data[:len(data) - len(data) % 8]):
        if pos <= last or pos >= size:
            break
        if base + rel > offset:
            break
        best, last = pos, pos
    if best:
        log.seek(best)
        head = log.read(17)  # baseOffset, batchLength, partitionLeaderEpoch, magic
        if len(head) < 17:
            return 0
        first, length = struct.unpack_from(">qi", head)
        if not (base <= first <= offset and 0 < length <= size - best - 12 and head[16] == 2):
            return 0
    return best


def local_log_facts(data_dir: Path, topic: str, partition: int
                    ) -> tuple[int | None, int]:
    """(localLogStartTimestamp, localLogSizeBytes) of a replica's local log as KIP-1303
    defines them (seeds/001 "Tracking Local Log State": the timestamp of the earliest
    record in the replica's local storage, the sum of its local segments' sizes), read from
    its data dir: the first batch's baseTimestamp (v2 header, int64 @27) of its lowest
    segment that holds one. Files being deleted (``.deleted``) are not the log."""
    segs = []
    for seg in (data_dir / f"{topic}-{partition}").glob("*.log"):
        try:
            segs.append((int(seg.stem), seg, seg.stat().st_size))
        except (ValueError, OSError):
            continue
    start: int | None = None
    for _, seg, size in sorted(segs):
        if size < _BATCH_HEADER + 8:
            continue
        try:
            with seg.open("rb") as f:
                head = f.read(_BATCH_HEADER + 8)
        except OSError:
            continue
        if len(head) == _BATCH_HEADER + 8:
            (start,) = struct.unpack_from(">q", head, _BATCH_HEADER)
            break
    return start, sum(size for _, _, size in segs)


def retained_bytes(segments: list[dict[str, int]], log_start: int | None,
                   leader_dir: Path | None, topic: str, partition: int) -> int:
    """The bytes from the log start to the log end as remote retention counts them: the
    remote segments not wholly below the log start, plus the leader's local bytes holding
    records beyond the remote tier's end (``local_bytes_after``; none without a leader)."""
    kept = [s for s in segments if log_start is None or s["end"] >= log_start]
    remote_end = max((s["end"] for s in segments), default=-1)
    retained = sum(s["bytes"] for s in kept)
    if leader_dir is not None:
        retained += local_bytes_after(leader_dir, topic, partition, remote_end)
    return retained


def storage_state(observer: Any, root: Path, topic: str, partition: int,
                  leader: int | None, replicas: list[int]) -> dict[str, Any]:
    """One storage observation of a partition (the ``storage`` event, SCHEMA.md 1.8):
    every replica's offsets, the partition's log start as its leader reports it, the remote
    tier's segments, and ``retained_bytes``: the bytes from the log start to the log end as
    remote retention counts them (remote segments at or above the log start, plus the
    leader's local segments beyond the remote tier's end)."""
    offsets = observer.replica_offsets(topic, partition, replicas)
    now_ms = int(time.time() * 1000)
    local_logs: dict[str, dict[str, int | None]] = {}
    for r in replicas:
        start, size = local_log_facts(observer.cluster.data_dir(r), topic, partition)
        local_logs[str(r)] = {"start_ms": start, "bytes": size,
                              "age_ms": None if start is None else max(now_ms - start, 0)}
    segments = remote_segments(root, topic, partition)
    lead = offsets.get(leader) if leader is not None else None
    log_start = None if lead is None else lead.get("log_start")
    remote_end = max((s["end"] for s in segments), default=-1)
    retained = retained_bytes(
        segments, log_start,
        observer.cluster.data_dir(leader) if leader is not None and leader > 0 else None,
        topic, partition)
    return {
        "topic": topic, "partition": partition, "leader": leader,
        "log_start": log_start,
        "local_log_start": None if lead is None else lead.get("local_log_start"),
        "log_end": None if lead is None else lead.get("log_end"),
        "replicas": {str(r): v for r, v in sorted(offsets.items())},
        "remote": {"segments": len(segments),
                   "start": min((s["base"] for s in segments), default=None),
                   "end": remote_end if segments else None,
                   "bytes": sum(s["bytes"] for s in segments),
                   "list": [[s["base"], s["end"], s["bytes"]] for s in segments]},
        "retained_bytes": retained,
        # KIP-1303's facts of each replica's local log, read from its data dir at now_ms
        "local_logs": local_logs, "now_ms": now_ms,
    }
