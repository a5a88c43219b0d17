"""The runner's seam: Model / Prediction / PartitionState, explain, resolve,
profiles, and the per-profile semantics of single steps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reference import (
    NO_LEADER,
    PROFILES,
    ClusterSpec,
    Model,
    PartitionState,
    TopicSpec,
    profile_for_build,
)
from reference.model import steps as S
from reference.releases.catalog import get_profile

CLUSTER = ClusterSpec(brokers=(1, 2, 3), controllers=(100,),
                      broker_config={"auto.leader.rebalance.enable": "false"})
TOPIC = TopicSpec(name="t", replicas=(1, 2, 3), min_insync_replicas=2)


def model(profile: str = "kafka-4.1", elr: bool = True, **topic: object) -> Model:
    t = replace(TOPIC, **topic) if topic else TOPIC  # type: ignore[arg-type]
    return Model(profile, CLUSTER, t, elr_enabled=elr, seed=0)


def test_profile_for_build() -> None:
    assert profile_for_build((3, 6, 2), False) == "pre-3.7"
    assert profile_for_build((3, 9, 1), True) == "pre-elr"
    assert profile_for_build((4, 0, 0), True) == "kafka-4.0-elr"
    assert profile_for_build((4, 0, 1), False) == "kafka-4.0-noelr"
    assert profile_for_build((4, 1, 0), True) == "kafka-4.1"
    assert profile_for_build((4, 3, 0), False) == "kafka-4.3"
    assert profile_for_build((4, 2, 2), True) == "kafka-4.1"
    assert profile_for_build((3, 7, 2), False) == "kafka-3.7"
    for p in ("kip966", "kip1303", "pre-elr", "kafka-4.0-elr", "kafka-4.0-noelr", "kafka-4.1"):
        assert p in PROFILES and PROFILES[p].cites
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("nope")


def test_partition_state_json_round_trip_and_wildcards() -> None:
    s = PartitionState(leader=2, leader_epoch=3, replicas=(1, 2, 3), isr=frozenset({2}),
                       elr=frozenset({1}), last_known_elr=frozenset(), hwm=5,
                       fenced=frozenset({1, 3}))
    j = s.to_json()
    assert j == {"leader": 2, "leader_epoch": 3, "replicas": [1, 2, 3], "isr": [2], "elr": [1],
                 "last_known_elr": [], "hwm": 5, "fenced": [1, 3]}
    assert PartitionState.from_json(j) == s
    unknown = PartitionState.from_json({"leader": -1, "replicas": [1, 2, 3], "isr": [2],
                                        "elr": None, "hwm": None})
    assert unknown.leader == NO_LEADER and unknown.elr is None
    assert s.matches(replace(s, elr=None, hwm=None, leader_epoch=None))
    assert s.differing_field(replace(s, elr=frozenset())) == "elr"
    assert s.differing_field(replace(s, leader=NO_LEADER)) == "leader"


def test_isolate_follower_fences_and_moves_it_to_nothing_above_min_isr() -> None:
    m = model()
    m.apply(S.Produce(3, "all"))
    p = m.apply(S.Isolate(3))
    (s,) = p.allowed
    assert (s.leader, s.isr, s.elr, s.hwm, s.fenced) == (1, frozenset({1, 2}), frozenset(), 3,
                                                          frozenset({3}))
    assert not p.hwm_may_move and p.must_survive == {"s0-r1", "s0-r2", "s0-r3"}


def test_isolate_leader_elects_next_in_assignment_order_and_bumps_epoch() -> None:
    m = model()
    m.apply(S.Produce(2, "all"))
    (s,) = m.apply(S.Isolate(1)).allowed
    assert (s.leader, s.leader_epoch, s.isr) == (2, 1, frozenset({2, 3}))
    (s,) = m.apply(S.Heal()).allowed
    assert (s.leader, s.isr, s.fenced) == (2, frozenset({1, 2, 3}), frozenset())


def test_kip966_leaves_the_isr_choice_open() -> None:
    m = model("kip966")
    p = m.apply(S.Isolate(1))
    assert {s.leader for s in p.allowed} == {2, 3}


def test_produce_acks_outcomes() -> None:
    m = model()
    assert m.apply(S.Produce(1, "all")).expected_acks == "acked"
    m.apply(S.Kill(2))
    m.apply(S.Kill(3))
    assert m.apply(S.Produce(1, "all")).expected_acks == "rejected"  # NOT_ENOUGH_REPLICAS
    p = m.apply(S.Produce(1, "1"))
    assert p.expected_acks == "acked" and not p.hwm_may_move
    assert "s0-r3" in p.at_risk and "s0-r3" not in p.may_see
    assert m.apply(S.Produce(1, "0")).expected_acks == "either"
    m.apply(S.Isolate(1))
    assert m.apply(S.Produce(1, "1")).expected_acks == "rejected"  # leader unreachable


def test_kill_with_elr_off_keeps_last_isr_member() -> None:
    for prof, elr in (("kafka-4.1", False), ("kafka-4.0-noelr", True), ("pre-elr", True)):
        m = model(prof, elr)
        m.apply(S.Kill(2))
        m.apply(S.Kill(3))
        (s,) = m.apply(S.Kill(1)).allowed
        assert (s.leader, s.isr, s.elr) == (NO_LEADER, frozenset({1}), frozenset()), prof
        (s,) = m.apply(S.Restart(2)).allowed
        assert s.leader == NO_LEADER
        (s,) = m.apply(S.Restart(1)).allowed
        assert s.leader == 1 and s.isr == frozenset({1, 2})


def test_unclean_restart_leaves_isr_and_elr() -> None:
    m = model("kafka-4.1")
    m.apply(S.Produce(1, "all"))
    m.apply(S.Stop(3))
    (s,) = m.apply(S.Kill(2)).allowed
    assert s.isr == frozenset({1}) and s.elr == frozenset({2})
    m.apply(S.Isolate(2))
    (s,) = m.apply(S.Restart(2)).allowed  # cannot register yet
    assert s.elr == frozenset({2}) and 2 in (s.fenced or set())
    assert m.branches[0].unclean_shutdowns == 0
    (s,) = m.apply(S.Heal()).allowed  # registers: unclean (no clean-shutdown file)
    assert m.branches[0].unclean_shutdowns == 1
    assert s.elr == frozenset() and s.isr == frozenset({1, 2})  # caught up, rejoined
    (s,) = m.apply(S.Restart(3)).allowed  # clean shutdown: back into the ISR
    assert m.branches[0].unclean_shutdowns == 1
    assert s.isr == frozenset({1, 2, 3}) and s.elr == frozenset()


def test_last_known_leader_elected_when_isr_and_elr_empty_4x() -> None:
    m = model("kafka-4.1")
    m.apply(S.Produce(1, "all"))
    m.apply(S.Kill(2))
    m.apply(S.Kill(3))
    (s,) = m.apply(S.Kill(1)).allowed
    assert s.last_known_elr == frozenset({1}) and s.elr == frozenset({1, 3})
    m.apply(S.Restart(3))  # unclean: leaves ELR
    (s,) = m.apply(S.Restart(1)).allowed  # unclean: ELR empty, last known leader alive
    assert s.leader == 1 and s.isr >= {1} and s.last_known_elr == frozenset()


def test_min_isr_change_clears_elr_per_profile() -> None:
    for prof, expect in (("kafka-4.1", frozenset()), ("kip966", frozenset({2}))):
        m = model(prof)
        m.apply(S.Kill(3))
        (s,) = m.apply(S.Kill(2)).allowed
        assert s.elr == frozenset({2}) and s.isr == frozenset({1})
        (s,) = m.apply(S.AlterConfig("topic", {"min.insync.replicas": "3"})).allowed
        # KIP: ELR removed only when new min ISR <= |ISR|; shipped: on any change
        assert s.elr == expect, prof
        (s,) = m.apply(S.AlterConfig("topic", {"min.insync.replicas": "1"})).allowed
        assert s.elr == frozenset(), prof


def test_reassignment_completes_and_drops_removed_replica() -> None:
    m = model("kafka-4.1")
    m.apply(S.Produce(2, "all"))
    (s,) = m.apply(S.Reassign((2, 3))).allowed
    assert s.replicas == (2, 3) and s.isr == frozenset({2, 3}) and s.leader == 2
    assert s.leader_epoch == 1
    m2 = model("kafka-4.1")
    (s,) = m2.apply(S.Reassign((1, 2))).allowed
    assert (s.replicas, s.leader, s.leader_epoch) == ((1, 2), 1, 1)
    # KIP-966: completes only with ISR >= min ISR (effective for the target RF: 2)
    m3 = model("kip966", min_insync_replicas=3)
    m3.apply(S.Kill(3))
    (s,) = m3.apply(S.Reassign((1, 2))).allowed
    assert s.replicas == (1, 2) and s.isr == frozenset({1, 2})
    (s,) = m3.apply(S.Reassign((1, 3))).allowed  # 3 is down: pending, replicas = union
    assert s.replicas == (1, 3, 2) and s.isr == frozenset({1, 2})


def test_explain_and_resolve() -> None:
    m = model("kip966")
    m.apply(S.Produce(2, "all"))
    p = m.apply(S.Isolate(1))
    obs = replace(p.allowed[0], leader=3, leader_epoch=None, elr=frozenset({1}), hwm=None)
    msg = m.explain(obs)
    assert msg is not None and msg.startswith("elr: predicted one of [{}], observed {1}")
    good = replace(obs, elr=None)
    assert m.explain(good) is None
    m.resolve(good, {"s0-r1": 0, "s0-r2": None})
    assert {w.partition.leader for w in m.branches} == {3}
    assert m.branches[0].acked_all() == {"s0-r1"}
    assert m.must_survive() == {"s0-r1"}
    assert "leader=3" in m.describe()


def test_elected_from_elr_then_acked_records_survive() -> None:
    m = model("kafka-4.1")
    m.apply(S.Produce(3, "all"))
    m.apply(S.Stop(2))
    m.apply(S.Stop(3))
    p = m.apply(S.Kill(1))
    (s,) = p.allowed
    assert s.leader == NO_LEADER and s.elr == frozenset({1, 3})
    assert s.last_known_elr == frozenset({1})
    p = m.apply(S.Restart(3))
    (s,) = p.allowed
    assert s.leader == 3 and s.isr == frozenset({3}) and s.hwm == 3
    assert p.must_survive == {"s0-r1", "s0-r2", "s0-r3"}
    assert m.violations() == []


def test_deterministic_for_a_seed() -> None:
    def trace(seed: int) -> list[object]:
        m = Model("kip966", CLUSTER, TOPIC, seed=seed)
        out: list[object] = []
        for st in (S.Produce(2, "all"), S.Isolate(1), S.Kill(2), S.Heal(), S.Restart(2)):
            out.append(m.apply(st))
        return out
    assert trace(5) == trace(5)


def test_oneway_cut_follower_to_leader_is_lag_not_fencing() -> None:
    m = model("kafka-4.1")
    m.apply(S.Produce(1, "all"))
    (s,) = m.apply(S.Cut(3, 1, "oneway")).allowed
    # Not lagging yet: the leader has nothing 3 lacks, so 3 stays in the ISR (real
    # brokers behave so: replica.lag.time.max.ms counts only while the follower is behind).
    assert s.isr == frozenset({1, 2, 3}) and s.fenced == frozenset()
    (s,) = m.apply(S.Produce(1, "all")).allowed
    assert s.isr == frozenset({1, 2}) and s.fenced == frozenset()  # now it lags: shrunk
    assert m.branches[0].broker(3).leo == 1  # 3 cannot fetch
    (s,) = m.apply(S.Heal()).allowed
    assert s.isr == frozenset({1, 2, 3}) and m.branches[0].broker(3).leo == 2


@pytest.mark.parametrize("cut_before_election", [True, False])
def test_a_new_leader_drops_a_follower_it_never_heard_from(cut_before_election: bool) -> None:
    """fuzz-s1128-26 on 4.3.1: with no record produced, follower 3, cut from 2 before 2
    took the leadership, left the ISR ("Out of sync replicas: (brokerId: 3, endOffset:
    -1 ...)"); a follower cut after it fetched from the new leader stays."""
    m = model("kafka-4.3")
    if cut_before_election:
        m.apply(S.Cut(2, 3))
    (s,) = m.apply(S.Kill(1)).allowed
    if cut_before_election:
        assert (s.leader, s.isr, s.elr) == (2, frozenset({2}), frozenset({3}))
    else:
        assert (s.leader, s.isr) == (2, frozenset({2, 3}))
        (s,) = m.apply(S.Cut(2, 3)).allowed
        assert s.isr == frozenset({2, 3}) and s.elr == frozenset()


def test_a_follower_the_new_leader_never_heard_from_does_not_move_its_hwm() -> None:
    """Its log end is unknown to the new leader (-1), so the leader's HWM waits for it and,
    once it left the ISR under min ISR, stays where the leader learned it: acked records
    above it are on the log but hidden (new-leader-hwm-lag), not committed through 3."""
    m = model("kafka-4.3")
    m.apply(S.Produce(2, "all"))
    m.apply(S.Cut(2, 3))
    allowed = m.apply(S.Kill(1)).allowed
    assert {(s.leader, s.isr, s.elr) for s in allowed} == {(2, frozenset({2}), frozenset({3}))}
    assert {s.hwm for s in allowed} == {0, 1, 2}
    assert m.branches[0].broker(2).heard_from == frozenset()


def test_cut_from_controller_fences_but_keeps_replicating() -> None:
    m = model("kafka-4.1")
    (s,) = m.apply(S.Cut(3, 100, "oneway")).allowed
    assert s.fenced == frozenset({3}) and s.isr == frozenset({1, 2})
    m.apply(S.Produce(1, "all"))
    assert m.branches[0].broker(3).leo == 1  # still fetching from the leader


def test_controller_quorum_majority() -> None:
    cluster = replace(CLUSTER, controllers=(100, 101, 102))
    m = Model("kafka-4.1", cluster, TOPIC)
    allowed = m.apply(S.Isolate(100)).allowed  # 101 or 102 leads the quorum: nobody fenced
    assert {s.controller for s in allowed} == {101, 102}
    assert all(s.fenced == frozenset() and s.leader == 1 for s in allowed)
    allowed = m.apply(S.Isolate(101)).allowed  # no quorum: no metadata change at all
    assert {s.controller for s in allowed} == {-1}
    assert all(s.fenced == frozenset() and s.isr == frozenset({1, 2, 3}) for s in allowed)
    m.apply(S.Heal())
    (s,) = {replace(x, controller=None, quorum_elected=None)
            for x in m.apply(S.Kill(2)).allowed}
    assert s.fenced == frozenset({2}) and s.isr == frozenset({1, 3})


def _lagging_leader(profile: str) -> tuple[Model, list[str]]:
    """fuzz-s431-13: leader 2 (ISR [2, 3]) acks 4 records and is killed at once."""
    m = model(profile)
    m.apply(S.Stop(1))
    m.apply(S.Cut(1, 3))
    ids = sorted(m.apply(S.Produce(4, "all")).must_survive)
    m.apply(S.Kill(2))
    return m, ids


@pytest.mark.parametrize("profile", ["kafka-4.3", "kip966"])
def test_a_read_may_miss_acked_records_only_above_a_lagging_new_leaders_hwm(
        profile: str) -> None:
    from harness.judge.compare import consume_mismatch
    from harness.scenario.steps.kind import StepOutcome
    m, ids = _lagging_leader(profile)
    pred = m.apply(S.Consume())
    first_three = StepOutcome(consumed=list(enumerate(ids[:3])))
    why = consume_mismatch(pred, first_three)
    # Shipped Kafka (new-leader-hwm-lag): broker 3 leads with the HWM it learned as a
    # follower, 3 here; the 4th record is on its log, above the HWM, not lost.
    assert (why is None) == (profile != "kip966"), why
    assert ids[3] in pred.must_survive
    # Whatever the profile, a read missing a record below every branch's HWM is a loss.
    assert consume_mismatch(pred, StepOutcome(consumed=list(enumerate(ids[1:]))))
    assert m.unread(frozenset(ids[:1])) == frozenset(ids[:1])
    assert m.unread(frozenset(ids[3:])) == (frozenset(ids[3:]) if profile == "kip966"
                                            else frozenset())


def test_a_read_narrows_a_lagging_leader_to_the_hwm_it_shows() -> None:
    m, ids = _lagging_leader("kafka-4.3")
    m.apply(S.Consume())
    assert {s.hwm for s in m.allowed()} == {0, 1, 2, 3, 4}
    no_hwm = replace(m.allowed()[0], hwm=None)  # OFFSET_NOT_AVAILABLE while it lags
    m.resolve(no_hwm, read=frozenset(ids[:3]))
    assert {s.hwm for s in m.allowed()} == {3}
    # A read no branch predicts (a gap) keeps every branch: the judge reports it instead.
    m2, ids2 = _lagging_leader("kafka-4.3")
    m2.apply(S.Consume())
    m2.resolve(no_hwm, read=frozenset(ids2[1:]))
    assert len({s.hwm for s in m2.allowed()}) == 5


def test_acks_all_records_after_one_that_cannot_commit_never_reach_the_log() -> None:
    # fuzz-s1125-1 on 4.3.1: one record per request, one in flight; the first record is
    # appended and answered only after the ISR shrinks below min ISR; the rest are then
    # rejected before the append (NOT_ENOUGH_REPLICAS).
    m = model("kafka-4.3")
    m.apply(S.Cut(1, 3))
    m.apply(S.Produce(2, "all"))
    m.apply(S.Cut(1, 2))
    pred = m.apply(S.Produce(3, "all"))
    assert pred.expected_acks == "rejected"
    (w,) = m.branches
    assert w.broker(1).leo == 3 and w.partition.isr == frozenset({1})
    (healed,) = m.apply(S.Heal()).allowed
    assert healed.hwm == 3 and healed.isr == frozenset({1, 2, 3})
    # Where the ISR stays at min ISR every record is appended and acknowledged in turn.
    m2 = model("kafka-4.3")
    m2.apply(S.Cut(1, 3))
    assert m2.apply(S.Produce(3, "all")).expected_acks == "acked"
    assert m2.branches[0].broker(1).leo == 3


def test_a_produce_right_after_an_isr_shrink_may_reach_the_leaders_log_unacked() -> None:
    # fuzz-s1126-4 on 4.3.1: the observer saw ISR [2] (the leader's metadata cache) while
    # the leader's partition still held [2, 3], so the next acks=all record was appended;
    # not acked, it was committed once the ISR grew back (HWM 13 where the model said 12).
    m = model("kafka-4.3")
    m.apply(S.Stop(2))
    m.apply(S.Isolate(3))
    assert m.allowed()[0].isr == frozenset({1})
    pred = m.apply(S.Produce(2, "all"))
    assert pred.expected_acks == "rejected" and not pred.must_survive
    assert sorted(w.broker(1).leo for w in m.branches) == [0, 1]
    m.apply(S.Heal())
    assert {s.hwm for s in m.apply(S.Restart(2)).allowed} == {0, 1}
    # One step later the leader has applied the shrink: the append is refused.
    m2 = model("kafka-4.3")
    for step in (S.Stop(2), S.Isolate(3), S.Consume(), S.Produce(2, "all")):
        m2.apply(step)
    assert [w.broker(1).leo for w in m2.branches] == [0]


def test_the_lagging_hwm_window_stays_open_through_a_network_step_that_changes_nothing() -> None:
    # fuzz-s1128-23 on 4.3.1 (2/2): produce, a cut to a stopped broker (settled at once),
    # then the leader killed: the new leader kept the HWM it learned before the produce.
    def run(between: list[S.Step]) -> set[int | None]:
        m = model("kafka-4.3")
        m.apply(S.Stop(1))
        m.apply(S.Produce(4, "all"))
        for step in between:
            m.apply(step)
        m.apply(S.Kill(2))
        return {s.hwm for s in m.allowed()}
    assert run([S.Cut(1, 3)]) == run([]) == {0, 1, 2, 3, 4}
    # A read takes a fetch round of its own: the followers have learned the HWM.
    assert run([S.Consume()]) == {4}


@pytest.mark.parametrize("quiet", [S.Await(), S.Consume()], ids=["await", "consume"])
def test_the_controller_may_rebalance_a_leadership_during_a_step_that_changes_nothing(
        quiet: S.Step) -> None:
    """six-partitions-auto-rebalance on 4.3.1: the preferred replica was back in the ISR
    and the partition still led by another broker when the step settled; the controller's
    periodic preferred election (auto.leader.rebalance.enable) moved it during the next
    await. The model allowed that only in steps that settle, so the await DIVERGED."""
    cluster = replace(CLUSTER, broker_config={"auto.leader.rebalance.enable": "true"})
    m = Model("kafka-4.3", cluster, TOPIC, elr_enabled=True, seed=0)
    m.apply(S.Produce(2, "all"))
    m.apply(S.Isolate(1))
    healed = m.apply(S.Heal())
    assert {s.leader for s in healed.allowed} == {1, 2}  # rebalanced in time, or not yet
    m.resolve(next(s for s in healed.allowed if s.leader == 2))
    assert {s.leader for s in m.apply(quiet).allowed} == {1, 2}
    # Rebalancing off (the harness's preset): nothing moves during a quiet step.
    off = model("kafka-4.3")
    off.apply(S.Produce(2, "all"))
    off.apply(S.Isolate(1))
    off.apply(S.Heal())
    assert {s.leader for s in off.apply(quiet).allowed} == {2}
