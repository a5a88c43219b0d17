"""Several log directories per broker (issue 45 item 3, KIP-858): the loader's file:line
errors, the 3.7+ check before any cluster starts, the model of a directory failure and a
move (reference/model/logdirs.py: ReplicationControlManager.handleDirectoriesOffline,
LeaderAcceptor.hasOnlineDir), what DescribeLogDirs answers becomes, and the failure method
on a real loop-mounted ext4 where this machine allows it (root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.client.observe.logdirs import summarize
from harness.cluster import builds, logdirs
from harness.cluster.builds import Build, Features
from harness.cluster.config import render
from harness.infra.errors import BuildError
from harness.judge.compare import model_for, shape_of
from harness.run.runner import birth
from harness.scenario.loader import ScenarioError, parse_scenario
from reference.model import logdirs as L
from reference.model import steps as S

TOPIC = "topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}\n"


def _scenario(cluster: str = "  log_dirs: 2\n", steps: str = "  - produce: {count: 1}\n"
              ) -> object:
    return parse_scenario("version: 1\nname: d\ncluster:\n  brokers: 3\n" + cluster + TOPIC
                          + "steps:\n" + steps, "d.yaml")


def _build(version: str) -> Build:
    t = builds.version_tuple(version)
    feats = Features(elr=t >= (4, 0, 0), elr_default_on=t >= (4, 1, 0),
                     describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                     kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), feats)


# -- loader and birth ---------------------------------------------------------------------

def test_log_dirs_load_and_reach_the_cluster() -> None:
    sc = _scenario(steps="  - move_replica_dir: {broker: 1, dir: 1}\n"
                   "  - fail_log_dir: {broker: 1, dir: 1}\n")
    assert sc.cluster.log_dirs == 2 and shape_of(sc).log_dirs == 2  # type: ignore[attr-defined]
    kinds = [s.step for s in sc.steps]  # type: ignore[attr-defined]
    assert kinds == [L.MoveReplicaDir(1, 1, True), L.FailLogDir(1, 1)]


@pytest.mark.parametrize("cluster, steps, error", [
    ("  log_dirs: 9\n", "", r"d.yaml:5: cluster.log_dirs: 9 log directories: choose 1..4"),
    ('  metadata_version: "3.7-IV1"\n  log_dirs: 2\n', "",
     r"d.yaml:6: cluster.log_dirs: several log directories need metadata.version 3.7-IV2"),
    ("  log_dirs: 2\n", "  - move_replica_dir: {broker: 1, dir: 2}\n",
     r"d.yaml:8: steps\[0\].move_replica_dir.dir: unknown log directory 2: .*0..1"),
    ("  log_dirs: 2\n", "  - fail_log_dir: {broker: 1, dir: 0}\n",
     r"d.yaml:8: .*unknown log directory 0.*metadata log"),
    ("", "  - fail_log_dir: {broker: 1, dir: 1}\n",
     r"d.yaml:7: .*one log directory per broker"),
    ("  log_dirs: 2\n", "  - kill: {broker: 1}\n  - fail_log_dir: {broker: 1, dir: 1}\n",
     r"d.yaml:9: .*broker 1: it is down"),
])
def test_bad_log_dirs_are_refused_with_their_line(cluster: str, steps: str, error: str
                                                  ) -> None:
    with pytest.raises(ScenarioError, match=error):
        _scenario(cluster, steps or "  - produce: {count: 1}\n")


def test_several_log_dirs_before_3_7_are_an_error_with_the_line() -> None:
    sc = _scenario()
    with pytest.raises(BuildError, match=r"d.yaml:5: cluster.log_dirs: Kafka 3.6.2 .*3.7\+"):
        birth.check_log_dirs(sc, _build("3.6.2"), {})  # type: ignore[arg-type]
    birth.check_log_dirs(sc, _build("3.7.2"), {})  # type: ignore[arg-type]
    # A broker born on 3.6 in a 4.x run: refused too.
    with pytest.raises(BuildError, match="broker 2"):
        birth.check_log_dirs(sc, _build("4.3.1"), {2: _build("3.6.2")})  # type: ignore[arg-type]
    # Both backends give a broker several directories (docker: each bound into its own
    # broker's container, harness/cluster/backends/docker.py); another backend would not.
    assert birth.birth_gap(sc, "docker") == birth.birth_gap(sc, "local")  # type: ignore[arg-type]
    assert "not on k8s" in str(birth.birth_gap(sc, "k8s"))  # type: ignore[arg-type]


def test_log_dirs_reach_server_properties() -> None:
    from harness.cluster.config import NodeAddresses
    from harness.cluster.topology import ClusterShape
    text = render(1, ClusterShape(log_dirs=2), NodeAddresses("h", "h:1", "h:2"), "/a,/b/kafka")
    assert "log.dirs=/a,/b/kafka\n" in text


# -- the model --------------------------------------------------------------------------------

def _model(steps: str) -> object:
    sc = _scenario(steps=steps)
    return model_for(sc, "kafka-4.3", elr=True)


def _states(model: object, step: object) -> set[tuple[int | None, tuple[int, ...]]]:
    pred = model.apply(step)  # type: ignore[attr-defined]
    return {(s.leader, tuple(sorted(s.isr))) for s in pred.allowed}


def test_a_failed_directory_holding_the_leader_moves_the_leadership() -> None:
    m = _model("  - produce: {count: 1}\n")
    _states(m, L.MoveReplicaDir(1, 1))
    assert _states(m, L.FailLogDir(1, 1)) == {(2, (2, 3))}
    # Not elected again while the directory is offline, not back in the ISR.
    assert _states(m, S.Kill(2)) == {(3, (3,))}
    assert _states(m, S.Restart(2)) == {(3, (2, 3))}
    # Its restart repairs the directory: it catches up and rejoins.
    assert _states(m, S.Kill(1)) == {(3, (2, 3))}
    assert _states(m, S.Restart(1)) == {(3, (1, 2, 3))}


def test_a_failed_directory_without_the_replica_changes_nothing() -> None:
    m = _model("  - produce: {count: 1}\n")
    _states(m, L.MoveReplicaDir(1, 0))
    assert _states(m, L.FailLogDir(1, 1)) == {(1, (1, 2, 3))}


def test_a_directory_the_model_does_not_know_is_either() -> None:
    m = _model("  - produce: {count: 1}\n")
    assert _states(m, L.FailLogDir(1, 1)) == {(1, (1, 2, 3)), (2, (2, 3))}
    m = _model("  - produce: {count: 1}\n")
    _states(m, L.MoveReplicaDir(1, 1, wait=False))  # interrupted or not: not known
    assert _states(m, L.FailLogDir(1, 1)) == {(1, (1, 2, 3)), (2, (2, 3))}


def test_a_follower_on_a_failed_directory_leaves_the_isr() -> None:
    m = _model("  - produce: {count: 1}\n")
    _states(m, L.MoveReplicaDir(3, 1))
    assert _states(m, L.FailLogDir(3, 1)) == {(1, (1, 2))}


# -- DescribeLogDirs --------------------------------------------------------------------------

def test_describe_log_dirs_summary(tmp_path: Path) -> None:
    paths = [tmp_path / "data", tmp_path / "mnt-1" / "kafka"]
    results = [
        {"error_code": 0, "log_dir": str(paths[0]), "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "is_future_key": False}]}]},
        {"error_code": 56, "log_dir": str(paths[1]), "topics": []},
        {"error_code": 0, "log_dir": "/elsewhere", "topics": [
            {"name": "u", "partitions": [{"partition_index": 1, "is_future_key": True}]}]},
    ]
    assert summarize(paths, results) == {
        "online": ["/elsewhere", 0], "offline": [1], "replicas": {"t-0": 0},
        "future": {"u-1": "/elsewhere"}}


# -- the failure method, for real where allowed ------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0 or logdirs.require() is not None,
                    reason="needs root, mount and e2fsprogs")
def test_a_failed_directory_answers_eio_and_a_repair_brings_it_back(tmp_path: Path) -> None:
    node = tmp_path / "broker-1"
    node.mkdir()
    try:
        d = logdirs.create(node, 1)
        seg = (d / "00.log").open("ab")
        seg.write(b"x" * 100)
        seg.flush()
        logdirs.fail(node, 1)
        with pytest.raises(OSError) as info:
            seg.write(b"y" * 100)
            seg.flush()
        assert info.value.errno == 5  # EIO, through a file already open
        with pytest.raises(OSError):
            (d / "new").write_text("z")
        try:
            seg.close()
        except OSError:
            pass
        logdirs.repair(node, 1)
        assert (d / "00.log").read_bytes()[:100] == b"x" * 100  # synced before the shutdown
        (d / "new").write_text("z")
    finally:
        logdirs.release(node, 1)
    assert not os.path.ismount(logdirs.mount_point(node, 1))


def test_the_last_isr_member_on_a_failed_directory_is_no_leader() -> None:
    """ELR off: the ISR keeps its last member ("prevent ISR drops to empty"), but a replica
    on an offline directory is never an acceptable leader (LeaderAcceptor.hasOnlineDir):
    leaderless, as a fenced last member would be."""
    sc = _scenario(steps="  - produce: {count: 1}\n")
    m = model_for(sc, "kafka-3.8", elr=False)
    _states(m, L.MoveReplicaDir(1, 1))
    _states(m, S.Kill(2))
    assert _states(m, S.Kill(3)) == {(1, (1,))}
    assert _states(m, L.FailLogDir(1, 1)) == {(-1, (1,))}  # leaderless


# -- the trace rule OfflineDirectoryNotLeaderOrIsr --------------------------------------------

DIRS = {b: (f"dir-{b}-a", f"dir-{b}-b") for b in (1, 2, 3)}
UNASSIGNED_DIR = "AAAAAAAAAAAAAAAAAAAAAQ"   # DirectoryId.UNASSIGNED, Uuid(0, 1)
RULE = "OfflineDirectoryNotLeaderOrIsr"
Batch = list[tuple[str, dict[str, object]]]


def _trace(*batches: Batch) -> set[str]:
    """The rules broken by these batches (each one committed batch) after a cluster of
    brokers 1..3, each registered with two directories, and t-0 on [1, 2, 3] led by 1 in
    each broker's first directory (as 4.3.1 writes them)."""
    from reference import TraceContext, validate
    start: list[Batch] = [
        [("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 26})],
        [("REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": 10 + b, "fenced": True,
                                     "incarnationId": f"i{b}", "logDirs": list(DIRS[b])})
         for b in (1, 2, 3)],
        [("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": b, "brokerEpoch": 10 + b,
                                                "fenced": -1}) for b in (1, 2, 3)],
        [("TOPIC_RECORD", {"name": "t", "topicId": "T"}),
         ("PARTITION_RECORD", {"partitionId": 0, "topicId": "T", "replicas": [1, 2, 3],
                               "isr": [1, 2, 3], "leader": 1, "leaderEpoch": 0,
                               "partitionEpoch": 0, "removingReplicas": [],
                               "addingReplicas": [],
                               "directories": [DIRS[b][0] for b in (1, 2, 3)]})]]
    records: list[dict[str, object]] = []
    for batch in start + list(batches):
        base = len(records)
        records += [{"offset": base + k, "batch_base_offset": base, "type": kind, "version": 0,
                     "data": data} for k, (kind, data) in enumerate(batch)]
    result = validate(records, TraceContext(profile="kafka-4.1", brokers=(1, 2, 3)))
    return {v.rule for v in result.violations}


def _offline(b: int, online: str) -> tuple[str, dict[str, object]]:
    """handleDirectoriesOffline's BrokerRegistrationChangeRecord: ``online`` left."""
    return ("BROKER_REGISTRATION_CHANGE_RECORD",
            {"brokerId": b, "brokerEpoch": 10 + b, "logDirs": [online]})


def _change(**fields: object) -> tuple[str, dict[str, object]]:
    return "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "T", **fields}


#: Broker 1's directory holding t-0 fails: out of the ISR and the leadership in the batch of
#: its BrokerRegistrationChangeRecord (as 4.3.1 wrote it in logdir-failure-on-leader).
HANDLED: Batch = [_change(isr=[2, 3], leader=2), _offline(1, DIRS[1][1])]


@pytest.mark.parametrize("batches", [
    [HANDLED],
    [[_offline(1, DIRS[1][0])]],   # the other directory: the replica is not there
    # Restarted: both directories registered again, back in the ISR.
    [HANDLED, [("REGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 40, "fenced": True,
                                           "incarnationId": "i1b", "logDirs": list(DIRS[1])})],
     [("BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": 1, "brokerEpoch": 40, "fenced": -1})],
     [_change(isr=[1, 2, 3])]],
])
def test_offline_directory_rule_keeps(batches: list[Batch]) -> None:
    assert RULE not in _trace(*batches)


def test_unassigned_directories_count_as_online() -> None:
    """DirectoryId.isOnline: UNASSIGNED (and MIGRATING) are online."""
    assert RULE not in _trace([_change(directories=[UNASSIGNED_DIR] * 3)],
                              [_offline(1, DIRS[1][1])])


@pytest.mark.parametrize("batches", [
    [[_offline(1, DIRS[1][1])]],            # reported offline, the partition left as it was
    [[_offline(2, DIRS[2][1])]],            # a follower's directory, still in the ISR
    [HANDLED, [_change(isr=[1, 2, 3], leader=1)]],   # elected again while offline
    [HANDLED, [_change(isr=[2, 3, 1])]],    # back in the ISR while offline
    # Leading, its replica assigned to its offline directory (AssignReplicasToDirs' change).
    [[_offline(1, DIRS[1][0])], [_change(directories=[DIRS[1][1], DIRS[2][0], DIRS[3][0]])]],
])
def test_offline_directory_rule_breaks(batches: list[Batch]) -> None:
    assert RULE in _trace(*batches)
