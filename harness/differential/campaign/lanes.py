"""Lane names (issue 33 part 2): one driver session holds ``lanes`` independent little
clusters, each its own five brokers (lane k: 10k+1 .. 10k+5), its clock broker (10k+9) and
three topics (``k<k>t0`` ..); which lane an event or a finding belongs to, and an event moved
from one lane's names to another's (a finding's events are kept in lane 0's names)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from harness.differential.compare import Finding

BROKERS_PER_LANE = 5
TOPICS_PER_LANE = 3
#: Broker id fields of events (single ids and lists).
_BROKER_FIELDS = ("broker", "leader")
_BROKER_LISTS = ("replicas", "isr")


#: A lane's clock broker (10k+9): registered, then fenced at the lane's start and never
#: used again. A ``fence`` moves the controller's clock for every lane (sessions of brokers
#: that are down expire: their new incarnations may register), so each lane's log holds
#: every other lane's ``fence`` as a fence of its own clock broker, which moves the clock
#: the same way when the lane is replayed alone.
CLOCK = 9


def lane_brokers(k: int) -> list[int]:
    return [10 * k + i for i in range(1, BROKERS_PER_LANE + 1)]


def clock_broker(k: int) -> int:
    return 10 * k + CLOCK


def lane_topics(k: int) -> list[str]:
    return [f"k{k}t{j}" for j in range(TOPICS_PER_LANE)]


_TOPIC = re.compile(r"^k(\d+)(t\d+)$")


def lane_of_topic(topic: str) -> int | None:
    m = _TOPIC.match(topic)
    return int(m.group(1)) if m else None


def lane_of_where(where: str) -> int | None:
    if where.startswith("broker "):
        return (int(where.split()[1]) - 1) // 10
    if where.startswith("topic "):  # the driver's oracles (oracles.py): a topic as a whole
        return lane_of_topic(where.split(" ", 1)[1])
    return lane_of_topic(where.rpartition("-")[0])


def lane_of_event(event: Mapping[str, Any]) -> int | None:
    if "topic" in event:
        return lane_of_topic(str(event["topic"]))
    if "broker" in event:
        return (int(event["broker"]) - 1) // 10
    return None


def rename(event: Mapping[str, Any], src: int, dst: int) -> dict[str, Any]:
    """The event moved from lane ``src``'s names to lane ``dst``'s."""
    shift = 10 * (dst - src)
    out = dict(event)
    for f in _BROKER_FIELDS:
        if f in out and isinstance(out[f], int):
            out[f] = out[f] + shift
    for f in _BROKER_LISTS:
        if isinstance(out.get(f), list):
            out[f] = [b + shift for b in out[f]]
    if isinstance(out.get("assignment"), list):
        out["assignment"] = [[b + shift for b in r] for r in out["assignment"]]
    if "topic" in out:
        m = _TOPIC.match(str(out["topic"]))
        if m:
            out["topic"] = f"k{dst}{m.group(2)}"
    return out


def finding_lane(f: Finding, event: Mapping[str, Any]) -> int | None:
    lane = lane_of_where(f.where) if f.where != "event" else None
    return lane if lane is not None else lane_of_event(event)
