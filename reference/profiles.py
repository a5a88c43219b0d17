"""Profiles: which semantics the model follows.

A profile encodes intended, documented behaviour only, never a known bug: a suite
must be able to fail on a bug. Each profile cites the line of the spec (seeds/) or
fact (research/kafka-facts.md) it implements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ElectionOrder = Literal["any", "assignment"]
LastKnownElrRule = Literal["kip", "last-leader", "none"]
MinIsrChangeRule = Literal["kip", "always"]


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    #: ELR on (True), off (False), or follow Model(elr_enabled=...) (None).
    elr: bool | None
    #: "HWM can only advance if the ISR size is larger or equal to min.insync.replicas".
    hwm_rule: bool
    #: "any": any valid candidate may win (the KIP does not say which);
    #: "assignment": first valid replica in assignment order (PartitionChangeBuilder).
    election_order: ElectionOrder
    #: What LastKnownELR holds.
    last_known_elr: LastKnownElrRule
    #: When a min.insync.replicas change clears the ELR.
    min_isr_change_clears: MinIsrChangeRule
    #: KIP-966 part 2 (unclean recovery, GetReplicaLogInfo, longest-log elections).
    unclean_recovery: bool
    #: KIP-1303 local-log eligibility stable sort.
    kip1303: bool
    #: "the reassignment can only be completed if the ISR size is larger or equal to min ISR".
    reassignment_needs_min_isr: bool
    #: Leader epoch bumps on ISR shrink (metadata.version < 3.6).
    cites: tuple[str, ...]

    def elr_on(self, elr_enabled: bool) -> bool:
        return elr_enabled if self.elr is None else self.elr


KIP966 = Profile(
    name="kip966",
    elr=True,
    hwm_rule=True,
    election_order="any",
    last_known_elr="kip",
    min_isr_change_clears="kip",
    unclean_recovery=True,
    kip1303=False,
    reassignment_needs_min_isr=True,
    cites=(
        "seeds/003 'Additional High Watermark advancement requirement': HWM advances only "
        "if the ISR size is larger or equal to min.insync.replicas (effective = "
        "min(min.insync.replicas, replication factor)).",
        "seeds/003 'ELR update': proposed ISR >= min ISR empties the ELR; otherwise ELR := "
        "ELR + (current ISR - proposed ISR) - proposed ISR.",
        "seeds/003 'Other behaviors' 6: an ELR member with an unclean shutdown is removed "
        "from ELR and added to the LastKnownELR; LastKnownELR is cleaned when ISR reaches "
        "min ISR.",
        "seeds/003 'Other behaviors' 2: when updating min.insync.replicas, if the new min "
        "ISR <= current ISR, the ELR will be removed.",
        "seeds/003 'Unclean recovery': ISR member, else unfenced ELR member, else fenced ELR: "
        "Aggressive recovers, others wait; no ELR: Aggressive recovers, Balanced recovers when "
        "all LastKnownELR are unfenced, None waits for the user (seeds/002 renames).",
        "seeds/003 'Unclean recovery': the replica with the highest leader epoch plus the "
        "longest log end offset is elected.",
        "seeds/003 'Other behaviors' 4: reassignment completes only if ISR size >= min ISR.",
    ),
)

KIP1303 = Profile(
    name="kip1303",
    elr=True,
    hwm_rule=True,
    election_order="assignment",
    last_known_elr="kip",
    min_isr_change_clears="kip",
    unclean_recovery=True,
    kip1303=True,
    reassignment_needs_min_isr=True,
    cites=KIP966.cites + (
        "seeds/001 'Leader Election Algorithm Changes': stably sort targetReplicas so that "
        "eligible replicas come first; assignment order is kept within each group.",
        "seeds/001: replicas with unknown local log state are treated as eligible.",
        "seeds/001: eligible when (ms > 0 and now - localLogStartTimestamp >= ms) or "
        "(bytes > 0 and localLogSizeBytes >= bytes); applies to ISR, ELR and preferred "
        "elections.",
    ),
)

PRE_37 = Profile(
    name="pre-3.7",
    elr=False,
    hwm_rule=False,
    election_order="assignment",
    last_known_elr="none",
    min_isr_change_clears="kip",
    unclean_recovery=False,
    kip1303=False,
    reassignment_needs_min_isr=False,
    cites=(
        "research/kafka-facts.md: 3.6.x predates the HWM rule (HWM advances with the ISR alone).",
        "seeds/003 motivation: the ISR never drops to empty; the last ISR member is re-elected "
        "when it comes back (T2, T4).",
    ),
)

PRE_ELR = Profile(
    name="pre-elr",
    elr=False,
    hwm_rule=True,
    election_order="assignment",
    last_known_elr="none",
    min_isr_change_clears="kip",
    unclean_recovery=False,
    kip1303=False,
    reassignment_needs_min_isr=False,
    cites=(
        "research/kafka-facts.md: HWM rule since 3.7.0 (KAFKA-15583), not gated by ELR.",
        "research/kafka-facts.md: ELR on 3.x is unsupported (not production-ready).",
        "seeds/003 motivation: 'The current kafka behavior will prevent ISR drops to empty "
        "which keeps the last replica'; 'broker 2 restarts and becomes the leader'.",
        "research/kafka-facts.md: election = first replica in assignment order in ISR and "
        "active; unclean election = first live replica in assignment order.",
    ),
)

KAFKA_40_ELR = Profile(
    name="kafka-4.0-elr",
    elr=True,
    hwm_rule=True,
    election_order="assignment",
    last_known_elr="last-leader",
    min_isr_change_clears="always",
    unclean_recovery=False,
    kip1303=False,
    reassignment_needs_min_isr=False,
    cites=(
        "research/kafka-facts.md: 4.0 feature eligible.leader.replicas.version=1 turns ELR on.",
        "research/kafka-facts.md: new ISR >= min ISR clears ELR and LastKnownELR; otherwise "
        "ELR := (old ELR + old ISR) - new ISR - unclean-shutdown replicas.",
        "research/kafka-facts.md: election = current leader if valid, else first replica in "
        "assignment order in ISR (ELR when ISR is empty) and active, else the last known "
        "leader (unclean: ISR := [leader], RECOVERING), else with unclean election on the "
        "first live replica in assignment order.",
        "research/kafka-facts.md: LastKnownELR holds one id, the last leader, set when the "
        "ISR becomes empty.",
        "research/kafka-facts.md: any min.insync.replicas change clears ELR and LastKnownELR "
        "(ClearElrRecord, metadata.version 4.0-IV1, the version ELR needs).",
    ),
)

KAFKA_40_NOELR = Profile(
    name="kafka-4.0-noelr",
    elr=False,
    hwm_rule=True,
    election_order="assignment",
    last_known_elr="none",
    min_isr_change_clears="always",
    unclean_recovery=False,
    kip1303=False,
    reassignment_needs_min_isr=False,
    cites=(
        "research/kafka-facts.md: 4.0 ELR is a preview, off by default; HWM rule is not gated "
        "by ELR.",
        "With ELR off the ISR never shrinks below 1; the last member is re-elected when it "
        "returns.",
    ),
)

KAFKA_41 = Profile(
    name="kafka-4.1",
    elr=None,
    hwm_rule=True,
    election_order="assignment",
    last_known_elr="last-leader",
    min_isr_change_clears="always",
    unclean_recovery=False,
    kip1303=False,
    reassignment_needs_min_isr=False,
    cites=KAFKA_40_ELR.cites + (
        "research/kafka-facts.md: 4.1+ ELR on by default for new clusters; upgraded clusters "
        "keep it off (the Model's elr_enabled flag).",
        "research/kafka-facts.md: KIP-966 part 2 (unclean recovery) is in no release through "
        "4.3.",
    ),
)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (KIP966, KIP1303, PRE_37, PRE_ELR, KAFKA_40_ELR, KAFKA_40_NOELR, KAFKA_41)
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(
            f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}"
        ) from None


def profile_for_build(version: tuple[int, int, int], elr_enabled: bool) -> str:
    """The profile for a real build: 3.x -> pre-elr (pre-3.7 before the HWM rule),
    4.0 -> kafka-4.0-elr / kafka-4.0-noelr, >= 4.1 -> kafka-4.1 (pass elr_enabled to
    the Model)."""
    major, minor, _ = version
    if major < 3 or (major == 3 and minor < 7):
        return "pre-3.7"
    if major == 3:
        return "pre-elr"
    if major == 4 and minor == 0:
        return "kafka-4.0-elr" if elr_enabled else "kafka-4.0-noelr"
    return "kafka-4.1"
