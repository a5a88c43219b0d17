"""Topic events: ``createTopic`` and ``createPartitions`` with a manual assignment,
``deleteTopic``.

A new partition leads with its first active replica and its ISR is its active replicas, ELR
and LastKnownELR empty (KIP-966's PartitionRecord fields at epoch 0). A topic or partitions
placed by the controller's replica placer (no assignment) are not modelled.

A deleted topic's partitions and configs are gone (one RemoveTopicRecord: Kafka 4.3.1
ReplicationControlManager.deleteTopic, lines 1025-1043, and replay(RemoveTopicRecord),
533-575, which calls configurationControl.deleteTopicConfigs); the same name created again
is a new topic (a new topic id): new partitions at epoch 0, as any creation, with only the
configs the creation gives. KIP-966 says nothing of deletion: a partition's ELR goes with
it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Ctx
from reference.model.controller_events.changes import _accepted, _refused
from reference.model.controller_events.cluster import Cluster, Outcome, Prediction, TopicConf
from reference.model.controller_events.configs import _topic_conf
from reference.model.state import Partition, evolve


def _create_topic(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    topic = str(e["topic"])
    if "assignment" not in e:
        return None
    if any(c.topic_of(k) == topic for k in c.partitions):
        return _refused(c, "TOPIC_ALREADY_EXISTS")
    conf = _topic_conf(TopicConf(), e.get("configs") or {})
    if conf is None:
        return _refused(c, "INVALID_CONFIG")
    parts = dict(c.partitions)
    for i, replicas in enumerate(e["assignment"]):
        reps = tuple(int(r) for r in replicas)
        if not reps or len(set(reps)) != len(reps) or any(r not in c.brokers for r in reps):
            return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
        isr = [r for r in reps if c.brokers[r].active]
        if not isr:
            return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
        parts[f"{topic}-{i}"] = Partition(replicas=reps, leader=isr[0], isr=frozenset(isr))
    topics = dict(c.topics)
    topics[topic] = conf
    return _accepted([evolve(c, partitions=parts, topics=topics)])


def _delete_topic(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    """DeleteTopics of one topic by name. An unknown name is UNKNOWN_TOPIC_OR_PARTITION
    (ControllerApis resolves names to ids before QuorumController.deleteTopics); otherwise
    the topic's partitions and its configs are removed and nothing else changes: no broker,
    no other partition (replay(RemoveTopicRecord) removes the topic, its index entries,
    imbalanced partitions and configurationControl.deleteTopicConfigs(name))."""
    topic = str(e["topic"])
    keys = [k for k in c.partitions if c.topic_of(k) == topic]
    if not keys:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    parts = {k: p for k, p in c.partitions.items() if c.topic_of(k) != topic}
    topics = {t: conf for t, conf in c.topics.items() if t != topic}
    return _accepted([evolve(c, partitions=parts, topics=topics)])


def _create_partitions(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    """CreatePartitions with a manual assignment, as Kafka 4.3.1's
    ReplicationControlManager.createPartitions (lines 1906-2000) and
    validateManualPartitionAssignment (2002-2033): an unknown topic is
    UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one INVALID_PARTITIONS; as
    many replica lists as new partitions, each non-empty, of registered brokers, none twice,
    of the topic's replication factor, with an active (unfenced, not shutting down)
    replica, else INVALID_REPLICA_ASSIGNMENT; each new partition leads with its first active
    replica, ISR its active replicas, epochs 0 (buildPartitionRegistration, 860-873).
    The replication factor is the replica count of the first partition the controller's
    hash map yields (line 1942): where the topic's partitions differ (one mid-reassignment)
    each count is allowed."""
    if "assignment" not in e:
        return None
    topic = str(e["topic"])
    keys = sorted((k for k in c.partitions if c.topic_of(k) == topic),
                  key=lambda k: int(k.rpartition("-")[2]))
    if not keys:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    count, have = int(e["count"]), len(keys)
    if count <= have:
        return _refused(c, "INVALID_PARTITIONS")
    assignment = [tuple(int(r) for r in replicas) for replicas in e["assignment"]]
    if len(assignment) != count - have:
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    outcomes: list[Outcome] = []
    for rf in sorted({len(c.partitions[k].replicas) for k in keys}):
        parts = dict(c.partitions)
        error: str | None = None
        for i, reps in enumerate(assignment, start=have):
            if (not reps or len(set(reps)) != len(reps) or any(r not in c.brokers for r in reps)
                    or len(reps) != rf):
                error = "INVALID_REPLICA_ASSIGNMENT"
                break
            isr = [r for r in reps if c.brokers[r].active]
            if not isr:
                error = "INVALID_REPLICA_ASSIGNMENT"
                break
            parts[f"{topic}-{i}"] = Partition(replicas=reps, leader=isr[0], isr=frozenset(isr))
        o = (Outcome(False, c, error) if error is not None
             else Outcome(True, evolve(c, partitions=parts)))
        if o not in outcomes:
            outcomes.append(o)
    return Prediction(tuple(outcomes))
