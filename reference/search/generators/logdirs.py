"""The generators of the log-directory steps (reference/model/logdirs.py; FORMAT.md
"Several log directories"): ``move_replica_dir`` (AlterReplicaLogDirs of the topic's replica
on a broker to another of its directories) and ``fail_log_dir`` (I/O errors on directory
1..N-1 of a running broker, repaired by the broker's next restart), and ``draw_log_dirs``,
whether a generated cluster has several directories per broker at all (``--log-dirs``).

Made only on a cluster with several directories (``Limits.log_dirs`` > 1, the schedule's
cluster: harness/search/fuzz/schedules.py ``config_of``), which is drawn only for a build
of 3.7 or newer (KIP-858, "JBOD in KRaft"; the loader refuses ``cluster.log_dirs`` on an
older one: harness/scenario/birth.py). The guards keep what the loader and the harness
need (docs/LOG-DIRS.md):

- directory 0 is never failed (it holds the metadata log: Kafka halts the broker,
  ReplicaManager.handleLogDirFailure); a directory is one the brokers have (0..N-1);
- a failure needs the broker running and not paused (the ioctl reaches the filesystem,
  Kafka notices at its next write); a directory fails once until its broker restarts
  (``Track.failed_dirs``; the restart's ``after`` clears it: processes.py);
- a move needs the broker running, not paused (the harness's wait asks it with
  DescribeLogDirs), reaching the active controller (the broker reports the new directory
  to it, AssignReplicasToDirs: ReplicationControlManager.handleAssignReplicasToDirs), the
  replica on it in every branch, and none of its directories failed (a failed source or
  target answers KAFKA_STORAGE_ERROR);
- ``lose_unflushed`` of a broker with a failed directory is refused (processes.py): its
  files there answer EIO until the restart's repair;
- the recovery tail stops and restarts every broker with a failed directory (fuzzgen).

Hook for tiered storage (issue 45 items 1-2, another branch): a tiered topic is a cluster
setting drawn the same way (a stream of its own per scenario seed, only for the builds that
run it), kept on ``fuzzgen.Cluster`` next to ``log_dirs`` and written by
harness/search/fuzz/scenario.py ``cluster_doc``; its guards read it from ``Limits`` as
these read ``log_dirs``.
"""

from __future__ import annotations

import random

from reference.model import logdirs as L
from reference.model import steps as S
from reference.search.generators.generator import Gen, Generator, Track, _reaches_quorum
from reference.search.generators.upgrade import line_of

#: The first release line with several log directories in KRaft (KIP-858).
JBOD_LINE = (3, 7)
#: The chance that a generated cluster has several directories per broker (``--log-dirs``):
#: small, because such a cluster needs root and loop mounts (UNSUPPORTED elsewhere), costs
#: an ext4 image per broker directory at bring-up, and a campaign should keep its mix of
#: the KIP's faults on the common one-directory cluster.
DEFAULT_LOG_DIRS_CHANCE = 0.1
#: Directories per broker of a cluster that has several (the loader takes 1..4).
LOG_DIR_COUNTS = (2, 2, 3)


def jbod_build(version: str) -> bool:
    """Whether ``version`` runs several log directories in KRaft (3.7+)."""
    line = line_of(version)
    return line is not None and line >= JBOD_LINE


def draw_log_dirs(seed: int | str, version: str, chance: float) -> int:
    """The directories per broker of the cluster of the schedule with this (scenario)
    seed, born on ``version``: 1 unless the build is 3.7+ and a draw below ``chance``
    (then 2 or 3). A random stream of its own, so the rest of the cluster is the one drawn
    without it."""
    if chance <= 0 or not jbod_build(version):
        return 1
    rng = random.Random(f"kafka-chaos-logdirs:{seed}")
    if rng.random() >= chance:
        return 1
    return rng.choice(LOG_DIR_COUNTS)


def _hosts(g: Gen, b: int) -> bool:
    return g.every(lambda w: b in w.partition.replicas)


def _move_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    n = g.limits.log_dirs
    if n <= 1:
        return []
    return [L.MoveReplicaDir(b, d, wait) for b in g.current for d in range(n)
            for wait in (True, False)]


def _move_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, L.MoveReplicaDir)
    n, b = g.limits.log_dirs, step.broker
    if n <= 1:
        return "the cluster has one log directory per broker"
    if not 0 <= step.dir < n:
        return f"log directory {step.dir} is not one of the brokers' 0..{n - 1}"
    if b not in g.current:
        return f"broker {b} is not running (or paused)"
    if not _hosts(g, b):
        return f"broker {b} holds no replica of the topic in some branch"
    if g.track.failed_dirs.get(b):
        return f"broker {b} has a failed log directory (the move answers a storage error)"
    if not g.every(lambda w: _reaches_quorum(w, b)):
        return (f"broker {b} is cut from the controller (it reports the new directory to it: "
                "AssignReplicasToDirs)")
    if g.every(lambda w: w.broker(b).log_dir == step.dir):
        return f"the replica on broker {b} is in directory {step.dir} already"
    return None


def _fail_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    return [L.FailLogDir(b, d) for b in g.current for d in range(1, g.limits.log_dirs)]


def _fail_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, L.FailLogDir)
    n, b = g.limits.log_dirs, step.broker
    if n <= 1:
        return "the cluster has one log directory per broker"
    if not 1 <= step.dir < n:
        return (f"log directory {step.dir}: only 1..{n - 1} fail (0 holds the metadata log: "
                "Kafka halts the broker)")
    if b not in g.current:
        return f"broker {b} is not running (or paused)"
    if step.dir in g.track.failed_dirs.get(b, set()):
        return f"directory {step.dir} of broker {b} failed already (until its restart)"
    return None


def _fail_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, L.FailLogDir)
    track.failed_dirs.setdefault(step.broker, set()).add(step.dir)


MOVE_REPLICA_DIR = Generator("move_replica_dir", L.MoveReplicaDir, 2, _move_steps,
                             _move_guard, on_partition=True)
FAIL_LOG_DIR = Generator("fail_log_dir", L.FailLogDir, 2, _fail_steps, _fail_guard,
                         _fail_after)
