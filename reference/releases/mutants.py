"""Model mutants: the reference with ONE KIP-966 rule flipped or weakened.

A mutant is a profile delta: it sets Profile fields (profiles.py) to a value no release
uses for that rule. Re-judging a recorded run under ``mutant.apply(profile)`` (the
lockstep model, the kip axis's model and the trace rules all read the profile) and
getting a different judgement than under ``profile`` means the run distinguishes the
rule: it kills the mutant. A mutant no run kills names a rule no run checks
(`kafka-chaos mutate`, harness/search/mutate.py).

On a profile that already has the mutated value (a release that ships without the rule,
e.g. ``no-hwm-rule`` before 3.7) a mutant changes nothing on the release axis; it still
mutates the ``kip966`` model of the kip axis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from reference.releases.profiles import Profile

SEEDS = "seeds/003"


@dataclass(frozen=True, slots=True)
class Mutant:
    """A model with one KIP rule flipped, kept to show that some scenario tells it from
    the KIP (a judge that cannot fail is worse than none)."""

    name: str
    #: One line: what the mutated model does.
    description: str
    #: The KIP line it breaks (seeds/003 section and quote, or the code it follows).
    breaks: str
    #: The Profile fields it sets.
    changes: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    def apply(self, profile: Profile) -> Profile:
        """``profile`` with this rule mutated (idempotent)."""
        suffix = f"~{self.name}"
        name = profile.name if profile.name.endswith(suffix) else profile.name + suffix
        return replace(profile, name=name, **self.changes)  # type: ignore[arg-type]

    def equivalent_on(self, profile: Profile) -> bool:
        """The profile already has every mutated value: the mutant is the profile."""
        return all(getattr(profile, k) == v for k, v in self.changes.items())


def _m(name: str, description: str, breaks: str, **changes: object) -> Mutant:
    return Mutant(name, description, breaks, MappingProxyType(dict(changes)))


MUTANTS: tuple[Mutant, ...] = (
    _m("hwm-rule-off",
       "the HWM advances with the ISR alone, below min ISR too",
       f"{SEEDS} 'Additional High Watermark advancement requirement': \"High Watermark can "
       "only advance if the ISR size is larger or equal to min.insync.replicas\"",
       hwm_rule=False),
    _m("acks-all-ignores-min-isr",
       "acks=all produce is accepted (and acked once replicated) with ISR below min ISR",
       f"{SEEDS} 'Additional High Watermark advancement requirement' (recap): \"For "
       "ack=all requests, the server should respond when ... "
       "the size of the ISR member is larger than min ISR\"",
       acks_all_needs_min_isr=False),
    _m("elr-kept-at-min-isr",
       "ELR members not in the new ISR stay in the ELR when the ISR reaches min ISR",
       f"{SEEDS} 'ELR update' 1: \"When the proposed ISR is larger or equal to min ISR, the "
       "controller will update the ISR and empty the ELR\"",
       elr_cleared_at_min_isr=False),
    _m("elr-not-filled",
       "replicas leaving the ISR below min ISR do not enter the ELR",
       f"{SEEDS} 'ELR update' 2.2: \"add (the current ISR - the proposed ISR) to ELR\"",
       elr_filled_on_shrink=False),
    _m("elr-not-electable",
       "only ISR members are elected; an ELR member never is",
       f"{SEEDS} 'Eligible Leader Replicas': \"replicas in ELR are also eligible for leader "
       "election during a clean election process\"; 'Controller behaviors' 3",
       elr_electable=False),
    _m("elect-fenced",
       "a fenced (registered but not heartbeating, or dead) ISR/ELR replica may be elected",
       f"{SEEDS} 'Controller behaviors' 3 and 'Unclean recovery' 2 (\"If there are unfenced "
       "ELR members, choose an ELR member\"): elect unfenced replicas only "
       "(ClusterControlManager.isActive)",
       leader_must_be_unfenced=False),
    _m("fenced-leader-stays-in-isr",
       "a fenced leader loses the leadership but stays in the ISR",
       f"{SEEDS} 'ISR invariants': \"removing a replica out of ISR if it is lagging from the "
       "ISR or it is fenced by the controller\"",
       fenced_leader_leaves_isr=False),
    _m("unclean-shutdown-undetected",
       "a replica restarted after an unclean shutdown stays in the ISR / ELR",
       f"{SEEDS} 'Controller behaviors' 4: \"During the broker registration, if the broker "
       "had an unclean shutdown, the controller will remove the broker from ISR and ELR\"",
       unclean_shutdown_detection=False),
    _m("last-known-elr-never-set",
       "LastKnownELR is never recorded",
       f"{SEEDS} 'Other behaviors' 6: \"when an ELR member has an unclean shutdown, it will "
       "be removed from ELR and added to the LastKnownELR\" (shipped: the last leader, "
       "KAFKA-15584)",
       last_known_elr="none"),
    _m("last-known-elr-wrong-member",
       "LastKnownELR records the first other replica in assignment order instead of the "
       "replica its rule names",
       f"{SEEDS} 'Other behaviors' 6 (the ELR member with the unclean shutdown) / 7 (\"the "
       "last ISR member (the leader) when it is fenced\")",
       last_known_elr_right_member=False),
    _m("min-isr-change-always-clears",
       "any min.insync.replicas change clears the ELR",
       f"{SEEDS} 'Other behaviors' 2: \"When updating the config min.insync.replicas, if the "
       "new min ISR <= current ISR, the ELR will be removed\"",
       min_isr_change_clears="always"),
    _m("reassignment-ignores-min-isr",
       "a reassignment completes with the ISR below min ISR",
       f"{SEEDS} 'Other behaviors' 4.1: \"the reassignment can only be completed if the ISR "
       "size is larger or equal to min ISR\"",
       reassignment_needs_min_isr=False),
    _m("reassignment-skips-target-isr",
       "a reassignment completes before the adding replicas (where a release waits for "
       "them: every target replica) joined the ISR",
       f"{SEEDS} 'Other behaviors' 4.1: \"when completing the reassignment, all the adding "
       "replicas should be in ISR\" (PartitionReassignmentReplicas.maybeCompleteReassignment)",
       reassignment_waits_for_target_isr=False),
    _m("unclean-config-never",
       "unclean.leader.election.enable=true is ignored: never an unclean election by config",
       f"{SEEDS} 'Unclean recovery': \"unclean.leader.election.enable=true, the controller "
       "will randomly elect a leader if the last ISR member gets fenced\"",
       unclean_election_config="never"),
    _m("unclean-config-always",
       "unclean.leader.election.enable=false is ignored: unclean elections as if true",
       f"{SEEDS} 'Unclean recovery': \"unclean.leader.election.enable=false, the controller "
       "will only elect the last ISR member when it gets unfenced again\"",
       unclean_election_config="always"),
    _m("election-order-last",
       "the last valid replica in assignment order is elected instead of the first",
       f"{SEEDS} 'Unclean recovery' 1 (\"choose an ISR member\") as shipped: the first valid "
       "replica in assignment order (PartitionChangeBuilder.electAnyLeader)",
       election_order="last"),
)

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}


def get_mutant(name: str) -> Mutant:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown mutant {name!r}; known: {', '.join(BY_NAME)}") from None
