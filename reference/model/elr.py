"""ELR update rules (KIP-966 "ELR update" and the shipped PartitionChangeBuilder).

"ELR update will take a proposed ISR and the controller does the following:
 1. When the proposed ISR is larger or equal to min ISR, the controller will update
    the ISR and empty the ELR.
 2. When the proposed ISR is smaller than min ISR, the controller will retain the
    current members of the ELR, add (the current ISR - the proposed ISR) to ELR,
    remove the duplicate member in both ISR and ELR from ELR."
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.releases.profiles import Profile


@dataclass(frozen=True, slots=True)
class ElrUpdate:
    elr: frozenset[int]
    last_known_elr: frozenset[int]


def update_elr(
    profile: Profile,
    *,
    isr: frozenset[int],
    elr: frozenset[int],
    last_known_elr: frozenset[int],
    proposed_isr: frozenset[int],
    min_isr: int,
    unclean_shutdown: frozenset[int] = frozenset(),
) -> ElrUpdate:
    """ELR and LastKnownELR after the controller accepts ``proposed_isr``.

    ``unclean_shutdown``: replicas registering after an unclean shutdown; "the
    controller will remove the broker from ISR and ELR before persisting the
    registration record".
    """
    if len(proposed_isr) >= min_isr:
        # Rule 1; "The LastKnownELR will be cleaned when ISR reaches the min ISR."
        kept = frozenset() if profile.elr_cleared_at_min_isr else elr - proposed_isr
        return ElrUpdate(kept, frozenset())
    candidates = elr | (isr - proposed_isr) if profile.elr_filled_on_shrink else elr
    new_elr = candidates - proposed_isr - unclean_shutdown
    if profile.last_known_elr == "kip":
        # "when an ELR member has an unclean shutdown, it will be removed from ELR and
        # added to the LastKnownELR."
        lk = last_known_elr | (candidates & unclean_shutdown)
    elif profile.last_known_elr == "last-leader":
        # Shipped (useLastKnownLeaderInBalancedRecovery, on by default): the record's
        # LastKnownELR holds only the last leader, which the election step sets and keeps
        # while the partition is leaderless; ELR members struck out after an unclean
        # shutdown are not added (observed on 4.0.2, 4.1.2 and 4.3.1).
        lk = frozenset()
    else:
        lk = frozenset()
    return ElrUpdate(new_elr, lk)


def after_min_isr_change(
    profile: Profile, *, isr: frozenset[int], elr: frozenset[int],
    last_known_elr: frozenset[int], new_min_isr: int,
) -> ElrUpdate:
    """min.insync.replicas changed.

    KIP (seeds/003 'Other behaviors' 2): "if the new min ISR <= current ISR, the ELR
    will be removed". Shipped (facts): any change writes a ClearElrRecord that wipes
    ELR and LastKnownELR.
    """
    if profile.min_isr_change_clears == "always" or new_min_isr <= len(isr):
        return ElrUpdate(frozenset(), frozenset())
    return ElrUpdate(elr, last_known_elr)
