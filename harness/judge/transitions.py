"""Which named transitions (reference/search/transitions.py) a recorded run shows on a real
broker: the observed state each step settled on, compared with the one before it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from reference.model.state import PartitionState
from reference.search.transitions import NEEDS, transitions


def _min_isr_after(step: Mapping[str, Any], current: int) -> int:
    alter = step.get("alter_config")
    if not isinstance(alter, Mapping) or alter.get("scope") != "topic":
        return current  # a cluster-level value never wins over the topic's own
    value = (alter.get("config") or {}).get("min.insync.replicas")
    return int(value) if value is not None else current


def observed_transitions(events: Iterable[Mapping[str, Any]], min_isr: int) -> frozenset[str]:
    """The transitions between consecutive step-end observations of a history (the
    initial state counts as the first). A step without an observation is skipped, and the
    next one compares with the last state seen."""
    out: set[str] = set()
    seen: PartitionState | None = None
    settled: PartitionState | None = None
    for e in events:
        kind = e.get("kind")
        if kind == "observation":
            seen = PartitionState.from_json(e["state"])
            settled = settled or seen
        elif kind == "step" and e.get("phase") == "end" and seen is not None:
            step = e.get("step") or {}
            if settled is not None:
                out |= transitions(settled, seen, min_isr, produced="produce" in step)
            # A step that ended with the HWM hidden (a new leader that has not learned it)
            # is compared by the next one with the last HWM seen.
            settled = seen if seen.hwm is not None or settled is None else replace(
                seen, hwm=settled.hwm)
            min_isr = _min_isr_after(step, min_isr)
    return frozenset(out)


def unobservable_transitions(events: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """Transitions whose field no observation of the history carries (None throughout)."""
    seen: set[str] = set()
    for e in events:
        if e.get("kind") == "observation":
            seen |= {k for k, v in (e.get("state") or {}).items() if v is not None}
    return frozenset(name for name, needs in NEEDS.items() if needs not in seen)
