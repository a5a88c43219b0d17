"""harness/client/traffic.py without a cluster: the group consumer's record-by-record
fetch takes every record (a record polled past a batch's end was once dropped: a skip of
one offset every 1,001 records in the poll_order check), and a recorder's batch of polls
is numbered like single polls; a consumer across a topic's deletion and re-creation; a
producer refused by its client."""

from __future__ import annotations

from typing import Any

from harness.client.traffic import POLL_BATCH, ConsumerLoop, ConsumerSpec
from harness.traffic.history import TrafficRecorder, well_typed


class _Msg:
    def __init__(self, i: int) -> None:
        self.i = i


class _Consumer:
    def __init__(self, n: int) -> None:
        self.n, self.i = n, 0

    def poll(self, timeout: float) -> Any:
        if self.i >= self.n:
            return None
        self.i += 1
        return _Msg(self.i - 1)


def test_group_fetch_takes_every_record_batch_after_batch() -> None:
    loop = ConsumerLoop.__new__(ConsumerLoop)
    loop.spec = ConsumerSpec(topic="t", mode="group")
    consumer = _Consumer(2 * POLL_BATCH + 5)
    got: list[int] = []
    sizes = []
    while batch := [m.i for m in loop._fetch(consumer)]:
        got += batch
        sizes.append(len(batch))
    assert got == list(range(2 * POLL_BATCH + 5))
    assert sizes == [POLL_BATCH, POLL_BATCH, 5]


def test_a_batch_of_polls_is_numbered_in_order() -> None:
    out: list[dict[str, Any]] = []
    rec = TrafficRecorder(out.append, clock=lambda: 1.5)
    rec.poll("c", 0, "t", 0, 0, "a")
    rec.polls("c", 1, [("t", 0, 1, "b"), ("t", 1, 0, "c")])
    rec.polls("c", 1, [])
    assert [(e["n"], e["session"], e["id"]) for e in out] == [(0, 0, "a"), (1, 1, "b"),
                                                             (2, 1, "c")]
    assert all(well_typed(e) and e["kind"] == "poll" for e in out)


class _Record:
    def __init__(self, topic: str, offset: int, rid: str) -> None:
        self._t, self._o, self._v = topic, offset, f"{rid} 0".encode()

    def error(self) -> None:
        return None

    def value(self) -> bytes:
        return self._v

    def topic(self) -> str:
        return self._t

    def offset(self) -> int:
        return self._o

    def partition(self) -> int:
        return 0


class _IncarnationConsumer:
    """A client of one incarnation: its records once, then nothing (made per group)."""
    made: list[tuple[str, list[Any]]] = []
    logs: dict[str, list[str]] = {}

    def __init__(self, config: dict[str, Any]) -> None:
        self.group = config["group.id"]
        self.records = list(self.logs.get(self.group, []))
        self.closed = False

    def assign(self, parts: list[Any]) -> None:
        _IncarnationConsumer.made.append((self.group, [p.offset for p in parts]))

    def consume(self, n: int, timeout: float) -> list[Any]:
        out = [_Record("t", i, r) for i, r in enumerate(self.records)]
        self.records = []
        return out

    def close(self) -> None:
        self.closed = True


def test_a_consumer_stops_at_the_deletion_and_reads_the_new_incarnation_from_its_start(
        monkeypatch: Any) -> None:
    """Traffic.topic_life's effect on an assign consumer: no client while the topic is
    deleted; then a new client (group ``<group>.inc1``) assigned from offset 0, in a new
    session, its polls naming incarnation 1."""
    import threading
    import time

    from harness.client import traffic as T
    monkeypatch.setattr(T, "Consumer", _IncarnationConsumer)
    _IncarnationConsumer.made = []
    _IncarnationConsumer.logs = {"g": ["a0", "a1"], "g.inc1": ["b0"]}
    out: list[dict[str, Any]] = []
    rec = TrafficRecorder(out.append)
    loop = ConsumerLoop.__new__(ConsumerLoop)
    loop.name, loop.partitions, loop.rec = "c", 1, rec
    loop.spec = ConsumerSpec(topic="t", group="g")
    loop.base_group = loop.group = "g"
    loop.session, loop.polled, loop.committing = -1, 0, False
    loop.wanted, loop.reading, loop.config = 0, 0, {"group.id": "g"}
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()

    def until(cond: Any) -> None:
        end = time.monotonic() + 10
        while not cond() and time.monotonic() < end:
            time.sleep(0.01)
        assert cond()

    until(lambda: len(out) == 2)
    loop.wanted = None
    until(lambda: loop.reading is None)
    loop.wanted = 1
    until(lambda: len(out) == 3)
    stop.set()
    thread.join(5)
    assert [(e["id"], e["session"], e.get("incarnation", 0), e["offset"]) for e in out] == [
        ("a0", 0, 0, 0), ("a1", 0, 0, 1), ("b0", 1, 1, 0)]
    assert _IncarnationConsumer.made == [("g", [0]), ("g.inc1", [0])]
    assert all(well_typed(e) for e in out)


class _RefusingProducer:
    """Refuses every record at once, as librdkafka does for a topic it knows is gone."""

    def __init__(self, config: dict[str, Any]) -> None:
        pass

    def produce(self, *args: Any, **kwargs: Any) -> None:
        from confluent_kafka import KafkaError, KafkaException
        raise KafkaException(KafkaError(KafkaError._UNKNOWN_TOPIC))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0


def test_a_producer_refused_by_its_client_records_failed_sends_and_goes_on(
        monkeypatch: Any) -> None:
    """A record produce() refuses (the topic deleted) is a send and a send_error line and
    a failed count by name, never a crashed thread."""
    import threading

    from harness.client import traffic as T
    monkeypatch.setattr(T, "Producer", _RefusingProducer)
    out: list[dict[str, Any]] = []
    loop = T.ProducerLoop.__new__(T.ProducerLoop)
    loop.name, loop.rec, loop.partitions = "p", TrafficRecorder(out.append), 1
    loop.spec = T.ProducerSpec(topic="t", rate=None, records=3)
    loop.sent = loop.acked = loop.failed = 0
    loop.errors, loop.config = {}, {}
    loop.keys, loop.key_partitions = ["k"], [0]
    loop.run(threading.Event())
    assert [e["kind"] for e in out] == ["producer"] + ["send", "send_error"] * 3
    assert {e["error"] for e in out if e["kind"] == "send_error"} == {"_UNKNOWN_TOPIC"}
    assert (loop.sent, loop.failed, loop.errors) == (3, 3, {"_UNKNOWN_TOPIC": 3})
