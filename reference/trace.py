"""Trace validation: replay the controller's committed metadata records and judge
every committed state and every partition change against KIP-966 under a profile.

The controller's ``__cluster_metadata`` log is the exact ordered list of committed
states (DESIGN.md 'Trace validation'). Records are dicts shaped like Kafka's
DumpLogSegments ``--cluster-metadata-decoder`` payload, with Kafka's JSON schema field
names (metadata/src/main/resources/common/metadata/*.json)::

    {"offset": 17, "append_time_ms": ..., "type": "PARTITION_CHANGE_RECORD",
     "version": 2, "data": {"topicId": ..., "partitionId": 0, "leader": 2, ...}}

Replay follows Kafka's own (PartitionRegistration.merge, ClusterControlManager.replay):
in a PartitionChangeRecord an absent field means "unchanged" (leader -2, isr / ELR /
LastKnownELR null, leaderRecoveryState -1); every change bumps the partition epoch; the
leader epoch is bumped whenever the record carries a leader, including the same leader
(PartitionChangeBuilder sets it to force a bump when a replica is removed, and on an ISR
shrink before metadata.version 3.6-IV0). A ClearElrRecord empties ELR and LastKnownELR
and bumps the partition epoch of each partition that had any.

A batch commits atomically (one controller operation writes its partition changes and
its broker record together), so the per-state invariants are judged at batch ends only;
the per-change rules are judged record by record, knowing the operation around them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import trace_rules
from .profiles import Profile
from .releases import get_profile
from .state import evolve
from .trace_rules import batch_of, broker_of, data, elr_on

#: A decoded metadata record (see the module docstring).
Record = Mapping[str, Any]
PartitionKey = tuple[str, int]

NO_LEADER = -1
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

    #: Profile name (reference.profiles) or a Profile (e.g. kip966 with cited deviations).
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
    #: (broker id, incarnation number) known to register after an unclean shutdown
    #: (e.g. the harness killed the broker): incarnation 2 is the first restart.
    unclean_registrations: frozenset[tuple[int, int]] = frozenset()


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
        last_known_leader=last_known_leader)


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
        last_known_leader=NO_LEADER if old is None else old.last_known_leader)


@dataclass(slots=True)
class _Replay:
    """Applies records one by one, copying only the mapping a record changes."""

    ctx: TraceContext
    profile: Profile
    state: CommittedState
    issues: list[tuple[int, str, int | None]] = field(default_factory=list)
    #: Partition changes since the last other record of the batch: (before, after).
    run: list[tuple[PartitionRegistration, PartitionRegistration]] = field(default_factory=list)

    def issue(self, index: int, detail: str, broker: int | None = None) -> None:
        self.issues.append((index, detail, broker))

    def apply(self, index: int, rec: Record, end_of_batch: bool, same_batch: bool) -> None:
        s = self.state
        kind, d = rec.get("type"), data(rec)
        if not same_batch:
            self.run = []
        changes: dict[str, Any] = {"offset": int(rec.get("offset", index)),
                                   "end_of_batch": end_of_batch}
        if kind == PARTITION_CHANGE:
            key = partition_key(rec)
            p = s.partitions.get(key)
            if p is None:
                self.issue(index, f"partition change for unknown partition {key}")
            else:
                q = merge(p, d)
                changes["partitions"] = {**s.partitions, key: q}
                self.run.append((p, q))
        else:
            self._apply_other(index, rec, kind, d, changes)
            self.run = []
        self.state = evolve(s, **changes)

    def _apply_other(self, index: int, rec: Record, kind: object, d: Mapping[str, Any],
                     changes: dict[str, Any]) -> None:
        s = self.state
        if kind == PARTITION:
            key = partition_key(rec)
            if key[0] not in s.topics:
                self.issue(index, f"partition record for unknown topic {key[0]}")
            changes["partitions"] = {**s.partitions, key: new_partition(d, s.partitions.get(key))}
        elif kind == "TOPIC_RECORD":
            changes["topics"] = {**s.topics, str(d.get("topicId")): str(d.get("name"))}
        elif kind == "REMOVE_TOPIC_RECORD":
            tid = str(d.get("topicId"))
            changes["topics"] = {k: v for k, v in s.topics.items() if k != tid}
            changes["partitions"] = {k: v for k, v in s.partitions.items() if k[0] != tid}
            changes["topic_configs"] = {k: v for k, v in s.topic_configs.items()
                                        if k != s.topics.get(tid)}
        elif kind == CLEAR_ELR:
            name = str(d.get("topicName") or "")
            cleared = next((t for t, n in s.topics.items() if n == name), None)
            if name and cleared is None:
                self.issue(index, f"ClearElrRecord for unknown topic {name!r}")
            changes["partitions"] = {
                k: (evolve(p, elr=(), last_known_elr=(), partition_epoch=p.partition_epoch + 1)
                    if (not name or k[0] == cleared) and (p.elr or p.last_known_elr) else p)
                for k, p in s.partitions.items()}
        elif kind == "CONFIG_RECORD":
            self._config(d, changes)
        elif kind == "FEATURE_LEVEL_RECORD":
            changes["features"] = {**s.features,
                                   str(d.get("name")): int(d.get("featureLevel", 0))}
        else:
            self._broker(index, rec, kind, d, changes)

    def _config(self, d: Mapping[str, Any], changes: dict[str, Any]) -> None:
        s = self.state
        rtype, name = int(d.get("resourceType", -1)), str(d.get("resourceName") or "")
        key, value = str(d.get("name")), d.get("value")

        def put(old: Mapping[str, str]) -> dict[str, str]:
            new = {k: v for k, v in old.items() if k != key}
            if value is not None:
                new[key] = str(value)
            return new

        if rtype == TOPIC_RESOURCE:
            changes["topic_configs"] = {**s.topic_configs, name: put(s.topic_configs.get(name, {}))}
        elif rtype == BROKER_RESOURCE and name == "":
            changes["cluster_configs"] = put(s.cluster_configs)

    def _broker(self, index: int, rec: Record, kind: object, d: Mapping[str, Any],
                changes: dict[str, Any]) -> None:
        s = self.state
        b = broker_of(rec)
        if b is None:
            return
        old = s.brokers.get(b, BrokerRegistration(b))
        epoch = int(d.get("brokerEpoch", d.get("epoch", -1)))
        new: BrokerRegistration | None = None
        if kind == "REGISTER_BROKER_RECORD":
            new = self._register(int(changes["offset"]), old, epoch, d)
        elif kind in ("BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD",
                      "UNFENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD"):
            if not old.registered or old.epoch != epoch:
                self.issue(index, f"{kind} for broker {b} epoch {epoch}, registered: "
                           f"{old.registered} epoch {old.epoch}", b)
                return
            if kind == "UNREGISTER_BROKER_RECORD":
                new = evolve(old, registered=False, fenced=True)
            elif kind == "FENCE_BROKER_RECORD":
                new = evolve(old, fenced=True)
            elif kind == "UNFENCE_BROKER_RECORD":
                new = evolve(old, fenced=False)
            else:
                fenced = int(d.get("fenced") or 0)
                shutdown = int(d.get("inControlledShutdown") or 0)
                new = evolve(old, fenced=old.fenced if fenced == 0 else fenced == 1,
                             in_controlled_shutdown=old.in_controlled_shutdown or shutdown == 1)
        if new is not None:
            changes["brokers"] = {**s.brokers, b: new}

    def _register(self, offset: int, old: BrokerRegistration, epoch: int,
                  d: Mapping[str, Any]) -> BrokerRegistration:
        incarnation = d.get("incarnationId")
        incarnation = None if incarnation is None else str(incarnation)
        fenced = d.get("fenced")
        base = evolve(old, registered=True, epoch=epoch, incarnation_id=incarnation,
                      fenced=True if fenced is None else bool(fenced),
                      in_controlled_shutdown=bool(d.get("inControlledShutdown") or False))
        if old.registered and incarnation is not None and incarnation == old.incarnation_id:
            return base  # "Amending registration": same incarnation, same epoch
        n = old.incarnations + 1
        return evolve(base, incarnations=n, registered_at=offset,
                      unclean_shutdown=self._unclean(old.id, n))

    def _unclean(self, b: int, incarnation: int) -> bool | None:
        """Was this registration after an unclean shutdown? The controller removes such a
        broker from every ISR and ELR in the same batch, before the RegisterBrokerRecord
        (ClusterControlManager.registerBroker -> handleBrokerShutdown(id, isClean)); a clean
        one is only removed from ISRs (as if fenced) and keeps its ELR places."""
        if (b, incarnation) in self.ctx.unclean_registrations:
            return True
        if incarnation == 1 or not elr_on(self.state, self.profile, self.ctx):
            return None
        unclean = clean = False
        for p, q in reversed(self.run):
            if b not in p.isr and b not in p.elr or b in q.isr:
                break
            if b in p.elr and b not in q.elr:
                unclean = True
            elif b in p.isr and len(q.isr) < self.state.min_isr(p.topic_id,
                                                                self.ctx.min_isr_default):
                clean, unclean = clean or b in q.elr, unclean or b not in q.elr
        if not unclean and not clean and any(b in p.elr for p in self.state.partitions.values()):
            clean = True
        return True if unclean else False if clean else None


def profile_of(ctx: TraceContext) -> Profile:
    return ctx.profile if isinstance(ctx.profile, Profile) else get_profile(ctx.profile)


def _replay(records: Sequence[Record], ctx: TraceContext
            ) -> tuple[list[CommittedState], list[tuple[int, str, int | None]]]:
    r = _Replay(ctx, profile_of(ctx), initial_state(ctx))
    batches = [batch_of(rec) for rec in records]
    states: list[CommittedState] = []
    for i, rec in enumerate(records):
        end = i + 1 == len(records) or batches[i + 1] != batches[i]
        r.apply(i, rec, end, i > 0 and batches[i - 1] == batches[i])
        states.append(r.state)
    return states, r.issues


def replay(records: Sequence[Record], ctx: TraceContext) -> list[CommittedState]:
    """The committed state after each record (one per record, in order)."""
    return _replay(records, ctx)[0]


def validate(records: Sequence[Record], ctx: TraceContext) -> TraceResult:
    """Replay ``records`` and judge them under ``ctx.profile``: per-change rules record by
    record, per-state invariants at each batch end (trace_rules.RULES lists them). Records
    with ``"source": "snapshot"`` (harness.client.metadata_records) are a starting state: judged
    as one state, not as transitions."""
    profile = profile_of(ctx)
    states, issues = _replay(records, ctx)
    start = initial_state(ctx)
    out: list[tuple[int, Violation]] = []

    def before(i: int) -> CommittedState:
        return states[i - 1] if i > 0 else start

    def add(i: int, findings: Iterable[trace_rules.Finding], first: int | None = None) -> None:
        pre = before(i if first is None else first)
        for f in findings:
            out.append((i, Violation(
                rule=f.rule, citation=trace_rules.RULES[f.rule].citation,
                offset=int(records[i].get("offset", i)), record=records[i],
                partition=(None if f.partition is None
                           else (states[i].topic_name(f.partition[0]), f.partition[1])),
                broker=f.broker, detail=f.detail, before=pre, after=states[i])))

    for i, detail, broker in issues:
        add(i, [trace_rules.Finding("ReplayConsistency", detail, None, broker)])
    ops = trace_rules.operations(records, states, start)
    #: State invariants failing now: reported when they start to fail, not at every batch.
    failing: set[tuple[str, PartitionKey | None, int | None, str]] = set()
    batch_start = 0
    for i in range(len(records)):
        step = trace_rules.Step(records, i, before(i), states[i], ops[i], profile, ctx,
                                elr_on(before(i), profile, ctx))
        if records[i].get("source") != "snapshot":
            add(i, trace_rules.check_change(step))
        if states[i].end_of_batch:
            checked, found = trace_rules.check_batch(records, batch_start, i, before(batch_start),
                                                     states[i], profile, ctx)
            now = {(f.rule, f.partition, f.broker, f.detail) for f in found
                   if f.rule in trace_rules.PERSISTENT}
            add(i, [f for f in found if (f.rule, f.partition, f.broker, f.detail) not in failing],
                first=batch_start)
            failing = {x for x in failing if x[1] not in checked} | now
            batch_start = i + 1
    out.sort(key=lambda iv: iv[0])   # record order (snapshot offsets restart at 0)
    return TraceResult(states, [v for _, v in out])


def _payload(rec: Record) -> tuple[object, object, object]:
    return rec.get("type"), rec.get("version"), rec.get("data")


def common_prefix_agrees(logs: Sequence[Sequence[Record]]) -> Violation | None:
    """Several controllers' logs agree record for record (by offset) on their common
    prefix: of any two, the shorter is a prefix of the longer (TLA+
    MetadataLogMatchingProperty). Compare only majority-committed prefixes: an
    uncommitted suffix on a deposed leader may be truncated and differ."""
    maps = [{int(r.get("offset", i)): r for i, r in enumerate(log)} for log in logs]
    for a in range(len(maps)):
        for b in range(a + 1, len(maps)):
            short, long_ = (a, b) if max(maps[a], default=-1) <= max(maps[b], default=-1) \
                else (b, a)
            for off in sorted(maps[short]):
                mine, theirs = maps[short][off], maps[long_].get(off)
                if theirs is None or _payload(theirs) != _payload(mine):
                    what = "is missing" if theirs is None else f"holds {_payload(theirs)!r}"
                    return Violation(
                        rule="MetadataLogMatching",
                        citation=trace_rules.RULES["MetadataLogMatching"].citation,
                        offset=off, record=mine, partition=None, broker=None,
                        detail=(f"log {short} holds {_payload(mine)!r} at offset {off}; "
                                f"log {long_} {what}"),
                        before=None, after=None)
    return None


def _log_entries(log: Sequence[Record]) -> dict[int, Record]:
    """A controller's log records by offset (snapshot records, numbered within their
    snapshot, are left out: they are not log offsets)."""
    return {int(r.get("offset", i)): r for i, r in enumerate(log)
            if r.get("source") != "snapshot"}


def _epoch(rec: Record) -> int:
    v = rec.get("leader_epoch")
    return -1 if v is None else int(v)


def committed_prefix_agrees(logs: Sequence[Sequence[Record]], voters: int | None = None
                            ) -> Violation | None:
    """The controllers' metadata logs agree on their committed prefix (Raft Log Matching
    and State Machine Safety; TLA+ MetadataLogMatchingProperty), allowing what a run may
    leave behind legitimately: a controller that fell behind (killed, cut off) and a deposed
    leader's uncommitted suffix, which it would truncate once it rejoined.

    1. Log Matching: two logs that hold records at the same offset written in the same
       leader epoch hold the same record there and at every earlier offset both hold.
    2. The committed prefix is the longest prefix a majority of the ``voters`` (default:
       one log per voter) hold record for record. A log that disagrees with it at some
       offset must be stale: it never followed a leader as new as the newest epoch in that
       prefix (a leader of that epoch or later holds the whole committed prefix, Raft's
       Leader Completeness, so its followers truncate what differs)."""
    maps = [_log_entries(log) for log in logs]
    n = voters if voters is not None else len(maps)
    for a in range(len(maps)):
        for b in range(a + 1, len(maps)):
            common = sorted(set(maps[a]) & set(maps[b]))
            same_epoch = [o for o in common if _epoch(maps[a][o]) == _epoch(maps[b][o])]
            if not same_epoch:
                continue
            top = same_epoch[-1]
            for off in common:
                if off > top:
                    break
                if _payload(maps[a][off]) != _payload(maps[b][off]):
                    return _mismatch(maps[a][off], off, a, b, maps[b][off],
                                     f"logs {a} and {b} hold records of leader epoch "
                                     f"{_epoch(maps[a][top])} at offset {top} but differ "
                                     "before it (Log Matching)")
    # 2. the majority-held prefix
    prefix: list[Record] = []
    off = min((min(m) for m in maps if m), default=0)
    while True:
        held: list[tuple[tuple[object, object, object], list[int]]] = []
        for i, m in enumerate(maps):
            if off in m:
                p = _payload(m[off])
                group = next((g for q, g in held if q == p), None)
                if group is None:
                    held.append((p, [i]))
                else:
                    group.append(i)
        best = max((g for _, g in held), key=len, default=[])
        if len(best) * 2 <= n:
            break
        prefix.append(maps[best[0]][off])
        off += 1
    if not prefix:
        return None
    newest = max(_epoch(r) for r in prefix)
    for i, m in enumerate(maps):
        mine = max((_epoch(r) for r in m.values()), default=-1)
        for rec in prefix:
            o = int(rec.get("offset", 0))
            theirs = m.get(o)
            if theirs is None or _payload(theirs) == _payload(rec):
                continue
            if mine < newest:
                break  # stale: behind the committed prefix's newest leader
            return _mismatch(theirs, o, i, None, rec,
                             f"log {i} followed leader epoch {mine} >= {newest}, the newest "
                             f"in the committed prefix, yet holds {_payload(theirs)!r} at "
                             f"committed offset {o}, where a majority holds "
                             f"{_payload(rec)!r}")
    return None


def _mismatch(mine: Record, off: int, a: int, b: int | None, theirs: Record,
              detail: str) -> Violation:
    return Violation(rule="MetadataLogMatching",
                     citation=trace_rules.RULES["MetadataLogMatching"].citation,
                     offset=off, record=mine, partition=None, broker=None, detail=detail,
                     before=None, after=None)
