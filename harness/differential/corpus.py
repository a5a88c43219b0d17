"""Coverage as the generator's feedback (issue 33, item 4): a lane's event sequence that set
JaCoCo probes no earlier sequence set joins a corpus; later lanes are, for a share, mutations
of corpus entries.

The driver reports, with each answer, the probes of the coverage classes (coverage.WHOLE and
ReplicationControlManager) that the event set first in its JVM (protocol ``Answer
.new_probes``). :class:`ProbeMap` is the union over the campaign: an event's probes are new
when no earlier event of any session set them (a probe set earlier in the same JVM was
already told with that earlier event, so nothing new is missed).

A sequence is one lane's events in one session after its set-up (in lane 0's names, every
other lane's clock moves and ticks included, as the shrinker replays a lane), up to the last
event that set a new probe: :class:`Corpus` keeps it, written to ``corpus/`` in the run
directory. :func:`mutate` makes a new sequence from the entries (splice two, insert events
of others, delete a stretch, change an event's parameters); :class:`Planned` sends it in a
lane, each event first repaired against the lane's state (``workload.repair``: what the
random generator could have sent there, or skipped), and once it is spent the lane goes on
with its random generator. Same seed and same coverage answers: same corpus, same mutants.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.differential.workload import MAX_PARTITIONS, MAX_RF, MIN_RF, RandomEvents, repair

#: Lane 0's brokers, in whose names corpus entries are kept (campaign.lane_brokers(0)).
LANE0 = (1, 2, 3, 4, 5)
LANE0_CLOCK = 9
#: Operators of a mutation.
OPERATORS = ("splice", "insert", "delete", "change")
#: Corpus entries kept at most (then new sequences are counted, not kept).
MAX_ENTRIES = 400


class ProbeMap:
    """Every probe set so far, per class, and each class's probe count."""

    def __init__(self) -> None:
        self.seen: dict[str, set[int]] = {}
        self.total: dict[str, int] = {}

    def add(self, probes: Mapping[str, Sequence[int]]) -> int:
        """Take in probes an event set; how many no earlier event set."""
        new = 0
        for cls, indexes in probes.items():
            seen = self.seen.setdefault(cls, set())
            before = len(seen)
            seen.update(indexes)
            new += len(seen) - before
        return new

    def covered(self, cls: str) -> int:
        return len(self.seen.get(cls, ()))

    def text(self) -> str:
        return ", ".join(f"{cls} {self.covered(cls)}/{n}" for cls, n in sorted(self.total.items()))

    def to_json(self) -> dict[str, Any]:
        return {cls: {"covered": self.covered(cls), "total": n}
                for cls, n in sorted(self.total.items())}


@dataclass
class Entry:
    events: list[dict[str, Any]]
    new_probes: int
    session: int
    lane: int
    origin: str
    file: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {"new_probes": self.new_probes, "session": self.session, "lane": self.lane,
                "origin": self.origin, "events": self.events}


@dataclass
class Corpus:
    folder: Path | None = None
    max_entries: int = MAX_ENTRIES
    entries: list[Entry] = field(default_factory=list)
    #: Sequences that set new probes but found the corpus full, or had no events.
    not_kept: int = 0

    def admit(self, events: Sequence[Mapping[str, Any]], new_probes: int, session: int,
              lane: int, origin: str) -> Entry | None:
        """Keep the sequence if it set new probes (and has events, and there is room)."""
        if new_probes <= 0:
            return None
        if not events or len(self.entries) >= self.max_entries:
            self.not_kept += 1
            return None
        entry = Entry([dict(e) for e in events], new_probes, session, lane, origin)
        self.entries.append(entry)
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            entry.file = self.folder / f"{len(self.entries):04d}.json"
            entry.file.write_text(json.dumps(entry.to_json(), indent=None) + "\n")
        return entry

    def __len__(self) -> int:
        return len(self.entries)


# ---- mutation ----

def mutate(rng: random.Random, entries: Sequence[Entry], max_len: int,
           ) -> tuple[list[dict[str, Any]], str]:
    """A new sequence (lane 0's names) from the corpus: one entry, changed by one to three
    operators; and how it was made ("#3 splice #7, change")."""
    if not entries:
        raise ValueError("mutate needs a corpus entry")
    pick = rng.randrange(len(entries))
    seq = [dict(e) for e in entries[pick].events]
    how = [f"#{pick + 1}"]
    for _ in range(1 + rng.randrange(3)):
        op = rng.choice(OPERATORS)
        if op == "splice":
            other = rng.randrange(len(entries))
            tail = entries[other].events
            seq = seq[:rng.randrange(len(seq) + 1)] + [dict(e) for e in
                                                        tail[rng.randrange(len(tail) + 1):]]
            how.append(f"splice #{other + 1}")
        elif op == "insert":
            for _ in range(1 + rng.randrange(3)):
                donor = entries[rng.randrange(len(entries))].events
                if donor:
                    seq.insert(rng.randrange(len(seq) + 1), dict(rng.choice(donor)))
            how.append("insert")
        elif op == "delete" and seq:
            n = 1 + rng.randrange(max(1, len(seq) // 8))
            at = rng.randrange(len(seq))
            del seq[at:at + n]
            how.append("delete")
        elif op == "change" and seq:
            at = rng.randrange(len(seq))
            seq[at] = change(rng, seq[at])
            how.append("change")
    return seq[:max_len], " ".join(how)


def change(rng: random.Random, event: Mapping[str, Any]) -> dict[str, Any]:
    """The event with one parameter changed (lane 0's names), still well formed."""
    e = dict(event)
    op = e["op"]
    if "broker" in e and e["broker"] != LANE0_CLOCK:
        e["broker"] = rng.choice(LANE0)
        if op == "register":
            e["clean"] = rng.random() < 0.5
        return e
    if op in ("alterPartition", "completeReassignment", "reassign", "cancelReassignment",
              "electLeaders") and rng.random() < 0.3:
        e["partition"] = rng.randrange(MAX_PARTITIONS)
        return e
    if op in ("alterPartition", "completeReassignment"):
        isr = list(e.get("isr", ()))
        b = rng.choice(LANE0)
        e["isr"] = [x for x in isr if x != b] if b in isr else isr + [b]
        for f in ("leaderEpoch", "partitionEpoch"):
            if f in e:
                e[f] = max(0, int(e[f]) + rng.choice((-1, 1)))
    elif op == "reassign":
        n = max(MIN_RF, min(MAX_RF, len(e["replicas"]) + rng.choice((-1, 0, 1))))
        e["replicas"] = rng.sample(LANE0, n)
    elif op == "electLeaders":
        e["type"] = "unclean" if e.get("type", "preferred") == "preferred" else "preferred"
    elif op == "alterConfig":
        e["configs"] = {"min.insync.replicas": str(rng.randint(1, 3))}
    elif op == "tick":
        e["task"] = rng.choice(("electPreferred", "electUnclean"))
    elif op == "createPartitions":
        count = max(2, min(MAX_PARTITIONS, int(e["count"]) + rng.choice((-1, 1))))
        rf = len(e["assignment"][0]) if e.get("assignment") else 3
        e["count"] = count
        e["assignment"] = [rng.sample(LANE0, rf) for _ in range(len(e.get("assignment", [])))]
    return e


class Planned:
    """A lane that sends a planned sequence (each event repaired against the lane's state,
    or skipped), then its random generator's events."""

    def __init__(self, plan: Sequence[Mapping[str, Any]], fallback: RandomEvents,
                 clock: int, origin: str) -> None:
        self.plan = [dict(e) for e in plan]
        self.fallback = fallback
        self.clock = clock
        self.origin = origin
        self.sent = 0
        self.skipped = 0
        self.mended = 0

    def setup(self) -> list[dict[str, Any]]:
        return self.fallback.setup()

    def next(self, partitions: Mapping[str, Mapping[str, Any]],
             brokers: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        while self.plan:
            event = self.plan.pop(0)
            fixed = repair(event, partitions, brokers, self.fallback.brokers, self.clock)
            if fixed is None:
                self.skipped += 1
                continue
            self.sent += 1
            if fixed != event:
                self.mended += 1
            return fixed
        return self.fallback.next(partitions, brokers)
