"""Topics of several partitions (issue 12): the format, the lanes a run is judged as, and
how the lanes' verdicts and checks make the run's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.judge.axes import AxisVerdict
from harness.judge.lanes import Lane, lane_events, lanes, merge_axes, merge_checks
from harness.scenario.loader import ScenarioError, parse_scenario, spread_assignment
from reference.model import steps as S

SIX = """\
version: 1
name: six
cluster: {brokers: 3, controllers: 1}
topic:
  name: t
  replicas: [1, 2, 3]
  partitions: 6
  min_insync_replicas: 2
steps:
  - produce: {count: 2, acks: all}
  - kill: {broker: 2}
  - produce: {count: 1, partition: 4}
  - await: {leader: 3, partition: 1}
  - consume: {}
"""


def test_a_spread_assignment_puts_each_broker_first_in_turn() -> None:
    assert spread_assignment((1, 2, 3), (1, 2, 3), 4) == (
        (1, 2, 3), (2, 3, 1), (3, 1, 2), (1, 2, 3))
    # Brokers outside partition 0's replicas join the cycle after them.
    assert spread_assignment((2, 1), (1, 2, 3), 3) == ((2, 1), (1, 3), (3, 2))


def test_partitions_and_the_steps_that_name_one_load() -> None:
    sc = parse_scenario(SIX)
    assert sc.topic.partitions == 6 and sc.topic.replicas == (1, 2, 3)
    assert sc.topic.replicas_of(4) == (2, 3, 1)
    assert [s.partition for s in sc.steps] == [None, None, 4, 1, None]
    assert sc.steps[2].targets(4) and not sc.steps[2].targets(0)


def _two(topic: str) -> str:
    return (SIX.replace("  replicas: [1, 2, 3]\n  partitions: 6\n", topic)
            .replace("partition: 4}", "partition: 1}"))


def test_an_explicit_assignment_is_taken_as_written() -> None:
    sc = parse_scenario(_two("  assignment: [[3, 1, 2], [1, 2, 3]]\n"))
    assert sc.topic.partitions == 2 and sc.topic.replicas == (3, 1, 2)
    assert sc.topic.replicas_of(1) == (1, 2, 3)


@pytest.mark.parametrize("topic, words", [
    ("  replicas: [1, 2, 3]\n  partitions: 25\n", ("topic.partitions", "<= 24")),
    ("  replicas: [1, 2, 3]\n  partitions: 0\n", ("topic.partitions", ">= 1")),
    ("  assignment: [[1, 2, 3], [1, 2]]\n", ("same number of replicas",)),
    ("  assignment: [[1, 2, 3], [1, 2, 4]]\n", ("topic.assignment[1][2]", "not a broker")),
    ("  assignment: []\n", ("lists no partition",)),
    ("  partitions: 3\n  assignment: [[1, 2, 3], [2, 3, 1]]\n", ("3 partitions", "lists 2")),
    ("  replicas: [1, 2, 3]\n  assignment: [[2, 3, 1], [1, 2, 3]]\n",
     ("topic.replicas", "differs from topic.assignment[0]")),
])
def test_bad_partitions_are_refused_with_the_reason(topic: str, words: tuple[str, ...]) -> None:
    text = _two(topic)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_a_partition_must_exist_and_only_steps_on_partitions_name_one() -> None:
    with pytest.raises(ScenarioError, match=r"steps\[2\].produce.partition: 6 is not a partition "
                                            r"of t \(it has 6: 0..5\)"):
        parse_scenario(SIX.replace("partition: 4}", "partition: 6}"))
    with pytest.raises(ScenarioError, match=r"steps\[1\].kill.partition: kill acts on brokers"):
        parse_scenario(SIX.replace("kill: {broker: 2}", "kill: {broker: 2, partition: 1}"))


def test_records_of_a_step_on_every_partition_count_once_per_partition() -> None:
    with pytest.raises(ScenarioError, match="10002 records in all"):
        parse_scenario(SIX.replace("count: 2, acks: all", "count: 1667, acks: all"))


def test_a_lane_is_the_scenario_on_one_partition() -> None:
    sc = parse_scenario(SIX)
    four = lanes(sc)[4]
    assert four.label == "t-4" and four.scenario.topic.replicas == (2, 3, 1)
    assert four.scenario.topic.partitions == 1
    kinds = [s.kind for s in four.scenario.steps]
    assert kinds == ["produce", "kill", "produce", "await", "consume"]
    assert four.scenario.steps[3].step == S.Await()  # the await names partition 1
    assert four.scenario.steps[2].mapping == {"produce": {"count": 1}}
    zero = lanes(sc)[0].scenario
    assert zero.steps[2].kind == "await" and zero.steps[2].step == S.Await()
    assert lanes(sc)[1].scenario.steps[3].step.expect == {"leader": 3}


def test_a_one_partition_scenario_is_its_own_lane() -> None:
    sc = parse_scenario(SIX.replace("  partitions: 6\n", "").replace(", partition: 4", "")
                        .replace(", partition: 1", ""))
    (only,) = lanes(sc)
    assert only.scenario is sc
    events = [{"kind": "observation", "partition": 0}, {"kind": "fault"}]
    assert lane_events(events, sc, only) == events


def test_a_lane_sees_its_partition_events_and_the_cluster_events() -> None:
    sc = parse_scenario(SIX)
    lane = lanes(sc)[1]
    events = [
        {"kind": "step", "index": 0, "step": {"produce": {"count": 2, "record_ids": [
            "a", "b", "c", "d"]}}},
        {"kind": "produce", "record_id": "a", "partition": 0},
        {"kind": "produce", "record_id": "c", "partition": 1},
        {"kind": "produce", "record_id": "d", "partition": 1},
        {"kind": "fault", "action": "kill", "params": {"node": 2}},
        {"kind": "step", "index": 2, "step": {"produce": {"count": 1, "partition": 4,
                                                          "record_ids": ["e"]}}},
        {"kind": "step", "index": 3, "step": {"await": {"leader": 3, "partition": 1}}},
        {"kind": "observation", "partition": 0, "state": {}},
        {"kind": "observation", "partition": 1, "state": {}},
    ]
    seen = lane_events(events, sc, lane)
    assert seen[0]["step"] == {"produce": {"count": 2, "record_ids": ["c", "d"]}}
    assert [e["record_id"] for e in seen if e["kind"] == "produce"] == ["c", "d"]
    assert {"kind": "fault", "action": "kill", "params": {"node": 2}} in seen
    assert seen[4]["step"] == {"await": {}}  # a produce to partition 4
    assert seen[5]["step"] == {"await": {"leader": 3}}
    assert [e["partition"] for e in seen if e["kind"] == "observation"] == [1]


def _axes(release: str, kip: str, safety: str, why: str = "") -> dict[str, AxisVerdict]:
    trace = [{"rule": "leader-in-isr", "offset": 7}]
    return {"release": AxisVerdict("release", release, why, list(trace)),
            "kip": AxisVerdict("kip", kip, why),
            "safety": AxisVerdict("safety", safety, why, [{"rule": "r"}] if why else [])}


def test_the_run_takes_the_worst_lane_on_each_axis_and_names_its_partition() -> None:
    sc = parse_scenario(SIX)
    ls = lanes(sc)
    merged = merge_axes([(ls[0], _axes("CONFORMS", "DEVIATES", "SAFE", "")),
                         (ls[3], _axes("CONFORMS", "CONFORMS", "UNSAFE", "lost r1"))])
    assert merged["safety"].verdict == "UNSAFE" and merged["safety"].reason == "t-3: lost r1"
    assert merged["safety"].details == [{"rule": "r", "partition": 3}]
    assert merged["kip"].verdict == "DEVIATES"
    # The trace is the whole metadata log's: every lane has it, the run lists it once.
    assert merged["release"].details == [{"rule": "leader-in-isr", "offset": 7}]
    # A clean run stays clean.
    clean = merge_axes([(ls[0], _axes("CONFORMS", "CONFORMS", "SAFE")),
                        (ls[1], _axes("CONFORMS", "CONFORMS", "SAFE"))])
    assert [v.verdict for v in clean.values()] == ["CONFORMS", "CONFORMS", "SAFE"]
    # A reason every lane gives (a build that lacks a feature) names no partition.
    gap = merge_axes([(ls[0], _axes("UNSUPPORTED", "UNSUPPORTED", "UNSUPPORTED", "no elr")),
                      (ls[1], _axes("UNSUPPORTED", "UNSUPPORTED", "UNSUPPORTED", "no elr"))])
    assert gap["release"].reason == "no elr"


def test_a_check_fails_if_it_fails_on_any_partition() -> None:
    ok = [{"name": "acked_lost", "ok": True, "details": []}]
    lost = [{"name": "acked_lost", "ok": False, "details": [{"record_id": "x"}]}]
    merged = merge_checks([(Lane(0, None), ok), (Lane(2, None), lost)])
    assert merged == [{"name": "acked_lost", "ok": False,
                       "details": [{"record_id": "x", "partition": 2}]}]


def test_predict_shows_every_partition(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    from harness.cli import main
    path = tmp_path / "six.yaml"
    path.write_text(SIX)
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert "initial t-5: leader=3" in out
    # Broker 2 led t-1 and t-4: killed, they elect 3 (the next in their assignment's ISR).
    assert out.count("t-1 state:\n    leader=3 epoch=1") >= 1


def test_a_step_on_every_partition_gives_each_lane_its_own_records() -> None:
    from harness.judge.lockstep import Lockstep
    from harness.run.runner import Runner

    sc = parse_scenario(SIX)
    ls = Lockstep(sc, "kafka-4.3", True, lambda pred, outcome: None, Runner.model_for)
    ids = [f"r{i}" for i in range(12)]
    steps = ls.steps_at(0, sc.steps[0].step, ids)
    assert steps[0].record_ids == ("r0", "r1") and steps[5].record_ids == ("r10", "r11")
    steps = ls.steps_at(2, sc.steps[2].step, ["x"])
    assert steps[4].record_ids == ("x",) and steps[0] == S.Await()
    assert [ln.label for ln in ls.targeted(2)] == ["t-4"]
    steps = ls.steps_at(1, sc.steps[1].step, [])
    assert all(s == S.Kill(broker=2) for s in steps)  # a broker step: every lane's


def test_lanes_that_read_alike_are_named_together() -> None:
    from harness.judge.lockstep import Lockstep
    from harness.run.runner import Runner

    ls = Lockstep(parse_scenario(SIX), "kafka-4.3", True, lambda p, o: None, Runner.model_for)
    assert ls.grouped(["a", "b", "a", "a", "b", "c"]) == "t-{0,2,3}: a; t-{1,4}: b; t-5: c"


TWO_TOPICS = """\
version: 1
name: two
cluster: {brokers: 3, controllers: 1}
topics:
  - {name: a, replicas: [1, 2, 3], partitions: 2, min_insync_replicas: 2}
  - {name: b, replicas: [3, 2], min_insync_replicas: 1,
     config: {unclean.leader.election.enable: "true"}}
steps:
  - produce: {count: 1}
  - produce: {count: 2, topic: b}
  - kill: {broker: 3}
  - await: {leader: 2, topic: b, partition: 0}
"""


def test_several_topics_each_with_its_partitions_and_configs() -> None:
    sc = parse_scenario(TWO_TOPICS)
    assert [t.name for t in sc.every_topic()] == ["a", "b"] and sc.topic.name == "a"
    ls = lanes(sc)
    assert [ln.label for ln in ls] == ["a-0", "a-1", "b-0"]
    b0 = ls[2].scenario
    assert b0.topic.replicas == (3, 2) and b0.topic.min_insync_replicas == 1
    assert dict(b0.topic.config) == {"unclean.leader.election.enable": "true"}
    assert [s.kind for s in b0.steps] == ["produce", "produce", "kill", "await"]
    assert [s.kind for s in ls[0].scenario.steps] == ["produce", "await", "kill", "await"]
    assert ls[0].scenario.steps[3].step == S.Await()


@pytest.mark.parametrize("edit, words", [
    (("produce: {count: 2, topic: b}", "produce: {count: 2, topic: c}"),
     ("steps[1].produce.topic", "no topic 'c' (topics: a, b)")),
    (("await: {leader: 2, topic: b, partition: 0}", "await: {leader: 2, partition: 0}"),
     ("steps[3].await.partition", "several topics: name the partition's topic")),
    (("- {name: b,", "- {name: a,"), ("topics[1].name", "listed twice")),
    (("  - kill: {broker: 3}\n", "  - alter_config: {scope: topic, config: {x.y: '1'}}\n"),
     ("steps[2]", "scope topic", "several topics", "topic: NAME")),
    (("  - kill: {broker: 3}\n",
      "  - alter_config: {scope: cluster, topic: a, config: {x.y: '1'}}\n"),
     ("steps[2]", "scope cluster changes every topic", "leave topic out")),
    (("  - kill: {broker: 3}\n",
      "  - alter_config: {scope: topic, topic: a, partition: 0, config: {x.y: '1'}}\n"),
     ("steps[2].alter_config.partition", "acts on a topic or the cluster, not on a partition")),
    (("  - kill: {broker: 3}\n", "  - kill: {broker: 3, topic: a}\n"),
     ("steps[2].kill.topic", "not on a partition")),
    (("topics:\n", "topic: {name: c, replicas: [1], min_insync_replicas: 1}\ntopics:\n"),
     ("topics", "not both")),
])
def test_bad_topics_are_refused_with_the_reason(edit: tuple[str, str],
                                                words: tuple[str, ...]) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(TWO_TOPICS.replace(*edit))
    assert all(w in str(e.value) for w in words), str(e.value)


def test_a_lane_of_one_topic_leaves_the_other_topics_events_out() -> None:
    sc = parse_scenario(TWO_TOPICS)
    b0 = lanes(sc)[2]
    events = [{"kind": "produce", "record_id": "x", "topic": "a", "partition": 0},
              {"kind": "produce", "record_id": "y", "topic": "b", "partition": 0},
              {"kind": "step", "index": 1, "step": {"produce": {"count": 2, "topic": "b",
                                                                "record_ids": ["y"]}}},
              {"kind": "step", "index": 0, "step": {"produce": {"count": 1,
                                                                "record_ids": ["x", "z", "y"]}}}]
    seen = lane_events(events, sc, b0)
    assert [e.get("record_id") for e in seen[:1]] == ["y"]
    assert seen[1]["step"] == {"produce": {"count": 2, "record_ids": ["y"]}}
    assert seen[2]["step"] == {"produce": {"count": 1, "record_ids": ["y"]}}


def test_a_write_on_every_partition_runs_the_partitions_at_once() -> None:
    # Each partition's produce waits until all six have started: run one after another
    # they would never meet (a refused acks=all write waits out the delivery timeout on
    # each partition, so the step would take the sum of them).
    import threading
    from types import SimpleNamespace

    from harness.cluster.builds import Build, Features
    from harness.run.runner import Runner
    from harness.scenario.steps import Target

    features = Features(elr=True, elr_default_on=True, describe_topic_partitions=True,
                        hwm_rule=True, unclean_recovery=False, kip1303=False,
                        previous_broker_epoch=True)
    runner = Runner(parse_scenario(SIX),
                    Build("4.3.1", "maven:4.3.1", Path("/nonexistent"), features))
    all_started = threading.Barrier(6, timeout=10)
    written: list[Target] = []

    def produce(topic: str, count: int, acks: str, partition: int, record_ids: list[str]
                ) -> list[Any]:
        all_started.wait()
        written.append(Target(topic, partition))
        return [SimpleNamespace(record_id=r, offset=0, error=None) for r in record_ids]

    session = SimpleNamespace(workload=SimpleNamespace(produce=produce))
    steps = runner.lockstep.steps_at(0, runner.scenario.steps[0].step,
                                     [f"r{i}" for i in range(12)])
    outcomes = runner._execute(session, 0, "produce", steps)  # type: ignore[arg-type]
    assert sorted(t.partition for t in written) == [0, 1, 2, 3, 4, 5]
    assert [sorted(o.acks) for o in outcomes][5] == ["r10", "r11"]
    # A step on one partition runs only there.
    steps = runner.lockstep.steps_at(2, runner.scenario.steps[2].step, ["x"])
    all_started = threading.Barrier(1)
    outcomes = runner._execute(session, 2, "produce", steps)  # type: ignore[arg-type]
    assert [sorted(o.acks) for o in outcomes] == [[], [], [], [], ["x"], []]


def test_a_config_change_of_one_topic_runs_once_and_the_other_topics_lanes_await() -> None:
    from types import SimpleNamespace

    from harness.judge.lockstep import Lockstep
    from harness.run.runner import Runner

    text = TWO_TOPICS.replace(
        "  - kill: {broker: 3}\n",
        "  - alter_config: {scope: topic, topic: a, config: {min.insync.replicas: '3'}}\n"
        "  - kill: {broker: 3}\n")
    sc = parse_scenario(text)
    step = sc.steps[2]
    assert step.topic == "a" and step.names_lanes()
    ls = Lockstep(sc, "kafka-4.3", True, lambda pred, outcome: None, Runner.model_for)
    steps = ls.steps_at(2, step.step, [])
    assert steps[0] == steps[1] == S.AlterConfig("topic", {"min.insync.replicas": "3"})
    assert steps[2] == S.Await()  # topic b's lane: its state must hold
    assert [ln.label for ln in ls.targeted(2)] == ["a-0"]
    ls.apply(steps)
    assert {w.min_isr for w in ls.lanes[0].model.branches} == {3}
    assert {w.min_isr for w in ls.lanes[2].model.branches} == {1}  # b's own, unchanged
    # It runs once, on topic a.
    runner = Runner.__new__(Runner)
    runner.scenario, runner.lockstep = sc, ls
    altered: list[tuple[str, str, dict[str, str]]] = []
    admin = SimpleNamespace(alter_config=lambda obs, scope, topic, cfg:
                            altered.append((scope, topic, dict(cfg))))
    import harness.scenario.steps.controller as controller
    real, controller.admin = controller.admin, admin  # type: ignore[assignment]
    try:
        runner._execute(SimpleNamespace(observer=None), 2, "alter_config", steps)  # type: ignore[arg-type]
    finally:
        controller.admin = real
    assert altered == [("topic", "a", {"min.insync.replicas": "3"})]
