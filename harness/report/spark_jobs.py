"""The Spark side: read events with an explicit schema and run the data checks.

Work is partitioned by run_id (every window is `partitionBy(run_id, ...)`), so on a
cluster each run's events are judged on one executor and runs spread across executors.
The checks mirror harness/datachecks.py (the runner's implementation); tests prove the
two agree on the same histories.
"""

from __future__ import annotations

import os
from typing import Any

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
    T.StructField("_corrupt_record", T.StringType()),
])


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


def read_events(spark: SparkSession, files: list[str]) -> tuple[DataFrame, int]:
    """(events, number of unreadable lines): a torn last line of a crashed run lands in
    _corrupt_record; it is counted and dropped. The raw frame is cached because Spark
    refuses to query the corrupt-record column of an uncached JSON source alone."""
    raw = spark.read.schema(EVENT_SCHEMA).option("mode", "PERMISSIVE").json(files).cache()
    corrupt = int(raw.where(F.col("_corrupt_record").isNotNull()).count())
    good = raw.where(F.col("_corrupt_record").isNull() & F.col("run_id").isNotNull())
    return good.drop("_corrupt_record"), corrupt


def _tp_window(order: Any) -> Any:
    return Window.partitionBy("run_id", "topic", "partition").orderBy(order)


def data_checks(events: DataFrame) -> dict[str, DataFrame]:
    """name -> DataFrame of findings (run_id plus the same detail fields as datachecks.py)."""
    ev = events.select("run_id", "seq", "kind", "record_id", "topic", "partition", "acks",
                       "offset", "error", F.col("state.hwm").alias("hwm"))
    consumes = _reads(ev)
    return {
        "acked_lost": _acked_lost(ev, consumes),
        "above_hwm": _above_hwm(ev),
        "hwm_regression": _hwm_regression(ev),
        "duplicates": _duplicates(ev),
        "gaps": _gaps(consumes),
    }


def _reads(ev: DataFrame) -> DataFrame:
    """Consume events numbered by read: a read is a run of consecutive consume events of
    one partition (any other event in between ends it)."""
    by_run = Window.partitionBy("run_id").orderBy("seq")
    flagged = ev.withColumn("prev_kind", F.lag("kind").over(by_run)) \
        .withColumn("prev_topic", F.lag("topic").over(by_run)) \
        .withColumn("prev_partition", F.lag("partition").over(by_run))
    new_read = (F.col("kind") == "consume") & (
        F.col("prev_kind").isNull() | (F.col("prev_kind") != "consume")
        | (F.col("prev_topic") != F.col("topic"))
        | (F.col("prev_partition") != F.col("partition")))
    numbered = flagged.withColumn("new_read", new_read.cast("int")) \
        .withColumn("read_id", F.sum("new_read").over(by_run))
    return numbered.where(F.col("kind") == "consume").select(
        "run_id", "seq", "topic", "partition", "record_id", "offset", "read_id")


def _acked_lost(ev: DataFrame, consumes: DataFrame) -> DataFrame:
    last = consumes.groupBy("run_id", "topic", "partition").agg(F.max("read_id").alias("read_id"))
    final = consumes.join(last, ["run_id", "topic", "partition", "read_id"]) \
        .select("run_id", "topic", "partition", "record_id").distinct()
    acked = ev.where((F.col("kind") == "ack") & F.col("offset").isNotNull()
                     & (F.col("error").isNull() | (F.col("error") == "")))
    judged = acked.join(last.select("run_id", "topic", "partition"),
                        ["run_id", "topic", "partition"])
    return judged.join(final, ["run_id", "topic", "partition", "record_id"], "left_anti") \
        .select("run_id", "record_id", "acks", "offset", "topic", "partition")


def _above_hwm(ev: DataFrame) -> DataFrame:
    rel = ev.where((F.col("kind") == "consume")
                   | ((F.col("kind") == "observation") & F.col("hwm").isNotNull()))
    # Nearest later observation: walk backwards with a growing frame (linear, not quadratic).
    backwards = _tp_window(F.col("seq").desc()).rowsBetween(Window.unboundedPreceding, -1)
    nxt = rel.withColumn("next_hwm", F.last("hwm", ignorenulls=True).over(backwards))
    return nxt.where((F.col("kind") == "consume") & F.col("next_hwm").isNotNull()
                     & (F.col("offset") >= F.col("next_hwm"))) \
        .select("run_id", "record_id", "offset", F.col("next_hwm").alias("hwm"))


def _hwm_regression(ev: DataFrame) -> DataFrame:
    obs = ev.where((F.col("kind") == "observation") & F.col("hwm").isNotNull())
    prev = obs.withColumn("from", F.lag("hwm").over(_tp_window("seq")))
    return prev.where(F.col("hwm") < F.col("from")).select(
        "run_id", "topic", "partition", "from", F.col("hwm").alias("to"), "seq")


def _duplicates(ev: DataFrame) -> DataFrame:
    grouped = ev.where(F.col("kind") == "consume").groupBy("run_id", "record_id").agg(
        F.array_sort(F.collect_set("offset")).alias("offsets"))
    return grouped.where(F.size("offsets") > 1)


def _gaps(consumes: DataFrame) -> DataFrame:
    w = Window.partitionBy("run_id", "read_id").orderBy("seq")
    prev = consumes.withColumn("after", F.lag("offset").over(w))
    return prev.where(F.col("after").isNotNull() & (F.col("offset") != F.col("after") + 1)) \
        .select("run_id", "topic", "partition", "after", F.col("offset").alias("next"))
