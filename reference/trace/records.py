"""The trace's vocabulary: decoded metadata records and the committed state they build
(broker and partition registrations), with the accessors every rule reads them by.
"""


from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference.model.state import NO_LEADER
from reference.releases.profiles import Profile

#: A decoded metadata record (see the module docstring).
Record = Mapping[str, Any]
PartitionKey = tuple[str, int]

NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
MIN_ISR = "min.insync.replicas"
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
#: Record types a partition change rule looks at.
PARTITION_CHANGE = "PARTITION_CHANGE_RECORD"
PARTITION = "PARTITION_RECORD"
CLEAR_ELR = "CLEAR_ELR_RECORD"


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The controller's view of one broker (RegisterBrokerRecord and its changes)."""

    id: int
    registered: bool = False
    epoch: int = -1
    incarnation_id: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    #: Incarnations registered so far (1: the first start).
    incarnations: int = 0
    #: The current incarnation registered after an unclean shutdown (KIP-966 'Detection of
    #: an unclean shutdown'). The RegisterBrokerRecord does not carry PreviousBrokerEpoch:
    #: this is derived from the partition changes of the registration (removal from an
    #: ELR) or given by the context; None when the log does not show it.
    unclean_shutdown: bool | None = None
    #: Offset of the RegisterBrokerRecord of the current incarnation.
    registered_at: int = -1
    #: KIP-858: the broker's online log directories (RegisterBrokerRecord ``logDirs``, a
    #: BrokerRegistrationChangeRecord's when not empty), sorted; empty: none known (every
    #: directory online, DirectoryId.isOnline).
    log_dirs: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """ClusterControlManager.isActive: registered, unfenced, not in controlled shutdown."""
        return self.registered and not self.fenced and not self.in_controlled_shutdown


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """The controller's view of one partition (PartitionRecord fields of KIP-966)."""

    topic_id: str
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader_recovery_state: int = RECOVERED
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    #: Derived, not in any record: the KIP's LastKnownLeader, "the last ISR member (the
    #: leader) when it is fenced", cleaned "when a new leader is elected" (seeds/003
    #: 'Other behaviors' 7).
    last_known_leader: int = NO_LEADER
    #: KIP-858: the directory of each replica, in ``replicas`` order (PartitionRecord /
    #: PartitionChangeRecord ``directories``; a change without it keeps them).
    directories: tuple[str, ...] = ()
    #: Derived, not in any record: eligible.leader.replicas.version when this registration
    #: was last written. KIP-966 'Compatibility': after ELR is enabled "in the next
    #: partition update, the controller will record the current ELR", so a partition
    #: written under ELR off keeps that shape (a fenced last ISR member) until its next
    #: change (4.3.1 FeatureControlManager.updateFeatures writes no partition change).
    #: None: no FeatureLevelRecord of it had been replayed (the run's start decides).
    elr_level_at_change: int | None = None


@dataclass(frozen=True, slots=True)
class CommittedState:
    """Everything the controller knows after one record."""

    #: Offset of the last record applied (-1: before the first).
    offset: int
    #: The record ends its batch: this state is committed as a whole.
    end_of_batch: bool
    brokers: Mapping[int, BrokerRegistration]
    #: Topic id -> name.
    topics: Mapping[str, str]
    partitions: Mapping[PartitionKey, PartitionRegistration]
    #: Topic name -> config (ConfigRecord resourceType 2).
    topic_configs: Mapping[str, Mapping[str, str]]
    #: Cluster-level dynamic config (ConfigRecord resourceType 4, resourceName "").
    cluster_configs: Mapping[str, str]
    #: Finalized feature levels (metadata.version, eligible.leader.replicas.version, ...).
    features: Mapping[str, int]

    def topic_name(self, topic_id: str) -> str:
        return self.topics.get(topic_id, topic_id)

    def config(self, topic_id: str, key: str) -> str | None:
        """Topic config, else the cluster-level one (the controller's own static value
        and node-level overrides are not in the log: the context supplies the default)."""
        value = self.topic_configs.get(self.topic_name(topic_id), {}).get(key)
        return value if value is not None else self.cluster_configs.get(key)

    def min_isr(self, topic_id: str, default: int) -> int:
        """Effective min ISR = min(min.insync.replicas, replication factor) (seeds/003 HWM
        section); the replication factor is partition 0's, as getTopicEffectiveMinIsr."""
        value = self.config(topic_id, MIN_ISR)
        configured = int(value) if value is not None else default
        part = self.partitions.get((topic_id, 0))
        return configured if part is None else min(configured, len(part.replicas))

    def unclean_leader_election(self, topic_id: str, default: bool) -> bool:
        value = self.config(topic_id, UNCLEAN_LEADER_ELECTION)
        return default if value is None else value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class TraceContext:
    """What the trace cannot show."""

    #: Profile name (reference.releases.profiles) or a Profile (e.g. kip966 with cited deviations).
    profile: str | Profile = "kip966"
    #: The controller's static min.insync.replicas (server.properties), used when neither
    #: the topic nor the cluster level sets it.
    min_isr_default: int = 1
    #: The controller's static unclean.leader.election.enable.
    unclean_leader_election_default: bool = False
    #: Broker ids of the cluster (known before they register).
    brokers: tuple[int, ...] = ()
    #: An ElectLeaders UNCLEAN request was made during the run.
    unclean_election_requested: bool = False
    #: ELR on/off; None: the profile decides, else eligible.leader.replicas.version >= 1.
    elr_enabled: bool | None = None
    #: The run changed eligible.leader.replicas.version live (a ``feature`` step): from the
    #: first FeatureLevelRecord of it in the log, its level decides (rules.step.elr_on).
    elr_follows_level: bool = False
    #: (broker id, incarnation number) known to register after an unclean shutdown
    #: (e.g. the harness killed the broker): incarnation 2 is the first restart.
    unclean_registrations: frozenset[tuple[int, int]] = frozenset()
    #: (KRaft leader epoch, profile) of the epochs whose leader ran another build than
    #: ``profile``'s (a rolling upgrade): each record is the decision of the controller
    #: that led its batch's epoch, so it is judged under that build's rules (issue 43,
    #: "each decision is judged by the rules of the build that made it"); a record of an
    #: epoch not listed under ``profile``. Empty: ``profile`` throughout (a KIP, a pin).
    writer_profiles: tuple[tuple[int, str | Profile], ...] = ()


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: which, where, and the states around it."""

    rule: str
    citation: str
    offset: int | None
    record: Record | None
    #: (topic name, partition id) or None.
    partition: tuple[str, int] | None
    broker: int | None
    detail: str
    before: CommittedState | None
    after: CommittedState | None

    def __str__(self) -> str:
        where = (f" {self.partition[0]}-{self.partition[1]}" if self.partition
                 else f" broker {self.broker}" if self.broker is not None else "")
        return f"{self.rule} at offset {self.offset}{where}: {self.detail}"


@dataclass(frozen=True, slots=True)
class TraceResult:
    states: list[CommittedState]
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def ids(value: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in value or ())


def partition_key(rec: Record) -> PartitionKey:
    d = data(rec)
    return str(d.get("topicId")), int(d.get("partitionId", -1))


def initial_state(ctx: TraceContext) -> CommittedState:
    return CommittedState(offset=-1, end_of_batch=True,
                          brokers={b: BrokerRegistration(b) for b in ctx.brokers},
                          topics={}, partitions={}, topic_configs={}, cluster_configs={},
                          features={})


def merge(p: PartitionRegistration, d: Mapping[str, Any]) -> PartitionRegistration:
    """PartitionRegistration.merge(PartitionChangeRecord)."""

    def get(name: str, old: tuple[int, ...]) -> tuple[int, ...]:
        return old if d.get(name) is None else ids(d[name])

    leader_field = d.get("leader")
    leader_field = NO_LEADER_CHANGE if leader_field is None else int(leader_field)
    leader, epoch = ((p.leader, p.leader_epoch) if leader_field == NO_LEADER_CHANGE
                     else (leader_field, p.leader_epoch + 1))
    lrs = d.get("leaderRecoveryState")
    isr = get("isr", p.isr)
    if leader >= 0 and leader != p.leader:
        last_known_leader = NO_LEADER
    elif leader == NO_LEADER and p.leader >= 0 and not isr:
        last_known_leader = p.leader
    else:
        last_known_leader = p.last_known_leader
    return PartitionRegistration(
        topic_id=p.topic_id, partition_id=p.partition_id, replicas=get("replicas", p.replicas),
        isr=isr, leader=leader, leader_epoch=epoch, partition_epoch=p.partition_epoch + 1,
        elr=get("eligibleLeaderReplicas", p.elr), last_known_elr=get("lastKnownElr",
                                                                      p.last_known_elr),
        leader_recovery_state=(p.leader_recovery_state if lrs is None or int(lrs) == -1
                               else int(lrs)),
        adding_replicas=get("addingReplicas", p.adding_replicas),
        removing_replicas=get("removingReplicas", p.removing_replicas),
        last_known_leader=last_known_leader,
        directories=(p.directories if d.get("directories") is None
                     else tuple(str(x) for x in d["directories"])))


def new_partition(d: Mapping[str, Any], old: PartitionRegistration | None
                  ) -> PartitionRegistration:
    """PartitionRegistration(PartitionRecord): the full state."""
    key_topic, key_part = str(d.get("topicId")), int(d.get("partitionId", -1))
    return PartitionRegistration(
        topic_id=key_topic, partition_id=key_part, replicas=ids(d.get("replicas")),
        isr=ids(d.get("isr")), leader=int(d.get("leader", NO_LEADER)),
        leader_epoch=int(d.get("leaderEpoch", -1)),
        partition_epoch=int(d.get("partitionEpoch", -1)),
        elr=ids(d.get("eligibleLeaderReplicas")), last_known_elr=ids(d.get("lastKnownElr")),
        leader_recovery_state=int(d.get("leaderRecoveryState") or RECOVERED),
        adding_replicas=ids(d.get("addingReplicas")),
        removing_replicas=ids(d.get("removingReplicas")),
        last_known_leader=NO_LEADER if old is None else old.last_known_leader,
        directories=tuple(str(x) for x in d.get("directories") or ()))


BROKER_RECORDS = frozenset({"REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
                            "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
                            "UNREGISTER_BROKER_RECORD"})


def data(rec: Record) -> Mapping[str, Any]:
    """The record's payload ("data")."""
    value = rec.get("data")
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def batch_of(rec: Record) -> object:
    """The batch a record belongs to: a snapshot is one (a state, not transitions); else
    the decoder's batch base offset when it gives one, else its append time (the records of
    a KRaft batch share their batch's timestamp; two batches sharing a millisecond merge,
    which skips a state, never adds one), else the record alone."""
    if rec.get("source") == "snapshot":
        return ("snapshot",)
    for key in ("batch_base_offset", "base_offset", "baseOffset", "batch"):
        if rec.get(key) is not None:
            return ("batch", rec[key])
    if rec.get("append_time_ms") is not None:
        return ("time", rec["append_time_ms"])
    return ("offset", rec.get("offset"))


def broker_of(rec: Record) -> int | None:
    """The broker a broker record is about (FenceBrokerRecord / UnfenceBrokerRecord name it
    "id", the others "brokerId"); None for other records."""
    if rec.get("type") not in BROKER_RECORDS:
        return None
    d = data(rec)
    b = d.get("brokerId", d.get("id"))
    return None if b is None else int(b)
