"""Synthetic traffic histories of any size, for tests and measurements: streamed, so a
million events cost the generator nothing, and the same for the same `Shape`.

Record i goes to partition i % partitions at offset i // partitions, from producer
i % producers. Every record is sent and acked; every consumer (its own group, one session)
polls every partition from offset 0 and commits every `commit_every` polls; then the final
read re-reads every partition. `anomaly_rate` of the records, chosen by a hash of (seed, i),
carry one of ANOMALIES, which each make at least the check of that name fail:

- lost: acked, then in no poll and no final read (consumers skip its offset);
- duplicate: written again at the end of its partition (a retry), so at two offsets;
- inconsistent: the first consumer reads a phantom id at its offset;
- lost_after_read: polled, then missing from the final read;
- poll_back: the first consumer polls its offset twice;
- poll_skip: the first consumer skips its offset;
- commit_back: after committing past it the first consumer commits its offset again.
`unpolled_tail` records at the end of each partition are polled by no consumer (unseen).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.traffic.history import Event, TrafficRecorder, TrafficWriter

ANOMALIES = ("lost", "duplicate", "inconsistent", "lost_after_read", "poll_back",
             "poll_skip", "commit_back")
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Shape:
    """The made-up traffic history to write: its clients, partitions and records, and
    the share of anomalies planted in it (for the checker's tests and benchmarks)."""

    records: int
    producers: int = 2
    consumers: int = 3
    partitions: int = 3
    topic: str = "t"
    commit_every: int = 50
    unpolled_tail: int = 0
    anomaly_rate: float = 0.0
    seed: int = 0
    acks: str = "all"
    idempotent: bool = True

    def events_per_record(self) -> float:
        """send, ack, a poll per consumer, a final read, and the commits."""
        return 3 + self.consumers * (1 + 1 / self.commit_every)

    @classmethod
    def about(cls, events: int, **fields: object) -> Shape:
        """A shape of about `events` events."""
        probe = cls(records=1, **fields)  # type: ignore[arg-type]
        return cls(records=int(events / probe.events_per_record()), **fields)  # type: ignore[arg-type]


def anomaly(shape: Shape, record: int) -> str | None:
    """The anomaly record `record` carries, if any (a splitmix64 hash of seed and record)."""
    if shape.anomaly_rate <= 0:
        return None
    h = (record * 0x9E3779B97F4A7C15 + shape.seed * 0xD1B54A32D192ED03 + 1) & _MASK
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
    h ^= h >> 31
    if h % 1_000_000 >= shape.anomaly_rate * 1_000_000:
        return None
    return ANOMALIES[(h >> 32) % len(ANOMALIES)]


def record_id(shape: Shape, record: int) -> str:
    return f"p{record % shape.producers}-{record // shape.producers}"


def synthetic_history(shape: Shape) -> Iterator[Event]:
    """The history's events, streamed."""
    buffer: list[Event] = []
    recorder = TrafficRecorder(buffer.append, clock=_ticks())
    recorder.start("synthetic")
    for _ in play(shape, recorder):
        yield from buffer
        buffer.clear()
    yield from buffer


def write_synthetic(run_dir: Path, shape: Shape) -> Path:
    """The history written to `run_dir`/traffic.jsonl as a run would write it."""
    with TrafficWriter(run_dir, "synthetic", flush_every=10_000, clock=_ticks()) as writer:
        for _ in play(shape, writer):
            pass
    return writer.path


def _ticks() -> Callable[[], float]:
    counter = itertools.count()
    return lambda: next(counter) * 1e-4


def play(shape: Shape, recorder: TrafficRecorder) -> Iterator[None]:
    """Drives the recorder (e.g. a TrafficWriter already holding other traffic), yielding
    now and then so that a caller can drain it."""
    for producer in range(shape.producers):
        recorder.producer(f"p{producer}", shape.acks, shape.idempotent)
    yield from _writes(shape, recorder)
    for consumer in range(shape.consumers):
        for partition in range(shape.partitions):
            yield from _polls(shape, recorder, consumer, partition)
    for partition in range(shape.partitions):
        yield from _final_read(shape, recorder, partition)


def _writes(shape: Shape, recorder: TrafficRecorder) -> Iterator[None]:
    for record in range(shape.records):
        producer, seq = f"p{record % shape.producers}", record // shape.producers
        rid, partition = record_id(shape, record), record % shape.partitions
        recorder.send(producer, seq, rid, shape.topic, partition)
        recorder.ack(producer, seq, rid, shape.topic, partition, record // shape.partitions)
        yield None


def _log(shape: Shape, partition: int) -> Iterator[tuple[int, int]]:
    """(offset, record) of the partition's log: its records, then the duplicates."""
    records = range(partition, shape.records, shape.partitions)
    yield from enumerate(records)
    if shape.anomaly_rate > 0:
        duplicated = (r for r in records if anomaly(shape, r) == "duplicate")
        yield from enumerate(duplicated, start=len(records))


def _polls(shape: Shape, recorder: TrafficRecorder, consumer: int,
           partition: int) -> Iterator[None]:
    group, name, polled = f"g{consumer}", f"c{consumer}", 0
    end = _length(shape, partition)
    for offset, record in _log(shape, partition):
        if end - shape.unpolled_tail <= offset < end:
            continue
        kind = anomaly(shape, record) if offset < end else None
        for rid in _polled_ids(shape, record, kind if consumer == 0 or kind == "lost" else None):
            recorder.poll(name, 0, shape.topic, partition, offset, rid)
            polled += 1
            if polled % shape.commit_every == 0:
                recorder.commit(name, group, shape.topic, partition, offset + 1)
        if kind == "commit_back" and consumer == 0:
            recorder.commit(name, group, shape.topic, partition, offset + 1)
            recorder.commit(name, group, shape.topic, partition, offset)
        yield None


def _polled_ids(shape: Shape, record: int, kind: str | None) -> tuple[str, ...]:
    """What a consumer polls at the record's offset: the first consumer (the only one
    given a `kind` other than lost) carries the read anomalies."""
    if kind in ("lost", "poll_skip"):
        return ()
    if kind == "inconsistent":
        return (f"phantom-{record}",)
    return (record_id(shape, record),) * (2 if kind == "poll_back" else 1)


def _length(shape: Shape, partition: int) -> int:
    """Records of the partition, without the duplicates."""
    return len(range(partition, shape.records, shape.partitions))


def _final_read(shape: Shape, recorder: TrafficRecorder, partition: int) -> Iterator[None]:
    end = _length(shape, partition)
    for offset, record in _log(shape, partition):
        if offset < end and anomaly(shape, record) in ("lost", "lost_after_read"):
            continue
        recorder.final_read(shape.topic, partition, offset, record_id(shape, record))
        yield None
    recorder.final_read_end(shape.topic, partition, True)
    yield None
