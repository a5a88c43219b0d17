"""One streamed pass over a traffic history, kept as compact per-id and per-offset facts.

The order-free checks (lost writes, duplicates, inconsistent offsets, lost after read,
unseen) are computed from these facts at the end; the two order checks (polls, commits)
are judged while the events stream by, since they need only each session's and each
group's last offset. Memory grows with distinct ids, offsets, sessions and groups, never
with events: a record polled by ten consumers costs what it costs polled once.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from harness.traffic.columns import ABSENT, Column, Names, OffsetMap, Times

#: settings of a producer that declared none: Kafka's defaults since 3.0
DEFAULT_SETTINGS = ("all", True)
#: the client a producer line names when it names none: every producer the harness has
#: ever run is confluent-kafka's, i.e. librdkafka (history schema < 1.2)
DEFAULT_CLIENT = "librdkafka"
#: librdkafka's error for a record whose message.timeout.ms ran out
#: (RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)
MSG_TIMED_OUT = "_MSG_TIMED_OUT"

Position = tuple[int, int]  # (partition number, offset)


class Smallest:
    """The `limit` smallest of any number of items by `key`, in order."""

    def __init__(self, limit: int, key: Callable[[dict[str, Any]], Any]) -> None:
        self.limit = limit
        self._key = key
        self._items: list[dict[str, Any]] = []

    def add(self, item: dict[str, Any]) -> None:
        self._items.append(item)
        if len(self._items) > 2 * self.limit + 16:
            self._trim()

    def _trim(self) -> None:
        self._items.sort(key=self._key)
        del self._items[self.limit:]

    def items(self) -> list[dict[str, Any]]:
        self._trim()
        return list(self._items)


class Positions:
    """Where each id was acked, polled or finally read: its first (partition, offset) in two
    columns; only for the rare id seen at more than one position, the set of them all and
    the set of those polled. `polled` (a column) says whether an id was polled at all: an
    id at one position polled there."""

    def __init__(self, polled: Column) -> None:
        self._partition = Column("i")
        self._offset = Column("q")
        self._polled = polled
        self.more: dict[int, set[Position]] = {}
        self.polled_more: dict[int, set[Position]] = {}

    def add(self, id_number: int, partition: int, offset: int, polled: bool) -> None:
        """Call before marking the id polled: `polled` is whether this position is."""
        first = self._partition[id_number]
        if first == ABSENT:
            self._partition[id_number] = partition
            self._offset[id_number] = offset
        elif id_number in self.more:
            self.more[id_number].add((partition, offset))
            if polled:
                self.polled_more[id_number].add((partition, offset))
        elif first != partition or self._offset[id_number] != offset:
            self._split(id_number, (partition, offset), polled)

    def _split(self, id_number: int, position: Position, polled: bool) -> None:
        known = (self._partition[id_number], self._offset[id_number])
        self.more[id_number] = {known, position}
        self.polled_more[id_number] = (({known} if self._polled[id_number] == 1 else set())
                                       | ({position} if polled else set()))

    def of(self, id_number: int) -> set[Position]:
        if id_number in self.more:
            return self.more[id_number]
        if self._partition[id_number] == ABSENT:
            return set()
        return {(self._partition[id_number], self._offset[id_number])}

    def polled_of(self, id_number: int) -> set[Position]:
        if id_number in self.polled_more:
            return self.polled_more[id_number]
        return self.of(id_number) if self._polled[id_number] == 1 else set()


class OrderWatch:
    """Offsets per key (a consumer session's partition, a group's partition) in the order
    recorded: counts and the first examples of those that break `rule(previous, offset)`,
    which names the break ("back", "skip") or gives None. An example names the event's
    `fields`, the previous offset and the event's line."""

    def __init__(self, rule: Callable[[int, int], str | None], fields: tuple[str, ...],
                 limit: int) -> None:
        self._rule = rule
        self._fields = fields
        self._limit = limit
        self._last: dict[tuple[Any, ...], int] = {}
        self.seen = 0
        self.breaks: dict[str, int] = {}
        self.examples: list[dict[str, Any]] = []

    def see(self, key: tuple[Any, ...], event: Mapping[str, Any]) -> None:
        self.seen += 1
        offset = event["offset"]
        previous = self._last.get(key)
        self._last[key] = offset
        broken = None if previous is None else self._rule(previous, offset)
        if broken is not None:
            self._count(broken, previous, event)

    def _count(self, broken: str, previous: int | None, event: Mapping[str, Any]) -> None:
        self.breaks[broken] = self.breaks.get(broken, 0) + 1
        if len(self.examples) < self._limit:
            self.examples.append({**{f: event[f] for f in self._fields},
                                  "previous": previous, "offset": event["offset"],
                                  "break": broken, "line": event["n"]})


def poll_break(previous: int, offset: int) -> str | None:
    """Within one session a partition's polls go up by one: back (or a repeat) and skip
    are breaks. No offset is known to be non-data (transaction markers and compaction are
    not in scope), so any gap is a skip."""
    if offset <= previous:
        return "back"
    return "skip" if offset > previous + 1 else None


def commit_break(previous: int, offset: int) -> str | None:
    """A group's committed offset of a partition never goes back (a repeat is fine)."""
    return "back" if offset < previous else None


class TrafficIndex:
    """Feed it every event of a history, in order (`build`), then ask the checks."""

    def __init__(self, examples: int = 20) -> None:
        self.examples = examples
        self.events = 0
        self.ids: Names[str] = Names()
        self.partitions: Names[tuple[str, int]] = Names()
        self.producers: Names[str] = Names()
        self.settings: dict[int, tuple[str, bool]] = {}  # producer -> (acks, idempotent)
        self.clients: dict[int, str] = {}  # producer -> the client its line names
        self.timeouts: dict[int, list[float]] = {}  # producer -> its MSG_TIMED_OUT times
        self._timeouts_sorted: set[int] = set()
        self.sent_at = Times()  # id -> time of its first send
        self.answered_at = Times()  # id -> time of its first ack or send_error
        self.producer_of = Column("i")  # id -> producer of its first send
        self.acked_partition = Column("i")  # id -> partition of its first ack
        self.acked_offset = Column("q")  # id -> offset of its first ack (ABSENT: none)
        self.polled = Column("b")  # id -> 1 once any consumer polled it
        self.in_final = Column("b")  # id -> 1 once the final read held it
        self.positions = Positions(self.polled)  # acked, polled, finally read at
        self._partition_numbers: dict[str, dict[int, int]] = {}
        self.read_at: dict[int, OffsetMap] = {}  # partition -> offset -> first id read there
        self.conflicts: dict[Position, set[int]] = {}  # read with more than one id
        self.final_at: dict[int, OffsetMap] = {}  # partition -> offset -> first final id
        self.complete: set[int] = set()  # partitions whose final read reached the end
        self.polls = OrderWatch(poll_break, ("consumer", "session", "topic", "partition"),
                                examples)
        self.commits = OrderWatch(commit_break, ("group", "consumer", "topic", "partition"),
                                  examples)
        self._handlers: dict[str, Callable[[Mapping[str, Any]], None]] = {
            "producer": self._producer, "send": self._send, "ack": self._ack,
            "send_error": self._send_error,
            "poll": self._poll, "commit": self._commit, "final_read": self._final_read,
            "final_read_end": self._final_read_end}

    @classmethod
    def build(cls, events: Iterable[Mapping[str, Any]], examples: int = 20) -> TrafficIndex:
        index = cls(examples)
        for event in events:
            index.feed(event)
        return index

    def feed(self, event: Mapping[str, Any]) -> None:
        self.events += 1
        handler = self._handlers.get(event["kind"])
        if handler is not None:
            handler(event)

    # --- per kind -------------------------------------------------------------------------

    def _producer(self, e: Mapping[str, Any]) -> None:
        producer = self.producers.number(e["producer"])
        self.settings.setdefault(producer, (e["acks"], e["idempotent"]))
        self.clients.setdefault(producer, e.get("client") or DEFAULT_CLIENT)

    def _send(self, e: Mapping[str, Any]) -> None:
        id_number = self.ids.number(e["id"])
        if self.producer_of[id_number] == ABSENT:
            self.producer_of[id_number] = self.producers.number(e["producer"])
            if e.get("t") is not None:
                self.sent_at[id_number] = e["t"]

    def _send_error(self, e: Mapping[str, Any]) -> None:
        self._answered(self.ids.number(e["id"]), e)
        if e["error"] == MSG_TIMED_OUT and e.get("t") is not None:
            self.timeouts.setdefault(self.producers.number(e["producer"]), []).append(e["t"])

    def _answered(self, id_number: int, e: Mapping[str, Any]) -> None:
        if self.answered_at[id_number] is None and e.get("t") is not None:
            self.answered_at[id_number] = e["t"]

    def _ack(self, e: Mapping[str, Any]) -> None:
        id_number = self.ids.number(e["id"])
        self._answered(id_number, e)
        partition = self._partition(e)
        if self.acked_partition[id_number] == ABSENT:
            self.acked_partition[id_number] = partition
            if e["offset"] is not None:
                self.acked_offset[id_number] = e["offset"]
        if e["offset"] is not None:
            self.positions.add(id_number, partition, e["offset"], polled=False)

    def _poll(self, e: Mapping[str, Any]) -> None:
        id_number = self.ids.number(e["id"])
        partition = self._partition(e)
        self.positions.add(id_number, partition, e["offset"], polled=True)
        self.polled[id_number] = 1
        self._read(partition, e["offset"], id_number)
        self.polls.see((e["consumer"], e["session"], partition), e)

    def _commit(self, e: Mapping[str, Any]) -> None:
        self.commits.see((e["group"], self._partition(e)), e)

    def _final_read(self, e: Mapping[str, Any]) -> None:
        id_number = self.ids.number(e["id"])
        partition = self._partition(e)
        self.in_final[id_number] = 1
        self.positions.add(id_number, partition, e["offset"], polled=False)
        self._read(partition, e["offset"], id_number)
        final = _map_of(self.final_at, partition)
        if final.get(e["offset"]) == ABSENT:
            final.set(e["offset"], id_number)

    def _final_read_end(self, e: Mapping[str, Any]) -> None:
        if e["complete"]:
            self.complete.add(self._partition(e))

    def _partition(self, e: Mapping[str, Any]) -> int:
        numbers = self._partition_numbers.get(e["topic"])
        if numbers is None:
            numbers = self._partition_numbers[e["topic"]] = {}
        number = numbers.get(e["partition"])
        if number is None:
            number = numbers[e["partition"]] = self.partitions.number((e["topic"],
                                                                       e["partition"]))
        return number

    def _read(self, partition: int, offset: int, id_number: int) -> None:
        seen = _map_of(self.read_at, partition)
        first = seen.get(offset)
        if first == ABSENT:
            seen.set(offset, id_number)
        elif first != id_number:
            self.conflicts.setdefault((partition, offset), {first}).add(id_number)

    # --- what the checks ask ----------------------------------------------------------------

    def acked(self) -> Iterator[tuple[int, int, int | None]]:
        """(id, partition, offset or None) of every acknowledged id."""
        for id_number in range(len(self.ids)):
            partition = self.acked_partition[id_number]
            if partition != ABSENT:
                offset = self.acked_offset[id_number]
                yield id_number, partition, None if offset == ABSENT else offset

    def producer_settings(self, id_number: int) -> tuple[str, bool]:
        producer = self.producer_of[id_number]
        return self.settings.get(producer, DEFAULT_SETTINGS)

    def client_of(self, id_number: int) -> str:
        return self.clients.get(self.producer_of[id_number], DEFAULT_CLIENT)

    def timed_out_between(self, id_number: int) -> bool:
        """Whether the id's producer reported a MSG_TIMED_OUT after the id was sent and no
        later than the id's own answer (its ack or send error): te in (sent, answered]."""
        sent, answered = self.sent_at[id_number], self.answered_at[id_number]
        times = self._sorted_timeouts(self.producer_of[id_number])
        if sent is None or answered is None or not times:
            return False
        first_after = bisect_right(times, sent)
        return first_after < len(times) and times[first_after] <= answered

    def _sorted_timeouts(self, producer: int) -> list[float]:
        times = self.timeouts.get(producer, [])
        if producer not in self._timeouts_sorted:  # threads' lines may interleave out of order
            times.sort()
            self._timeouts_sorted.add(producer)
        return times

    def producer_name(self, id_number: int) -> str | None:
        producer = self.producer_of[id_number]
        return None if producer == ABSENT else self.producers.keys[producer]

    def lost(self, id_number: int, partition: int) -> bool:
        """Judged (its partition's final read is complete) and not in the final read."""
        return partition in self.complete and self.in_final[id_number] != 1

    def final_id(self, partition: int, offset: int) -> int:
        final = self.final_at.get(partition)
        return ABSENT if final is None else final.get(offset)

    def offsets_read(self) -> int:
        return sum(1 for seen in self.read_at.values() for _ in seen.items())


def _map_of(maps: dict[int, OffsetMap], partition: int) -> OffsetMap:
    """The partition's map, made on first use (setdefault would make one every call)."""
    found = maps.get(partition)
    if found is None:
        found = maps[partition] = OffsetMap()
    return found
