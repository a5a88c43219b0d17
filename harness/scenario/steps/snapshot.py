"""snapshot: wait until every running controller holds a snapshot of the metadata log that
covers what the quorum had committed when the step began (the model:
reference.model.snapshot.Snapshot, nothing changes).

Kafka has no request that makes a node snapshot. Each KRaft node's SnapshotGenerator
writes one when it publishes new committed records and either
``metadata.log.max.record.bytes.between.snapshots`` bytes (default 20 MiB) or
``metadata.log.max.snapshot.interval.ms`` (default 1 hour; 0 turns it off) have passed
since its last one (apache/kafka 3.9 metadata/.../image/publisher/SnapshotGenerator.java
publishLogDelta; the configs: server/.../config/KRaftConfigs.java in 3.9 and 4.0,
kafka.server.KafkaConfig in 3.6, raft/.../MetadataLogConfig in 4.3; all of 3.6..4.3 have
both). The active controller appends a NoOpRecord every ``metadata.max.idle.interval.ms``
(500 ms by default, KIP-835), so committed records keep arriving and a node whose
interval has passed snapshots within about half a second. A scenario with a snapshot
step therefore runs with a short interval (``CLUSTER_CONFIG``, applied by the loader to
the cluster unless the scenario sets the key itself), and the step polls the
controllers' ``__cluster_metadata-0`` directories for
``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` files (written as ``.part`` and
renamed when complete: FileRawSnapshotWriter.freeze) whose end offset, exclusive like
the high watermark, reaches the quorum's high watermark read (DescribeQuorum) at the
step's start.

Which controllers: those running, not paused, and on the quorum's majority side
(``session.quorum_side``): a controller cut off from the quorum learns no new high
watermark and cannot snapshot it; it is named in the note, not waited for."""

from __future__ import annotations

import os
from pathlib import Path

from yaml.nodes import Node

from harness.client import metadata_records
from harness.client.observe import ObserveError
from harness.client.session import Session, quorum_side
from harness.cluster.topology import ClusterShape, node_name
from harness.infra import progress, wait
from harness.infra.errors import HarnessError
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model.snapshot import DEFAULT_TIMEOUT_S, Snapshot
from reference.search import generators as G

INTERVAL_KEY = "metadata.log.max.snapshot.interval.ms"
#: The interval a scenario with a snapshot step runs with: a snapshot every 3 s of each
#: node (brokers too: ``metadata.*`` keys reach every node, config.reaches_controllers),
#: a few kB each; the step then waits about 3.5 s.
SNAPSHOT_INTERVAL_MS = 3_000
CLUSTER_CONFIG = {INTERVAL_KEY: str(SNAPSHOT_INTERVAL_MS)}
#: Time the step leaves beyond one interval: the next NoOpRecord, writing the file, a
#: start-up of a controller restarted just before.
SLACK_S = 10


def _parse(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> Snapshot:
    c.unknown(it, ("timeout_s",), w)
    timeout = c.seconds(it["timeout_s"][1], f"{w}.timeout_s") if "timeout_s" in it \
        else DEFAULT_TIMEOUT_S
    raw = cl.broker_config.get(INTERVAL_KEY)
    try:
        interval_ms = SNAPSHOT_INTERVAL_MS if raw is None else int(raw)
    except ValueError:
        interval_ms = -1
    if raw is not None and interval_ms <= 0:
        raise c.fail(n, w, f"cluster.broker_config sets {INTERVAL_KEY}={raw}: a snapshot step "
                     "needs a time-based snapshot interval > 0 (Kafka has no request that "
                     "makes a snapshot; leave the key out for the harness's "
                     f"{SNAPSHOT_INTERVAL_MS} ms)")
    if interval_ms > (timeout - SLACK_S) * 1000:
        set_by = "cluster.broker_config's" if raw is not None else "the harness's"
        node, where = (it["timeout_s"][1], f"{w}.timeout_s") if "timeout_s" in it else (n, w)
        raise c.fail(node, where, f"timeout_s {timeout:g} "
                     f"leaves less than {SLACK_S} s beyond {set_by} {INTERVAL_KEY}="
                     f"{interval_ms}: give at least {interval_ms / 1000 + SLACK_S:g} s")
    return Snapshot(timeout)


def _metadata_dir(s: Session, controller: int) -> Path:
    return s.cluster.data_dir(controller) / metadata_records.METADATA_DIR


def _unreachable(s: Session, controllers: list[int]) -> str | None:
    """Why the host cannot read a controller's metadata log dir, or None."""
    for c in controllers:
        d = _metadata_dir(s, c)
        if not d.is_dir() or not os.access(d, os.R_OK | os.X_OK):
            backend = s.history.meta.get("backend") or type(s.cluster).__name__
            why = "does not exist" if not d.exists() else \
                "is not a directory" if not d.is_dir() else \
                f"is not readable by uid {os.getuid()}"
            return (f"snapshot: {node_name(c)}'s metadata log dir {d} {why} on the host "
                    f"({backend} backend), so its checkpoint files cannot be checked")
    return None


def _newest(s: Session, controllers: list[int]) -> dict[int, tuple[str, int] | None]:
    """Each controller's newest snapshot: (file name, end offset), or None."""
    out: dict[int, tuple[str, int] | None] = {}
    for c in controllers:
        found = metadata_records.newest_snapshot(_metadata_dir(s, c))
        out[c] = None if found is None else (found[0].name, found[1])
    return out


def _held(held: dict[int, tuple[str, int] | None]) -> str:
    return ", ".join(f"{c}: {h[0] if h else 'none'}" for c, h in sorted(held.items()))


def _snapshot(s: Session, at: Target, step: Snapshot, out: StepOutcome) -> None:
    try:
        committed = int(s.observer.quorum()["high_watermark"])
    except ObserveError as exc:
        raise HarnessError(f"snapshot: the quorum's committed offset is unknown: {exc}") \
            from exc
    waited = quorum_side(s.cluster, s.faults)
    skipped = [c for c in s.cluster.shape.controller_ids
               if s.cluster.is_running(c) and c not in waited]
    if not waited:
        raise HarnessError("snapshot: no controller runs on the quorum's majority side; "
                           f"running: {skipped}")
    unreachable = _unreachable(s, waited)
    if unreachable:
        out.unsupported = unreachable
        return
    try:
        held = wait.until(lambda: _newest(s, waited),
                          lambda h: all(x is not None and x[1] >= committed for x in h.values()),
                          f"every controller on the quorum's side ({waited}) holding a "
                          f"snapshot that ends at or after the committed offset {committed}",
                          timeout_s=step.timeout_s, interval_s=0.25)
    except wait.WaitTimeout as exc:
        raise HarnessError(f"snapshot: {exc} ({INTERVAL_KEY}="
                           f"{s.cluster.shape.broker_config.get(INTERVAL_KEY)})") from None
    out.note = f"committed offset {committed}; checkpoints: {_held(held)}" + (
        f"; not waited for (cut off from the quorum): {skipped}" if skipped else "")
    s.history.record("snapshot", committed_offset=committed,
                     checkpoints={str(c): h[0] for c, h in held.items() if h},
                     not_waited=skipped)
    progress.say(f"snapshot: {out.note}")


KINDS = (
    StepKind("snapshot", "snapshot: {timeout_s: T}: wait (at most T s, default "
             f"{DEFAULT_TIMEOUT_S:g}) until every running controller on the quorum's side "
             "holds a snapshot (<end offset>-<epoch>.checkpoint) covering the committed "
             "offset at the step's start; a controller restarted later loads it (the "
             f"cluster runs with {INTERVAL_KEY}={SNAPSHOT_INTERVAL_MS})",
             _parse, _snapshot, cluster_config=CLUSTER_CONFIG, generator=G.SNAPSHOT),
)
