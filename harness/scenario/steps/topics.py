"""Topics deleted and created again: delete_topic (DeleteTopics) and create_topic (CreateTopics
of a topic the scenario declares, after its deletion: the same name, a new topic id). The
model: reference.model.topics. The loader keeps the order right (a topic is deleted only
while it exists, created only after its deletion; no step but await acts on a deleted
topic) and gives create_topic the topic's declared assignment and configs."""

from __future__ import annotations

from dataclasses import replace

import kafka.errors as kafka_errors
from yaml.nodes import Node

from harness.client import admin
from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import topics as T

#: How long DeleteTopics and CreateTopics may take at the controller.
TIMEOUT_MS = 30_000


def _parse_delete(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.DeleteTopic:
    c.unknown(it, (), w)
    return T.DeleteTopic()


def _parse_create(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.CreateTopic:
    c.unknown(it, (), w)
    return T.CreateTopic()  # its assignment and configs: the loader's (declared_creation)


def declared_creation(step: T.CreateTopic, replicas: tuple[tuple[int, ...], ...],
                      min_isr: int, config: dict[str, str]) -> T.CreateTopic:
    """create_topic as the scenario declares the topic: every partition's replicas, its
    min.insync.replicas and its other configs (what the runner created it with)."""
    return replace(step, assignment=replicas,
                   config={"min.insync.replicas": str(min_isr), **config})


def _delete(s: Session, at: Target, step: T.DeleteTopic, out: StepOutcome) -> None:
    try:
        s.observer.admin().delete_topics([at.topic], timeout_ms=TIMEOUT_MS)
    except kafka_errors.KafkaError as exc:  # the model says what must follow; keep why
        out.note = f"DeleteTopics refused: {type(exc).__name__}: {exc}"
        return
    # The data checks judge what was acked before it apart (judge.datachecks.incarnations).
    s.cluster.history.record("topic_deleted", topic=at.topic)


def _create(s: Session, at: Target, step: T.CreateTopic, out: StepOutcome) -> None:
    first, *more = step.assignment
    try:
        admin.create_topic(s.observer, at.topic, list(first), dict(step.config), more)
    except admin.AdminError as exc:  # e.g. every replica fenced: the model predicts it too
        out.note = f"CreateTopics refused: {exc}"
        return
    # From here on the topic is a new incarnation (judge.datachecks.incarnations).
    s.cluster.history.record("topic_created", topic=at.topic)


KINDS = (
    StepKind("delete_topic", "delete_topic: {}: DeleteTopics (with several topics: topic: "
             "NAME): its partitions, records and configs gone", _parse_delete, _delete,
             on_topic=True),
    StepKind("create_topic", "create_topic: {}: CreateTopics of a deleted topic again, as "
             "declared (same name, new topic id)", _parse_create, _create, on_topic=True),
)
