"""Event streams for the driver: random ones that follow the state (for a long run and the
benchmark) and a fixed cycle that needs no state (for pipelined runs).

A random event is chosen from the state the last answer reported (partitions, brokers),
as a cluster could produce it: a live broker fenced (its session expires) or shut down, a
fenced one unfenced or re-registered (clean or not), the leader shrinking or expanding
the ISR, leader elections, reassignments started, completed and cancelled, min ISR
changed, the controller's periodic elections. Many are refused by the controller (a stale
epoch, a fenced replica, a registration while the old session lives): a refusal is an
answer too. Same seed and same answers: same events.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness.differential import protocol as p

State = Mapping[str, Mapping[str, Any]]


class RandomEvents:
    def __init__(self, rng: random.Random, brokers: Sequence[int], topics: Sequence[str],
                 max_min_isr: int = 3) -> None:
        self.rng = rng
        self.brokers = list(brokers)
        self.topics = list(topics)
        self.max_min_isr = max_min_isr

    def setup(self, replication: int = 3) -> list[dict[str, Any]]:
        """The topics, each with one partition on `replication` brokers, striped."""
        n = len(self.brokers)
        return [p.create_topic(t, [[self.brokers[(i + k) % n] for k in range(replication)]])
                for i, t in enumerate(self.topics)]

    def next(self, partitions: State, brokers: State) -> dict[str, Any]:
        rng = self.rng
        alive_unfenced = [int(b) for b, s in brokers.items() if s["alive"] and not s["fenced"]]
        alive_fenced = [int(b) for b, s in brokers.items() if s["alive"] and s["fenced"]]
        down = [int(b) for b, s in brokers.items() if not s["alive"]]
        choices: list[tuple[float, Any]] = []
        if alive_unfenced:
            choices += [(2.0, lambda: p.fence(rng.choice(alive_unfenced))),
                        (0.7, lambda: p.controlled_shutdown(rng.choice(alive_unfenced)))]
        if alive_fenced:
            choices.append((3.0, lambda: p.unfence(rng.choice(alive_fenced))))
        if down:
            choices += [(1.5, lambda: p.register(rng.choice(down), clean=rng.random() < 0.5)),
                        (0.5, lambda: p.fence(rng.choice(down)))]
        keys = sorted(partitions)
        if keys:
            key = rng.choice(keys)
            topic, _, index = key.rpartition("-")
            part = partitions[key]
            choices += self._partition_choices(topic, int(index), part, brokers)
        total = sum(w for w, _ in choices)
        pick = rng.random() * total
        for weight, make in choices:
            pick -= weight
            if pick <= 0:
                event: dict[str, Any] = make()
                return event
        return {"op": "state"}

    def _partition_choices(self, topic: str, index: int, part: Mapping[str, Any],
                           brokers: State) -> list[tuple[float, Any]]:
        rng = self.rng
        isr = list(part["isr"])
        leader = part["leader"]
        out: list[tuple[float, Any]] = []
        if leader >= 0:
            others = [b for b in isr if b != leader]
            if others:
                def shrink() -> dict[str, Any]:
                    gone = rng.choice(others)
                    return p.alter_partition(topic, [b for b in isr if b != gone], index)
                out.append((3.0, shrink))
            candidates = [b for b in part["replicas"] if b not in isr
                          and brokers.get(str(b), {}).get("alive")
                          and not brokers.get(str(b), {}).get("fenced", True)]
            if candidates:
                out.append((3.0, lambda: p.alter_partition(
                    topic, isr + [rng.choice(candidates)], index)))
        out += [(1.0, lambda: p.elect_leaders(topic, "preferred", index)),
                (0.4, lambda: p.elect_leaders(topic, "unclean", index)),
                (0.4, lambda: p.alter_config(
                    {"min.insync.replicas": str(rng.randint(1, self.max_min_isr))}, topic)),
                (0.3, lambda: p.tick(rng.choice(("electPreferred", "electUnclean"))))]
        if part["adding"] or part["removing"]:
            out.append((0.4, lambda: p.cancel_reassignment(topic, index)))
            if leader >= 0:
                out.append((0.8, lambda: p.complete_reassignment(topic, index)))
        else:
            rf = len(part["replicas"])
            out.append((0.5, lambda: p.reassign(topic, rng.sample(self.brokers, rf), index)))
        return out


def cycle(topic: str, replicas: Sequence[int]) -> Iterator[dict[str, Any]]:
    """Events that need no state, forever: the last replica leaves the ISR and comes back,
    is fenced and unfenced, the leader moves away and back. Epochs are the controller's
    current ones (the driver fills them), so the leader's requests stay valid."""
    first, last = replicas[0], replicas[-1]
    full = list(replicas)
    while True:
        yield p.alter_partition(topic, full[:-1])
        yield p.alter_partition(topic, full)
        yield p.fence(last)
        yield p.unfence(last)
        yield p.alter_partition(topic, full)
        yield p.fence(first)
        yield p.unfence(first)
        yield p.alter_partition(topic, full, leader=full[1])
        yield p.elect_leaders(topic, "preferred")
