"""The snapshot step (fixtures/scenarios/FORMAT.md): every running controller writes a
snapshot of the metadata log that covers what the quorum had committed when the step
began, so that a controller restarted afterwards loads its state from that snapshot and
replays only the log after it.

A snapshot is a copy of committed state, not a change to it: the controller's
SnapshotGenerator writes the image it has already published (apache/kafka 3.9
metadata/src/main/java/org/apache/kafka/image/publisher/SnapshotGenerator.java,
publishLogDelta -> scheduleEmit -> SnapshotEmitter.maybeEmit), and a controller that
loads one at start-up (MetadataLoader, SNAPSHOT manifest) rebuilds the same image it
held. KIP-966 ("Eligible Leader Replicas", seed 003) keeps ELR and LastKnownELR in
PartitionRecord, which a snapshot carries like every other partition field, so the
replication state the model tracks is the same before and after the step; only time
passes while the harness waits for the files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from reference.model.controller import Ctx
from reference.model.protocol import Outcome
from reference.model.state import World
from reference.model.steps import time_passes

#: Seconds the harness waits by default for every running controller's snapshot.
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every running controller snapshots the committed metadata log. Nothing in the
    replication model changes: as an await, time passes (the periodic preferred election
    may run, ``time_passes``)."""

    kind: ClassVar[str] = "snapshot"
    timeout_s: float = DEFAULT_TIMEOUT_S

    def params(self) -> dict[str, Any]:
        return {} if self.timeout_s == DEFAULT_TIMEOUT_S else {"timeout_s": self.timeout_s}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        return time_passes(w, ctx)
