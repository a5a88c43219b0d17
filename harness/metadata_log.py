"""The controller's own view, read from its metadata log on disk.

When no broker has a current view (all down, or all cut from the controller), the only
up-to-date copy of the partition state is the controller's metadata log. We decode it
with Kafka's own DumpLogSegments (--cluster-metadata-decoder) and replay the partition
and broker-registration records. Leader epoch and HWM are not derived here (None).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from harness import tools
from harness.builds import Build

_TOOL_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")


def decode(build: Build, log_dir: Path) -> list[dict[str, Any]]:
    """Every metadata record in the log dir, in offset order (as payload dicts)."""
    files = sorted(log_dir.glob("*.log"))
    if not files:
        return []
    java = str(tools.require_java(build.java_major))
    for cls in _TOOL_CLASSES:
        out = subprocess.run([java, "-cp", build.classpath(), cls, "--cluster-metadata-decoder",
                              "--files", ",".join(str(f) for f in files)],
                             capture_output=True, text=True, timeout=60)
        if "Could not find or load main class" not in out.stderr:
            return [json.loads(line.split("payload: ", 1)[1])
                    for line in out.stdout.splitlines() if "payload: {" in line]
    raise FileNotFoundError(f"no DumpLogSegments class in {build.libs}")


def replay(records: list[dict[str, Any]], topic: str, partition: int,
           brokers: tuple[int, ...]) -> dict[str, Any] | None:
    """Partition state (SCHEMA.md shape) after replaying the controller's records."""
    topic_id = None
    state: dict[str, Any] | None = None
    fenced = {b: True for b in brokers}
    for rec in records:
        kind, data = rec.get("type"), rec.get("data", {})
        if kind == "TOPIC_RECORD" and data.get("name") == topic:
            topic_id = data["topicId"]
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            if data.get("topicId") == topic_id and data.get("partitionId") == partition:
                state = _apply_partition(state, data)
        elif kind == "CLEAR_ELR_RECORD" and state is not None:
            if data.get("topicName") in (None, "", topic):
                state.update(elr=[], last_known_elr=[])
        else:
            _apply_broker(fenced, kind, data)
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
