"""The generators of a topic's life: ``delete_topic`` (DeleteTopics), ``create_topic``
(CreateTopics of the deleted topic again, as it was declared, or once per schedule of a
new topic ``u``) and ``add_partitions`` (CreatePartitions), all answered by the active
controller (forwarded by a broker). While the topic is deleted no step on its partitions
is made (``Generator.on_partition``); the recovery tail creates it again. The schedule's
model is of the declared topic's first partitions: a new topic and added partitions are
judged by the run's lanes, not guarded here beyond Kafka's own refusals."""

from __future__ import annotations

import random
from itertools import permutations

from reference.model import topics as T
from reference.model.steps import Step
from reference.search.generators.generator import Gen, Generator, Track


def _delete_guard(step: object, g: Gen) -> str | None:
    if g.track.new_topic:  # the file would have to name the topic (several topics)
        return "a topic was created by a step: delete_topic would name its topic"
    if any(w.deleted for w in g.model.branches):
        return "the topic is deleted already"
    return g.controller_request("DeleteTopics")


#: The name of the topic create_topic makes (the generated clusters' topic is ``t``).
NEW_TOPIC = "u"
#: At most this many placements for the placer's choice (the loader's MAX_PLACEMENTS).
MAX_PLACEMENTS = 24
#: A generated topic grows to at most this many partitions.
MAX_GROWN = 4


def _placements(brokers: int, rf: int) -> int:
    return len(list(permutations(range(brokers), rf)))


def _create_steps(g: Gen, rng: random.Random) -> list[Step]:
    """The deleted topic again; or, once, not under traffic, a new topic: rf up to 3 with
    min ISR rf - 1 (at least 1: with rf 3 a replica lost puts the ELR to work), one or two
    partitions, on an assignment rotated from a random broker or, where the model can
    branch over every choice, where Kafka's placer puts them."""
    out: list[Step] = [T.CreateTopic()]
    if g.traffic or g.track.new_topic:
        return out
    brokers = sorted(g.brokers)
    rf, parts = min(3, len(brokers)), rng.choice((1, 2))
    cfg = {"min.insync.replicas": str(max(1, rf - 1))}
    start = rng.randrange(len(brokers))
    rows = tuple(tuple(brokers[(start + p + i) % len(brokers)] for i in range(rf))
                 for p in range(parts))
    out.append(T.CreateTopic(config=cfg, assignment=rows, topic=NEW_TOPIC))
    if _placements(len(brokers), rf) <= MAX_PLACEMENTS:
        out.append(T.CreateTopic(config=cfg, placed_rf=rf, partitions=parts,
                                 topic=NEW_TOPIC))
    return out


def _create_guard(step: object, g: Gen) -> str | None:
    if isinstance(step, T.CreateTopic) and step.topic:
        if g.track.new_topic:
            return "a new topic was created already (one per schedule)"
        if any(w.deleted for w in g.model.branches):
            return "the topic is deleted (create_topic would have to name it)"
        if any(w.config.unclean_leader_election for w in g.model.branches):
            return ("unclean election is on: a cluster-wide default could elect uncleanly on "
                    "the new topic, which the schedule's model does not hold")
        return _active_request(g, "CreateTopics")
    if not g.every(lambda w: w.deleted):
        return "the topic exists"
    if not g.every(lambda w: not any(w.broker(r).unregistered for r in w.created_replicas)):
        return "a replica of the topic is unregistered (CreateTopics is refused)"
    # ReplicationControlManager.createTopic refuses an assignment with no active replica.
    if not g.every(lambda w: any(w.broker(r).alive and not w.broker(r).fenced
                                 for r in w.created_replicas)):
        return "no replica of the topic is running and unfenced (CreateTopics is refused)"
    return g.controller_request("CreateTopics")


def _active_request(g: Gen, what: str) -> str | None:
    """A request Kafka answers with a new partition: some registered broker is running and
    unfenced (else INVALID_REPLICATION_FACTOR / INVALID_REPLICA_ASSIGNMENT), the
    controller reachable."""
    def active(b: int) -> bool:
        return all(w.broker(b).alive and not w.broker(b).fenced
                   and not w.broker(b).unregistered for w in g.model.branches)

    if not any(active(b) for b in g.brokers):
        return f"no broker is running and unfenced in every branch ({what} needs one)"
    return g.controller_request(what)


def _lanes(g: Gen) -> int:
    """The declared topic's partitions the model knows."""
    return len(getattr(g.model, "models", (g.model,)))


def _add_steps(g: Gen, rng: random.Random) -> list[Step]:
    """One more partition, on the declared topic's replicas rotated, or placed by Kafka
    where the model can branch over every choice."""
    have = _lanes(g) + g.track.added_partitions
    replicas = g.model.branches[0].created_replicas
    if have >= MAX_GROWN or not replicas:
        return []
    brokers = sorted(g.brokers)
    shift = rng.randrange(len(brokers))
    row = tuple(brokers[(brokers.index(r) + shift) % len(brokers)] for r in replicas)
    out: list[Step] = [T.AddPartitions(have + 1, (row,))]
    if _placements(len(brokers), len(replicas)) <= MAX_PLACEMENTS:
        out.append(T.AddPartitions(have + 1))
    return out


def _add_guard(step: object, g: Gen) -> str | None:
    if not isinstance(step, T.AddPartitions):
        return "not an add_partitions step"
    if g.track.new_topic:  # the file would have to name the topic (several topics)
        return "a topic was created by a step: add_partitions would name its topic"
    if any(w.config.unclean_leader_election for w in g.model.branches):
        return ("unclean election is on: the model of the first partitions cannot rule out "
                "an unclean loss on a new one")
    if step.count != _lanes(g) + g.track.added_partitions + 1:
        return "the topic has another partition count"
    return _active_request(g, "CreatePartitions")


def _after_add(step: object, track: Track) -> None:
    track.added_partitions += 1


def _after_create(step: object, track: Track) -> None:
    if isinstance(step, T.CreateTopic) and step.topic:
        track.new_topic = True


DELETE_TOPIC = Generator("delete_topic", T.DeleteTopic, 1, lambda g, rng: [T.DeleteTopic()],
                         _delete_guard)
CREATE_TOPIC = Generator("create_topic", T.CreateTopic, 4, _create_steps, _create_guard,
                         after=_after_create)
ADD_PARTITIONS = Generator("add_partitions", T.AddPartitions, 1, _add_steps, _add_guard,
                           after=_after_add, under_traffic=False, on_partition=True)
