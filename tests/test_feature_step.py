"""The ``feature`` step (issue 43): its loader, the model's ELR as a live state of the world
(reference/model/features.py, controller.elr_on), the refusal it predicts, the judge of a
refusal, and the trace's ELR rules following the level. Each model rule cites seed 003
("Compatibility, Deprecation, and Migration Plan") and/or apache/kafka 4.0.2/4.3.1."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import yaml

from harness.judge.compare import refusal_mismatch
from harness.scenario.loader import ScenarioError, parse_scenario
from harness.scenario.steps.features import finalized_level, update_args
from reference import ClusterSpec, Model, TopicSpec
from reference.model import steps as S
from reference.model.features import ELR, METADATA_VERSION, Feature
from reference.model.steps import step_to_dict
from reference.releases.catalog import PROFILES, get_profile
from reference.releases.deviations import deviations_of

HEAD = """version: 1
name: kinds
cluster: {brokers: 3, controllers: 1}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""


# -- loader ---------------------------------------------------------------------------

def test_a_feature_step_loads_and_serialises_to_what_was_written() -> None:
    for text in ("feature: {name: eligible.leader.replicas.version, level: 1}",
                 "feature: {name: eligible.leader.replicas.version, level: 0, refused: true}",
                 "feature: {name: metadata.version, level: 25, refused: false}"):
        sc = parse_scenario(HEAD + f"  - {text}\n")
        assert step_to_dict(sc.steps[0].step) == yaml.safe_load(text)


@pytest.mark.parametrize("text, error", [
    ("feature: {name: eligible.leader.replica.version, level: 1}",
     r"bad.yaml:6: steps\[0\]\.feature\.name: unknown feature"),
    ("feature: {name: eligible.leader.replicas.version, level: 2}",
     r"bad.yaml:6: steps\[0\]\.feature\.level: level 2 of eligible.leader.replicas.version "
     r"out of range 0..1"),
    ("feature: {name: metadata.version, level: 0}",
     r"bad.yaml:6: steps\[0\]\.feature\.level: level 0 of metadata.version out of range"),
    ("feature: {name: metadata.version}", r"bad.yaml:6: .*level"),
    ("feature: {name: metadata.version, level: 7, unsafe: true}", r"bad.yaml:6: .*unsafe"),
])
def test_the_loader_refuses_a_bad_feature_step_with_its_line(text: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        parse_scenario(HEAD + f"  - {text}\n", "bad.yaml")


def test_the_tool_is_asked_to_upgrade_or_downgrade_from_the_finalized_level() -> None:
    described = (
        "Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\t"
        "SupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: 7\n"
        "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\t"
        "SupportedMaxVersion: 4.3-IV0\tFinalizedVersionLevel: 4.3-IV0\tEpoch: 7\n")
    assert finalized_level(described, ELR) == 1
    assert finalized_level(described, "group.version") is None
    assert update_args(ELR, 0, 1) == ["downgrade", "--feature", f"{ELR}=0"]
    assert update_args(ELR, 1, 0) == ["upgrade", "--feature", f"{ELR}=1"]
    assert update_args(ELR, 1, None) == ["upgrade", "--feature", f"{ELR}=1"]


# -- model ------------------------------------------------------------------------------

def _model(profile: str, elr: bool, min_isr: int = 2) -> Model:
    return Model(profile, ClusterSpec(brokers=(1, 2, 3)),
                 TopicSpec(replicas=(1, 2, 3), min_insync_replicas=min_isr), elr_enabled=elr)


def _one(pred: object) -> object:
    allowed = pred.allowed  # type: ignore[attr-defined]
    assert len(allowed) == 1, allowed
    return allowed[0]


def test_elr_turned_on_live_fills_no_elr_until_the_next_partition_change() -> None:
    """seeds/003 'Compatibility': after the feature is on the controller "will populate the
    ELR as empty ... In the next partition update, the controller will record the current
    ELR". 4.3.1: ConfigurationControlManager.updateFeatures writes no PartitionChangeRecord;
    the next change's PartitionChangeBuilder.maybePopulateTargetElr adds the ISR it had.
    Without the live level the last ISR member would stay in the ISR (ELR off)."""
    m = _model("kafka-4.3", elr=False)
    m.apply(S.Produce(3))
    m.apply(S.Kill(1))
    pred = m.apply(S.Kill(2))
    assert _one(pred).isr == frozenset({3}) and _one(pred).elr == frozenset()  # type: ignore[attr-defined]
    on = m.apply(Feature(ELR, 1))
    assert on.expected_refusal is False
    s = _one(on)
    assert (s.isr, s.elr, s.leader) == (frozenset({3}), frozenset(), 3)  # type: ignore[attr-defined]
    after = _one(m.apply(S.Kill(3)))
    # ELR := old ELR + old ISR - new ISR = {3}; LastKnownELR the last leader (4.x).
    assert (after.isr, after.elr, after.last_known_elr) == (  # type: ignore[attr-defined]
        frozenset(), frozenset({3}), frozenset({3}))
    assert not m.violations()


def test_the_elr_guarantee_is_not_claimed_for_what_happened_while_elr_was_off() -> None:
    """Turning ELR on under min ISR marks the world reconfigured: brokers 1 and 2 left the
    ISR with ELR off and are in no ELR, so |ISR + ELR| >= min ISR does not hold and the
    invariant ElectableAtLeastMinIsr must not fire."""
    m = _model("kafka-4.3", elr=False)
    m.apply(S.Kill(1))
    m.apply(S.Kill(2))
    m.apply(Feature(ELR, 1))
    m.apply(S.Kill(3))
    assert not [v for v in m.violations() if "ElectableAtLeastMinIsr" in v]


def _all_dead_then_elr_off(profile: str) -> Model:
    m = _model(profile, elr=True)
    m.apply(S.Produce(3))
    m.apply(S.Kill(1))
    m.apply(S.Kill(2))
    m.apply(S.Kill(3))
    return m


def test_elr_turned_off_live_leaves_the_fields_until_the_next_change() -> None:
    """KIP: "all the ELR related fields will be removed on the next partition change";
    4.3.1's updateFeatures writes no ClearElrRecord when the level goes to 0."""
    m = _all_dead_then_elr_off("kafka-4.3")
    before = _one(m.apply(S.Await()))
    s = _one(m.apply(Feature(ELR, 0)))
    assert (s.isr, s.elr, s.last_known_elr) == (  # type: ignore[attr-defined]
        before.isr, before.elr, before.last_known_elr)  # type: ignore[attr-defined]
    assert s.elr == frozenset({2, 3})  # type: ignore[attr-defined]


def test_shipped_kafka_elects_from_an_elr_left_by_a_live_disable() -> None:
    """4.0.2/4.3.1 PartitionChangeBuilder: targetElr starts as the partition's ELR and
    isValidNewLeader reads it while the ISR is empty, whatever the feature; tryElection
    makes the ISR [leader]; maybeUpdateRecordElr then clears the ELR (ELR off) and returns
    before LastKnownELR (useLastKnownLeaderInBalancedRecovery). Broker 2, killed (an
    unclean shutdown the controller no longer acts on with ELR off), leads on its return.
    The KIP ignores the ELR fields once off: no leader (deviation elr-disable-keeps-fields)."""
    m = _all_dead_then_elr_off("kafka-4.3")
    m.apply(Feature(ELR, 0))
    s = _one(m.apply(S.Restart(2)))
    assert (s.leader, s.isr, s.elr, s.last_known_elr) == (  # type: ignore[attr-defined]
        2, frozenset({2}), frozenset(), frozenset({3}))
    k = _all_dead_then_elr_off("kip966")
    k.apply(Feature(ELR, 0))
    assert all(a.leader == -1 for a in k.apply(S.Restart(2)).allowed)


def test_with_elr_still_on_the_unclean_restart_leaves_the_elr_instead() -> None:
    """The contrast: ELR on, broker 2's unclean registration removes it from the ELR
    (seeds/003 'Other behaviors' 6; ReplicationControlManager.handleBrokerShutdown)."""
    m = _all_dead_then_elr_off("kafka-4.3")
    s = _one(m.apply(S.Restart(2)))
    assert s.leader != 2 and 2 not in s.elr  # type: ignore[attr-defined]


def test_a_build_without_the_feature_refuses_and_nothing_changes() -> None:
    """3.x has no eligible.leader.replicas.version (EligibleLeaderReplicasVersion first in
    kafka-server-common 4.0.0): UpdateFeatures refuses it (deviation no-elr-feature)."""
    m = _model("pre-elr", elr=False)
    m.apply(S.Kill(1))
    m.apply(S.Kill(2))
    pred = m.apply(Feature(ELR, 1))
    assert pred.expected_refusal is True
    after = _one(m.apply(S.Kill(3)))
    assert after.isr == frozenset({3}) and after.elr == frozenset()  # type: ignore[attr-defined]
    assert _model("kafka-4.0-noelr", elr=False).apply(Feature(ELR, 1)).expected_refusal is False


def test_metadata_version_refusal_is_what_the_step_declares() -> None:
    m = _model("kafka-4.3", elr=True)
    assert m.apply(Feature(METADATA_VERSION, 22, refused=True)).expected_refusal is True
    assert m.apply(Feature(METADATA_VERSION, 27)).expected_refusal is False


def test_profiles_cite_the_feature_deviations() -> None:
    assert {d.id for d in deviations_of(get_profile("pre-elr"), False)} >= {"no-elr-feature"}
    for name in ("kafka-4.0-elr", "kafka-4.0-noelr", "kafka-4.1", "kafka-4.3"):
        p = PROFILES[name]
        assert p.elr_feature and p.elr_disable_keeps_fields, name
        assert "elr-disable-keeps-fields" in {d.id for d in deviations_of(p, True)}
    # 4.0 without ELR follows 4.0's LastKnownELR rule once a feature step turns ELR on.
    assert PROFILES["kafka-4.0-noelr"].last_known_elr == "last-leader"


# -- judging ------------------------------------------------------------------------------

def test_a_refusal_against_the_prediction_or_the_declaration_diverges() -> None:
    accepted = SimpleNamespace(refused=None, declared_refused=None)
    refused = SimpleNamespace(refused="Invalid update version 1 for feature x",
                              declared_refused=None)
    assert refusal_mismatch(SimpleNamespace(expected_refusal=False), accepted) is None
    assert "predicted accepted, observed refused" in (
        refusal_mismatch(SimpleNamespace(expected_refusal=False), refused) or "")
    assert "predicted refused" in (
        refusal_mismatch(SimpleNamespace(expected_refusal=True), accepted) or "")
    declared = replace_ns(accepted, declared_refused=True)
    assert "declared refused" in (
        refusal_mismatch(SimpleNamespace(expected_refusal=None), declared) or "")
    assert refusal_mismatch(SimpleNamespace(expected_refusal=None, expected_acks="acked"),
                            SimpleNamespace()) is None


def replace_ns(ns: SimpleNamespace, **kw: object) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(ns), **kw})


# -- trace ---------------------------------------------------------------------------------

def test_the_trace_follows_the_elr_level_in_a_run_that_changes_it() -> None:
    from reference.trace.records import TraceContext, initial_state
    from reference.trace.rules import elr_on

    ctx = TraceContext(profile="kafka-4.3", elr_enabled=False)
    off = initial_state(ctx)
    on = replace(off, features={ELR: 1})
    assert not elr_on(on, PROFILES["kafka-4.3"], ctx)  # fixed for the run, as before
    live = replace(ctx, elr_follows_level=True)
    assert not elr_on(off, PROFILES["kafka-4.3"], live)  # no record yet: as the run began
    assert elr_on(on, PROFILES["kafka-4.3"], live)
    assert not elr_on(replace(off, features={ELR: 0}),
                      PROFILES["kafka-4.0-elr"], replace(live, elr_enabled=True))


def test_the_trace_lets_elr_fields_outlive_a_live_disable() -> None:
    """A run that turned ELR off live: the partition keeps ELR [2, 3] and an empty ISR until
    its next change (KIP-966 'Compatibility'; 4.3.1 updateFeatures writes no
    ClearElrRecord): NoElrWhenDisabled and IsrNotEmptyWhenElrDisabled must not fire, as
    they did on the real run elr-disabled-live (4.3.1) before this rule."""
    from reference.trace.records import PartitionRegistration, TraceContext, initial_state
    from reference.trace.rules.invariants import _partition_invariants

    part = PartitionRegistration("t", 0, replicas=(1, 2, 3), isr=(), leader=-1,
                                 leader_epoch=3, partition_epoch=5, elr=(2, 3),
                                 last_known_elr=(3,))
    ctx = TraceContext(profile="kafka-4.3", elr_enabled=True)
    st = replace(initial_state(ctx), partitions={("t", 0): part}, features={ELR: 0})
    rules = {f.rule for f in _partition_invariants(st, ("t", 0), False, PROFILES["kafka-4.3"],
                                                   ctx)}
    assert {"NoElrWhenDisabled", "IsrNotEmptyWhenElrDisabled"} <= rules
    live = replace(ctx, elr_follows_level=True)
    rules = {f.rule for f in _partition_invariants(st, ("t", 0), False, PROFILES["kafka-4.3"],
                                                   live)}
    assert not {"NoElrWhenDisabled", "IsrNotEmptyWhenElrDisabled"} & rules


def test_a_fenced_last_isr_member_written_with_elr_off_outlives_a_live_enable() -> None:
    """ELR off: broker 1, the last ISR member, fenced and kept in the ISR. ELR turned on
    live: no partition change is written (KIP-966 'Compatibility': "in the next partition
    update, the controller will record the current ELR"), so FencedReplicaNotInIsr must not
    fire until the partition's next change; a change written with ELR on that keeps the
    fenced member does break it."""
    from test_reference_trace import E, change, cluster, feature, fence, run

    log = cluster(elr=False).batch(change(isr=[1, 2]), fence(3, E[3]))
    log.batch(change(isr=[1]), fence(2, E[2])).batch(change(leader=-1), fence(1, E[1]))
    assert "FencedReplicaNotInIsr" not in run(log, profile="kafka-4.3", elr_enabled=False)
    log.batch(feature(ELR, 1))
    live = {"profile": "kafka-4.3", "elr_enabled": False, "elr_follows_level": True}
    assert "FencedReplicaNotInIsr" not in run(log, **live)
    assert "FencedReplicaNotInIsr" in run(log, profile="kafka-4.3", elr_enabled=True)
    log.batch(change(lke=[1]))   # the next change, written with ELR on, keeps 1 in the ISR
    assert "FencedReplicaNotInIsr" in run(log, **live)
