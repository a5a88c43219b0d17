"""Several log directories per broker (``cluster.log_dirs``, KIP-858, 3.7+):
move_replica_dir (AlterReplicaLogDirs, KIP-113, of a partition's replica to another
directory of its broker) and fail_log_dir (I/O errors on one directory of a running broker,
repaired by its restart: harness.cluster.logdirs, docs/LOG-DIRS.md). The model:
reference.model.logdirs."""

from __future__ import annotations

from typing import Any

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.infra import wait
from harness.infra.wait import WaitTimeout
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.processes import parse_broker
from reference.model import logdirs as L
from reference.search import generators as G

#: How long a waited move may take: a test partition's log is a few MB at most.
MOVE_TIMEOUT_S = 60.0
#: How long a failure waits for the broker to report the directory offline: Kafka notices
#: at its next write there, at the latest the high-watermark checkpoint of a directory with
#: partitions (replica.high.watermark.checkpoint.interval.ms, 5 s) or the recovery-point
#: checkpoint of every live directory (log.flush.offset.checkpoint.interval.ms, 60 s:
#: LogManager.checkpointLogRecoveryOffsets); an empty directory may take that long.
FAIL_NOTICED_S = 20.0


def _dir(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape, low: int) -> int:
    node = c.required(it, "dir", n, w)
    if cl.log_dirs <= 1:
        raise c.fail(node, f"{w}.dir", "the cluster has one log directory per broker: give "
                     "it several with cluster.log_dirs: N (3.7+)")
    d = c.int_(node, f"{w}.dir")
    if not low <= d < cl.log_dirs:
        why = (" (directory 0 holds the metadata log: Kafka halts the broker when it "
               "fails, ReplicaManager.handleLogDirFailure)" if low == 1 and d == 0 else "")
        raise c.fail(node, f"{w}.dir", f"unknown log directory {d}: the brokers' directories "
                     f"are 0..{cl.log_dirs - 1} (cluster.log_dirs), this step takes "
                     f"{low}..{cl.log_dirs - 1}{why}")
    return d


def _parse_move(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> L.MoveReplicaDir:
    b = parse_broker(c, it, n, w, cl, ("dir", "wait"))
    d = _dir(c, it, n, w, cl, 0)
    wait_ = c.bool_(it["wait"][1], f"{w}.wait") if "wait" in it else True
    return L.MoveReplicaDir(b, d, wait_)


def _parse_fail(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> L.FailLogDir:
    b = parse_broker(c, it, n, w, cl, ("dir",))
    return L.FailLogDir(b, _dir(c, it, n, w, cl, 1))


def _running(down: set[int], step: Any) -> str | None:
    if step.broker in down:
        return (f"{step.kind} on broker {step.broker}: it is down (a kill or stop before "
                "this step, no restart since)")
    return None


def _move(s: Session, at: Target, step: L.MoveReplicaDir, out: StepOutcome) -> None:
    path = str(s.cluster.log_dirs(step.broker)[step.dir])
    admin = s.observer.admin()
    answers = admin.alter_replica_log_dirs({(at.topic, at.partition, step.broker): path})
    errors = {str(k): getattr(v, "__name__", str(v)) for k, v in answers.items()
              if getattr(v, "__name__", "NoError") != "NoError"}
    if errors:
        out.note = f"AlterReplicaLogDirs answered {errors}"
        return
    if not step.wait:
        return
    name = f"{at.topic}-{at.partition}"

    def look() -> dict[str, Any]:
        return dict(s.observer.log_dirs_state([step.broker]).get(str(step.broker), {}))

    try:
        wait.until(look, lambda st: st.get("replicas", {}).get(name) == step.dir
                   and name not in st.get("future", {}),
                   f"{name} of broker {step.broker} in log dir {step.dir}",
                   timeout_s=MOVE_TIMEOUT_S, interval_s=0.5)
    except WaitTimeout as exc:
        out.note = f"the move did not end: {exc}"


def _fail(s: Session, at: Target, step: L.FailLogDir, out: StepOutcome) -> None:
    """The I/O errors on, then a bounded wait until the broker reports the directory
    offline (DescribeLogDirs): without it the step settles before Kafka noticed, on the
    prediction's branch where the replica is elsewhere, and the failure then lands in a
    later step (seen on 4.3.1 in the hunt, bench/RESULTS-storage.md: the ISR shrank one
    step late)."""
    s.faults.fail_log_dir(step.broker, step.dir)

    def look() -> dict[str, Any]:
        return dict(s.observer.log_dirs_state([step.broker]).get(str(step.broker), {}))

    try:
        wait.until(look, lambda st: step.dir in st.get("offline", []),
                   f"log dir {step.dir} of broker {step.broker} offline",
                   timeout_s=FAIL_NOTICED_S, interval_s=0.5)
    except WaitTimeout:
        out.note = (f"broker {step.broker} did not report log dir {step.dir} offline within "
                    f"{FAIL_NOTICED_S:.0f} s (nothing written there yet: Kafka notices at its "
                    "next write)")


KINDS = (
    StepKind("move_replica_dir", "move_replica_dir: {broker: N, dir: D, wait: true}: "
             "AlterReplicaLogDirs of the partition's replica on broker N to its log dir D "
             "(0..log_dirs-1); wait: until DescribeLogDirs shows it there",
             _parse_move, _move, follows=_running, on_partitions=True,
             generator=G.MOVE_REPLICA_DIR),
    StepKind("fail_log_dir", "fail_log_dir: {broker: N, dir: D}: I/O errors on log dir D "
             "(1..log_dirs-1) of running broker N; its next restart repairs it",
             _parse_fail, _fail, follows=_running, generator=G.FAIL_LOG_DIR),
)
