"""The cluster's birth (issue 43 item 1): ``cluster.metadata_version``, ``features``,
``unstable_features`` and ``builds``; the loader's file:line errors, the storage tool's flags,
the checks before any cluster starts (a build's refusal named by file:line, with no JVM here:
the tool is stood in for), and the model born at a metadata.version (reference/model/
metadata_version.py: ELR and clean-shutdown detection guarded by 4.0-IV1, seed 003
"Compatibility, Deprecation, and Migration Plan"; MV downgrades as
FeatureControlManager.updateMetadataVersion decides them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster import builds, storage
from harness.cluster.builds import Build, Features
from harness.cluster.topology import ClusterShape
from harness.infra.errors import BuildError
from harness.judge.compare import model_for, shape_of
from harness.run.runner import birth
from harness.run.runner.requirements import downgrade_gap, elr_enabled, follows_builds
from harness.scenario.loader import ScenarioError, parse_scenario
from reference.model import metadata_version as MV
from reference.model import steps as S
from reference.model.features import ELR, METADATA_VERSION, Feature

TOPIC = "topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}\n"


def _scenario(cluster: str, steps: str = "  - produce: {count: 1}\n", path: str = "b.yaml"
              ) -> object:
    text = (f"version: 1\nname: b\ncluster:\n  brokers: 3\n{cluster}" + TOPIC
            + "steps:\n" + steps)
    return parse_scenario(text, path)


def _build(version: str) -> Build:
    t = builds.version_tuple(version)
    feats = Features(elr=t >= (4, 0, 0), elr_default_on=t >= (4, 1, 0),
                     describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                     kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), feats)


# -- loader ---------------------------------------------------------------------------------

def test_the_birth_keys_load() -> None:
    sc = _scenario('  metadata_version: "3.9-IV0"\n  features: {group.version: 0}\n'
                   '  unstable_features: true\n  builds: {1: "3.9.2", 100: "4.0.2"}\n')
    c = sc.cluster  # type: ignore[attr-defined]
    assert (c.metadata_version, c.features, c.unstable_features, c.builds) == (
        "3.9-IV0", (("group.version", 0),), True, ((1, "3.9.2"), (100, "4.0.2")))
    assert c.line("metadata_version") == 5 and c.line("builds.100") == 8
    assert shape_of(sc).builds == c.builds  # the cluster a run starts keeps them


@pytest.mark.parametrize("cluster, error", [
    ('  metadata_version: "3.9-IV7"\n', r"b.yaml:5: cluster.metadata_version: unknown "
     r"metadata.version '3.9-IV7'"),
    ("  metadata_version: 3.9\n", r"b.yaml:5: cluster.metadata_version: unknown"),
    ("  features: {eligible.leader.replica.version: 1}\n",
     r"b.yaml:5: cluster.features.eligible.leader.replica.version: unknown feature"),
    ("  features: {eligible.leader.replicas.version: 2}\n", r"b.yaml:5: .*0 \(off\) or 1"),
    ('  metadata_version: "3.9-IV0"\n  features: {eligible.leader.replicas.version: 1}\n',
     r"b.yaml:6: cluster.features: .*needs metadata.version 4.0-IV1"),
    ('  metadata_version: "3.9-IV0"\n  elr: true\n', r"b.yaml:6: cluster.elr: ELR needs"),
    ("  elr: true\n  features: {eligible.leader.replicas.version: 1}\n",
     r"b.yaml:6: cluster.features: give ELR once"),
    ("  features: {metadata.version: 21}\n", r"b.yaml:5: .*cluster.metadata_version"),
    ('  builds: {7: "3.9.2"}\n', r"b.yaml:5: cluster.builds: 7 is not a node of the cluster"),
    ('  builds: {101: "3.9.2"}\n', r"b.yaml:5: cluster.builds: 101 is not a node"),
    ("  builds: {1: 3.9}\n", r"b.yaml:5: cluster.builds.1: expected a quoted version"),
    ("  unstable_features: maybe\n", r"b.yaml:5: cluster.unstable_features"),
])
def test_bad_birth_keys_are_refused_with_their_line(cluster: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        _scenario(cluster)


# -- the storage tool's flags ----------------------------------------------------------------

def test_the_format_flags_follow_the_birth() -> None:
    at = ClusterShape(metadata_version="3.9-IV0")
    assert storage.birth_args(_build("4.3.1"), at, (4, 3, 1)) == (
        ["--release-version", "3.9-IV0", "--feature", f"{ELR}=0"], [])
    # no ELR flag for a build without the feature
    assert storage.birth_args(_build("3.9.2"), at, (3, 9, 2)) == (
        ["--release-version", "3.9-IV0"], [])
    # the ELR level said at a given MV: on from 4.1-IV0 (ELRV_1's bootstrap MV)
    high = ClusterShape(metadata_version="4.1-IV0")
    assert storage.birth_args(_build("4.3.1"), high, (4, 3, 1))[0][-1] == f"{ELR}=1"
    feats = ClusterShape(features=(("group.version", 1),), elr=False)
    assert storage.birth_args(_build("4.3.1"), feats, (4, 3, 1))[0] == [
        "--feature", f"{ELR}=0", "--feature", "group.version=1"]


def test_the_unstable_switch_is_the_builds_own() -> None:
    shape = ClusterShape(metadata_version="4.4-IV0", unstable_features=True)
    assert storage.birth_args(_build("4.3.1"), shape, (4, 3, 1))[1] == [
        "unstable.feature.versions.enable=true"]
    assert storage.unstable_switch(_build("3.7.2")) == "unstable.metadata.versions.enable"
    with pytest.raises(BuildError, match="3.6.2 has no switch"):
        storage.unstable_switch(_build("3.6.2"))


def test_nodes_on_older_builds_set_the_release_line() -> None:
    """The rule: the newest metadata.version of the oldest release line among the nodes'
    builds, which every newer build reads."""
    shape = ClusterShape(builds=((1, "3.9.2"), (100, "4.0.2")))
    assert storage.birth_release(shape, (4, 3, 1)) == "3.9"
    assert storage.resolve_birth(shape, (4, 3, 1)).metadata_version == "3.9-IV0"
    assert storage.resolve_birth(ClusterShape(builds=((1, "4.3.1"),)), (4, 0, 2)
                                 ).metadata_version == "4.0-IV3"
    assert storage.resolve_birth(ClusterShape(), (4, 3, 1)) == ClusterShape()


def test_elr_at_birth() -> None:
    assert not storage.born_with_elr(ClusterShape(metadata_version="3.9-IV0"), True, True)
    assert storage.born_with_elr(ClusterShape(metadata_version="4.0-IV1",
                                              features=((ELR, 1),)), True, False)
    assert not storage.born_with_elr(ClusterShape(metadata_version="4.0-IV3"), True, True)
    assert storage.born_with_elr(ClusterShape(), True, True)
    assert not storage.born_with_elr(ClusterShape(elr=True), False, False)


# -- before any cluster starts ---------------------------------------------------------------

def _refusing(said: str) -> object:
    def template(build: Build, elr: object, args: list[str], props: list[str]) -> Path:
        raise BuildError(f"StorageTool format failed for Kafka {build.version}:\n"
                         f"\tat kafka.tools.StorageTool.main(StorageTool.scala)\n{said}")
    return template


@pytest.mark.parametrize("cluster, said, error", [
    ('  metadata_version: "4.4-IV0"\n',
     "Unknown metadata.version '4.4-IV0'. Supported metadata.version are: 3.3-IV3, 4.3-IV0",
     r"b.yaml:5: cluster.metadata_version: Kafka 4.3.1 \(node 1\) refuses .*Unknown "
     r"metadata.version '4.4-IV0'"),
    ("  features: {streams.version: 1}\n",
     "Unsupported feature: streams.version. Supported features are: group.version",
     r"b.yaml:5: cluster.features: Kafka 4.3.1 .*Unsupported feature: streams.version"),
])
def test_a_birth_the_build_refuses_is_an_error_with_its_line(
        monkeypatch: pytest.MonkeyPatch, cluster: str, said: str, error: str) -> None:
    monkeypatch.setattr(storage, "template", _refusing(said))
    sc = _scenario(cluster)
    with pytest.raises(BuildError, match=error) as info:
        birth.check_birth(sc, _build("4.3.1"), {})  # type: ignore[arg-type]
    assert "StorageTool.main" not in str(info.value)


def test_a_birth_build_that_does_not_exist_is_an_error_with_its_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(version: str) -> Build:
        if version == "4.3.1":
            return _build(version)
        raise BuildError(f"org.apache.kafka:kafka_2.13:{version} is not on Maven Central")
    monkeypatch.setattr(builds, "from_maven", missing)
    sc = _scenario('  builds:\n    1: "4.3.1"\n    2: "3.9.77"\n')
    with pytest.raises(BuildError, match=r"b.yaml:7: cluster.builds.2: Kafka 3.9.77 cannot"):
        birth.birth_builds(sc)  # type: ignore[arg-type]


def test_mixed_births_are_local_only_and_follow_the_controllers_build() -> None:
    sc = _scenario('  builds: {100: "4.0.2"}\n')
    assert birth.birth_gap(sc, "docker") and birth.birth_gap(sc, "local") is None  # type: ignore[arg-type]
    assert follows_builds(sc, None)  # type: ignore[arg-type]


def test_a_downgrade_gap_reads_the_birth_metadata_version() -> None:
    sc = _scenario('  metadata_version: "3.9-IV0"\n',
                   '  - upgrade: {broker: 1, version: "3.9.2"}\n')
    assert downgrade_gap(sc, _build("4.3.1")) is None  # type: ignore[arg-type]
    plain = _scenario("", '  - upgrade: {broker: 1, version: "3.9.2"}\n')
    assert downgrade_gap(plain, _build("4.3.1"))  # type: ignore[arg-type]


# -- the model born at a metadata.version ----------------------------------------------------

def _born(mv: str, elr: bool = True) -> object:
    sc = _scenario(f'  metadata_version: "{mv}"\n')
    return model_for(sc, "kafka-4.3", elr)


def _one(pred: object) -> object:
    allowed = pred.allowed  # type: ignore[attr-defined]
    assert len(allowed) == 1, allowed
    return allowed[0]


def test_below_elrs_metadata_version_the_last_isr_member_stays_and_leads_again() -> None:
    """KIP-966: ELR "guarded by a new metadata version" (4.0-IV1, MetadataVersion
    .isElrSupported): born at 3.9-IV0, ELR is off even when the run asks it on."""
    m = _born("3.9-IV0")
    for step in (S.Produce(2), S.Stop(3), S.Stop(2), S.Kill(1)):
        m.apply(step)  # type: ignore[attr-defined]
    s = _one(m.apply(S.Restart(1)))  # type: ignore[attr-defined]
    assert (s.leader, s.isr, s.elr) == (1, frozenset({1}), frozenset())  # type: ignore[attr-defined]


def test_below_the_metadata_version_every_registration_counts_as_unclean() -> None:
    """seed 003 "Clean shutdown": "Before that, the controller will treat all the
    registrations with unclean shutdowns" (4.0-IV1: metadata_version.CLEAN_SHUTDOWN)."""
    for mv, unclean in (("3.9-IV0", 1), ("4.0-IV1", 0)):
        m = _born(mv, elr=False)
        m.apply(S.Stop(3))  # type: ignore[attr-defined]
        m.apply(S.Restart(3))  # type: ignore[attr-defined]
        assert [w.unclean_shutdowns for w in m.branches] == [unclean]  # type: ignore[attr-defined]


def test_elr_is_refused_until_the_metadata_version_carries_it() -> None:
    """EligibleLeaderReplicasVersion.ELRV_1 depends on metadata.version 23 (4.0-IV1): seen on
    4.3.1, "eligible.leader.replicas.version could not be set to 1 because it depends on
    metadata.version level 23" (born-below-clean-shutdown-mv run)."""
    m = _born("3.9-IV0")
    assert m.apply(Feature(ELR, 1)).expected_refusal is True  # type: ignore[attr-defined]
    assert m.apply(Feature(METADATA_VERSION, 25)).expected_refusal is False  # type: ignore[attr-defined]
    assert m.apply(Feature(ELR, 1)).expected_refusal is False  # type: ignore[attr-defined]
    for step in (S.Stop(3), S.Stop(2)):
        m.apply(step)  # type: ignore[attr-defined]
    assert _one(m.apply(S.Await())).elr == frozenset({2})  # type: ignore[attr-defined]


def test_a_metadata_version_downgrade_is_refused_across_a_metadata_change() -> None:
    """FeatureControlManager.updateMetadataVersion: accepted when no level between changed
    the metadata (4.0-IV3 -> 4.0-IV1), refused otherwise (4.0-IV1 -> 3.9-IV0 / 4.0-IV0):
    seen on 4.3.1 (metadata-version-raised-and-lowered run)."""
    assert MV.downgrade_refused(25, 23) is False and MV.downgrade_refused(23, 21) is True
    assert MV.downgrade_refused(30, 29) is True and MV.downgrade_refused(29, 23) is False
    m = _born("4.0-IV1")
    assert m.apply(Feature(METADATA_VERSION, 25)).expected_refusal is False  # type: ignore[attr-defined]
    assert m.apply(Feature(METADATA_VERSION, 23)).expected_refusal is False  # type: ignore[attr-defined]
    assert m.apply(Feature(METADATA_VERSION, 22)).expected_refusal is True  # type: ignore[attr-defined]
    assert [w.metadata_level for w in m.branches] == [23]  # type: ignore[attr-defined]


def test_the_run_asks_elr_of_the_birth() -> None:
    sc = _scenario('  metadata_version: "3.9-IV0"\n')
    assert not elr_enabled(sc, _build("4.3.1"))  # type: ignore[arg-type]
    assert elr_enabled(_scenario(""), _build("4.3.1"))  # type: ignore[arg-type]
