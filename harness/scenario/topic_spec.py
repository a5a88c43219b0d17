"""A scenario's topics: as declared (``topic``/``topics``, created before step 0), and as
steps create them (``create_topic`` of an undeclared topic, ``add_partitions``): which
partitions exist at each step (``TopicPlan``), each partition's replicas or, where Kafka's
replica placer chooses them, the placements the model branches over."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import permutations

from yaml.nodes import Node

from harness.cluster.tiered import tiered_keys
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import (
    MAX_INT,
    MAX_TOPIC_NAME,
    TOPIC_RE,
    Items,
    Reader,
    broker_list,
)

#: At most this many partitions per topic: every partition is a model of its own (each
#: with up to 256 branches) and one more state per observation.
MAX_PARTITIONS = 24
#: At most this many topics, and this many partitions over all of them (each a model).
MAX_TOPICS = 8
MAX_LANES = 24
#: Where Kafka's replica placer chooses a partition's replicas (``replication_factor``,
#: ``add_partitions`` without an assignment) the model branches over every placement it
#: may choose (StripedReplicaPlacer starts from ``new Random()``: no choice can be
#: predicted); at most this many, so that with a quorum's branches a lane stays under the
#: model's 256.
MAX_PLACEMENTS = 24


@dataclass(frozen=True)
class Topic:
    name: str
    #: Partition 0's replicas (its first is its preferred leader).
    replicas: tuple[int, ...]
    min_insync_replicas: int
    config: Mapping[str, str] = field(default_factory=dict)
    #: Every partition's replicas, partition 0 first (empty: one partition, ``replicas``).
    assignment: tuple[tuple[int, ...], ...] = ()
    #: Each partition's creating step (None: before step 0); empty: every one before.
    born: tuple[int | None, ...] = ()
    #: Partitions whose replicas Kafka's placer chooses (their ``assignment`` row is a
    #: placeholder of the right length): the model branches over ``placements``.
    placed: frozenset[int] = frozenset()

    @property
    def partitions(self) -> int:
        return len(self.assignment) or 1

    def replicas_of(self, partition: int) -> tuple[int, ...]:
        return self.assignment[partition] if self.assignment else self.replicas

    def born_at(self, partition: int) -> int | None:
        """The step that creates ``partition`` (None: it exists before step 0)."""
        return self.born[partition] if partition < len(self.born) else None

    def initial_partitions(self) -> int:
        """How many partitions exist before step 0 (0: a topic a step creates)."""
        return sum(1 for p in range(self.partitions) if self.born_at(p) is None)


def placements(brokers: tuple[int, ...], rf: int) -> tuple[tuple[int, ...], ...]:
    """Every replica list of ``rf`` distinct brokers (the placer's order matters: its
    first is the leader)."""
    return tuple(permutations(brokers, rf))


def topic(ctx: Reader, node: Node, cluster: ClusterShape, where: str) -> Topic:
    items = ctx.mapping(node, where)
    ctx.unknown(items, ("name", "replicas", "partitions", "assignment", "min_insync_replicas",
                        "config"), where)
    name = topic_name(ctx, ctx.required(items, "name", node, where), f"{where}.name")
    rows = assignment(ctx, node, items, cluster, where)
    mir, cfg = topic_configs(ctx, node, items, where, cluster)
    return Topic(name, rows[0], mir, cfg, rows if len(rows) > 1 else ())


def topic_configs(ctx: Reader, node: Node, items: Items, where: str,
                  cluster: ClusterShape | None = None) -> tuple[int, dict[str, str]]:
    """``min_insync_replicas`` (required) and the other ``config``; tiered storage's
    topic configs only on a cluster with ``tiered_storage: true``."""
    mir = ctx.int_(ctx.required(items, "min_insync_replicas", node, where),
                   f"{where}.min_insync_replicas", 1, MAX_INT)
    cfg = ctx.props(items["config"][1], f"{where}.config") if "config" in items else {}
    if "min.insync.replicas" in cfg:
        raise ctx.fail(items["config"][1], f"{where}.config",
                       f"set min.insync.replicas with {where}.min_insync_replicas")
    if cluster is not None and "config" in items:
        refuse_tiered(ctx, items["config"][1], f"{where}.config", "topic", cfg, cluster)
    return mir, cfg


def refuse_tiered(ctx: Reader, node: Node, where: str, scope: str, cfg: Mapping[str, str],
                  cluster: ClusterShape) -> None:
    """A file:line error at the first key of ``cfg`` (the mapping at ``node``) that only
    means something with tiered storage (topic scope: remote.storage.enable,
    local.retention.*, ...; cluster scope: the brokers' remote.log.*, log.local.retention.*)
    when the cluster has none: Kafka would refuse it at run time (a controller without
    remote.log.storage.system.enable refuses remote.storage.enable, LogConfig.validate) or
    silently do nothing, after the cluster started."""
    keys = tiered_keys(scope, cfg)
    if not keys or cluster.tiered_storage:
        return
    at = next((k for k, _ in getattr(node, "value", ())
               if getattr(k, "value", None) in keys), node)
    what = "topic" if scope == "topic" else "broker"
    raise ctx.fail(at, where, f"{', '.join(keys)}: tiered storage's {what} configs need "
                   "cluster.tiered_storage: true (add it under cluster:, or drop "
                   f"{'it' if len(keys) == 1 else 'them'}; FORMAT.md \"Tiered storage\")")


def assignment(ctx: Reader, node: Node, items: Items, cluster: ClusterShape, where: str
               ) -> tuple[tuple[int, ...], ...]:
    """Every partition's replicas: ``assignment`` as written, or ``replicas`` for partition
    0 and a spread (``spread_assignment``) for the rest."""
    count = ctx.int_(items["partitions"][1], f"{where}.partitions", 1, MAX_PARTITIONS) \
        if "partitions" in items else None
    if "assignment" not in items:
        replicas = broker_list(ctx, ctx.required(items, "replicas", node, where),
                               f"{where}.replicas", cluster)
        return spread_assignment(replicas, cluster.broker_ids, count or 1)
    anode = items["assignment"][1]
    rows = ctx.sequence(anode, f"{where}.assignment", MAX_PARTITIONS)
    if not rows:
        raise ctx.fail(anode, f"{where}.assignment", "lists no partition")
    out = tuple(broker_list(ctx, row, f"{where}.assignment[{i}]", cluster)
                for i, row in enumerate(rows))
    if len({len(r) for r in out}) > 1:
        raise ctx.fail(anode, f"{where}.assignment", "every partition needs the same number "
                       "of replicas (Kafka's CreateTopics takes one replication factor)")
    if count is not None and count != len(out):
        raise ctx.fail(items["partitions"][1], f"{where}.partitions", f"{count} partitions "
                       f"but {where}.assignment lists {len(out)}: leave one out or make them "
                       "agree")
    if "replicas" in items:
        replicas = broker_list(ctx, items["replicas"][1], f"{where}.replicas", cluster)
        if replicas != out[0]:
            raise ctx.fail(items["replicas"][1], f"{where}.replicas", "differs from "
                           f"{where}.assignment[0]: leave it out, the assignment says it")
    return out


def spread_assignment(replicas: tuple[int, ...], brokers: tuple[int, ...], partitions: int
                      ) -> tuple[tuple[int, ...], ...]:
    """Partition p's replicas: the replication factor's worth of brokers from the cycle
    ``replicas`` then the other brokers, starting p places along, so that leaders and
    followers spread over every broker as Kafka's own assignment spreads them."""
    cycle = list(replicas) + [b for b in brokers if b not in replicas]
    n, rf = len(cycle), len(replicas)
    return tuple(tuple(cycle[(p + i) % n] for i in range(rf)) for p in range(partitions))


def replication_factor(ctx: Reader, node: Node, where: str, cluster: ClusterShape) -> int:
    """A replication factor Kafka's placer can meet (StripedReplicaPlacer.place refuses one
    above the registered brokers) with placements the model can branch over."""
    rf = ctx.int_(node, where, 1, MAX_INT)
    if rf > cluster.brokers:
        raise ctx.fail(node, where, f"replication factor {rf} is more than the "
                       f"{cluster.brokers} broker(s) (Kafka refuses it: "
                       "INVALID_REPLICATION_FACTOR)")
    if len(placements(cluster.broker_ids, rf)) > MAX_PLACEMENTS:
        raise ctx.fail(node, where, f"{len(placements(cluster.broker_ids, rf))} placements "
                       f"of {rf} replicas on {cluster.brokers} brokers; the model branches "
                       f"over each and takes at most {MAX_PLACEMENTS}: give an assignment")
    return rf


def topic_name(ctx: Reader, node: Node, where: str = "topic.name") -> str:
    """Kafka's rule: 1..249 of [a-zA-Z0-9._-], and not '.' or '..'."""
    name = ctx.str_(node, where)
    if not TOPIC_RE.fullmatch(name) or name in (".", "..") or len(name) > MAX_TOPIC_NAME:
        raise ctx.fail(node, where, f"invalid topic name {name[:MAX_TOPIC_NAME + 1]!r}: "
                       f"Kafka takes 1..{MAX_TOPIC_NAME} of letters, digits, '.', '_' and '-', "
                       "not '.' or '..'")
    return name


class TopicPlan:
    """The topics as the steps so far leave them: the declared ones, those a
    ``create_topic`` created, the partitions ``add_partitions`` added (each with the step
    that made it)."""

    def __init__(self, declared: tuple[Topic, ...]) -> None:
        self.topics: dict[str, Topic] = {t.name: t for t in declared}

    def now(self) -> tuple[Topic, ...]:
        return tuple(self.topics.values())

    def create(self, name: str, rows: tuple[tuple[int, ...], ...], min_isr: int,
               config: Mapping[str, str], index: int, placed: bool) -> Topic:
        t = Topic(name, rows[0], min_isr, dict(config), rows if len(rows) > 1 else (),
                  born=(index,) * len(rows),
                  placed=frozenset(range(len(rows))) if placed else frozenset())
        self.topics[name] = t
        return t

    def add(self, name: str, rows: tuple[tuple[int, ...], ...], index: int, placed: bool
            ) -> Topic:
        t = self.topics[name]
        have = t.partitions
        self.topics[name] = replace(
            t, assignment=tuple(t.replicas_of(p) for p in range(have)) + rows,
            born=tuple(t.born_at(p) for p in range(have)) + (index,) * len(rows),
            placed=t.placed | (frozenset(range(have, have + len(rows))) if placed
                               else frozenset()))
        return self.topics[name]
