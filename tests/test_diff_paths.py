"""The generator's short sequences to PartitionChangeBuilder's rarer paths (issue 44 item 4,
harness/differential/workload_paths.py), no JVM: each is made at its rate for a seed, its
events in the order that takes the path, only where the build has what it needs; and the
model predicts what the build (4.4.0's driver, 2026-11-28) wrote at the path's event, so
the sequences are compared like any other event (UNMODELLED only at ``assignDirs``)."""

from __future__ import annotations

import random
from typing import Any

from test_differential_model import brokers, part

from harness.differential import protocol as p
from harness.differential import workload_paths as paths
from harness.differential.model import initial
from harness.differential.workload import Capabilities, RandomEvents
from reference.model.controller_events import Cluster, apply
from reference.releases.catalog import get_profile

LANE = [1, 2, 3, 4, 5]
TOPICS = ["k0t0", "k0t1", "k0t2"]
CAPS = Capabilities.of("4.4.0", {"metadata.version": (7, 33)})
UNCLEAN = "unclean.leader.election.enable"


def _state() -> tuple[dict[str, Any], dict[str, Any]]:
    parts = {"k0t0-0": part(2, 2, 5, [2, 3, 4], [2, 3, 4]),
             "k0t1-0": part(3, 1, 3, [3, 4, 5], [3, 4]),
             "k0t2-0": part(4, 3, 7, [4, 5, 1], [4, 5, 1])}
    return parts, brokers(LANE)


def _kind(first: dict[str, Any], plan: list[dict[str, Any]]) -> str:
    if any(e["op"] == "assignDirs" for e in plan):
        return "later"
    if any(e["op"] == "updateFeature" for e in plan):
        return "lastknown"
    return "cancel" if any(e["op"] == "cancelReassignment" for e in plan) else "adding"


def _sequences(caps: Capabilities | None, elr_feature: bool = True, n: int = 6000,
               seed: int = 7) -> tuple[int, list[tuple[str, list[dict[str, Any]]]]]:
    """(random events, the sequences started: kind and events) of ``n`` events."""
    gen = RandomEvents(random.Random(seed), LANE, TOPICS, elr_feature=elr_feature, caps=caps)
    parts, regs = _state()
    random_events, seqs = 0, []
    while n > 0:
        planned = bool(gen.plan)
        e = gen.next(parts, regs)
        n -= 1
        if not planned:
            random_events += 1
            if gen.plan:
                seqs.append((_kind(e, gen.plan), [e, *gen.plan]))
    return random_events, seqs


def test_each_sequence_at_its_rate_for_a_seed() -> None:
    total, seqs = _sequences(CAPS)
    count = {k: sum(1 for kind, _ in seqs if kind == k)
             for k in ("adding", "cancel", "later", "lastknown")}
    # every partition of this state is led by a running ISR: each sequence's share of the
    # random events is its weight over the total (about 20): 0.15 / 20 for the unclean
    # adding replica (half of them cancelled), 0.15 / 20 for the later replica, 0.06 / 20
    # for the last known leader
    assert 0.004 < count["adding"] / total < 0.011, count
    assert 0.004 < count["cancel"] / total < 0.011, count
    assert 0.008 < count["later"] / total < 0.02, count
    assert 0.0015 < count["lastknown"] / total < 0.006, count
    for _, events in seqs:
        for e in events:
            p.check_event(e)


def test_the_sequences_send_their_steps_in_order() -> None:
    parts, _ = _state()
    _, seqs = _sequences(CAPS)
    in_event = 0
    for kind, events in seqs:
        first, topic = events[0], events[0]["topic"]
        key = f"{topic}-0"
        replicas, isr = parts[key]["replicas"], parts[key]["isr"]
        leader = parts[key]["leader"]
        fences = [e["broker"] for e in events if e["op"] == "fence"]
        if kind in ("adding", "cancel"):
            assert first == p.alter_config({UNCLEAN: "true"}, topic)
            target = events[1]["replicas"]
            assert events[1]["op"] == "reassign" and target[:-1] == replicas
            b = target[-1]
            assert b not in replicas
            assert fences[-1] == leader and set(fences) == set(replicas) | (
                {b} if kind == "cancel" else set())
            if kind == "cancel":
                assert fences[0] == b
                assert events[-3:] == [p.register(replicas[0]), p.cancel_reassignment(topic),
                                       p.unfence(replicas[0])]
            else:
                assert events[-1] == p.elect_leaders(topic, "preferred")
        elif kind == "later":
            assert first == p.alter_config({UNCLEAN: "false"}, topic)
            assign = next(e for e in events if e["op"] == "assignDirs")
            k = assign["broker"]
            assert k in isr and k != replicas[0]
            assert assign["dir"] == paths.OFFLINE_DIR and assign["back"] is True
            assert sorted(fences) == sorted(b for b in isr if b != k)
            if assign.get("elect") == "preferred":  # the election in the same event
                assert events[-1] is assign
                in_event += 1
            else:
                assert "elect" not in assign
                assert events[-2:] == [assign, p.elect_leaders(topic, "preferred")]
        else:
            assert first == p.alter_config({UNCLEAN: "false"}, topic)
            elr = [e["level"] for e in events if e["op"] == "updateFeature"]
            assert elr == [1, 0, 1]
            assert fences[-1] == leader and sorted(fences) == sorted(isr)
            regs = [e for e in events if e["op"] == "register"]
            assert [e["broker"] for e in regs] == fences and not any(e["clean"] for e in regs)
            assert events[-4:] == [p.update_feature(p.ELR_FEATURE, 0), p.unfence(leader),
                                   p.update_feature(p.ELR_FEATURE, 1),
                                   p.elect_leaders(topic, "preferred")]
    later = sum(1 for kind, _ in seqs if kind == "later")
    assert 0.3 * later < in_event < 0.7 * later


def test_only_where_the_build_has_what_they_need() -> None:
    # base vocabulary: none; no ELR feature: no last known leader; no log directories
    # (3.6): no later replica
    assert _sequences(None, n=2000)[1] == []
    kinds = {k for k, _ in _sequences(CAPS, elr_feature=False, n=3000)[1]}
    assert "lastknown" not in kinds and {"adding", "later"} <= kinds
    kinds = {k for k, _ in _sequences(Capabilities.of("3.6.2", {}), n=3000)[1]}
    assert "later" not in kinds and "adding" in kinds


def _run(c: Cluster, events: list[dict[str, Any]], profile: str = "kafka-4.3") -> Cluster:
    for e in events:
        pred = apply(c, get_profile(profile), e)
        assert pred.unmodelled is None, (e, pred.unmodelled)
        assert len({o.cluster.partitions["t-0"] for o in pred.outcomes}) == 1, e
        c = pred.outcomes[0].cluster
    return c


def _start(replicas: list[int]) -> Cluster:
    c = initial({}, brokers(LANE), min_isr=2, unclean=False, elr=True)
    return _run(c, [p.create_topic("t", [replicas])])


def test_the_model_predicts_the_adding_replica_completed_alone() -> None:
    """What 4.4.0 wrote: the unclean election of the adding replica 4 (ISR [4], RECOVERING,
    adding kept), then the preferred election's record of ``addingReplicas`` [] only."""
    c = _run(_start([1, 2, 3]), [p.alter_config({UNCLEAN: "true"}, "t"),
                                 p.reassign("t", [1, 2, 3, 4]), p.fence(2), p.fence(3),
                                 p.fence(1)])
    before = c.partitions["t-0"]
    assert (before.leader, before.isr, before.adding) == (4, frozenset({4}), (4,))
    after = _run(c, [p.elect_leaders("t")]).partitions["t-0"]
    assert after.adding == () and after.partition_epoch == before.partition_epoch + 1
    assert (after.leader, after.isr, after.replicas, after.leader_epoch) == (
        4, frozenset({4}), (1, 2, 3, 4), before.leader_epoch)


def test_the_model_predicts_the_leaderless_cancel_and_the_election_from_the_isr() -> None:
    """What 4.4.0 wrote: the cancel of a leaderless partition with LastKnownELR [1] reverts
    to [1, 2, 3] with ISR [1] (unclean revert), leader still none, leader epoch bumped; the
    unfencing of 1 elects it from the ISR, clearing LastKnownELR, ISR and ELR unchanged."""
    c = _run(_start([1, 2, 3]), [
        p.alter_config({UNCLEAN: "true"}, "t"), p.reassign("t", [1, 2, 3, 4]), p.fence(4),
        p.fence(2), p.fence(3), p.fence(1), p.register(1)])
    before = c.partitions["t-0"]
    assert before.leader is None and before.last_known_elr == frozenset({1})
    c = _run(c, [p.cancel_reassignment("t")])
    mid = c.partitions["t-0"]
    assert (mid.leader, mid.isr, mid.elr, mid.replicas, mid.adding) == (
        None, frozenset({1}), frozenset({3}), (1, 2, 3), ())
    assert mid.leader_epoch == before.leader_epoch + 1
    assert mid.last_known_elr == frozenset({1})
    after = _run(c, [p.unfence(1)]).partitions["t-0"]
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (
        1, frozenset({1}), frozenset({3}), frozenset())


def test_the_model_predicts_the_preferred_election_of_a_later_replica() -> None:
    """The state 4.4.0 left after broker 1's replica went to an offline directory and back
    (leaderless, ISR empty, ELR [1, 2], 1 running, 2 fenced; replicas [2, 1, 3]): the
    preferred election elects 1 from the ELR, as 4.4.0 did."""
    parts = {"t-0": part(-1, 2, 4, [2, 1, 3], [], elr=[1, 2], lke=[1])}
    c = initial(parts, brokers([1, 2, 3], fenced=(2, 3), down=(2, 3)), min_isr=2,
                unclean=False, elr=True)
    after = _run(c, [p.elect_leaders("t")]).partitions["t-0"]
    assert (after.leader, after.isr, after.elr, after.last_known_elr) == (
        1, frozenset({1}), frozenset({2}), frozenset())


def test_the_model_predicts_the_preferred_election_of_the_last_known_leader() -> None:
    """What 4.4.0 wrote: with ISR and ELR empty and LastKnownELR [1], broker 1 unfenced
    while ELR is off elects no one; with ELR on again, the preferred election elects 1
    (unclean: RECOVERING)."""
    c = _run(_start([2, 1, 3]), [
        p.update_feature(p.ELR_FEATURE, 1), p.alter_config({UNCLEAN: "false"}, "t"),
        p.fence(2), p.fence(3), p.fence(1), p.register(2, clean=False),
        p.register(3, clean=False), p.register(1, clean=False),
        p.update_feature(p.ELR_FEATURE, 0), p.unfence(1)])
    before = c.partitions["t-0"]
    assert (before.leader, before.isr, before.elr, before.last_known_elr) == (
        None, frozenset(), frozenset(), frozenset({1}))
    after = _run(c, [p.update_feature(p.ELR_FEATURE, 1), p.elect_leaders("t")]
                 ).partitions["t-0"]
    assert (after.leader, after.isr, after.last_known_elr) == (1, frozenset({1}), frozenset())
    assert after.recovering


def test_the_in_event_election_on_the_driver() -> None:
    """On 4.4.0 (cached; else skipped): broker 1, the only unfenced ISR member, not the
    preferred replica, has its replica assigned to a directory it never registered and back,
    with the election in the same event: the partition goes leaderless and the election
    elects 1 (``electPreferredLeader`` line 242); after a snapshot point, the fresh managers
    answer the same directory id (DriverDirectoryEvents.unknownDir), so no snapshot
    difference."""
    from test_diff_snapshot import _cached

    from harness.differential.driver import ControllerDriver
    from harness.differential.protocol import Settings
    events = [p.create_topic("t", [[2, 1, 3]]), p.fence(3), p.fence(2), p.snapshot(10),
              {**p.assign_dirs(1, "t", 0, paths.OFFLINE_DIR), "back": True,
               "elect": "preferred"}]
    with ControllerDriver.for_build(_cached("4.4.0"), Settings(brokers=(1, 2, 3), min_isr=2,
                                                               elr=True)) as d:
        answers = [d.send(e) for e in events]
    last = answers[-1]
    assert last.ok and last.snapshot_diff is None, last.raw
    leaders = [r.get("leader") for r in last.records if r["type"] == "PartitionChangeRecord"]
    assert -1 in leaders and leaders[-1] == 1, last.records  # leaderless, then 1
    assert last.partitions["t-0"]["leader"] == 1
    assert last.raw["elect"]["results"] == {"t-0": "NONE"}
