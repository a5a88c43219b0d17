"""The generators of a topic's life: ``delete_topic`` (DeleteTopics) and ``create_topic``
(CreateTopics of the deleted topic again, as it was declared), both answered by the active
controller (forwarded by a broker). While the topic is deleted no step on its partitions
is made (``Generator.on_partition``); the recovery tail creates it again."""

from __future__ import annotations

from reference.model import topics as T
from reference.search.generators.generator import Gen, Generator


def _delete_guard(step: object, g: Gen) -> str | None:
    if any(w.deleted for w in g.model.branches):
        return "the topic is deleted already"
    return g.controller_request("DeleteTopics")


def _create_guard(step: object, g: Gen) -> str | None:
    if not g.every(lambda w: w.deleted):
        return "the topic exists"
    if not g.every(lambda w: not any(w.broker(r).unregistered for r in w.created_replicas)):
        return "a replica of the topic is unregistered (CreateTopics is refused)"
    # ReplicationControlManager.createTopic refuses an assignment with no active replica.
    if not g.every(lambda w: any(w.broker(r).alive and not w.broker(r).fenced
                                 for r in w.created_replicas)):
        return "no replica of the topic is running and unfenced (CreateTopics is refused)"
    return g.controller_request("CreateTopics")


DELETE_TOPIC = Generator("delete_topic", T.DeleteTopic, 1, lambda g, rng: [T.DeleteTopic()],
                         _delete_guard)
CREATE_TOPIC = Generator("create_topic", T.CreateTopic, 4, lambda g, rng: [T.CreateTopic()],
                         _create_guard)
