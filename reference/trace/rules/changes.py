"""The per-change rules: check_change judges one record against the state before it,
knowing the controller operation it belongs to. partition_change runs a
PartitionChangeRecord's rules in their reported order: ISR joins, ELR joins and
retention (KIP-966 'ELR update' 2, 'ELR invariants'), the new leader and the election
(election.py), leader recovery (KIP-704), LastKnownELR (last_known_elr.py) and the leader
epoch (epochs.py); a PartitionRecord (topic creation) and a ClearElrRecord (min_isr.py)
have their own.
"""

from __future__ import annotations

from collections.abc import Iterator

from reference.model.state import NO_LEADER
from reference.trace.records import RECOVERED, RECOVERING
from reference.trace.rules.election import Change, _order, _unclean, analyse
from reference.trace.rules.epochs import _epoch_bump
from reference.trace.rules.last_known_elr import _last_known_elr
from reference.trace.rules.min_isr import _clear_elr
from reference.trace.rules.reassignment import _reassigns_leaderless
from reference.trace.rules.step import Finding, Step, _ids, _key, _why


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
