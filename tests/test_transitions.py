"""Named transitions read from consecutive observed states (reference/search/transitions.py) and
their coverage per build in `kafka-chaos mutate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.judge.transitions import observed_transitions, unobservable_transitions
from harness.search.mutate import MutationReport, RunResult, summary, transitions_markdown
from reference.model.state import NO_LEADER, PartitionState
from reference.search.transitions import TRANSITIONS, transitions


def state(leader: int, isr: set[int], elr: set[int] | None = None, hwm: int | None = 0,
          fenced: set[int] | None = None, lke: set[int] | None = None) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=None, replicas=(1, 2, 3),
                          isr=frozenset(isr), elr=None if elr is None else frozenset(elr),
                          last_known_elr=frozenset(lke or ()), hwm=hwm,
                          fenced=None if fenced is None else frozenset(fenced))


def test_a_fenced_leader_replaced_from_the_isr() -> None:
    a = state(1, {1, 2, 3}, set(), fenced=set())
    b = state(2, {2, 3}, set(), fenced={1})
    assert transitions(a, b, 2) == {"elected-from-isr", "fenced", "isr-shrink-fenced"}


def test_election_from_elr_and_unclean_election_are_told_apart() -> None:
    a = state(NO_LEADER, set(), {2}, fenced={1, 2, 3})
    assert "elected-from-elr" in transitions(a, state(2, {2}, set(), fenced={1, 3}), 2)
    out = transitions(a, state(3, {3}, set(), fenced={1, 2}), 2)
    assert "elected-unclean" in out and "elected-from-elr" not in out


def test_under_min_isr_the_elr_fills_and_the_hwm_freezes() -> None:
    a = state(1, {1, 2}, set(), hwm=4, fenced={3})
    b = state(1, {1}, {2}, hwm=4, fenced={2, 3})
    assert transitions(a, b, 2) >= {"isr-below-min", "elr-add", "isr-shrink-fenced"}
    assert transitions(b, b, 2, produced=True) == {"hwm-frozen-under-min"}
    assert transitions(b, b, 2, produced=False) == frozenset()
    back = state(1, {1, 2}, set(), hwm=6, fenced={3})
    assert transitions(b, back, 2) >= {"elr-cleared", "isr-back-to-min", "hwm-advance",
                                       "unfenced", "isr-expand"}


def test_unknown_fields_give_no_transition() -> None:
    a = state(1, {1, 2, 3}, None, hwm=None)
    b = state(1, {1, 2}, None, hwm=None)
    assert transitions(a, b, 2) == frozenset()  # lag or fencing: unknown without `fenced`


def _obs(s: PartitionState) -> dict[str, Any]:
    return {"kind": "observation", "state": s.to_json()}


def _end(step: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "step", "phase": "end", "step": step}


def test_a_history_is_read_step_end_to_step_end() -> None:
    start = state(1, {1, 2, 3}, set(), fenced=set())
    transient = state(1, {1, 2}, set(), fenced=set())
    settled = state(1, {1, 2, 3}, set(), hwm=2, fenced=set())
    events = [_obs(start), {"kind": "step", "phase": "start"}, _obs(transient), _obs(settled),
              _end({"produce": {"count": 2}})]
    assert observed_transitions(events, 2) == {"hwm-advance"}  # the transient shrink is no step
    lowered = [_obs(start), _end({"alter_config": {"scope": "topic",
                                                   "config": {"min.insync.replicas": "3"}}}),
               _obs(transient), _end({"stop": {"broker": 3}})]
    assert "isr-below-min" in observed_transitions(lowered, 2)
    assert "isr-below-min" not in observed_transitions(lowered[:1] + lowered[2:], 2)


def test_a_build_whose_observer_cannot_see_the_elr() -> None:
    blind = [_obs(state(1, {1, 2, 3}, None))]
    assert {"elr-add", "elected-from-elr"} <= unobservable_transitions(blind)
    assert "isr-expand" not in unobservable_transitions(blind)


def test_coverage_per_build_counts_conforming_runs_and_names_the_gaps() -> None:
    def run(build: str, seen: tuple[str, ...], blind: tuple[str, ...] = ()) -> RunResult:
        return RunResult(Path(f"/r/{build}-{len(seen)}"), "s", build, "p",
                         baseline=("CONFORMS", "CONFORMS", "SAFE"), transitions=seen,
                         unobservable=blind)
    rep = MutationReport((), [run("4.3.1", ("fenced", "elr-add")), run("4.3.1", ("fenced",)),
                              run("3.7.2", ("fenced",), blind=("elr-add",))])
    table = rep.transition_coverage()
    assert table["fenced"] == {"3.7.2": 1, "4.3.1": 2}
    assert table["elr-add"] == {"3.7.2": None, "4.3.1": 1}
    assert table["hwm-backward"] == {"3.7.2": 0, "4.3.1": 0}
    text = summary(rep)
    assert "transitions on 3.7.2: 1/" in text and "unobservable: elr-add" in text
    md = "\n".join(transitions_markdown(rep))
    assert "| `elr-add` |" in md and "| - | 1 |" in md
    assert len(table) == len(TRANSITIONS)


def test_an_hwm_that_goes_back_behind_a_hidden_one_is_seen() -> None:
    events = [_obs(state(1, {1, 2, 3}, set(), hwm=5, fenced=set())),
              _obs(state(3, {3}, set(), hwm=None, fenced={1, 2})), _end({"kill": {"broker": 1}}),
              _obs(state(3, {3}, set(), hwm=3, fenced={1, 2})), _end({"consume": {}})]
    assert "hwm-backward" in observed_transitions(events, 2)
