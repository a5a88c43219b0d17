"""The upgrade step: a node restarted on another build from its data dir (loader, model,
the model's rules following the active controller's build, builds resolved up front, a
downgrade below the metadata.version refused, the backend's per-node build and its
server.properties, the trace's incarnations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cluster.builds import Build, Features
from harness.infra.errors import BuildError
from harness.scenario.loader import ScenarioError, parse_scenario
from reference import Model
from reference.model.steps import step_to_dict
from reference.model.upgrade import UpgradeBroker, UpgradeController, build_of, with_build

HEAD = """version: 1
name: up
cluster: {brokers: 3, controllers: CONTROLLERS}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""


def scenario(*steps: str, controllers: int = 1) -> Any:
    head = HEAD.replace("CONTROLLERS", str(controllers))
    return parse_scenario(head + "".join(f"  - {s}\n" for s in steps), "up.yaml")


def build(version: str) -> Build:
    v = tuple(int(x) for x in version.split("."))
    features = Features(elr=v >= (4, 0, 0), elr_default_on=v >= (4, 1, 0),
                        describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                        kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent") / version, features)


# -- loader ---------------------------------------------------------------------------

def test_the_loader_reads_a_broker_a_controller_or_a_node() -> None:
    sc = scenario('upgrade: {broker: 2, version: "4.3.1"}',
                  'upgrade: {controller: active, version: "4.3.1"}',
                  'upgrade: {node: 101, version: "3.9.2"}',
                  'upgrade: {node: 3, version: "4.0.2"}', controllers=3)
    assert [s.step for s in sc.steps] == [
        UpgradeBroker(2, "4.3.1"), UpgradeController("active", "4.3.1"),
        UpgradeController(101, "3.9.2"), UpgradeBroker(3, "4.0.2")]
    assert step_to_dict(sc.steps[0].step) == {"upgrade": {"broker": 2, "version": "4.3.1"}}
    assert step_to_dict(sc.steps[1].step) == {
        "upgrade": {"controller": "active", "version": "4.3.1"}}


@pytest.mark.parametrize("text, error", [
    ("upgrade: {broker: 2, version: 4.3}", r"up.yaml:6: .*version: expected a quoted version"),
    ("upgrade: {broker: 2}", r"up.yaml:6: .*missing required key 'version'"),
    ('upgrade: {version: "4.3.1"}', r"up.yaml:6: .*name one node"),
    ('upgrade: {broker: 9, version: "4.3.1"}', r"up.yaml:6: .*9"),
    ('upgrade: {controller: 3, version: "4.3.1"}', r"up.yaml:6: .*3 is not a controller"),
    ('upgrade: {broker: 1, controller: 100, version: "4.3.1"}', r"up.yaml:6: .*name one node"),
])
def test_the_loader_refuses_bad_input_with_its_line(text: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        scenario(text)


# -- model ----------------------------------------------------------------------------

def test_the_world_records_which_node_runs_which_build() -> None:
    sc = scenario('upgrade: {broker: 1, version: "4.3.1"}')
    model = Model("pre-elr", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False)
    pred = model.apply(sc.steps[0].step)
    # A clean shutdown of the leader moved the leadership (the preferred replica may take
    # it back: auto leader rebalance); the broker is back in the ISR.
    assert 2 in {s.leader for s in pred.allowed}
    assert all(s.leader_epoch and s.leader_epoch >= 1 for s in pred.allowed)
    assert all(s.isr == frozenset({1, 2, 3}) for s in pred.allowed)
    assert all(build_of(w, 1) == "4.3.1" and build_of(w, 2) is None for w in model.branches)
    w = with_build(model.branches[0], 1, "3.9.2")
    assert w.builds == ((1, "3.9.2"),)


def test_the_rules_follow_the_active_controllers_build() -> None:
    """Each build ships its own controller: once the active controller runs 4.3.1, the
    model steps under kafka-4.3, the profile of that build (profile_for_build); a model
    pinned to its profile (a KIP, a mutant) keeps it."""
    sc = scenario('upgrade: {controller: 100, version: "4.3.1"}')
    following = Model("pre-elr", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False,
                      follow_builds=True)
    pinned = Model("pre-elr", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False)
    assert following.ctx_of(following.branches[0]).profile.name == "pre-elr"
    for m in (following, pinned):
        m.apply(sc.steps[0].step)
    assert {following.ctx_of(w).profile.name for w in following.branches} == {"kafka-4.3"}
    assert {pinned.ctx_of(w).profile.name for w in pinned.branches} == {"pre-elr"}
    # ELR stays as the cluster was born: a build change finalizes no feature.
    assert all(not following.ctx_of(w).elr_on for w in following.branches)


def test_a_broker_upgrade_is_decided_by_the_controllers_build_not_the_brokers() -> None:
    sc = scenario('upgrade: {broker: 2, version: "4.3.1"}')
    model = Model("pre-elr", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False,
                  follow_builds=True)
    model.apply(sc.steps[0].step)
    assert {model.ctx_of(w).profile.name for w in model.branches} == {"pre-elr"}


def test_with_three_controllers_the_active_ones_build_decides() -> None:
    sc = scenario('upgrade: {controller: 101, version: "4.0.2"}', controllers=3)
    model = Model("pre-elr", sc.cluster_spec(), sc.topic_spec(), elr_enabled=False,
                  follow_builds=True)
    model.apply(sc.steps[0].step)
    by_leader = {w.quorum_leader: model.ctx_of(w).profile.name for w in model.branches}
    assert by_leader[101] == "kafka-4.0-noelr"  # a 3.9-born cluster has no ELR on 4.0
    assert by_leader[100] == "pre-elr"


# -- the run's requirements -----------------------------------------------------------

def test_a_downgrade_below_the_birth_line_is_refused_up_front() -> None:
    from harness.run.runner.requirements import requirement_gap

    sc = scenario('upgrade: {broker: 2, version: "3.8.1"}')
    gap = requirement_gap(sc, build("3.9.2"))
    assert gap is not None and "line 6" in gap and "metadata.version" in gap
    assert requirement_gap(sc, build("3.8.1")) is None
    same_line = scenario('upgrade: {broker: 2, version: "3.9.1"}')
    assert requirement_gap(same_line, build("3.9.2")) is None


def test_every_named_build_is_resolved_before_the_cluster_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster import builds
    from harness.run.runner import requirements

    asked: list[str] = []

    def from_maven(version: str) -> Build:
        asked.append(version)
        if version == "9.9.9":
            raise BuildError("--kafka-version 9.9.9: not on Maven Central")
        return build(version)

    monkeypatch.setattr(builds, "from_maven", from_maven)
    sc = scenario('upgrade: {broker: 2, version: "4.3.1"}',
                  'upgrade: {broker: 3, version: "4.3.1"}')
    assert set(requirements.step_builds(sc)) == {"4.3.1"} and asked == ["4.3.1"]
    bad = scenario('upgrade: {broker: 2, version: "4.3.1"}',
                   'upgrade: {broker: 3, version: "9.9.9"}')
    with pytest.raises(BuildError, match=r"up.yaml:7: upgrade to 9.9.9: .*Maven Central"):
        requirements.step_builds(bad)
    assert requirements.follows_builds(sc, None)
    assert not requirements.follows_builds(sc, "kip966")


# -- the backend ----------------------------------------------------------------------

def _cluster(tmp_path: Path, birth: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    from harness.client.readiness import BrokersUnfenced
    from harness.cluster.backends.local import LocalCluster
    from harness.cluster.topology import ClusterShape
    from harness.infra.history import History

    cluster = LocalCluster(build(birth), ClusterShape(brokers=1, controllers=1),
                           tmp_path / "run", History(tmp_path / "run"), BrokersUnfenced())
    monkeypatch.setattr(cluster, "_prepare_build", lambda b: None)
    for node in cluster.shape.nodes:
        cluster.node_dir(node).mkdir(parents=True)
        cluster._write_properties(node)
    return cluster


def test_a_switched_node_gets_properties_for_its_new_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3.9+ controller advertises its CONTROLLER listener (KIP-853); a 3.8 one refuses
    advertised.listeners: the properties follow the build the node now runs, with the same
    node id, listeners and log dirs."""
    cluster = _cluster(tmp_path, "3.9.2", monkeypatch)
    props = cluster.node_dir(100) / "server.properties"
    before = props.read_text()
    assert "advertised.listeners=CONTROLLER://" in before
    cluster.switch_build(100, build("3.8.1"))
    after = props.read_text()
    assert "advertised.listeners" not in after
    assert cluster.build_of(100).version == "3.8.1" and cluster.build_of(1).version == "3.9.2"
    assert cluster.builds() == {1: "3.9.2", 100: "3.8.1"}
    keep = [line for line in before.splitlines() if not line.startswith("advertised.")]
    assert keep == after.splitlines()
    cluster.switch_build(100, build("3.9.2"))  # back on the birth build
    assert props.read_text() == before and cluster.node_builds == {}


def test_only_a_backend_that_can_runs_a_node_on_another_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.scenario.steps import StepOutcome, Target
    from harness.scenario.steps.upgrade import _upgrade

    cluster = _cluster(tmp_path, "3.9.2", monkeypatch)
    monkeypatch.setattr(type(cluster), "BUILDS_PER_NODE", False)

    class Session:
        pass

    s = Session()
    s.cluster = cluster  # type: ignore[attr-defined]
    out = StepOutcome()
    _upgrade(s, Target("t"), UpgradeBroker(1, "4.3.1"), out)  # type: ignore[arg-type]
    assert out.unsupported and "LocalCluster backend launches every node" in out.unsupported


def test_an_upgrade_is_a_clean_stop_then_a_start_for_the_trace() -> None:
    from harness.judge.trace_check import unclean_registrations

    def fault(action: str, node: int) -> dict[str, Any]:
        return {"kind": "fault", "action": action, "params": {"node": node}}

    events = [fault("upgrade", 2), fault("kill", 2), fault("restart", 2),
              fault("kill", 3), fault("upgrade", 3)]
    # broker 2: incarnation 2 clean (upgrade), 3 after a kill; broker 3 upgraded while down
    # after a kill: its incarnation 2 follows a hard kill.
    assert unclean_registrations(events) == frozenset({(2, 3), (3, 2)})
