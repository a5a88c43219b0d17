"""Executing scenario steps on a real cluster (the harness half of each step).

Each executor takes the step's mapping as written in the scenario file (FORMAT.md) and
acts through the session's faults, workload and admin calls. What the step must lead to
is the model's business; here we only act and report what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.client import admin
from harness.run.session import Session

SUPPORTED_ELECTIONS = ("preferred", "unclean")


@dataclass
class StepOutcome:
    """What executing a step on the cluster produced, besides cluster state."""

    acks: dict[str, int | None] = field(default_factory=dict)  # record id -> offset / None
    errors: dict[str, str] = field(default_factory=dict)  # record id -> error name
    consumed: list[tuple[int, str]] | None = None
    note: str | None = None
    unsupported: str | None = None


Executor = Callable[[Session, str, Mapping[str, Any], StepOutcome], None]


def _produce(s: Session, topic: str, p: Mapping[str, Any], out: StepOutcome) -> None:
    ids = p["record_ids"]
    for ack in s.workload.produce(topic, len(ids), acks=str(p.get("acks", "all")),
                                  record_ids=list(ids)):
        out.acks[ack.record_id] = ack.offset if ack.error is None else None
        if ack.error is not None:
            out.errors[ack.record_id] = ack.error


def _consume(s: Session, topic: str, p: Mapping[str, Any], out: StepOutcome) -> None:
    out.consumed = s.workload.consume_all(topic, timeout_s=float(p.get("timeout_s", 15)))


def _elect(s: Session, topic: str, p: Mapping[str, Any], out: StepOutcome) -> None:
    kind = p["type"]
    if kind not in SUPPORTED_ELECTIONS:
        out.unsupported = (f"election type {kind} (KIP-966 part 2 / kafka-leader-election.sh "
                           "LONGEST_LOG_* / DESIGNATION) is not in any Apache Kafka release")
        return
    out.note = admin.elect_leaders(s.observer, kind, topic)


def _local_log(s: Session, topic: str, p: Mapping[str, Any], out: StepOutcome) -> None:
    out.unsupported = ("local_log (KIP-1303 local-log facts) needs a follower bootstrapped "
                       "from the last tiered offset (tiered storage, KIP-1023) on a build that "
                       "reports localLogStartTimestamp/localLogSizeBytes; the harness cannot "
                       "produce one yet")


def _alter_config(s: Session, topic: str, p: Mapping[str, Any], out: StepOutcome) -> None:
    admin.alter_config(s.observer, p.get("scope", "topic"), topic, p["config"])


def _lose_unflushed(s: Session, topic: str, p: Mapping[str, Any]) -> None:
    s.faults.lose_unflushed(p["broker"], topic, 0, p["offset"])


EXECUTORS: dict[str, Executor] = {
    "produce": _produce,
    "consume": _consume,
    "isolate": lambda s, t, p, o: s.faults.isolate(p["node"]),
    "partition": lambda s, t, p, o: s.faults.partition(p["groups"]),
    "cut": lambda s, t, p, o: s.faults.cut(p["src"], p["dst"], p.get("direction", "both")),
    "heal": lambda s, t, p, o: s.faults.heal(),
    "kill": lambda s, t, p, o: s.faults.kill(p["broker"]),
    "stop": lambda s, t, p, o: s.faults.stop(p["broker"]),
    "restart": lambda s, t, p, o: s.faults.restart(p["broker"]),
    "lose_unflushed": lambda s, t, p, o: _lose_unflushed(s, t, p),
    "local_log": _local_log,
    "alter_config": _alter_config,
    "elect": _elect,
    "reassign": lambda s, t, p, o: admin.reassign(s.observer, t, list(p["replicas"])),
    "await": lambda s, t, p, o: None,
}


def execute(session: Session, topic: str, kind: str, params: Mapping[str, Any]) -> StepOutcome:
    out = StepOutcome()
    EXECUTORS[kind](session, topic, params, out)
    return out
