"""The draft's actual behaviour: each axis's verdict, the run step by step, the first
violating metadata record of each rule (decoded, with the partition before and after it),
the data checks that failed with the records named, and the sampled states that broke an
invariant."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from harness.judge import trace_check
from harness.judge.audit import recorded_steps
from harness.judge.axes import AXES
from harness.report.finding.runs import Evidence

DATA_CHECK_RULE = {"acked_lost": "acked-record-durable", "above_hwm": "nothing-visible-above-hwm",
                   "hwm_regression": "consumer-hwm-monotonic", "duplicates": "", "gaps": ""}
#: How many of each kind of evidence the draft shows before it says "and N more".
SHOW = 5


def _actual(ev: Evidence) -> list[str]:
    out = [f"Verdict: **{ev.result.headline.text}** (re-judged from the run's files; "
           f"`{ev.result.trace.get('summary', 'trace: no metadata log')}`).", ""]
    for axis in AXES:
        v = ev.result.axes[axis]
        out.append(f"- {axis} {v.verdict}" + (f": {v.reason}" if v.reason else ""))
    out.append("")
    out += _step_table(ev) + [""]
    violations = _first_violations(ev)
    if violations:
        out += ["### The first violating metadata record of each rule (decoded)", ""]
        for f in violations:
            out += _record_lines(_culprit(ev, f)) + [""]
    failed = [c for c in ev.checks if not c.ok]
    if failed:
        out += ["### Data checks that failed", ""]
        for c in failed:
            rule = DATA_CHECK_RULE.get(c.name)
            out.append(f"- **{c.name}**" + (f" ({rule})" if rule else "") +
                       f": {len(c.details)} finding(s)")
            out += [f"  - {_record_named(d)}" for d in c.details[:SHOW * 4]]
            if len(c.details) > SHOW * 4:
                out.append(f"  - ... and {len(c.details) - SHOW * 4} more")
        out.append("")
    sampled = next((d for d in ev.result.axes["safety"].details
                    if d.get("rule") == "sampled-state-invariants"), None)
    if sampled:
        recs = list(sampled.get("records") or [])
        out += [f"### Sampled states that broke an observed-state invariant ({len(recs)})", ""]
        firsts: dict[str, dict[str, Any]] = {}
        for r in recs:
            firsts.setdefault(str(r.get("invariant")), r)
        for name, r in firsts.items():
            n = sum(1 for x in recs if x.get("invariant") == name)
            step = "-" if r.get("index") is None else int(r["index"]) + 1
            out.append(f"- {name} ({n} sample(s)), first at step {step} ({_when(r.get('t_wall'))}):"
                       f" {r.get('detail')}")
        out.append("")
    return out


def _step_table(ev: Evidence) -> list[str]:
    """Each recorded step with the state it settled in (as observed) and its lockstep
    verdict: what the cluster did, step by step."""
    steps = recorded_steps(ev.events)
    if not steps:
        return ["No step was recorded."]
    settled = _settled_by_partition(ev.events)
    several = len({tp for per in settled.values() for tp in per}) > 1
    out = ["### Observed, step by step (settled states)", "",
           "| # | step | " + ("partition | " if several else "") + "leader | epoch | replicas "
           "| ISR | ELR | LastKnownELR | fenced | HWM | lockstep |",
           "|---|---|" + ("---|" if several else "") + "---|---|---|---|---|---|---|---|---|"]
    for rec in steps:
        step = json.dumps({rec.kind: {k: v for k, v in rec.params.items()
                                      if k not in ("record_ids", "resolved")}},
                          separators=(", ", ": "))
        per = settled.get(rec.index) or {("", 0): rec.observed or {}}
        for (topic, partition), o in sorted(per.items()):
            cells = [_cell(o.get(k)) for k in ("leader", "leader_epoch", "replicas", "isr",
                                                 "elr", "last_known_elr", "fenced", "hwm")]
            where = f"{topic}-{partition} | " if several else ""
            out.append(f"| {rec.index + 1} | `{step}` | {where}{' | '.join(cells)} | "
                       f"{rec.verdict or '-'} |")
    return out


def _settled_by_partition(events: list[dict[str, Any]]
                          ) -> dict[int, dict[tuple[str, int], dict[str, Any]]]:
    """Each step's last observation of every partition (a topic of several partitions, or
    several topics, is observed partition by partition)."""
    out: dict[int, dict[tuple[str, int], dict[str, Any]]] = {}
    index: int | None = None
    for e in events:
        if e["kind"] == "step" and e.get("phase") == "start":
            index = int(e["index"])
        elif e["kind"] == "observation" and index is not None:
            tp = (str(e.get("topic", "")), int(e.get("partition", 0)))
            out.setdefault(index, {})[tp] = e.get("state") or {}
    return out


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def _first_violations(ev: Evidence) -> list[dict[str, Any]]:
    """The trace findings under the build's profile and the safety axis, the first of
    each rule, by offset."""
    pool: list[dict[str, Any]] = list(ev.result.axes["release"].details)
    for d in ev.result.axes["safety"].details:
        if d.get("rule") == "trace-invariants":
            pool += list(d.get("records") or [])
    firsts: dict[str, dict[str, Any]] = {}
    for f in sorted(pool, key=lambda f: (f.get("offset") is None, f.get("offset") or 0)):
        if "rule" in f and "record" in f:
            firsts.setdefault(str(f["rule"]), f)
    return list(firsts.values())[:SHOW]


PARTITION_RECORDS = ("PARTITION_CHANGE_RECORD", "PARTITION_RECORD")


def _culprit(ev: Evidence, f: Mapping[str, Any]) -> Mapping[str, Any]:
    """The violation with the record that made the partition's state: an invariant is
    judged at the end of a batch, whose last record (a NoOpRecord, a broker's record) may
    say nothing about the partition; then the batch's last record of that partition is
    shown, with the offset the rule was judged at."""
    rec = f.get("record") or {}
    tp = f.get("topic_partition")
    if not tp or rec.get("type") in PARTITION_RECORDS or f.get("offset") is None:
        return f
    if ev.logs is None:
        ev.logs = trace_check.read_logs(ev.run_dir)
    controller = f.get("controller")
    records = (ev.logs.by_controller.get(int(controller)) if controller is not None else None) \
        or (ev.logs.longest[1] if ev.logs.longest else [])
    topic_ids = {r["data"].get("topicId") for r in records
                 if r["type"] == "TOPIC_RECORD" and r["data"].get("name") == tp[0]}
    mine = [r for r in records if r["type"] in PARTITION_RECORDS
            and r["data"].get("topicId") in topic_ids and r["data"].get("partitionId") == tp[1]
            and r["offset"] <= int(f["offset"])]
    if not mine:
        return f
    last, ender = mine[-1], record_name(str(rec.get("type")))
    return {**f, "offset": last["offset"],
            "judged_at": f"{f['offset']} (the end of its batch, a {ender})",
            "record": {k: last.get(k) for k in ("type", "version", "data")}}


def _record_lines(f: Mapping[str, Any]) -> list[str]:
    rec = f.get("record") or {}
    tp = f.get("topic_partition")
    where = f"{tp[0]}-{tp[1]}" if tp else (f"broker {f['broker']}" if f.get("broker") else "")
    judged = f", judged at offset {f['judged_at']}" if f.get("judged_at") else ""
    lines = [f"**{f['rule']}** at offset {f.get('offset')} of controller {f.get('controller')}'s "
             f"metadata log ({_when(f.get('t_wall'))}{judged}){', ' + where if where else ''}: "
             f"{f.get('detail')}", "", "```",
             f"{record_name(str(rec.get('type')))} (version {rec.get('version')}) "
             f"{_fields(rec.get('data') or {})}"]
    if f.get("before") is not None:
        lines.append(f"before: {_fields(f['before'])}")
    if f.get("after") is not None:
        lines.append(f"after:  {_fields(f['after'])}")
    lines.append("```")
    return lines


def record_name(kind: str) -> str:
    """PARTITION_CHANGE_RECORD -> PartitionChangeRecord (Kafka's message name)."""
    return "".join(part.capitalize() for part in kind.split("_")) if kind.isupper() else kind


def _fields(data: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in data.items() if k != "directories")


def _record_named(d: Mapping[str, Any]) -> str:
    if "record_id" in d:
        extra = ", ".join(f"{k} {d[k]}" for k in ("offset", "acks", "hwm", "offsets", "topic",
                                                   "partition") if d.get(k) is not None)
        return f"record `{d['record_id']}`" + (f" ({extra})" if extra else "")
    return ", ".join(f"{k} {v}" for k, v in d.items())


def _when(t: Any) -> str:
    if not isinstance(t, (int, float)):
        return "time unknown"
    return dt.datetime.fromtimestamp(float(t), dt.UTC).strftime("%H:%M:%S.%f")[:-3] \
        + " UTC"
