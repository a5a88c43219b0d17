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
from reference.model.state import Broker, Config, Partition, World, evolve


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
        return _gone(w)


def _gone(w: World) -> World:
    """The partition deleted: no replicas, leader, records or topic configs."""
    return evolve(
            w, deleted=True, partition=Partition(replicas=(), leader=None),
            brokers=tuple(_without_replica(b) for b in w.brokers),
            config=evolve(w.config, topic_min_isr=None),
            # What the partition held and promised went with it, by request.
            acked=(), max_hwm=0, lost_data=frozenset(), unclean_shutdowns=0,
            unclean_elections=0, reconfigured=False, hwm_before_produce=None,
            leader_at_produce=None, leader_isr_view=None, leader_min_isr_view=None,
            hwm_computed_from=None)


def unborn(w: World) -> World:
    """The world of a partition a step creates later (an undeclared topic's, one
    ``add_partitions`` adds): as a deleted one, with the topic's configs kept (an added
    partition takes its topic's, as they are then)."""
    return evolve(_gone(w), config=w.config)


def _active(w: World, r: int) -> bool:
    """ClusterControlManager.isActive: registered, unfenced, not shutting down."""
    b = w.broker(r)
    return b.alive and not b.fenced and not b.unregistered


def manual_refusal(w: World, rows: tuple[tuple[int, ...], ...]) -> str | None:
    """Why the controller refuses a manual assignment, for every partition of the request
    at once (the request is one ApiError: ReplicationControlManager.createTopic,
    createPartitions): a broker not registered (validateManualPartitionAssignment), or a
    partition with no active replica (\"are fenced or in controlled shutdown\")."""
    if any(w.broker(r).unregistered for row in rows for r in row):
        return "INVALID_REPLICA_ASSIGNMENT: a broker of the assignment is not registered"
    if any(not any(_active(w, r) for r in row) for row in rows):
        return "INVALID_REPLICA_ASSIGNMENT: every replica of a partition is fenced"
    return None


def placed(w: World, choices: tuple[tuple[int, ...], ...], rf: int
           ) -> tuple[tuple[int, ...], ...]:
    """The replica lists Kafka's placer may choose (StripedReplicaPlacer.place, apache/kafka
    metadata/.../placement/StripedReplicaPlacer.java, built with ``new Random()`` in
    ClusterControlManager.Builder: a random start, so the model takes every choice and the
    observation says which): none when every broker is fenced or fewer are registered than
    ``rf`` (INVALID_REPLICATION_FACTOR); unfenced brokers only while there are ``rf`` of
    them, else every unfenced one and fenced ones after, an unfenced one leading
    (RackList.place: "the leader of each partition must be an unfenced broker")."""
    registered = {b.id for b in w.brokers if not b.unregistered}
    unfenced = {r for r in registered if _active(w, r)}
    if not unfenced or rf > len(registered):
        return ()
    if len(unfenced) >= rf:
        return tuple(c for c in choices if set(c) <= unfenced)
    return tuple(c for c in choices if unfenced <= set(c) and set(c) <= registered
                 and c[0] in unfenced)


def born(w: World, ctx: Ctx, candidates: tuple[tuple[int, ...], ...], cfg: Config
         ) -> list[Outcome]:
    """The partition created with each candidate replica list: its active replicas in the
    ISR, in the assignment's order, the first of them leading, leader and partition epoch
    0, no ELR (ReplicationControlManager.buildPartitionRegistration)."""
    out: list[Outcome] = []
    for replicas in candidates:
        active = [r for r in replicas if _active(w, r)]
        leader = active[0]
        brokers = tuple(
            evolve(b, known_leader_epoch=0 if b.alive else b.known_leader_epoch,
                   heard_from=frozenset(active[1:]) if b.id == leader else None)
            for b in w.brokers)
        part = Partition(replicas=replicas, leader=leader, isr=frozenset(active))
        # Born without a replica that was down, the partition may start under min ISR with
        # nothing in its ELR: the KIP's |ISR ∪ ELR| >= min ISR guarantee is for partitions
        # that were whole once, so, as after an operator's reassignment, it is relaxed
        # (invariants: reconfigured).
        created = evolve(w, deleted=False, partition=part, brokers=brokers, config=cfg,
                         created_replicas=replicas,
                         reconfigured=len(active) < len(replicas))
        out.extend(Outcome(x) for x in settle(created, ctx) if all(o.world != x for o in out))
    return out


@dataclass(frozen=True, slots=True)
class CreateTopic:
    """CreateTopics: of a topic the scenario declares, after its deletion (the same name,
    the assignment it was created with, ``World.created_replicas``, its min ISR,
    ``World.created_topic_min_isr``), or of a topic the scenario does not declare, which
    the lane's world holds as not created yet (``unborn``). ``config`` (with its
    min.insync.replicas), ``assignment``, ``placed_rf``, ``partitions`` and ``choices``
    are filled in by the loader (not parameters of the step)."""

    kind: ClassVar[str] = "create_topic"
    # None is the step's own (its mapping is {}): not compared or hashed, so a generated
    # create_topic equals the one its file loads to, and steps stay hashable.
    config: Mapping[str, str] = field(default_factory=dict, compare=False)
    #: Every partition's replicas as the scenario declares them (the executor's and every
    #: lane's: the request is refused as one); empty with ``placed_rf``.
    assignment: tuple[tuple[int, ...], ...] = field(default=(), compare=False)
    #: The replication factor when Kafka's placer chooses the replicas (0: an assignment).
    placed_rf: int = field(default=0, compare=False)
    #: How many partitions the placer places (with ``placed_rf``).
    partitions: int = field(default=0, compare=False)
    #: The lane's possible replica lists with ``placed_rf`` (harness/judge/lanes.py).
    choices: tuple[tuple[int, ...], ...] = field(default=(), compare=False)
    #: A topic the scenario does not declare: its name (its step's mapping says the rest).
    topic: str = field(default="", compare=False)

    def params(self) -> dict[str, Any]:
        if not self.topic:
            return {}
        cfg = dict(self.config)
        out: dict[str, Any] = {"topic": self.topic}
        if self.placed_rf:
            out.update(replication_factor=self.placed_rf, partitions=self.partitions)
        else:
            out["assignment"] = [list(r) for r in self.assignment]
        out["min_insync_replicas"] = int(cfg.pop("min.insync.replicas"))
        return {**out, "config": cfg} if cfg else out

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        if not w.deleted:
            return w  # TOPIC_ALREADY_EXISTS: nothing changes
        cfg = evolve(w.config, topic_min_isr=w.created_topic_min_isr)
        for k, v in self.config.items():
            cfg = set_config(cfg, "topic", k, v)
        if self.placed_rf:
            candidates = placed(w, self.choices, self.placed_rf)
            return born(w, ctx, candidates, cfg) if candidates else w
        # validateManualPartitionAssignment: "The manual partition assignment includes
        # broker N, but no such broker is registered." (INVALID_REPLICA_ASSIGNMENT; met on
        # 4.3.1 by the hunt, fuzz-s4343-4); every replica fenced: INVALID_REPLICA_ASSIGNMENT.
        if manual_refusal(w, self.assignment or (w.created_replicas,)) is not None:
            return w
        return born(w, ctx, (w.created_replicas,), cfg)


@dataclass(frozen=True, slots=True)
class AddPartitions:
    """CreatePartitions: the topic grows to ``count`` partitions, the new ones with the
    replicas of ``assignment`` (as written) or, without one, where Kafka's placer puts
    them (``choices``: the lane's possible lists, of the topic's replication factor).
    ReplicationControlManager.createPartitions (apache/kafka 4.3.1, lines 1906-2000): a
    count not above the current one is INVALID_PARTITIONS (the loader refuses it); a manual
    assignment is validated as CreateTopics' (``manual_refusal``) for every new partition
    at once; the placer's as ``placed``; each new partition is then built as a new
    topic's (buildPartitionRegistration: active replicas in the ISR, the first leads,
    epoch 0, no ELR: ``born``), with the topic's configs as they are. A lane of an
    existing partition does not see the step (harness/judge/lanes.py)."""

    kind: ClassVar[str] = "add_partitions"
    count: int
    assignment: tuple[tuple[int, ...], ...] = ()
    #: How many partitions the topic had (the loader's).
    first: int = field(default=0, compare=False)
    #: The lane's own replicas (one list) or, without an assignment, the placements.
    choices: tuple[tuple[int, ...], ...] = field(default=(), compare=False)
    #: The topic's replication factor (the loader's).
    rf: int = field(default=0, compare=False)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"count": self.count}
        if self.assignment:
            out["assignment"] = [list(r) for r in self.assignment]
        return out

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        if not w.deleted:
            return w
        if self.assignment:
            if manual_refusal(w, self.assignment) is not None:
                return w
            return born(w, ctx, self.choices, w.config)
        candidates = placed(w, self.choices, self.rf)
        return born(w, ctx, candidates, w.config) if candidates else w
