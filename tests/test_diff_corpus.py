"""Coverage feeding the differential generator (issue 33, item 4), no JVM: probes from
crafted answers, corpus admission (new probes join, old ones do not), mutations (valid,
repaired, deterministic), the widened vocabulary (CreatePartitions, AlterPartition from a
stale view, a reassignment completed with part of its adding replicas) as events, as the
model predicts them and as the comparator judges crafted answers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_differential_model import answer, brokers, comparator, part

from harness.differential import protocol as p
from harness.differential.campaign import Campaign, Config, rename
from harness.differential.compare import AGREES, DIVERGES
from harness.differential.corpus import Corpus, Entry, Planned, ProbeMap, change, mutate
from harness.differential.protocol import DriverError, Settings
from harness.differential.workload import MAX_PARTITIONS, RandomEvents, repair
from reference.model.controller_events import apply
from reference.releases.catalog import get_profile

PCB = "PartitionChangeBuilder"


def _line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj)


# ---- probes in the protocol ----

def test_settings_ask_for_probes_and_answers_carry_them() -> None:
    assert "coverageClasses" not in Settings().to_json()
    assert Settings(coverage_classes=(PCB,)).to_json()["coverageClasses"] == [PCB]
    a = p.parse_answer(_line({"seq": 1, "op": "fence", "ok": True,
                              "newProbes": {PCB: [3, 5], "ReplicationControlManager": [0]}}), 1)
    assert a.new_probes == {PCB: (3, 5), "ReplicationControlManager": (0,)}
    assert p.parse_answer(_line({"seq": 2, "op": "fence", "ok": True}), 2).new_probes == {}
    ready = p.parse_ready(_line({"ok": True, "ready": True, "protocol": 1, "kafka": "4.3.1",
                                 "metadataVersion": "4.3-IV0", "metadataVersionProduction": True,
                                 "elr": True, "elrMode": "x", "coverageProbes": {PCB: 256},
                                 "newProbes": {PCB: [1]}}))
    assert ready.coverage_probes == {PCB: 256} and ready.new_probes == {PCB: (1,)}


@pytest.mark.parametrize("bad", [[1, 2], {PCB: 3}, {PCB: ["x"]}])
def test_probes_out_of_protocol_are_a_driver_error(bad: Any) -> None:
    with pytest.raises(DriverError, match="newProbes"):
        p.parse_answer(_line({"seq": 1, "op": "fence", "ok": True, "newProbes": bad}), 1)


# ---- admission ----

def test_a_sequence_with_new_probes_joins_and_one_with_old_probes_does_not(
        tmp_path: Path) -> None:
    probes = ProbeMap()
    probes.total = {PCB: 10}
    corpus = Corpus(tmp_path / "corpus")
    seq = [p.fence(1), p.unfence(1)]
    answers = [p.parse_answer(_line({"seq": i, "op": "x", "ok": True, "newProbes": probes_}), i)
               for i, probes_ in enumerate([{PCB: [1, 2]}, {PCB: [2, 3]}, {PCB: [1, 3]}], 1)]
    got = [probes.add(a.new_probes) for a in answers]
    assert got == [2, 1, 0]  # the third answer's probes were all set before
    assert corpus.admit(seq, got[0], 1, 0, "random") is not None
    assert corpus.admit(seq, got[2], 1, 1, "random") is None
    assert corpus.admit([], 4, 1, 2, "random") is None and corpus.not_kept == 1
    assert len(corpus) == 1 and probes.text() == f"{PCB} 3/10"
    written = orjson.loads((tmp_path / "corpus" / "0001.json").read_bytes())
    assert written["events"] == seq and written["new_probes"] == 2
    full = Corpus(None, max_entries=1)
    full.admit(seq, 1, 1, 0, "random")
    assert full.admit(seq, 5, 2, 0, "random") is None and full.not_kept == 1


def test_the_campaign_admits_the_lanes_that_set_new_probes(tmp_path: Path) -> None:
    """Lane 1's events (after its set-up, up to its last novel event, in lane 0's names)
    join; lane 0 set nothing new."""
    campaign = Campaign(build=None, cfg=Config(seed=1, budget_s=1, lanes=2, coverage=True),  # type: ignore[arg-type]
                        out_dir=tmp_path, say=lambda s: None)
    gens = [RandomEvents(random.Random(k), [10 * k + i for i in range(1, 6)], [f"k{k}t0"])
            for k in range(2)]
    setup = [{"op": "fence", "broker": 9}, p.create_topic("k0t0", [[1, 2, 3]])]
    logs = [setup + [p.fence(1), p.fence(2)],
            [rename(e, 0, 1) for e in setup] + [p.fence(11), p.fence(12), p.unfence(11)]]
    campaign._admit(3, gens, logs, [2, 2], [0, 4], [4, 4])
    assert len(campaign.corpus) == 1
    entry = campaign.corpus.entries[0]
    assert (entry.lane, entry.session, entry.new_probes) == (1, 3, 4)
    assert entry.events == [p.fence(1), p.fence(2)]
    assert campaign.mutants["entries from random lanes"] == 1


# ---- mutation and repair ----

def _entries() -> list[Entry]:
    a = [p.fence(1), p.alter_partition("k0t0", [1, 2]), p.reassign("k0t1", [2, 3, 4]),
         {"op": "fence", "broker": 9}, p.register(1, clean=False), p.tick("electPreferred")]
    b = [p.create_partitions("k0t2", 3, [[1, 2, 3], [3, 4, 5]]),
         p.complete_reassignment("k0t1", 0, [2, 3]), p.elect_leaders("k0t0", "unclean"),
         p.alter_config({"min.insync.replicas": "3"}, "k0t0"), p.controlled_shutdown(4)]
    return [Entry(a, 3, 1, 0, "random"), Entry(b, 1, 1, 2, "random")]


def test_mutations_follow_the_seed_and_stay_well_formed() -> None:
    def run(seed: int) -> list[tuple[list[dict[str, Any]], str]]:
        rng = random.Random(seed)
        return [mutate(rng, _entries(), 8) for _ in range(200)]
    first = run(4)
    assert first == run(4) and first != run(5)
    hows = " ".join(h for _, h in first)
    for op in ("splice", "insert", "delete", "change"):
        assert op in hows
    for seq, _ in first:
        assert len(seq) <= 8
        for event in seq:
            p.check_event(event)
    rng = random.Random(0)
    for event in [e for entry in _entries() for e in entry.events] * 20:
        p.check_event(change(rng, event))
    with pytest.raises(ValueError):
        mutate(rng, [], 5)


def _lane_state() -> tuple[dict[str, Any], dict[str, Any]]:
    parts = {"k0t0-0": part(1, 2, 5, [1, 2, 3], [1, 2]),
             "k0t1-0": part(2, 1, 3, [2, 3, 4, 5], [2, 3], adding=[4, 5], removing=[1]),
             "k0t2-0": part(-1, 3, 7, [3, 4, 5], [])}
    regs = brokers([1, 2, 3, 4, 5], fenced=(3, 4), down=(4,))
    return parts, regs


@pytest.mark.parametrize("event, expected", [
    (p.fence(3), None),  # running and fenced: the generator would not fence it...
    (p.fence(4), p.fence(4)),  # ...but a broker that is down, yes
    (p.unfence(3), p.unfence(3)),
    (p.unfence(1), None),
    (p.register(1), None),
    (p.register(4), p.register(4)),
    (p.controlled_shutdown(3), None),
    ({"op": "fence", "broker": 9}, {"op": "fence", "broker": 9}),  # the lane's clock
    (p.fence(11), None),  # another lane's broker
    (p.alter_partition("k0t0", [2, 3, 7]), p.alter_partition("k0t0", [1, 2, 3])),
    (p.alter_partition("k0t0", [2, 1]), p.alter_partition("k0t0", [1, 2])),  # not reordered
    (p.alter_partition("k0t0", [3, 5, 2]), p.alter_partition("k0t0", [1, 2, 3])),
    (p.alter_partition("k0t2", [3]), None),  # leaderless
    (p.alter_partition("k0t0", [1], leaderEpoch=1), p.alter_partition("k0t0", [1],
                                                                      leaderEpoch=1)),
    (p.complete_reassignment("k0t0"), None),  # no reassignment in progress
    (p.complete_reassignment("k0t1", 0, [2, 3, 4]), p.complete_reassignment("k0t1", 0,
                                                                            [2, 3, 4])),
    (p.cancel_reassignment("k0t0"), None),
    (p.reassign("k0t1", [1, 2, 3]), None),  # one is in progress
    (p.reassign("k0t0", [1, 2, 11]), None),
    (p.reassign("k0t0", [5, 4]), p.reassign("k0t0", [5, 4])),
    (p.alter_partition("k0t0", [1], 3), None),  # no such partition
    (p.create_partitions("k0t0", 2, [[1, 2, 3]]), p.create_partitions("k0t0", 2, [[1, 2, 3]])),
    (p.create_partitions("k0t0", MAX_PARTITIONS + 1, [[1, 2, 3]]), None),
    (p.create_partitions("k1t0", 2, [[1, 2, 3]]), None),
    (p.alter_config({"min.insync.replicas": "1"}, "k9t9"), None),
    (p.tick("electUnclean"), p.tick("electUnclean")),
])
def test_repair_keeps_what_the_generator_could_send(event: dict[str, Any],
                                                    expected: dict[str, Any] | None) -> None:
    parts, regs = _lane_state()
    regs["3"]["alive"] = True
    assert repair(event, parts, regs, [1, 2, 3, 4, 5], clock=9) == expected


def test_a_planned_lane_skips_what_does_not_fit_then_generates() -> None:
    parts, regs = _lane_state()
    plan = [p.register(1), p.fence(1), p.alter_partition("k0t0", [2, 9])]
    lane = Planned(plan, RandomEvents(random.Random(1), [1, 2, 3, 4, 5], ["k0t0", "k0t1"]), 9,
                   "#1")
    assert lane.next(parts, regs) == p.fence(1)
    assert lane.next(parts, regs) == p.alter_partition("k0t0", [1, 2])
    assert (lane.sent, lane.skipped, lane.mended) == (2, 1, 1)
    more = [lane.next(parts, regs) for _ in range(20)]  # the generator's, from here on
    for event in more:
        p.check_event(event)
    assert lane.sent == 2


# ---- the widened vocabulary ----

def test_the_generator_sends_the_new_event_forms() -> None:
    parts, regs = _lane_state()
    gen = RandomEvents(random.Random(3), [1, 2, 3, 4, 5], ["k0t0", "k0t1", "k0t2"])
    events = [gen.next(parts, regs) for _ in range(3000)]
    for event in events:
        p.check_event(event)
    ops = {e["op"] for e in events}
    assert "createPartitions" in ops
    stale = [e for e in events if e["op"] == "alterPartition"
             and ({"leaderEpoch", "partitionEpoch", "leader", "leaderRecoveryState"} & set(e))]
    assert {f for e in stale for f in e} >= {"leaderEpoch", "partitionEpoch", "leader",
                                             "leaderRecoveryState"}
    partial = [e for e in events if e["op"] == "completeReassignment" and "isr" in e]
    assert any(not {4, 5} <= set(e["isr"]) for e in partial)
    sizes = {len(e["replicas"]) for e in events if e["op"] == "reassign"}
    assert len(sizes) > 1  # the replication factor changes too


K43 = get_profile("kafka-4.3")


def test_the_model_predicts_create_partitions() -> None:
    c = comparator([1, 2, 3, 4], min_isr=2)
    ids = [1, 2, 3]
    rep = c.step(p.create_topic("t", [ids]), answer("createTopic",
                                                    {"t-0": part(1, 0, 0, ids, ids)},
                                                    brokers([1, 2, 3, 4])))
    assert rep.release == AGREES
    regs = brokers([1, 2, 3, 4], fenced=(2,), down=(2,))
    rep = c.step(p.fence(2), answer("fence", {"t-0": part(1, 0, 1, ids, [1, 3])}, regs))
    assert rep.release == AGREES, rep
    cluster = c.states["release"]
    grow = p.create_partitions("t", 3, [[2, 3, 4], [4, 1, 2]])
    (out,) = apply(cluster, K43, grow).outcomes
    assert out.accepted
    t1, t2 = out.cluster.partitions["t-1"], out.cluster.partitions["t-2"]
    assert (t1.leader, sorted(t1.isr), t1.replicas) == (3, [3, 4], (2, 3, 4))  # 2 is fenced
    assert (t2.leader, sorted(t2.isr), t2.leader_epoch, t2.partition_epoch) == (4, [1, 4], 0, 0)
    for event, error in [
            (p.create_partitions("t", 1, [[1, 2, 3]]), "INVALID_PARTITIONS"),
            (p.create_partitions("t", 2, [[1, 2, 3], [1, 3, 4]]), "INVALID_REPLICA_ASSIGNMENT"),
            (p.create_partitions("t", 2, [[1, 3]]), "INVALID_REPLICA_ASSIGNMENT"),
            (p.create_partitions("t", 2, [[1, 3, 7]]), "INVALID_REPLICA_ASSIGNMENT"),
            (p.create_partitions("t", 2, [[1, 1, 3]]), "INVALID_REPLICA_ASSIGNMENT"),
            (p.create_partitions("u", 2, [[1, 2, 3]]), "UNKNOWN_TOPIC_OR_PARTITION")]:
        (o,) = apply(cluster, K43, event).outcomes
        assert (o.accepted, o.error, o.cluster) == (False, error, cluster), event
    assert apply(cluster, K43, p.create_partitions("t", 2)).unmodelled
    # The build agrees: new partitions as the model says; then one it would not make.
    new = {"t-1": part(3, 0, 0, [2, 3, 4], [3, 4]), "t-2": part(4, 0, 0, [4, 1, 2], [4, 1])}
    assert c.step(grow, answer("createPartitions", new, regs)).release == AGREES
    wrong = p.create_partitions("t", 4, [[2, 1, 3]])
    rep = c.step(wrong, answer("createPartitions", {"t-3": part(2, 0, 0, [2, 1, 3], [2, 1, 3])},
                               regs))
    assert rep.release == DIVERGES and rep.findings[0].where == "t-3"


def test_create_partitions_allows_each_replica_count_of_the_topic() -> None:
    """Kafka takes the replication factor from the first partition its hash map yields:
    with partitions of 3 and 4 replicas, a new one of either count is allowed."""
    c = comparator([1, 2, 3, 4, 5], min_isr=2)
    ids = [1, 2, 3]
    c.step(p.create_topic("t", [ids, [2, 3, 4, 5]]),
           answer("createTopic", {"t-0": part(1, 0, 0, ids, ids),
                                  "t-1": part(2, 0, 0, [2, 3, 4, 5], [2, 3, 4, 5])},
                  brokers([1, 2, 3, 4, 5])))
    cluster = c.states["release"]
    outs = apply(cluster, K43, p.create_partitions("t", 3, [[5, 4, 3]])).outcomes
    assert sorted(o.accepted for o in outs) == [False, True]


@pytest.mark.parametrize("fields, error", [
    ({"leaderEpoch": 1}, "FENCED_LEADER_EPOCH"),
    ({"leaderEpoch": 3}, "NOT_CONTROLLER"),
    ({"partitionEpoch": 9}, "NOT_CONTROLLER"),
    ({"partitionEpoch": 4}, "INVALID_UPDATE_VERSION"),
    ({"leader": 2}, "INVALID_REQUEST"),
    ({"leaderRecoveryState": 1}, "INVALID_REQUEST"),
])
def test_an_alter_partition_from_a_stale_view_is_refused_as_kafka_names_it(
        fields: dict[str, int], error: str) -> None:
    c = comparator([1, 2, 3], min_isr=2)
    ids = [1, 2, 3]
    c.step(p.create_topic("t", [ids]), answer("createTopic", {"t-0": part(1, 2, 5, ids, ids)},
                                              brokers(ids)))
    event = p.alter_partition("t", [1, 2], **fields)
    (o,) = apply(c.states["release"], K43, event).outcomes
    assert (o.accepted, o.error) == (False, error)
    rep = c.step(event, answer("alterPartition", {}, brokers(ids), ok=False, error_name=error))
    assert (rep.release, rep.findings) == (AGREES, [])


def test_elr_both_alternates_the_sessions_setting(tmp_path: Path) -> None:
    from harness.cli.app import parser
    from harness.cli.diff import parse_config
    from harness.differential.campaign import settings_for
    args = parser().parse_args(["diff", "--elr", "both", "--coverage"])
    cfg = parse_config(args)
    assert isinstance(cfg, Config)
    assert cfg.elr_both and cfg.lane_events == 150 and cfg.mutate_share == 0.5
    assert settings_for(1, cfg, elr=False).elr is False
    assert settings_for(1, cfg, probes=True).coverage_classes == (
        "PartitionChangeBuilder", "PartitionReassignmentReplicas", "ReplicationControlManager",
        "ClusterControlManager", "ConfigurationControlManager", "FeatureControlManager")
    plain = parse_config(parser().parse_args(["diff", "--mutate-share", "20"]))
    assert isinstance(plain, Config)
    assert not plain.elr_both and plain.lane_events == 500 and plain.mutate_share == 0.2
