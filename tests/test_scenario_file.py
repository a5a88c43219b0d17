"""Scenario files: every fixture loads; bad files name the file, the line, the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario import ScenarioError, load_scenario, parse_scenario
from reference import steps as S

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"

GOOD = """\
version: 1
name: ok
seed: 4
profile: kafka-4.1
requires:
  min_version: "4.0.0"
  features: [elr]
cluster:
  brokers: 3
  controllers: 1
  broker_config: {auto.leader.rebalance.enable: false}
topic:
  name: t
  replicas: [1, 2, 3]
  min_insync_replicas: 2
  config: {unclean.leader.election.enable: "false"}
steps:
  - produce: {count: 5, acks: all}
  - produce: {acks: 1}
  - isolate: {node: 100}
  - partition: {groups: [[1, 100], [2, 3]]}
  - cut: {src: 2, dst: 1, direction: oneway}
  - heal: {}
  - kill: {broker: 3}
  - lose_unflushed: {broker: 3, offset: 2}
  - stop: {broker: 2}
  - restart: {broker: 3}
  - alter_config: {scope: topic, config: {min.insync.replicas: "3"}}
  - elect: {type: designated, broker: 1}
  - elect: {type: preferred}
  - reassign: {replicas: [3, 2, 1]}
  - await: {leader: null, isr: [2, 3], elr: [], hwm: 5, timeout_s: 30}
  - consume: {}
"""


def test_every_fixture_loads() -> None:
    files = sorted(SCENARIOS.glob("*.yaml"))
    assert files
    for f in files:
        sc = load_scenario(f)
        assert sc.steps and sc.name
        assert set(sc.topic.replicas) <= set(sc.cluster.broker_ids)


def test_good_file_maps_steps_to_reference_objects() -> None:
    sc = parse_scenario(GOOD, "good.yaml")
    assert (sc.version, sc.name, sc.seed, sc.profile) == (1, "ok", 4, "kafka-4.1")
    assert sc.requires.min_version == (4, 0, 0) and sc.requires.features == ("elr",)
    assert sc.cluster.broker_ids == (1, 2, 3) and sc.cluster.controller_ids == (100,)
    assert sc.cluster.broker_config == {"auto.leader.rebalance.enable": "false"}
    kinds = [s.kind for s in sc.steps]
    assert kinds[0] == "produce" and kinds[-1] == "consume"
    assert sc.steps[0].step == S.Produce(5, "all")
    assert sc.steps[1].step == S.Produce(1, "1")
    assert sc.steps[3].step == S.Partition(((1, 100), (2, 3)))
    assert sc.steps[4].step == S.Cut(2, 1, "oneway")
    assert sc.steps[7].step == S.LoseUnflushed(3, 2)
    assert sc.steps[11].step == S.Elect("designated", 1)
    aw = sc.steps[14].step
    assert isinstance(aw, S.Await) and aw.expect["leader"] is None and aw.timeout_s == 30
    assert sc.steps[0].line == 18 and sc.steps[0].mapping == {"produce": {"count": 5,
                                                                           "acks": "all"}}
    assert sc.topic_spec().replicas == (1, 2, 3)
    assert sc.cluster_spec().controllers == (100,)


def bad(text: str, line: int, *words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "bad.yaml")
    msg = str(e.value)
    assert msg.startswith(f"bad.yaml:{line}:"), msg
    for w in words:
        assert w in msg, msg


def edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


def test_unknown_top_level_key() -> None:
    bad(GOOD + "extra: 1\n", 34, "unknown key 'extra'")


def test_bad_broker_in_kill() -> None:
    bad(edit("kill: {broker: 3}", "kill: {broker: 7}"), 24, "steps[6].kill.broker",
        "7 is not a broker", "1..3")


def test_replicas_must_be_brokers() -> None:
    bad(edit("replicas: [1, 2, 3]", "replicas: [1, 2, 4]"), 14, "topic.replicas[2]")


def test_duplicate_replica() -> None:
    bad(edit("replicas: [1, 2, 3]", "replicas: [1, 1]"), 14, "listed twice")


def test_bad_acks() -> None:
    bad(edit("acks: all}", "acks: 2}"), 18, "acks must be 0, 1 or all")


def test_unknown_step_and_step_param() -> None:
    bad(edit("  - heal: {}", "  - explode: {}"), 23, "unknown step 'explode'")
    bad(edit("stop: {broker: 2}", "stop: {broker: 2, force: true}"), 26, "unknown key 'force'")


def test_step_with_two_keys() -> None:
    bad(edit("  - heal: {}", "  - {heal: {}, consume: {}}"), 23, "exactly one key")


def test_node_ids_follow_cluster_shape() -> None:
    bad(edit("isolate: {node: 100}", "isolate: {node: 101}"), 20, "101 is not a node")
    bad(edit("partition: {groups: [[1, 100], [2, 3]]}",
             "partition: {groups: [[1, 100], [2, 1]]}"), 21, "in two groups")


def test_lose_unflushed_must_follow_kill() -> None:
    bad(edit("lose_unflushed: {broker: 3, offset: 2}", "lose_unflushed: {broker: 1, offset: 2}"),
        25, "must follow a kill")


def test_missing_required_and_version() -> None:
    bad(GOOD.replace("version: 1\n", ""), 1, "missing required key 'version'")
    bad(edit("version: 1", "version: 2"), 1, "unsupported format version 2")
    bad(edit("name: ok", "name: Not_OK"), 2, "[a-z0-9-]+")


def test_profile_and_features_and_versions() -> None:
    bad(edit("profile: kafka-4.1", "profile: kafka-9"), 4, "unknown profile")
    bad(edit("features: [elr]", "features: [warp]"), 7, "unknown feature")
    bad(edit('min_version: "4.0.0"', "min_version: 4.0"), 6, "quoted version")


def test_election_type_and_designated_broker() -> None:
    bad(edit("elect: {type: preferred}", "elect: {type: random}"), 30, "unknown election type")
    bad(edit("elect: {type: designated, broker: 1}", "elect: {type: designated}"), 29,
        "missing required key 'broker'")


def test_local_log_step() -> None:
    text = edit("  - heal: {}", "  - local_log: {broker: 2, age_ms: 1000}")
    step = parse_scenario(text).steps[5].step
    assert step == S.ReportLocalLog(2, 1000, None)
    bad(edit("  - heal: {}", "  - local_log: {broker: 2}"), 23, "needs age_ms, size_bytes")
    bad(edit("  - heal: {}", "  - local_log: {broker: 2, size_bytes: -1}"), 23, "must be >= 0")
    bad(edit("  - heal: {}", "  - local_log: {broker: 7, age_ms: 1}"), 23, "broker")


def test_invalid_yaml_names_line() -> None:
    bad(GOOD.replace("  - heal: {}", "  - heal: {]"), 23, "invalid YAML")


def test_duplicate_keys_rejected() -> None:
    bad(edit("  name: t\n", "  name: t\n  name: u\n"), 14, "duplicate key 'name'")


def test_load_scenario_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(edit("brokers: 3", "brokers: zero"))
    with pytest.raises(ScenarioError, match=r"x\.yaml:9: cluster\.brokers: expected an integer"):
        load_scenario(f)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
