"""A topic's life: delete_topic (DeleteTopics), create_topic (CreateTopics: of a topic the
scenario declares, after its deletion, the same name with a new topic id; or of a topic it
does not declare, with its replicas and configs) and add_partitions (CreatePartitions).
The model: reference.model.topics. The loader keeps the order right (a topic is deleted
only while it exists, created only when it does not, no step but await acts on a deleted
topic, a step names a topic or partition only once created: ``TopicPlan``) and gives
create_topic the topic's assignment and configs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from yaml.nodes import Node

from harness.client import admin
from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import Items, Reader, broker_list
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.topic_spec import (
    MAX_LANES,
    MAX_PARTITIONS,
    MAX_PLACEMENTS,
    MAX_TOPICS,
    TopicPlan,
    assignment,
    placements,
    replication_factor,
    topic_configs,
)
from reference.model import topics as T
from reference.model.steps import AlterConfig, Step
from reference.search import generators as G

#: What create_topic of a topic the scenario does not declare takes.
SPEC_KEYS = ("assignment", "replicas", "partitions", "replication_factor",
             "min_insync_replicas", "config")


def _parse_delete(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.DeleteTopic:
    c.unknown(it, (), w)
    return T.DeleteTopic()


def _parse_create(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.CreateTopic:
    """``{}``: a declared topic again, as declared (the loader's ``as_declared``); else a
    new topic: ``assignment`` | ``replicas`` (+ ``partitions``) | ``replication_factor``
    (+ ``partitions``), ``min_insync_replicas``, ``config``."""
    c.unknown(it, SPEC_KEYS, w)
    if not it:
        return T.CreateTopic()
    mir, cfg = topic_configs(c, n, it, w, cl)
    config = {"min.insync.replicas": str(mir), **cfg}
    if "replication_factor" in it:
        for key in ("assignment", "replicas"):
            if key in it:
                raise c.fail(it[key][1], f"{w}.{key}", "give replication_factor (Kafka's "
                             "placer chooses the replicas) or the replicas, not both")
        rf = replication_factor(c, it["replication_factor"][1], f"{w}.replication_factor",
                                cl)
        count = c.int_(it["partitions"][1], f"{w}.partitions", 1, MAX_PARTITIONS) \
            if "partitions" in it else 1
        return T.CreateTopic(config=config, placed_rf=rf, partitions=count,
                             choices=placements(cl.broker_ids, rf))
    if "assignment" not in it and "replicas" not in it:
        raise c.fail(n, w, "a topic the scenario does not declare needs its replicas: "
                     "assignment, replicas or replication_factor")
    return T.CreateTopic(config=config, assignment=assignment(c, n, it, cl, w))


def _parse_add(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> T.AddPartitions:
    """``count`` (the topic's new partition count) and optionally ``assignment`` (the new
    partitions' replicas); the loader checks them against the topic (``grow``)."""
    c.unknown(it, ("count", "assignment"), w)
    count = c.int_(c.required(it, "count", n, w), f"{w}.count", 2, MAX_PARTITIONS)
    if "assignment" not in it:
        return T.AddPartitions(count)
    anode = it["assignment"][1]
    rows = tuple(broker_list(c, row, f"{w}.assignment[{i}]", cl)
                 for i, row in enumerate(c.sequence(anode, f"{w}.assignment", MAX_PARTITIONS)))
    if not rows:
        raise c.fail(anode, f"{w}.assignment", "lists no partition")
    return T.AddPartitions(count, rows)


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
                                               step.config, step.partitions, step.placed_rf)
    if refused is not None:  # e.g. every replica fenced: the model predicts it too
        out.note = f"CreateTopics refused: {refused}"
        return
    # From here on the topic is a new incarnation (judge.datachecks.incarnations).
    s.cluster.history.record("topic_created", topic=at.topic)


def _add(s: Session, at: Target, step: T.AddPartitions, out: StepOutcome) -> None:
    refused = admin.create_partitions(s.observer, at.topic, step.count, step.assignment)
    if refused is not None:  # e.g. every replica of a new partition fenced: predicted too
        out.note = f"CreatePartitions refused: {refused}"


#: What may act on a deleted topic: awaiting its absence, creating it again.
ON_DELETED = ("await", "create_topic")


def grow(step: Step, topic: str | None, plan: TopicPlan, index: int) -> str | None:
    """create_topic of an undeclared topic and add_partitions, against the topics as the
    steps so far left them (``plan``, which gains the new topic or partitions)."""
    if isinstance(step, T.CreateTopic):
        known = {t.name: t for t in plan.now()}
        if not step.config:  # a declared topic again (topic_life)
            if topic is not None and topic not in known:
                return (f"no topic {topic!r}: a topic the scenario does not declare is "
                        "created with its replicas (assignment, replicas or "
                        "replication_factor) and min_insync_replicas")
            return None
        if topic is None:
            return "create_topic of a new topic names it (topic: NAME)"
        if topic in known:
            born = known[topic].born_at(0)
            return (f"topic {topic} exists ("
                    + ("declared" if born is None else f"created by steps[{born}]")
                    + "): Kafka refuses TOPIC_ALREADY_EXISTS; to create it again after "
                    "delete_topic, leave its replicas and configs out")
        rows = step.assignment or (_placeholder(step.placed_rf),) * step.partitions
        if len(known) + 1 > MAX_TOPICS or _lanes(plan) + len(rows) > MAX_LANES:
            return (f"at most {MAX_TOPICS} topics and {MAX_LANES} partitions in all "
                    "(each partition is a model of its own)")
        plan.create(topic, rows, int(step.config["min.insync.replicas"]),
                    {k: v for k, v in step.config.items() if k != "min.insync.replicas"},
                    index, placed=bool(step.placed_rf))
        return None
    if not isinstance(step, T.AddPartitions):
        return None
    (t,) = [t for t in plan.now() if t.name == (topic or plan.now()[0].name)]
    if topic is None and len(plan.now()) > 1:
        return "add_partitions acts on one topic: with several topics, name it (topic: NAME)"
    have, rf = t.partitions, len(t.replicas)
    if step.count <= have:
        return (f"topic {t.name} has {have} partition(s): count {step.count} is not an "
                "increase (Kafka refuses it: INVALID_PARTITIONS)")
    if step.assignment and len(step.assignment) != step.count - have:
        return (f"{step.count - have} new partition(s) but the assignment lists "
                f"{len(step.assignment)} (Kafka refuses it: INVALID_REPLICA_ASSIGNMENT)")
    if any(len(r) != rf for r in step.assignment):
        return (f"topic {t.name} has {rf} replicas per partition: every new partition needs "
                f"{rf} (Kafka refuses it: INVALID_REPLICA_ASSIGNMENT)")
    if not step.assignment and len(step.choices) > MAX_PLACEMENTS:
        return (f"{len(step.choices)} placements of {rf} replicas; the model branches over "
                f"each and takes at most {MAX_PLACEMENTS}: give an assignment")
    if _lanes(plan) + step.count - have > MAX_LANES:
        return f"at most {MAX_LANES} partitions in all (each partition is a model of its own)"
    plan.add(t.name, step.assignment or (_placeholder(rf),) * (step.count - have), index,
             placed=not step.assignment)
    return None


def _placeholder(rf: int) -> tuple[int, ...]:
    """The replicas a lane of a partition Kafka places starts from (brokers 1..rf; never
    the partition's: it does not exist until the step, which branches over placements)."""
    return tuple(range(1, rf + 1))


def _lanes(plan: TopicPlan) -> int:
    return sum(t.partitions for t in plan.now())


def with_topic(step: Step, topic: str | None, plan: TopicPlan, brokers: tuple[int, ...]
               ) -> Step:
    """add_partitions with what the loader knows of its topic: its partition count before,
    its replication factor, the placements where Kafka places the new partitions."""
    if not isinstance(step, T.AddPartitions):
        return step
    (t,) = [t for t in plan.now() if t.name == (topic or plan.now()[0].name)]
    rf = len(t.replicas)
    return replace(step, first=t.partitions, rf=rf,
                   choices=() if step.assignment else placements(brokers, rf))


def for_lane(step: Step, partition: int) -> Step | None:
    """The step as the lane of ``partition`` of its topic runs it (None: the lane does not
    see it, an existing partition of a topic add_partitions grows)."""
    if not isinstance(step, T.AddPartitions):
        return step
    if partition < step.first:
        return None
    if step.assignment:
        return replace(step, choices=(step.assignment[partition - step.first],))
    return step


def topic_life(kind: StepKind, step: Step, topic: str | None, topics: Sequence[Any],
               deleted: dict[str, int], index: int) -> str | None:
    """A topic is deleted only while it exists and created again only after its deletion;
    no step but an await acts on it in between (``deleted`` follows the steps so far)."""
    life = isinstance(step, (T.DeleteTopic, T.CreateTopic))
    if isinstance(step, T.CreateTopic) and step.config:
        return None  # a new topic (grow)
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
            return (f"topic {named[0]} exists: delete it first (delete_topic)")
        del deleted[named[0]]
        return None
    acts = (kind.on_partitions or isinstance(step, T.AddPartitions)
            or (isinstance(step, AlterConfig) and step.scope == "topic"))
    gone = [t for t in named if t in deleted]
    if acts and kind.name not in ON_DELETED and gone:
        return (f"topic {gone[0]} is deleted (steps[{deleted[gone[0]]}]): {kind.name} cannot "
                "act on it; create it again first (create_topic)"
                + ("" if topic is not None else ", or name a topic that exists (topic: NAME)"))
    return None


def as_declared(step: Step, topic: str | None, topics: Sequence[Any],
                brokers: tuple[int, ...] = ()) -> Step:
    """create_topic with its topic's assignment and configs (as declared, or as the step
    that created it gave them; where Kafka's placer chose the replicas, it chooses again)."""
    if not isinstance(step, T.CreateTopic):
        return step
    (t,) = [t for t in topics if t.name == (topic or topics[0].name)]
    out = declared_creation(step, tuple(t.replicas_of(p) for p in range(t.partitions)),
                            t.min_insync_replicas, {k: str(v) for k, v in t.config.items()})
    if t.placed:
        return replace(out, assignment=(), placed_rf=len(t.replicas), partitions=t.partitions,
                       choices=step.choices or placements(brokers, len(t.replicas)))
    return out


KINDS = (
    StepKind("delete_topic", "delete_topic: {}: DeleteTopics (with several topics: topic: "
             "NAME): its partitions, records and configs gone", _parse_delete, _delete,
             on_topic=True, generator=G.DELETE_TOPIC),
    StepKind("create_topic", "create_topic: {}: CreateTopics of a deleted topic again, as "
             "declared (same name, new topic id); or {topic: NEW, assignment|replicas|"
             "replication_factor, partitions, min_insync_replicas, config}: a new topic",
             _parse_create, _create, on_topic=True, generator=G.CREATE_TOPIC),
    StepKind("add_partitions", "add_partitions: {count: N, assignment: [[...]]}: "
             "CreatePartitions (without assignment: Kafka's placer)", _parse_add, _add,
             on_topic=True, generator=G.ADD_PARTITIONS),
)
