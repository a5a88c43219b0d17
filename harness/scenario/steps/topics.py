"""Topics deleted and created again: delete_topic (DeleteTopics) and create_topic (CreateTopics
of a topic the scenario declares, after its deletion: the same name, a new topic id). The
model: reference.model.topics. The loader keeps the order right (a topic is deleted only
while it exists, created only after its deletion; no step but await acts on a deleted
topic) and gives create_topic the topic's declared assignment and configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from yaml.nodes import Node

from harness.client import admin
from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import topics as T
from reference.model.steps import AlterConfig, Step
from reference.search import generators as G


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
    refused = admin.delete_topic(s.observer, at.topic)
    if refused is not None:  # the model says what must follow; keep why
        out.note = f"DeleteTopics refused: {refused}"
        return
    # The data checks judge what was acked before it apart (judge.datachecks.incarnations).
    s.cluster.history.record("topic_deleted", topic=at.topic)


def _create(s: Session, at: Target, step: T.CreateTopic, out: StepOutcome) -> None:
    refused = admin.create_topic_at_controller(s.observer, at.topic, step.assignment,
                                               step.config)
    if refused is not None:  # e.g. every replica fenced: the model predicts it too
        out.note = f"CreateTopics refused: {refused}"
        return
    # From here on the topic is a new incarnation (judge.datachecks.incarnations).
    s.cluster.history.record("topic_created", topic=at.topic)


#: What may act on a deleted topic: awaiting its absence, creating it again.
ON_DELETED = ("await", "create_topic")


def topic_life(kind: StepKind, step: Step, topic: str | None, topics: Sequence[Any],
               deleted: dict[str, int], index: int) -> str | None:
    """A topic is deleted only while it exists and created only after its deletion; no
    step but an await acts on it in between (``deleted`` follows the steps so far)."""
    life = isinstance(step, (T.DeleteTopic, T.CreateTopic))
    if life and topic is None and len(topics) > 1:
        return f"{kind.name} acts on one topic: with several topics, name it (topic: NAME)"
    named = [topic] if topic is not None else [t.name for t in topics]
    if isinstance(step, T.DeleteTopic):
        if named[0] in deleted:
            return (f"topic {named[0]} is deleted already (steps[{deleted[named[0]]}]): "
                    "create it again first (create_topic)")
        deleted[named[0]] = index
        return None
    if isinstance(step, T.CreateTopic):
        if named[0] not in deleted:
            return (f"topic {named[0]} exists (created before step 0): delete it first "
                    "(delete_topic)")
        del deleted[named[0]]
        return None
    acts = kind.on_partitions or (isinstance(step, AlterConfig) and step.scope == "topic")
    gone = [t for t in named if t in deleted]
    if acts and kind.name not in ON_DELETED and gone:
        return (f"topic {gone[0]} is deleted (steps[{deleted[gone[0]]}]): {kind.name} cannot "
                "act on it; create it again first (create_topic)"
                + ("" if topic is not None else ", or name a topic that exists (topic: NAME)"))
    return None


def as_declared(step: Step, topic: str | None, topics: Sequence[Any]) -> Step:
    """create_topic with its topic's declared assignment and configs."""
    if not isinstance(step, T.CreateTopic):
        return step
    (t,) = [t for t in topics if t.name == (topic or topics[0].name)]
    return declared_creation(step, tuple(t.replicas_of(p) for p in range(t.partitions)),
                             t.min_insync_replicas, {k: str(v) for k, v in t.config.items()})


KINDS = (
    StepKind("delete_topic", "delete_topic: {}: DeleteTopics (with several topics: topic: "
             "NAME): its partitions, records and configs gone", _parse_delete, _delete,
             on_topic=True, generator=G.DELETE_TOPIC),
    StepKind("create_topic", "create_topic: {}: CreateTopics of a deleted topic again, as "
             "declared (same name, new topic id)", _parse_create, _create, on_topic=True,
             generator=G.CREATE_TOPIC),
)
