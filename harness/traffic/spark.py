"""The traffic checks as one Spark job over a history's `traffic.jsonl`, for histories whose
ids would crowd one process's memory, or to spread over a cluster (on one machine the
in-process checks are faster); `check_history` picks the engine by file size.

Every check is the in-process rule of checks.py as DataFrame operations: per-id and
per-offset facts by groupBy, "never in the final read" by anti-joins, the order of polls
and commits by a window over each session or group ordered by the line number `n`. The
summaries are the same objects with the same counts and the same first examples
(tests/test_traffic_checks.py compares them on one history).

The session is the harness's (harness.infra.spark.session, as the report's), made only
when a history goes to Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)
from pyspark.sql.window import Window

from harness.traffic.checks import LossBudget, Summary, TrafficVerdict, check_file
from harness.traffic.history import FIELDS, NATURAL, TRAFFIC_FILE
from harness.traffic.index import DEFAULT_CLIENT, MSG_TIMED_OUT

#: at or above this size a history goes to Spark: about 17 M events, where the in-process
#: peak passes ~450 MB. Set by memory: in local mode Spark was 7-11 times slower than the
#: in-process checks on 1 M events (docs/TRAFFIC.md "Measured").
DEFAULT_THRESHOLD_BYTES = 2 << 30

TP = ["topic", "partition"]
RECORD = ["id", "topic", "partition", "offset"]


def check_history(path: Path, threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
                  budget: LossBudget | None = None, idempotent: bool | None = None,
                  examples: int = 20, spark: SparkSession | None = None) -> TrafficVerdict:
    """Every check over the history at `path`: in this process below `threshold_bytes`,
    on Spark at or above it (the given session, else the harness's local one; a session on
    a cluster needs `path` on a filesystem its executors share). A history that deletes or
    creates topics is checked in process whatever its size: the Spark engine does not
    know incarnations (docs/TRAFFIC.md "Topics deleted and created again")."""
    from harness.traffic.incarnations import has_topic_life
    if path.stat().st_size < threshold_bytes or has_topic_life(path):
        return check_file(path, budget, idempotent, examples)
    if spark is None:
        from harness.infra.spark import session
        spark = session(app="kafka-chaos-traffic")
    return check_on_spark(spark, path, budget, idempotent, examples)


def check_run(run_dir: Path, **options: Any) -> TrafficVerdict | None:
    """`check_history` of the run's traffic.jsonl; None for a run that recorded none."""
    path = run_dir / TRAFFIC_FILE
    return check_history(path, **options) if path.is_file() else None


def check_on_spark(spark: SparkSession, path: Path, budget: LossBudget | None = None,
                   idempotent: bool | None = None, examples: int = 20) -> TrafficVerdict:
    # parsed once: every line with whether it is well-typed, and only the columns used
    lines = (spark.read.schema(_schema()).json(str(path.resolve()))
             .select(*USED, _well_typed().alias("valid")).cache())
    saved = spark.conf.get(SHUFFLE_PARTITIONS)
    spark.conf.set(SHUFFLE_PARTITIONS, str(_shuffle_partitions(spark, path)))
    try:
        read = _one(lines.agg(F.count(F.lit(1)).alias("all"),
                              _count_where(F.col("valid")).alias("valid")))
        facts = _Facts(lines.filter(F.col("valid")), budget or LossBudget(), examples)
        summaries = [lost_writes(facts), duplicates(facts, idempotent),
                     inconsistent_offsets(facts), lost_after_read(facts), poll_order(facts),
                     commit_order(facts), unseen_acked(facts)]
        facts.unpersist()
    finally:
        lines.unpersist()
        _restore(spark, SHUFFLE_PARTITIONS, saved)
    valid = read["valid"] or 0
    return TrafficVerdict("spark", valid, read["all"] - valid, summaries)


def _restore(spark: SparkSession, key: str, value: str | None) -> None:
    if value is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, value)


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def _shuffle_partitions(spark: SparkSession, path: Path) -> int:
    """One history is small for Spark: Spark's default of 200 partitions a shuffle made
    each of the job's twenty-odd shuffles mostly task overhead. One partition per 32 MB
    of history, at least one per core."""
    cores = spark.sparkContext.defaultParallelism
    return max(cores, path.stat().st_size // (32 << 20))


# --- reading -------------------------------------------------------------------------------

TYPES = {"n": LongType(), "kind": StringType(), "producer": StringType(), "seq": LongType(),
         "id": StringType(), "topic": StringType(), "partition": LongType(),
         "offset": LongType(), "consumer": StringType(), "session": LongType(),
         "group": StringType(), "error": StringType(), "acks": StringType(),
         "idempotent": BooleanType(), "complete": BooleanType(), "t": DoubleType(),
         "incarnation": LongType(), "phase": StringType(), "client": StringType()}
#: the columns the checks use (the others are only checked for their types)
USED = ("n", "kind", "producer", "id", "topic", "partition", "offset", "consumer", "session",
        "group", "acks", "idempotent", "complete", "t", "error", "client")


def _schema() -> StructType:
    return StructType([StructField(name, kind) for name, kind in TYPES.items()])


def _well_typed() -> Column:
    """history.well_typed as a column: a known kind, a line number and every field its
    kind cannot do without (the schema has already nulled what is of another type)."""
    condition = F.lit(False)
    for kind, fields in FIELDS.items():
        required = [F.col(name).isNotNull() for name, test in fields.items() if not test(None)]
        condition = condition | _all([F.col("kind") == kind, *required])
    natural = [F.col(name).isNull() | (F.col(name) >= 0) for name in NATURAL]
    return _all([F.col("n").isNotNull(), condition, *natural])


def _all(conditions: list[Column]) -> Column:
    combined = conditions[0]
    for condition in conditions[1:]:
        combined = combined & condition
    return combined


class _Facts:
    """The frames several checks share, each computed once."""

    def __init__(self, events: DataFrame, budget: LossBudget, examples: int) -> None:
        self.events = events
        self.budget = budget
        self.examples = examples
        self.complete = (self.of("final_read_end").filter(F.col("complete"))
                         .select(*TP).distinct())
        self.final_ids = self.of("final_read").select("id").distinct()
        self.settings = self._settings()
        self.records = self._records().cache()
        self._record_counts: Row | None = None

    def of(self, kind: str) -> DataFrame:
        return self.events.filter(F.col("kind") == kind)

    def _records(self) -> DataFrame:
        """Every acked id at its first ack, with what lost_writes and unseen_acked ask of
        it: judged (its partition's final read is complete), in_final, polled, excused
        (by its producer's acks or the budget), lost, unseen."""
        acked = (self.of("ack").groupBy("id")
                 .agg(*[F.min_by(c, "n").alias(c) for c in ("topic", "partition", "offset")]))
        polled = self.of("poll").select("id").distinct()
        records = (acked.join(_flagged(self.complete, "judged"), TP, "left")
                   .join(_flagged(self.final_ids, "in_final"), "id", "left")
                   .join(_flagged(polled, "polled"), "id", "left")
                   .fillna(False, ["judged", "in_final", "polled"])
                   .join(self.settings, "id", "left")
                   .withColumn("excused", (F.coalesce("acks", F.lit("all")) != "all")
                               | _covered(self.budget)))
        lost = F.col("judged") & ~F.col("in_final")
        return (records.withColumn("lost", lost)
                .withColumn("unseen", ~F.col("polled") & ~F.col("lost")))

    def record_counts(self) -> Row:
        if self._record_counts is None:
            lost = F.col("lost")
            self._record_counts = _one(self.records.agg(
                F.count(F.lit(1)).alias("acked"), _count_where(F.col("judged")).alias("judged"),
                _count_where(lost).alias("lost"),
                _count_where(lost & F.col("excused")).alias("excused"),
                _count_where(F.col("unseen")).alias("unseen")))
        return self._record_counts

    def _settings(self) -> DataFrame:
        """id -> its producer (of its first send) and that producer's first declared
        acks and idempotence, else Kafka's defaults (all, on)."""
        declared = (self.of("producer").groupBy("producer")
                    .agg(F.min_by("acks", "n").alias("acks"),
                         F.min_by("idempotent", "n").alias("idempotent"),
                         F.min_by("client", "n").alias("client")))
        producers = self.of("send").groupBy("id").agg(F.min_by("producer", "n").alias("producer"))
        return (producers.join(declared, "producer", "left")
                .select("id", "producer", F.coalesce("acks", F.lit("all")).alias("acks"),
                        F.coalesce("idempotent", F.lit(True)).alias("idempotent"),
                        F.coalesce("client", F.lit(DEFAULT_CLIENT)).alias("client")))

    def first(self, frame: DataFrame, found: int, order: Iterable[Column | str],
              shape: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
        """The first examples in `order`, if any were `found` (else no job is run)."""
        if not found:
            return []
        rows = frame.orderBy(*order).limit(self.examples).collect()
        return [shape(row.asDict(recursive=True)) for row in rows]

    def unpersist(self) -> None:
        self.records.unpersist()


def _flagged(frame: DataFrame, flag: str) -> DataFrame:
    """`frame` with a column `flag` that is true; after a left join, false where absent."""
    return frame.withColumn(flag, F.lit(True))


def _offset_key() -> list[Column | str]:
    return ["topic", "partition", F.coalesce("offset", F.lit(-1)), "id"]


def _one(frame: DataFrame) -> Row:
    row = frame.first()
    assert row is not None, "an aggregate without groups has one row"
    return row


def _count_where(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0))


# --- the checks ----------------------------------------------------------------------------

def lost_writes(facts: _Facts) -> Summary:
    counted = facts.record_counts()
    lost, excused = counted["lost"] or 0, counted["excused"] or 0
    judged = counted["judged"] or 0
    counts = {"acked": judged, "unjudged": counted["acked"] - judged, "lost": lost,
              "excused": excused, "counted": lost - excused}
    found = facts.first(facts.records.filter(F.col("lost")), lost, ["excused", *_offset_key()],
                        lambda r: {k: r[k] for k in (*RECORD, "producer", "excused")})
    return Summary("lost_writes", counts["counted"] <= facts.budget.records, counts, found)


def _covered(budget: LossBudget) -> Column:
    if budget.unlimited:
        return F.lit(True)
    covered = F.lit(False)
    for (topic, partition), (first, end) in budget.offsets.items():
        covered = covered | ((F.col("topic") == topic) & (F.col("partition") == partition)
                             & (F.col("offset") >= first) & (F.col("offset") < end))
    return F.coalesce(covered, F.lit(False))


def _positions(facts: _Facts) -> DataFrame:
    acked = facts.of("ack").filter(F.col("offset").isNotNull())
    return (acked.select(*RECORD).unionByName(facts.of("poll").select(*RECORD))
            .unionByName(facts.of("final_read").select(*RECORD)).distinct())


def duplicates(facts: _Facts, idempotent: bool | None) -> Summary:
    strict = F.coalesce("idempotent", F.lit(True)) if idempotent is None else F.lit(idempotent)
    multi = (_positions(facts).groupBy("id")
             .agg(F.count(F.lit(1)).alias("k"),
                  F.collect_list(F.struct(*TP, "offset")).alias("positions"),
                  F.countDistinct(*TP).alias("logs"), F.max("offset").alias("highest"))
             .filter(F.col("k") > 1).join(facts.settings, "id", "left")
             .withColumn("strict", strict))
    bumped = _client_epoch_bump(facts, multi.filter(F.col("strict")))
    multi = (multi.join(_flagged(bumped, "bump"), "id", "left").fillna(False, ["bump"])
             .withColumn("allowed", F.when(~F.col("strict"), F.lit("retries"))
                         .when(F.col("bump"), F.lit("client_epoch_bump"))))
    counted = _one(multi.agg(F.count(F.lit(1)).alias("ids"),
                             _count_where(F.col("allowed").isNull()).alias("failures"),
                             _count_where(F.col("bump")).alias("bump")))
    ids, failures, bump = counted["ids"], counted["failures"] or 0, counted["bump"] or 0
    counts = {"ids": ids, "failures": failures, "allowed_by_retries": ids - failures - bump,
              "allowed_by_client_epoch_bump": bump}
    found = facts.first(multi, ids, [F.col("allowed").isNotNull(), "id"], _duplicate_example)
    return Summary("duplicates", failures == 0, counts, found)


def _client_epoch_bump(facts: _Facts, strict: DataFrame) -> DataFrame:
    """The ids of `strict` (idempotent duplicates) that checks.client_epoch_bump allows:
    librdkafka's, in one log, a MSG_TIMED_OUT of their producer in (sent, answered], and
    acknowledged (if at all) at their highest offset."""
    sent = facts.of("send").groupBy("id").agg(F.min_by("t", "n").alias("sent"))
    answers = facts.of("ack").unionByName(facts.of("send_error")).filter(F.col("t").isNotNull())
    answered = answers.groupBy("id").agg(F.min_by("t", "n").alias("answered"))
    first_ack = (facts.of("ack").groupBy("id")
                 .agg(F.min_by("offset", "n").alias("acked_offset"))
                 .withColumn("acked", F.lit(True)))
    timeouts = (facts.of("send_error")
                .filter((F.col("error") == MSG_TIMED_OUT) & F.col("t").isNotNull())
                .select(F.col("producer").alias("timed_out"), F.col("t").alias("te")))
    candidates = (strict.filter(F.col("client").startswith("librdkafka") & (F.col("logs") == 1))
                  .join(sent, "id").join(answered, "id").join(first_ack, "id", "left")
                  .filter(F.col("acked").isNull()
                          | F.coalesce(F.col("acked_offset") == F.col("highest"), F.lit(False))))
    window = ((F.col("producer") == F.col("timed_out")) & (F.col("te") > F.col("sent"))
              & (F.col("te") <= F.col("answered")))
    return candidates.join(timeouts, window, "left_semi").select("id")


def _duplicate_example(row: dict[str, Any]) -> dict[str, Any]:
    positions = sorted([p["topic"], p["partition"], p["offset"]] for p in row["positions"])
    return {"id": row["id"], "idempotent": row["strict"], "allowed": row["allowed"],
            "positions": positions}


def inconsistent_offsets(facts: _Facts) -> Summary:
    reads = (facts.of("poll").select(*RECORD)
             .unionByName(facts.of("final_read").select(*RECORD)).distinct())
    per_offset = (reads.groupBy(*TP, "offset")
                  .agg(F.sort_array(F.collect_list("id")).alias("ids")))
    conflict = F.size("ids") > 1
    counted = _one(per_offset.agg(F.count(F.lit(1)).alias("offsets_read"),
                                  _count_where(conflict).alias("offsets")))
    counts = {"offsets_read": counted["offsets_read"], "offsets": counted["offsets"] or 0}
    found = facts.first(per_offset.filter(conflict), counts["offsets"], [*TP, "offset"],
                        lambda r: r)
    return Summary("inconsistent_offsets", counts["offsets"] == 0, counts, found)


def lost_after_read(facts: _Facts) -> Summary:
    """Per polled id (in a partition with a complete final read): displaced at any polled
    position, and the first such position."""
    polled = facts.of("poll").select(*RECORD).distinct().join(facts.complete, TP)
    final_at = (facts.of("final_read").groupBy(*TP, "offset")
                .agg(F.min_by("id", "n").alias("final_id")))
    judged = (polled.join(final_at, [*TP, "offset"], "left")
              .join(_flagged(facts.final_ids, "in_final"), "id", "left")
              .fillna(False, ["in_final"]))
    displaced = ~F.col("in_final") | (F.col("final_id").isNotNull()
                                      & (F.col("final_id") != F.col("id")))
    per_id = (judged.groupBy("id")
              .agg(F.min(F.when(displaced, F.struct(*TP, "offset", "final_id"))).alias("at"),
                   F.max("in_final").alias("in_final"))
              .withColumn("lost", F.col("at").isNotNull()))
    counted = _one(per_id.agg(F.count(F.lit(1)).alias("polled"),
                              _count_where(F.col("lost")).alias("lost"),
                              _count_where(F.col("lost") & F.col("in_final")).alias("replaced")))
    lost, replaced = counted["lost"] or 0, counted["replaced"] or 0
    counts = {"polled": counted["polled"], "lost": lost, "absent": lost - replaced,
              "replaced": replaced}
    found = facts.first(per_id.filter(F.col("lost")).select("id", "at.*", "in_final"), lost,
                        [*TP, "offset", "id"], lambda r: r)
    return Summary("lost_after_read", lost == 0, counts, found)


def _order_breaks(facts: _Facts, kind: str, keys: list[str],
                  rule: Callable[[Column, Column], Column]) -> DataFrame:
    window = Window.partitionBy(*keys).orderBy("n")
    return (facts.of(kind).withColumn("previous", F.lag("offset").over(window))
            .withColumn("break", rule(F.col("previous"), F.col("offset"))))


def poll_order(facts: _Facts) -> Summary:
    polls = _order_breaks(facts, "poll", ["consumer", "session", *TP],
                          lambda previous, offset: F.when(offset <= previous, "back")
                          .when(offset > previous + 1, "skip"))
    counted = _one(polls.agg(F.count(F.lit(1)).alias("polls"),
                             _count_where(F.col("break") == "back").alias("back"),
                             _count_where(F.col("break") == "skip").alias("skip")))
    counts = {name: counted[name] or 0 for name in ("polls", "back", "skip")}
    fields = ("consumer", "session", *TP, "previous", "offset", "break")
    found = facts.first(polls.filter(F.col("break").isNotNull()),
                        counts["back"] + counts["skip"], ["n"],
                        lambda r: {**{k: r[k] for k in fields}, "line": r["n"]})
    return Summary("poll_order", counts["back"] + counts["skip"] == 0, counts, found)


def commit_order(facts: _Facts) -> Summary:
    commits = _order_breaks(facts, "commit", ["group", *TP],
                            lambda previous, offset: F.when(offset < previous, "back"))
    counted = _one(commits.agg(F.count(F.lit(1)).alias("commits"),
                               _count_where(F.col("break") == "back").alias("back")))
    counts = {name: counted[name] or 0 for name in ("commits", "back")}
    fields = ("group", "consumer", *TP, "previous", "offset", "break")
    found = facts.first(commits.filter(F.col("break").isNotNull()), counts["back"], ["n"],
                        lambda r: {**{k: r[k] for k in fields}, "line": r["n"]})
    return Summary("commit_order", counts["back"] == 0, counts, found)


def unseen_acked(facts: _Facts) -> Summary:
    counted = facts.record_counts()
    counts = {"acked": counted["acked"], "unseen": counted["unseen"] or 0}
    found = facts.first(facts.records.filter(F.col("unseen")), counts["unseen"],
                        _offset_key(), lambda r: {k: r[k] for k in RECORD})
    return Summary("unseen_acked", counts["unseen"] == 0, counts, found)
