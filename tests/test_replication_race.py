"""Replication racing the next step: records a leader holds above a frozen HWM may or may
not be on a follower when the next step's fault comes (World.fetch_floor,
reference/model/protocol/replication.py ``fetch_floors`` / ``unfetched``)."""

from __future__ import annotations

import pytest

from reference import ClusterSpec, Model, TopicSpec
from reference.model import steps as S

CLUSTER = ClusterSpec(brokers=(1, 2, 3), controllers=(100,),
                      broker_config={"auto.leader.rebalance.enable": "false"})
#: fuzz-s4343-5's assignment: broker 2 prefers, 3 then 1.
TOPIC = TopicSpec(name="t", replicas=(2, 3, 1), min_insync_replicas=2)


def _frozen_leader(profile: str, acks: str) -> Model:
    """fuzz-s4343-5 (4.3.1), shrunk: 2 killed, min ISR raised to 3 over ISR [1, 3], so
    leader 3's HWM is frozen at 0 when it takes 3 acks 0/1 records."""
    m = Model(profile, CLUSTER, TOPIC, seed=0)
    # kip966 may elect 1 or 3; the cluster elected 3 (assignment order).
    m.resolve(next(s for s in m.apply(S.Kill(2)).allowed if s.leader == 3))
    m.apply(S.AlterConfig("topic", {"min.insync.replicas": "3"}))
    m.apply(S.Produce(3, acks))
    return m


@pytest.mark.parametrize("profile", ["kafka-4.3", "kip966"])
@pytest.mark.parametrize("acks", ["0", "1"])
def test_a_leader_paused_before_its_follower_fetched_loses_them_on_return(
        profile: str, acks: str) -> None:
    m = _frozen_leader(profile, acks)
    assert {s.hwm for s in m.allowed()} == {0}
    assert [w.fetch_floor for w in m.branches] == [((1, 0),)]
    allowed = m.apply(S.Pause(3)).allowed
    assert {(s.leader, s.isr, s.hwm) for s in allowed} == {(1, frozenset({1}), 0)}
    # Broker 1 leads with 0..3 of the records (its fetches before the pause): nothing the
    # observer reads tells them apart while the HWM is frozen.
    assert sorted(w.broker(1).leo for w in m.branches) == [0, 1, 2, 3]
    m.apply(S.Restart(2))
    allowed = m.apply(S.Resume(3)).allowed
    # Once 3 is back, it truncates to what 1 has (OffsetsForLeaderEpoch), the ISR is whole
    # again and the HWM moves to 1's log end: 0 as observed on 4.3.1, where the model
    # said 3 only; 3 where 1 had fetched them all (it keeps them as leader).
    assert {s.isr for s in allowed} == {frozenset({1, 2, 3})}
    assert {s.hwm for s in allowed} == {0, 1, 2, 3}


def test_a_step_that_leaves_the_follower_fetching_closes_the_branches() -> None:
    m = _frozen_leader("kafka-4.3", "1")
    m.apply(S.Consume())
    assert len(m.branches) == 1 and m.branches[0].broker(1).leo == 3
    assert m.branches[0].fetch_floor == ()


def test_no_branch_where_the_hwm_moved_over_the_records() -> None:
    m = Model("kafka-4.3", CLUSTER, TOPIC, seed=0)
    m.apply(S.Produce(3, "1"))
    assert {s.hwm for s in m.allowed()} == {3}
    assert all(w.fetch_floor == () for w in m.branches)
    (s,) = m.apply(S.Kill(2)).allowed  # every follower had them: the HWM says so
    assert s.hwm == 3


def test_branches_are_bounded_under_traffic() -> None:
    from reference.model.protocol import unfetched
    m = _frozen_leader("kafka-4.3", "1")
    m.apply(S.Produce(200, "1"))
    (w,) = m.branches
    assert w.fetch_floor == ((1, 0),)  # it surely held only what it had before both
    opened = unfetched(w)
    assert [x.broker(1).leo for x in opened] == [203, 0]  # whole or not at all


def test_a_follower_may_fetch_a_deposed_leaders_records_before_it_is_elected() -> None:
    """fuzz-s45-21 (4.4.0), shape: leader 2 and follower 3 cut from the controller and from
    each other, 2 takes acks=1 records as a deposed leader (epoch 0 in its metadata);
    after the heal 3, still at epoch 0, fetched them from 2 before the controller elected
    3: the new leader has them and its HWM passes them (8). The model elected first."""
    from reference.model.state import CLIENT
    m = Model("kafka-4.3", CLUSTER, TOPIC, seed=0)
    m.apply(S.Kill(1))
    m.apply(S.Partition(((2, CLIENT), (3,), (100,))))
    m.apply(S.Produce(8, "1"))
    assert all(w.broker(3).leo == 0 for w in m.branches)  # cut from 2: nothing fetched
    allowed = m.apply(S.Heal()).allowed
    assert {(s.leader, s.hwm) for s in allowed} >= {(3, 8), (3, 0), (2, 8)}
    # A stale follower's records stay only where it is elected: 3 leading with HWM 0
    # (it had not fetched them) has made 2 truncate them.
    assert all(w.broker(2).leo == 0 for w in m.branches
               if w.partition.leader == 3 and w.partition_hwm() == 0)
