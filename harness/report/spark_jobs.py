"""The Spark side: read events with an explicit schema and run the data checks.

Two jobs do the work. The first parses every line once (with the full schema, so a line
that does not fit it is counted as corrupt), projects it to the columns the checks need
(plus the timeline fields of the rare observation/fault/prediction/verdict events),
hash-partitions by run_id (one run per partition where the hash allows), sorts by
(run_id, seq), numbers the reads with the run-level window and caches the result. The
second job runs the five checks and collects the timeline events from that cache in one
query. Every window, aggregation and join after the cache is keyed by run_id first, so
none shuffles again: on a cluster each run's events are judged on one executor and runs
spread across executors. The checks mirror harness/datachecks.py (the runner's
implementation); tests prove the two agree on the same histories.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

_IDS = T.ArrayType(T.LongType())
STATE = T.StructType([
    T.StructField("leader", T.LongType()), T.StructField("leader_epoch", T.LongType()),
    T.StructField("isr", _IDS), T.StructField("elr", _IDS),
    T.StructField("last_known_elr", _IDS), T.StructField("hwm", T.LongType()),
    T.StructField("fenced", _IDS),
])
EVENT_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()), T.StructField("seq", T.LongType()),
    T.StructField("t_wall", T.DoubleType()), T.StructField("kind", T.StringType()),
    T.StructField("record_id", T.StringType()), T.StructField("topic", T.StringType()),
    T.StructField("partition", T.LongType()), T.StructField("acks", T.StringType()),
    T.StructField("offset", T.LongType()), T.StructField("error", T.StringType()),
    T.StructField("state", STATE), T.StructField("source", T.LongType()),
    T.StructField("action", T.StringType()), T.StructField("index", T.LongType()),
    T.StructField("verdict", T.StringType()), T.StructField("reason", T.StringType()),
    T.StructField("phase", T.StringType()), T.StructField("allowed", T.ArrayType(STATE)),
    T.StructField("records", T.LongType()), T.StructField("complete", T.BooleanType()),
    T.StructField("_corrupt_record", T.StringType()),
])
TIMELINE_KINDS = ("observation", "fault", "prediction", "verdict")
TIMELINE_FIELDS = ("t_wall", "state", "action", "index", "verdict", "reason", "allowed")
# Read by no check or timeline, kept in `tl` so that the parser still checks them (see
# read_events).
_UNUSED_FIELDS = ("source", "phase", "records")


def session(master: str | None = None) -> SparkSession:
    if not master:
        # Local mode talks to itself only: keep the driver on loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("kafka-chaos-report")
    if master:
        builder = builder.master(master)
    elif not SparkSession.getActiveSession():
        builder = builder.master("local[2]")
    spark = (builder.config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "8")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _prepare(spark: SparkSession) -> None:
    # Joins of two run_id-partitioned sides need no shuffle (the default would re-shuffle
    # both by all join keys).
    spark.conf.set("spark.sql.requireAllClusterKeysForCoPartition", "false")


class Events(NamedTuple):
    """What read_events gives: the cached frame the checks run on, the number of unreadable
    lines and the number of (readable) events per run_id."""
    frame: DataFrame
    corrupt_lines: int
    counts: dict[str, int]


def read_events(spark: SparkSession, files: list[str],
                run_sizes: dict[str, int] | None = None) -> Events:
    """Parse every line once and cache what the checks and timelines need. `run_sizes`
    (run_id -> bytes of events, as far as known up front) chooses the partition count.

    A torn last line of a crashed run lands in _corrupt_record; it is counted and dropped,
    as is a line without run_id. The frame is hash-partitioned by run_id and sorted by
    (run_id, seq) within partitions; it holds the check columns of ack, consume and
    observation events, `read_id` (the number of the read a consume event belongs to),
    `gap_after` (where a consume event skips offsets: the previous offset of its read) and
    `tl`, the timeline fields of timeline events. Produce events are needed only as read
    boundaries, so they are dropped once the reads are known."""
    _prepare(spark)
    raw = spark.read.schema(EVENT_SCHEMA).option("mode", "PERMISSIVE").json(files)
    corrupt = F.col("_corrupt_record").isNotNull()
    good = ~corrupt & F.col("run_id").isNotNull()
    kind = F.col("kind")
    # Every schema field is referenced below, so the JSON parser gets the full schema and a
    # line with a wrongly typed field anywhere is corrupt (Spark prunes unreferenced ones).
    timeline = F.when(kind.isin(*TIMELINE_KINDS), F.struct(*TIMELINE_FIELDS, *_UNUSED_FIELDS))
    slim = raw.select(
        F.when(good, F.col("run_id")).alias("run_id"), corrupt.alias("corrupt"), "seq", "kind",
        F.when(kind.isin("ack", "consume"), F.col("record_id")).alias("record_id"),
        "topic", "partition", F.when(kind == "ack", F.col("acks")).alias("acks"), "offset",
        (F.col("offset").isNotNull()
         & (F.col("error").isNull() | (F.col("error") == ""))).alias("ack_ok"),
        F.col("state.hwm").alias("hwm"), timeline.alias("tl"),
        F.when(kind == "read", F.coalesce(F.col("complete"), F.lit(True))).alias("complete"))
    parts = _run_partitions(spark, run_sizes or {})
    by_run = slim.repartition(parts, "run_id") if parts else slim.repartition("run_id")
    ordered = by_run.sortWithinPartitions("run_id", "seq")
    frame = _reads(ordered).persist(StorageLevel.MEMORY_AND_DISK)
    counts: dict[str, int] = {}
    n_corrupt = 0
    for row in frame.groupBy("run_id").agg(F.max("run_events").alias("events"),
                                           F.sum(F.col("corrupt").cast("long")).alias("bad"))\
            .collect():
        n_corrupt += row["bad"] or 0
        if row["run_id"] is not None:
            counts[row["run_id"]] = row["events"]
    return Events(frame.where(F.col("run_id").isNotNull()), n_corrupt, counts)


def _run_partitions(spark: SparkSession, run_sizes: dict[str, int]) -> int | None:
    """How many hash partitions by run_id: a run is the unit of work (its events are judged
    in order by one task), so the count is chosen, from the number of runs up, to spread
    the known runs evenly: ideally one run per partition, never several large runs in one
    task while others idle. None (the session's shuffle partitions) for very many runs,
    where hashing spreads them well anyway."""
    if not run_sizes or len(run_sizes) > 512:
        return None
    ids = sorted(run_sizes)
    # Spark's own hash of each run_id, as HashPartitioning computes it (pmod by the count)
    row = spark.range(1).select(*(F.hash(F.lit(rid)).alias(f"h{i}")
                                  for i, rid in enumerate(ids))).first()
    assert row is not None
    hashes = [int(row[i]) for i in range(len(ids))]
    low = max(len(ids), spark.sparkContext.defaultParallelism)
    best: tuple[int, int] | None = None
    for n in range(low, 2 * low + 8):
        load = [0] * n
        for rid, h in zip(ids, hashes, strict=True):
            load[h % n] += run_sizes[rid]
        if best is None or max(load) < best[0]:
            best = (max(load), n)
    return best[1] if best else None


def _reads(ev: DataFrame) -> DataFrame:
    """Number consume events by read, as harness/datachecks.py does: where a run has `read`
    events (schema 1.1) a read is the consume events since the run's previous `read`
    event, which closes it (read_id = read events before; the closing event has the same
    id); otherwise a read is a run of consecutive consume events of one partition (any
    other event in between ends it). `ev` is partitioned by run_id and sorted by
    (run_id, seq), so no window here shuffles or sorts again."""
    by_run = Window.partitionBy("run_id").orderBy("seq")
    whole_run = by_run.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    is_read = (F.col("kind") == "read").cast("int")
    flagged = ev.select(
        "*", F.lag("kind").over(by_run).alias("prev_kind"),
        F.lag("topic").over(by_run).alias("prev_topic"),
        F.lag("partition").over(by_run).alias("prev_partition"),
        F.lag("offset").over(by_run).alias("prev_offset"),
        F.lag(F.lit(1)).over(by_run).isNull().alias("first"),
        F.count(F.lit(1)).over(whole_run).alias("run_events"),
        F.max(is_read).over(whole_run).alias("has_reads"))
    new_read = (F.col("kind") == "consume") & (
        F.col("prev_kind").isNull() | (F.col("prev_kind") != "consume")
        | (F.col("prev_topic") != F.col("topic"))
        | (F.col("prev_partition") != F.col("partition")))
    # A consume event that does not start a read follows a consume event of the same read;
    # a gap is an offset other than that event's + 1.
    in_read = (F.col("kind") == "consume") & ~F.coalesce(new_read, F.lit(False))
    gap_after = F.when(in_read & F.col("prev_offset").isNotNull()
                       & (F.col("offset") != F.col("prev_offset") + 1), F.col("prev_offset"))
    # Keep what the checks and timelines read (and one row per run for its event count).
    # The dropped events are neither consume nor read events: their new_read and is_read
    # are 0, so the running sums below number the reads as over all events.
    keep = (F.col("kind").isin("ack", "consume", "observation", "read")
            | F.col("tl").isNotNull() | F.col("first") | F.col("corrupt"))
    kept = flagged.select("*", new_read.cast("int").alias("new_read"), is_read.alias("is_read"),
                          gap_after.alias("gap_after")).where(keep)
    closed = F.sum("is_read").over(by_run) - F.col("is_read")
    runs_of_consumes = F.sum("new_read").over(by_run)
    return kept.withColumn("read_id", F.when(F.col("has_reads") == 1, closed)
                           .otherwise(runs_of_consumes)) \
        .drop("prev_kind", "prev_topic", "prev_partition", "prev_offset", "first", "new_read",
              "is_read")


def collect_facts(events: DataFrame, limit: int) -> tuple[
        dict[str, dict[str, list[dict[str, Any]]]], list[dict[str, Any]]]:
    """({run_id: {check: [finding, ...]}}, timeline events) in one Spark query: the five
    checks (at most `limit` findings each) and the timeline events (observation, fault,
    prediction, verdict) side by side, so the cached events are planned and scanned as
    one job rather than one job per check."""
    checks = data_checks(events)
    fields = {name: [c for c in df.columns if c != "run_id"] for name, df in checks.items()}
    tl = F.col("tl")
    timeline = events.where(tl.isNotNull()).select(
        F.lit(None).cast("string").alias("_check"), "run_id", "seq",
        tl["t_wall"].alias("t_wall"), "kind",
        *(tl[f].alias(f) for f in TIMELINE_FIELDS if f != "t_wall"))
    timeline_fields = [c for c in timeline.columns if c != "_check"]
    together = timeline
    for name, df in checks.items():
        together = together.unionByName(
            df.limit(limit).select(F.lit(name).alias("_check"), *df.columns),
            allowMissingColumns=True)
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    points = []
    for row in together.collect():
        item = row.asDict(recursive=True)
        name = item["_check"]
        if name is None:
            points.append({k: item[k] for k in timeline_fields})
        else:
            found.setdefault(item["run_id"], {}).setdefault(name, []).append(
                {k: item[k] for k in fields[name]})
    return found, points


def _tp_window(order: Any) -> Any:
    return Window.partitionBy("run_id", "topic", "partition").orderBy(order)


def data_checks(events: DataFrame) -> dict[str, DataFrame]:
    """name -> DataFrame of findings (run_id plus the same detail fields as datachecks.py).
    `events` is the frame read_events returns."""
    return {
        "acked_lost": _acked_lost(events),
        "above_hwm": _above_hwm(events),
        "hwm_regression": _hwm_regression(events),
        "duplicates": _duplicates(events),
        "gaps": _gaps(events),
    }


def _acked_lost(ev: DataFrame) -> DataFrame:
    consumes = ev.where(F.col("kind") == "consume")
    # The final read of each partition: its last complete `read` event where the run has
    # them, else its last run of consume events. One row per partition read: broadcast.
    closers = ev.where((F.col("kind") == "read") & F.col("complete"))
    legacy = consumes.where(F.col("has_reads") == 0)
    last = F.broadcast(closers.unionByName(legacy).groupBy("run_id", "topic", "partition")
                       .agg(F.max("read_id").alias("read_id")))
    final = consumes.join(last, ["run_id", "topic", "partition", "read_id"]) \
        .select("run_id", "topic", "partition", "record_id")
    acked = ev.where((F.col("kind") == "ack") & F.col("ack_ok"))
    judged = acked.join(last.select("run_id", "topic", "partition"),
                        ["run_id", "topic", "partition"])
    return judged.join(final.hint("shuffle_hash"), ["run_id", "topic", "partition", "record_id"],
                       "left_anti") \
        .select("run_id", "record_id", "acks", "offset", "topic", "partition")


def _above_hwm(ev: DataFrame) -> DataFrame:
    rel = ev.where((F.col("kind") == "consume")
                   | ((F.col("kind") == "observation") & F.col("hwm").isNotNull())) \
        .select("run_id", "seq", "kind", "topic", "partition", "record_id", "offset", "hwm")
    # Nearest later observation: walk backwards with a growing frame (linear, not quadratic).
    backwards = _tp_window(F.col("seq").desc()).rowsBetween(Window.unboundedPreceding, -1)
    nxt = rel.withColumn("next_hwm", F.last("hwm", ignorenulls=True).over(backwards))
    return nxt.where((F.col("kind") == "consume") & F.col("next_hwm").isNotNull()
                     & (F.col("offset") >= F.col("next_hwm"))) \
        .select("run_id", "record_id", "offset", F.col("next_hwm").alias("hwm"))


def _hwm_regression(ev: DataFrame) -> DataFrame:
    obs = ev.where((F.col("kind") == "observation") & F.col("hwm").isNotNull()) \
        .select("run_id", "topic", "partition", "seq", "hwm")
    prev = obs.withColumn("from", F.lag("hwm").over(_tp_window("seq")))
    return prev.where(F.col("hwm") < F.col("from")).select(
        "run_id", "topic", "partition", "from", F.col("hwm").alias("to"), "seq")


def _duplicates(ev: DataFrame) -> DataFrame:
    consumes = ev.where(F.col("kind") == "consume").select("run_id", "record_id", "offset")
    # Two distinct offsets exactly when min != max: a cheap hash aggregate finds the few
    # records to collect offsets for (collecting for every record sorts them all).
    twice = consumes.groupBy("run_id", "record_id").agg(
        F.min("offset").alias("lo"), F.max("offset").alias("hi")).where(F.col("lo") < F.col("hi"))
    grouped = consumes.join(twice.select("run_id", "record_id").hint("shuffle_hash"),
                            ["run_id", "record_id"], "left_semi") \
        .groupBy("run_id", "record_id").agg(F.array_sort(F.collect_set("offset")).alias("offsets"))
    return grouped.where(F.size("offsets") > 1)


def _gaps(ev: DataFrame) -> DataFrame:
    return ev.where(F.col("gap_after").isNotNull()).select(
        "run_id", "topic", "partition", F.col("gap_after").alias("after"),
        F.col("offset").alias("next"))
