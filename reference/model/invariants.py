"""Invariants checked after every step, named after KIP-966 (seeds/003 'ELR
invariants') and the TLA+ spec (kafka-tlaplus kip_966_properties.tla).

The data-safety invariants hold only inside the KIP's fault model: "MinISR-1
tolerance to data loss unclean shutdown events" and no unclean election the
operator opted into (unclean.leader.election.enable, Aggressive, ElectLeaders
unclean/designated/longest_log_aggressive).
"""

from __future__ import annotations

from collections.abc import Callable

from reference.model.state import NO_LEADER, PartitionState, World

Check = Callable[[World, bool], str | None]


def within_fault_model(w: World) -> bool:
    """At most min ISR - 1 replicas lost data, and no deliberate unclean election."""
    return len(w.lost_data) <= w.min_isr - 1 and w.unclean_elections == 0


def elr_isr_disjoint(w: World, elr_on: bool) -> str | None:
    """KIP: "The member of ELR should not be in ISR" (TLA+ ValidControllerIsrAndElr)."""
    both = w.partition.elr & w.partition.isr
    return f"ELR ∩ ISR = {sorted(both)}" if both else None


def elr_only_under_min_isr(w: World, elr_on: bool) -> str | None:
    """KIP: "If ELR is not empty, the ISR is under min ISR"."""
    p = w.partition
    if p.elr and len(p.isr) >= w.min_isr:
        return f"ELR {sorted(p.elr)} non-empty while |ISR {sorted(p.isr)}| >= min ISR {w.min_isr}"
    return None


def electable_at_least_min_isr(w: World, elr_on: bool) -> str | None:
    """KIP: "ELR + ISR size will not be dropped below the min ISR unless the controller
    discovers an ELR member has an unclean shutdown"."""
    if not elr_on or w.unclean_shutdowns or w.reconfigured or w.unclean_elections:
        return None
    p = w.partition
    n = len(p.isr | p.elr)
    if n < w.min_isr:
        return f"|ISR ∪ ELR| = {n} < min ISR {w.min_isr} without an unclean shutdown"
    return None


def leader_candidate_completeness(w: World, elr_on: bool) -> str | None:
    """KIP: "The member of ELR should have the data at least to HWM" (TLA+
    LeaderCandidateCompletenessProperty: running ISR/ELR members hold the log up to
    the true HWM)."""
    if not within_fault_model(w):
        return None
    p = w.partition
    for r in sorted(p.isr | p.elr):
        b = w.broker(r)
        if b.alive and not b.pending_registration and b.leo < w.max_hwm:
            role = "ISR" if r in p.isr else "ELR"
            return f"{role} member {r} has LEO {b.leo} < HWM {w.max_hwm}"
    return None


def hwm_monotonic(w: World, elr_on: bool) -> str | None:
    """KIP goal: no "HWM moving backward" with at most min ISR - 1 unclean shutdowns."""
    if not within_fault_model(w):
        return None
    hwm = w.partition_hwm()
    if hwm is not None and hwm < w.max_hwm:
        return f"HWM {hwm} on leader {w.partition.leader} < previous HWM {w.max_hwm}"
    return None


def no_acked_record_lost(w: World, elr_on: bool) -> str | None:
    """TLA+ NoCommittedRecordLostGlobally, for acks=all records, within min ISR - 1
    data-losing unclean shutdowns."""
    if not within_fault_model(w):
        return None
    held = {rid for b in w.brokers for _, rid in b.log}
    lost = sorted(w.acked_all() - held)
    if lost:
        return (f"acked (acks=all) records {lost} are on no replica "
                f"({len(w.lost_data)} replica(s) lost data, min ISR {w.min_isr})")
    return None


def leader_completeness(w: World, elr_on: bool) -> str | None:
    """TLA+ LeaderCompletenessProperty: a running leader holds every acked record."""
    if not within_fault_model(w):
        return None
    leader = w.partition.leader
    if leader is None:
        return None
    b = w.broker(leader)
    if not b.alive:
        return None
    mine = {rid for _, rid in b.log}
    missing = sorted(w.acked_all() - mine)
    if missing:
        return f"leader {leader} misses acked records {missing}"
    if b.leo < w.max_hwm:
        return f"leader {leader} has LEO {b.leo} < HWM {w.max_hwm}"
    return None


def log_matching(w: World, elr_on: bool) -> str | None:
    """TLA+ LogMatchingProperty: replicas agree below both of their HWMs."""
    if not within_fault_model(w):
        return None
    bs = w.brokers
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            n = min(a.hwm, b.hwm, a.leo, b.leo)
            if a.log[:n] != b.log[:n]:
                return f"logs of {a.id} and {b.id} differ below offset {n}"
    return None


INVARIANTS: dict[str, Check] = {
    "ElrIsrDisjoint": elr_isr_disjoint,
    "ElrOnlyUnderMinIsr": elr_only_under_min_isr,
    "ElectableLeadersAtLeastMinIsr": electable_at_least_min_isr,
    "LeaderCandidateCompleteness": leader_candidate_completeness,
    "HwmMonotonic": hwm_monotonic,
    "NoAckedRecordLost": no_acked_record_lost,
    "LeaderCompleteness": leader_completeness,
    "LogMatching": log_matching,
}


def check(w: World, elr_on: bool) -> list[tuple[str, str]]:
    """(invariant name, detail) for every invariant ``w`` violates. A deleted topic's
    partition has none to keep: it has no replicas (reference.model.topics)."""
    if w.deleted:
        return []
    out = []
    for name, fn in INVARIANTS.items():
        msg = fn(w, elr_on)
        if msg is not None:
            out.append((name, msg))
    return out


# --- observed-state invariants ------------------------------------------------------------
# What every observed state of a partition must satisfy under any profile and any build,
# at any moment (not only once a step settled): the harness checks each sample of the
# state against these while steps run. They need no model: KRaft's PartitionRecord /
# PartitionChangeRecord rules (PartitionChangeBuilder) and the KIP's "The member of ELR
# should not be in ISR".

ObservedCheck = Callable[[PartitionState], str | None]


def observed_leader_in_isr(s: PartitionState) -> str | None:
    """A partition has a leader in its ISR, or no leader (leader -1)."""
    if s.leader is None or s.leader == NO_LEADER or s.leader in s.isr:
        return None
    return f"leader {s.leader} is not in ISR {sorted(s.isr)}"


def observed_within_replicas(s: PartitionState) -> str | None:
    """ISR, ELR and LastKnownELR hold replicas of the partition only."""
    if not s.replicas:
        return None  # replicas not observed
    reps = set(s.replicas)
    for name, ids in (("ISR", s.isr), ("ELR", s.elr), ("LastKnownELR", s.last_known_elr)):
        outside = sorted(set(ids or ()) - reps)
        if outside:
            return f"{name} {sorted(ids or ())} has {outside}, not replicas {list(s.replicas)}"
    return None


def observed_elr_isr_disjoint(s: PartitionState) -> str | None:
    """KIP-966: "The member of ELR should not be in ISR"."""
    both = sorted((s.elr or frozenset()) & s.isr)
    return f"ELR ∩ ISR = {both}" if both else None


OBSERVED: dict[str, ObservedCheck] = {
    "LeaderInIsr": observed_leader_in_isr,
    "IsrElrWithinReplicas": observed_within_replicas,
    "ElrIsrDisjoint": observed_elr_isr_disjoint,
}


def observed_violations(s: PartitionState, max_hwm: int | None) -> list[tuple[str, str]]:
    """(invariant, detail) for every observed-state invariant ``s`` breaks; ``max_hwm``:
    the highest HWM observed before it (the HWM consumers saw never goes back: the KIP's
    "HWM moving backward" as the data checks' consumer-hwm-monotonic)."""
    out = [(name, msg) for name, fn in OBSERVED.items() if (msg := fn(s)) is not None]
    if s.hwm is not None and max_hwm is not None and s.hwm < max_hwm:
        out.append(("HwmMonotonic", f"HWM {s.hwm} < HWM {max_hwm} observed before"))
    return out
