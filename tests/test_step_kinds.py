"""The step registry: one definition per kind, documented, and what the loader parses
serialises back to the same step."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.scenario import steps
from harness.scenario.loader import parse_scenario
from reference.model import steps as S
from reference.model.steps import BUILTIN, step_to_dict

FORMAT = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios" / "FORMAT.md"
HEAD = """version: 1
name: kinds
cluster: {brokers: 3, controllers: 1}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""


def test_the_model_kinds_all_have_a_scenario_step() -> None:
    assert {k.kind for k in BUILTIN} <= set(steps.KINDS)


@pytest.mark.parametrize("name", sorted(steps.KINDS))
def test_every_kind_is_documented(name: str) -> None:
    kind = steps.KINDS[name]
    assert kind.doc.startswith(f"{name}: ")
    assert f"  - {name}: {{" in FORMAT.read_text(), f"{name} is missing from FORMAT.md"


def test_a_loaded_step_serialises_to_what_was_written() -> None:
    written = ["produce: {count: 2, acks: 1}", "isolate: {node: 100}", "heal: {}",
               "cut: {src: 1, dst: 2, direction: oneway}", "kill: {broker: 3}",
               "lose_unflushed: {broker: 3, offset: 1}", "unregister: {broker: 3}",
               "restart: {broker: 3}",
               "elect: {type: unclean}", "reassign: {replicas: [2, 1]}",
               "alter_config: {scope: topic, config: {min.insync.replicas: '1'}}",
               "await: {leader: 2, timeout_s: 5.0}", "consume: {}", "pause: {node: 2}",
               "resume: {node: 2}", "snapshot: {}", "snapshot: {timeout_s: 30.0}"]
    sc = parse_scenario(HEAD + "".join(f"  - {w}\n" for w in written))
    for loaded, text in zip(sc.steps, written, strict=True):
        assert step_to_dict(loaded.step) == yaml.safe_load(text)
        assert loaded.kind == next(iter(yaml.safe_load(text)))


def test_pause_silences_a_node_like_an_isolation_and_resume_brings_it_back() -> None:
    from reference import Model

    def model_after(*written: str) -> object:
        sc = parse_scenario(HEAD + "".join(f"  - {w}\n" for w in written))
        model = Model("kafka-4.1", sc.cluster_spec(), sc.topic_spec(), elr_enabled=True)
        return [model.apply(s.step) for s in sc.steps][-1]

    paused = model_after("produce: {count: 2}", "pause: {node: 1}")
    isolated = model_after("produce: {count: 2}", "isolate: {node: 1}")
    assert paused.allowed == isolated.allowed  # type: ignore[attr-defined]
    assert all(s.leader != 1 for s in paused.allowed)  # type: ignore[attr-defined]
    resumed = model_after("produce: {count: 2}", "pause: {node: 1}", "resume: {node: 1}")
    assert all(1 in s.isr for s in resumed.allowed)  # type: ignore[attr-defined]


def test_pause_names_a_node_of_the_cluster() -> None:
    from harness.scenario.loader import ScenarioError

    with pytest.raises(ScenarioError, match=r":6: steps\[0\]\.pause\.node: 9 is not a node"):
        parse_scenario(HEAD + "  - pause: {node: 9}\n", "bad.yaml")


def test_each_generator_is_named_by_its_kinds_definition() -> None:
    """The fuzz generator makes the kinds whose definition names a generator: every
    generator of reference.search.generators is named by exactly its kind, and no kind's
    definition names another kind's generator."""
    from harness.scenario import steps as step_kinds
    from reference.search import generators

    named = step_kinds.generators()
    assert {k: g.kind for k, g in named.items()} == {k: k for k in named}
    assert set(named) == set(generators.ALL)
    assert {"pause", "resume"} <= set(named)


def test_unregister_follows_a_kill_or_stop_of_that_broker() -> None:
    from harness.scenario.loader import ScenarioError
    with pytest.raises(ScenarioError, match="must follow a kill or stop of that broker"):
        parse_scenario(HEAD + "  - unregister: {broker: 2}\n")
    sc = parse_scenario(HEAD + "  - stop: {broker: 2}\n  - unregister: {broker: 2}\n")
    assert step_to_dict(sc.steps[1].step) == {"unregister": {"broker": 2}}


def test_unregister_keeps_an_elr_member_and_a_removal_diverges() -> None:
    """The rule follows 4.3.1's controller (handleBrokerUnregistered names no unclean-shutdown
    broker: UnregisterBrokerRecord, no PartitionChangeRecord; unregister-keeps-elr-member
    CONFORMS there); an observation with the member removed is a divergence."""
    from dataclasses import replace

    from reference import ClusterSpec, Model, TopicSpec
    m = Model("kafka-4.3", ClusterSpec(brokers=(1, 2, 3)),
              TopicSpec(replicas=(1, 2, 3), min_insync_replicas=3), elr_enabled=True)
    m.apply(S.Produce(3))
    m.apply(S.Kill(3))
    pred = m.apply(S.Unregister(3))
    assert {s.elr for s in pred.allowed} == {frozenset({3})}
    assert {s.isr for s in pred.allowed} == {frozenset({1, 2})}
    removed = replace(pred.allowed[0], elr=frozenset())
    assert "elr" in (m.explain(removed) or "")
