"""Named partition transitions, read from two consecutive settled states.

The mutants (mutants.py) ask whether a recorded run tells a KIP rule from its flip. This
asks a plainer question: which of the transitions the model predicts has a real broker
been seen to make? A transition counts when a step whose observed state the model
allowed leads from one settled state to the next. The names are the KIP-966 vocabulary;
a transition no run of a build shows is a rule of that build's profile that only the
model has exercised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reference.model.state import NO_LEADER, PartitionState

#: name -> what it is (KIP-966 wording where the KIP names it).
TRANSITIONS: dict[str, str] = {
    "fenced": "a broker loses its session and is fenced",
    "unfenced": "a fenced broker registers or heartbeats again and is unfenced",
    "elected-from-isr": "a new leader is elected from the ISR",
    "elected-from-elr": "a new leader is elected from the ELR (KIP-966 clean election)",
    "elected-unclean": "a leader outside ISR and ELR (unclean election or recovery)",
    "leaderless": "the partition loses its leader and none can be elected",
    "isr-shrink-fenced": "a fenced broker leaves the ISR",
    "isr-shrink-lag": "an unfenced follower leaves the ISR (it lags the leader)",
    "isr-expand": "a caught-up follower joins the ISR",
    "isr-below-min": "the ISR shrinks below min.insync.replicas",
    "isr-back-to-min": "the ISR grows back to min.insync.replicas",
    "elr-add": "replicas leaving the ISR under min ISR join the ELR",
    "elr-remove": "ELR members leave it (unclean shutdown, or elected, or fenced rules)",
    "elr-cleared": "the ELR empties as the ISR reaches min ISR again",
    "last-known-elr-set": "LastKnownELR is recorded",
    "last-known-elr-cleared": "LastKnownELR is cleared",
    "hwm-advance": "the HWM advances",
    "hwm-frozen-under-min": "records are produced under min ISR and the HWM stays",
    "hwm-backward": "the HWM consumers see goes back",
    "replicas-changed": "the assignment changes (a reassignment)",
}


#: The observed field each transition is read from: where a build's observer cannot see
#: it (ELR before DescribeTopicPartitions, 3.6/3.7), the transition is unobservable there.
NEEDS: dict[str, str] = {
    **{n: "elr" for n in ("elected-from-elr", "elr-add", "elr-remove", "elr-cleared")},
    **{n: "last_known_elr" for n in ("last-known-elr-set", "last-known-elr-cleared")},
    **{n: "fenced" for n in ("fenced", "unfenced", "isr-shrink-fenced", "isr-shrink-lag")},
    **{n: "hwm" for n in ("hwm-advance", "hwm-frozen-under-min", "hwm-backward")},
}


def _ids(value: frozenset[int] | None) -> frozenset[int]:
    return value if value is not None else frozenset()


def _leader_moves(a: PartitionState, b: PartitionState) -> set[str]:
    if b.leader is None or a.leader is None or b.leader == a.leader:
        return set()
    if b.leader == NO_LEADER:
        return {"leaderless"}
    if b.leader in a.isr:
        return {"elected-from-isr"}
    return {"elected-from-elr" if b.leader in _ids(a.elr) else "elected-unclean"}


def _isr_moves(a: PartitionState, b: PartitionState, min_isr: int) -> set[str]:
    out: set[str] = set()
    left = a.isr - b.isr
    fenced = _ids(b.fenced)
    if left & fenced:
        out.add("isr-shrink-fenced")
    if left - fenced and b.fenced is not None:
        out.add("isr-shrink-lag")
    if b.isr - a.isr:
        out.add("isr-expand")
    if len(b.isr) < min_isr <= len(a.isr):
        out.add("isr-below-min")
    if len(a.isr) < min_isr <= len(b.isr):
        out.add("isr-back-to-min")
    return out


def _elr_moves(a: PartitionState, b: PartitionState) -> set[str]:
    if a.elr is None or b.elr is None:
        return set()
    out: set[str] = set()
    if b.elr - a.elr:
        out.add("elr-add")
    if a.elr - b.elr:
        out.add("elr-cleared" if not b.elr and len(b.isr) > len(a.isr) else "elr-remove")
    if a.last_known_elr is not None and b.last_known_elr is not None:
        if b.last_known_elr - a.last_known_elr:
            out.add("last-known-elr-set")
        if a.last_known_elr and not b.last_known_elr:
            out.add("last-known-elr-cleared")
    return out


def _hwm_moves(a: PartitionState, b: PartitionState, min_isr: int, produced: bool) -> set[str]:
    if a.hwm is None or b.hwm is None:
        return set()
    if b.hwm > a.hwm:
        return {"hwm-advance"}
    if b.hwm < a.hwm:
        return {"hwm-backward"}
    if produced and len(b.isr) < min_isr and b.leader not in (None, NO_LEADER):
        return {"hwm-frozen-under-min"}
    return set()


def transitions(before: PartitionState, after: PartitionState, min_isr: int,
                produced: bool = False) -> frozenset[str]:
    """The named transitions from one settled state to the next (``produced``: the step
    between them produced records)."""
    out = _leader_moves(before, after) | _isr_moves(before, after, min_isr)
    out |= _elr_moves(before, after) | _hwm_moves(before, after, min_isr, produced)
    if before.fenced is not None and after.fenced is not None:
        if after.fenced - before.fenced:
            out.add("fenced")
        if before.fenced - after.fenced:
            out.add("unfenced")
    if before.replicas != after.replicas:
        out.add("replicas-changed")
    return frozenset(out)


def certain_transitions(before: Sequence[PartitionState], after: Sequence[PartitionState],
                        min_isr: int, produced: bool = False) -> frozenset[str]:
    """The transitions a step shows whichever branch the cluster takes: those from every
    state the model allowed before it to every state it allows after (none when either
    side is empty)."""
    out: frozenset[str] | None = None
    for a in before:
        for b in after:
            got = transitions(a, b, min_isr, produced)
            out = got if out is None else out & got
            if not out:
                return frozenset()
    return out or frozenset()


def carry_hwm(before: Sequence[PartitionState], after: Sequence[PartitionState]
              ) -> tuple[PartitionState, ...]:
    """``after`` as the next step compares with it: a state whose HWM is hidden (a new
    leader that has not learned it) keeps each HWM seen before, as a consumer remembers
    the last one it saw (harness/judge/transitions.py reads runs the same way)."""
    seen = sorted({a.hwm for a in before if a.hwm is not None})
    out: list[PartitionState] = []
    for b in after:
        carried = [b] if b.hwm is not None or not seen else [replace(b, hwm=h) for h in seen]
        out.extend(c for c in carried if c not in out)
    return tuple(out)
