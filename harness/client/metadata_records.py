"""Pure-Python decoder for a KRaft `__cluster_metadata-0` directory, and its archiving.

The controllers' metadata log is the exact sequence of committed cluster states, so the
trace validator and `kafka-chaos audit` replay it. Launching Kafka's DumpLogSegments costs
2-3 s and the build's jars; this reads the same files in milliseconds, offline.

Output per record: the dict DumpLogSegments `--cluster-metadata-decoder` prints as payload,
`{"type": "PARTITION_CHANGE_RECORD", "version": 2, "data": {...}}` (camelCase field names,
tagged fields only when they differ from their default, as Kafka's JSON converters do), plus
`offset`, `append_time_ms` (the batch's max timestamp), `leader_epoch` (the batch's partition
leader epoch) and `source` ("snapshot" or "log"). Records of snapshots keep the offsets the
snapshot file gives them (0-based within the snapshot), as DumpLogSegments shows them.

Batch framing (v2 record batches, CRC) is kafka-python's; the payloads are read here from
our own field tables, written from the schemas in Kafka's
metadata/src/main/resources/common/metadata/*.json (Kafka 4.3.1, a superset of 3.9's).
"""

from __future__ import annotations

import base64
import re
import shutil
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

METADATA_DIR = "__cluster_metadata-0"
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_NO_DEFAULT = object()


# -- schema tables -------------------------------------------------------------------------

@dataclass(frozen=True)
class Field:
    """One field of a metadata record. Every metadata record is flexible from version 0
    and, in every field we know, taggedVersions and nullableVersions equal the field's
    versions, so `since` alone says from which version the field exists, is tagged
    (`tag` set) and may be null (`nullable`)."""

    name: str
    kind: str | tuple[Field, ...]  # a scalar/array type name, or the fields of []struct
    since: int = 0
    tag: int | None = None
    nullable: bool = False
    default: Any = _NO_DEFAULT


@dataclass(frozen=True)
class Schema:
    name: str  # the Java message name; its SNAKE_CASE is DumpLogSegments' "type"
    max_version: int
    fields: tuple[Field, ...]

    @property
    def type_name(self) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).upper()


def _f(name: str, kind: str | tuple[Field, ...], **kw: Any) -> Field:
    return Field(name, kind, **kw)


def _tagged_array(name: str, kind: str, since: int, tag: int) -> Field:
    """Tagged arrays whose default is null: null means "no change" in change records."""
    return Field(name, kind, since=since, tag=tag, nullable=True, default=None)


_ENDPOINT = (_f("name", "string"), _f("host", "string"), _f("port", "uint16"),
             _f("securityProtocol", "int16"))
_FEATURE = (_f("name", "string"), _f("minSupportedVersion", "int16"),
            _f("maxSupportedVersion", "int16"))
_BROKER_EPOCH = (_f("brokerId", "int32"), _f("brokerEpoch", "int64"))
_ID_EPOCH = (_f("id", "int32"), _f("epoch", "int64"))

SCHEMAS: dict[int, Schema] = {
    0: Schema("RegisterBrokerRecord", 4, (
        _f("brokerId", "int32"), _f("isMigratingZkBroker", "bool", since=2),
        _f("incarnationId", "uuid"), _f("brokerEpoch", "int64"), _f("endPoints", _ENDPOINT),
        _f("features", _FEATURE), _f("rack", "string", nullable=True), _f("fenced", "bool"),
        _f("inControlledShutdown", "bool", since=1),
        _f("logDirs", "[]uuid", since=3, tag=0),
        _tagged_array("cordonedLogDirs", "[]uuid", since=4, tag=1))),
    1: Schema("UnregisterBrokerRecord", 0, _BROKER_EPOCH),
    2: Schema("TopicRecord", 0, (_f("name", "string"), _f("topicId", "uuid"))),
    3: Schema("PartitionRecord", 2, (
        _f("partitionId", "int32"), _f("topicId", "uuid"), _f("replicas", "[]int32"),
        _f("isr", "[]int32"), _f("removingReplicas", "[]int32"),
        _f("addingReplicas", "[]int32"), _f("leader", "int32"),
        _f("leaderRecoveryState", "int8", tag=0, default=0), _f("leaderEpoch", "int32"),
        _f("partitionEpoch", "int32"), _f("directories", "[]uuid", since=1),
        _tagged_array("eligibleLeaderReplicas", "[]int32", since=2, tag=1),
        _tagged_array("lastKnownElr", "[]int32", since=2, tag=2))),
    4: Schema("ConfigRecord", 0, (
        _f("resourceType", "int8"), _f("resourceName", "string"), _f("name", "string"),
        _f("value", "string", nullable=True))),
    5: Schema("PartitionChangeRecord", 2, (
        _f("partitionId", "int32"), _f("topicId", "uuid"),
        _tagged_array("isr", "[]int32", since=0, tag=0),
        _f("leader", "int32", tag=1, default=-2),  # -2: leader unchanged
        _tagged_array("replicas", "[]int32", since=0, tag=2),
        _tagged_array("removingReplicas", "[]int32", since=0, tag=3),
        _tagged_array("addingReplicas", "[]int32", since=0, tag=4),
        _f("leaderRecoveryState", "int8", tag=5, default=-1),  # -1: unchanged
        _tagged_array("directories", "[]uuid", since=1, tag=8),
        _tagged_array("eligibleLeaderReplicas", "[]int32", since=2, tag=6),
        _tagged_array("lastKnownElr", "[]int32", since=2, tag=7))),
    7: Schema("FenceBrokerRecord", 0, _ID_EPOCH),
    8: Schema("UnfenceBrokerRecord", 0, _ID_EPOCH),
    9: Schema("RemoveTopicRecord", 0, (_f("topicId", "uuid"),)),
    10: Schema("DelegationTokenRecord", 0, (
        _f("owner", "string"), _f("requester", "string"), _f("renewers", "[]string"),
        _f("issueTimestamp", "int64"), _f("maxTimestamp", "int64"),
        _f("expirationTimestamp", "int64"), _f("tokenId", "string"))),
    11: Schema("UserScramCredentialRecord", 0, (
        _f("name", "string"), _f("mechanism", "int8"), _f("salt", "bytes"),
        _f("storedKey", "bytes"), _f("serverKey", "bytes"), _f("iterations", "int32"))),
    12: Schema("FeatureLevelRecord", 0, (_f("name", "string"), _f("featureLevel", "int16"))),
    14: Schema("ClientQuotaRecord", 0, (
        _f("entity", (_f("entityType", "string"), _f("entityName", "string", nullable=True))),
        _f("key", "string"), _f("value", "float64"), _f("remove", "bool"))),
    15: Schema("ProducerIdsRecord", 0, (*_BROKER_EPOCH, _f("nextProducerId", "int64"))),
    17: Schema("BrokerRegistrationChangeRecord", 3, (
        *_BROKER_EPOCH,
        _f("fenced", "int8", tag=0, default=0),  # -1 unfenced, 0 no change, 1 fenced
        _f("inControlledShutdown", "int8", since=1, tag=1, default=0),
        _f("logDirs", "[]uuid", since=2, tag=2),
        _tagged_array("cordonedLogDirs", "[]uuid", since=3, tag=3))),
    18: Schema("AccessControlEntryRecord", 0, (
        _f("id", "uuid"), _f("resourceType", "int8"), _f("resourceName", "string"),
        _f("patternType", "int8"), _f("principal", "string"), _f("host", "string"),
        _f("operation", "int8"), _f("permissionType", "int8"))),
    19: Schema("RemoveAccessControlEntryRecord", 0, (_f("id", "uuid"),)),
    20: Schema("NoOpRecord", 0, ()),
    21: Schema("ZkMigrationStateRecord", 0, (_f("zkMigrationState", "int8"),)),
    22: Schema("RemoveUserScramCredentialRecord", 0, (
        _f("name", "string"), _f("mechanism", "int8"))),
    23: Schema("BeginTransactionRecord", 0, (
        _f("name", "string", tag=0, nullable=True, default=None),)),
    24: Schema("EndTransactionRecord", 0, ()),
    25: Schema("AbortTransactionRecord", 0, (
        _f("reason", "string", tag=0, nullable=True, default=None),)),
    26: Schema("RemoveDelegationTokenRecord", 0, (_f("tokenId", "string"),)),
    27: Schema("RegisterControllerRecord", 0, (
        _f("controllerId", "int32"), _f("incarnationId", "uuid"),
        _f("zkMigrationReady", "bool"), _f("endPoints", _ENDPOINT),
        _f("features", _FEATURE))),
    28: Schema("ClearElrRecord", 0, (_f("topicName", "string"),)),
}

# What an absent tagged field is, by type, when the schema names no default.
_TYPE_DEFAULTS: dict[str, Any] = {"bool": False, "string": "", "uuid": "A" * 22,
                                  "bytes": "", "float64": 0.0}


def _default(field: Field) -> Any:
    if field.default is not _NO_DEFAULT:
        return field.default
    if not isinstance(field.kind, str) or field.kind.startswith("[]"):
        return []
    return _TYPE_DEFAULTS.get(field.kind, 0)


# -- wire readers --------------------------------------------------------------------------

class MalformedRecord(ValueError):
    """A record body that does not match its schema (or runs past its end)."""


class _Reader:
    """Kafka's flexible-version message encoding over one record value."""

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None):
        self.buf, self.pos = buf, pos
        self.end = len(buf) if end is None else end

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise MalformedRecord(f"needs {n} bytes at {self.pos}, has {self.end - self.pos}")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise MalformedRecord("unsigned varint longer than 5 bytes")

    def fixed(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def length(self) -> int:
        """A compact length: N+1 on the wire, 0 for null (returned as -1)."""
        return self.uvarint() - 1


def _read_string(r: _Reader) -> str | None:
    n = r.length()
    return None if n < 0 else r.take(n).decode("utf-8")


def _read_bytes(r: _Reader) -> str | None:
    # Jackson writes binary nodes as standard base64 with padding.
    n = r.length()
    return None if n < 0 else base64.b64encode(r.take(n)).decode("ascii")


def _read_uuid(r: _Reader) -> str:
    # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding.
    return base64.urlsafe_b64encode(r.take(16)).decode("ascii").rstrip("=")


_SCALARS: dict[str, Callable[[_Reader], Any]] = {
    "int8": lambda r: r.fixed(">b"), "int16": lambda r: r.fixed(">h"),
    "int32": lambda r: r.fixed(">i"), "int64": lambda r: r.fixed(">q"),
    "uint16": lambda r: r.fixed(">H"), "float64": lambda r: r.fixed(">d"),
    "bool": lambda r: r.take(1)[0] != 0, "uuid": _read_uuid,
    "string": _read_string, "bytes": _read_bytes,
}


def _read_value(r: _Reader, kind: str | tuple[Field, ...], version: int) -> Any:
    if isinstance(kind, tuple):
        return _read_array(r, lambda: _read_struct(r, kind, version))
    if kind.startswith("[]"):
        element = _SCALARS[kind[2:]]
        return _read_array(r, lambda: element(r))
    return _SCALARS[kind](r)


def _read_array(r: _Reader, element: Callable[[], Any]) -> list[Any] | None:
    n = r.length()
    if n > r.end - r.pos:  # every element takes at least one byte: a corrupt length
        raise MalformedRecord(f"array of {n} elements in {r.end - r.pos} bytes")
    return None if n < 0 else [element() for _ in range(n)]


def _read_struct(r: _Reader, fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """Fields in schema order, as Kafka's JSON converters write them: a field the version
    lacks is left out, a tagged field only when it differs from its default."""
    present = [f for f in fields if version >= f.since]
    values = {f.name: _read_value(r, f.kind, version) for f in present if f.tag is None}
    by_tag = {f.tag: f for f in present if f.tag is not None}
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        field = by_tag.get(tag)
        if field is None:  # a tag this version does not know: Kafka keeps it unprinted
            r.take(size)
            continue
        sub = _Reader(r.buf, r.pos, r.pos + size)
        r.take(size)
        value = _read_value(sub, field.kind, version)
        if value != _default(field):
            values[field.name] = value
    return {f.name: values[f.name] for f in present if f.name in values}


def decode_payload(value: bytes) -> dict[str, Any]:
    """One ApiMessageAndVersion record value: frame version (1), api key and version as
    unsigned varints, then the message. An unknown key or version comes back as UNKNOWN
    (the value is length-prefixed in its record, so nothing else is lost); so does a body
    that does not parse, with the reason under "error"."""
    r = _Reader(value)
    try:
        frame, api_key, version = r.uvarint(), r.uvarint(), r.uvarint()
    except MalformedRecord as exc:
        return _unknown(None, None, str(exc))
    schema = SCHEMAS.get(api_key)
    if frame != 1 or schema is None or version > schema.max_version:
        return _unknown(api_key, version, None if frame == 1 else f"frame version {frame}")
    try:
        data = _read_struct(r, schema.fields, version)
        if r.pos != r.end:
            raise MalformedRecord(f"{r.end - r.pos} bytes left after the message")
    except (MalformedRecord, UnicodeDecodeError) as exc:
        # The batch's CRC held, so the bytes are what Kafka wrote: keep the other records.
        return _unknown(api_key, version, f"{schema.name} v{version}: {exc}")
    return {"type": schema.type_name, "version": version, "data": data}


def _unknown(api_key: int | None, version: int | None, error: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "UNKNOWN", "api_key": api_key, "version": version,
                           "data": {}}
    if error is not None:
        out["error"] = error
    return out


# -- files -------------------------------------------------------------------------------

def read_file(path: Path, source: str) -> tuple[list[dict[str, Any]], bool]:
    """Every metadata record of one segment or snapshot file, in file order, and whether
    the file ended cleanly.

    Stops at the first incomplete or corrupt batch (a torn write at the tail): Kafka's log
    recovery truncates there too. Control batches (LeaderChange, SnapshotHeader and
    Footer, KRaftVersion, Voters) carry no metadata record and are skipped."""
    buf = path.read_bytes()
    batches = MemoryRecords(buf)
    out: list[dict[str, Any]] = []
    while batches.has_next():
        try:
            batch = batches.next_batch()
        except CorruptRecordError:
            return out, False
        if not isinstance(batch, DefaultRecordBatch) or not batch.validate_crc():
            return out, False
        if not batch.is_control_batch:
            meta = {"append_time_ms": batch.max_timestamp, "leader_epoch": batch.leader_epoch,
                    "source": source}
            out.extend({**decode_payload(record.value or b""), "offset": record.offset, **meta}
                       for record in batch)
    return out, batches.valid_bytes() == len(buf)


#: ControlRecordType LEADER_CHANGE (apache/kafka clients ControlRecordType): the record a
#: KRaft leader writes first in its epoch.
_LEADER_CHANGE = 2


def leader_changes(path: str | Path) -> dict[int, tuple[int, int]]:
    """KRaft epoch -> (leader id, append time ms) from the LeaderChange control records of a
    `__cluster_metadata-0` directory's segments: who wrote each epoch's batches. The value
    is a LeaderChangeMessage (raft/src/main/resources/common/message/
    LeaderChangeMessage.json: int16 Version, int32 LeaderId, ...), written without a
    version prefix (MemoryRecordsBuilder.appendLeaderChangeMessage)."""
    out: dict[int, tuple[int, int]] = {}
    for seg in segments(Path(path)):
        batches = MemoryRecords(seg.read_bytes())
        while batches.has_next():
            try:
                batch = batches.next_batch()
            except CorruptRecordError:
                break
            if not isinstance(batch, DefaultRecordBatch) or not batch.is_control_batch:
                continue
            for record in batch:
                key, value = record.key or b"", record.value or b""
                if len(key) >= 4 and struct.unpack(">hh", key[:4])[1] == _LEADER_CHANGE \
                        and len(value) >= 6:
                    leader = struct.unpack(">i", value[2:6])[0]
                    out.setdefault(batch.leader_epoch, (leader, batch.max_timestamp))
    return out


def snapshots(log_dir: Path) -> list[Path]:
    """The snapshots `<end offset>-<epoch>.checkpoint`, oldest first (not `.part` files,
    which are snapshots still being written, nor `leader-epoch-checkpoint`)."""
    return sorted(p for p in log_dir.glob("*.checkpoint") if _SNAPSHOT_NAME.match(p.name))


def _end_offset(snapshot: Path) -> int:
    """A snapshot's end offset (exclusive: it holds the state of the records before it)."""
    return int(snapshot.name.split("-", 1)[0])


def newest_snapshot(log_dir: Path) -> tuple[Path, int] | None:
    """The newest snapshot and its end offset."""
    found = snapshots(log_dir)
    return (found[-1], _end_offset(found[-1])) if found else None


def segments(log_dir: Path) -> list[Path]:
    """The log segments in offset order (the name is the segment's base offset)."""
    return sorted((p for p in log_dir.glob("*.log") if p.stem.isdigit()),
                  key=lambda p: int(p.stem))


@dataclass(frozen=True)
class Plan:
    """What to read: a snapshot (or none), then the log's records from `start` on."""

    snapshot: Path | None
    start: int
    segments: list[Path]


def plan(log_dir: Path, latest_snapshot: bool = False) -> Plan:
    """Which files make up the record sequence.

    By default, as much history as the directory holds: the log from its first offset,
    and a snapshot only when the log no longer starts at 0 (Kafka deleted a prefix after
    snapshotting), namely the oldest snapshot reaching the log's start. Kafka snapshots
    without deleting segments until retention says so, so the newest snapshot would hide
    committed transitions the log still has. `latest_snapshot=True` starts from the newest
    snapshot instead, as Kafka loads its own state: fewer records, the same final state."""
    segs = segments(log_dir)
    snaps = snapshots(log_dir)
    log_start = int(segs[0].stem) if segs else None
    if latest_snapshot or log_start is None:
        snap = snaps[-1] if snaps else None
    elif log_start == 0:
        snap = None
    else:
        reaching = [s for s in snaps if _end_offset(s) >= log_start]
        snap = reaching[0] if reaching else (snaps[-1] if snaps else None)
    return Plan(snap, _end_offset(snap) if snap else 0, segs)


def read_log_dir(path: str | Path, latest_snapshot: bool = False) -> list[dict[str, Any]]:
    """Every metadata record of a `__cluster_metadata-0` directory (or an archived copy),
    in order: a snapshot's records if one is needed (see `plan`), then the log's."""
    p = plan(Path(path), latest_snapshot)
    out = read_file(p.snapshot, "snapshot")[0] if p.snapshot else []
    for seg in p.segments:
        records, complete = read_file(seg, "log")
        out.extend(rec for rec in records if rec["offset"] >= p.start)
        if not complete:  # Kafka's recovery drops every segment after a corrupt one
            break
    return out


# -- archiving -------------------------------------------------------------------------

def archive(run_dir: str | Path, data_dirs: Mapping[int, str | Path]) -> dict[int, Path]:
    """Copy each node's metadata log into `run_dir/metadata/<node id>/`.

    `data_dirs` maps node id to the node's log dir (`Cluster.data_dir(node)`), e.g. every
    controller. Copied: segments, snapshots and quorum-state; not the offset/time indexes,
    which Kafka preallocates as 10 MB sparse files and rebuilds anyway. Copying a live log
    is safe to read back: a batch torn by the copy is dropped by `read_log_dir`. Returns
    node id -> archive directory for the nodes that had a metadata log."""
    written: dict[int, Path] = {}
    for node, data_dir in sorted(data_dirs.items()):
        src = Path(data_dir) / METADATA_DIR
        if not src.is_dir():
            continue
        dst = Path(run_dir) / "metadata" / str(node)
        dst.mkdir(parents=True, exist_ok=True)
        files = [*segments(src), *snapshots(src), src / "quorum-state"]
        for f in files:
            if f.is_file():
                shutil.copyfile(f, dst / f.name)
        written[node] = dst
    return written
