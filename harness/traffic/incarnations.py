"""Topics deleted and created again under traffic (docs/TRAFFIC.md "Topics deleted and
created again"): each incarnation of a topic is a log of its own, judged apart.

The runner writes a ``topic_deleted`` / ``topic_created`` line (``phase`` requested, refused,
settled) around each DeleteTopics / CreateTopics (history.py ``TopicLife``). From those:

- incarnation k of a topic (0: created before step 0) may hold a record from before its
  creation was requested (k >= 1) until the next creation was requested (the conservative
  end: the harness does not observe when every broker has dropped the old partitions, and
  a produce response from the old log may reach the client's delivery callback late);
- polls, commits and the final read name the incarnation they read (``incarnation``: the
  consumer was told by the runner, and re-assigned the new one from its start);
- an ack belongs to the incarnations that could hold its record between its ``send`` line
  and its ``ack`` line. One: it is that log's. Several (a send that raced the deletion and
  the re-creation, acked after it): the final read decides when it holds the id in the
  topic's last incarnation; otherwise the ack is **indeterminate** (it went to a deleted
  incarnation, gone by request, or it is lost from the new one, and the history cannot
  tell which): counted and reported with examples, never silently dropped, never lost;
- an ack of an incarnation deleted since is **gone by request**: its records went with the
  topic (lost_writes counts it ``gone_by_request``, not lost, not unjudged);
- a ``send_error`` whose send-to-report span meets a window where the topic was absent
  (from its deletion requested to its re-creation settled, or to the end) is an
  **expected error** (the producer wrote to a deleted topic), counted by error name.

A log is named by its topic for incarnation 0 and ``topic#k`` for incarnation k (``#`` is
not a legal character of a Kafka topic name, so no log name meets a real topic's).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.traffic.columns import ABSENT
from harness.traffic.history import TOPIC_LIFE, Event
from harness.traffic.index import Smallest, TrafficIndex

#: Examples kept of indeterminate acks.
EXAMPLES = 20


def log_name(topic: str, incarnation: int) -> str:
    """The log of ``topic``'s incarnation: the topic's name for the first, ``topic#k``."""
    return topic if incarnation == 0 else f"{topic}#{incarnation}"


def has_topic_life(path: Path) -> bool:
    """Whether a history on disk deletes or creates a topic (a byte scan, line by line)."""
    with open(path, "rb") as fh:
        return any(b'"topic_deleted"' in line or b'"topic_created"' in line for line in fh)


@dataclass
class TopicLife:
    """One topic's deletions and creations, as line numbers (``n``) of the history."""
    deletes: list[int] = field(default_factory=list)  # deletion k requested: of incarnation k
    creates: list[int] = field(default_factory=list)  # creation k requested: incarnation k+1
    settled: list[float] = field(default_factory=list)  # creation k settled (inf: never)

    def incarnation_at(self, n: int) -> int:
        """The newest incarnation whose creation was requested before line ``n``."""
        return bisect.bisect_right(self.creates, n)

    @property
    def last(self) -> int:
        return len(self.creates)

    def gone(self, incarnation: int) -> bool:
        """Deleted by request (and the history says so)."""
        return incarnation < len(self.deletes)

    def absent_during(self, start: int, end: int) -> bool:
        """Whether lines [start, end] meet a window where the topic was absent: from a
        deletion requested to the next creation settled (or the end)."""
        for k, deleted in enumerate(self.deletes):
            back = self.settled[k] if k < len(self.settled) else math.inf
            if deleted <= end and start <= back:
                return True
        return False


def _apply(life: TopicLife, event: Mapping[str, Any]) -> None:
    kind, phase, n = event["kind"], event["phase"], int(event["n"])
    if kind == "topic_deleted":
        if phase == "requested":
            life.deletes.append(n)
        elif phase == "refused" and life.deletes:
            life.deletes.pop()
        return
    if phase == "requested":
        life.creates.append(n)
    elif phase == "refused" and life.creates:
        life.creates.pop()
    elif phase == "settled" and len(life.settled) < len(life.creates):
        life.settled.append(n)


class Incarnations:
    """The lives of a history's topics (``scan``), the events relabelled to their logs
    (``relabel``), the acks left ambiguous resolved against the built index (``resolve``)
    and what was found (``summary``)."""

    def __init__(self, lives: dict[str, TopicLife]) -> None:
        self.lives = lives
        self._sent: dict[str, int] = {}  # id -> its send's line, while unreported
        self._held: list[tuple[Event, range]] = []
        self.acked_gone = 0
        self.acked_during_deletion = 0
        self.resolved = 0
        self.indeterminate = 0
        self.expected_errors: dict[str, int] = {}
        self.other_errors = 0
        self._examples = Smallest(EXAMPLES, lambda e: (e["topic"], e["partition"],
                                                       -1 if e["offset"] is None
                                                       else e["offset"], e["id"]))

    @classmethod
    def scan(cls, events: Iterable[Mapping[str, Any]]) -> Incarnations | None:
        """The topics' lives from their topic_deleted / topic_created lines; None when the
        history has none (every topic one log, as before schema 1.1)."""
        lives: dict[str, TopicLife] = {}
        for e in events:
            if e["kind"] in TOPIC_LIFE:
                _apply(lives.setdefault(e["topic"], TopicLife()), e)
        return cls(lives) if lives else None

    def gone_logs(self) -> set[str]:
        """The logs deleted by request."""
        return {log_name(t, k) for t, life in self.lives.items()
                for k in range(life.last + 1) if life.gone(k)}

    # --- the stream ---------------------------------------------------------------------

    def relabel(self, events: Iterable[Event]) -> Iterator[Event]:
        """The events with each topic replaced by its log; ambiguous acks held back."""
        for e in events:
            kind = e["kind"]
            life = self.lives.get(e.get("topic") or "")
            if life is None:
                yield e
            elif kind == "send":
                self._sent[e["id"]] = e["n"]
                yield e
            elif kind == "ack":
                out = self._ack(e, life)
                if out is not None:
                    yield out
            elif kind == "send_error":
                self._error(e, life)
                yield e
            elif "incarnation" in e or kind in ("poll", "commit", "final_read",
                                                "final_read_end"):
                yield {**e, "topic": log_name(e["topic"], e.get("incarnation") or 0)}
            else:
                yield e

    def _ack(self, e: Event, life: TopicLife) -> Event | None:
        sent = self._sent.pop(e["id"], e["n"])
        could = range(life.incarnation_at(sent), life.incarnation_at(e["n"]) + 1)
        if len(could) > 1 and not all(life.gone(k) for k in could):
            self._held.append((e, could))
            return None
        k = could[-1]
        if life.gone(k):
            self.acked_gone += 1
            if e["n"] > life.deletes[k]:
                self.acked_during_deletion += 1
        return {**e, "topic": log_name(e["topic"], k)}

    def _error(self, e: Event, life: TopicLife) -> None:
        sent = self._sent.pop(e["id"], e["n"])
        if life.absent_during(sent, e["n"]):
            self.expected_errors[e["error"]] = self.expected_errors.get(e["error"], 0) + 1
        else:
            self.other_errors += 1

    # --- after the pass -----------------------------------------------------------------

    def resolve(self, index: TrafficIndex) -> None:
        """Each held ack: the topic's last incarnation's when that log's complete final
        read holds the id (fed to the index as such); else indeterminate."""
        for e, could in self._held:
            life = self.lives[e["topic"]]
            last = log_name(e["topic"], life.last)
            number = index.ids.find(e["id"])
            final = (could[-1] == life.last and not life.gone(life.last) and number != ABSENT
                     and index.in_final[number] == 1
                     and any(index.partitions.keys[p][0] == last
                             for p, _ in index.positions.of(number)))
            if final:
                self.resolved += 1
                index.feed({**e, "topic": last})
                continue
            self.indeterminate += 1
            self._examples.add({"id": e["id"], "topic": e["topic"],
                                "partition": e["partition"], "offset": e["offset"],
                                "producer": e["producer"], "ack_line": e["n"],
                                "incarnations": list(could)})
        self._held = []

    def summary(self) -> dict[str, Any]:
        """What the topics' lives did to the traffic: per topic its incarnations and
        whether the last is deleted; acks gone by request (of them, acked after the
        deletion was requested), acks resolved by the final read, indeterminate ones (with
        examples), expected errors by name, other send errors."""
        topics = {t: {"incarnations": life.last + 1, "deleted_at_end": life.gone(life.last)}
                  for t, life in sorted(self.lives.items())}
        return {"topics": topics, "acked_gone_by_request": self.acked_gone,
                "acked_during_deletion": self.acked_during_deletion,
                "resolved_by_final_read": self.resolved,
                "indeterminate": self.indeterminate,
                "expected_errors": sum(self.expected_errors.values()),
                "expected_errors_by_name": dict(sorted(self.expected_errors.items())),
                "other_send_errors": self.other_errors,
                "indeterminate_examples": self._examples.items()}
