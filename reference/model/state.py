"""State of the model: the controller's view of one partition, each broker's
registration, and each replica's log.

Names follow KIP-966: ISR, ELR (Eligible Leader Replicas), LastKnownELR,
LastKnownLeader, HWM (high watermark), min ISR, unclean shutdown.

Everything here is an immutable value so that states can be hashed, compared
and shared between the branches of a prediction and the nodes of the explorer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")

#: One copying function per class and set of changed fields (in the call's order).
_EVOLVERS: dict[tuple[type, tuple[str, ...]], Any] = {}


def _make_evolver(cls: type, changed: tuple[str, ...]) -> Any:
    lines = ["def ev(o, kw):", "    n = new(cls)"]
    for name in (f.name for f in fields(cls)):
        value = f"kw[{name!r}]" if name in changed else f"o.{name}"
        lines.append(f"    put(n, {name!r}, {value})")
    lines.append("    return n")
    env: dict[str, Any] = {"new": object.__new__, "put": object.__setattr__, "cls": cls}
    exec("\n".join(lines), env)  # generated field copies: no per-field loop or test
    return env["ev"]


def evolve(obj: T, **changes: Any) -> T:
    """dataclasses.replace for the frozen state classes, without re-running
    __init__ (the explorer calls it millions of times)."""
    key = (type(obj), tuple(changes))
    ev = _EVOLVERS.get(key)
    if ev is None:
        ev = _EVOLVERS[key] = _make_evolver(*key)
    result: T = ev(obj, changes)
    return result


#: The harness's own clients: a node of the network graph (FORMAT.md: client
#: links count as links of the node, an isolated broker is cut from clients).
CLIENT = -2

#: Leaderless partition, as on the wire (DescribeTopicPartitions leader -1).
NO_LEADER = -1

#: A record in a replica's log: (leader epoch it was written in, record id).
#: Its offset is its index in the log.
Record = tuple[int, str]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """Shape of the cluster: broker ids and controller ids (FORMAT.md: brokers 1..N,
    controllers 100..), plus extra broker properties (strings)."""

    brokers: tuple[int, ...] = (1, 2, 3)
    controllers: tuple[int, ...] = (100,)
    broker_config: Mapping[str, str] = field(default_factory=dict)
    #: The metadata.version feature level the cluster was formatted at (``cluster.
    #: metadata_version``); None: the birth build's newest (reference/model/metadata_version.py).
    metadata_level: int | None = None
    #: Nodes born on another build than the run's (``cluster.builds``): (node, "X.Y.Z").
    builds: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic with one partition. ``replicas`` is the assignment order; the first
    replica is the preferred leader."""

    name: str = "t"
    replicas: tuple[int, ...] = (1, 2, 3)
    min_insync_replicas: int = 2
    config: Mapping[str, str] = field(default_factory=dict)
    #: The partition is created by a step (``create_topic`` of an undeclared topic,
    #: ``add_partitions``): it does not exist before (reference.model.topics.unborn).
    absent: bool = False


@dataclass(frozen=True, slots=True)
class Config:
    """The configs the protocol reads. ``topic_min_isr``/``cluster_min_isr`` are
    ``min.insync.replicas`` at topic and cluster level (topic wins)."""

    topic_min_isr: int | None = 2
    cluster_min_isr: int = 1
    #: The replica count the effective min ISR takes, when not the partition's own: Kafka
    #: takes partition 0's for every partition of the topic
    #: (ReplicationControlManager.getTopicEffectiveMinIsr: ``min(min.insync.replicas,
    #: topics.get(topicId).parts.get(0).replicas.length)``, 4.3.1), which differs for a
    #: topic whose partitions have different replica counts (createPartitions with an
    #: assignment, a reassignment). None: the partition's own (one-partition topics).
    replication_factor: int | None = None
    unclean_leader_election: bool = False
    #: KIP-966 ``unclean.recovery.strategy``: Aggressive | Balanced | None.
    unclean_recovery_strategy: str = "Balanced"
    #: KIP-966 ``unclean.recovery.manager.enabled``.
    unclean_recovery_manager: bool = True
    unclean_recovery_timeout_ms: int = 300_000
    #: KIP-1303 ``leader.election.eligible.local.log.ms`` / ``.bytes`` (-1 = off).
    eligible_local_log_ms: int = -1
    eligible_local_log_bytes: int = -1
    auto_leader_rebalance: bool = True

    def min_isr(self, replication_factor: int) -> int:
        """KIP-966: "the effective min.insync.replicas will be
        min(min.insync.replicas, replication factor)"."""
        configured = self.topic_min_isr if self.topic_min_isr is not None else self.cluster_min_isr
        return max(1, min(configured, replication_factor))


@dataclass(frozen=True, slots=True)
class Broker:
    """One broker: its process, its registration with the controller, and its
    replica of the partition (log, local HWM, KIP-1303 local-log facts)."""

    id: int
    alive: bool = True
    #: Controller view: fenced (no live session) or unfenced.
    fenced: bool = False
    #: The process restarted and has not registered yet.
    pending_registration: bool = False
    #: Its registration was dropped (UnregisterBroker) and it has not registered since.
    unregistered: bool = False
    #: Broker epoch of its current registration.
    epoch: int = 1
    #: Broker epoch written in its CleanShutdownFile (None: no file).
    clean_shutdown_epoch: int | None = None
    #: Outcome of its last registration: was the last shutdown clean?
    last_shutdown_clean: bool | None = None
    log: tuple[Record, ...] = ()
    hwm: int = 0
    #: Leader epoch of the latest partition metadata this broker has applied.
    known_leader_epoch: int = 0
    #: As leader (in the latest partition metadata it has applied), the followers whose
    #: fetch has reached it since it took the leadership; None while it does not lead.
    #: A broker that becomes leader forgets its followers' log ends (Partition.makeLeader
    #: -> Replica.resetReplicaState with isNewLeader: LEO -1 until their next fetch), so an
    #: ISR member it never heard from is out of sync once replica.lag.time.max.ms passes,
    #: even with every record (Replica.isCaughtUp), and holds the HWM back until then.
    heard_from: frozenset[int] | None = None
    #: KIP-858: the log directory (its index in the broker's ``log.dirs``) holding this
    #: broker's replica of the partition, as a ``move_replica_dir`` step put it; None: not
    #: known (the broker chose it, LogManager.nextLogDirs, or a move may not have ended).
    log_dir: int | None = None
    #: KIP-858: the directory holding this replica failed (``fail_log_dir``): the broker
    #: serves no replica there until its restart repairs it (reference/model/logdirs.py).
    dir_offline: bool = False
    #: KIP-1303: timestamp of the earliest record in local storage, local log size.
    local_log_start_ms: int | None = None
    local_log_bytes: int | None = None

    @property
    def leo(self) -> int:
        """Log end offset."""
        return len(self.log)

    def last_epoch(self) -> int:
        """Leader epoch of the last record (-1 for an empty log)."""
        return self.log[-1][0] if self.log else -1


@dataclass(frozen=True, slots=True)
class Partition:
    """The controller's view of the partition (PartitionRecord /
    PartitionChangeRecord fields of KIP-966)."""

    replicas: tuple[int, ...]
    leader: int | None
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: frozenset[int] = frozenset()
    elr: frozenset[int] = frozenset()
    last_known_elr: frozenset[int] = frozenset()
    last_known_leader: int | None = None
    #: Leader recovery state RECOVERING (after an unclean election).
    recovering: bool = False
    #: An ongoing reassignment (KIP-455), as the PartitionRecord holds it: ``replicas`` is
    #: the target followed by the replicas being removed (PartitionReassignmentReplicas),
    #: ``adding`` the target's replicas that were not in the assignment, ``removing`` the
    #: assignment's replicas not in the target (both sorted, as Kafka's TreeSet).
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        """PartitionReassignmentReplicas.isReassignmentInProgress."""
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> tuple[int, ...] | None:
        """Target of an ongoing reassignment (None: none in progress)."""
        if not self.reassigning:
            return None
        return tuple(r for r in self.replicas if r not in self.removing)


@dataclass(frozen=True, slots=True)
class World:
    """One concrete state of the whole system: a branch of a prediction, a node of
    the explorer."""

    brokers: tuple[Broker, ...]
    controllers: tuple[int, ...]
    partition: Partition
    config: Config
    #: Cut links (src, dst): src cannot open connections to dst (``heal`` clears them).
    cuts: frozenset[tuple[int, int]] = frozenset()
    #: Nodes nobody reaches and that reach nobody whatever the links: a paused node, a
    #: controller that is down. Kept apart from ``cuts`` because the fault ends apart:
    #: ``resume``/``restart`` give the node back without healing the network around it,
    #: and ``heal`` leaves a stopped process stopped.
    silenced: frozenset[int] = frozenset()
    #: Controllers whose process is down (``kill``/``stop``, an ``upgrade`` between its stop
    #: and start), as opposed to paused: silenced too. A single controller that is down
    #: decides nothing, and on its restart it fences no broker that heartbeats again
    #: (controller.active_controller).
    down: frozenset[int] = frozenset()
    #: Nodes running another build than the cluster was born on: (node, "X.Y.Z"), sorted
    #: (the ``upgrade`` step, reference.model.upgrade); a node not named runs the birth
    #: build. The active controller's build chooses the rules of its decisions (Model).
    builds: tuple[tuple[int, str], ...] = ()
    #: Acknowledged records: record id -> acks ("0", "1", "all").
    acked: tuple[tuple[str, str], ...] = ()
    #: Highest HWM the partition ever exposed (the TLA+ spec's "true HWM").
    max_hwm: int = 0
    #: Replicas that lost an unflushed suffix holding records.
    lost_data: frozenset[int] = frozenset()
    #: Registrations the controller saw as unclean shutdowns.
    unclean_shutdowns: int = 0
    #: Elections the operator opted into losing data with (unclean election
    #: enabled, Aggressive recovery, ElectLeaders unclean/designated).
    unclean_elections: int = 0
    #: min.insync.replicas changed or a reassignment ran (relaxes the
    #: |ISR ∪ ELR| >= min ISR invariant).
    reconfigured: bool = False
    #: Logical clock (ms) for KIP-1303 time-based eligibility.
    now_ms: int = 0
    #: Next broker epoch the controller hands out.
    next_broker_epoch: int = 2
    #: Records produced so far (appended or not).
    produced: int = 0
    #: The KRaft quorum's leader, the active controller (None: not elected yet, or no
    #: majority). With one controller it is that controller (controller.active_controller).
    quorum_leader: int | None = None
    #: Quorum elections during the step being applied (Model.apply resets it).
    quorum_elections: int = 0
    #: Controllers that, cut off from the leader on a build without pre-vote (KIP-996),
    #: became candidates and raised the quorum epoch (QuorumState.transitionToCandidate).
    campaigning: frozenset[int] = frozenset()
    #: Controllers back in touch with the leader after campaigning (no pre-vote) that have
    #: not yet forced an election: their next Vote request, with the raised epoch, makes the
    #: leader resign, at a moment no step boundary bounds (protocol.pending_disruptions).
    may_disrupt: frozenset[int] = frozenset()
    #: The partition's HWM when the latest produce began, and its leader then, while the
    #: followers may not have learned the HWM the produce reached: only in the step right
    #: after a produce (Model.apply), on profiles with ``leader_hwm_lag``.
    hwm_before_produce: int | None = None
    leader_at_produce: int | None = None
    #: After a produce, the followers whose fetch of the records the leader holds above
    #: its HWM no observation confirms (the HWM did not move over them), each with the log
    #: length it surely holds: (follower, length), in assignment order. Model.apply sets it
    #: after a produce step and opens it into branches at the next step's start
    #: (protocol.replication.unfetched): the fetch may not have come before that step's
    #: fault.
    fetch_floor: tuple[tuple[int, int], ...] = ()
    #: Followers that, in this branch, have not yet fetched a deposed leader's log of that
    #: length: (follower, the deposed leader's log end), for this step only (Model.apply
    #: clears it; protocol.replication._stale_fetch).
    stale_unfetched: frozenset[tuple[int, int]] = frozenset()
    #: The ISR the leader may still hold as its own in the step right after a step that
    #: shrank the ISR below min ISR (Model.apply sets and clears it): a broker publishes new
    #: metadata to its cache, which DescribeTopicPartitions reads, before it applies it to
    #: the partition, whose ISR an append checks (BrokerMetadataPublisher.onMetadataUpdate:
    #: metadataCache.setImage, then replicaManager.applyDelta).
    leader_isr_view: frozenset[int] | None = None
    #: The min ISR the leader may still act on during the step right after a step that
    #: changed it (Model.apply sets and clears it): the controller answers AlterConfigs once
    #: it commits the record, and a broker applies it when its metadata reaches it
    #: (DynamicConfigPublisher), later on a slow link. Seen on 3.8.1 (hunt seed 42,
    #: fuzz-s42-34): min ISR 1 -> 2 with ISR [2], an acks=all record acked 0.14 s before the
    #: leader, behind a 307 ms latency toxic, applied the change.
    leader_min_isr_view: int | None = None
    #: After a min.insync.replicas change, what the leader's HWM was last computed from
    #: (``protocol.hwm_inputs``): the leader recomputes its HWM only when one of them
    #: changes, never for a config change alone (None: nothing pending).
    hwm_computed_from: tuple[object, ...] | None = None
    #: The controller the latest step naming ``active`` resolved to (``last_active``).
    last_active: int | None = None
    #: The partition's topic was deleted (DeleteTopics) and not created again: the
    #: partition has no replicas, no leader and no records (reference.model.topics).
    deleted: bool = False
    #: The replicas the topic was created with for this partition, what a re-creation under
    #: the same name assigns again (reference.model.topics.CreateTopic).
    created_replicas: tuple[int, ...] = ()
    #: The topic's min.insync.replicas as it was created (None: the cluster's), what a
    #: re-creation sets again: the deleted topic's own config went with it.
    created_topic_min_isr: int | None = None
    #: ELR as the latest accepted ``feature`` step on eligible.leader.replicas.version left
    #: it (True: level 1); None: no such step yet, ELR is as the run began (Ctx.elr_on).
    #: The controller reads the feature at every partition change
    #: (FeatureControlManager.isElrFeatureEnabled, apache/kafka 4.3.1), so it is a state of
    #: the world, not of the run (reference/model/features.py).
    elr_live: bool | None = None
    #: The finalized metadata.version feature level: as the cluster was formatted
    #: (``cluster.metadata_version``) or as the latest accepted ``feature`` step on
    #: metadata.version left it; None: the birth build's newest, above every level the
    #: model's rules name (reference/model/metadata_version.py).
    metadata_level: int | None = None

    def broker(self, broker_id: int) -> Broker:
        bs = self.brokers
        i = broker_id - bs[0].id  # ids are usually contiguous
        if 0 <= i < len(bs) and bs[i].id == broker_id:
            return bs[i]
        for b in bs:
            if b.id == broker_id:
                return b
        raise KeyError(f"no broker {broker_id}")

    def with_broker(self, b: Broker) -> World:
        return evolve(self, brokers=tuple(b if x.id == b.id else x for x in self.brokers))

    @property
    def min_isr(self) -> int:
        cfg = self.config
        configured = cfg.topic_min_isr if cfg.topic_min_isr is not None else cfg.cluster_min_isr
        rf = len(self.partition.replicas) if cfg.replication_factor is None \
            else cfg.replication_factor
        return configured if 1 <= configured <= rf else max(1, min(configured, rf))

    def acked_all(self) -> frozenset[str]:
        """Records acknowledged with acks=all."""
        return frozenset(r for r, a in self.acked if a == "all")

    def partition_hwm(self) -> int | None:
        """The HWM a client sees: the leader's local HWM (None when leaderless)."""
        leader = self.partition.leader
        return None if leader is None else self.broker(leader).hwm


def _ids(value: frozenset[int] | None) -> list[int] | None:
    return None if value is None else sorted(value)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What the harness observes of a partition, and what the model predicts.

    ``leader`` is NO_LEADER (-1) for a leaderless partition and None for
    "unknown / don't care".

    In a prediction a None field means "don't care"; in an observation it means
    "not known". Comparison treats None on either side as a match.
    """

    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: frozenset[int]
    elr: frozenset[int] | None
    last_known_elr: frozenset[int] | None
    hwm: int | None
    fenced: frozenset[int] | None
    #: An ongoing reassignment's adding / removing replicas (ListPartitionReassignments;
    #: empty when none is in progress; None: not known / don't care).
    adding: frozenset[int] | None = None
    removing: frozenset[int] | None = None
    #: The active controller, the metadata quorum's leader (DescribeQuorum leaderId;
    #: NO_LEADER: no quorum; None: not known / don't care).
    controller: int | None = None
    #: Whether the quorum held an election during the step (the quorum epoch changed).
    quorum_elected: bool | None = None
    #: Observation only: the HWM is hidden (None) because the leader's is below the start of
    #: its leader epoch, this offset (KIP-207's OFFSET_NOT_AVAILABLE). Recorded so histories
    #: can be re-judged with it; not compared yet: a predicted HWM at or above it would be
    #: a divergence only once the model knows a follower learns the HWM a fetch round late
    #: (hunt seed 42, fuzz-s42-9; bench/RESULTS-hunt.md). None: no bound known.
    hwm_below: int | None = None

    FIELDS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
              "fenced", "adding", "removing", "controller", "quorum_elected")

    def to_json(self) -> dict[str, Any]:
        """The partition-state object of fixtures/histories/SCHEMA.md."""
        out: dict[str, Any] = {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "replicas": list(self.replicas),
            "isr": sorted(self.isr),
            "elr": _ids(self.elr),
            "last_known_elr": _ids(self.last_known_elr),
            "hwm": self.hwm,
            "fenced": _ids(self.fenced),
        }
        # Only when known: builds and histories without them keep their shape.
        if self.adding is not None:
            out["adding"] = _ids(self.adding)
        if self.removing is not None:
            out["removing"] = _ids(self.removing)
        if self.controller is not None:
            out["controller"] = self.controller
        if self.quorum_elected is not None:
            out["quorum_elected"] = self.quorum_elected
        if self.hwm_below is not None:
            out["hwm_below"] = self.hwm_below
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionState:
        def ids(key: str) -> frozenset[int] | None:
            v = data.get(key)
            return None if v is None else frozenset(int(x) for x in v)

        leader = data.get("leader")
        if leader is not None and int(leader) < 0:
            leader = NO_LEADER
        epoch = data.get("leader_epoch")
        hwm = data.get("hwm")
        return cls(
            leader=None if leader is None else int(leader),
            leader_epoch=None if epoch is None else int(epoch),
            replicas=tuple(int(x) for x in data.get("replicas") or ()),
            isr=frozenset(int(x) for x in data.get("isr") or ()),
            elr=ids("elr"),
            last_known_elr=ids("last_known_elr"),
            hwm=None if hwm is None else int(hwm),
            fenced=ids("fenced"),
            adding=ids("adding"),
            removing=ids("removing"),
            controller=None if data.get("controller") is None else int(data["controller"]),
            quorum_elected=None if data.get("quorum_elected") is None
            else bool(data["quorum_elected"]),
            hwm_below=None if data.get("hwm_below") is None else int(data["hwm_below"]),
        )

    def differing_field(self, other: PartitionState) -> str | None:
        """First field where both sides are known and differ (None: they match).

        None on either side matches anything; an empty ``replicas`` tuple counts
        as unknown. Leaderless is ``NO_LEADER`` (-1, as on the wire), not None.
        """
        for name in self.FIELDS:
            a = getattr(self, name)
            b = getattr(other, name)
            if a is None or b is None:
                continue
            if name == "replicas" and (not a or not b):
                continue
            if a != b:
                return name
        return None

    def matches(self, other: PartitionState) -> bool:
        return self.differing_field(other) is None


def fmt_value(value: object) -> str:
    """Render a field value the way explain() reports it: sets as {1, 2}."""
    if isinstance(value, frozenset):
        return "{" + ", ".join(str(x) for x in sorted(value)) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(x) for x in value) + "]"
    return "None" if value is None else str(value)
