"""Leader election of a partition change: what kind of election a record shows (analyse,
Change) and the election rules ElectionFollowsAssignmentOrder,
UncleanElectionOnlyWhenAllowed and UncleanElectionMarksRecovering.

KIP-966 'Unclean recovery' (the election order: an ISR member, else an unfenced ELR
member, else unclean recovery by unclean.recovery.strategy) and 'Delivery plan' (without
Unclean Recovery: unclean.leader.election.enable, else the LastKnownLeader once it is
unfenced); 'Controller behaviors' 3 (an unfenced ELR member elected when the ISR is
empty). Shipped Kafka's order and unclean election: research/kafka-facts.md,
PartitionChangeBuilder.electAnyLeader / tryElection (KIP-704 leader recovery).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from reference.model.state import NO_LEADER
from reference.trace.records import RECOVERING, PartitionKey, PartitionRegistration
from reference.trace.rules.reassignment import _completes_reassignment
from reference.trace.rules.step import Finding, Step, _ids

#: metadata.version feature levels (MetadataVersion): 3.2-IV0 adds leader recovery
#: (KIP-704).
MV_LEADER_RECOVERY = 3


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
    # ELR turned off live, shipped 4.x: the builder's targetElr starts as the partition's ELR,
    # so an ELR member is still elected while the ISR is empty (PartitionChangeBuilder
    # isValidNewLeader; deviation elr-disable-keeps-fields).
    stale = not s.elr_on and s.profile.elr_disable_keeps_fields and bool(p.elr)
    newly_recovering = q.leader_recovery_state == RECOVERING != p.leader_recovery_state
    if now == was:
        kind = "none"
    elif now == NO_LEADER:
        kind = "leaderless"
    elif now in p.isr:
        kind = "isr"
    elif (s.elr_on or stale) and now in p.elr and q.isr == (now,) and not newly_recovering:
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
        r in t_isr or (not t_isr and (s.elr_on or stale) and r in t_elr)))
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
