"""The controller's own view, read from its metadata log on disk.

When no broker has a current view (all down, or all cut from the controller), the only
up-to-date copy of the partition state is the controller's metadata log. We decode it in
Python (`harness.client.metadata_records`: milliseconds, no JVM) and replay the partition and
broker-registration records. Leader epoch and HWM are not derived here (None).

Kafka's own DumpLogSegments (--cluster-metadata-decoder) stays as the oracle the Python
decoder is checked against: `python -m harness.client.metadata_log --kafka-version V DIR...`
compares the two on real logs (and `--dump` prints Kafka's records), which is how the
fixtures under fixtures/metadata/ were made and how a new Kafka release is vetted.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.client import metadata_records
from harness.cluster.builds import Build
from harness.infra import tools

_TOOL_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
_BATCH = re.compile(r"^baseOffset: .* partitionLeaderEpoch: (-?\d+) .* "
                    r"(?:CreateTime|LogAppendTime|NoTimestampType): (-?\d+) size:")
_RECORD = re.compile(r"^\| offset: (\d+) .* payload: (\{.*)$")
# Api keys of the records `replay` reads: brokers (register, unregister, fence, unfence,
# registration change), topics and partitions (topic, partition, change, remove topic,
# clear ELR).
_REPLAYED_KEYS = frozenset({0, 1, 7, 8, 17, 2, 3, 5, 9, 28})


def decode(build: Build | None, log_dir: Path) -> list[dict[str, Any]]:
    """The metadata records that make up the controller's current state (its newest
    snapshot, then the log after it), in offset order, as payload dicts. `build` is
    unused: the Python decoder needs no jars.

    Raises ValueError when a record `replay` depends on could not be decoded (a newer
    Kafka's record version): replaying around it would report a stale state as current."""
    records = metadata_records.read_log_dir(log_dir, latest_snapshot=True)
    for rec in records:
        if rec["type"] == "UNKNOWN" and rec.get("api_key") in _REPLAYED_KEYS | {None}:
            raise ValueError(f"{log_dir}: offset {rec['offset']}: cannot decode record "
                             f"(api key {rec['api_key']}, version {rec['version']}) "
                             f"{rec.get('error', 'newer than this decoder')}")
    return records


def dump_log_segments(build: Build, log_dir: Path,
                      latest_snapshot: bool = False) -> list[dict[str, Any]]:
    """What `metadata_records.read_log_dir` returns, read by Kafka's DumpLogSegments
    (the oracle) from the same files."""
    plan = metadata_records.plan(log_dir, latest_snapshot)
    files = ([plan.snapshot] if plan.snapshot else []) + plan.segments
    if not files:
        return []
    return select(parse_dump(run_dump_log_segments(build, files)), plan)


def run_dump_log_segments(build: Build, files: list[Path]) -> str:
    """DumpLogSegments' --cluster-metadata-decoder output for the files, as printed."""
    java = str(tools.require_java(build.java_major))
    for cls in _TOOL_CLASSES:
        out = subprocess.run([java, "-cp", build.classpath(), cls, "--cluster-metadata-decoder",
                              "--files", ",".join(str(f) for f in files)],
                             capture_output=True, text=True, timeout=60)
        if "Could not find or load main class" not in out.stderr:
            return out.stdout
    raise FileNotFoundError(f"no DumpLogSegments class in {build.libs}")


def parse_dump(stdout: str) -> list[dict[str, Any]]:
    """Payload lines, with the offset, batch max timestamp and leader epoch around them
    (control records print no payload; a record Kafka fails to decode prints an error
    instead of a payload and is missing here)."""
    out: list[dict[str, Any]] = []
    batch: dict[str, Any] = {}
    source = "log"
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            source = "snapshot" if line.endswith(".checkpoint") else "log"
        elif m := _BATCH.match(line):
            batch = {"append_time_ms": int(m[2]), "leader_epoch": int(m[1]), "source": source}
        elif m := _RECORD.match(line):
            out.append({**json.loads(m[2]), "offset": int(m[1]), **batch})
    return out


def select(records: list[dict[str, Any]], plan: metadata_records.Plan) -> list[dict[str, Any]]:
    """The dumped records `plan` reads: its snapshot's, then the log's from its start."""
    return [r for r in records if (r["source"] == "snapshot" and plan.snapshot is not None)
            or (r["source"] == "log" and r["offset"] >= plan.start)]


def replay(records: list[dict[str, Any]], topic: str, partition: int,
           brokers: tuple[int, ...]) -> dict[str, Any] | None:
    """Partition state (SCHEMA.md shape) after replaying the controller's records. A topic
    deleted and not created again is a partition with no replicas and no leader, as the
    brokers show it (harness/client/observe/partitions.py ``absent_view``)."""
    topic_id = None
    state: dict[str, Any] | None = None
    removed = False
    fenced = {b: True for b in brokers}
    for rec in records:
        kind, data = rec.get("type"), rec.get("data", {})
        if kind == "TOPIC_RECORD" and data.get("name") == topic:
            topic_id, removed = data["topicId"], False
        elif kind == "REMOVE_TOPIC_RECORD" and topic_id and data.get("topicId") == topic_id:
            topic_id, state, removed = None, None, True  # re-created later: starts afresh
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            if data.get("topicId") == topic_id and data.get("partitionId") == partition:
                # A PartitionRecord is the whole partition; a change only what it names.
                state = _apply_partition(state if kind != "PARTITION_RECORD" else None, data)
        elif kind == "CLEAR_ELR_RECORD" and state is not None:
            if data.get("topicName") in (None, "", topic):
                state.update(elr=[], last_known_elr=[])
        else:
            _apply_broker(fenced, kind, data)
    # A partition of a topic the log holds without it (add_partitions has not added it)
    # is absent, as brokers show it. A topic the log does not hold says nothing (None): the
    # log read may not reach its creation.
    if state is None and (removed or topic_id is not None):
        state = {"leader": -1, "leader_epoch": None, "replicas": [], "isr": [], "elr": [],
                 "last_known_elr": []}
    if state is None:
        return None
    state["fenced"] = sorted(b for b, f in fenced.items() if f)
    return state


def _apply_partition(state: dict[str, Any] | None, data: dict[str, Any]) -> dict[str, Any]:
    out = dict(state or {"leader": -1, "leader_epoch": None, "replicas": [], "isr": [],
                         "elr": [], "last_known_elr": [], "hwm": None})
    for field, key in (("replicas", "replicas"), ("isr", "isr"),
                       ("eligibleLeaderReplicas", "elr"), ("lastKnownElr", "last_known_elr")):
        if field in data:
            out[key] = sorted(data[field]) if key != "replicas" else list(data[field])
    leader = data.get("leader", -2)  # -2: unchanged (the record's default)
    if leader != -2:
        out["leader"] = leader
    return out


def _apply_broker(fenced: dict[int, bool], kind: str | None, data: dict[str, Any]) -> None:
    broker = data.get("brokerId", data.get("id"))
    if broker not in fenced:
        return
    if kind == "REGISTER_BROKER_RECORD":
        fenced[broker] = bool(data.get("fenced", True))
    elif kind == "FENCE_BROKER_RECORD" or kind == "UNREGISTER_BROKER_RECORD":
        fenced[broker] = True
    elif kind == "UNFENCE_BROKER_RECORD":
        fenced[broker] = False
    elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
        change = data.get("fenced", 0)
        if change:
            fenced[broker] = change == 1


def compare(build: Build, log_dir: Path, latest_snapshot: bool = False) -> list[str]:
    """Where the Python decoder and DumpLogSegments disagree on a log dir (empty: equal)."""
    ours = metadata_records.read_log_dir(log_dir, latest_snapshot)
    kafkas = dump_log_segments(build, log_dir, latest_snapshot)
    diffs = [f"{log_dir}: {len(ours)} records decoded, DumpLogSegments printed {len(kafkas)}"
             ] if len(ours) != len(kafkas) else []
    diffs += [f"{log_dir} offset {k.get('offset')}:\n  ours  {o}\n  kafka {k}"
              for o, k in zip(ours, kafkas, strict=False) if o != k]
    return diffs


def main(argv: list[str] | None = None) -> int:
    from harness.cluster import builds
    ap = argparse.ArgumentParser(prog="python -m harness.client.metadata_log",
                                 description="Check the Python metadata-log decoder against "
                                             "Kafka's DumpLogSegments on __cluster_metadata-0 dirs")
    ap.add_argument("log_dirs", nargs="+", type=Path)
    ap.add_argument("--kafka-version")
    ap.add_argument("--kafka-dist")
    ap.add_argument("--dump", action="store_true", help="print DumpLogSegments' records as JSON")
    ap.add_argument("--latest-snapshot", action="store_true",
                    help="with --dump: start from the newest snapshot")
    args = ap.parse_args(argv)
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    if args.dump:
        for log_dir in args.log_dirs:
            json.dump(dump_log_segments(build, log_dir, args.latest_snapshot), sys.stdout,
                      indent=1)
            print()
        return 0
    diffs = [d for log_dir in args.log_dirs for latest in (False, True)
             for d in compare(build, log_dir, latest)]
    print("\n".join(diffs) or f"equal on {len(args.log_dirs)} log dir(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
