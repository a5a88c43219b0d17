"""create_topic of a topic the scenario does not declare and add_partitions
(CreatePartitions): the loader's plan of which partitions exist at each step, the model's
rules for a new partition (reference/model/topics.py: ReplicationControlManager.createTopic,
createPartitions, StripedReplicaPlacer), the lanes and the observer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.client.observe.partitions import PartitionViews, absent_view
from harness.judge.compare import model_for
from harness.judge.lanes import lanes
from harness.scenario.loader import ScenarioError, parse_scenario
from reference.model import topics as T

HEAD = """version: 1
name: grown
cluster: {brokers: 3, controllers: 1, elr: true}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""
NEW_U = ("create_topic: {topic: u, assignment: [[1, 2, 3], [2, 3, 1]], "
         "min_insync_replicas: 3, config: {retention.ms: '60000'}}")


def load(*steps: str, head: str = HEAD) -> Any:
    return parse_scenario(head + "".join(f"  - {s}\n" for s in steps), "grown.yaml")


def run(*steps: str, head: str = HEAD) -> dict[str, Any]:
    """Each lane's model after the steps, by label (``u-1``)."""
    sc = load(*steps, head=head)
    out = {}
    for ln in lanes(sc):
        model = model_for(ln.scenario, "kafka-4.3", True)
        for s in ln.scenario.steps:
            model.last = model.apply(s.step)
        out[ln.label] = model
    return out


def states(model: Any) -> set[tuple[Any, ...]]:
    return {(s.replicas, s.leader, s.leader_epoch, s.isr, s.elr) for s in model.last.allowed}


# -- the loader -----------------------------------------------------------------------------

def test_a_new_topic_exists_from_its_step_on_with_its_replicas_and_configs() -> None:
    sc = load("produce: {count: 1}", NEW_U, "produce: {count: 1, topic: u, partition: 1}")
    (t, u) = sc.every_topic()
    assert (u.name, u.assignment, u.min_insync_replicas, dict(u.config)) == (
        "u", ((1, 2, 3), (2, 3, 1)), 3, {"retention.ms": "60000"})
    assert u.born == (1, 1) and t.born == ()
    assert not sc.steps[0].targets(0, "u")  # a step before it does not act on u
    assert sc.steps[2].targets(1, "u")
    step = sc.steps[1].step
    assert isinstance(step, T.CreateTopic)
    assert step.config == {"min.insync.replicas": "3", "retention.ms": "60000"}


def test_add_partitions_grows_the_topic_and_later_steps_name_the_new_ones() -> None:
    sc = load("produce: {count: 1}", "add_partitions: {count: 3}",
              "produce: {count: 1, partition: 2}")
    (t,) = sc.every_topic()
    assert t.partitions == 3 and t.born == (None, 1, 1) and t.placed == frozenset({1, 2})
    assert not sc.steps[0].targets(1, "t") and sc.steps[2].targets(2, "t")
    add = sc.steps[1].step
    assert isinstance(add, T.AddPartitions)
    assert (add.first, add.rf, len(add.choices)) == (1, 3, 6)


@pytest.mark.parametrize(("steps", "error"), [
    (["produce: {count: 1, topic: u}", NEW_U],
     r"grown.yaml:6: steps\[0\].produce.topic: no topic 'u' \(topics: t\): a topic "
     "create_topic makes is named only after that step"),
    ([NEW_U, NEW_U], r":7: steps\[1\]: topic u exists \(created by steps\[0\]\)"),
    (["create_topic: {topic: t, replicas: [1], min_insync_replicas: 1}"],
     r"topic t exists \(declared\)"),
    (["create_topic: {topic: u}"], r"no topic 'u': a topic the scenario does not declare"),
    (["create_topic: {topic: u, min_insync_replicas: 1}"], r"needs its replicas"),
    (["create_topic: {topic: u, replicas: [1, 4], min_insync_replicas: 1}"],
     r"steps\[0\].create_topic.replicas\[1\]: 4 is not a broker"),
    (["create_topic: {topic: u, assignment: [[1], [7]], min_insync_replicas: 1}"],
     r"7 is not a broker"),
    (["create_topic: {topic: u, replication_factor: 4, min_insync_replicas: 1}"],
     r"replication factor 4 is more than the 3 broker\(s\)"),
    (["create_topic: {topic: u, replication_factor: 2, replicas: [1, 2], "
      "min_insync_replicas: 1}"], r"replication_factor .* or the replicas, not both"),
    (["create_topic: {topic: u, replicas: [1], min_insync_replicas: 1, "
      "config: {min.insync.replicas: '2'}}"], r"set min.insync.replicas with"),
    (["create_topic: {topic: u, replicas: [1], min_insync_replicas: 0}"],
     r"min_insync_replicas"),
    (["create_topic: {topic: u, replicas: [1], min_insync_replicas: 1, "
      "config: {retention.ms: [1]}}"], r"config"),
    (["create_topic: {topic: u, replicas: [1], min_insync_replicas: 1, colour: red}"],
     r"colour"),
    (["add_partitions: {count: 1}"], r"count"),
    (["add_partitions: {count: 3}", "add_partitions: {count: 3}"],
     r"steps\[1\]: topic t has 3 partition\(s\): count 3 is not an increase"),
    (["add_partitions: {count: 3, assignment: [[1, 2, 3]]}"],
     r"2 new partition\(s\) but the assignment lists 1"),
    (["add_partitions: {count: 2, assignment: [[1, 2]]}"], r"needs 3"),
    (["add_partitions: {count: 2, assignment: [[1, 2, 5]]}"], r"5 is not a broker"),
    (["produce: {count: 1, partition: 1}", "add_partitions: {count: 2}"],
     r"steps\[0\].produce.partition: 1 is not a partition of t \(it has 1"),
    (["delete_topic: {}", "add_partitions: {count: 2}"],
     r"topic t is deleted \(steps\[0\]\): add_partitions cannot act on it"),
    ([NEW_U, "add_partitions: {count: 3}"], r"add_partitions acts on one topic"),
])
def test_bad_growth_is_refused_with_its_line(steps: list[str], error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        load(*steps)


def test_too_many_placements_for_the_model_are_refused() -> None:
    head = HEAD.replace("brokers: 3", "brokers: 5")
    with pytest.raises(ScenarioError, match="60 placements of 3 replicas on 5 brokers"):
        load("create_topic: {topic: u, replication_factor: 3, min_insync_replicas: 1}",
             head=head)


def test_a_scenario_with_traffic_grows_no_topic_yet() -> None:
    text = (HEAD + "  - add_partitions: {count: 2}\n"
            "traffic:\n  producers: [{count: 1, rate: 10, acks: all}]\n")
    with pytest.raises(ScenarioError, match="traffic cannot create a topic or add partitions"):
        parse_scenario(text, "grown.yaml")


# -- the model ------------------------------------------------------------------------------

def test_a_partition_created_by_a_step_is_absent_before_it() -> None:
    models = run("produce: {count: 2}", NEW_U)
    assert models["u-0"].branches[0].deleted is False
    models = run("produce: {count: 2}", NEW_U, "delete_topic: {topic: u}")
    sc = load("produce: {count: 2}", NEW_U)
    lane = next(ln for ln in lanes(sc) if ln.label == "u-1")
    model = model_for(lane.scenario, "kafka-4.3", True)
    assert all(w.deleted for w in model.branches)  # before step 0
    pred = model.apply(lane.scenario.steps[0].step)  # the produce on t: u-1 untouched
    assert {(s.replicas, s.leader) for s in pred.allowed} == {((), -1)}


def test_a_new_topics_partition_leads_on_its_first_active_replica_with_no_elr() -> None:
    """createTopic: ISR = the active replicas of the assignment in its order, the first
    leads (buildPartitionRegistration), epoch 0, no ELR."""
    models = run("kill: {broker: 2}", NEW_U)
    assert states(models["u-1"]) == {((2, 3, 1), 3, 0, frozenset({1, 3}), frozenset())}
    assert states(models["u-0"]) == {((1, 2, 3), 1, 0, frozenset({1, 3}), frozenset())}
    assert all(w.config.topic_min_isr == 3 for w in models["u-0"].branches)


def test_a_manual_assignment_is_refused_as_one_request() -> None:
    """createTopic returns one ApiError for the topic: a partition whose replicas are all
    fenced leaves every partition uncreated, also those with active replicas."""
    models = run("kill: {broker: 2}",
                 "create_topic: {topic: u, assignment: [[1], [2]], min_insync_replicas: 1}")
    assert all(w.deleted for w in models["u-0"].branches)
    assert all(w.deleted for w in models["u-1"].branches)


def test_added_partitions_are_built_as_a_new_topics_with_its_configs_as_they_are() -> None:
    """createPartitions: each new partition as buildPartitionRegistration makes it, with
    the topic's min ISR as altered since its creation."""
    models = run("kill: {broker: 3}",
                 "alter_config: {scope: topic, config: {min.insync.replicas: '3'}}",
                 "add_partitions: {count: 2, assignment: [[3, 2, 1]]}")
    assert states(models["t-1"]) == {((3, 2, 1), 2, 0, frozenset({1, 2}), frozenset())}
    assert all(w.config.topic_min_isr == 3 for w in models["t-1"].branches)
    assert all(w.partition.leader_epoch == 0 for w in models["t-0"].branches)  # untouched


def test_a_new_partition_with_one_active_replica_is_created() -> None:
    models = run("kill: {broker: 2}", "kill: {broker: 3}",
                 "add_partitions: {count: 3, assignment: [[1, 2, 3], [2, 3, 1]]}")
    assert states(models["t-2"]) == {((2, 3, 1), 1, 0, frozenset({1}), frozenset())}
    models = run("kill: {broker: 2}", "kill: {broker: 3}",
                 "create_topic: {topic: u, assignment: [[1, 2], [2, 3]], "
                 "min_insync_replicas: 1}")
    assert all(w.deleted for w in models["u-0"].branches)  # u-1 had no active replica


def test_the_placer_puts_replicas_on_unfenced_brokers_while_there_are_enough() -> None:
    """StripedReplicaPlacer: unfenced brokers only while there are rf of them; a random
    start, so every such placement is allowed and the observation picks one."""
    models = run("kill: {broker: 3}",
                 "create_topic: {topic: u, replication_factor: 2, min_insync_replicas: 1}")
    assert {s[0] for s in states(models["u-0"])} == {(1, 2), (2, 1)}


def test_the_placer_leads_with_an_unfenced_broker_when_too_few_are_unfenced() -> None:
    models = run("kill: {broker: 2}", "kill: {broker: 3}",
                 "create_topic: {topic: u, replication_factor: 2, min_insync_replicas: 1}")
    assert {s[0] for s in states(models["u-0"])} == {(1, 2), (1, 3)}
    assert {s[3] for s in states(models["u-0"])} == {frozenset({1})}


def test_the_placer_refuses_when_every_broker_is_fenced() -> None:
    head = HEAD.replace("replicas: [1, 2, 3], min_insync_replicas: 2",
                        "replicas: [1], min_insync_replicas: 1")
    models = run("kill: {broker: 1}", "kill: {broker: 2}", "kill: {broker: 3}",
                 "create_topic: {topic: u, replication_factor: 1, min_insync_replicas: 1}",
                 head=head)
    assert all(w.deleted for w in models["u-0"].branches)


def test_add_partitions_without_assignment_branches_over_the_placers_choices() -> None:
    models = run("add_partitions: {count: 2}")
    assert len({s[0] for s in states(models["t-1"])}) == 6
    assert states(models["t-0"]) == {((1, 2, 3), 1, 0, frozenset({1, 2, 3}), frozenset())}


# -- the observer ---------------------------------------------------------------------------

class _P:
    def __init__(self, index: int) -> None:
        self.partition_index, self.error_code = index, 0


class _T:
    name, error_code = "t", 0
    partitions = [_P(0)]


class _R:
    topics = [_T()]


def test_a_partition_not_created_yet_is_seen_absent() -> None:
    assert PartitionViews._dtp_view(1, _R(), "t", 1) == absent_view()
    assert PartitionViews._metadata_view(1, _R(), _R(), "t", 1) == absent_view()


# -- generated schedules --------------------------------------------------------------------

def test_generated_schedules_create_a_new_topic_and_add_partitions_that_load() -> None:
    """fuzz makes create_topic of a new topic (once) and add_partitions, and the loader
    takes every schedule; once a topic was created by a step nothing that would have to
    name the declared topic is made (delete_topic, add_partitions, topic alter_config)."""
    from reference import Model
    from reference.model.steps import step_to_dict
    from reference.search import fuzzgen

    sc0 = load("consume: {}")
    weights = {"create_topic": 3, "add_partitions": 3, "delete_topic": 1, "produce": 3,
               "kill": 2, "restart": 2, "alter_config": 1, "consume": 1}
    cfg = fuzzgen.GenConfig(length=12, weights=weights)
    seen: list[Any] = []
    for seed in range(10):
        steps = fuzzgen.generate(
            lambda: Model("kafka-4.3", sc0.cluster_spec(), sc0.topic_spec(), elr_enabled=True),
            seed, cfg)
        seen += steps
        created = False
        for s in steps:
            if created:
                assert s.kind not in ("delete_topic", "add_partitions", "alter_config"), seed
            created = created or (isinstance(s, T.CreateTopic) and bool(s.topic))
        text = HEAD + "".join(f"  - {json.dumps(step_to_dict(s))}\n" for s in steps)
        sc = parse_scenario(text, "generated.yaml")
        assert tuple(x.step for x in sc.steps) == steps
    assert any(isinstance(s, T.CreateTopic) and s.topic and s.placed_rf for s in seen)
    assert any(isinstance(s, T.CreateTopic) and s.topic and s.assignment for s in seen)
    assert any(isinstance(s, T.AddPartitions) and s.assignment for s in seen)
    assert any(isinstance(s, T.AddPartitions) and not s.assignment for s in seen)


def test_an_existing_partitions_lane_sees_add_partitions_as_an_empty_await() -> None:
    sc = load("add_partitions: {count: 3, assignment: [[2, 3, 1], [3, 1, 2]]}")
    by = {ln.label: ln.scenario.steps[0] for ln in lanes(sc)}
    assert by["t-0"].kind == "await"
    assert isinstance(by["t-2"].step, T.AddPartitions)
    assert by["t-2"].step.choices == ((3, 1, 2),)  # its own row of the assignment


def test_no_unclean_election_is_generated_once_partitions_were_created_by_steps() -> None:
    """The unclean-loss rule reads the schedule's model, of the declared topic's first
    partitions only: after add_partitions or a new topic no unclean election (ElectLeaders,
    or unclean.leader.election.enable on) is generated, nor partitions added with it on."""
    from reference import Model
    from reference.model import steps as S
    from reference.search import fuzzgen
    from reference.search.generators.generator import Track

    sc0 = load("consume: {}")
    model = Model("kafka-4.3", sc0.cluster_spec(), sc0.topic_spec(), elr_enabled=True)
    cfg = fuzzgen.GenConfig()
    for track in (Track(added_partitions=1), Track(new_topic=True)):
        assert "created by steps" in str(
            fuzzgen.why_invalid(S.Elect("unclean"), model, track, cfg))
    on = S.AlterConfig("topic", {"unclean.leader.election.enable": "true"})
    assert "partitions were added" in str(
        fuzzgen.why_invalid(on, model, Track(added_partitions=1), cfg))
    model.apply(on)
    assert "unclean election is on" in str(
        fuzzgen.why_invalid(T.AddPartitions(2, ((2, 3, 1),)), model, Track(), cfg))
