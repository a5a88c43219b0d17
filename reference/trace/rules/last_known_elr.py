"""The LastKnownELR change rule (LastKnownElrUpdate), per the profile's last_known_elr.

KIP-966 'Other behaviors' 6 ("an ELR member with an unclean shutdown is removed from ELR
and added to the LastKnownELR", "cleaned when ISR reaches the min ISR") for the kip
profile; shipped Kafka records the last leader instead ('Other behaviors' 7, the last
known leader: research/kafka-facts.md, PartitionChangeBuilder.maybeUpdateLastKnownLeader).
The state shape (LastKnownElrShape) is judged with the invariants.
"""

from __future__ import annotations

from collections.abc import Iterator

from reference.model.state import NO_LEADER
from reference.trace.rules.election import Change
from reference.trace.rules.step import Finding, Step, _ids


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
