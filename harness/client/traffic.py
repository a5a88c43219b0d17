"""Client traffic: producers and consumers running in background threads for a whole
scenario, recording every send, ack, error, poll and commit in the run's `traffic.jsonl`
(harness/traffic/history.py, docs/TRAFFIC.md), and the final full re-read.

Every record's key spreads it over the topic's partitions (the partition is chosen here
from the key, so every `send` line names it) and its value is its id and its producer's
sequence (`<producer>-<seq> <seq>`); ids are unique per run. Clients talk only to the
cluster's client addresses (through the proxies, as the workload's). Every loop is bounded
in count and time; `Traffic.stop` ends every thread within a bounded wait, and a thread
that raised is said, never left running.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.client.workload import ACKS as ACKS  # one list of acks for steps and traffic
from harness.infra import progress
from harness.traffic.history import TrafficRecorder

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

ISOLATION = ("read_uncommitted", "read_committed")
#: Hard bounds of one run's traffic (the loader refuses more): threads, records, time.
MAX_PRODUCERS = 8
MAX_CONSUMERS = 8
MAX_RATE = 100_000  # records/s per producer
MAX_RECORDS = 5_000_000  # per producer
MAX_SECONDS = 3_600  # a producer stops sending after this long whatever happens
#: Delivery timeout of a traffic record (as the workload's): a record the cluster cannot
#: take fails after this, with a send_error line.
DELIVERY_TIMEOUT_MS = 12_000
#: How long stop() waits for outstanding delivery reports and for each thread.
STOP_GRACE_S = DELIVERY_TIMEOUT_MS / 1000 + 10.0
#: After the producers stop, consumers go on reading until they have polled nothing new
#: for DRAIN_QUIET_S, at most DRAIN_S: what was acknowledged last is seen too.
DRAIN_S = 10.0
DRAIN_QUIET_S = 1.0
#: How long a topic's deletion or creation waits for its consumers to act on it.
TOPIC_LIFE_WAIT_S = 15.0
#: Consumers poll at most this many records per call, waiting at most POLL_S.
POLL_BATCH = 1000
POLL_S = 0.2
#: A committing consumer commits every COMMIT_EVERY polled records or COMMIT_S seconds.
COMMIT_EVERY = 1000
COMMIT_S = 1.0


class _Window:
    """When a traffic client runs (FORMAT.md "Traffic"): it starts right after step
    ``from_step`` has run (None: once the topic has settled, before the first step) and
    stops right after step ``until_step`` has run (None: after the last step). Step
    indices, from 0."""

    from_step: int | None
    until_step: int | None

    def runs_during(self, index: int) -> bool:
        """Whether the client runs while step ``index`` runs and settles."""
        return ((self.from_step is None or index > self.from_step)
                and (self.until_step is None or index <= self.until_step))

    def started_by(self, index: int) -> bool:
        """Whether the client has started by the time step ``index`` runs (it may have
        stopped since)."""
        return self.from_step is None or index > self.from_step


@dataclass(frozen=True)
class ProducerSpec(_Window):
    """``count`` producers alike: ``rate`` records/s each (None: as fast as the client
    goes), at most ``records`` each, keys ``key0..key{keys-1}`` spread over ``topic``'s
    partitions."""

    topic: str
    count: int = 1
    rate: int | None = 1000
    acks: str = "all"
    idempotent: bool = True
    keys: int = 1000
    records: int | None = None
    line: int = 0
    #: Its window (``_Window``).
    from_step: int | None = None
    until_step: int | None = None


@dataclass(frozen=True)
class ConsumerSpec(_Window):
    """``count`` consumers alike: ``mode`` assign (every partition of ``topic`` from its
    start) or group (subscribe in group ``group``); ``commit``: commit offsets as they
    read (group mode, or assign mode with ``group`` as its group id)."""

    topic: str
    count: int = 1
    mode: str = "assign"
    group: str | None = None
    commit: bool = False
    isolation: str = "read_uncommitted"
    line: int = 0
    #: Its window (``_Window``).
    from_step: int | None = None
    until_step: int | None = None


@dataclass(frozen=True)
class TrafficSpec:
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()

    def producing(self, index: int, topic: str) -> list[ProducerSpec]:
        """The producers of ``topic`` running while step ``index`` runs and settles."""
        return [p for p in self.producers if p.topic == topic and p.runs_during(index)]

    def written_by(self, index: int, topic: str | None) -> bool:
        """Whether some producer of ``topic`` (None: of any topic) has started by the time
        step ``index`` runs: from then on the model cannot know the topic's records one by
        one (its HWM, what a read returns)."""
        return any(p.started_by(index) for p in self.producers
                   if topic is None or p.topic == topic)

    def to_json(self) -> dict[str, Any]:
        from dataclasses import asdict
        return {"producers": [asdict(p) for p in self.producers],
                "consumers": [asdict(c) for c in self.consumers]}


def client_name() -> str:
    """What the producer line of a history names as its client: the checks allow
    librdkafka's known duplicates (harness/traffic/checks.py, client_epoch_bump)."""
    return f"librdkafka {confluent_kafka.libversion()[0]}"


def partition_of(key: str, partitions: int) -> int:
    """The partition of a key: CRC32 of its bytes modulo the topic's partitions."""
    return zlib.crc32(key.encode()) % partitions


def _common(cluster: Cluster) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.client_bootstrap(), "log_level": 3,
            "socket.timeout.ms": 4000, "topic.metadata.refresh.interval.ms": 1000,
            "metadata.max.age.ms": 3000, "reconnect.backoff.max.ms": 500}


class _Worker:
    """One background thread running ``body`` until ``stop`` is set; an exception is kept
    (said by Traffic.stop), never raised in the thread."""

    def __init__(self, name: str, body: Callable[[threading.Event], None]) -> None:
        self.name = name
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._body = body
        self.thread = threading.Thread(target=self._run, name=f"traffic-{name}", daemon=True)

    def _run(self) -> None:
        try:
            self._body(self.stop)
        except BaseException as exc:  # noqa: BLE001 - kept and said by stop()
            self.error = exc


class ProducerLoop:
    """One producer: sends at its rate until stopped, its record budget is spent or
    MAX_SECONDS pass; then waits (bounded) for the outstanding delivery reports."""

    def __init__(self, name: str, spec: ProducerSpec, partitions: int, cluster: Cluster,
                 rec: TrafficRecorder) -> None:
        self.name, self.spec, self.partitions, self.rec = name, spec, partitions, rec
        self.sent = self.acked = self.failed = 0
        #: Failed records by error name (delivery reports and produce() refusals).
        self.errors: dict[str, int] = {}
        self.config = {**_common(cluster), "acks": spec.acks,
                       "enable.idempotence": spec.idempotent,
                       "linger.ms": 5, "batch.num.messages": 10_000,
                       "queue.buffering.max.messages": 100_000,
                       "message.timeout.ms": DELIVERY_TIMEOUT_MS, "retry.backoff.ms": 100}
        self.keys = [f"key{i}" for i in range(spec.keys)]
        self.key_partitions = [partition_of(k, partitions) for k in self.keys]

    def run(self, stop: threading.Event) -> None:
        spec, rec, name, topic = self.spec, self.rec, self.name, self.spec.topic
        producer = Producer(self.config)
        rec.producer(name, spec.acks, spec.idempotent, client_name())
        limit = min(spec.records or MAX_RECORDS, MAX_RECORDS)

        def report(err: KafkaError | None, msg: Any) -> None:
            rid, _, seq_text = msg.value().decode().partition(" ")
            seq = int(seq_text)
            if err is None:
                self.acked += 1
                rec.ack(name, seq, rid, topic, msg.partition(), msg.offset())
            else:
                self._failed(err.name())
                rec.send_error(name, seq, rid, topic, err.name(), msg.partition())

        start = time.monotonic()
        deadline = start + MAX_SECONDS
        try:
            seq = 0
            while seq < limit and not stop.is_set() and time.monotonic() < deadline:
                if spec.rate:
                    ahead = start + seq / spec.rate - time.monotonic()
                    if ahead > 0:
                        producer.poll(min(ahead, 0.1))
                        continue
                k = seq % len(self.keys)
                rid = f"{name}-{seq}"
                part = self.key_partitions[k]
                handed = False
                refused: str | None = None
                while not handed and refused is None:
                    try:
                        producer.produce(topic, key=self.keys[k], value=f"{rid} {seq}",
                                         partition=part, on_delivery=report)
                        handed = True
                    except BufferError:  # the local queue is full: serve reports first
                        producer.poll(0.05)
                        if stop.is_set() or time.monotonic() >= deadline:
                            break
                    except KafkaException as exc:
                        # Refused at once by the client (e.g. _UNKNOWN_TOPIC or
                        # _UNKNOWN_PARTITION while the topic is deleted): a failed send,
                        # not a crash; the checks count it as an expected error while the
                        # topic is absent (harness/traffic/incarnations.py).
                        refused = exc.args[0].name() if exc.args else type(exc).__name__
                if refused is not None:
                    rec.send(name, seq, rid, topic, part)
                    rec.send_error(name, seq, rid, topic, refused, part)
                    self._failed(refused)
                    seq += 1
                    self.sent = seq
                    producer.poll(0.05)  # no busy loop while the topic is gone
                    continue
                if not handed:
                    break
                # Its reports are served by this thread's poll/flush only: the send line
                # is written before any ack or error line of the record.
                rec.send(name, seq, rid, topic, part)
                seq += 1
                self.sent = seq
                if seq % 100 == 0:
                    producer.poll(0)
        finally:
            left = producer.flush(STOP_GRACE_S)
            if left:
                progress.say(f"traffic {name}: {left} record(s) without a delivery report "
                             f"after {STOP_GRACE_S:g} s (recorded as sent only)")


    def _failed(self, error: str) -> None:
        self.failed += 1
        self.errors[error] = self.errors.get(error, 0) + 1


class ConsumerLoop:
    """One consumer: assigned every partition of its topic from the start, or subscribed
    in a group; records every polled record and (committing) every accepted commit.
    ``session`` changes at every assignment and every offset reset (a seek)."""

    def __init__(self, name: str, spec: ConsumerSpec, partitions: int, cluster: Cluster,
                 rec: TrafficRecorder, run_id: str) -> None:
        self.name, self.spec, self.partitions, self.rec = name, spec, partitions, rec
        self.base_group = self.group = spec.group or f"kafka-chaos-{run_id}-{name}"
        self.session = -1
        #: The incarnation of its topic to read (None: the topic is deleted, read nothing),
        #: set by the runner (``Traffic.topic_life``), and the one this thread reads now.
        #: A new incarnation is read by a new client from its start, in a new session, in
        #: group mode in a group of its own (``<group>.inc<k>``): the coordinator deletes
        #: a deleted topic's committed offsets, and a commit racing that must not move the
        #: new incarnation's start.
        self.wanted: int | None = 0
        self.reading: int | None = 0
        self.polled = 0
        #: An asynchronous commit not yet answered. One at a time: with two in flight a
        #: retried earlier one (the coordinator moved) can be answered after a later one,
        #: and the callbacks' order would no longer be the order the coordinator applied
        #: them (seen on 4.3.1 with a leader kill: commit_order reported 1712 -> 1266).
        self.committing = False
        self.config = {**_common(cluster), "group.id": self.group,
                       "enable.auto.commit": False, "auto.offset.reset": "error",
                       "isolation.level": spec.isolation,
                       "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1000,
                       "on_commit": self._committed}

    def _committed(self, err: KafkaError | None, parts: list[TopicPartition]) -> None:
        self.committing = False
        if err is not None:
            return
        for tp in parts:
            if tp.error is None and tp.offset >= 0:
                self.rec.commit(self.name, self.group, tp.topic, tp.partition, tp.offset,
                                incarnation=self.reading or 0)

    def _new_session(self, *_: Any) -> None:
        self.session += 1

    def _assigned(self, consumer: Any, parts: list[TopicPartition]) -> None:
        """A group assignment: a new session, each partition from its committed offset,
        or from its start when the group has none (never an automatic reset)."""
        self.session += 1
        try:
            committed = consumer.committed(parts, timeout=10)
        except KafkaException:
            committed = parts
        consumer.assign([TopicPartition(tp.topic, tp.partition,
                                        tp.offset if tp.offset >= 0 else 0)
                         for tp in committed])

    def _reset(self, consumer: Any, topic: str, partition: int) -> None:
        """Out of range (the log was cut back under the consumer): read the partition from
        its start again, in a new session."""
        self.session += 1
        try:
            consumer.seek(TopicPartition(topic, partition, 0))
            return
        except KafkaException:
            pass
        if self.spec.mode == "assign":  # re-assign: the others where they are
            positions = {tp.partition: tp.offset for tp in consumer.position(
                [TopicPartition(topic, p) for p in range(self.partitions)])}
            consumer.assign([TopicPartition(topic, p, 0 if p == partition or
                                            positions.get(p, -1) < 0 else positions[p])
                             for p in range(self.partitions)])

    def _fetch(self, consumer: Any) -> Iterator[Any]:
        """The next records (at most POLL_BATCH, waiting at most POLL_S for the first). In
        group mode one poll per record, lazily: a rebalance callback runs inside a poll, so
        each record is taken after the callbacks that precede it and the loop sees the
        session change before the record (``consume`` would run them in the middle of its
        batch)."""
        if self.spec.mode != "group":
            yield from consumer.consume(POLL_BATCH, POLL_S)
            return
        msg = consumer.poll(POLL_S)
        for taken in range(1, POLL_BATCH + 1):
            if msg is None:
                return
            yield msg
            if taken < POLL_BATCH:  # never poll a record this batch does not take
                msg = consumer.poll(0)

    def _open(self, incarnation: int) -> Any:
        """A client reading ``incarnation`` of its topic from the start (a new session)."""
        self.group = (self.base_group if incarnation == 0
                      else f"{self.base_group}.inc{incarnation}")
        consumer = Consumer({**self.config, "group.id": self.group})
        if self.spec.mode == "group":
            consumer.subscribe([self.spec.topic], on_assign=self._assigned,
                               on_revoke=self._new_session)
        else:
            self._new_session()
            consumer.assign([TopicPartition(self.spec.topic, p, 0)
                             for p in range(self.partitions)])
        self.reading = incarnation
        return consumer

    def run(self, stop: threading.Event) -> None:
        spec, rec, name = self.spec, self.rec, self.name
        consumer: Any = None
        try:
            pending: dict[int, int] = {}
            last_commit = time.monotonic()
            since_commit = 0
            while not stop.is_set():
                wanted = self.wanted
                if consumer is None or wanted != self.reading:
                    if consumer is not None:  # its topic was deleted: stop reading it
                        consumer.close()
                        consumer, pending, self.committing = None, {}, False
                        self.reading = None
                    if wanted is None:
                        stop.wait(POLL_S)
                        continue
                    consumer = self._open(wanted)
                batch: list[tuple[str, int, int, str]] = []
                session = self.session
                inc = self.reading or 0
                for msg in self._fetch(consumer):
                    if self.session != session:  # a rebalance callback ran before msg
                        rec.polls(name, session, batch, inc)
                        batch, session = [], self.session
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._AUTO_OFFSET_RESET:
                            self._reset(consumer, str(msg.topic()), int(msg.partition() or 0))
                        continue
                    value = msg.value() or b""
                    rid = value.decode(errors="replace").partition(" ")[0]
                    offset, part = int(msg.offset() or 0), int(msg.partition() or 0)
                    batch.append((str(msg.topic()), part, offset, rid))
                    pending[part] = offset + 1
                    self.polled += 1
                    since_commit += 1
                rec.polls(name, session, batch, inc)
                if spec.commit and pending and not self.committing and (
                        since_commit >= COMMIT_EVERY
                        or time.monotonic() - last_commit >= COMMIT_S):
                    self.committing = True
                    try:
                        consumer.commit(offsets=[TopicPartition(spec.topic, p, o)
                                                 for p, o in sorted(pending.items())],
                                        asynchronous=True)
                    except BaseException:
                        self.committing = False  # no callback will come for it
                        raise
                    pending, since_commit, last_commit = {}, 0, time.monotonic()
        finally:
            if consumer is not None:
                consumer.close()


class Traffic:
    """The run's producers and consumers, created after the topic exists; each started
    at its window's start and stopped (bounded) at its end (``_Window``): ``start(None)``
    before the first step, ``between(i)`` after step i, ``stop()`` after the last (or
    when the run ends early), before the final read."""

    def __init__(self, spec: TrafficSpec, cluster: Cluster, rec: TrafficRecorder,
                 partitions: Callable[[str], int]) -> None:
        self.spec, self.cluster, self.rec = spec, cluster, rec
        run_id = cluster.history.run_id
        self.producers: list[ProducerLoop] = []
        self.consumers: list[ConsumerLoop] = []
        for i, ps in enumerate(spec.producers):
            for j in range(ps.count):
                self.producers.append(ProducerLoop(f"p{i}.{j}", ps, partitions(ps.topic),
                                                   cluster, rec))
        for i, cs in enumerate(spec.consumers):
            for j in range(cs.count):
                self.consumers.append(ConsumerLoop(f"c{i}.{j}", cs, partitions(cs.topic),
                                                   cluster, rec, run_id))
        self._workers = ([_Worker(p.name, p.run) for p in self.producers]
                         + [_Worker(c.name, c.run) for c in self.consumers])
        self._specs: list[ProducerSpec | ConsumerSpec] = (
            [p.spec for p in self.producers] + [c.spec for c in self.consumers])
        #: Per topic, the incarnation its consumers are to read (None: deleted).
        self._wanted: dict[str, int | None] = {}
        #: What went wrong with the threads stopped so far (``_stop``).
        self.problems: list[str] = []
        #: When the traffic started, when the producers had stopped, when everything had.
        self.started = self.produced = self.stopped = 0.0

    def start(self, after: int | None = None) -> list[str]:
        """Start the clients whose window starts after step ``after`` (None: before the
        first step); their names."""
        names = []
        for w, spec in zip(self._workers, self._specs, strict=True):
            if spec.from_step == after and w.thread.ident is None:
                for c in self.consumers:  # a consumer starting late: what exists now
                    if c.name == w.name:
                        c.wanted = self._wanted.get(c.spec.topic, 0)
                if not self.started:
                    self.started = time.monotonic()
                w.thread.start()
                names.append(w.name)
        return names

    def between(self, index: int) -> tuple[list[str], list[str]]:
        """After step ``index``: stop the clients whose window ends with it (bounded, as
        ``stop``), then start those whose window starts after it. (stopped, started)."""
        ending = [w for w, spec in zip(self._workers, self._specs, strict=True)
                  if spec.until_step == index and self._running(w)]
        self._stop(ending)
        return [w.name for w in ending], self.start(index)

    def stop(self) -> list[str]:
        """Stop every thread still running: producers first (each waits, bounded, for its
        delivery reports), then consumers. Returns what went wrong with any thread stopped
        (now or after an earlier step: a thread that raised or did not end in time), each
        also said."""
        self._stop([w for w in self._workers if self._running(w)])
        self.stopped = time.monotonic()
        return list(self.problems)

    @staticmethod
    def _running(w: _Worker) -> bool:
        return w.thread.ident is not None and not w.stop.is_set()

    def _stop(self, workers: list[_Worker]) -> None:
        if not workers:
            return
        count = len(self.producers)
        producers = [w for w in workers if self._workers.index(w) < count]
        consumers = [w for w in workers if self._workers.index(w) >= count]
        for w in producers:
            w.stop.set()
        deadline = time.monotonic() + STOP_GRACE_S + 5.0
        for w in producers:
            w.thread.join(max(0.0, deadline - time.monotonic()))
        if producers:
            self.produced = time.monotonic()
        if consumers and not any(self._running(w) and w.thread.is_alive()
                                 for w in self._workers[:count]):
            # Nothing is written any more: let them read what was acknowledged last.
            self._drain([c for c, w in zip(self.consumers, self._workers[count:], strict=True)
                         if w in consumers])
        for w in consumers:
            w.stop.set()
        deadline = time.monotonic() + STOP_GRACE_S + 5.0
        problems = []
        for w in workers:
            w.thread.join(max(0.0, deadline - time.monotonic()))
            if w.thread.is_alive():
                problems.append(f"traffic {w.name}: still running {STOP_GRACE_S + 5:g} s "
                                "after stop (a daemon thread, dropped with the process)")
            elif w.error is not None:
                problems.append(f"traffic {w.name}: {type(w.error).__name__}: {w.error}")
        for p in problems:
            progress.say(p)
        self.problems.extend(problems)

    def _drain(self, consumers: list[ConsumerLoop]) -> None:
        """Let ``consumers`` read what the producers wrote last: until none has polled a
        record for DRAIN_QUIET_S, at most DRAIN_S."""
        if not consumers:
            return
        end = time.monotonic() + DRAIN_S
        seen, quiet_since = -1, time.monotonic()
        while time.monotonic() < end:
            polled = sum(c.polled for c in consumers)
            if polled != seen:
                seen, quiet_since = polled, time.monotonic()
            elif time.monotonic() - quiet_since >= DRAIN_QUIET_S:
                return
            time.sleep(0.1)

    def topic_life(self, kind: str, topic: str, phase: str) -> list[str]:
        """A topic deleted or created again (the runner, around a delete_topic /
        create_topic step): its line in the history (``TrafficRecorder.topic_life``), and
        the consumers of ``topic`` told: a deletion requested stops their reading of it, a
        creation settled starts their reading of the new incarnation from its start (a
        refusal takes the change back). Producers go on: what they send meanwhile fails
        with the client's errors, counted as expected by the checks. Waits (bounded) for
        each running consumer to act on it; returns those that did not in time."""
        self.rec.topic_life(kind, topic, phase)
        now = self.rec.incarnations.get(topic, 0)
        wanted: int | None
        if (kind, phase) == ("topic_deleted", "requested"):
            wanted = None
        elif phase == "refused" and kind == "topic_deleted" or phase == "settled" \
                and kind == "topic_created":
            wanted = now  # (a refused creation leaves the topic deleted: nothing to do)
        else:
            return []
        self._wanted[topic] = wanted
        mine = [(c, w) for c, w in zip(self.consumers, self._workers[len(self.producers):],
                                       strict=True) if c.spec.topic == topic]
        for c, _ in mine:
            c.wanted = wanted
        deadline = time.monotonic() + TOPIC_LIFE_WAIT_S
        late = []
        for c, w in mine:
            while (self._running(w) and w.thread.is_alive() and c.reading != wanted
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            if self._running(w) and w.thread.is_alive() and c.reading != wanted:
                late.append(c.name)
        return late

    def summary(self) -> dict[str, Any]:
        """Throughput from the first client's start (with windows: over the time from the
        first start to the last producer's stop, pauses included)."""
        begin = self.started or self.stopped or time.monotonic()  # none started: 0 s
        wall = max((self.stopped or time.monotonic()) - begin, 1e-9)
        producing = max((self.produced or self.stopped or time.monotonic()) - begin, 1e-9)
        sent = sum(p.sent for p in self.producers)
        acked = sum(p.acked for p in self.producers)
        acked_all = sum(p.acked for p in self.producers if p.spec.acks == "all")
        return {"seconds": round(wall, 2), "producing_s": round(producing, 2), "sent": sent,
                "acked": acked, "failed": sum(p.failed for p in self.producers),
                "errors": _merged(p.errors for p in self.producers),
                "acked_per_s": round(acked / producing, 1),
                "acked_all_per_s": round(acked_all / producing, 1),
                "polled": sum(c.polled for c in self.consumers)}


def _merged(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for name, n in c.items():
            out[name] = out.get(name, 0) + n
    return dict(sorted(out.items()))
