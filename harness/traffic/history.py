"""The traffic history of a run: one `traffic.jsonl` beside `events.jsonl` (docs/TRAFFIC.md).

One JSON object a line, written with orjson, append-only, by one recorder per run that
numbers the lines (`n`, from 0, gap-free: the order the recorder saw them, which Spark
needs to order polls and commits) and stamps them with a monotonic clock (`t`, seconds).
A million records make a file of about 100 MB; readers stream it a line at a time and never
hold it. A line that is not a well-typed event (a torn last line of a crashed writer, a
corrupt one) is skipped and counted, by both engines alike.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal, NotRequired, TypedDict

import orjson

TRAFFIC_FILE = "traffic.jsonl"
#: 1.1: topic_deleted / topic_created lines, and ``incarnation`` on poll, commit,
#: final_read and final_read_end lines (docs/TRAFFIC.md "Topics deleted and created again");
#: a 1.0 history has neither and reads as every topic in its first incarnation.
TRAFFIC_SCHEMA = "1.2"  # 1.2: the producer line names its client


class Producer(TypedDict):
    """A producer's settings, written once when it is created. A producer never declared
    is taken with Kafka's defaults since 3.0: acks=all, idempotence on."""
    n: int
    kind: Literal["producer"]
    producer: str
    acks: str  # "0", "1", "all"
    idempotent: bool
    #: the client library and its version, e.g. "librdkafka 2.16.0"; absent in histories
    #: written before schema 1.2, whose producers were all librdkafka (confluent-kafka)
    client: NotRequired[str | None]
    t: float


class Send(TypedDict):
    n: int
    kind: Literal["send"]
    producer: str
    seq: int  # the producer's own count of its sends
    id: str  # unique per record (one producer's)
    topic: str
    partition: NotRequired[int | None]  # null: the partitioner chooses
    t: float


class Ack(TypedDict):
    n: int
    kind: Literal["ack"]
    producer: str
    seq: int
    id: str
    topic: str
    partition: int
    offset: int | None  # null for acks=0 (the client is told no offset)
    t: float


class SendError(TypedDict):
    n: int
    kind: Literal["send_error"]
    producer: str
    seq: int
    id: str
    topic: str
    partition: NotRequired[int | None]
    error: str
    t: float


class Poll(TypedDict):
    """One record a consumer's poll returned. `session` numbers the consumer's continuous
    reads of its assignment: it changes at every (re)assignment, seek or restart."""
    n: int
    kind: Literal["poll"]
    consumer: str
    session: int
    topic: str
    partition: int
    offset: int
    id: str
    incarnation: NotRequired[int]  # 1.1: the topic's incarnation (absent: 0)
    t: float


class Commit(TypedDict):
    """An offset commit the group coordinator accepted (the next offset to read)."""
    n: int
    kind: Literal["commit"]
    consumer: str
    group: str
    topic: str
    partition: int
    offset: int
    incarnation: NotRequired[int]  # 1.1: the topic's incarnation (absent: 0)
    t: float


class FinalRead(TypedDict):
    """One record of the full re-read of every partition from its start at the end."""
    n: int
    kind: Literal["final_read"]
    topic: str
    partition: int
    offset: int
    id: str
    incarnation: NotRequired[int]  # 1.1: the topic's incarnation (absent: 0)
    t: NotRequired[float]


class FinalReadEnd(TypedDict):
    """Closes a partition's final read; `complete`: it reached the partition's end (a read
    that timed out proves nothing about what is missing)."""
    n: int
    kind: Literal["final_read_end"]
    topic: str
    partition: int
    complete: bool
    incarnation: NotRequired[int]  # 1.1: the topic's incarnation (absent: 0)
    t: float


class TopicLife(TypedDict):
    """A topic deleted or created again while traffic runs (schema 1.1), written by the
    runner: ``requested`` just before DeleteTopics / CreateTopics is sent, ``refused`` when
    the controller refused it (the request changed nothing), ``settled`` once the step's
    observation settled (a created topic: its consumers read it from its start then)."""
    n: int
    kind: Literal["topic_deleted", "topic_created"]
    topic: str
    phase: str  # "requested", "refused", "settled"
    t: float


#: The kinds of TopicLife lines.
TOPIC_LIFE = ("topic_deleted", "topic_created")

Event = dict[str, Any]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _natural(value: Any) -> bool:
    """Partitions and offsets: whole numbers from 0 (Kafka's -1, "no offset", is null)."""
    return _is_int(value) and value >= 0


def _opt_natural(value: Any) -> bool:
    return value is None or _natural(value)


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _phase(value: Any) -> bool:
    return value in ("requested", "refused", "settled")


#: per kind, the fields the checks compute with and their types (absent = null)
FIELDS: dict[str, dict[str, Callable[[Any], bool]]] = {
    "traffic_start": {},
    "producer": {"producer": _str, "acks": _str, "idempotent": _bool, "client": _opt_str},
    "send": {"producer": _str, "seq": _is_int, "id": _str, "topic": _str,
             "partition": _opt_natural},
    "ack": {"producer": _str, "seq": _is_int, "id": _str, "topic": _str,
            "partition": _natural, "offset": _opt_natural},
    "send_error": {"producer": _str, "seq": _is_int, "id": _str, "topic": _str,
                   "partition": _opt_natural, "error": _str},
    "poll": {"consumer": _str, "session": _is_int, "topic": _str, "partition": _natural,
             "offset": _natural, "id": _str, "incarnation": _opt_natural},
    "commit": {"consumer": _str, "group": _str, "topic": _str, "partition": _natural,
               "offset": _natural, "incarnation": _opt_natural},
    "final_read": {"topic": _str, "partition": _natural, "offset": _natural, "id": _str,
                   "incarnation": _opt_natural},
    "final_read_end": {"topic": _str, "partition": _natural, "complete": _bool,
                       "incarnation": _opt_natural},
    "topic_deleted": {"topic": _str, "phase": _phase},
    "topic_created": {"topic": _str, "phase": _phase},
}
#: fields that must be >= 0 where present (spark.py checks these on top of the types)
NATURAL = ("partition", "offset")


def well_typed(event: Any) -> bool:
    """A known kind with a line number and every field it needs of its type."""
    if not isinstance(event, dict) or not _is_int(event.get("n")):
        return False
    fields = FIELDS.get(event.get("kind"))  # type: ignore[arg-type]
    if fields is None:
        return False
    return all(test(event.get(name)) for name, test in fields.items())


class TrafficFile:
    """A traffic history on disk, streamed: every iteration re-reads the file a line at a
    time and yields its well-typed events; `skipped` counts the other lines of the last
    iteration (blank lines are not counted)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped = 0

    def __iter__(self) -> Iterator[Event]:
        self.skipped = 0
        with open(self.path, "rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                event = _parse(line)
                if event is None:
                    self.skipped += 1
                else:
                    yield event


def _parse(line: bytes) -> Event | None:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return event if well_typed(event) else None


class TrafficRecorder:
    """Makes the events, numbers and stamps them, and hands each to `sink` (a file's
    writer, or a list's append in tests). Thread-safe: producers' delivery callbacks and
    consumers' poll loops may record at once."""

    def __init__(self, sink: Callable[[Event], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sink = sink
        self._clock = clock
        self._lock = threading.Lock()
        self._n = 0
        #: Per topic, its incarnation (0: as created before step 0; +1 at each creation
        #: again), as the runner's topic_life lines say: the final read's lines carry it.
        self.incarnations: dict[str, int] = {}

    def record(self, kind: str, **fields: Any) -> Event:
        return self._emit({"kind": kind, **fields})

    def _emit(self, event: Event) -> Event:
        with self._lock:
            event["n"] = self._n
            event["t"] = self._clock()
            self._n += 1
            self._sink(event)
        return event

    def start(self, run_id: str) -> Event:
        return self._emit({"kind": "traffic_start", "schema": TRAFFIC_SCHEMA, "run_id": run_id})

    def producer(self, producer: str, acks: str, idempotent: bool,
                 client: str | None = None) -> Event:
        event = {"kind": "producer", "producer": producer, "acks": acks,
                 "idempotent": idempotent}
        return self._emit(event if client is None else {**event, "client": client})

    def send(self, producer: str, seq: int, id: str, topic: str,
             partition: int | None = None) -> Event:
        return self._emit({"kind": "send", "producer": producer, "seq": seq, "id": id,
                           "topic": topic, "partition": partition})

    def ack(self, producer: str, seq: int, id: str, topic: str, partition: int,
            offset: int | None) -> Event:
        """`offset` None, or negative as clients report "no offset" (acks=0): null."""
        known = offset if offset is not None and offset >= 0 else None
        return self._emit({"kind": "ack", "producer": producer, "seq": seq, "id": id,
                           "topic": topic, "partition": partition, "offset": known})

    def send_error(self, producer: str, seq: int, id: str, topic: str, error: str,
                   partition: int | None = None) -> Event:
        return self._emit({"kind": "send_error", "producer": producer, "seq": seq, "id": id,
                           "topic": topic, "partition": partition, "error": error})

    def poll(self, consumer: str, session: int, topic: str, partition: int, offset: int,
             id: str, incarnation: int = 0) -> Event:
        return self._emit({"kind": "poll", "consumer": consumer, "session": session,
                           "topic": topic, "partition": partition, "offset": offset, "id": id,
                           **_inc(incarnation)})

    def polls(self, consumer: str, session: int,
              records: list[tuple[str, int, int, str]], incarnation: int = 0) -> None:
        """One `poll` line per (topic, partition, offset, id) a poll returned, in order,
        numbered under one hold of the lock (a consumer's batch); ``incarnation``: of the
        topic the consumer reads (the runner told it, ``Traffic.topic_life``)."""
        inc = _inc(incarnation)
        with self._lock:
            for topic, partition, offset, id in records:
                self._sink({"kind": "poll", "consumer": consumer, "session": session,
                            "topic": topic, "partition": partition, "offset": offset,
                            "id": id, **inc, "n": self._n, "t": self._clock()})
                self._n += 1

    def commit(self, consumer: str, group: str, topic: str, partition: int,
               offset: int, incarnation: int = 0) -> Event:
        return self._emit({"kind": "commit", "consumer": consumer, "group": group,
                           "topic": topic, "partition": partition, "offset": offset,
                           **_inc(incarnation)})

    def final_read(self, topic: str, partition: int, offset: int, id: str) -> Event:
        return self._emit({"kind": "final_read", "topic": topic, "partition": partition,
                           "offset": offset, "id": id,
                           **_inc(self.incarnations.get(topic, 0))})

    def final_read_end(self, topic: str, partition: int, complete: bool) -> Event:
        return self._emit({"kind": "final_read_end", "topic": topic, "partition": partition,
                           "complete": complete, **_inc(self.incarnations.get(topic, 0))})

    def topic_life(self, kind: str, topic: str, phase: str) -> Event:
        """A ``topic_deleted`` / ``topic_created`` line (``TopicLife``); a creation
        requested makes the topic's next incarnation the one the final read names (a
        refused one takes it back)."""
        if kind == "topic_created" and phase in ("requested", "refused"):
            now = self.incarnations.get(topic, 0)
            self.incarnations[topic] = now + 1 if phase == "requested" else max(now - 1, 0)
        return self._emit({"kind": kind, "topic": topic, "phase": phase})


def _inc(incarnation: int) -> dict[str, int]:
    """The ``incarnation`` field: left out for a topic's first (a 1.0 reader's view)."""
    return {"incarnation": incarnation} if incarnation else {}


class TrafficWriter(TrafficRecorder):
    """Appends to `<run dir>/traffic.jsonl`, created exclusively (one history per run).
    Lines are buffered and flushed every `flush_every` events and at close: a crash loses
    at most that many, where flushing every line would cost a system call per record."""

    def __init__(self, run_dir: Path, run_id: str, flush_every: int = 1000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = run_dir / TRAFFIC_FILE
        self._file: IO[bytes] = open(self.path, "xb")  # noqa: SIM115 - closed by close()
        self._flush_every = flush_every
        self._unflushed = 0
        super().__init__(self._write, clock)
        self.start(run_id)

    def _write(self, event: Mapping[str, Any]) -> None:
        self._file.write(orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE))
        self._unflushed += 1
        if self._unflushed >= self._flush_every:
            self._file.flush()
            self._unflushed = 0

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> TrafficWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
