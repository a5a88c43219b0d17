"""Data checks over a run history: what the cluster did to the records themselves.

One implementation, over the history's events (SCHEMA.md), used by the runner at the end
of a run and by the report (which re-judges histories offline):

- acked_lost: a record acknowledged with an offset (acks=1 or all) that the final read of
  its partition does not contain. The final read is the last complete `read` of that
  partition (schema 1.1: a `read` event closes every read, the run's consume events of
  that partition since its previous `read` event, so a read that found nothing still
  counts); histories without `read` events (1.0) fall back to the last run of
  consecutive `consume` events. With no read at all the check cannot say and passes.
  On a tiered run, a record below its partition's final log start (the last `storage`
  event's) was deleted by retention, not lost: whether only retention moved the log start
  is judged apart (harness/judge/tiered.py), as for the traffic's records (``Retained``).
- above_hwm: a record consumed at an offset >= the HWM first observed after it was read.
- hwm_regression: the observed HWM of a partition going down between two observations.
- duplicates: one record id consumed at two different offsets.
- gaps: a read whose offsets skip (a read starts wherever the consumer was assigned). A
  read under traffic holds only the scenario's own records among the traffic's, so its
  `read` event carries the skips of the whole read (`gaps`), which are judged instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.judge.tiered import final_log_starts

CHECKS = ("acked_lost", "above_hwm", "hwm_regression", "duplicates", "gaps")


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    details: list[dict[str, Any]] = field(default_factory=list)


def run_checks(events: Iterable[dict[str, Any]]) -> list[CheckResult]:
    ordered = incarnations(sorted(events, key=lambda e: e["seq"]))
    reads = _reads(ordered)
    return [
        _acked_lost(ordered, reads),
        _above_hwm(ordered),
        _hwm_regression(ordered),
        _duplicates(ordered),
        _gaps(reads),
    ]


#: How the events of a deleted topic's k-th incarnation name it (``t`` -> ``t@1``).
INCARNATION = "{topic}@{k}"


def incarnations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with each earlier incarnation of a topic named apart: what was acked,
    read and observed of a topic before it was created again (a ``topic_created`` event,
    written by the create_topic step) is judged as a partition of its own, ``t@1``, so its
    records are not lost from the new topic, whose HWM starts again at 0. (The boundary is
    the creation, not the deletion: brokers show the deleted topic for a while after the
    controller deleted it.) Events of a topic deleted since its last creation (a
    ``topic_deleted`` event) are marked ``deleted``: what was acked after their last read
    was deleted by request, unread. Events without a deletion are returned as they are."""
    deleted = [e for e in events if e["kind"] == "topic_deleted"]
    if not deleted:
        return events
    created = [e for e in events if e["kind"] == "topic_created"]
    out = []
    for e in events:
        topic = e.get("topic")
        if topic is None or e["kind"] in ("topic_deleted", "topic_created"):
            out.append(e)
            continue
        births = [c["seq"] for c in created if c["topic"] == topic]
        k = sum(1 for b in births if b < e["seq"])
        if k < len(births):
            e = {**e, "topic": INCARNATION.format(topic=topic, k=k + 1), "deleted": True}
        elif any(d["topic"] == topic and d["seq"] > max(births, default=-1) for d in deleted):
            e = {**e, "deleted": True}
        out.append(e)
    return out


def _tp(event: dict[str, Any]) -> tuple[str, int]:
    return event.get("topic", ""), int(event.get("partition", 0))


@dataclass
class Read:
    """One read of a partition from its start: the records seen, and whether it reached
    the end of the partition (a read that timed out proves nothing about what is missing)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    #: Where the read skipped offsets, as its `read` event says it (a read under traffic:
    #: ``records`` are the scenario's own among the traffic's); None: from ``records``.
    gaps: list[tuple[int, int]] | None = None
    #: The seq of the event that closed the read (its `read` event or last consume).
    end: int = -1


def _reads(events: list[dict[str, Any]]) -> dict[tuple[str, int], list[Read]]:
    """Per partition, its reads in order. Where the run has `read` events (schema 1.1), a
    read is the consume events of its partition since the run's previous `read` event,
    which closes it; otherwise (1.0) a read is a run of consecutive consume events."""
    closed = any(e["kind"] == "read" for e in events)
    out: dict[tuple[str, int], list[Read]] = defaultdict(list)
    pending: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for e in events:
        if e["kind"] == "read":
            tp = _tp(e)
            mine = [c for c in pending if _tp(c) == tp]
            gaps = e.get("gaps")
            out[tp].append(Read(mine, bool(e.get("complete", True)),
                                None if gaps is None else
                                [(int(g["after"]), int(g["next"])) for g in gaps],
                                end=int(e["seq"])))
            pending = []
        elif e["kind"] == "consume" and closed:
            pending.append(e)
        elif e["kind"] == "consume":
            tp = _tp(e)
            if previous is not None and previous["kind"] == "consume" and _tp(previous) == tp:
                out[tp][-1].records.append(e)
                out[tp][-1].end = int(e["seq"])
            else:
                out[tp].append(Read([e], end=int(e["seq"])))
        previous = e
    return out


def _acked_lost(events: list[dict[str, Any]],
                reads: dict[tuple[str, int], list[Read]]) -> CheckResult:
    lost = []
    # per partition, the record ids of its last complete read (none: not judged)
    final_reads = {tp: {c["record_id"] for c in complete[-1].records}
                   for tp, rs in reads.items() if (complete := [r for r in rs if r.complete])}
    read_ends = {tp: complete[-1].end
                 for tp, rs in reads.items() if (complete := [r for r in rs if r.complete])}
    starts = final_log_starts(events)  # tiered runs only: deleted by retention below them
    for e in events:
        if e["kind"] != "ack" or e.get("offset") is None or e.get("error"):
            continue
        if int(e["offset"]) < starts.get(_tp(e), 0):
            continue
        final = final_reads.get(_tp(e))
        if final is None:
            continue
        if e.get("deleted") and e["seq"] > read_ends[_tp(e)]:
            continue  # acked after the deleted incarnation's last read: never read, not lost
        if e["record_id"] not in final:
            lost.append({"record_id": e["record_id"], "acks": e.get("acks"),
                         "offset": e["offset"], "topic": e.get("topic"),
                         "partition": e.get("partition")})
    return CheckResult("acked_lost", not lost, lost)


def _above_hwm(events: list[dict[str, Any]]) -> CheckResult:
    found = []
    pending: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e["kind"] == "consume":
            pending[_tp(e)].append(e)
        elif e["kind"] == "observation":
            hwm = (e.get("state") or {}).get("hwm")
            if hwm is None:
                continue
            tp = _tp(e)
            found += [{"record_id": c["record_id"], "offset": c["offset"], "hwm": hwm}
                      for c in pending[tp] if c["offset"] >= hwm]
            pending[tp] = []
    return CheckResult("above_hwm", not found, found)


def _hwm_regression(events: list[dict[str, Any]]) -> CheckResult:
    found = []
    last: dict[tuple[str, int], tuple[int, int]] = {}
    for e in events:
        if e["kind"] != "observation":
            continue
        hwm = (e.get("state") or {}).get("hwm")
        if hwm is None:
            continue
        tp = _tp(e)
        if tp in last and hwm < last[tp][0]:
            found.append({"topic": tp[0], "partition": tp[1], "from": last[tp][0], "to": hwm,
                          "seq": e["seq"]})
        last[tp] = (hwm, e["seq"])
    return CheckResult("hwm_regression", not found, found)


def _duplicates(events: list[dict[str, Any]]) -> CheckResult:
    offsets: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e["kind"] == "consume":
            offsets[e["record_id"]].add(int(e["offset"]))
    found = [{"record_id": rid, "offsets": sorted(offs)}
             for rid, offs in sorted(offsets.items()) if len(offs) > 1]
    return CheckResult("duplicates", not found, found)


def _gaps(reads: dict[tuple[str, int], list[Read]]) -> CheckResult:
    found: list[dict[str, Any]] = []
    for tp, runs in reads.items():
        for run in runs:
            offs = [int(c["offset"]) for c in run.records]
            skips = run.gaps if run.gaps is not None else [
                (a, b) for a, b in zip(offs, offs[1:], strict=False) if b != a + 1]
            found.extend({"topic": tp[0], "partition": tp[1], "after": a, "next": b}
                         for a, b in skips)
    return CheckResult("gaps", not found, found)
