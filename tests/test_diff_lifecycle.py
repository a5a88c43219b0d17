"""The life of a topic and of the ELR feature in the differential campaign (issue 43 item 3),
no JVM: the new events (deleteTopic, createTopic of a deleted name, updateFeature) in the
protocol, the model's predictions with their rules (each test below fails without its
rule), the comparator's judgement of crafted answers (removed partitions, the ELR level, a
controller fault as a finding of its own class named by the known bug), and the generator.
"""

from __future__ import annotations

import random
import re
from typing import Any

import orjson
import pytest
from test_differential_model import answer, brokers, comparator, part

from harness.differential import protocol as p
from harness.differential.compare import AGREES, DIVERGES, FAULT, Comparator, violations
from harness.differential.model import initial, observed
from harness.differential.protocol import Answer
from harness.differential.workload import RandomEvents, repair
from harness.infra.errors import UsageError
from reference.model.controller_events import Cluster, apply
from reference.model.controller_events.features import REFUSED
from reference.model.state import evolve
from reference.releases.catalog import get_profile
from reference.releases.known_bugs import naming_diff_finding

K43 = get_profile("kafka-4.3")
PRE_ELR = get_profile("pre-elr")  # 3.9
IDS = [1, 2, 3, 4]
STALE = "elr-index-stale-after-min-isr-change"


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


# ---- protocol ----

def test_the_new_events_and_what_their_answers_carry() -> None:
    assert p.delete_topic("t") == {"op": "deleteTopic", "topic": "t"}
    assert p.update_feature(p.ELR_FEATURE, 1) == {"op": "updateFeature",
                                                  "name": p.ELR_FEATURE, "level": 1}
    for bad, complaint in [({"op": "updateFeature", "name": "x", "level": 1,
                             "upgradeType": "sideways"}, "upgradeType must be one of"),
                           ({"op": "updateFeature", "name": "x", "level": "1"},
                            "level must be an integer"),
                           ({"op": "deleteTopic"}, "needs topic")]:
        with pytest.raises(UsageError, match=re.escape(complaint)):
            p.check_event(bad)
    a = p.parse_answer(_line({"seq": 1, "op": "deleteTopic", "ok": True,
                              "removed": ["t-0", "t-1"]}), 1)
    assert a.removed == ("t-0", "t-1")
    assert p.parse_answer(_line({"seq": 2, "op": "fence", "ok": True}), 2).removed == ()
    ready = p.parse_ready(_line({"ok": True, "ready": True, "protocol": 1, "kafka": "4.3.1",
                                 "metadataVersion": "4.3-IV0", "metadataVersionProduction": True,
                                 "elr": True, "elrMode": "x",
                                 "supportedFeatures": {p.ELR_FEATURE: [0, 1]}}))
    assert ready.supported_features == {p.ELR_FEATURE: (0, 1)} and ready.elr_feature
    old = p.parse_ready(_line({"ok": True, "ready": True, "protocol": 1, "kafka": "3.9.2",
                               "metadataVersion": "3.9-IV0", "metadataVersionProduction": True,
                               "elr": False, "elrMode": "x",
                               "supportedFeatures": {"metadata.version": [1, 21]}}))
    assert not old.elr_feature


# ---- the model: deletion and re-creation ----

def _cluster() -> Cluster:
    """t-0 [1, 2, 3] min ISR 3 with 3 fenced (ELR [3]); t-1 [2, 3, 4]; u-0 [1, 2, 3]."""
    c = initial({}, brokers(IDS, fenced=(3,), down=(3,)), min_isr=2, unclean=False, elr=True)
    c = observed(c, {"t-0": part(1, 0, 1, [1, 2, 3], [1, 2], [3]),
                     "t-1": part(2, 0, 1, [2, 3, 4], [2, 4]),
                     "u-0": part(1, 0, 1, [1, 2, 3], [1, 2])}, None)
    (out,) = apply(c, K43, p.alter_config({"min.insync.replicas": "3"}, "t")).outcomes
    return evolve(out.cluster, partitions=c.partitions)


def test_delete_topic_removes_its_partitions_and_configs_and_nothing_else() -> None:
    c = _cluster()
    assert c.topics["t"].min_isr == 3
    (out,) = apply(c, K43, p.delete_topic("t")).outcomes
    assert out.accepted
    assert sorted(out.cluster.partitions) == ["u-0"]
    assert out.cluster.partitions["u-0"] is c.partitions["u-0"]
    assert "t" not in out.cluster.topics  # configurationControl.deleteTopicConfigs
    assert out.cluster.brokers == c.brokers
    (gone,) = apply(out.cluster, K43, p.delete_topic("t")).outcomes
    assert (gone.accepted, gone.error) == (False, "UNKNOWN_TOPIC_OR_PARTITION")


def test_a_deleted_name_is_created_again_as_a_new_topic() -> None:
    c = _cluster()
    again = p.create_topic("t", [[3, 2, 1], [4, 1, 2]])
    (exists,) = apply(c, K43, again).outcomes
    assert (exists.accepted, exists.error) == (False, "TOPIC_ALREADY_EXISTS")
    (deleted,) = apply(c, K43, p.delete_topic("t")).outcomes
    (out,) = apply(deleted.cluster, K43, again).outcomes
    assert out.accepted
    t0, t1 = out.cluster.partitions["t-0"], out.cluster.partitions["t-1"]
    # Broker 3 is fenced: not in the ISR, not the leader; epochs start again at 0, no ELR
    # from the old topic.
    assert (t0.replicas, t0.leader, sorted(t0.isr), t0.elr) == ((3, 2, 1), 2, [1, 2], set())
    assert (t0.leader_epoch, t0.partition_epoch, t1.leader, sorted(t1.isr)) == (0, 0, 4,
                                                                               [1, 2, 4])
    # The old topic's min ISR 3 went with it: the cluster's (2) applies.
    assert out.cluster.topics["t"].min_isr is None


def test_the_comparator_follows_a_deletion_and_a_recreation() -> None:
    c = comparator(IDS, min_isr=2)
    regs = brokers(IDS)
    c.step(p.create_topic("t", [[1, 2, 3]]), answer("createTopic",
                                                    {"t-0": part(1, 0, 0, [1, 2, 3],
                                                                 [1, 2, 3])}, regs))
    c.step(p.create_topic("u", [[1, 2, 3]]), answer("createTopic",
                                                    {"u-0": part(1, 0, 0, [1, 2, 3],
                                                                 [1, 2, 3])}, regs))
    gone = answer("deleteTopic", {}, regs)
    rep = c.step(p.delete_topic("t"), Answer(**{**gone.__dict__, "removed": ("t-0",)}))
    assert (rep.release, rep.kip, rep.findings) == (AGREES, AGREES, [])
    assert sorted(c.states["release"].partitions) == ["u-0"]
    rep = c.step(p.create_topic("t", [[4, 3, 2]]),
                 answer("createTopic", {"t-0": part(4, 0, 0, [4, 3, 2], [4, 3, 2])}, regs))
    assert rep.release == AGREES, rep.findings
    # A build that kept the partitions of a deleted topic diverges where it kept them.
    kept = c.step(p.delete_topic("u"), answer("deleteTopic", {}, regs))
    assert kept.release == DIVERGES
    assert (kept.findings[0].name, kept.findings[0].where) == ("exists", "u-0")


# ---- the model: the ELR feature ----

def _with_elr_member() -> Cluster:
    c = initial({}, brokers([1, 2, 3], fenced=(3,), down=(3,)), min_isr=3, unclean=False,
                elr=True)
    return observed(c, {"t-0": part(1, 0, 1, [1, 2, 3], [1, 2], [3])}, None)


def test_turning_elr_off_changes_no_partition_and_the_next_change_follows_it() -> None:
    c = _with_elr_member()
    (off,) = apply(c, K43, p.update_feature(p.ELR_FEATURE, 0)).outcomes
    assert off.accepted and off.cluster.partitions == c.partitions  # no ClearElrRecord
    assert (off.cluster.elr_live, off.cluster.elr_now) == (False, False)
    # The next change: broker 2 fenced. ELR on: 2 joins the ELR; off: no ELR update.
    ((on_out,), (off_out,)) = (apply(x, K43, p.fence(2)).outcomes for x in (c, off.cluster))
    assert on_out.cluster.partitions["t-0"].elr == {2, 3}
    assert 2 not in off_out.cluster.partitions["t-0"].elr
    (back,) = apply(off.cluster, K43, p.update_feature(p.ELR_FEATURE, 1)).outcomes
    assert back.accepted and back.cluster.elr_now and back.cluster.partitions == c.partitions


@pytest.mark.parametrize("event, elr", [
    (p.update_feature(p.ELR_FEATURE, 2), True),  # above what the controller supports
    (p.update_feature(p.ELR_FEATURE, 0, "upgrade"), True),  # a downgrade needs its type
    (p.update_feature(p.ELR_FEATURE, 1, "safeDowngrade"), False),  # "downgrade to a newer"
])
def test_feature_updates_the_controller_refuses(event: dict[str, Any], elr: bool) -> None:
    c = evolve(_with_elr_member(), elr_enabled=elr)
    (o,) = apply(c, K43, event).outcomes
    assert (o.accepted, o.error, o.cluster) == (False, REFUSED, c)


def test_a_build_without_the_feature_refuses_to_turn_elr_on() -> None:
    c = evolve(_with_elr_member(), elr_enabled=False)
    (o,) = apply(c, PRE_ELR, p.update_feature(p.ELR_FEATURE, 1)).outcomes
    assert (o.accepted, o.error, o.cluster) == (False, REFUSED, c)
    # Level 0 of a feature it does not know: 3.6.2 refuses, 3.9.2 accepts; no change.
    zero = apply(c, PRE_ELR, p.update_feature(p.ELR_FEATURE, 0)).outcomes
    assert {o.accepted for o in zero} == {False, True}
    assert all(o.cluster == c for o in zero)
    assert apply(c, K43, p.update_feature("group.version", 1)).unmodelled


def _elr_comparator() -> Comparator:
    c = comparator([1, 2, 3], min_isr=3)
    c.step(p.create_topic("t", [[1, 2, 3]]), answer("createTopic", {
        "t-0": part(1, 0, 0, [1, 2, 3], [1, 2, 3])}, brokers([1, 2, 3])))
    c.step(p.fence(3), answer("fence", {"t-0": part(1, 0, 1, [1, 2, 3], [1, 2], [3])},
                              brokers([1, 2, 3], (3,), (3,))))
    return c


def _feature_answer(elr: bool) -> Answer:
    a = answer("updateFeature", {}, brokers([1, 2, 3], (3,), (3,)))
    return Answer(**{**a.__dict__, "raw": {"elr": elr, "level": int(elr)}})


def test_the_comparator_reads_the_level_the_build_reports() -> None:
    c = _elr_comparator()
    rep = c.step(p.update_feature(p.ELR_FEATURE, 0), _feature_answer(False))
    assert (rep.release, rep.kip) == (AGREES, AGREES), rep.findings
    assert c.states["release"].elr_live is False
    # Broker 2 fenced with ELR off: the ISR keeps its last member, no ELR update; the
    # ELR [3] left from before is not a NoElrWhenDisabled violation in such a run.
    rep = c.step(p.fence(2), answer("fence", {"t-0": part(1, 0, 2, [1, 2, 3], [1], [], [])},
                                    brokers([1, 2, 3], (2, 3), (2, 3))))
    assert rep.release == AGREES, rep.findings
    c = _elr_comparator()
    rep = c.step(p.update_feature(p.ELR_FEATURE, 0), _feature_answer(True))
    assert rep.release == DIVERGES and rep.findings[0].name == "elr"


def test_no_elr_when_disabled_is_not_asserted_after_a_live_change() -> None:
    c = evolve(_with_elr_member(), elr_enabled=False)
    assert "NoElrWhenDisabled" in {r for r, _ in violations(c, "t-0")}
    live = evolve(c, elr_live=False)
    assert "NoElrWhenDisabled" not in {r for r, _ in violations(live, "t-0")}


# ---- a controller fault is a finding of its own class ----

def _fault(op: str = "register") -> Answer:
    a = answer(op, {}, brokers([1, 2, 3], (3,), (3,)), ok=False,
               error_name="UNKNOWN_SERVER_ERROR")
    return Answer(**{**a.__dict__, "exception": "java.lang.RuntimeException: Topic ID x "
                     "existed in isrMembers, but not in the topics map."})


def test_a_fault_is_a_finding_of_its_own_class_named_by_the_known_bug() -> None:
    c = _elr_comparator()
    before = c.states["release"]
    rep = c.step(p.register(3, clean=False), _fault())
    assert (rep.release, rep.kip) == (FAULT, FAULT)
    (f,) = rep.findings
    assert f.signature == "fault:RuntimeException:register:kafka-4.3"
    assert "existed in isrMembers" in f.detail
    assert c.states["release"].partitions == before.partitions  # the event was reverted
    for version in [(4, 0, 2), (4, 1, 2), (4, 2, 2), (4, 3, 1)]:
        bug = naming_diff_finding(version, f.signature)
        assert bug is not None and bug.id == STALE
    assert naming_diff_finding((4, 3, 1), "fault:RuntimeException:unregister:x").id == STALE
    assert naming_diff_finding((3, 9, 2), f.signature) is None
    assert naming_diff_finding((4, 3, 1), "fault:NullPointerException:register:x") is None


# ---- the generator ----

def _state(deleted: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    parts = {"a-0": part(1, 0, 0, [1, 2, 3], [1, 2, 3])}
    if not deleted:
        parts["b-0"] = part(2, 0, 0, [2, 3, 4], [2, 3, 4])
    return parts, brokers(IDS)


def test_the_generator_deletes_recreates_and_toggles_elr_where_it_can() -> None:
    from harness.differential import workload
    assert workload.FEATURE_WEIGHT == 0.05  # on since its signatures were triaged
    off = RandomEvents(random.Random(5), IDS, ["a", "b"], elr_feature=True, feature_weight=0)
    parts0, regs0 = _state(True)
    assert not any(off.next(parts0, regs0)["op"] == "updateFeature" for _ in range(2000))

    def run(deleted: bool, elr_feature: bool) -> list[dict[str, Any]]:
        gen = RandomEvents(random.Random(5), IDS, ["a", "b"], elr_feature=elr_feature)
        parts, regs = _state(deleted)
        return [gen.next(parts, regs) for _ in range(3000)]
    events = run(deleted=True, elr_feature=True)
    for e in events:
        p.check_event(e)
    created = [e for e in events if e["op"] == "createTopic"]
    assert created and {e["topic"] for e in created} == {"b"}  # only the deleted name
    assert {e["topic"] for e in events if e["op"] == "deleteTopic"} == {"a"}
    assert all(len(set(r)) == len(r) and 2 <= len(r) <= 3 for e in created
               for r in e["assignment"])
    levels = {e["level"] for e in events if e["op"] == "updateFeature"}
    assert levels == {0, 1}
    whole = run(deleted=False, elr_feature=False)
    assert not any(e["op"] in ("createTopic", "updateFeature") for e in whole)
    assert {e["topic"] for e in whole if e["op"] == "deleteTopic"} == {"a", "b"}
    # CreatePartitions grows the topic it counted (the count above what it has).
    grown = [e for e in whole if e["op"] == "createPartitions"]
    assert grown and all(e["count"] >= 1 for e in grown)
    assert any(e["count"] > 1 for e in grown)


def test_repair_keeps_the_life_cycle_valid() -> None:
    parts, regs = _state(deleted=True)
    assert repair(p.delete_topic("a"), parts, regs, IDS) == p.delete_topic("a")
    assert repair(p.delete_topic("b"), parts, regs, IDS) is None
    assert repair(p.create_topic("b", [[1, 2]]), parts, regs, IDS) is not None
    assert repair(p.create_topic("a", [[1, 2]]), parts, regs, IDS) is None
    assert repair(p.create_topic("b", [[1, 9]]), parts, regs, IDS) is None
    feature = p.update_feature(p.ELR_FEATURE, 0)
    assert repair(feature, parts, regs, IDS) == feature
