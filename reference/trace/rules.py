"""The rules trace validation judges a metadata log by (reference.trace.replay replays it).

Each rule has a name and a citation: the KIP-966 section (seeds/003), the TLA+
property or action of Vanlightly/kafka-tlaplus kip-966 (cited by name), or, for what
shipped Kafka does differently and a profile allows, research/kafka-facts.md and the
controller code (PartitionChangeBuilder, ReplicationControlManager,
ClusterControlManager in apache/kafka's metadata module).

Invariants hold in every committed state (judged at batch ends). Change rules judge one
record against the state before it, knowing the controller operation the record belongs
to: a controller operation writes its records in one batch, and computes them all from
the state before the batch, so a broker being fenced, shut down or re-registered by the
operation is not an acceptable leader for its partition changes even though its own
broker record comes last (ReplicationControlManager.generateLeaderAndIsrUpdates:
brokerToRemove, brokerWithUncleanShutdown).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from reference.model.state import NO_LEADER
from reference.releases.profiles import Profile
from reference.trace.records import (
    RECOVERED,
    RECOVERING,
    CommittedState,
    PartitionKey,
    PartitionRegistration,
    Record,
    TraceContext,
    batch_of,
    broker_of,
    data,
)

#: metadata.version feature levels (MetadataVersion): 3.2-IV0 adds leader recovery
#: (KIP-704); from 3.6-IV0 an ISR shrink no longer bumps the leader epoch (KAFKA-15021).
MV_LEADER_RECOVERY = 3
MV_NO_EPOCH_BUMP_ON_SHRINK = 12

TLA = "TLA+ kafka-tlaplus kip-966"
CODE = "apache/kafka metadata"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: Literal["invariant", "change"]
    citation: str


_RULES = (
    # --- invariants: every committed state -----------------------------------------
    Rule("LeaderInIsr", "invariant",
         "seeds/003 'Eligible Leader Replicas': the ISR 'functions as a candidate set for the "
         "leader'; unclean elections set ISR := [leader] (PartitionChangeBuilder.tryElection); "
         f"{TLA} MaybeUpdatePartitionOnBrokerChange adds an ELR winner to the ISR."),
    Rule("LeaderIsLive", "invariant",
         "seeds/003 'Delivery plan' elects unfenced members only; the controller's acceptable "
         "leader is registered, unfenced and not in controlled shutdown "
         f"(ClusterControlManager.isActive); {TLA} HandleBrokerFenced."),
    Rule("IsrElrWithinReplicas", "invariant",
         f"{TLA} ValidControllerIsrAndElr (ISR and ELR members must be replicas); seeds/003 "
         "'Other behaviors' 4 (the ELR only contains replicas in the final replica set) and 6 "
         "(LastKnownELR holds last-known ELR members)."),
    Rule("ElrIsrDisjoint", "invariant",
         "seeds/003 'ELR invariants': the member of ELR should not be in ISR; "
         f"{TLA} ValidControllerIsrAndElr."),
    Rule("ElrEmptyAtMinIsr", "invariant",
         "seeds/003 'ELR invariants': if ELR is not empty, the ISR is under min ISR (effective "
         f"min ISR = min(min.insync.replicas, replication factor)); {TLA} "
         "ValidControllerIsrAndElr."),
    Rule("FencedReplicaNotInIsr", "invariant",
         f"{TLA} ValidControllerState (a fenced broker cannot be in the ISR); seeds/003 'ISR "
         "invariants' (a fenced replica is removed from the ISR); with ELR off the ISR keeps "
         "its last member (seeds/003 motivation, T2)."),
    Rule("UncleanShutdownReplicaNotInElr", "invariant",
         "seeds/003 'ELR invariants': the controller will remove the ELR member if it "
         "registers with an unclean shutdown; 'Controller behaviors' 4 (removed from ISR and "
         f"ELR before persisting the registration record); {TLA} ProcessUncleanBroker."),
    Rule("EpochsNeverGoBack", "invariant",
         f"{TLA} ApplyPartitionChange (leader epoch and partition epoch only grow); "
         f"{CODE} PartitionRegistration.merge (partition epoch + 1 on every change)."),
    Rule("NoElrWhenDisabled", "invariant",
         "seeds/003 'Config changes' 1: ELR off, the controller records no ELR-related "
         "metadata; research/kafka-facts.md (ELR switch per release)."),
    Rule("IsrNotEmptyWhenElrDisabled", "invariant",
         "seeds/003 'Config changes' 1 (the ELR switch controls whether ISR can be empty) and "
         "motivation T2 ('prevent ISR drops to empty which keeps the last replica')."),
    Rule("LastKnownElrShape", "invariant",
         "kip966: seeds/003 'Other behaviors' 6.a (LastKnownELR cleaned when ISR reaches min "
         "ISR); shipped: research/kafka-facts.md (LastKnownELR holds ONE id, the last leader) "
         "and PartitionChangeBuilder.maybeUpdateLastKnownLeader (cleared while the partition "
         "has a leader)."),
    # --- change rules: one record against the state before it -----------------------
    Rule("IsrJoinOnlyLive", "change",
         "seeds/003 abstract (replicas re-added only once caught up) and 'Controller "
         "behaviors'; ReplicationControlManager.validateAlterPartitionData rejects fenced and "
         "shutting-down replicas (INELIGIBLE_REPLICA); topic creation puts only active "
         "replicas in the ISR."),
    Rule("ElrJoinOnlyFromIsrUnderMinIsr", "change",
         "seeds/003 'ELR update' 2.b (add current ISR - proposed ISR, only when the proposed "
         "ISR is smaller than min ISR) and 'ELR invariants' (unclean-shutdown members are "
         f"removed); {TLA} UpdateElr; PartitionChangeBuilder.maybePopulateTargetElr."),
    Rule("ElrMembersRetained", "change",
         "seeds/003 'ELR update' 2.a (retain the current members of the ELR) and 'ELR "
         "invariants' (ELR + ISR not dropped below min ISR unless an unclean shutdown); "
         "members leave by joining the ISR, by an unclean election, by clearing at min ISR, "
         "or by leaving the replica set."),
    Rule("NewLeaderIsLive", "change",
         "seeds/003 'Delivery plan' / 'Unclean recovery' (elect unfenced replicas); "
         "PartitionChangeBuilder.isValidNewLeader with ReplicationControlManager's acceptor "
         "(registered, unfenced, not in controlled shutdown, not the broker being removed)."),
    Rule("ElrElectionOnlyWithEmptyIsr", "change",
         "seeds/003 'Unclean recovery' order (ISR member first, then unfenced ELR member) and "
         "'Controller behaviors' 3 (ELR member elected when ISR is empty, added to ISR, "
         f"removed from ELR); {TLA} MaybeUpdatePartitionOnBrokerChange."),
    Rule("ElectionFollowsAssignmentOrder", "change",
         "research/kafka-facts.md election order (profiles with election_order=assignment): "
         "keep a valid leader (preferred election aside), else the first valid replica in "
         "assignment order, else the last known leader, else (unclean) the first live "
         "replica; PartitionChangeBuilder.electAnyLeader / electPreferredLeader."),
    Rule("UncleanElectionOnlyWhenAllowed", "change",
         "seeds/003 'Delivery plan' and 'Unclean recovery' (unclean election only when no ISR "
         "or unfenced ELR member, and only with unclean.leader.election.enable, an ElectLeaders "
         "UNCLEAN request, the LastKnownLeader / Balanced recovery of the KIP, or the "
         "shipped last-known-leader election: research/kafka-facts.md)."),
    Rule("UncleanElectionMarksRecovering", "change",
         "PartitionChangeBuilder.tryElection: an unclean election sets ISR := [leader] and "
         "leader recovery state RECOVERING (KIP-704) and clears the ELR "
         "(maybeUpdateRecordElr); research/kafka-facts.md."),
    Rule("LeaderlessOnlyWithoutCandidate", "change",
         "seeds/003 'Unclean recovery' order: if there are ISR members / unfenced ELR members, "
         f"choose one; {TLA} NoLeaderChange (leaderless only without a candidate)."),
    Rule("LeaderRecoveryStateChange", "change",
         "KIP-704 as PartitionChangeBuilder applies it: RECOVERING only by an unclean election; "
         "back to RECOVERED only by the leader's AlterPartition (leader unchanged)."),
    Rule("LastKnownElrUpdate", "change",
         "kip966: seeds/003 'Other behaviors' 6 (an ELR member with an unclean shutdown is "
         f"removed from ELR and added to LastKnownELR) and {TLA} ApplyPartitionChange "
         "(LastKnownELR grows only by members leaving the ELR); shipped: research/kafka-facts.md "
         "and PartitionChangeBuilder.maybeUpdateLastKnownLeader (the last leader, set when the "
         "partition becomes leaderless, cleared when it has a leader)."),
    Rule("LeaderEpochBump", "change",
         "seeds/003 'Other behaviors' 1 (ELR changes need no leader epoch bump); "
         "PartitionChangeBuilder: bump on a leader change, on a replica removal, and on an ISR "
         "shrink only before metadata.version 3.6-IV0 (KAFKA-15021)."),
    Rule("ClearElrOnlyOnMinIsrChange", "change",
         "seeds/003 'Other behaviors' 2 (min.insync.replicas update removes the ELR only if the "
         "new min ISR <= current ISR); shipped: research/kafka-facts.md (any change writes a "
         "ClearElrRecord) and ReplicationControlManager (ClearElrRecord with the config record, "
         "topic creation or the ELR feature)."),
    Rule("MinIsrChangeClearsElr", "change",
         "Profiles with min_isr_change_clears=always: research/kafka-facts.md (any change of "
         "min.insync.replicas, topic or cluster level, wipes ELR and LastKnownELR); Kafka docs "
         "ops.html (ELR fields cleaned when min.insync.replicas is updated)."),
    Rule("ReplayConsistency", "change",
         "ReplicationControlManager.replay / ClusterControlManager.replay reject records for "
         "unknown partitions, topics, brokers or broker epochs: the trace is not replayable."),
    Rule("MetadataLogMatching", "invariant",
         f"{TLA} MetadataLogMatchingProperty: the metadata logs agree on their common prefix."),
)
RULES: dict[str, Rule] = {r.name: r for r in _RULES}


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
    (eligible.leader.replicas.version >= 1, 4.0+)."""
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


# --- change rules ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One partition change as the controller computed it (PartitionChangeBuilder.build):
    the proposed (target) ISR and ELR before the election, the acceptable leaders, and
    what kind of election the record shows."""

    key: PartitionKey
    p: PartitionRegistration
    q: PartitionRegistration
    min_isr: int
    #: "none" (same leader), "leaderless", "isr", "elr" or "unclean".
    kind: str
    acceptable: frozenset[int]
    target_isr: frozenset[int]
    target_elr: frozenset[int]
    #: Valid clean leaders (target ISR, else target ELR), in assignment order.
    candidates: tuple[int, ...]
    #: The shipped last-known-leader candidate (profiles with last_known_elr=last-leader).
    last_leader: int | None
    #: The first live replica in assignment order (the shipped unclean choice).
    first_live: int | None
    unclean_enabled: bool
    #: The broker whose unclean-shutdown registration this change belongs to.
    unclean_broker: int | None


def _completes_reassignment(p: PartitionRegistration, q: PartitionRegistration) -> bool:
    """The leader's AlterPartition added the adding replicas to the ISR and so completed the
    reassignment, which removes the leaving replicas from that ISR (ReplicationControlManager:
    "completed the ongoing partition reassignment and triggered a leadership change"). When
    every old ISR member is leaving, the new ISR shares none of them, yet its leader comes from
    the ISR the leader proposed: an election from the ISR, not an unclean one (an unclean
    election also marks RECOVERING, which the caller excludes)."""
    return (not q.adding_replicas and not q.removing_replicas
            and set(p.isr) <= set(p.removing_replicas)
            and set(q.isr) <= set(p.adding_replicas) | (set(p.replicas) - set(p.removing_replicas)))


def _reassigns_leaderless(p: PartitionRegistration, q: PartitionRegistration) -> bool:
    """A reassignment's change of a partition already leaderless. Kafka runs no unclean
    election in it: ReplicationControlManager.changePartitionReassignment builds it without
    Election.UNCLEAN (3.9.2 line 2131, 4.0.2 2183, 4.1.2 2184, 4.3.1 2261), and the periodic
    electUnclean task elects later (QuorumController, uncleanLeaderElectionCheckIntervalMs,
    5 minutes by default). A live replica it adds may so wait that long (4.0.2 hunt, seed 39,
    fuzz-s39-48)."""
    return (p.leader == q.leader == NO_LEADER
            and (q.replicas, q.adding_replicas, q.removing_replicas)
            != (p.replicas, p.adding_replicas, p.removing_replicas))


def analyse(s: Step, key: PartitionKey, p: PartitionRegistration,
            q: PartitionRegistration) -> Change:
    st, op = s.before, s.op
    drop = {op.removed} - {None}
    acc = frozenset(r for r in set(p.replicas) | set(q.replicas)
                    if r not in drop and r in st.brokers and (st.brokers[r].active or (
                        not s.profile.leader_must_be_unfenced and st.brokers[r].registered)))
    min_isr = st.min_isr(key[0], s.ctx.min_isr_default)
    unclean_broker = (op.broker if op.kind == "registration" and op.unclean
                      and s.profile.unclean_shutdown_detection else None)
    was, now = p.leader, q.leader
    newly_recovering = q.leader_recovery_state == RECOVERING != p.leader_recovery_state
    if now == was:
        kind = "none"
    elif now == NO_LEADER:
        kind = "leaderless"
    elif now in p.isr:
        kind = "isr"
    elif s.elr_on and now in p.elr and q.isr == (now,) and not newly_recovering:
        kind = "elr"
    elif ((p.adding_replicas or p.removing_replicas) and now in q.isr and not newly_recovering
          and (set(q.isr) & set(p.isr) or _completes_reassignment(p, q))):
        kind = "isr"  # an ISR expansion completing a reassignment (KAFKA-19212)
    else:
        kind = "unclean"
    t_isr: frozenset[int]
    t_elr: frozenset[int]
    if kind == "elr":
        t_isr, t_elr = frozenset(), frozenset(q.elr) | {now}
    elif kind == "unclean":
        t_isr = frozenset(p.isr) - drop
        t_elr = (frozenset() if not s.elr_on or len(t_isr) >= min_isr
                 else (frozenset(p.elr) | frozenset(p.isr)) - t_isr - drop)
    else:
        t_isr, t_elr = frozenset(q.isr) - drop, frozenset(q.elr)
    candidates = tuple(r for r in q.replicas if r in acc and (
        r in t_isr or (not t_isr and s.elr_on and r in t_elr)))
    last_leader = None
    if (s.profile.last_known_elr == "last-leader" and s.elr_on and len(p.last_known_elr) == 1
            and not t_isr and not t_elr and p.last_known_elr[0] in acc):
        last_leader = p.last_known_elr[0]
    unclean = s.profile.unclean_election_config
    return Change(key, p, q, min_isr, kind, acc, t_isr, t_elr, candidates, last_leader,
                  next((r for r in q.replicas if r in acc), None),
                  st.unclean_leader_election(key[0], s.ctx.unclean_leader_election_default)
                  if unclean == "config" else unclean == "always",
                  unclean_broker)


def _why(s: Step, b: int) -> str:
    reg = s.before.brokers.get(b)
    if b == s.op.removed:
        return f"broker {b} is being removed by this batch's {s.op.kind}"
    if reg is None or not reg.registered:
        return f"broker {b} is not registered"
    return f"broker {b} is {'fenced' if reg.fenced else 'in controlled shutdown'}"


def _ids(xs: Iterable[int]) -> str:
    return "[" + ", ".join(str(x) for x in sorted(xs)) + "]"


def partition_change(s: Step, c: Change) -> Iterator[Finding]:
    p, q, key = c.p, c.q, c.key
    was, now = p.leader, q.leader

    def f(rule: str, detail: str) -> Finding:
        return Finding(rule, detail, key)

    for x in sorted(set(q.isr) - set(p.isr)):
        if x not in c.acceptable:
            yield f("IsrJoinOnlyLive", f"replica {x} joined the ISR while {_why(s, x)}")
    for x in sorted(set(q.elr) - set(p.elr)):
        reason = ("ELR is off" if not s.elr_on
                  else "it did not leave the ISR" if x not in p.isr or x in q.isr
                  else f"the ISR {_ids(c.target_isr)} is at min ISR {c.min_isr}"
                  if len(c.target_isr) >= c.min_isr
                  else f"broker {x} registered after an unclean shutdown"
                  if x == c.unclean_broker
                  else "the profile adds no ISR leaver to the ELR"
                  if not s.profile.elr_filled_on_shrink else None)
        if reason:
            yield f("ElrJoinOnlyFromIsrUnderMinIsr", f"replica {x} entered the ELR but {reason}")
    at_min_isr = len(q.isr) >= c.min_isr and s.profile.elr_cleared_at_min_isr
    cleared = not q.elr and (at_min_isr or c.kind == "unclean" or not s.elr_on)
    for x in sorted(set(p.elr) - set(q.elr)):
        if not (x in q.isr or cleared or x == c.unclean_broker or x not in q.replicas
                or (s.op.kind == "unregistration" and s.op.broker == x)):
            yield f("ElrMembersRetained",
                    f"ELR member {x} dropped (ISR {_ids(q.isr)}, min ISR {c.min_isr}) without "
                    "joining the ISR, an unclean shutdown or an unclean election")
    if now >= 0 and now not in c.acceptable:
        what = "elected" if now != was else "kept as leader"
        yield f("NewLeaderIsLive", f"{now} {what} while {_why(s, now)}")
    if c.kind == "elr" and set(p.isr) - {s.op.removed}:
        yield f("ElrElectionOnlyWithEmptyIsr",
                f"ELR member {now} elected while ISR members {_ids(set(p.isr) - {s.op.removed})} "
                "remain")
    yield from _order(s, c)
    if c.kind == "unclean":
        yield from _unclean(s, c)
    if now == NO_LEADER:
        why = (f"valid replicas {list(c.candidates)} remain" if c.candidates
               else f"the last known leader {c.last_leader} is live" if c.last_leader is not None
               else f"unclean election is enabled and {c.first_live} is live"
               if c.unclean_enabled and c.first_live is not None
               and not _reassigns_leaderless(p, q) else None)
        if why:
            yield f("LeaderlessOnlyWithoutCandidate", f"partition left leaderless although {why}")
    lrs0, lrs1 = p.leader_recovery_state, q.leader_recovery_state
    if lrs1 == RECOVERING != lrs0 and c.kind != "unclean":
        yield f("LeaderRecoveryStateChange", f"RECOVERING set without an unclean election "
                f"(leader {was} -> {now})")
    if lrs0 == RECOVERING and lrs1 == RECOVERED and now != was:
        yield f("LeaderRecoveryStateChange", f"RECOVERED set by a leader change {was} -> {now}")
    yield from _last_known_elr(s, c)
    yield from _epoch_bump(s, c)


def _order(s: Step, c: Change) -> Iterator[Finding]:
    if s.profile.election_order not in ("assignment", "last"):
        return
    was, now = c.p.leader, c.q.leader
    which = -1 if s.profile.election_order == "last" else 0
    if c.kind in ("isr", "elr"):
        if c.candidates and now != c.candidates[which]:
            yield Finding("ElectionFollowsAssignmentOrder", f"elected {now}; the "
                          f"{'last' if which else 'first'} valid replica in assignment order "
                          f"is {c.candidates[which]}", c.key)
        elif was in c.candidates and now != c.q.replicas[0]:
            yield Finding("ElectionFollowsAssignmentOrder",
                          f"leader {was} was still valid but {now} (not the preferred replica) "
                          "was elected", c.key)
    elif c.kind == "unclean" and now in c.acceptable and not c.candidates:
        expected = c.last_leader if c.last_leader is not None else c.first_live
        if now != expected:
            yield Finding("ElectionFollowsAssignmentOrder", f"unclean election chose {now}; "
                          f"expected {expected} (last known leader, else first live replica)",
                          c.key)


def _unclean(s: Step, c: Change) -> Iterator[Finding]:
    p, q, now = c.p, c.q, c.q.leader
    if c.candidates:
        yield Finding("UncleanElectionOnlyWhenAllowed", f"{now} elected from outside the ISR "
                      f"and ELR while {list(c.candidates)} were valid", c.key)
    else:
        allowed = ((c.last_leader is not None and now == c.last_leader) or c.unclean_enabled
                   or s.ctx.unclean_election_requested)
        if (not allowed and s.profile.unclean_recovery and s.elr_on and not c.target_isr
                and not c.target_elr):
            # Delivery plan: "elect the LastKnownLeader once it is unfenced"; Balanced
            # recovery "when all the LastKnownELR are unfenced".
            allowed = now == p.last_known_leader or all(
                x in c.acceptable for x in p.last_known_elr)
        if not allowed:
            yield Finding("UncleanElectionOnlyWhenAllowed",
                          f"unclean election of {now} (ISR {_ids(p.isr)}, ELR {_ids(p.elr)}, "
                          f"LastKnownELR {_ids(p.last_known_elr)}) with unclean leader "
                          "election off and no request", c.key)
    mv = s.before.features.get("metadata.version")
    bad = ([f"ISR {_ids(q.isr)} is not [{now}]"] if q.isr != (now,) else []) + (
        ["leader recovery state is not RECOVERING"]
        if q.leader_recovery_state != RECOVERING and (mv is None or mv >= MV_LEADER_RECOVERY)
        else []) + ([f"ELR {_ids(q.elr)} not cleared"] if s.elr_on and q.elr else [])
    if bad:
        yield Finding("UncleanElectionMarksRecovering",
                      f"unclean election of {now}: " + "; ".join(bad), c.key)


def _last_known_elr(s: Step, c: Change) -> Iterator[Finding]:
    if not s.elr_on:
        return
    p, q, was, now = c.p, c.q, c.p.leader, c.q.leader
    lke, lke2 = set(p.last_known_elr), set(q.last_known_elr)

    def f(detail: str) -> Finding:
        return Finding("LastKnownElrUpdate", detail, c.key)

    if s.profile.last_known_elr == "last-leader":
        if lke2 != lke and not ((not lke2 and now >= 0)
                                or (was >= 0 and now == NO_LEADER and lke2 == {was})):
            yield f(f"LastKnownELR {_ids(lke)} -> {_ids(lke2)} with leader {was} -> {now}: it "
                    "holds the last leader, set when the partition becomes leaderless and "
                    "cleared when it has a leader")
        elif was >= 0 and now == NO_LEADER and p.isr and not q.isr and not lke and lke2 != {was}:
            yield f(f"leader {was} lost with the last ISR member but LastKnownELR "
                    f"{_ids(lke2)} does not record it")
    elif s.profile.last_known_elr == "kip":
        left = set(p.elr) - set(q.elr)
        if lke2 - lke - left:
            yield f(f"{_ids(lke2 - lke - left)} added to LastKnownELR without leaving the ELR")
        if lke - lke2 and (lke2 or not (len(q.isr) >= c.min_isr or c.kind == "unclean")):
            yield f(f"LastKnownELR lost {_ids(lke - lke2)} without the ISR reaching min ISR")
        u = c.unclean_broker
        if u is not None and u in left and len(q.isr) < c.min_isr and u not in lke2:
            yield f(f"ELR member {u} removed after an unclean shutdown but not added to "
                    "LastKnownELR")


def _epoch_bump(s: Step, c: Change) -> Iterator[Finding]:
    p, q = c.p, c.q
    mv = s.before.features.get("metadata.version")
    shrink = data(s.record).get("isr") is not None and not set(q.isr) >= set(p.isr)
    removed = not set(q.replicas) >= set(p.replicas)
    required = (q.leader != p.leader or removed
                or (mv is not None and mv < MV_NO_EPOCH_BUMP_ON_SHRINK and shrink))
    bumped = q.leader_epoch > p.leader_epoch
    if bumped != required:
        why = "replicas were removed" if removed else "the ISR shrank"
        yield Finding("LeaderEpochBump", (
            f"leader epoch {p.leader_epoch} -> {q.leader_epoch} without a leader change or a "
            "replica removal" if bumped else f"leader epoch not bumped although {why}"), c.key)


def _partition_record(s: Step) -> Iterator[Finding]:
    key = _key(s.record)
    p, q = s.before.partitions.get(key), s.after.partitions.get(key)
    if q is None:
        return
    if p is not None:
        if q.leader_epoch < p.leader_epoch or q.partition_epoch < p.partition_epoch:
            yield Finding("EpochsNeverGoBack", f"PartitionRecord for an existing partition moves "
                          f"leader epoch {p.leader_epoch} -> {q.leader_epoch}, partition epoch "
                          f"{p.partition_epoch} -> {q.partition_epoch}", key)
        return
    live = s.before.brokers
    for x in q.isr:
        if x not in live or not live[x].active:
            yield Finding("IsrJoinOnlyLive", f"new partition with {_why(s, x)} in its ISR", key)
    if q.leader >= 0 and (q.leader not in live or not live[q.leader].active):
        yield Finding("NewLeaderIsLive", f"new partition led by {q.leader} while "
                      f"{_why(s, q.leader)}", key)
    if q.elr or q.last_known_elr:
        yield Finding("ElrJoinOnlyFromIsrUnderMinIsr", f"new partition with ELR {_ids(q.elr)}, "
                      f"LastKnownELR {_ids(q.last_known_elr)}", key)


def _batch(s: Step) -> list[Record]:
    mine = batch_of(s.record)
    lo = hi = s.index
    while lo > 0 and batch_of(s.records[lo - 1]) == mine:
        lo -= 1
    while hi + 1 < len(s.records) and batch_of(s.records[hi + 1]) == mine:
        hi += 1
    return list(s.records[lo:hi + 1])


def _min_isr_configs(records: Sequence[Record]) -> set[str | None]:
    """Topics whose min.insync.replicas the records set (None: the cluster level)."""
    out: set[str | None] = set()
    for r in records:
        d = data(r)
        if r.get("type") == "CONFIG_RECORD" and d.get("name") == "min.insync.replicas":
            rtype, name = int(d.get("resourceType", -1)), str(d.get("resourceName") or "")
            if rtype == 2:
                out.add(name)
            elif rtype == 4 and name == "":
                out.add(None)
    return out


def _clear_elr(s: Step) -> Iterator[Finding]:
    name = str(data(s.record).get("topicName") or "")
    batch = _batch(s)
    configs = _min_isr_configs(batch)
    justified = None in configs or (name and (name in configs or any(
        r.get("type") == "TOPIC_RECORD" and data(r).get("name") == name for r in batch))) or any(
        r.get("type") == "FEATURE_LEVEL_RECORD"
        and data(r).get("name") == "eligible.leader.replicas.version" for r in batch)
    if not justified:
        yield Finding("ClearElrOnlyOnMinIsrChange", f"ClearElrRecord for {name or 'all topics'} "
                      "without a min.insync.replicas change, topic creation or ELR feature change")
    if s.profile.min_isr_change_clears == "kip":
        for key, p in s.before.partitions.items():
            if (not name or s.before.topic_name(key[0]) == name) and p.elr:
                m = s.before.min_isr(key[0], s.ctx.min_isr_default)
                if len(p.isr) < m:
                    yield Finding("ClearElrOnlyOnMinIsrChange", f"ELR {_ids(p.elr)} wiped although "
                                  f"ISR {_ids(p.isr)} is below the new min ISR {m}", key)


def check_change(s: Step) -> list[Finding]:
    kind = s.record.get("type")
    if kind == "PARTITION_CHANGE_RECORD":
        key = _key(s.record)
        p, q = s.before.partitions.get(key), s.after.partitions.get(key)
        if p is None or q is None:
            return []
        return list(partition_change(s, analyse(s, key, p, q)))
    if kind == "PARTITION_RECORD":
        return list(_partition_record(s))
    if kind == "CLEAR_ELR_RECORD":
        return list(_clear_elr(s))
    return []


# --- invariants: judged on each committed state (batch end) ----------------------------

#: Records after which every partition is judged (they change brokers, configs, features).
_GLOBAL = {"REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD",
           "UNFENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "CONFIG_RECORD",
           "FEATURE_LEVEL_RECORD", "CLEAR_ELR_RECORD", "REMOVE_TOPIC_RECORD"}


#: Invariants of a state that stay broken until a later record repairs them.
PERSISTENT = frozenset(r.name for r in _RULES if r.kind == "invariant") - {
    "UncleanShutdownReplicaNotInElr", "EpochsNeverGoBack", "MetadataLogMatching"}


def check_batch(records: Sequence[Record], first: int, last: int, before: CommittedState,
                after: CommittedState, profile: Profile, ctx: TraceContext
                ) -> tuple[set[PartitionKey], list[Finding]]:
    """The invariants of the state committed by records[first:last + 1]: the partitions
    judged (all of them when brokers, configs or features changed) and the findings."""
    batch = records[first:last + 1]
    elr = elr_on(after, profile, ctx)
    if any(r.get("type") in _GLOBAL for r in batch):
        keys = list(after.partitions)
    else:
        keys = [k for k in dict.fromkeys(_key(r) for r in batch) if k in after.partitions]
    out = [f for k in keys for f in _partition_invariants(after, k, elr, profile, ctx)]
    for b in after.brokers.values():
        if elr and b.unclean_shutdown and profile.unclean_shutdown_detection \
                and _new_incarnation(before, after, b.id):
            out += [Finding("UncleanShutdownReplicaNotInElr",
                            f"broker {b.id} registered after an unclean shutdown but is still in "
                            f"the {'ELR' if b.id in q.elr else 'ISR'}", k, b.id)
                    for k, q in after.partitions.items() if b.id in q.elr or b.id in q.isr]
    configs = _min_isr_configs(batch)
    if configs and elr and profile.min_isr_change_clears == "always":
        out += [Finding("MinIsrChangeClearsElr", f"min.insync.replicas changed but ELR "
                        f"{_ids(q.elr)} / LastKnownELR {_ids(q.last_known_elr)} remain", k)
                for k, q in after.partitions.items()
                if (None in configs or after.topic_name(k[0]) in configs)
                and (q.elr or q.last_known_elr)]
    return set(keys), out


def _partition_invariants(st: CommittedState, key: PartitionKey, elr: bool, profile: Profile,
                          ctx: TraceContext) -> Iterator[Finding]:
    q = st.partitions[key]
    isr, replicas = set(q.isr), set(q.replicas)
    min_isr = st.min_isr(key[0], ctx.min_isr_default)

    def live(b: int) -> bool:
        return b in st.brokers and st.brokers[b].active

    def f(rule: str, detail: str) -> Finding:
        return Finding(rule, detail, key)

    if q.leader >= 0 and q.leader not in isr:
        yield f("LeaderInIsr", f"leader {q.leader} not in ISR {_ids(isr)}")
    if q.leader >= 0 and not live(q.leader):
        yield f("LeaderIsLive", f"leader {q.leader} is fenced, shutting down or unregistered")
    outside = (isr | set(q.elr) | set(q.last_known_elr)) - replicas
    if outside:
        yield f("IsrElrWithinReplicas", f"{_ids(outside)} in ISR/ELR/LastKnownELR but not "
                f"replicas {list(q.replicas)}")
    if isr & set(q.elr):
        yield f("ElrIsrDisjoint", f"{_ids(isr & set(q.elr))} in both ISR and ELR")
    if q.elr and len(isr) >= min_isr and profile.elr_cleared_at_min_isr:
        yield f("ElrEmptyAtMinIsr", f"ELR {_ids(q.elr)} with ISR {_ids(isr)} at min ISR {min_isr}")
    dead = [b for b in q.isr if not live(b)]
    if dead and (elr or len(isr) > 1):
        yield f("FencedReplicaNotInIsr", f"inactive {_ids(dead)} in ISR {_ids(isr)}")
    if not elr and (q.elr or q.last_known_elr):
        yield f("NoElrWhenDisabled", f"ELR {_ids(q.elr)}, LastKnownELR "
                f"{_ids(q.last_known_elr)} with ELR off")
    if not elr and not isr:
        yield f("IsrNotEmptyWhenElrDisabled", "empty ISR with ELR off")
    if elr and profile.last_known_elr == "last-leader" and (
            len(q.last_known_elr) > 1 or (q.leader >= 0 and q.last_known_elr)):
        yield f("LastKnownElrShape", f"LastKnownELR {_ids(q.last_known_elr)} with leader "
                f"{q.leader}: it holds at most the last leader, while leaderless")
    if elr and profile.last_known_elr == "kip" and q.last_known_elr and len(isr) >= min_isr:
        yield f("LastKnownElrShape", f"LastKnownELR {_ids(q.last_known_elr)} kept with ISR "
                f"{_ids(isr)} at min ISR {min_isr}")
