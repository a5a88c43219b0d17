"""What a trace rule judges and what it reports: the Step (one record, the committed states
around it, the controller operation it belongs to), the Finding, whether ELR is on, and
the attribution of each record to its controller operation.

A controller operation writes its records in one batch, and computes them all from the
state before the batch, so a broker being fenced, shut down or re-registered by the
operation is not an acceptable leader for its partition changes even though its own
broker record comes last (ReplicationControlManager.generateLeaderAndIsrUpdates:
brokerToRemove, brokerWithUncleanShutdown). KIP-966 'Controller behaviors' 2-4 (fencing,
unfencing and registration trigger the ELR update) name the operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reference.releases.profiles import Profile
from reference.trace.records import (
    CommittedState,
    PartitionKey,
    Record,
    TraceContext,
    batch_of,
    broker_of,
    data,
)


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    detail: str
    partition: PartitionKey | None = None
    broker: int | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """The controller operation a record belongs to. kind: "fence", "shutdown"
    (controlled shutdown), "registration", "unregistration", "unfence" or "other"
    (AlterPartition, ElectLeaders, reassignment, periodic elections)."""

    kind: str = "other"
    broker: int | None = None
    #: For a registration: after an unclean shutdown (True), clean (False), unknown.
    unclean: bool | None = None

    @property
    def removed(self) -> int | None:
        """brokerToRemove / brokerWithUncleanShutdown: not an acceptable leader."""
        return self.broker if self.kind in ("fence", "shutdown", "registration",
                                            "unregistration") else None


@dataclass(frozen=True, slots=True)
class Step:
    records: Sequence[Record]
    index: int
    before: CommittedState
    after: CommittedState
    op: Operation
    profile: Profile
    ctx: TraceContext
    elr_on: bool

    @property
    def record(self) -> Record:
        return self.records[self.index]


def elr_on(state: CommittedState, profile: Profile, ctx: TraceContext) -> bool:
    """ELR is on: the context says so, else the profile, else the feature level
    (eligible.leader.replicas.version >= 1, 4.0+). In a run that changed the feature live,
    the level in the log decides from its first FeatureLevelRecord on: the controller asks
    FeatureControlManager.isElrFeatureEnabled() at every partition change (apache/kafka
    4.3.1 ReplicationControlManager; reference/model/features.py)."""
    level = state.features.get("eligible.leader.replicas.version")
    if ctx.elr_follows_level and level is not None:
        return level >= 1
    if ctx.elr_enabled is not None:
        return ctx.elr_enabled
    if profile.elr is not None:
        return profile.elr
    return state.features.get("eligible.leader.replicas.version", 0) >= 1


def _key(rec: Record) -> PartitionKey:
    d = data(rec)
    return str(d.get("topicId")), int(d.get("partitionId", -1))


def _new_incarnation(before: CommittedState, after: CommittedState, b: int) -> bool:
    old = before.brokers.get(b)
    return after.brokers[b].incarnations > (0 if old is None else old.incarnations)


def operations(records: Sequence[Record], states: Sequence[CommittedState],
               start: CommittedState) -> list[Operation]:
    """Attribute each partition change to the broker operation around it: the partition
    changes right before a fence / registration / unregistration record of broker b for
    partitions whose ISR or ELR held b, and those right after an unfence (elections of
    leaderless partitions) or a controlled-shutdown change of b (ISRs holding b)."""
    n = len(records)
    ops = [Operation()] * n
    batches = [batch_of(r) for r in records]

    def pcr(j: int, i: int) -> bool:
        return 0 <= j < n and batches[j] == batches[i] and records[j].get("type") == \
            "PARTITION_CHANGE_RECORD"

    def holds(j: int, b: int) -> bool:
        """The change is for a partition whose ISR or ELR held b: the operation's own
        (partitionsWithBrokerInIsr / partitionsWithBrokerInElr). With ELR off the last ISR
        member stays in the ISR and only loses the leadership."""
        p = (states[j - 1] if j > 0 else start).partitions.get(_key(records[j]))
        return p is not None and (b in p.isr or b in p.elr)

    for i, rec in enumerate(records):
        kind, b, d = rec.get("type"), broker_of(rec), data(rec)
        if b is None:
            continue
        fenced = int(d.get("fenced") or 0) if kind == "BROKER_REGISTRATION_CHANGE_RECORD" else 0
        back: Operation | None = None
        if kind == "FENCE_BROKER_RECORD" or fenced == 1:
            back = Operation("fence", b)
        elif kind == "UNREGISTER_BROKER_RECORD":
            back = Operation("unregistration", b)
        elif kind == "REGISTER_BROKER_RECORD" and _new_incarnation(
                states[i - 1] if i > 0 else start, states[i], b):
            back = Operation("registration", b, states[i].brokers[b].unclean_shutdown)
        if back is not None:
            j = i - 1
            while pcr(j, i) and holds(j, b):
                ops[j], j = back, j - 1
        elif kind == "UNFENCE_BROKER_RECORD" or fenced == -1:
            j = i + 1
            while pcr(j, i) and states[j - 1].partitions.get(_key(records[j]), None) \
                    is not None and states[j - 1].partitions[_key(records[j])].leader < 0:
                ops[j], j = Operation("unfence", b), j + 1
        if kind == "BROKER_REGISTRATION_CHANGE_RECORD" and int(
                d.get("inControlledShutdown") or 0) == 1:
            j = i + 1
            while pcr(j, i) and holds(j, b):
                ops[j], j = Operation("shutdown", b), j + 1
    return ops


def _why(s: Step, b: int) -> str:
    reg = s.before.brokers.get(b)
    if b == s.op.removed:
        return f"broker {b} is being removed by this batch's {s.op.kind}"
    if reg is None or not reg.registered:
        return f"broker {b} is not registered"
    return f"broker {b} is {'fenced' if reg.fenced else 'in controlled shutdown'}"


def _ids(xs: Iterable[int]) -> str:
    return "[" + ", ".join(str(x) for x in sorted(xs)) + "]"
