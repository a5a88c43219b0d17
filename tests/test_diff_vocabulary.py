"""The wider vocabulary of `kafka-chaos diff` (issue 44 item 2) and the coverage report of
every manager (item 4), no JVM: each form only where the build has it, states the model
cannot follow undone at once, the model calling the new forms UNMODELLED, the corpus's
repair, JaCoCo's XML read for whole classes with their nested classes kept apart."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from test_differential_model import brokers, part

from harness.differential import coverage
from harness.differential import protocol as p
from harness.differential.workload import Capabilities, RandomEvents, repair
from reference.model.controller_events import apply
from reference.model.controller_events.cluster import Cluster
from reference.releases.catalog import get_profile

LANE = [1, 2, 3, 4, 5]
TOPICS = ["k0t0", "k0t1", "k0t2"]
MV = {"metadata.version": (7, 33)}


def _state() -> tuple[dict[str, Any], dict[str, Any]]:
    parts = {"k0t0-0": part(2, 2, 5, [2, 3, 4], [2, 3]),  # broker 1 holds no replica
             "k0t1-0": part(2, 1, 3, [2, 3, 4, 5], [2, 3], adding=[4, 5], removing=[1]),
             "k0t2-0": part(-1, 3, 7, [3, 4, 5], [])}
    regs = brokers([1, 2, 3, 4], fenced=(3, 4), down=(4,))  # 5 unregistered
    return parts, regs


def _events(caps: Capabilities | None, n: int = 4000, seed: int = 7) -> list[dict[str, Any]]:
    gen = RandomEvents(random.Random(seed), LANE, TOPICS, elr_feature=True, caps=caps)
    parts, regs = _state()
    return [gen.next(parts, regs) for _ in range(n)]


def test_capabilities_follow_the_release_line() -> None:
    assert Capabilities.of("3.6.2", {}) == Capabilities()
    c37 = Capabilities.of("3.7.2", MV)
    assert c37.log_dirs and not c37.cordoned_dirs and not c37.allow_rf_change
    assert c37.mv_levels == (7, 33)
    c41 = Capabilities.of("4.1.2", {})
    assert c41.allow_rf_change and not c41.cordoned_dirs and c41.mv_levels is None
    assert Capabilities.of("4.4.0", MV).cordoned_dirs


def test_without_capabilities_the_generator_keeps_the_base_vocabulary() -> None:
    events = _events(None)
    assert {e["op"] for e in events} <= {
        "fence", "controlledShutdown", "unfence", "register", "createPartitions", "deleteTopic",
        "createTopic", "updateFeature", "alterPartition", "electLeaders", "alterConfig", "tick",
        "completeReassignment", "cancelReassignment", "reassign"}
    assert not any({"logDirs", "allowRfChange"} & e.keys() for e in events)
    assert all(e.get("name", "eligible.leader.replicas.version")
               == "eligible.leader.replicas.version" for e in events)


def test_the_wider_vocabulary_on_a_4_4_build() -> None:
    events = _events(Capabilities.of("4.4.0", MV))
    for e in events:
        p.check_event(e)
    ops = {e["op"] for e in events}
    assert {"heartbeat", "unregister", "assignDirs", "listReassignments", "findTopics"} <= ops
    beats = [e for e in events if e["op"] == "heartbeat"]
    assert {"wantFence", "caughtUp", "offlineDirs", "cordonedDirs"} <= {k for e in beats for k in e}
    regs = [e for e in events if e["op"] == "register"]
    assert any(e["broker"] == 5 for e in regs)  # the unregistered broker comes back
    assert {e.get("logDirs") for e in regs} >= {None, 0, 3}
    most: dict[int, int] = {}
    for e in regs:  # a broker never registers with fewer directories than before
        if e.get("logDirs"):
            assert e["logDirs"] >= most.get(e["broker"], 1)
            most[e["broker"]] = e["logDirs"]
    configs = [e for e in events if e["op"] == "alterConfig"]
    assert any("topic" in e and "unclean.leader.election.enable" in e["configs"] for e in configs)
    assert any("topic" not in e and "broker" not in e and "min.insync.replicas" in e["configs"]
               for e in configs)
    assert any("broker" in e for e in configs)
    assert any(e["op"] == "electLeaders" and "topic" not in e for e in events)
    assert {e.get("allowRfChange") for e in events if e["op"] == "reassign"} >= {None, True, False}
    kinds = {e["upgradeType"] for e in events if e.get("name") == "metadata.version"}
    assert kinds and kinds <= set(p.UPGRADE_TYPES)


def test_a_3_6_build_gets_no_directory_and_no_rf_flag() -> None:
    events = _events(Capabilities.of("3.6.2", {}))
    assert not any(e["op"] == "assignDirs" for e in events)
    assert not any({"logDirs", "offlineDirs", "cordonedDirs", "allowRfChange"} & e.keys()
                   for e in events)
    assert any(e["op"] == "heartbeat" for e in events)


def test_what_the_model_cannot_follow_is_undone_by_the_next_events() -> None:
    events = _events(Capabilities.of("4.4.0", MV), n=6000)
    seen = 0
    for i, e in enumerate(events):
        if e["op"] == "heartbeat" and "offlineDirs" in e:
            b = e["broker"]
            assert events[i + 1] == p.fence(b)
            assert events[i + 2]["op"] == "register" and events[i + 2]["broker"] == b
            seen += 1
        if e["op"] == "heartbeat" and e.get("cordonedDirs"):
            assert events[i + 1] == p.heartbeat(e["broker"], cordonedDirs=[])
            seen += 1
        if e["op"] == "assignDirs" and e["dir"]:
            assert e["back"] is True  # undone in the same event
            seen += 1
    assert seen > 10


def _cluster() -> Cluster:
    from harness.differential.model import initial
    parts, regs = _state()
    return initial(parts, regs, min_isr=2, unclean=False, elr=True)


@pytest.mark.parametrize(("event", "modelled"), [
    ({"op": "register", "broker": 4, "logDirs": 0}, False),
    ({"op": "register", "broker": 4, "logDirs": 2}, True),
    ({"op": "electLeaders", "type": "preferred"}, False),
    (p.elect_leaders("k0t0"), True),
    ({**p.reassign("k0t0", [1, 2, 4]), "allowRfChange": False}, False),
    ({**p.reassign("k0t0", [1, 2, 4]), "allowRfChange": True}, True),
    (p.reassign("k0t1", [1, 2, 3]), False),  # one is in progress
    (p.assign_dirs(1, "k0t0"), False),
    (p.list_reassignments(), False),
    (p.find_topics(["k0t0"]), False),
    (p.heartbeat(1, offlineDirs=[0]), False),
])
def test_the_model_calls_the_new_forms_unmodelled(event: dict[str, Any], modelled: bool) -> None:
    pred = apply(_cluster(), get_profile("kafka-4.3"), event)
    assert (pred.unmodelled is None) == modelled, pred.unmodelled


@pytest.mark.parametrize(("event", "kept"), [
    (p.register(5), True),  # unregistered: it may register again
    (p.register(11), False),  # another lane's
    (p.heartbeat(1, wantFence=True), True),
    (p.heartbeat(4), False),  # down
    (p.heartbeat(1, offlineDirs=[0]), False),  # needs its undoing
    (p.heartbeat(1, cordonedDirs=[0]), False),
    (p.assign_dirs(1, "k0t0", 0, 0), True),
    (p.assign_dirs(1, "k0t0", 0, 2), False),
    ({**p.assign_dirs(1, "k0t0", 0, 2), "back": True}, True),
    (p.list_reassignments(), True),
    ({"op": "electLeaders", "type": "unclean"}, True),
])
def test_repair_of_the_new_forms(event: dict[str, Any], kept: bool) -> None:
    parts, regs = _state()
    assert (repair(event, parts, regs, LANE, clock=9) is not None) == kept


PKG = "org/apache/kafka/controller"
XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<report name="t"><package name="{PKG}">
 <class name="{PKG}/ReplicationControlManager" sourcefilename="ReplicationControlManager.java">
  <method name="replay" desc="()V" line="10">
   <counter type="BRANCH" missed="2" covered="2"/></method>
  <method name="alterPartition" desc="()V" line="40">
   <counter type="BRANCH" missed="0" covered="6"/></method>
  <counter type="LINE" missed="1" covered="9"/><counter type="BRANCH" missed="2" covered="8"/>
 </class>
 <class name="{PKG}/ReplicationControlManager$Builder"
        sourcefilename="ReplicationControlManager.java">
  <method name="build" desc="()V" line="20">
   <counter type="BRANCH" missed="4" covered="0"/></method>
  <counter type="BRANCH" missed="4" covered="0"/>
 </class>
 <class name="{PKG}/FeatureControlManager" sourcefilename="FeatureControlManager.java">
  <method name="updateFeature" desc="()V" line="5">
   <counter type="BRANCH" missed="1" covered="1"/></method>
  <counter type="LINE" missed="0" covered="3"/><counter type="BRANCH" missed="1" covered="1"/>
 </class>
 <sourcefile name="ReplicationControlManager.java">
  <line nr="11" mi="0" ci="1" mb="2" cb="2"/>
  <line nr="21" mi="1" ci="0" mb="4" cb="0"/>
  <line nr="41" mi="0" ci="1" mb="0" cb="6"/>
 </sourcefile>
 <sourcefile name="FeatureControlManager.java">
  <line nr="6" mi="0" ci="1" mb="1" cb="1"/></sourcefile>
</package></report>"""


def test_every_manager_is_reported_whole_with_its_own_lines(tmp_path: Path) -> None:
    (path := tmp_path / "jacoco.xml").write_text(XML)
    report = coverage.read_report(path, "4.4.0")
    by = {t.name: t for t in report.targets}
    rcm = by["ReplicationControlManager"]
    assert rcm.branches == coverage.Counts(8, 2)  # the class's own, not its Builder's
    assert rcm.partial_lines == (("replay", 11, 2, 2),)  # line 21 is the Builder's
    assert by["FeatureControlManager"].partial_lines == (("updateFeature", 6, 1, 1),)
    lines = list(report.lines())
    assert "coverage ReplicationControlManager: branches 80.0% (8/10) (target 80%: met)" in \
        lines[0]
    assert not any("FeatureControlManager" in line and "target" in line for line in lines)


def test_older_metadata_version_sessions_come_with_coverage_only() -> None:
    from harness.differential.campaign.session import OLDER_MV, older_mv
    from harness.differential.campaign.state import Config
    cov = Config(seed=1, budget_s=1, coverage=True)
    assert [older_mv(cov, k, (4, 4, 0)) for k in range(6)] == [
        None, OLDER_MV, None, None, None, OLDER_MV]
    assert older_mv(Config(seed=1, budget_s=1), 1, (4, 4, 0)) is None
    assert older_mv(cov, 1, (3, 6, 2)) is None


def test_the_directory_index_fault_at_a_heartbeat_is_named() -> None:
    from reference.releases.known_bugs import naming_diff_finding
    sig = "fault:RuntimeException:heartbeat:kafka-4.3"
    text = ("the controller threw java.lang.RuntimeException: Topic ID x existed in "
            "isrMembers, but not in the topics map.")
    bug = naming_diff_finding((4, 4, 0), sig, text)
    assert bug is not None and bug.id == "directory-index-stale-after-topic-deletion"
    assert naming_diff_finding((4, 4, 0), sig, "java.lang.RuntimeException: other") is None
    assert naming_diff_finding((3, 7, 2), sig, text) is None


def test_base_vocabulary_flag() -> None:
    from harness.cli.app import parser
    from harness.cli.diff import parse_config
    from harness.differential.campaign.state import Config
    wide = parse_config(parser().parse_args(["diff"]))
    base = parse_config(parser().parse_args(["diff", "--base-vocabulary"]))
    assert isinstance(wide, Config) and isinstance(base, Config)
    assert wide.wide and not base.wide


def test_a_reassignment_elects_cleanly_whatever_the_topic_allows() -> None:
    """ReplicationControlManager.changePartitionReassignment sets no Election.UNCLEAN (the
    model elected an out-of-sync adding replica when the topic allowed unclean election;
    found on 3.9.2 with the topic-level config the wider vocabulary sets)."""
    from harness.differential.model import initial
    parts = {"k0t0-0": part(-1, 3, 5, [1, 2], [2])}
    regs = brokers([1, 2, 3, 4], fenced=(1, 2))
    c = initial(parts, regs, min_isr=1, unclean=False, elr=False)
    c = apply(c, get_profile("pre-elr"), p.alter_config(
        {"unclean.leader.election.enable": "true"}, "k0t0")).outcomes[0].cluster
    pred = apply(c, get_profile("pre-elr"), p.reassign("k0t0", [3, 4]))
    assert all(o.cluster.partitions["k0t0-0"].leader is None for o in pred.outcomes)
