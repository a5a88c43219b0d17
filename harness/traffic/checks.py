"""Checks over a traffic history (docs/TRAFFIC.md "Checks"), after Jepsen's Kafka queue
workload, plus the model's fault budget for lost writes.

Each check is a function over the streamed history (any iterable of events, e.g. a
`TrafficFile`) or over a `TrafficIndex` already built from one, and returns a `Summary`:
`ok`, counts and the first examples in a fixed order. `check_events` builds the index once
and runs them all. spark.py computes the same summaries on Spark; both must agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.traffic.columns import ABSENT
from harness.traffic.history import TrafficFile
from harness.traffic.incarnations import Incarnations
from harness.traffic.index import Smallest, TrafficIndex

Source = Iterable[Mapping[str, Any]] | TrafficIndex

#: one line per check: its rule, and whether a failure is UNSAFE (False: liveness, reported)
RULES: dict[str, tuple[str, bool]] = {
    "lost_writes": ("an acknowledged record missing from the complete final read of its "
                    "partition, beyond what the faults may lose (LossBudget)", True),
    "duplicates": ("one id at two (partition, offset) positions, acked, polled or finally "
                   "read; a failure when its producer is idempotent, unless librdkafka's "
                   "epoch bump after a message timeout wrote it (client_epoch_bump)", True),
    "inconsistent_offsets": ("one (topic, partition, offset) read with two ids, by any "
                             "consumers or the final read, at any time", True),
    "lost_after_read": ("an id polled, then absent from the complete final read, or its "
                        "polled offset holding another id there", True),
    "poll_order": ("within one consumer session a partition's polled offsets go up by one: "
                   "no going back, no repeat, no skip", True),
    "commit_order": ("a group's committed offset of a partition never goes back", True),
    "unseen_acked": ("an acknowledged record no consumer ever polled, not counted lost "
                     "(liveness: reported, not UNSAFE)", False),
}
CHECKS = tuple(RULES)


@dataclass(frozen=True)
class Summary:
    """One check's answer. `ok` False is a failure of its rule; `counts` say what was
    judged and found (including what was found but allowed); `examples` are the first
    findings in the check's order."""
    name: str
    ok: bool
    counts: dict[str, int]
    examples: list[dict[str, Any]]

    @property
    def rule(self) -> str:
        return RULES[self.name][0]

    @property
    def unsafe(self) -> bool:
        return not self.ok and RULES[self.name][1]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "unsafe": self.unsafe,
                "counts": self.counts, "examples": self.examples}


@dataclass(frozen=True)
class LossBudget:
    """What the run's faults may lose of acknowledged acks=all records (the model's part).
    A lost record is excused when `unlimited`, or when its acked offset lies in
    `offsets[(topic, partition)]` = [first, end); up to `records` more may be lost
    anywhere. A loss within the budget is reported; one beyond it fails (UNSAFE)."""
    records: int = 0
    offsets: Mapping[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    unlimited: bool = False
    why: str = "no fault may lose an acknowledged acks=all record"

    def covers(self, topic: str, partition: int, offset: int | None) -> bool:
        if self.unlimited:
            return True
        span = self.offsets.get((topic, partition))
        return span is not None and offset is not None and span[0] <= offset < span[1]

    @classmethod
    def for_lost_replicas(cls, lost_replicas: int, min_isr: int) -> LossBudget:
        """The KIP's guarantee, as the safety axis applies it to the scenario records:
        acks=all records survive while at most min ISR - 1 replicas lose unflushed data;
        past that, the faults may lose anything."""
        if lost_replicas > max(min_isr - 1, 0):
            return cls(unlimited=True, why=f"{lost_replicas} replica(s) lost unflushed data, "
                                           f"beyond min ISR - 1 = {min_isr - 1}")
        return cls(why=f"{lost_replicas} replica(s) lost unflushed data, within min ISR - 1 "
                       f"= {max(min_isr - 1, 0)}: no acks=all record may be lost")


@dataclass(frozen=True)
class TrafficVerdict:
    """Every check's summary over one history, and how it was read."""
    engine: str  # "in-process" or "spark"
    events: int  # well-typed events read
    skipped_lines: int  # lines that were not (a torn last line, a corrupt one)
    summaries: list[Summary]
    #: A history that deletes or creates topics: what that did to the traffic
    #: (incarnations.Incarnations.summary); None for one that does not.
    incarnations: dict[str, Any] | None = None

    @property
    def unsafe(self) -> list[Summary]:
        return [s for s in self.summaries if s.unsafe]

    def by_name(self) -> dict[str, Summary]:
        return {s.name: s for s in self.summaries}

    def safety_findings(self) -> list[dict[str, Any]]:
        """The failures that make the safety axis UNSAFE, as the axis lists its findings."""
        return [{"rule": f"traffic-{s.name}", "records": s.examples,
                 "why": f"{s.name}: {_counted(s.counts)} ({s.rule})"} for s in self.unsafe]

    def to_json(self) -> dict[str, Any]:
        out = {"engine": self.engine, "events": self.events,
               "skipped_lines": self.skipped_lines,
               "checks": [s.to_json() for s in self.summaries]}
        if self.incarnations is not None:
            out["incarnations"] = self.incarnations
        return out


def _counted(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


#: (topic, partition) -> its log start at the end of the run, for partitions whose log start
#: moved by retention (tiered storage, harness/judge/tiered.py): what lies below it was
#: deleted by retention, neither lost nor displaced; whether the log start moved only by
#: retention is judged apart (the tiered-log-start-by-retention check).
Retained = Mapping[tuple[str, int], int]


def check_file(path: Path, budget: LossBudget | None = None, idempotent: bool | None = None,
               examples: int = 20, retained: Retained | None = None) -> TrafficVerdict:
    """Every check in this process, streaming the file once (twice when it deletes or
    creates topics: their lives first, then each incarnation as a log of its own,
    incarnations.py)."""
    history = TrafficFile(path)
    lives = Incarnations.scan(history)
    if lives is None:
        index = TrafficIndex.build(history, examples)
        return TrafficVerdict("in-process", index.events, history.skipped,
                              check_events(index, budget, idempotent, retained=retained))
    index = TrafficIndex.build(lives.relabel(history), examples)
    lives.resolve(index)
    return TrafficVerdict("in-process", index.events + lives.indeterminate, history.skipped,
                          check_events(index, budget, idempotent, lives=lives,
                                       retained=retained),
                          incarnations=lives.summary())


def check_lives(source: Iterable[Mapping[str, Any]], budget: LossBudget | None = None,
                idempotent: bool | None = None, examples: int = 20
                ) -> tuple[list[Summary], dict[str, Any] | None]:
    """``check_events`` over a list of events that may delete and create topics, and what
    that did (None: it did neither), as ``check_file`` does."""
    events = [dict(e) for e in source]
    lives = Incarnations.scan(events)
    if lives is None:
        return check_events(events, budget, idempotent, examples), None
    index = TrafficIndex.build(lives.relabel(events), examples)
    lives.resolve(index)
    return check_events(index, budget, idempotent, lives=lives), lives.summary()


def index_of(source: Source, examples: int = 20) -> TrafficIndex:
    return source if isinstance(source, TrafficIndex) else TrafficIndex.build(source, examples)


def check_events(source: Source, budget: LossBudget | None = None,
                 idempotent: bool | None = None, examples: int = 20,
                 lives: Incarnations | None = None,
                 retained: Retained | None = None) -> list[Summary]:
    """Every check over one streamed pass, in CHECKS order; ``lives``: the index was built
    from ``lives.relabel`` (each incarnation of a topic its own log)."""
    index = index_of(source, examples)
    gone = lives.gone_logs() if lives is not None else None
    return [lost_writes(index, budget, gone, retained),
            duplicates(index, idempotent, lives is not None),
            inconsistent_offsets(index), lost_after_read(index, retained), poll_order(index),
            commit_order(index), unseen_acked(index, gone)]


def _topic_partition(index: TrafficIndex, partition: int) -> tuple[str, int]:
    return index.partitions.keys[partition]


def _record_key(item: Mapping[str, Any]) -> tuple[Any, ...]:
    offset = -1 if item["offset"] is None else item["offset"]
    return item["topic"], item["partition"], offset, item["id"]


# --- lost writes ---------------------------------------------------------------------------

def lost_writes(source: Source, budget: LossBudget | None = None,
                gone: set[str] | None = None, retained: Retained | None = None) -> Summary:
    """Acked, in a partition whose final read is complete, and not in that read. Excused:
    records of a producer without acks=all, and what `budget` covers; the rest count, and
    more of them than `budget.records` fail. ``gone``: logs deleted by request
    (incarnations.py): their acked records are counted ``gone_by_request``, never lost."""
    index, budget = index_of(source), budget or LossBudget()
    counts = {"acked": 0, "unjudged": 0, "lost": 0, "excused": 0, "counted": 0}
    if gone is not None:
        counts["gone_by_request"] = 0
    first = Smallest(index.examples, _lost_key)
    for id_number, partition, offset in index.acked():
        if gone and index.partitions.keys[partition][0] in gone:
            counts["gone_by_request"] += 1
            continue
        if partition not in index.complete:
            counts["unjudged"] += 1
            continue
        counts["acked"] += 1
        if index.in_final[id_number] == 1:
            continue
        if _below_log_start(index, partition, offset, retained):
            counts["deleted_by_retention"] = counts.get("deleted_by_retention", 0) + 1
            continue
        item = _lost_item(index, id_number, partition, offset, budget)
        counts["lost"] += 1
        counts["excused" if item["excused"] else "counted"] += 1
        first.add(item)
    return Summary("lost_writes", counts["counted"] <= budget.records, counts, first.items())


def _lost_item(index: TrafficIndex, id_number: int, partition: int, offset: int | None,
               budget: LossBudget) -> dict[str, Any]:
    topic, number = _topic_partition(index, partition)
    acks, _ = index.producer_settings(id_number)
    excused = acks != "all" or budget.covers(topic, number, offset)
    return {"id": index.ids.keys[id_number], "topic": topic, "partition": number,
            "offset": offset, "producer": index.producer_name(id_number), "excused": excused}


def _lost_key(item: Mapping[str, Any]) -> tuple[Any, ...]:
    return (item["excused"], *_record_key(item))


# --- duplicates ----------------------------------------------------------------------------

def duplicates(source: Source, idempotent: bool | None = None,
               lives: bool = False) -> Summary:
    """Ids at more than one position. Each fails when its producer is idempotent (as
    declared, else Kafka's default: on), unless `idempotent` overrides the declarations;
    without idempotence a retry may write a record twice: counted as allowed. ``lives``
    (each incarnation of a topic its own log): an id once in each of several logs is
    ``across_incarnations``, allowed (written to a log deleted since, its answer lost with
    the deletion, retried into the new one). An idempotent librdkafka producer's duplicate
    that `client_epoch_bump` allows is counted ``allowed_by_client_epoch_bump``."""
    index = index_of(source)
    counts = {"ids": 0, "failures": 0, "allowed_by_retries": 0,
              "allowed_by_client_epoch_bump": 0}
    if lives:
        counts["across_incarnations"] = 0
    first = Smallest(index.examples, _duplicate_key)
    for id_number, positions in index.positions.more.items():
        strict = index.producer_settings(id_number)[1] if idempotent is None else idempotent
        counts["ids"] += 1
        logs = [index.partitions.keys[p][0] for p, _ in positions]
        if lives and len(set(logs)) == len(logs):
            counts["across_incarnations"] += 1
            continue
        allowed = ("retries" if not strict else
                   "client_epoch_bump" if client_epoch_bump(index, id_number, positions)
                   else None)
        counts["failures" if allowed is None else f"allowed_by_{allowed}"] += 1
        first.add({"id": index.ids.keys[id_number], "idempotent": strict, "allowed": allowed,
                   "positions": sorted([*_topic_partition(index, p), o] for p, o in positions)})
    return Summary("duplicates", counts["failures"] == 0, counts, first.items())


def _duplicate_key(item: Mapping[str, Any]) -> tuple[bool, str]:
    """Failures first, then the allowed ones, each by id."""
    return item["allowed"] is not None, item["id"]


def client_epoch_bump(index: TrafficIndex, id_number: int,
                      positions: Iterable[tuple[int, int]]) -> bool:
    """A duplicate librdkafka itself writes: after records time out (message.timeout.ms),
    an idempotent librdkafka producer bumps its epoch and re-sends, numbered from 0 under
    the new epoch, records whose earlier request failed in flight after the broker wrote
    them; the broker cannot recognise them and writes them again (src/rdkafka_broker.c,
    rd_kafka_toppar_producer_serve -> rd_kafka_idemp_drain_epoch_bump; librdkafka's
    INTRODUCTION.md "Message timeout considerations"; confluentinc/librdkafka issue 4953;
    seen with librdkafka's debug log: bench/RESULTS-traffic.md "Duplicates of the idempotent
    librdkafka producer"). Allowed when all hold: (1) the producer is librdkafka's; (2) every
    copy is in one partition (one log); (3) the producer (any partition: the bump is
    producer-wide) reported a MSG_TIMED_OUT after the id was sent and no later than the
    id's own answer; (4) an acknowledged id was acknowledged at its highest offset (the
    re-send is the later copy: an answered write is never re-sent). Its weakness: the
    history cannot see the epoch, so a producer timing out for a long stretch has every
    duplicate sent in it allowed."""
    if not index.client_of(id_number).startswith("librdkafka"):
        return False
    copies = list(positions)
    if len({partition for partition, _ in copies}) != 1:
        return False
    if not index.timed_out_between(id_number):
        return False
    if index.acked_partition[id_number] == ABSENT:
        return True
    return index.acked_offset[id_number] == max(offset for _, offset in copies)


# --- inconsistent offsets ------------------------------------------------------------------

def inconsistent_offsets(source: Source) -> Summary:
    """Offsets read (polled or finally read) with more than one id."""
    index = index_of(source)
    first = Smallest(index.examples, lambda item: (item["topic"], item["partition"],
                                                   item["offset"]))
    for (partition, offset), ids in index.conflicts.items():
        topic, number = _topic_partition(index, partition)
        first.add({"topic": topic, "partition": number, "offset": offset,
                   "ids": sorted(index.ids.keys[i] for i in ids)})
    counts = {"offsets_read": index.offsets_read(), "offsets": len(index.conflicts)}
    return Summary("inconsistent_offsets", not index.conflicts, counts, first.items())


# --- lost after read -----------------------------------------------------------------------

def _below_log_start(index: TrafficIndex, partition: int, offset: int | None,
                     retained: Retained | None) -> bool:
    """Whether a record at ``offset`` lies below its partition's final log start (deleted
    by retention: ``Retained``)."""
    if not retained or offset is None:
        return False
    start = retained.get(_topic_partition(index, partition))
    return start is not None and offset < start


def lost_after_read(source: Source, retained: Retained | None = None) -> Summary:
    """Polled ids displaced at the end: at a polled position in a partition whose final
    read is complete, the id is in no final read ("absent") or that offset holds another
    id there ("replaced"). Each id once, at its first displaced position."""
    index = index_of(source)
    counts = {"polled": 0, "lost": 0, "absent": 0, "replaced": 0}
    first = Smallest(index.examples, _record_key)
    for id_number in range(len(index.ids)):
        judged = [p for p in index.positions.polled_of(id_number) if p[0] in index.complete
                  and not _below_log_start(index, p[0], p[1], retained)]
        if not judged:
            continue
        counts["polled"] += 1
        displaced = sorted(_displaced(index, id_number, judged))
        if displaced:
            item = _displaced_item(index, id_number, displaced[0])
            counts["lost"] += 1
            counts["replaced" if item["in_final"] else "absent"] += 1
            first.add(item)
    return Summary("lost_after_read", counts["lost"] == 0, counts, first.items())


def _displaced(index: TrafficIndex, id_number: int,
               positions: list[tuple[int, int]]) -> list[tuple[str, int, int]]:
    absent = index.in_final[id_number] != 1
    out = []
    for partition, offset in positions:
        final = index.final_id(partition, offset)
        if absent or final not in (ABSENT, id_number):
            out.append((*_topic_partition(index, partition), offset))
    return out


def _displaced_item(index: TrafficIndex, id_number: int,
                    position: tuple[str, int, int]) -> dict[str, Any]:
    topic, partition, offset = position
    final = index.final_id(index.partitions.find((topic, partition)), offset)
    return {"id": index.ids.keys[id_number], "topic": topic, "partition": partition,
            "offset": offset, "final_id": None if final == ABSENT else index.ids.keys[final],
            "in_final": index.in_final[id_number] == 1}


# --- order of polls and commits ------------------------------------------------------------

def poll_order(source: Source) -> Summary:
    """Judged while streaming (TrafficIndex.polls, index.poll_break)."""
    index = index_of(source)
    counts = {"polls": index.polls.seen, "back": index.polls.breaks.get("back", 0),
              "skip": index.polls.breaks.get("skip", 0)}
    ok = counts["back"] + counts["skip"] == 0
    return Summary("poll_order", ok, counts, list(index.polls.examples))


def commit_order(source: Source) -> Summary:
    """Judged while streaming (TrafficIndex.commits, index.commit_break)."""
    index = index_of(source)
    counts = {"commits": index.commits.seen, "back": index.commits.breaks.get("back", 0)}
    return Summary("commit_order", counts["back"] == 0, counts, list(index.commits.examples))


# --- unseen --------------------------------------------------------------------------------

def unseen_acked(source: Source, gone: set[str] | None = None) -> Summary:
    """Acked ids no consumer polled, leaving out those lost_writes counts as lost and
    those of a log deleted by request (``gone``)."""
    index = index_of(source)
    counts = {"acked": 0, "unseen": 0}
    first = Smallest(index.examples, _record_key)
    for id_number, partition, offset in index.acked():
        counts["acked"] += 1
        if index.polled[id_number] == 1 or index.lost(id_number, partition):
            continue
        if gone and index.partitions.keys[partition][0] in gone:
            continue
        counts["unseen"] += 1
        topic, number = _topic_partition(index, partition)
        first.add({"id": index.ids.keys[id_number], "topic": topic, "partition": number,
                   "offset": offset})
    return Summary("unseen_acked", counts["unseen"] == 0, counts, first.items())
