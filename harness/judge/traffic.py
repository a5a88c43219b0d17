"""Client traffic in the judges (fixtures/scenarios/FORMAT.md "Traffic", docs/TRAFFIC.md):
the same functions online (the runner) and offline (`audit`).

- The traffic checks' verdict feeds the safety axis (``apply_traffic``): an acknowledged
  acks=all record lost beyond the fault budget (``LossBudget.for_lost_replicas``, the rule
  the safety axis applies to the scenario's own records) is UNSAFE and the finding names
  the lost ids; every other safety check of the traffic (duplicates, inconsistent offsets,
  lost after read, poll and commit order) is a finding too; unseen acknowledged records and
  excused losses are said in the reason.
- The lockstep under traffic: the model cannot know offsets record by record. Leader,
  ISR, ELR, epochs, replicas and the other fields are compared exactly as without
  traffic; after a step during which a producer of the topic runs (its ``from``/``until``
  window) the model sees one tick of traffic (``tick_step``), after any other step none.
  The model's HWM is compared exactly until the topic's first producer starts and not
  from then on (``hwm_bounded``, ``model_view``); every observed HWM of the run is held
  to bounds (``hwm_bound_findings``), whether the traffic runs during the step or not:
  at least 1 + the offset of the last acks=all acknowledgement recorded before the step
  started and after the last fault before the observation that may lose data
  (lose_unflushed, an unclean election), at most the records sent to the partition
  before the observation (judged only when no producer may write a record twice: none
  without idempotence, and for an idempotent librdkafka producer only before the send of
  its first record that timed out, `_TwiceFrom`). A bound
  broken is a release divergence. An HWM that went back after a fault that may lose data
  is the safety axis's (consumer-hwm-monotonic, lost writes), not the release model's.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.judge.axes import (
    CONFORMS,
    DIVERGES,
    ERROR,
    NOT_JUDGED,
    SAFE,
    UNSAFE,
    AxisVerdict,
    lost_data_brokers,
)
from harness.scenario.loader import Scenario
from harness.traffic.checks import LossBudget, TrafficVerdict
from harness.traffic.history import TRAFFIC_FILE, TrafficFile
from harness.traffic.index import DEFAULT_CLIENT, MSG_TIMED_OUT

#: Lost ids named in the finding's reason (every one of the first 20 is in its records).
NAMED_IDS = 10


def has_traffic(scenario: Scenario) -> bool:
    return scenario.traffic is not None


_WEAKEST = {"0": 0, "1": 1, "all": 2}


def tick_step(scenario: Scenario, index: int, topic: str) -> Any:
    """Under traffic, what the model sees of the traffic after step ``index`` on a
    partition of ``topic``: one record written with the weakest acks of the producers of
    that topic running during the step (records keep coming: a follower cut from its
    leader falls behind, as under traffic). None: no producer writes to ``topic`` during
    step ``index`` (none of its window, FORMAT.md "Traffic": without records coming a cut
    follower stays caught up, and the model must not say otherwise). Its ack is never
    compared (the model cannot know which traffic records were acknowledged)."""
    spec = scenario.traffic
    if spec is None:
        return None
    acks = [p.acks for p in spec.producing(index, topic)]
    if not acks:
        return None
    from reference.model.steps import Produce
    weakest = min(acks, key=lambda a: _WEAKEST[a])
    return Produce(count=1, acks=weakest, record_ids=(f"traffic-tick-{index}-{topic}",))


def hwm_bounded(scenario: Scenario, index: int | None, topic: str) -> bool:
    """Whether step ``index``'s observation of a partition of ``topic`` has its HWM held to
    bounds (``hwm_bound_findings``) instead of compared with the model's: once a producer
    of the topic has started (even if it has stopped since), the model cannot count the
    records. Before that the model's HWM is exact, as without traffic. ``index`` None (no
    step): bounded whenever the run has traffic."""
    spec = scenario.traffic
    if spec is None:
        return False
    if index is None:
        return True
    return spec.written_by(index, topic)


def model_view(observed: Mapping[str, Any], scenario: Scenario, index: int | None,
               topic: str) -> dict[str, Any]:
    """The observation of step ``index`` on a partition of ``topic`` as the model compares
    it: without the HWM where it is judged by bounds instead (``hwm_bounded``)."""
    out = dict(observed)
    if hwm_bounded(scenario, index, topic):
        out["hwm"] = None
    return out


def run_min_isr(scenario: Scenario) -> int:
    """The smallest effective min ISR over every topic and every alter_config."""
    values = [min(int(t.min_insync_replicas), len(t.replicas))
              for t in scenario.every_topic()]
    for loaded in scenario.steps:
        cfg = getattr(loaded.step, "config", None)
        if isinstance(cfg, Mapping) and "min.insync.replicas" in cfg:
            values.append(int(cfg["min.insync.replicas"]))
    return min(values)


def budget_of(scenario: Scenario, events: Iterable[Mapping[str, Any]]) -> LossBudget:
    """The fault budget of the run: as the safety axis counts it for the scenario's own
    records (judge_safety): at most min ISR - 1 replicas that lost unflushed data lose no
    acks=all record."""
    return LossBudget.for_lost_replicas(len(lost_data_brokers(events)), run_min_isr(scenario))


def check_traffic(run_dir: Path, scenario: Scenario, events: list[dict[str, Any]],
                  threshold_bytes: int | None = None) -> TrafficVerdict | None:
    """The traffic checks of a run (in process, or on Spark at or above the threshold);
    None when the run recorded no traffic.jsonl."""
    from harness.traffic.checks import check_file
    path = run_dir / TRAFFIC_FILE
    if not path.is_file():
        return None
    budget = budget_of(scenario, events)
    from harness.traffic import spark as traffic_spark  # noqa: PLC0415 - pyspark is heavy
    limit = traffic_spark.DEFAULT_THRESHOLD_BYTES if threshold_bytes is None \
        else threshold_bytes
    # Tiered storage: below each partition's final log start, retention deleted the records
    # (whether only retention moved it: harness/judge/tiered.py).
    from harness.judge.tiered import final_log_starts, is_tiered
    retained = final_log_starts(events) if is_tiered(scenario) else None
    if path.stat().st_size < limit or retained:
        return check_file(path, budget, retained=retained)
    return traffic_spark.check_history(path, threshold_bytes=limit, budget=budget)


def apply_traffic(axes: dict[str, AxisVerdict], run_dir: Path, scenario: Scenario,
                  events: list[dict[str, Any]], threshold_bytes: int | None = None
                  ) -> TrafficVerdict | None:
    """Add the traffic's findings to the run's (merged) axes, in place: the checks to the
    safety axis, the HWM bounds to the release axis. An axis not judged stays as it is."""
    verdict = check_traffic(run_dir, scenario, events, threshold_bytes)
    safety, release = axes["safety"], axes["release"]
    if verdict is None:
        if has_traffic(scenario) and safety.verdict not in NOT_JUDGED:
            safety.verdict, safety.reason = ERROR, ("the scenario has traffic but the run "
                                                    f"recorded no {TRAFFIC_FILE}")
        return None
    problems = traffic_problems(events)
    if problems and safety.verdict not in NOT_JUDGED:
        # A producer or consumer that failed is a harness fault: what it did not record
        # cannot be judged either way.
        safety.verdict, safety.reason = ERROR, f"traffic: {'; '.join(problems)}"
    if safety.verdict not in NOT_JUDGED:
        _judge_safety(safety, verdict, budget_of(scenario, events))
    if release.verdict == CONFORMS and has_traffic(scenario):
        found = hwm_bound_findings(events, run_dir / TRAFFIC_FILE, scenario)
        if found:
            first = found[0]
            release.verdict = DIVERGES
            # (release.details are the trace's violations: the bounds are said here)
            release.reason = (f"step {_step_no(first)}: hwm: {first['why']}"
                              + (f" (+{len(found) - 1} more observation(s) out of bounds)"
                                 if len(found) > 1 else ""))
    return verdict


def traffic_problems(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """What went wrong with the traffic's threads (the runner's ``traffic`` stop event):
    one that raised, or did not end in time."""
    return [str(p) for e in events if e.get("kind") == "traffic" and e.get("phase") == "stop"
            for p in e.get("problems") or ()]


def _step_no(finding: Mapping[str, Any]) -> str:
    index = finding.get("index")
    return "-" if index is None else str(int(index) + 1)


def _judge_safety(safety: AxisVerdict, verdict: TrafficVerdict, budget: LossBudget) -> None:
    checks = verdict.by_name()
    findings: list[dict[str, Any]] = []
    others = {f["rule"]: f for f in verdict.safety_findings()}
    for s in verdict.unsafe:
        if s.name == "lost_writes":
            counted = [e for e in s.examples if not e.get("excused")]
            ids = ", ".join(str(e["id"]) for e in counted[:NAMED_IDS])
            more = s.counts["counted"] - min(len(counted), NAMED_IDS)
            why = (f"traffic: {s.counts['counted']} acknowledged acks=all record(s) lost "
                   f"beyond the fault budget ({budget.why}): {ids}"
                   + (f" and {more} more" if more > 0 else ""))
            findings.append({"rule": "traffic-lost_writes", "records": s.examples,
                             "why": why})
        else:
            f = others[f"traffic-{s.name}"]
            findings.append({**f, "why": f"traffic: {f['why']}"})
    notes: list[str] = []
    lost = checks.get("lost_writes")
    if lost is not None and lost.counts.get("excused"):
        notes.append(f"traffic: {lost.counts['excused']} lost record(s) excused (acks 0/1, or "
                     f"within the fault budget: {budget.why})")
    unseen = checks.get("unseen_acked")
    if unseen is not None and unseen.counts.get("unseen"):
        notes.append(f"traffic: {unseen.counts['unseen']} acknowledged record(s) no consumer "
                     "polled (liveness, not UNSAFE)")
    if verdict.skipped_lines:
        notes.append(f"traffic: {verdict.skipped_lines} ill-typed line(s) skipped")
    lives = verdict.incarnations
    if lives is not None:
        # Never silently: what the deletions took by request, and what cannot be told.
        notes.append(f"traffic: topics deleted/created again: {lives['acked_gone_by_request']}"
                     f" acknowledged record(s) gone by request, {lives['expected_errors']} "
                     f"expected error(s), {lives['indeterminate']} indeterminate (acked "
                     "across a deletion and re-creation, in no log that can be read)")
    if findings:
        safety.details = [*safety.details, *findings]
        why = "; ".join(str(f["why"]) for f in findings)
        safety.reason = why if safety.verdict == SAFE else f"{safety.reason}; {why}"
        safety.verdict = UNSAFE
    if notes:
        safety.reason = "; ".join(([safety.reason] if safety.reason else []) + notes)


# --- HWM bounds under traffic ----------------------------------------------------------

def _may_lose_data(event: Mapping[str, Any]) -> bool:
    """A fault after which acknowledged records may be gone: a replica that lost unflushed
    data, or an unclean election asked for."""
    if event.get("kind") == "fault" and event.get("action") == "lose_unflushed":
        return True
    if event.get("kind") == "step" and event.get("phase") == "start":
        ((name, params),) = dict(event.get("step") or {"": {}}).items()
        params = dict(params or {})
        if name == "elect" and params.get("type") != "preferred":
            return True
        cfg = dict(params.get("config") or {})
        if name == "alter_config" and str(cfg.get("unclean.leader.election.enable",
                                                   "")).lower() == "true":
            return True
    return False


class _Tally:
    """Per partition: acks=all acknowledgements as (t, the highest acked offset since the
    last data-loss fault before t), and the times of sends."""

    def __init__(self) -> None:
        self.ack_t = array("d")
        self.ack_top = array("q")
        self.send_t = array("d")


class _TwiceFrom:
    """From when an idempotent librdkafka producer may have written a record twice: after
    a message timeout it bumps its epoch and re-sends records the broker already wrote
    (harness/traffic/checks.py `client_epoch_bump`). The re-sent records were behind the
    timed-out one in the producer's queue and the bump comes after its timeout, so no second
    copy is in a log before the timed-out record was sent: the earliest send of a record
    that timed out bounds it from below."""

    def __init__(self) -> None:
        self.at: float | None = None
        self._sent: dict[str, array[float]] = {}  # librdkafka producer -> send time by seq

    def producer(self, e: Mapping[str, Any]) -> None:
        if e["idempotent"] and str(e.get("client") or DEFAULT_CLIENT).startswith("librdkafka"):
            self._sent.setdefault(e["producer"], array("d"))

    def send(self, e: Mapping[str, Any], t: float) -> None:
        sent = self._sent.get(e["producer"])
        if sent is not None and e.get("seq") == len(sent):
            sent.append(t)

    def send_error(self, e: Mapping[str, Any]) -> None:
        sent = self._sent.get(e["producer"])
        if sent is None or e.get("error") != MSG_TIMED_OUT or not 0 <= e["seq"] < len(sent):
            return
        t = sent[e["seq"]]
        self.at = t if self.at is None else min(self.at, t)


def _tallies(traffic: Iterable[dict[str, Any]], events: list[dict[str, Any]],
             losses_of: Callable[[str], list[float]]
             ) -> tuple[dict[tuple[str, int], _Tally], bool, _TwiceFrom]:
    """Tallies from the traffic and the scenario's own produce/ack events; whether some
    producer may write one record twice (not idempotent, acks 1 or all), and from when an
    idempotent one may (`_TwiceFrom`)."""
    acks_of: dict[str, str] = {}
    twice = False
    twice_from = _TwiceFrom()
    merged: list[tuple[float, str, tuple[str, int], int]] = []
    for e in events:
        if e.get("kind") == "produce":
            merged.append((float(e["t_mono"]), "send", (e["topic"], int(e["partition"])), 0))
        elif (e.get("kind") == "ack" and str(e.get("acks")) == "all" and not e.get("error")
              and e.get("offset") is not None):
            merged.append((float(e["t_mono"]), "ack", (e["topic"], int(e["partition"])),
                           int(e["offset"])))
    out: dict[tuple[str, int], _Tally] = {}
    top: dict[tuple[str, int], tuple[int, int]] = {}  # tp -> (loss epoch, highest offset)

    def add(t: float, kind: str, tp: tuple[str, int], offset: int) -> None:
        tally = out.setdefault(tp, _Tally())
        if kind == "send":
            tally.send_t.append(t)
            return
        epoch = bisect.bisect_right(losses_of(tp[0]), t)
        prev = top.get(tp)
        best = offset + 1 if prev is None or prev[0] != epoch else max(prev[1], offset + 1)
        top[tp] = (epoch, best)
        tally.ack_t.append(t)
        tally.ack_top.append(best)

    merged.sort()
    mi = 0
    for e in traffic:
        kind = e["kind"]
        if kind == "producer":
            acks_of[e["producer"]] = e["acks"]
            if not e["idempotent"] and e["acks"] != "0":
                twice = True
            twice_from.producer(e)
            continue
        if kind == "send_error":
            twice_from.send_error(e)
        if kind not in ("send", "ack") or e.get("t") is None:
            continue
        t = float(e["t"])
        if kind == "send":
            twice_from.send(e, t)
        while mi < len(merged) and merged[mi][0] <= t:
            add(*merged[mi])
            mi += 1
        if kind == "send" and e.get("partition") is not None:
            add(t, "send", (e["topic"], int(e["partition"])), 0)
        elif (kind == "ack" and e.get("offset") is not None
              and acks_of.get(e["producer"], "all") == "all"):
            add(t, "ack", (e["topic"], int(e["partition"])), int(e["offset"]))
    for item in merged[mi:]:
        add(*item)
    return out, twice, twice_from


def hwm_bound_findings(events: list[dict[str, Any]], traffic_path: Path,
                       scenario: Scenario) -> list[dict[str, Any]]:
    """Every observation whose HWM breaks the bounds of a run under traffic (see the
    module's doc); [] when every one holds or nothing can be judged."""
    ordered = sorted(events, key=lambda e: e["seq"])
    losses = sorted(float(e["t_mono"]) for e in ordered if _may_lose_data(e)
                    and e.get("t_mono") is not None)
    # A topic deleted or created again starts a new log: the acks before either say
    # nothing of the new incarnation's HWM (a reset of the floor, as a data-losing fault).
    resets: dict[str, list[float]] = {}
    for e in ordered:
        if e.get("kind") in ("topic_deleted", "topic_created") and e.get("t_mono") is not None:
            resets.setdefault(str(e.get("topic")), []).append(float(e["t_mono"]))
    by_topic = {topic: sorted(losses + times) for topic, times in resets.items()}

    def losses_of(topic: str) -> list[float]:
        return by_topic.get(topic, losses)

    tallies, twice, twice_from = _tallies(TrafficFile(traffic_path), ordered, losses_of)
    unclean_topics = {t.name for t in scenario.every_topic()
                      if str(dict(t.config).get("unclean.leader.election.enable",
                                                 "")).lower() == "true"}
    found: list[dict[str, Any]] = []
    step_t: float | None = None
    index: int | None = None
    for e in ordered:
        if e.get("kind") == "step" and e.get("phase") == "start":
            step_t, index = float(e["t_mono"]), e.get("index")
            continue
        if e.get("kind") != "observation":
            continue
        hwm = (e.get("state") or {}).get("hwm")
        if hwm is None or e.get("t_mono") is None:
            continue
        tp = (str(e.get("topic")), int(e.get("partition") or 0))
        tally = tallies.get(tp)
        if tally is None:
            continue
        t = float(e["t_mono"])
        if step_t is not None and tp[0] not in unclean_topics:
            i = bisect.bisect_left(tally.ack_t, step_t) - 1
            faults = losses_of(tp[0])
            before = bisect.bisect_left(faults, t)  # the faults before this observation
            last_loss = faults[before - 1] if before else None
            if i >= 0 and (last_loss is None or tally.ack_t[i] > last_loss):
                floor = tally.ack_top[i]
                if hwm < floor:
                    found.append({"index": index, "seq": e.get("seq"), "topic": tp[0],
                                  "partition": tp[1], "hwm": hwm, "floor": floor,
                                  "why": f"observed HWM {hwm} of {tp[0]}-{tp[1]} below "
                                         f"{floor}, 1 + the last acks=all acknowledgement "
                                         "before the step started"})
        if not twice and (twice_from.at is None or t < twice_from.at):
            ceiling = bisect.bisect_right(tally.send_t, t)
            if hwm > ceiling:
                found.append({"index": index, "seq": e.get("seq"), "topic": tp[0],
                              "partition": tp[1], "hwm": hwm, "ceiling": ceiling,
                              "why": f"observed HWM {hwm} of {tp[0]}-{tp[1]} above the "
                                     f"{ceiling} record(s) sent to it before the "
                                     "observation"})
    return found


def hwm_drop_allowed(scenario: Scenario, events: Iterable[Mapping[str, Any]]) -> bool:
    """Under traffic the model cannot predict an HWM that goes back: after a fault that may
    lose data it is the safety axis's finding (consumer-hwm-monotonic, lost writes), not a
    release divergence."""
    return has_traffic(scenario) and any(_may_lose_data(e) for e in events)


def note_of(verdict: TrafficVerdict | None) -> dict[str, Any] | None:
    return None if verdict is None else verdict.to_json()


__all__ = ["CONFORMS", "apply_traffic", "budget_of", "check_traffic", "has_traffic",
           "hwm_bound_findings", "hwm_bounded", "hwm_drop_allowed", "model_view", "note_of"]
