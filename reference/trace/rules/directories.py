"""KIP-858 (JBOD in KRaft, 3.7+) in the trace: the directory of each replica
(PartitionRecord / PartitionChangeRecord ``directories``, one Uuid per replica) and the
directories each broker has online (RegisterBrokerRecord ``logDirs``, replaced by a
BrokerRegistrationChangeRecord whose ``logDirs`` is not empty: ClusterControlManager
.replay). A broker's directory that is not among its online ones is offline.

Rule OfflineDirectoryNotLeaderOrIsr: no committed state keeps as a partition's leader or
ISR member a broker whose directory holding the replica is offline. The controller, on a
heartbeat that reports a directory offline, writes in one batch a PartitionChangeRecord for
each partition in that directory, with the broker out of the target ISR and never an
acceptable leader (ReplicationControlManager.handleDirectoriesOffline ->
generateLeaderAndIsrUpdates(brokerToRemove = the broker)), and the
BrokerRegistrationChangeRecord of the directories left online; no later election takes a
replica whose directory is offline (ReplicationControlManager.LeaderAcceptor.test:
clusterControl.hasOnlineDir(brokerId, partition.directory(brokerId))). apache/kafka trunk
(2024-10) and the 3.7 branch.

Which directories count as online is DirectoryId.isOnline's rule: UNASSIGNED and MIGRATING
are online, LOST is offline, a broker registered without directories (before 3.7-IV2) has
every directory online.
"""

from __future__ import annotations

from collections.abc import Iterator

from reference.trace.records import CommittedState, PartitionKey
from reference.trace.rules.step import Finding

#: DirectoryId.MIGRATING, UNASSIGNED, LOST: Uuid(0, 0), (0, 1), (0, 2) (apache/kafka
#: server-common DirectoryId.java), as the decoder writes a Uuid (URL-safe base64 of its 16
#: bytes, unpadded).
MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
LOST = "AAAAAAAAAAAAAAAAAAAAAg"


def dir_online(directory: str, online: tuple[str, ...]) -> bool:
    """DirectoryId.isOnline(dir, the broker's online directories)."""
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    return not online or directory in online


def offline_replicas(st: CommittedState, key: PartitionKey) -> dict[int, str]:
    """Replica -> its directory, for the replicas of the partition whose directory is
    offline on their broker."""
    q = st.partitions[key]
    if len(q.directories) != len(q.replicas):
        return {}
    out: dict[int, str] = {}
    for b, directory in zip(q.replicas, q.directories, strict=True):
        reg = st.brokers.get(b)
        if reg is not None and reg.registered and not dir_online(directory, reg.log_dirs):
            out[b] = directory
    return out


def offline_directory(st: CommittedState, key: PartitionKey) -> Iterator[Finding]:
    q = st.partitions[key]
    for b, directory in sorted(offline_replicas(st, key).items()):
        roles = [r for r, on in (("leader", q.leader == b), ("ISR member", b in q.isr)) if on]
        if roles:
            yield Finding("OfflineDirectoryNotLeaderOrIsr",
                          f"broker {b} is {' and '.join(roles)} but its directory {directory} "
                          f"holding the replica is offline (online: "
                          f"{list(st.brokers[b].log_dirs)})", key, b)
