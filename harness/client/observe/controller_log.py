"""A partition read from a controller's metadata log on disk: the whole state when no broker
has a current view, and ELR and LastKnownELR on builds observed with the Metadata API
(PartitionRecord / PartitionChangeRecord version 2+ carry them)."""

from __future__ import annotations

import subprocess
from typing import Any

from harness.client.observe.connection import Connection

#: PartitionRecord and PartitionChangeRecord carry EligibleLeaderReplicas/LastKnownElr from
#: version 2 (metadata/src/main/resources/common/metadata/Partition*Record.json, 3.7+).
_ELR_RECORD_SINCE = 2


class ControllerLog(Connection):
    # Set by Observer.__init__ (declared here for the type checker).
    api: str

    def _controller_records(self) -> tuple[list[dict[str, Any]], int] | None:
        """The records of the controller with the longest metadata log, and its id."""
        from harness.client import metadata_log
        best: tuple[int, int] | None = None
        for c in self.cluster.shape.controller_ids:
            log_dir = self.cluster.data_dir(c) / "__cluster_metadata-0"
            size = sum(f.stat().st_size for f in log_dir.glob("*.log")) if log_dir.is_dir() else 0
            if size and (best is None or size > best[0]):
                best = (size, c)
        if best is None:
            return None
        try:
            records = metadata_log.decode(self.cluster.build,
                                          self.cluster.data_dir(best[1]) / "__cluster_metadata-0")
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        return records, best[1]

    def _from_controller_log(self, topic: str, partition: int
                             ) -> tuple[dict[str, Any], int] | None:
        """The controller's committed view, decoded from its metadata log on disk."""
        from harness.client import metadata_log
        found = self._controller_records()
        if found is None:
            return None
        records, controller = found
        state = metadata_log.replay(records, topic, partition, self.cluster.shape.broker_ids)
        if state is None:
            return None
        if self.api == "Metadata":  # the records say whether the build writes ELR at all
            elr = elr_from_records(records, topic, partition)
            state["elr"], state["last_known_elr"] = elr if elr else (None, None)
        return state, controller

    def _elr_from_log(self, topic: str, partition: int
                      ) -> tuple[list[int], list[int]] | None:
        """(ELR, LastKnownELR) from the controller's metadata log, or None when the log's
        records of this partition do not carry them (a version before 2: the build, or the
        metadata.version the cluster runs, writes no ELR)."""
        found = self._controller_records()
        return None if found is None else elr_from_records(found[0], topic, partition)


def elr_from_records(records: list[dict[str, Any]], topic: str, partition: int
                     ) -> tuple[list[int], list[int]] | None:
    """(ELR, LastKnownELR) of a partition replayed from metadata records, or None when its
    records never carried the fields (PartitionRecord/PartitionChangeRecord before version 2).
    A change record of version 2+ that leaves them out (null: unchanged) keeps the last
    values; a PartitionRecord of version 2+ without them means empty."""
    topic_id = None
    elr: list[int] | None = None
    lke: list[int] | None = None
    for rec in records:
        kind, data = rec.get("type"), rec.get("data", {})
        if kind == "TOPIC_RECORD" and data.get("name") == topic:
            topic_id, elr, lke = data["topicId"], None, None
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            if data.get("topicId") != topic_id or data.get("partitionId") != partition:
                continue
            if int(rec.get("version") or 0) < _ELR_RECORD_SINCE:
                if kind == "PARTITION_RECORD":
                    elr, lke = None, None
                continue
            if kind == "PARTITION_RECORD" or elr is None:
                elr, lke = [], []
            if data.get("eligibleLeaderReplicas") is not None:
                elr = sorted(data["eligibleLeaderReplicas"])
            if data.get("lastKnownElr") is not None:
                lke = sorted(data["lastKnownElr"])
        elif (kind == "CLEAR_ELR_RECORD" and elr is not None
              and data.get("topicName") in (None, "", topic)):
            elr, lke = [], []
    if elr is None or lke is None:
        return None
    return elr, lke
