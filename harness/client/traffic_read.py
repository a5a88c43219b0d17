"""The traffic's final read: every partition re-read from its start to its end into the
run's traffic.jsonl (docs/TRAFFIC.md "Recording"). Each line names the incarnation of its
topic the recorder knows (a topic created again is read in its newest incarnation)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaError, TopicPartition

from harness.client.traffic import POLL_BATCH, POLL_S, _common
from harness.traffic.history import TrafficRecorder

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster


def final_read(cluster: Cluster, rec: TrafficRecorder, partitions: Iterable[tuple[str, int]],
               timeout_s: float = 60.0,
               on_record: Callable[[str, int, int, str], None] | None = None
               ) -> dict[tuple[str, int], bool]:
    """Every partition re-read from its start to its end: a `final_read` line per record,
    a `final_read_end` per partition (complete: it reached the end within ``timeout_s``).
    ``on_record(topic, partition, offset, id)`` sees each record too."""
    out: dict[tuple[str, int], bool] = {}
    for topic, partition in partitions:
        consumer = Consumer({**_common(cluster),
                             "group.id": f"kafka-chaos-{cluster.history.run_id}-final",
                             "enable.auto.commit": False, "enable.partition.eof": True,
                             "auto.offset.reset": "earliest",
                             "isolation.level": "read_uncommitted"})
        complete = False
        try:
            consumer.assign([TopicPartition(topic, partition, 0)])
            deadline = time.monotonic() + timeout_s
            while not complete and time.monotonic() < deadline:
                for msg in consumer.consume(POLL_BATCH, POLL_S):
                    err = msg.error()
                    if err is not None:
                        complete = complete or err.code() == KafkaError._PARTITION_EOF
                        continue
                    rid = (msg.value() or b"").decode(errors="replace").partition(" ")[0]
                    offset = int(msg.offset() or 0)
                    rec.final_read(topic, partition, offset, rid)
                    if on_record is not None:
                        on_record(topic, partition, offset, rid)
        finally:
            consumer.close()
            rec.final_read_end(topic, partition, complete)
        out[(topic, partition)] = complete
    return out
