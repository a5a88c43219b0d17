"""Snapshot equivalence (issue 44 item 1; harness/differential/java/DriverSnapshot.java):
at a ``snapshot`` event the driver loads the build's own snapshot into fresh managers and
runs later events on both; a difference is a ``snapshot:`` finding. A crafted difference
(a fake answer; a snapshot written without a record type) must fire it, and on the real
builds: the stale broker-to-ELR index (docs/findings/elr-index-stale-after-min-isr-change.md)
makes the two sides differ on 4.0.2+ with ELR on (a controller restarted from a snapshot
registers the broker, the original faults), never on 3.x, and a clean sequence is clean."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from test_differential_model import answer, brokers, comparator

from harness.cli.app import main
from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.campaign import Campaign, Config
from harness.differential.campaign.lanes import finding_lane
from harness.differential.driver import ControllerDriver
from harness.differential.protocol import Answer, Settings
from harness.differential.workload import repair
from harness.infra.cache import cache_root
from harness.infra.errors import UsageError
from reference.model.controller_events import apply
from reference.releases.catalog import get_profile
from reference.releases.known_bugs import naming_diff_finding

STALE = "elr-index-stale-after-min-isr-change"


def _with_diff(a: Answer, diff: dict[str, Any]) -> Answer:
    return Answer(**{**a.__dict__, "snapshot_diff": diff, "raw": {**a.raw, "snapshotDiff": diff}})


# ---- crafted: the class, its signature, its lane, the known bug ----

def test_a_snapshot_difference_is_a_finding_of_its_own_class() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    c.step(p.create_topic("t", [[1, 2, 3]]), answer("createTopic", {}, brokers([1, 2, 3])))
    c.step(p.snapshot(), answer("snapshot", {}, brokers([1, 2, 3])))
    clean = c.step(p.fence(3), answer("fence", {}, brokers([1, 2, 3], (3,), (3,))))
    assert not [f for f in clean.findings if f.axis == "snapshot"]
    diff = {"name": "ok", "detail": "after the snapshot at event 2 (1 event(s) before this "
            "one), the fresh controller's answer differs at ok", "path": "ok",
            "original": False, "fresh": True, "snapshotAt": 2,
            "freshAnswer": {"ok": True, "records": []}}
    a = _with_diff(answer("register", {}, brokers([1, 2, 3], (3,)), ok=False,
                          error_name="UNKNOWN_SERVER_ERROR"), diff)
    rep = c.step(p.register(3, clean=False), a)
    (f,) = [f for f in rep.findings if f.axis == "snapshot"]
    assert f.signature == "snapshot:ok:register:kafka-4.3"
    assert "original false, fresh true" in f.detail and "the fresh controller" in f.detail
    assert finding_lane(f, p.register(3, clean=False)) == 0
    for version in [(4, 0, 2), (4, 3, 1), (4, 4, 0)]:
        bug = naming_diff_finding(version, f.signature, f.detail)
        assert bug is not None and bug.id == STALE
    assert naming_diff_finding((3, 9, 2), f.signature) is None
    assert naming_diff_finding((4, 4, 0), "snapshot:loaded.partitions.elr:snapshot:x") is None


def test_a_loaded_state_difference_names_the_partition() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    diff = {"name": "loaded.partitions.lastKnownElr", "detail": "the loaded state differs at "
            "partitions.k2t0-0.lastKnownElr.size", "path": "partitions.k2t0-0.lastKnownElr.size",
            "original": 1, "fresh": 0}
    rep = c.step(p.snapshot(), _with_diff(answer("snapshot", {}, brokers([1, 2, 3])), diff))
    (f,) = rep.findings
    assert (f.signature, f.where) == ("snapshot:loaded.partitions.lastKnownElr:snapshot:kafka-4.3",
                                      "k2t0-0")
    assert finding_lane(f, p.snapshot()) == 2


def test_a_fault_and_a_snapshot_difference_at_one_event_are_both_findings() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    a = answer("register", {}, brokers([1, 2, 3]), ok=False, error_name="UNKNOWN_SERVER_ERROR")
    a = Answer(**{**a.__dict__, "exception": "java.lang.RuntimeException: Topic ID x existed "
                  "in isrMembers, but not in the topics map."})
    rep = c.step(p.register(3, clean=False), _with_diff(a, {"name": "ok", "path": "ok"}))
    assert {f.axis for f in rep.findings} == {"fault", "snapshot"}


def test_the_snapshot_event_changes_nothing_in_the_model() -> None:
    c = comparator([1, 2, 3], min_isr=2)
    before = c.states["release"]
    pred = apply(before, get_profile("kafka-4.3"), p.snapshot())
    assert pred.unmodelled is None
    assert [o.cluster for o in pred.outcomes] == [before]
    assert repair(p.snapshot(7), {}, {}, [1, 2, 3], 9) == p.snapshot(7)


def test_the_snapshot_event_and_its_flags() -> None:
    assert p.snapshot() == {"op": "snapshot"}
    assert p.snapshot(0) == {"op": "snapshot", "shadow": 0}
    p.check_event({"op": "snapshot", "omit": "ConfigRecord"})
    with pytest.raises(UsageError, match="has no field"):
        p.check_event({"op": "snapshot", "broker": 1})


@pytest.mark.parametrize("flags, message", [
    (["--snapshot-rate", "101"], "--snapshot-rate 101: give 0..100"),
    (["--snapshot-shadow", "0"], "--snapshot-shadow 0: give 1..100000"),
])
def test_bad_snapshot_flags_fail_before_any_jvm(flags: list[str], message: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--runs-dir", str(tmp_path), *flags]) == 2
    assert message in capsys.readouterr().err


class _Ready:
    """A session's first answer: the cluster's min ISR the session started with."""
    records = ({"type": "ConfigRecord", "resourceType": 4, "resourceName": "",
                "name": "min.insync.replicas", "value": "2"},)


def sent_by_replay(tmp_path: Path, candidates: list[list[dict[str, Any]]], min_isr: int = 2
                   ) -> list[list[dict[str, Any]]]:
    """What a shrink's replay of ``candidates`` sends (shrink.py ``replay``), each batch, on
    a stand-in session that answers every event."""
    sent: list[list[dict[str, Any]]] = []

    class FakeSession:
        elr = True
        ready = _Ready()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.comparator = comparator([1, 2, 3], min_isr=2)

        def send(self, events: list[dict[str, Any]]) -> list[Answer]:
            sent.append(list(events))
            return [answer(str(e["op"]), {}, brokers([1, 2, 3])) for e in events]

        def close(self) -> None:
            pass

    import harness.differential.campaign.shrink as shrink_mod
    mp = pytest.MonkeyPatch()
    mp.setattr(shrink_mod, "Session", FakeSession)
    try:
        campaign = Campaign(build=None,  # type: ignore[arg-type]
                            cfg=Config(seed=1, budget_s=1, min_isr=min_isr),
                            out_dir=tmp_path, say=lambda s: None)
        campaign.replay(candidates)
    finally:
        mp.undo()
    return sent


def test_a_shrink_replay_ends_a_candidates_shadow(tmp_path: Path) -> None:
    """The fresh managers of one candidate's snapshot must not answer the next candidate's
    events: after a candidate with a snapshot the replay sends a snapshot with no shadow."""
    sent = sent_by_replay(tmp_path, [[p.fence(1), p.snapshot(5), p.register(1)], [p.fence(2)]])
    assert sent[1] == [p.snapshot(0)]


# ---- the real driver ----

def _cached(version: str) -> builds.Build:
    if not (cache_root() / "kafka" / version / "libs" / ".complete").exists():
        pytest.skip(f"Kafka {version} is not in the cache; fast tests do not download Kafka")
    return builds.from_maven(version)


def _stale_index(omit: str | None = None) -> list[dict[str, Any]]:
    """docs/findings/elr-index-stale-after-min-isr-change.md in driver events: a broker in
    t's ELR, t's min ISR lowered (ClearElrRecord), t deleted; a snapshot; the broker's
    unclean registration."""
    snap: dict[str, Any] = {"op": "snapshot"} if omit is None else {"op": "snapshot",
                                                                    "omit": omit}
    # (the first snapshot puts t's config in the image's base, so that the deletion removes
    # it; else the second snapshot's loaded state differs, which ends the shadow there: see
    # test_a_deleted_topics_config_survives_in_the_image)
    return [p.create_topic("t", [[1, 2, 3]], {"min.insync.replicas": "3"}),
            p.create_topic("u", [[1, 2, 3]]), p.snapshot(0), p.fence(3),
            p.alter_config({"min.insync.replicas": "2"}, topic="t"), p.delete_topic("t"),
            snap, p.register(3, clean=False), p.unfence(3), p.fence(1)]


def _run(version: str, events: list[dict[str, Any]], elr: bool | None) -> list[Answer]:
    with ControllerDriver.for_build(_cached(version), Settings(brokers=(1, 2, 3), min_isr=2,
                                                               elr=elr)) as d:
        return [d.send(e) for e in events]


def test_the_stale_index_makes_a_snapshot_restart_differ_on_the_newest_build() -> None:
    answers = _run("4.4.0", _stale_index(), True)
    snap, reg = answers[6], answers[7]
    assert snap.ok and snap.raw["snapshot"]["records"] > 0 and snap.snapshot_diff is None
    assert reg.exception is not None and "existed in isrMembers" in reg.exception
    d = reg.snapshot_diff
    assert d is not None and (d["name"], d["original"], d["fresh"]) == ("ok", False, True)
    assert d["freshAnswer"]["records"][0]["type"] == "RegisterBrokerRecord"
    assert all(a.snapshot_diff is None for a in answers[8:])  # the shadow ended at it


def test_the_stale_index_is_no_snapshot_difference_on_3x() -> None:
    answers = _run("3.9.2", _stale_index(), None)
    assert answers[7].ok and all(a.snapshot_diff is None for a in answers)


def test_a_snapshot_without_a_record_type_fires_the_oracle() -> None:
    """Crafted: the snapshot written without its ConfigRecords (t's min ISR 3 lost) or its
    RegisterBrokerRecords: the loaded state differs at the snapshot event, and no shadow runs
    (a later difference would follow from it: the fence would put no broker in the ELR)."""
    events = [p.create_topic("t", [[1, 2, 3]], {"min.insync.replicas": "3"}),
              {"op": "snapshot", "omit": "ConfigRecord"}, p.fence(3)]
    answers = _run("4.4.0", events, True)
    assert answers[1].raw["snapshot"]["omitted"] == "ConfigRecord"
    d = answers[1].snapshot_diff
    assert d is not None and d["name"] == "loaded.configs", json.dumps(d)
    # the first config lost: the cluster's min ISR (ELR's bootstrap record), then t's
    assert (d["path"], d["original"], d["fresh"]) == ("configs.broker ", "min.insync.replicas=2",
                                                      None)
    assert answers[2].snapshot_diff is None
    loaded = _run("4.4.0", [events[0], {"op": "snapshot", "omit": "RegisterBrokerRecord"}],
                  True)[1].snapshot_diff
    assert loaded is not None
    assert (loaded["name"], loaded["path"]) == ("loaded.brokers", "brokers.1")


def _deleted_topic_config() -> list[dict[str, Any]]:
    """A topic created with its own min ISR and deleted between two snapshot points (one
    image delta), then a snapshot."""
    return [p.create_topic("k0t1", [[1, 2, 3]], {"min.insync.replicas": "1"}),
            p.delete_topic("k0t1"), p.snapshot()]


@pytest.mark.parametrize("version, kept", [("4.4.0", True), ("3.8.1", True), ("3.7.2", False)])
def test_a_deleted_topics_config_survives_in_the_image(version: str, kept: bool) -> None:
    """docs/findings/deleted-topic-config-survives-image.md: the snapshot of 3.8+ keeps the
    deleted topic's config (ConfigurationsDelta.replay(RemoveTopicRecord), KAFKA-16206);
    the controller loaded from it holds it, the original does not."""
    d = _run(version, _deleted_topic_config(), True if version >= "4" else None)[2].snapshot_diff
    if not kept:
        assert d is None
        return
    assert d is not None and d["name"] == "loaded.configs", d
    assert (d["path"], d["original"], d["fresh"]) == ("configs.topic k0t1", None,
                                                      "min.insync.replicas=1")
    c = comparator([1, 2, 3], min_isr=2, version=(4, 4, 0))
    a = answer("snapshot", {}, brokers([1, 2, 3]))
    (f,) = c.step(p.snapshot(), _with_diff(a, d)).findings
    assert (f.signature, f.where) == ("snapshot:loaded.configs:snapshot:kafka-4.3", "k0t1-configs")
    assert finding_lane(f, p.snapshot()) == 0
    bug = naming_diff_finding((4, 4, 0), f.signature, f.detail)
    assert bug is not None and bug.id == "deleted-topic-config-survives-image"
    assert naming_diff_finding((3, 7, 2), f.signature, f.detail) is None


def test_random_events_with_snapshot_points_are_clean_on_the_newest_build() -> None:
    """Random events of one lane (ELR on, no live toggles) with a snapshot every 25 events:
    no difference but the known ones such events may reach: the stale index (a topic
    deleted after a min ISR change with a broker in its ELR) and a deleted topic's config
    kept in the image (a topic created with its own min ISR and deleted between two
    snapshot points)."""
    from harness.differential.workload import RandomEvents
    rng = random.Random(44)
    gen = RandomEvents(rng, [1, 2, 3, 4, 5], ["t0", "t1", "t2"], feature_weight=0)
    with ControllerDriver.for_build(_cached("4.4.0"), Settings(brokers=(1, 2, 3, 4, 5),
                                                               min_isr=2, elr=True)) as d:
        parts: dict[str, Any] = {}
        regs: dict[str, Any] = {}
        for e in gen.setup():
            a = d.send(e)
            parts.update(a.partitions)
            regs = a.brokers
        diffs = []
        for n in range(400):
            e = p.snapshot(30) if n % 25 == 0 else gen.next(parts, regs)
            a = d.send(e)
            parts.update(a.partitions)
            for k in a.removed:
                parts.pop(k, None)
            regs = a.brokers
            if a.snapshot_diff is not None:
                diffs.append((e["op"], a.snapshot_diff["name"], a.exception))
    # the known ones only: the stale index (a fault where the fresh controller registers)
    # and a deleted topic's config kept by the image (docs/findings/)
    assert all((op in ("register", "unregister") and exc and "isrMembers" in exc)
               or name == "loaded.configs" for op, name, exc in diffs), diffs


def test_elr_fields_a_snapshot_leaves_out_with_elr_off_are_the_cited_deviation() -> None:
    """With ELR turned off live, 4.x keeps ELR and LastKnownELR (elr-disable-keeps-fields)
    and its snapshot leaves them out: DEVIATES by that deviation, no finding; with ELR on,
    the same difference is a finding."""
    diff = {"name": "loaded.partitions.lastKnownElr", "path": "partitions.t-0.lastKnownElr.size",
            "original": 1, "fresh": 0, "detail": "the loaded state differs"}
    c = comparator([1, 2, 3], min_isr=2)
    feature = answer("updateFeature", {}, brokers([1, 2, 3]))
    c.step(p.update_feature(p.ELR_FEATURE, 0),
           Answer(**{**feature.__dict__, "raw": {"elr": False, "level": 0}}))
    rep = c.step(p.snapshot(), _with_diff(answer("snapshot", {}, brokers([1, 2, 3])), diff))
    assert (rep.findings, rep.deviations) == ([], ("elr-disable-keeps-fields",))
    on = comparator([1, 2, 3], min_isr=2)
    rep = on.step(p.snapshot(), _with_diff(answer("snapshot", {}, brokers([1, 2, 3])), diff))
    assert [f.signature for f in rep.findings] == [
        "snapshot:loaded.partitions.lastKnownElr:snapshot:kafka-4.3"]


def test_a_shadow_reports_unchanged_brokers_as_the_original_does() -> None:
    """Triage of ``snapshot:brokers:<op>`` (bench/RESULTS-diff.md "Triage"): with the
    campaign's report "changed", an answer carries the brokers only when they changed; the
    fresh managers of a snapshot had sent none yet, so their first answer carried them and
    the original's did not ("original null, fresh {...}" one event after every such
    snapshot). An event that changes no broker is no difference."""
    events = [p.create_topic("t", [[1, 2, 3]]), p.snapshot(5),
              p.alter_partition("t", [1, 2]), p.fence(3), p.alter_partition("t", [1])]
    with ControllerDriver.for_build(_cached("4.4.0"), Settings(
            brokers=(1, 2, 3), min_isr=2, elr=True, report="changed")) as d:
        answers = [d.send(e) for e in events]
    assert answers[2].ok and not answers[2].brokers
    assert [a.snapshot_diff for a in answers] == [None] * len(events), [
        a.snapshot_diff for a in answers]
    assert answers[3].brokers["3"]["fenced"]  # a change is still reported, on both sides


def test_a_shadow_knows_the_brokers_log_directories() -> None:
    """Triage of ``snapshot:dir:assignDirs``: broker 1 registered with three log
    directories before the snapshot; an assignment to its second directory names the same
    directory on both sides (the fresh driver had only the first, and named a new random
    one); broker 2 registers with three after it, and an assignment to its third, or to
    one it never registered, names the same id on both sides (ids were random per side)."""
    events = [p.create_topic("t", [[1, 2, 3]]),
              {"op": "register", "broker": 1, "clean": True, "logDirs": 3}, p.unfence(1),
              p.snapshot(9), p.assign_dirs(1, "t", 0, 1),
              {"op": "register", "broker": 2, "clean": True, "logDirs": 3}, p.unfence(2),
              p.assign_dirs(2, "t", 0, 2), p.assign_dirs(2, "t", 0, 5)]
    with ControllerDriver.for_build(_cached("4.4.0"), Settings(
            brokers=(1, 2, 3), min_isr=2, elr=True, report="changed")) as d:
        answers = [d.send(e) for e in events]
    assert answers[4].ok and answers[7].ok, (answers[4].raw, answers[7].raw)
    assert [a.snapshot_diff for a in answers] == [None] * len(events), [
        a.snapshot_diff for a in answers]


def test_a_cluster_clear_elr_after_a_topic_created_and_deleted_fails_the_delta_on_4_0() -> None:
    """docs/findings/cluster-clear-elr-replays-deleted-topic.md: on 4.0.2 (and 4.1.2) the
    image delta of these records throws (TopicsDelta keeps the deleted topic in
    createdTopics); 4.4.0 writes the snapshot; the catalog names the 4.0 finding."""
    events = [p.create_topic("k0t0", [[1, 2, 3]]), p.snapshot(5),
              p.create_topic("k0t1", [[1, 2, 3]]), p.delete_topic("k0t1"),
              p.alter_config({"min.insync.replicas": "1"}), p.snapshot(5)]
    old = _run("4.0.2", events, True)[-1].snapshot_diff
    assert old is not None and old["name"] == "write" and "this.image\" is null" in old["detail"]
    bug = naming_diff_finding((4, 0, 2), "snapshot:write:snapshot:kafka-4.0-elr", old["detail"])
    assert bug is not None and bug.id == "cluster-clear-elr-replays-deleted-topic"
    assert naming_diff_finding((4, 2, 2), "snapshot:write:snapshot:kafka-4.2",
                               old["detail"]) is None
    assert _run("4.4.0", events, True)[-1].snapshot_diff is None


def test_a_topic_created_after_the_snapshot_is_found_by_name_on_both_sides() -> None:
    """Triage of ``snapshot:byName:findTopics``: a topic created after the snapshot gets a
    random id on each side; the lookup's answer names it, so the comparison leaves the id
    out, as it does in records."""
    events = [p.create_topic("t", [[1, 2, 3]]), p.snapshot(5),
              p.create_topic("u", [[1, 2, 3]]), p.find_topics(["t", "u", "v"])]
    answers = _run("4.4.0", events, True)
    assert answers[3].ok and "u" in answers[3].raw["byName"]
    assert [a.snapshot_diff for a in answers] == [None] * len(events), [
        a.snapshot_diff for a in answers]


# ---- triage of snapshot:ok:heartbeat (bench/RESULTS-diff.md "Triage, fifth session") ----

DIRECTORY = "directory-index-stale-after-topic-deletion"


def test_a_snapshot_difference_at_a_fault_carries_what_the_original_threw() -> None:
    """The snapshot finding's detail says what the original threw, so the known bug the
    fault is named by names it too (the directory index: a heartbeat with an offline
    directory faults where a controller loaded from a later snapshot accepts it)."""
    c = comparator([1, 2, 3], min_isr=2)
    diff = {"name": "ok", "detail": "after the snapshot at event 1 (1 event(s) before this "
            "one), the fresh controller's answer differs at ok", "path": "ok",
            "original": False, "fresh": True, "freshAnswer": {"ok": True, "records": []}}
    a = answer("heartbeat", {}, brokers([1, 2, 3]), ok=False, error_name="UNKNOWN_SERVER_ERROR")
    exc = ("java.lang.RuntimeException: Topic ID x existed in isrMembers, but not in the "
           "topics map.")
    faulted = Answer(**{**a.__dict__, "exception": exc})
    ev = p.heartbeat(1, offlineDirs=[0])
    (f,) = [f for f in c.step(ev, _with_diff(faulted, diff)).findings if f.axis == "snapshot"]
    assert f.signature == "snapshot:ok:heartbeat:kafka-4.3" and exc in f.detail
    for version in [(3, 8, 1), (4, 3, 1), (4, 4, 0)]:
        bug = naming_diff_finding(version, f.signature, f.detail)
        assert bug is not None and bug.id == DIRECTORY
    # refused without a fault: no cause to name it by
    (g,) = [g for g in c.step(ev, _with_diff(a, diff)).findings if g.axis == "snapshot"]
    assert "threw" not in g.detail and naming_diff_finding((4, 4, 0), g.signature,
                                                           g.detail) is None


def _directory_index(snapshot_at: int) -> list[dict[str, Any]]:
    """docs/findings/directory-index-stale-after-topic-deletion/events.json with a snapshot
    point inserted before event ``snapshot_at``."""
    events = [p.create_topic("k0t0", [[1, 2, 3]]), p.fence(1), p.fence(2), p.fence(3),
              p.delete_topic("k0t0"), p.register(1, clean=True), p.unfence(1),
              p.heartbeat(1, offlineDirs=[0])]
    return events[:snapshot_at] + [p.snapshot()] + events[snapshot_at:]


def test_the_directory_index_makes_a_later_snapshot_accept_the_heartbeat() -> None:
    """On 4.4.0 (ELR on): a snapshot after the deletion loads no stale directory entry, so
    the fresh controller accepts the heartbeat the original faults at (snapshot:ok:heartbeat,
    named by the catalog); a snapshot before the deletion replays the deletion on both
    sides, and both fault (no snapshot finding)."""
    from harness.differential.campaign.session import Session, settings_for
    build = _cached("4.4.0")
    for at, differs in ((7, True), (4, False)):
        s = Session(build, settings_for(1, Config(seed=0, budget_s=0, min_isr=2), elr=True))
        try:
            events = _directory_index(at)
            answers = s.send(events)
            found = [f for e, a in zip(events, answers, strict=True)
                     for f in s.comparator.step(e, a).findings]
        finally:
            s.close()
        assert answers[-1].exception is not None and "isrMembers" in answers[-1].exception
        snap = [f for f in found if f.axis == "snapshot"]
        if differs:
            (f,) = snap
            assert f.signature == "snapshot:ok:heartbeat:kafka-4.3"
            bug = naming_diff_finding((4, 4, 0), f.signature, f.detail)
            assert bug is not None and bug.id == DIRECTORY
        else:
            assert snap == [], snap
