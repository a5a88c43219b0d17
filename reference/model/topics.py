"""A topic's life: deleted (DeleteTopics) and created again under the same name
(CreateTopics), as one partition's model sees it.

KIP-966 says nothing of topic deletion; what the model follows is Kafka's controller
(metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java):

- ``deleteTopic`` writes one RemoveTopicRecord; its ``replay(RemoveTopicRecord)`` drops the
  topic, its partitions and "the configurations associated with this topic"
  (``configurationControl.deleteTopicConfigs``), and the brokers delete the partition's
  logs. Every record goes with them, by request: none of them is lost.
- ``createTopic`` with a manual assignment puts in the ISR the replicas the controller
  sees active (``clusterControl::isActive``: registered, unfenced, not shutting down), in
  the assignment's order, and refuses the topic (INVALID_REPLICA_ASSIGNMENT) when none is;
  ``buildPartitionRegistration`` makes the first of them the leader, at leader and
  partition epoch 0, with no ELR. ``validateManualPartitionAssignment`` first refuses an
  assignment naming a broker that is not registered (one unregistered since it went down).
  A topic created again under a deleted one's name has a new topic id (KIP-516): a replica
  still holding the old topic's log drops it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reference.model.controller import Ctx
from reference.model.protocol import Outcome, set_config, settle
from reference.model.state import Broker, Partition, World, evolve


def _without_replica(b: Broker) -> Broker:
    """A broker once the partition's log is gone from it (the broker stays as it is)."""
    return evolve(b, log=(), hwm=0, heard_from=None, local_log_start_ms=None,
                  local_log_bytes=None)


@dataclass(frozen=True, slots=True)
class DeleteTopic:
    """DeleteTopics: the partition is gone (no replicas, no leader, no ISR or ELR), with its
    records and its topic's configs (ReplicationControlManager.replay(RemoveTopicRecord))."""

    kind: ClassVar[str] = "delete_topic"

    def params(self) -> dict[str, Any]:
        return {}

    def transition(self, w: World, ctx: Ctx) -> World:
        if w.deleted:
            return w
        return evolve(
            w, deleted=True, partition=Partition(replicas=(), leader=None),
            brokers=tuple(_without_replica(b) for b in w.brokers),
            config=evolve(w.config, topic_min_isr=None),
            # What the partition held and promised went with it, by request.
            acked=(), max_hwm=0, lost_data=frozenset(), unclean_shutdowns=0,
            unclean_elections=0, reconfigured=False, hwm_before_produce=None,
            leader_at_produce=None, leader_isr_view=None, leader_min_isr_view=None,
            hwm_computed_from=None)


@dataclass(frozen=True, slots=True)
class CreateTopic:
    """CreateTopics of a topic the scenario declares, after its deletion: the same name,
    the assignment it was created with (``World.created_replicas``), the min ISR it was
    created with (``World.created_topic_min_isr``) and its declared configs (``config``,
    filled in by the loader; not a parameter of the step)."""

    kind: ClassVar[str] = "create_topic"
    # Neither is the step's own (its mapping is {}): not compared or hashed, so a generated
    # create_topic equals the one its file loads to, and steps stay hashable.
    config: Mapping[str, str] = field(default_factory=dict, compare=False)
    #: Every partition's replicas as the scenario declares them (the executor's; the model
    #: reads its own partition's from the world).
    assignment: tuple[tuple[int, ...], ...] = field(default=(), compare=False)

    def params(self) -> dict[str, Any]:
        return {}

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        if not w.deleted:
            return w  # TOPIC_ALREADY_EXISTS: nothing changes
        if any(w.broker(r).unregistered for r in w.created_replicas):
            # validateManualPartitionAssignment: "The manual partition assignment includes
            # broker N, but no such broker is registered." (INVALID_REPLICA_ASSIGNMENT; met
            # on 4.3.1 by the hunt, fuzz-s4343-4).
            return w
        active = [r for r in w.created_replicas
                  if w.broker(r).alive and not w.broker(r).fenced]
        if not active:
            return w  # INVALID_REPLICA_ASSIGNMENT: every replica fenced
        cfg = evolve(w.config, topic_min_isr=w.created_topic_min_isr)
        for k, v in self.config.items():
            cfg = set_config(cfg, "topic", k, v)
        leader = active[0]
        brokers = tuple(
            evolve(b, known_leader_epoch=0 if b.alive else b.known_leader_epoch,
                   heard_from=frozenset(active[1:]) if b.id == leader else None)
            for b in w.brokers)
        part = Partition(replicas=w.created_replicas, leader=leader, isr=frozenset(active))
        # Born without a replica that was down, the partition may start under min ISR with
        # nothing in its ELR: the KIP's |ISR ∪ ELR| >= min ISR guarantee is for partitions
        # that were whole once, so, as after an operator's reassignment, it is relaxed
        # (invariants: reconfigured).
        created = evolve(w, deleted=False, partition=part, brokers=brokers, config=cfg,
                         reconfigured=len(active) < len(w.created_replicas))
        return [Outcome(x) for x in settle(created, ctx)]
