"""The Spark side of the report: one task per run history, judged by the runner's own checks.

A run is the unit of work. Its events are judged in order (reads, the nearest later HWM
observation, the final read of a partition), runs never depend on each other, and a chaos
run holds hundreds to a few hundred thousand events. So the job is a parallel map over run
histories: each task reads one events.jsonl, runs harness.judge.datachecks.run_checks on it
(the code the runner used at the end of that run, so the report and the runner cannot
disagree) and returns its findings, its timeline events and its counts. Tasks are handed
out largest history first so that a long run never starts last. Locally that is
`local[2]`; on a cluster (`--master`) runs spread over the executors, which need the run
directories on a shared path; the harness package is shipped to them.

An earlier version expressed the checks as Spark SQL windows and joins over one frame of
all events; on 10M events it spent three minutes parsing, shuffling, sorting and caching
what this version reads run by run in a minute and a half (bench/RESULTS-report.md).
A single run must fit in one Python worker: about 1.4 KB of memory per event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import orjson
from pyspark.sql import SparkSession

from harness.judge.datachecks import run_checks
from harness.report.load import is_number

TIMELINE_KINDS = ("observation", "fault", "prediction", "verdict")
TIMELINE_FIELDS = ("run_id", "seq", "t_wall", "kind", "state", "action", "index", "verdict",
                   "reason", "allowed", "partition")


class RunFacts(NamedTuple):
    """What one task finds in one history."""
    run_id: str  # the key the history was handed in with
    events: int  # readable events
    corrupt_lines: int  # lines that are not a well-typed JSON event (e.g. a torn last one)
    checks: dict[str, list[dict[str, Any]]]  # check name -> findings (at most `limit` each)
    timeline: list[dict[str, Any]]  # observation, fault, prediction and verdict events
    ended: bool  # has a run_end event: without one the history was cut short
    problem: str | None  # why the checks could not judge this history, if they could not
    axes: dict[str, dict[str, Any]] | None = None  # release/kip/safety, re-judged (audit)
    trace: list[dict[str, Any]] | None = None  # trace violations: t_wall, rule, offset, detail
    audit_problem: str | None = None  # why the axes could not be re-judged, if they could not
    #: The traffic checks re-judged with the axes (audit; docs/TRAFFIC.md), for a run that
    #: recorded traffic.jsonl; None otherwise.
    traffic: dict[str, Any] | None = None


def judge_runs(spark: SparkSession, histories: list[tuple[str, Path]],
               limit: int = 100_000) -> list[RunFacts]:
    """Judge every (run_id, events.jsonl) in one Spark job, one task per run."""
    if not histories:
        return []
    largest_first = sorted(histories, key=lambda h: -h[1].stat().st_size)
    # absolute: executors do not run in the driver's working directory
    items = [(run_id, str(path.resolve()), limit) for run_id, path in largest_first]
    rdd = spark.sparkContext.parallelize(items, len(items))
    return [RunFacts(*facts) for facts in rdd.map(judge_history).collect()]


def judge_history(item: tuple[str, str, int]) -> tuple[Any, ...]:
    """One task: read a history, tolerating bad lines (counted), and judge it."""
    run_id, path, limit = item
    events, corrupt = read_history(Path(path))
    try:
        checks = {c.name: c.details[:limit] for c in run_checks(events)}
    except Exception as exc:  # noqa: BLE001 - one odd history must not fail the whole report
        return (run_id, len(events), corrupt, {}, [], False, f"{type(exc).__name__}: {exc}",
                None, [], None, None)
    timeline = [{f: e.get(f) for f in TIMELINE_FIELDS} for e in events
                if e["kind"] in TIMELINE_KINDS]
    ended = any(e["kind"] == "run_end" for e in events)
    axes, trace, why, traffic = judge_axes(Path(path).parent, events)
    return run_id, len(events), corrupt, checks, timeline, ended, None, axes, trace, why, traffic


def judge_axes(run_dir: Path, events: list[dict[str, Any]]
               ) -> tuple[dict[str, dict[str, Any]] | None, list[dict[str, Any]], str | None,
                          dict[str, Any] | None]:
    """The three axes, the trace violations and the traffic checks, by `kafka-chaos
    audit`'s own code (the runner's judges), or why they could not be re-judged (e.g. no
    scenario file)."""
    from harness.judge.audit import audit
    try:
        result = audit(run_dir, events)
    except Exception as exc:  # noqa: BLE001 - the run is still shown with its data checks
        return None, [], f"{type(exc).__name__}: {exc}", None
    axes = {a: {k: v[k] for k in ("verdict", "reason", "expected", "as_expected")}
            for a, v in result.to_json()["axes"].items()}
    trace = [{k: f.get(k) for k in ("t_wall", "rule", "offset", "detail", "controller")}
             for f in result.axes["release"].details]
    return axes, trace, None, result.traffic


def read_history(path: Path) -> tuple[list[dict[str, Any]], int]:
    """(events, unreadable lines). Unlike the runner's reader, a bad line anywhere is
    counted and skipped: the report must judge what can be judged and say what it could
    not."""
    events, corrupt = [], 0
    with open(path, "rb") as fh:
        for line in fh:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                corrupt += 1
                continue
            if valid_event(event):
                events.append(event)
            else:
                corrupt += 1
    return events, corrupt


def valid_event(event: Any) -> bool:
    """An event whose fields the checks and the page compute with have their SCHEMA.md
    types; a history cannot crash the report or smuggle markup in as a number."""
    if not (isinstance(event, dict) and isinstance(event.get("run_id"), str)
            and _is_int(event.get("seq")) and isinstance(event.get("kind"), str)
            and is_number(event.get("t_wall"))):
        return False
    if not (_opt(event.get("topic"), str) and _opt_int(event.get("partition"))):
        return False
    check = _KIND_CHECKS.get(event["kind"])
    return check is None or bool(check(event))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_int(value: Any) -> bool:
    return value is None or _is_int(value)


def _opt(value: Any, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def _record_id(value: Any) -> bool:
    return isinstance(value, str) or _is_int(value)


def _state(state: Any) -> bool:
    """A partition state as the checks and the timeline read it (or null)."""
    if state is None:
        return True
    return (isinstance(state, dict) and _opt_int(state.get("hwm"))
            and _opt_int(state.get("leader"))
            and all(_ints(state.get(k)) for k in ("isr", "elr", "last_known_elr")))


def _ints(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(map(_is_int, value)))


_KIND_CHECKS: dict[str, Any] = {
    "consume": lambda e: _record_id(e.get("record_id")) and _is_int(e.get("offset")),
    "ack": lambda e: _record_id(e.get("record_id")) and _opt_int(e.get("offset")),
    "observation": lambda e: _state(e.get("state")),
    "prediction": lambda e: isinstance(e.get("allowed", []), list)
    and all(isinstance(a, dict) and _state(a) for a in e.get("allowed", [])),
    "fault": lambda e: _opt(e.get("action"), str),
    "verdict": lambda e: _opt(e.get("verdict"), str) and _opt(e.get("reason"), str),
}
