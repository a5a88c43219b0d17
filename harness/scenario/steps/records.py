"""Steps that write and read records: produce, consume."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.client.workload import ACKS
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import MAX_RECORDS, Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import steps as S
from reference.search import generators as G


def _parse_produce(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Produce:
    c.unknown(it, ("count", "acks"), w)
    count = c.int_(it["count"][1], f"{w}.count", 1, MAX_RECORDS) if "count" in it else 1
    acks = c.choice(it, "acks", w, ACKS, "all", "0, 1 or all")
    return S.Produce(count=count, acks=acks)


def _produce(s: Session, at: Target, step: S.Produce, out: StepOutcome) -> None:
    ids = list(step.record_ids)
    for ack in s.workload.produce(at.topic, len(ids), acks=step.acks,
                                      partition=at.partition, record_ids=ids):
        out.acks[ack.record_id] = ack.offset if ack.error is None else None
        if ack.error is not None:
            out.errors[ack.record_id] = ack.error


def _count(step: Any) -> int:
    return int(step.count)


def _named(step: Any, ids: tuple[str, ...]) -> Any:
    """The produce step with the runner's record ids (none given: as it was)."""
    return replace(step, record_ids=ids)


def _parse_consume(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Consume:
    c.unknown(it, (), w)
    return S.Consume()


def _consume(s: Session, at: Target, step: S.Consume, out: StepOutcome) -> None:
    out.consumed = s.workload.consume_all(at.topic, at.partition, timeout_s=15.0)


KINDS = (
    StepKind("produce", "produce: {count: N, acks: 0|1|all}: write N records with unique ids",
             _parse_produce, _produce,
             records=_count, with_records=_named, on_partitions=True, concurrent=True,
             generator=G.PRODUCE),
    StepKind("consume", "consume: {}: read every visible record",
             _parse_consume, _consume, reads=True, on_partitions=True, concurrent=True,
             generator=G.CONSUME),
)
