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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reference.model.state import evolve
from reference.releases.catalog import get_profile
from reference.releases.profiles import Profile
from reference.trace import rules as trace_rules
from reference.trace.records import (
    BROKER_RESOURCE,
    CLEAR_ELR,
    PARTITION,
    PARTITION_CHANGE,
    TOPIC_RESOURCE,
    BrokerRegistration,
    CommittedState,
    PartitionKey,
    PartitionRegistration,
    Record,
    TraceContext,
    TraceResult,
    Violation,
    batch_of,
    broker_of,
    data,
    initial_state,
    merge,
    new_partition,
    partition_key,
)
from reference.trace.rules import elr_on


@dataclass(slots=True)
class _Replay:
    """Applies records one by one, copying only the mapping a record changes."""

    ctx: TraceContext
    profile: Profile
    state: CommittedState
    issues: list[tuple[int, str, int | None]] = field(default_factory=list)
    #: Partition changes since the last other record of the batch: (before, after).
    run: list[tuple[PartitionRegistration, PartitionRegistration]] = field(default_factory=list)
    #: Brokers first registered by a snapshot's record: a snapshot holds only the current
    #: registration of each broker (ClusterImage.write: one RegisterBrokerRecord per
    #: BrokerRegistration, apache/kafka 3.9 metadata/.../image/ClusterImage.java), so their
    #: incarnations are counted from an unknown base and the context's
    #: ``unclean_registrations`` (numbered from the broker's first start) cannot be matched.
    from_snapshot: set[int] = field(default_factory=set)

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
                q = replace(merge(p, d), elr_level_at_change=self._elr_level())
                changes["partitions"] = {**s.partitions, key: q}
                self.run.append((p, q))
        else:
            self._apply_other(index, rec, kind, d, changes)
            self.run = []
        self.state = evolve(s, **changes)

    def _elr_level(self) -> int | None:
        return self.state.features.get("eligible.leader.replicas.version")

    def _apply_other(self, index: int, rec: Record, kind: object, d: Mapping[str, Any],
                     changes: dict[str, Any]) -> None:
        s = self.state
        if kind == PARTITION:
            key = partition_key(rec)
            if key[0] not in s.topics:
                self.issue(index, f"partition record for unknown topic {key[0]}")
            q = replace(new_partition(d, s.partitions.get(key)),
                        elr_level_at_change=self._elr_level())
            changes["partitions"] = {**s.partitions, key: q}
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
            if rec.get("source") == "snapshot" and not old.registered:
                self.from_snapshot.add(b)
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
                             in_controlled_shutdown=old.in_controlled_shutdown or shutdown == 1,
                             log_dirs=_log_dirs(d) or old.log_dirs)
        if new is not None:
            changes["brokers"] = {**s.brokers, b: new}

    def _register(self, offset: int, old: BrokerRegistration, epoch: int,
                  d: Mapping[str, Any]) -> BrokerRegistration:
        incarnation = d.get("incarnationId")
        incarnation = None if incarnation is None else str(incarnation)
        fenced = d.get("fenced")
        base = evolve(old, registered=True, epoch=epoch, incarnation_id=incarnation,
                      fenced=True if fenced is None else bool(fenced),
                      in_controlled_shutdown=bool(d.get("inControlledShutdown") or False),
                      log_dirs=_log_dirs(d))
        if old.registered and incarnation is not None and incarnation == old.incarnation_id:
            return base  # "Amending registration": same incarnation, same epoch
        n = old.incarnations + 1
        return evolve(base, incarnations=n, registered_at=offset,
                      unclean_shutdown=self._unclean(old.id, n))

    def _unclean(self, b: int, incarnation: int) -> bool | None:
        """Was this registration after an unclean shutdown? The controller removes such a
        broker from every ISR and ELR in the same batch, before the RegisterBrokerRecord
        (ClusterControlManager.registerBroker -> handleBrokerShutdown(id, isClean)); a clean
        one is only removed from ISRs (as if fenced) and keeps its ELR places. A broker
        whose count started in a snapshot (``from_snapshot``) is judged by these changes
        alone."""
        if b not in self.from_snapshot and (b, incarnation) in self.ctx.unclean_registrations:
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


def _log_dirs(d: Mapping[str, Any]) -> tuple[str, ...]:
    """A broker record's ``logDirs`` (KIP-858), sorted as ClusterControlManager keeps them."""
    return tuple(sorted(str(x) for x in d.get("logDirs") or ()))


def _as_profile(p: str | Profile) -> Profile:
    return p if isinstance(p, Profile) else get_profile(p)


def profile_of(ctx: TraceContext) -> Profile:
    return _as_profile(ctx.profile)


def writers(ctx: TraceContext) -> Callable[[Record], Profile]:
    """The profile each record is judged under: its writer's, the build of the controller
    that led the KRaft epoch of its batch (``TraceContext.writer_profiles``), else
    ``ctx.profile``."""
    default = profile_of(ctx)
    by_epoch = {int(e): _as_profile(p) for e, p in ctx.writer_profiles}
    if not by_epoch:
        return lambda rec: default

    def of(rec: Record) -> Profile:
        epoch = rec.get("leader_epoch")
        return default if epoch is None else by_epoch.get(int(epoch), default)
    return of


def _replay(records: Sequence[Record], ctx: TraceContext
            ) -> tuple[list[CommittedState], list[tuple[int, str, int | None]]]:
    r = _Replay(ctx, profile_of(ctx), initial_state(ctx))
    writer = writers(ctx)
    batches = [batch_of(rec) for rec in records]
    states: list[CommittedState] = []
    for i, rec in enumerate(records):
        end = i + 1 == len(records) or batches[i + 1] != batches[i]
        r.profile = writer(rec)
        r.apply(i, rec, end, i > 0 and batches[i - 1] == batches[i])
        states.append(r.state)
    return states, r.issues


def replay(records: Sequence[Record], ctx: TraceContext) -> list[CommittedState]:
    """The committed state after each record (one per record, in order)."""
    return _replay(records, ctx)[0]


def validate(records: Sequence[Record], ctx: TraceContext) -> TraceResult:
    """Replay ``records`` and judge each under its writer's profile (``writers``: the
    build of the controller that led its epoch, else ``ctx.profile``): per-change rules record by
    record, per-state invariants at each batch end (trace_rules.RULES lists them). Records
    with ``"source": "snapshot"`` (harness.client.metadata_records) are a starting state: judged
    as one state, not as transitions."""
    writer = writers(ctx)
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
        profile = writer(records[i])
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
