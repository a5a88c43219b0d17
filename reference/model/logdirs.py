"""Several log directories per broker (KIP-858, "Handle JBOD broker disk failure in
KRaft", Kafka 3.7+), as one partition's model sees them: which directory of a broker holds
its replica, a replica moved to another directory of its broker, a directory that fails.

What the model follows is Kafka's controller and broker (apache/kafka, 3.7 branch and
trunk of 2024-10):

- AlterReplicaLogDirs (KIP-113) moves a replica between directories of its broker: the
  broker copies the log into a future log in the target directory and swaps them once the
  copy caught up (ReplicaAlterLogDirsThread, Partition.maybeReplaceCurrentWithFutureReplica),
  then tells the controller (AssignReplicasToDirs: ReplicationControlManager
  .handleAssignReplicasToDirs writes a PartitionChangeRecord with ``directories`` only).
  Leader, ISR and epochs are not changed by it: the replica serves and fetches throughout.
- A directory that fails on a broker (an IOException in the log layer: LogDirFailureChannel)
  takes its replicas offline there (ReplicaManager.handleLogDirFailure: their fetchers
  removed, the partitions marked offline) and the broker reports the directory offline in
  its heartbeat (BrokerLifecycleManager.propagateDirectoryFailure). The controller then, in
  one batch, treats the broker as removed for every partition whose replica is in that
  directory, exactly as at a fencing of that broker for those partitions
  (ReplicationControlManager.handleDirectoriesOffline -> generateLeaderAndIsrUpdates with
  brokerToRemove = the broker: out of the target ISR, never an acceptable leader), and
  writes a BrokerRegistrationChangeRecord whose ``logDirs`` are the directories left
  online. Afterwards the replica is never an acceptable leader while its directory is
  offline (LeaderAcceptor.test: clusterControl.hasOnlineDir). The broker itself keeps
  running and serving its other directories.
- The harness repairs a failed directory when the broker restarts (harness.cluster
  .logdirs): the restarted broker registers every directory online again and its replica
  there catches up as any restarted replica does (``Restart`` clears ``dir_offline``).

The directory Kafka chooses for a new replica (LogManager.nextLogDirs: the one with the
fewest partitions) is not the model's to predict: ``Broker.log_dir`` is None until a
move names it, and a failure of a directory that may hold the replica is both outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from reference.model.controller import Ctx, partition_change
from reference.model.protocol import Outcome, settle
from reference.model.state import World, evolve


@dataclass(frozen=True, slots=True)
class MoveReplicaDir:
    """AlterReplicaLogDirs of this partition's replica on ``broker`` to its directory
    ``dir``. With ``wait`` the harness waited until the broker reports the replica there
    with no future replica left, so the model knows the directory; without, the move may
    not have ended (a kill right after it interrupts it), so it does not."""

    kind: ClassVar[str] = "move_replica_dir"
    broker: int
    dir: int
    wait: bool = True

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker, "dir": self.dir, "wait": self.wait}

    def transition(self, w: World, ctx: Ctx) -> World:
        b = w.broker(self.broker)
        if self.broker not in w.partition.replicas or not b.alive or b.dir_offline:
            return w
        return w.with_broker(evolve(b, log_dir=self.dir if self.wait else None))


@dataclass(frozen=True, slots=True)
class FailLogDir:
    """Directory ``dir`` of the running ``broker`` fails (I/O errors): a replica of this
    partition there goes offline and leaves the ISR and the leadership
    (ReplicationControlManager.handleDirectoriesOffline); a replica in another directory
    is untouched; one whose directory the model does not know is both."""

    kind: ClassVar[str] = "fail_log_dir"
    broker: int
    dir: int

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker, "dir": self.dir}

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        b = w.broker(self.broker)
        if self.broker not in w.partition.replicas or not b.alive or b.dir_offline:
            return w
        if b.log_dir is not None and b.log_dir != self.dir:
            return w
        offline = _offline(w, ctx, self.broker, self.dir)
        if b.log_dir is None:  # the broker chose the directory: either way
            return [Outcome(w)] + offline
        return offline


def _offline(w: World, ctx: Ctx, broker: int, index: int) -> list[Outcome]:
    """The replica on ``broker`` offline in directory ``index``: generateLeaderAndIsrUpdates
    with brokerToRemove = broker (the target ISR without it; ELR as at a fencing: the
    builder's maybePopulateTargetElr), then the world settles."""
    b = w.broker(broker)
    w = w.with_broker(evolve(b, dir_offline=True, log_dir=index, heard_from=None))
    p = w.partition
    if broker not in p.isr and p.leader != broker:
        return [Outcome(x) for x in settle(w, ctx)]
    branches = partition_change(w, ctx, proposed_isr=p.isr - {broker})
    return [Outcome(x) for y in branches for x in settle(y, ctx)]
