"""Producers and consumers on the clients' (proxied) path, recording into the history.

Every record carries a unique id (key and value). Delivery reports (offset or error) go
to the history as `ack` events; a consumer reads every visible record of a partition.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.infra import procs
from harness.infra.wait import WaitTimeout, until

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

ACKS = ("0", "1", "all")
#: Records a produce step enqueues ahead of their delivery reports (see _send_windowed):
#: every produce of a scenario or of the fuzzer (1..5 records) fits in one window, so a
#: refused write still fails after one delivery timeout.
SEND_WINDOW = 100
#: How long past the delivery timeout a produce waits for a report that does not come.
REPORT_GRACE_S = 10.0
#: How long a producer may take to learn a partition a step just created (add_partitions,
#: create_topic): librdkafka refuses a record for a partition its metadata does not hold
#: yet ("Local: Unknown partition"; seen once on 4.0.2 right after add_partitions).
PARTITION_METADATA_S = 15.0


@dataclass(frozen=True)
class Ack:
    record_id: str
    offset: int | None
    error: str | None


class Workload:
    def __init__(self, cluster: Cluster, delivery_timeout_ms: int = 12000) -> None:
        self.cluster = cluster
        self.delivery_timeout_ms = delivery_timeout_ms
        self._ids = itertools.count()
        self._producers: dict[str, Producer] = {}
        self._known: set[tuple[str, str, int]] = set()  # (acks, topic, partition) it knows

    def next_ids(self, count: int) -> list[str]:
        return [f"{self.cluster.history.run_id[-6:]}-r{next(self._ids)}" for _ in range(count)]

    def _producer(self, acks: str) -> Producer:
        if acks not in ACKS:
            raise ValueError(f"acks={acks!r}: use one of {ACKS}")
        if acks not in self._producers:
            self._producers[acks] = Producer({
                "bootstrap.servers": self.cluster.client_bootstrap(), "acks": acks, "log_level": 3,
                # Idempotence (acks=all only) keeps a retried request from writing a record
                # twice while the leader waits out an ISR shrink.
                "enable.idempotence": acks == "all", "max.in.flight.requests.per.connection": 1,
                "linger.ms": 0, "batch.num.messages": 1,  # one record per batch: clean cut points
                "message.timeout.ms": self.delivery_timeout_ms, "retry.backoff.ms": 100,
                # A blackholed broker must not hold a request for long: fail over quickly.
                "socket.timeout.ms": 4000,
                "topic.metadata.refresh.interval.ms": 1000,
                "metadata.max.age.ms": 3000, "reconnect.backoff.max.ms": 500,
            })
        return self._producers[acks]

    def warm(self, acks: str) -> None:
        """Make the producer for ``acks`` now. An idempotent producer (acks=all) only sends
        once it holds a producer id, and librdkafka's first InitProducerId waits for a
        broker connection and a 1 s retry timer: made early, that second overlaps topic
        creation instead of the first produce step (measured on 4.3.1: first ack 1.02-1.05 s
        with idempotence, 0.015-0.023 s without)."""
        self._producer(acks)

    def produce(self, topic: str, count: int, acks: str = "all", partition: int = 0,
                record_ids: list[str] | None = None) -> list[Ack]:
        """Send `count` records in order and wait (bounded) for every delivery report."""
        ids = record_ids or self.next_ids(count)
        producer = self._producer(str(acks))
        self._learn_partition(str(acks), producer, topic, partition)
        acked: dict[str, Ack] = {}
        history = self.cluster.history

        def report(err: KafkaError | None, msg: Any) -> None:
            rid = msg.key().decode()
            raw_offset = msg.offset()  # None/-1 for acks=0: the broker never said where
            off = raw_offset if err is None and raw_offset is not None and raw_offset >= 0 else None
            ack = Ack(rid, off, err.name() if err else None)
            acked[rid] = ack
            history.record("ack", record_id=rid, topic=topic, partition=partition, acks=str(acks),
                           offset=ack.offset, error=ack.error)

        def enqueue(rid: str) -> None:
            history.record("produce", record_id=rid, topic=topic, partition=partition,
                           acks=str(acks))
            producer.produce(topic, key=rid, value=rid, partition=partition, on_delivery=report)
            producer.poll(0)

        self._send_windowed(ids, enqueue, producer, acked)
        return [acked.get(rid, Ack(rid, None, "NO_DELIVERY_REPORT")) for rid in ids]

    def _learn_partition(self, acks: str, producer: Any, topic: str, partition: int) -> None:
        """Ask (bounded) until the producer's metadata holds ``topic``'s ``partition``: a
        metadata request's answer updates librdkafka's cache. Once per producer and partition;
        past the bound the produce goes ahead and its error is the step's."""
        if (acks, topic, partition) in self._known:
            return

        def holds() -> bool:
            try:
                md = producer.list_topics(topic, timeout=2.0).topics.get(topic)
            except KafkaException:
                return False
            return md is not None and md.error is None and partition in md.partitions
        try:
            until(holds, bool, f"the producer's metadata of {topic}-{partition}",
                  PARTITION_METADATA_S, interval_s=0.2)
        except WaitTimeout:
            return  # the produce goes ahead; its error is the step's
        self._known.add((acks, topic, partition))

    def _send_windowed(self, ids: list[str], enqueue: Callable[[str], None], producer: Any,
                       acked: dict[str, Ack]) -> None:
        """Enqueue ``ids`` in order, at most SEND_WINDOW ahead of their delivery reports, and
        wait for the reports; gives up once none has come for a delivery timeout + 10 s.

        The delivery timeout runs from a record's enqueueing, and records go one per request,
        one request at a time: enqueued all at once, a large produce timed its last records
        out while the first were still being sent (2,000 acks=all records on 2 loaded cores:
        246 _MSG_TIMED_OUT after 13.7 s). In a window each record's timeout covers its own
        send, as it does for a produce of a few records."""
        grace = self.delivery_timeout_ms / 1000 + REPORT_GRACE_S
        sent, last_progress = 0, time.monotonic()
        while len(acked) < len(ids):
            while sent < len(ids) and sent - len(acked) < SEND_WINDOW:
                enqueue(ids[sent])
                sent += 1
                last_progress = time.monotonic()
            before = len(acked)
            producer.poll(0.1)
            procs.check_interrupted()
            if len(acked) > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > grace:
                return

    def consume_all(self, topic: str, partition: int = 0, timeout_s: float = 15.0,
                    bootstrap: str | None = None, record: bool = True) -> list[tuple[int, str]]:
        """Every visible record (offset, record id) from the start to the end of the
        partition; ``record=False``: nothing written to the history (run.recovery)."""
        consumer = Consumer({
            "bootstrap.servers": bootstrap or self.cluster.client_bootstrap(), "log_level": 3,
            "group.id": f"kafka-chaos-{self.cluster.history.run_id}",
            "enable.auto.commit": False, "enable.partition.eof": True,
            "isolation.level": "read_uncommitted", "auto.offset.reset": "earliest",
            "socket.timeout.ms": 3000, "topic.metadata.refresh.interval.ms": 1000,
        })
        out: list[tuple[int, str]] = []
        complete = False
        try:
            consumer.assign([TopicPartition(topic, partition, 0)])
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                procs.check_interrupted()
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                err, key, offset = msg.error(), msg.key(), msg.offset()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        complete = True
                        break
                    continue
                rid = key.decode() if isinstance(key, bytes) else ""
                out.append((int(offset or 0), rid))
                if record:
                    self.cluster.history.record("consume", record_id=rid, topic=topic,
                                                partition=partition, offset=msg.offset())
        finally:
            consumer.close()
            # Closes the read: an empty read is a read (every record lost), unlike no read.
            if record:
                self.cluster.history.record("read", topic=topic, partition=partition,
                                            records=len(out), complete=complete)
        return out

    def close(self) -> None:
        for producer in self._producers.values():
            producer.flush(0)
        self._producers.clear()
