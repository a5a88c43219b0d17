"""The transitions the model says a schedule shows for sure (the hunt's directed schedules,
issue 35): every branch before to every branch after, the HWM carried over a step that hid
it, as harness/judge/transitions.py reads a run."""

from __future__ import annotations

from reference import Model, profile_for_build
from reference.model import steps as S
from reference.model.state import ClusterSpec, PartitionState, TopicSpec
from reference.search import fuzzgen
from reference.search.transitions import carry_hwm, certain_transitions

LAST_REPLICA_STANDING = (S.Produce(3, "all"), S.Isolate(2), S.Isolate(3), S.Produce(2, "1"),
                         S.Kill(1), S.LoseUnflushed(1, 1), S.Restart(1), S.Heal(),
                         S.Consume())


def model(version: tuple[int, int, int], elr: bool) -> Model:
    return Model(profile_for_build(version, elr), ClusterSpec(), TopicSpec(), elr_enabled=elr)


def state(leader: int, isr: tuple[int, ...], hwm: int | None) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=0, replicas=(1, 2, 3),
                          isr=frozenset(isr), elr=frozenset(), last_known_elr=frozenset(),
                          hwm=hwm, fenced=frozenset())


def test_a_transition_counts_only_when_every_branch_makes_it() -> None:
    a, b = state(1, (1, 2, 3), 3), state(2, (2, 3), 3)
    assert "elected-from-isr" in certain_transitions([a], [b], 2)
    # One branch before already had leader 2: the election is not certain.
    assert "elected-from-isr" not in certain_transitions([a, b], [b], 2)
    assert certain_transitions([], [b], 2) == frozenset()


def test_a_hidden_hwm_keeps_the_last_one_seen() -> None:
    seen, hidden, lower = state(1, (1, 2, 3), 6), state(-1, (1,), None), state(1, (1,), 1)
    carried = carry_hwm([seen], [hidden])
    assert [s.hwm for s in carried] == [6]
    assert "hwm-backward" in certain_transitions(carried, [lower], 2)


def test_the_last_replica_standing_goes_back_without_elr_and_not_with_it() -> None:
    without = fuzzgen.predicted_transitions(lambda: model((3, 9, 2), False),
                                            LAST_REPLICA_STANDING)
    assert {"hwm-backward", "leaderless", "hwm-frozen-under-min"} <= without
    with_elr = fuzzgen.predicted_transitions(lambda: model((4, 3, 1), True),
                                             LAST_REPLICA_STANDING)
    # With ELR the partition waits for an ELR member (or the unclean-shutdown replica's
    # recovery): leaderless, but the HWM never goes back in any branch.
    assert "leaderless" in with_elr and "hwm-backward" not in with_elr
