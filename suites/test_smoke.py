"""Smoke chaos suite: the foundation works on a real cluster (issue 2, item 10)."""

from __future__ import annotations

import pytest

from harness.cluster.topology import CLIENT as CLIENT_ID
from harness.infra.wait import until
from harness.nemesis import logfiles
from suites.helpers import TOPIC, create_topic, state, wait_state

pytestmark = [pytest.mark.chaos, pytest.mark.key]


def acked_offsets(acks):
    return {a.record_id: a.offset for a in acks if a.error is None}


def test_isolate_leader_new_leader_from_isr_no_acked_loss(chaos_cluster, faults, observer,
                                                          workload):
    create_topic(observer, [1, 2, 3], min_isr=2)
    first = workload.produce(TOPIC, 20, acks="all")
    assert all(a.error is None for a in first), first

    faults.isolate(1)
    after = wait_state(observer, lambda s: s["leader"] in (2, 3) and 1 not in s["isr"],
                       "new leader from the ISR once broker 1 is fenced")
    assert set(after["isr"]) <= {2, 3} and after["leader"] in after["isr"]
    second = workload.produce(TOPIC, 10, acks="all")
    assert all(a.error is None for a in second), second

    faults.heal()
    wait_state(observer, lambda s: set(s["isr"]) == {1, 2, 3}, "broker 1 back in the ISR")
    visible = {rid for _, rid in workload.consume_all(TOPIC)}
    lost = set(acked_offsets(first + second)) - visible
    assert not lost, f"acked records lost: {sorted(lost)}"


def test_cut_follower_from_leader_shrinks_isr(chaos_cluster, faults, observer, workload):
    create_topic(observer, [1, 2, 3], min_isr=2)
    faults.cut(3, 1)  # follower 3 loses the leader; the controller still hears it
    workload.produce(TOPIC, 5, acks="1")
    shrunk = wait_state(observer, lambda s: 3 not in s["isr"], "leader drops 3 from the ISR")
    assert shrunk["leader"] == 1 and set(shrunk["isr"]) == {1, 2}
    assert 3 not in (shrunk["fenced"] or []), "broker 3 can still reach the controller"
    faults.heal()
    wait_state(observer, lambda s: set(s["isr"]) == {1, 2, 3}, "broker 3 rejoins after heal")


def test_hard_kill_and_restart_rejoins_isr(chaos_cluster, faults, observer, workload):
    create_topic(observer, [1, 2, 3], min_isr=2)
    workload.produce(TOPIC, 5, acks="all")
    faults.kill(3)
    wait_state(observer, lambda s: 3 not in s["isr"] and 3 in s["fenced"],
               "broker 3 fenced and out of the ISR")
    assert all(a.error is None for a in workload.produce(TOPIC, 5, acks="all"))
    faults.restart(3)
    back = wait_state(observer, lambda s: set(s["isr"]) == {1, 2, 3}, "broker 3 back in ISR")
    assert back["hwm"] == 10


@pytest.mark.cluster(brokers=3, controllers=1)
def test_lose_unflushed_restarts_unclean_with_chosen_log_end(chaos_cluster, faults, observer,
                                                             workload, kafka_build):
    create_topic(observer, [1, 2, 3], min_isr=3)
    acks = workload.produce(TOPIC, 10, acks="all")
    assert all(a.error is None for a in acks)
    elr_on = state(observer)["elr"] is not None and kafka_build.features.elr

    faults.kill(3)
    before = wait_state(observer, lambda s: 3 not in s["isr"], "broker 3 out of the ISR")
    if elr_on and before["elr"]:
        assert 3 in before["elr"], "ISR fell below min ISR: the fenced member joins the ELR"
    faults.lose_unflushed(3, TOPIC, 0, offset=4)
    pdir = logfiles.partition_dir(chaos_cluster.data_dir(3), TOPIC, 0)
    assert logfiles.log_end_offset(pdir) == 4

    faults.cut(3, 1)  # keep it from catching up, so its own log end is what we see
    faults.cut(3, 2)
    faults.restart(3)
    after = wait_state(observer, lambda s: 3 not in s["fenced"], "broker 3 registered again")
    assert logfiles.log_end_offset(pdir) == 4
    assert 3 not in after["isr"]
    assert 3 not in (after["elr"] or []), "an unclean shutdown removes the broker from the ELR"
    assert state(observer)["hwm"] == 10



def test_observer_reads_quorum_and_fenced_state_while_a_broker_is_isolated(
        chaos_cluster, faults, observer):
    quorum = observer.quorum()
    assert quorum["leader"] == 100 and set(quorum["voters"]) == {100}
    assert set(quorum["observers"]) == {1, 2, 3}
    faults.isolate(2)  # broker 2's own view goes stale; the observer must not ask it
    states = until(observer.broker_states, lambda b: b[2] and not b[1] and not b[3],
                   "broker 2 fenced, the others not", 30)
    assert states == {1: False, 2: True, 3: False}


def test_latency_on_the_client_link_delays_acks_and_heal_removes_it(chaos_cluster, faults,
                                                                    observer, workload):
    import time
    create_topic(observer, [1, 2, 3], min_isr=2)
    workload.produce(TOPIC, 1, acks="1")  # connections and metadata are warm
    faults.latency([(CLIENT_ID, 1)], ms=400)
    t0 = time.monotonic()
    acks = workload.produce(TOPIC, 1, acks="1")
    delayed = time.monotonic() - t0
    assert acks[0].error is None and delayed >= 0.4, delayed  # one round trip at least
    faults.heal()
    assert workload.produce(TOPIC, 1, acks="1")[0].error is None

