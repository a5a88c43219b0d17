"""The snapshot step (harness/scenario/steps/snapshot.py, reference/model/snapshot.py): what
the loader takes and refuses, the cluster config it brings, that the model changes
nothing, its wait on the controllers' checkpoint files, and the trace check over a
metadata log whose prefix only a snapshot still holds."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.client import metadata_records
from harness.scenario.loader import ScenarioError, parse_scenario
from harness.scenario.steps import StepOutcome, Target
from harness.scenario.steps import snapshot as step
from reference import ClusterSpec, Model, TopicSpec, TraceContext, validate
from reference.model import steps as S
from reference.model.snapshot import DEFAULT_TIMEOUT_S, Snapshot
from reference.model.steps import step_to_dict

HEAD = """version: 1
name: snap
cluster: {brokers: 3, controllers: 3%s}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""
KEY = "metadata.log.max.snapshot.interval.ms"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "metadata"


def load(steps: str, config: str = "") -> Any:
    extra = f", broker_config: {{{config}}}" if config else ""
    return parse_scenario(HEAD % extra + steps, "snap.yaml")


# -- loader ------------------------------------------------------------------------------

def test_a_snapshot_step_round_trips_and_brings_a_short_snapshot_interval() -> None:
    sc = load("  - snapshot: {}\n  - snapshot: {timeout_s: 30}\n")
    assert [step_to_dict(s.step) for s in sc.steps] == [
        {"snapshot": {}}, {"snapshot": {"timeout_s": 30.0}}]
    assert sc.steps[0].step == Snapshot(DEFAULT_TIMEOUT_S)
    assert sc.cluster.broker_config == {KEY: "3000"}
    assert sc.cluster_spec().broker_config == {KEY: "3000"}
    # Without a snapshot step the cluster keeps Kafka's default.
    assert KEY not in load("  - consume: {}\n").cluster.broker_config


def test_the_scenarios_own_interval_wins() -> None:
    sc = load("  - snapshot: {}\n", f"{KEY}: '1000'")
    assert sc.cluster.broker_config == {KEY: "1000"}


@pytest.mark.parametrize(("steps", "config", "error"), [
    ("  - snapshot: {seconds: 3}\n", "", r"snap.yaml:6: steps\[0\]\.snapshot: unknown key "
                                         "'seconds'"),
    ("  - snapshot: {timeout_s: 0}\n", "", r":6: steps\[0\]\.snapshot\.timeout_s: expected "
                                           "seconds"),
    ("  - snapshot: {timeout_s: 601}\n", "", r"timeout_s: expected seconds"),
    ("  - snapshot: {timeout_s: 12}\n", "", r":6: steps\[0\]\.snapshot\.timeout_s: timeout_s "
                                            "12 leaves less than 10 s beyond the harness's"),
    ("  - snapshot: {}\n", f"{KEY}: '0'", r"snapshot: cluster.broker_config sets "
                                          f"{KEY}=0: .* interval > 0"),
    ("  - snapshot: {}\n", f"{KEY}: '55000'", r"timeout_s 60 leaves less than 10 s beyond "
                                              "cluster.broker_config's"),
    ("  - snapshot: {partition: 0}\n", "", r"snapshot acts on brokers or the cluster"),
])
def test_the_loader_refuses(steps: str, config: str, error: str) -> None:
    with pytest.raises(ScenarioError, match=error):
        load(steps, config)


# -- model -------------------------------------------------------------------------------

def test_a_snapshot_changes_nothing_the_model_predicts() -> None:
    def last(*steps: Any) -> Any:
        m = Model("kafka-4.3", ClusterSpec(brokers=(1, 2, 3), controllers=(100, 101, 102)),
                  TopicSpec(replicas=(1, 2, 3), min_insync_replicas=3), elr_enabled=True)
        return [m.apply(s) for s in steps][-1]

    before = (S.Produce(3), S.Kill(3))
    snap, wait = last(*before, Snapshot()), last(*before, S.Await())
    assert snap.allowed == wait.allowed
    assert {s.elr for s in snap.allowed} == {frozenset({3})}


# -- execution ---------------------------------------------------------------------------

class FakeCluster:
    def __init__(self, root: Path, running: set[int]) -> None:
        self.root, self.running = root, running
        self.shape = SimpleNamespace(controller_ids=(100, 101, 102), broker_config={KEY: "3000"})

    def data_dir(self, node: int) -> Path:
        return self.root / str(node)

    def is_running(self, node: int) -> bool:
        return node in self.running


def session(tmp_path: Path, hwm: int, running: set[int], paused: set[int] = frozenset()
            ) -> Any:
    events: list[tuple[str, dict[str, Any]]] = []
    network = SimpleNamespace(paused=set(paused), connected=lambda a, b: True)
    history = SimpleNamespace(meta={"backend": "local"},
                              record=lambda kind, **kw: events.append((kind, kw)))
    return SimpleNamespace(cluster=FakeCluster(tmp_path, running), faults=SimpleNamespace(
        network=network), observer=SimpleNamespace(quorum=lambda: {"high_watermark": hwm}),
        history=history, events=events)


def checkpoint(tmp_path: Path, node: int, end: int, epoch: int = 2) -> str:
    d = tmp_path / str(node) / metadata_records.METADATA_DIR
    d.mkdir(parents=True, exist_ok=True)
    name = f"{end:020d}-{epoch:010d}.checkpoint"
    (d / name).write_bytes(b"")
    return name


def test_it_waits_for_a_checkpoint_reaching_the_committed_offset(tmp_path: Path) -> None:
    s = session(tmp_path, 70, running={100, 101, 102}, paused={102})
    checkpoint(tmp_path, 100, 71)
    newest = checkpoint(tmp_path, 101, 75)
    checkpoint(tmp_path, 101, 40)
    (tmp_path / "101" / metadata_records.METADATA_DIR /
     f"{90:020d}-{2:010d}.checkpoint.part").write_bytes(b"")  # still being written
    out = StepOutcome()
    step._snapshot(s, Target("t"), Snapshot(1.0), out)
    assert out.unsupported is None
    assert out.note is not None and newest in out.note and "not waited for" in out.note
    kind, event = s.events[-1]
    assert kind == "snapshot" and event["committed_offset"] == 70
    assert event["checkpoints"] == {"100": f"{71:020d}-{2:010d}.checkpoint", "101": newest}
    assert event["not_waited"] == [102]


def test_a_checkpoint_before_the_committed_offset_is_not_enough(tmp_path: Path) -> None:
    from harness.infra.errors import HarnessError
    s = session(tmp_path, 70, running={100, 101})
    checkpoint(tmp_path, 100, 69)
    checkpoint(tmp_path, 101, 70)
    with pytest.raises(HarnessError, match=r"committed offset 70: not reached"):
        step._snapshot(s, Target("t"), Snapshot(0.5), StepOutcome())
    # One controller of three: no quorum to snapshot.
    with pytest.raises(HarnessError, match=r"no controller runs on the quorum's majority"):
        step._snapshot(session(tmp_path, 70, running={100}), Target("t"), Snapshot(0.5),
                       StepOutcome())


def test_a_metadata_dir_the_host_cannot_read_is_unsupported(tmp_path: Path) -> None:
    s = session(tmp_path, 5, running={100, 101})
    out = StepOutcome()
    step._snapshot(s, Target("t"), Snapshot(0.5), out)
    assert out.unsupported is not None and "does not exist on the host" in out.unsupported
    assert "local backend" in out.unsupported
    if os.getuid() != 0:  # root reads a dir without permissions
        checkpoint(tmp_path, 100, 9)
        d = tmp_path / "100" / metadata_records.METADATA_DIR
        d.chmod(0)
        try:
            out = StepOutcome()
            step._snapshot(s, Target("t"), Snapshot(0.5), out)
            assert out.unsupported is not None and "is not readable" in out.unsupported
        finally:
            d.chmod(0o755)


# -- the trace across a snapshot ---------------------------------------------------------

def _cut_at(src: Path, dst: Path, offset: int) -> None:
    """``src``'s metadata log as Kafka leaves it once the segments before ``offset`` are
    deleted: the segment from the batch at ``offset`` on, and the snapshots."""
    buf = (src / "00000000000000000000.log").read_bytes()
    pos = 0
    while struct.unpack(">q", buf[pos:pos + 8])[0] != offset:
        pos += 12 + struct.unpack(">i", buf[pos + 8:pos + 12])[0]
    dst.mkdir()
    (dst / f"{offset:020d}.log").write_bytes(buf[pos:])
    for f in metadata_records.snapshots(src):
        shutil.copyfile(f, dst / f.name)


def test_a_log_cut_back_to_its_snapshot_replays_to_the_same_state(tmp_path: Path) -> None:
    """The real 4.3.1 controller log (fixtures/metadata/4.3.1: snapshot at 107) with its
    first 107 records gone: the trace starts from the snapshot, ends in the same partition
    state and reports nothing the whole history does not."""
    src = FIXTURES / "4.3.1" / metadata_records.METADATA_DIR
    _cut_at(src, tmp_path / "cut", 107)
    full = metadata_records.read_log_dir(src)
    cut = metadata_records.read_log_dir(tmp_path / "cut")
    assert cut[0]["source"] == "snapshot" and full[0]["source"] == "log"
    assert [r["offset"] for r in cut if r["source"] == "log"] == \
        [r["offset"] for r in full if r["offset"] >= 107]
    # fixtures/metadata/scenario.yaml: brokers 2 and 4 restart after a kill.
    ctx = TraceContext(profile="kafka-4.3", brokers=(1, 2, 3, 4),
                       unclean_registrations=frozenset({(2, 2), (4, 2)}))
    whole, part = validate(full, ctx), validate(cut, ctx)
    assert whole.violations == [] and part.violations == []
    assert whole.states[-1].partitions == part.states[-1].partitions
    assert whole.states[-1].topic_configs == part.states[-1].topic_configs
    assert {b: (r.epoch, r.fenced) for b, r in whole.states[-1].brokers.items()} == \
        {b: (r.epoch, r.fenced) for b, r in part.states[-1].brokers.items()}


def _rec(offset: int, kind: str, data: dict[str, Any], source: str = "log") -> dict[str, Any]:
    return {"offset": offset, "append_time_ms": 1_000 + offset, "type": kind, "version": 0,
            "data": data, "source": source}


def _registration(b: int, epoch: int, fenced: bool) -> tuple[str, dict[str, Any]]:
    return "REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": epoch, "fenced": fenced,
                                      "incarnationId": f"inc-{b}-{epoch}",
                                      "inControlledShutdown": False}


def _snapshot_with_elr_3() -> list[dict[str, Any]]:
    """A snapshot as a controller writes one (one record per feature, config, broker,
    topic and partition): topic t with min ISR 3, ISR [1, 2], ELR [3]; broker 3 fenced
    (shut down cleanly after an earlier restart), registered at epoch 40."""
    records = [
        ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 26}),
        ("FEATURE_LEVEL_RECORD", {"name": "eligible.leader.replicas.version",
                                  "featureLevel": 1}),
        ("CONFIG_RECORD", {"resourceType": 4, "resourceName": "",
                           "name": "min.insync.replicas", "value": "1"}),
        _registration(1, 10, False), _registration(2, 11, False), _registration(3, 40, True),
        ("TOPIC_RECORD", {"name": "t", "topicId": "T"}),
        ("CONFIG_RECORD", {"resourceType": 2, "resourceName": "t",
                           "name": "min.insync.replicas", "value": "3"}),
        ("PARTITION_RECORD", {"partitionId": 0, "topicId": "T", "replicas": [1, 2, 3],
                              "isr": [1, 2], "removingReplicas": [], "addingReplicas": [],
                              "leader": 1, "leaderEpoch": 3, "partitionEpoch": 9,
                              "eligibleLeaderReplicas": [3], "lastKnownElr": []})]
    return [_rec(i, kind, data, "snapshot") for i, (kind, data) in enumerate(records)]


def test_a_snapshot_is_judged_as_a_state_not_as_changes() -> None:
    """Its ConfigRecord of min.insync.replicas is not a change that should have cleared the
    ELR (MinIsrChangeClearsElr), its registrations are not restarts."""
    ctx = TraceContext(profile="kafka-4.3", brokers=(1, 2, 3))
    result = validate(_snapshot_with_elr_3(), ctx)
    assert result.violations == [], [str(v) for v in result.violations]
    assert result.states[-1].partitions[("T", 0)].elr == (3,)


def test_incarnations_counted_from_a_snapshot_are_not_matched_to_the_history() -> None:
    """A snapshot holds each broker's current registration only (ClusterImage.write), so
    a broker that restarted before it is at an unknown incarnation there. Broker 3's first
    restart (incarnation 2) was unclean and lies before the snapshot; its next restart
    (incarnation 3) is clean and keeps its ELR place. Counted from the snapshot, that
    restart would be incarnation 2, matched to the history's unclean one, and broker 3
    still in the ELR: a false UncleanShutdownReplicaNotInElr."""
    after = [_rec(100, *_registration(3, 100, True))]
    ctx = TraceContext(profile="kafka-4.3", brokers=(1, 2, 3),
                       unclean_registrations=frozenset({(3, 2)}))
    result = validate(_snapshot_with_elr_3() + after, ctx)
    assert result.violations == [], [str(v) for v in result.violations]
    assert result.states[-1].brokers[3].unclean_shutdown is False  # kept its ELR place
