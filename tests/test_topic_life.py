"""Topics deleted and created again (delete_topic, create_topic): the loader's order, the
model's rules (reference/model/topics.py), the observer's view of a deleted topic and the
data checks' incarnations."""

from __future__ import annotations

from typing import Any

import pytest

from harness.client.observe.partitions import PartitionViews, absent_view
from harness.judge import datachecks
from harness.judge.axes import sampled_findings
from harness.scenario.loader import ScenarioError, parse_scenario
from reference import Model
from reference.model import topics as T
from reference.model.state import PartitionState

TWO = """version: 1
name: life
cluster: {brokers: 3, controllers: 1, elr: true}
topics:
  - {name: t, replicas: [1, 2, 3], min_insync_replicas: 3, config: {retention.ms: "60000"}}
  - {name: u, replicas: [2, 3, 1], min_insync_replicas: 2}
steps:
"""


def load(*steps: str) -> Any:
    return parse_scenario(TWO + "".join(f"  - {s}\n" for s in steps), "life.yaml")


def test_create_topic_carries_the_declared_assignment_and_configs() -> None:
    sc = load("delete_topic: {topic: t}", "create_topic: {topic: t}")
    step = sc.steps[1].step
    assert isinstance(step, T.CreateTopic)
    assert step.assignment == ((1, 2, 3),)
    assert step.config == {"min.insync.replicas": "3", "retention.ms": "60000"}
    assert step.params() == {}  # what the file says: the rest is the declaration's


@pytest.mark.parametrize(("steps", "error"), [
    (["delete_topic: {}"], r"life.yaml:8: steps\[0\]: delete_topic acts on one topic"),
    (["delete_topic: {topic: t}", "delete_topic: {topic: t}"],
     r":9: steps\[1\]: topic t is deleted already \(steps\[0\]\)"),
    (["create_topic: {topic: t}"], r":8: steps\[0\]: topic t exists"),
    (["delete_topic: {topic: t}", "produce: {count: 1, topic: t}"],
     r":9: steps\[1\]: topic t is deleted \(steps\[0\]\): produce cannot act on it"),
    (["delete_topic: {topic: t}", "consume: {}"], r"or name a topic that exists"),
    (["delete_topic: {topic: t}",
      "alter_config: {scope: topic, topic: t, config: {min.insync.replicas: '2'}}"],
     r"alter_config cannot act on it"),
    (["delete_topic: {topic: x}"], r"no topic 'x'"),
    (["delete_topic: {topic: t, now: true}"], r"now"),
])
def test_the_loader_keeps_a_topics_life_in_order(steps: list[str], error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        load(*steps)


def test_an_await_may_expect_a_deleted_topics_absence_and_the_other_topic_goes_on() -> None:
    sc = load("delete_topic: {topic: t}", "await: {topic: t, replicas: [], isr: []}",
              "produce: {count: 1, topic: u}", "create_topic: {topic: t}",
              "produce: {count: 1, topic: t}")
    assert [s.kind for s in sc.steps][-2:] == ["create_topic", "produce"]


def test_a_scenario_with_traffic_may_delete_and_create_a_topic_again() -> None:
    """The traffic checks judge each incarnation apart (harness/traffic/incarnations.py):
    the loader no longer refuses traffic across a topic's deletion (it did before)."""
    text = (TWO + "  - delete_topic: {topic: t}\n  - create_topic: {topic: t}\n"
            "traffic:\n  producers: [{count: 1, rate: 10, acks: all, topic: t}]\n"
            "  consumers: [{count: 1, mode: assign, topic: t}]\n")
    sc = parse_scenario(text, "life.yaml")
    assert [s.kind for s in sc.steps][-2:] == ["delete_topic", "create_topic"]


ONE = """version: 1
name: one
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 3}
steps:
"""


def predict(*steps: str) -> Any:
    sc = parse_scenario(ONE + "".join(f"  - {s}\n" for s in steps))
    model = Model("kafka-4.3", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
    return [model.apply(s.step) for s in sc.steps][-1], model


def test_a_deleted_topic_has_no_replicas_leader_or_records() -> None:
    """ReplicationControlManager.replay(RemoveTopicRecord): the topic, its partitions and
    its configs are gone; the records with them, by request."""
    pred, model = predict("produce: {count: 2}", "kill: {broker: 3}", "delete_topic: {}")
    (state,) = pred.allowed
    assert (state.replicas, state.leader, state.isr, state.elr) == ((), -1, frozenset(),
                                                                   frozenset())
    assert state.fenced == frozenset({3})  # the brokers go on as they were
    assert pred.must_survive == frozenset()
    assert model.topic_deleted()
    assert all(w.config.topic_min_isr is None for w in model.branches)
    assert model.violations() == []  # a deleted partition has no invariant to keep


def test_a_topic_created_again_leads_on_its_first_active_replica_with_no_elr() -> None:
    """ReplicationControlManager.createTopic: ISR = the active replicas in assignment
    order, leader the first of them (buildPartitionRegistration), epoch 0, no ELR."""
    pred, model = predict("produce: {count: 2}", "kill: {broker: 1}", "delete_topic: {}",
                          "create_topic: {}")
    (state,) = pred.allowed
    assert (state.leader, state.leader_epoch, state.isr, state.elr, state.hwm) == (
        2, 0, frozenset({2, 3}), frozenset(), 0)
    assert not model.topic_deleted()
    assert all(w.config.topic_min_isr == 3 for w in model.branches)  # as declared again


def test_a_topic_created_again_with_every_replica_fenced_stays_absent() -> None:
    """createTopic refuses (INVALID_REPLICA_ASSIGNMENT) when no replica is active."""
    sc = parse_scenario("""version: 1
name: one
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [2], min_insync_replicas: 1}
steps:
  - kill: {broker: 2}
  - delete_topic: {}
  - create_topic: {}
""")
    model = Model("kafka-4.3", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
    pred = [model.apply(s.step) for s in sc.steps][-1]
    assert {s.replicas for s in pred.allowed} == {()}
    assert model.topic_deleted()


def test_a_replica_that_restarts_after_the_deletion_registers() -> None:
    """The stale ELR index's scenario: the model registers the former ELR member."""
    pred, _ = predict("produce: {count: 2}", "kill: {broker: 3}",
                      "alter_config: {scope: topic, config: {min.insync.replicas: '2'}}",
                      "delete_topic: {}", "restart: {broker: 3}")
    assert {s.fenced for s in pred.allowed} == {frozenset()}


def test_brokers_that_do_not_hold_a_topic_give_an_absent_view() -> None:
    class Topic:
        name, error_code, partitions = "t", 3, []

    class Response:
        topics = [Topic()]

    view = PartitionViews._dtp_view(1, Response(), "t", 0)
    assert view == absent_view()
    state = PartitionState.from_json({**view, "hwm": None, "fenced": []})
    assert state.replicas == () and state.leader == -1


def ev(seq: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"seq": seq, "kind": kind, **fields}


def test_records_of_a_deleted_incarnation_are_not_lost_from_the_new_one() -> None:
    events = [
        ev(1, "ack", record_id="a", topic="t", partition=0, acks="all", offset=0),
        ev(2, "observation", topic="t", partition=0, state={"hwm": 1}),
        ev(3, "topic_deleted", topic="t"),
        ev(4, "observation", topic="t", partition=0, state={"hwm": 1}),  # a stale broker
        ev(5, "topic_created", topic="t"),
        ev(6, "ack", record_id="b", topic="t", partition=0, acks="all", offset=0),
        ev(7, "observation", topic="t", partition=0, state={"hwm": 1}),
        ev(8, "consume", record_id="b", topic="t", partition=0, offset=0),
        ev(9, "read", topic="t", partition=0, records=1, complete=True),
    ]
    checks = {c.name: c for c in datachecks.run_checks(events)}
    assert checks["acked_lost"].ok and checks["hwm_regression"].ok
    # Without the creation event the same history loses "a": the check can fail.
    no_birth = [e for e in events if e["kind"] != "topic_created"]
    no_birth = [e for e in no_birth if e["kind"] != "topic_deleted"]
    assert not {c.name: c for c in datachecks.run_checks(no_birth)}["acked_lost"].ok


def test_records_acked_after_a_deleted_topics_last_read_are_not_lost() -> None:
    events = [
        ev(1, "ack", record_id="a", topic="t", partition=0, acks="all", offset=0),
        ev(2, "consume", record_id="a", topic="t", partition=0, offset=0),
        ev(3, "read", topic="t", partition=0, records=1, complete=True),
        ev(4, "ack", record_id="b", topic="t", partition=0, acks="all", offset=1),
        ev(5, "topic_deleted", topic="t"),
    ]
    assert {c.name: c for c in datachecks.run_checks(events)}["acked_lost"].ok
    kept = events[:-1]  # not deleted: b is missing from the last read, lost
    assert not {c.name: c for c in datachecks.run_checks(kept)}["acked_lost"].ok


def test_sampled_hwm_starts_again_for_a_topic_created_again() -> None:
    def sample(seq: int, hwm: int | None, replicas: list[int]) -> dict[str, Any]:
        return ev(seq, "sample", topic="t", partition=0,
                  state={"leader": 1, "replicas": replicas, "isr": [1], "hwm": hwm})

    events = [sample(1, 3, [1]), ev(2, "topic_created", topic="t"), sample(3, 0, [1])]
    assert sampled_findings(events) == []
    assert [f["invariant"] for f in sampled_findings([events[0], events[2]])] == [
        "HwmMonotonic"]


def test_a_steps_notes_reach_its_end_event_once() -> None:
    from harness.run.runner.step import _notes
    from harness.scenario.steps.kind import StepOutcome

    refused = StepOutcome(note="CreateTopics refused: INVALID_REPLICA_ASSIGNMENT")
    assert _notes([refused, refused, StepOutcome()]) == [refused.note]
    assert _notes([StepOutcome()]) == []


def test_a_declared_divergence_must_be_the_one_named_when_it_says_matching() -> None:
    from harness.judge.axes import axis_as_expected

    expected = {"verdict": "DIVERGES", "reason": "known bug", "matching": "fenced: predicted"}
    assert axis_as_expected("release", "DIVERGES", expected,
                            "t-0: step 6 await: fenced: predicted one of [{}], observed {3}")
    # Another divergence (the deletion not done) is not the declared one.
    assert not axis_as_expected("release", "DIVERGES", expected,
                                "t-0: step 4 delete_topic: leader: predicted one of [-1]")
    assert axis_as_expected("release", "DIVERGES", {"verdict": "DIVERGES", "reason": "x"},
                            "anything")
    text = ONE + "  - consume: {}\nexpect:\n  - {axis: safety, verdict: SAFE, reason: x, " \
        "matching: y}\n"
    with pytest.raises(ScenarioError, match=r"expect\[0\]\.matching: matching names text"):
        parse_scenario(text, "m.yaml")


def test_generated_schedules_delete_and_create_topics_in_order() -> None:
    """fuzz makes delete_topic and create_topic: nothing acts on the partition while the
    topic is deleted, the recovery tail creates it again, and every schedule loads."""
    from reference.model.steps import step_to_dict
    from reference.search import fuzzgen

    weights = {"delete_topic": 4, "create_topic": 2, "produce": 3, "kill": 2, "restart": 2,
               "alter_config": 1, "consume": 1}
    cfg = fuzzgen.GenConfig(length=14, weights=weights)
    seen: set[str] = set()
    for seed in range(12):
        steps = fuzzgen.generate(lambda: Model("kafka-4.3", *_spec()), seed, cfg)
        deleted = False
        for s in steps:
            seen.add(s.kind)
            if s.kind in ("produce", "consume", "alter_config"):
                assert not deleted, (seed, [x.kind for x in steps])
            deleted = {"delete_topic": True, "create_topic": False}.get(s.kind, deleted)
        assert not deleted and steps[-1].kind == "consume"
        text = ONE + "".join(f"  - {yaml_of(step_to_dict(s))}\n" for s in steps)
        parse_scenario(text, "generated.yaml")  # the loader takes what fuzz writes
    assert {"delete_topic", "create_topic"} <= seen


def _spec() -> Any:
    sc = parse_scenario(ONE + "  - consume: {}\n")
    return sc.cluster_spec(), sc.topic_spec()


def yaml_of(mapping: dict[str, Any]) -> str:
    import json
    return json.dumps(mapping)


def test_a_topic_created_again_under_min_isr_breaks_no_kip_invariant() -> None:
    """Re-created with broker 2 stopped, min ISR 3: ISR [1, 3] and no ELR from birth. The
    KIP's |ISR ∪ ELR| >= min ISR is for partitions that were whole once (hypothesis found
    the schedule: test_reference_invariants)."""
    _, model = predict("stop: {broker: 2}", "delete_topic: {}", "create_topic: {}",
                       "produce: {count: 1}")
    assert model.violations() == []
    assert all(w.reconfigured for w in model.branches)


def test_a_topic_created_again_has_no_older_min_isr_for_its_leader_to_act_on() -> None:
    """The deleted topic read min ISR from the cluster (1); the new one is born with 3. Its
    leader learns both together: acks=all with ISR [1, 3] is refused, broker 2 in the ELR
    (no branch acting on min ISR 1, World.leader_min_isr_view)."""
    pred, model = predict("cut: {src: 1, dst: 2, direction: both}", "delete_topic: {}",
                          "create_topic: {}", "produce: {count: 3, acks: all}")
    assert {(s.isr, s.elr, s.hwm) for s in pred.allowed} == {
        (frozenset({1, 3}), frozenset({2}), 0)}
    assert model.violations() == []


def test_a_topic_is_not_created_again_on_a_broker_that_is_unregistered() -> None:
    """validateManualPartitionAssignment refuses an assignment naming a broker that is not
    registered (4.3.1, the hunt's fuzz-s4343-4: "The manual partition assignment includes
    broker 3, but no such broker is registered."); after its restart it may."""
    pred, model = predict("kill: {broker: 3}", "delete_topic: {}", "unregister: {broker: 3}",
                          "create_topic: {}")
    assert {s.replicas for s in pred.allowed} == {()} and model.topic_deleted()
    pred, model = predict("kill: {broker: 3}", "delete_topic: {}", "unregister: {broker: 3}",
                          "restart: {broker: 3}", "create_topic: {}")
    assert {s.isr for s in pred.allowed} == {frozenset({1, 2, 3})}


def test_the_kip_judge_cites_the_deviations_of_every_build_a_run_upgrades_to() -> None:
    """A cluster born on 3.9 and upgraded to 4.3.1 decides under 4.3's rules; the kip axis
    explains them with 4.3's cited deviations too (a run diverged on the KIP axis for want
    of last-known-elr-is-last-leader: /work/runs/m43d/...-a8dee9, re-judged CONFORMS/DEVIATES)."""
    from harness.judge.axes import KipJudge, upgrade_profiles
    from reference.releases.catalog import get_profile

    sc = parse_scenario(ONE + '  - upgrade: {broker: 1, version: "4.3.1"}\n'
                        '  - upgrade: {controller: 100, version: "4.3.1"}\n')
    assert [p.name for p in upgrade_profiles(sc, True)] == ["kafka-4.3"]
    birth = get_profile("pre-elr")
    alone = KipJudge(lambda p: None, birth, True, lambda a, b: None)
    both = KipJudge(lambda p: None, birth, True, lambda a, b: None, upgrade_profiles(sc, True))
    names = {d.id for d in both.available} - {d.id for d in alone.available}
    assert "last-known-elr-is-last-leader" in names


UNNAMED = """version: 1
name: life1
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - delete_topic: {}
  - create_topic: {}
  - create_topic: {topic: u, replicas: [2, 3, 1], partitions: 1, min_insync_replicas: 2}
"""


def test_an_unnamed_create_topic_is_the_declared_topics_alone() -> None:
    """Found by the log-directory hunt of 2026-11-28 (seed 4531): `create_topic: {}` of the
    declared topic reached every lane, so a topic a later step creates was predicted to exist
    from that step on (its leader observed -1: DIVERGES)."""
    from harness.judge.lanes import UNTOUCHED, lane_step
    sc = parse_scenario(UNNAMED, "life1.yaml")
    assert [s.topic for s in sc.steps[:2]] == ["t", "t"]
    assert lane_step(sc.steps[1], "u", 0).step is UNTOUCHED
    assert lane_step(sc.steps[1], "t", 0).step is not UNTOUCHED
