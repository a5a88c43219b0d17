"""What tiered storage promises, judged on the safety axis from a run's ``storage`` events
(harness/run/runner/storage.py) and its traffic, live by the runner and offline by
``audit`` alike (issue 45 item 2):

- ``tiered-log-start-by-retention``: a partition's log start (its leader's ListOffsets
  EARLIEST) advances only by retention, never by a leader change or a reassignment. An
  advance is explained by ``retention.bytes`` R when what is retained after it is at least
  R: remote retention deletes a segment only while the size left stays >= R
  (RemoteLogManager.RLMExpirationTask, isSegmentBreachByRetentionSize: remainingBreachedSize
  = totalSize - retentionSize, a segment deleted only if remainingBreachedSize -
  segmentSize >= 0), and the size only grows afterwards; it is explained by
  ``retention.ms`` T once the topic has had records for longer than T (a weak bound: a
  segment goes once its newest record is older than T, RemoteLogManager
  isSegmentBreachedByRetentionTime; the records' own times are not compared). With neither
  set (both -1, Kafka's default for bytes), any advance is unexplained.
- ``tiered-acked-within-retention``: no record acknowledged at acks=all at or above the
  final log start is missing from the final read (which reads from the earliest offset,
  through the remote tier). Below the log start, records are deleted by retention, not lost
  (the traffic checks' ``Retained``); whether the log start got there only by retention is
  the check above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.scenario.loader import Scenario

LOG_START_RULE = "tiered-log-start-by-retention"
RETAINED_RULE = "tiered-acked-within-retention"


def is_tiered(scenario: Scenario) -> bool:
    return bool(getattr(scenario.cluster, "tiered_storage", False))


def storage_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e.get("kind") == "storage" and "error" not in e]


def final_log_starts(events: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the last log start observed (after the final read when the run
    got there): what the final read could read from."""
    out: dict[tuple[str, int], int] = {}
    for e in storage_events(events):
        if e.get("log_start") is not None:
            out[(str(e["topic"]), int(e["partition"]))] = int(e["log_start"])
    return out


def _retention(scenario: Scenario, topic: str) -> tuple[list[int], list[int]]:
    """(retention.bytes values, retention.ms values) the topic had: as declared or created
    (Kafka's defaults: bytes -1, ms 7 days) and every topic-scope alter_config's."""
    by_bytes: list[int] = []
    by_ms: list[int] = []
    configs: list[Mapping[str, Any]] = [dict(t.config) for t in scenario.every_topic()
                                        if t.name == topic]
    for loaded in scenario.steps:
        cfg = getattr(loaded.step, "config", None)
        if isinstance(cfg, Mapping) and getattr(loaded.step, "scope", "topic") == "topic":
            configs.append(cfg)
    for cfg in configs:
        if "retention.bytes" in cfg:
            by_bytes.append(int(cfg["retention.bytes"]))
        if "retention.ms" in cfg:
            by_ms.append(int(cfg["retention.ms"]))
    return by_bytes or [-1], by_ms or [7 * 24 * 3600 * 1000]


def log_start_findings(scenario: Scenario, events: Iterable[Mapping[str, Any]]
                       ) -> list[dict[str, Any]]:
    """Every advance of a partition's log start that retention does not explain."""
    out: list[dict[str, Any]] = []
    last: dict[tuple[str, int], Mapping[str, Any]] = {}
    first_wall: dict[tuple[str, int], float] = {}
    for e in storage_events(events):
        key = (str(e["topic"]), int(e["partition"]))
        if e.get("log_start") is None:
            continue
        first_wall.setdefault(key, float(e.get("t_wall") or 0.0))
        before = last.get(key)
        last[key] = e
        if before is None or int(e["log_start"]) <= int(before["log_start"]):
            continue
        by_bytes, by_ms = _retention(scenario, key[0])
        retained = int(e.get("retained_bytes") or 0)
        if any(0 <= r <= retained for r in by_bytes):
            continue
        age_ms = (float(e.get("t_wall") or 0.0) - first_wall[key]) * 1000
        if any(0 <= t <= age_ms for t in by_ms):
            continue
        moved = ("" if before.get("leader") == e.get("leader") else
                 f", the leader changed from {before.get('leader')} to {e.get('leader')}")
        out.append({
            "rule": LOG_START_RULE, "topic": key[0], "partition": key[1],
            "index": e.get("index"), "from": int(before["log_start"]),
            "to": int(e["log_start"]), "retained_bytes": retained,
            "why": f"log start of {key[0]}-{key[1]} advanced from {before['log_start']} to "
                   f"{e['log_start']} at {_at(e)}{moved}, with {retained} bytes retained: "
                   f"retention.bytes {_limits(by_bytes)} and retention.ms {_limits(by_ms)} "
                   "do not explain it"})
    return out


def _at(event: Mapping[str, Any]) -> str:
    index = event.get("index")
    return "the end of the run" if index is None else f"step {int(index) + 1}"


def _limits(values: list[int]) -> str:
    return "/".join("unlimited" if v < 0 else str(v) for v in sorted(set(values)))


def retained_findings(events: Iterable[Mapping[str, Any]], run_dir: Path) -> list[dict[str, Any]]:
    """acks=all records acknowledged at or above the final log start that the (complete)
    final read did not return."""
    from harness.traffic.history import TRAFFIC_FILE, TrafficFile
    path = run_dir / TRAFFIC_FILE
    starts = final_log_starts(events)
    if not path.is_file() or not starts:
        return []
    return retained_in(TrafficFile(path), starts)


def retained_in(traffic: Iterable[Mapping[str, Any]], starts: Mapping[tuple[str, int], int]
                ) -> list[dict[str, Any]]:
    """``retained_findings`` over traffic events (a list in the tests). A producer never
    declared is taken with Kafka's defaults, acks=all (docs/TRAFFIC.md)."""
    acks: dict[str, str] = {}
    acked: dict[str, tuple[tuple[str, int], int, str]] = {}
    read: set[str] = set()
    complete: set[tuple[str, int]] = set()
    for t in traffic:
        kind = t.get("kind")
        if kind == "producer":
            acks[str(t["producer"])] = str(t.get("acks"))
        elif kind == "ack" and t.get("offset") is not None:
            acked.setdefault(str(t["id"]), ((str(t["topic"]), int(t["partition"])),
                                            int(t["offset"]), str(t.get("producer"))))
        elif kind == "final_read":
            read.add(str(t["id"]))
        elif kind == "final_read_end" and t.get("complete"):
            complete.add((str(t["topic"]), int(t["partition"])))
    missing = sorted((tp, offset, rid) for rid, (tp, offset, producer) in acked.items()
                     if acks.get(producer, "all") == "all" and rid not in read
                     and tp in complete and tp in starts and offset >= starts[tp])
    if not missing:
        return []
    (topic, partition), offset, rid = missing[0]
    return [{"rule": RETAINED_RULE, "records": [
                {"id": r, "topic": tp[0], "partition": tp[1], "offset": o}
                for tp, o, r in missing[:20]],
             "why": f"{len(missing)} acks=all record(s) at or above the log start missing from "
                    f"the final read from the earliest offset (first: {rid} at {topic}-"
                    f"{partition} offset {offset}, log start {starts[(topic, partition)]})"}]


def apply_tiered(axes: Mapping[str, Any], run_dir: Path, scenario: Scenario,
                 events: list[dict[str, Any]]) -> None:
    """Add the tiered checks' findings to the run's safety axis, in place (an axis not
    judged stays as it is)."""
    if not is_tiered(scenario):
        return
    safety = axes["safety"]
    if safety.verdict not in ("SAFE", "UNSAFE"):
        return
    findings = log_start_findings(scenario, events) + retained_findings(events, run_dir)
    if not findings:
        return
    why = "; ".join(str(f["why"]) for f in findings)
    safety.details = [*safety.details, *findings]
    safety.reason = why if safety.verdict == "SAFE" else f"{safety.reason}; {why}"
    safety.verdict = "UNSAFE"


# --- KIP-1303 on the observed local logs ---------------------------------------------------

#: KIP-1303's broker configs (seeds/001 "Public Interfaces"): a scenario that sets either
#: above 0 is judged against KIP-1303 on the kip axis.
KIP1303_CONFIGS = ("leader.election.eligible.local.log.ms",
                   "leader.election.eligible.local.log.bytes")


def configures_kip1303(scenario: Scenario) -> bool:
    cfg = dict(getattr(scenario.cluster, "broker_config", {}) or {})
    return any(int(str(cfg.get(k, "-1"))) > 0 for k in KIP1303_CONFIGS)


def kip_profile(scenario: Scenario) -> Any:
    """The KIP the kip axis judges a run against when it is not the release profile's own:
    KIP-1303 on a tiered cluster that configures it (its election order then follows the
    local logs observed, ``local_log_steps``); None: the release profile's (kip966)."""
    if not (is_tiered(scenario) and configures_kip1303(scenario)):
        return None
    from reference.releases.profiles import KIP1303
    return KIP1303


def local_log_steps(storage: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """The local logs a storage event observed, as KIP-1303's reports to the controller
    (reference ReportLocalLog: localLogStartTimestamp as an age, localLogSizeBytes), one per
    replica whose local log holds a record; the kip model takes them before the next step."""
    if not storage or "error" in storage:
        return ()
    from reference.model.steps import ReportLocalLog
    out = []
    for replica, facts in sorted((storage.get("local_logs") or {}).items(),
                                 key=lambda kv: int(kv[0])):
        if facts.get("age_ms") is None:
            continue
        out.append(ReportLocalLog(int(replica), int(facts["age_ms"]), int(facts["bytes"])))
    return tuple(out)
