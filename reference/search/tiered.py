"""Tiered topics for generated schedules (issue 45 item 4, `fuzz`/`hunt` ``--tiered``).

A generated cluster may be tiered (FORMAT.md "Tiered storage"): every broker runs KIP-405's
RemoteLogManager over Kafka's LocalTieredStorage (harness/cluster/tiered.py) and the topic
sets ``remote.storage.enable`` with small segments (``segment.ms``: a segment rolls every
1-5 s under the schedule's traffic, and is uploaded about a second later) and a small local
retention (``local.retention.bytes``: uploaded segments leave the local log, so reads
after a kill or a leader change go through the remote tier). The schedule's kills and
leader changes then land during uploads.

Only where the harness runs tiered storage: from Kafka 3.6.0, its first release with
KIP-405 as early access (the 3.5.0 tag already holds parts of RemoteLogManager and the
``remote.storage.enable`` config, not the release's feature): harness/cluster/tiered.py
``FIRST_VERSION`` and ``gap``, which refuse a tiered scenario on an older build. So a
build before 3.6 never gets a tiered cluster.

On about half of the tiered topics (``RETENTION_CHANCE``) a remote retention is drawn too
(``retention.bytes``, per partition, ``RETENTION_BYTES``): small enough that under the
generated traffic the partition passes it during a run, so the RemoteLogManager's
expiration deletes the oldest remote segments and the log start advances (the pending
tiered-leader-kill-retention-bytes file: 300 KB at 400 records/s, the log start advanced
in every run). Then what is judged is the log start's checks (harness/judge/tiered.py:
it advances only by retention; no acks=all record at or above it is missing from the final
read) and, below it, records deleted by retention are neither lost nor displaced, for the
traffic (harness/traffic/checks.py ``Retained``) and the schedule's produce steps alike
(harness/judge/datachecks.py ``acked_lost``). Without it (Kafka's defaults: the remote tier
keeps everything) every acknowledged record stays readable from offset 0; what is judged
is that no record is lost or displaced by the tiering, the kills and the leader changes.

A tiered schedule's steps are drawn with ``tiered_weights``: kills, restarts, leader
elections and sleeps more often (the faults that meet an upload in flight, and the time
for segments to roll), and no topic deletion or re-creation: deleting a tiered topic
(KIP-405's remote deletion) is another matter than the one judged here, and the tiered
checks follow one log start per partition, with no topic incarnations
(harness/judge/tiered.py).

Pure: no I/O, the draws from a random stream of the schedule's seed."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

#: The first release with KIP-405's broker side (harness/cluster/tiered.py FIRST_VERSION).
FIRST_VERSION = (3, 6, 0)
#: A segment rolls this often under traffic (``segment.ms``; from 4.0 ``segment.bytes`` is
#: at least 1 MiB, KIP-1030, so time is what rolls small segments on every build).
SEGMENT_MS = (1000, 2000, 5000)
#: Local retention (``local.retention.bytes``): at the generated 50-400 records/s a few
#: seconds to a minute of records stay local, the rest is read from the remote tier.
LOCAL_RETENTION_BYTES = (20_000, 60_000, 200_000)
#: The share of tiered topics with a remote retention (``retention.bytes``).
RETENTION_CHANCE = 0.5
#: Remote retention (``retention.bytes``, per partition): at the generated 50-400
#: records/s per producer (about 100 bytes a record on disk), a partition passes it in
#: seconds to about a minute. Never under the local retention drawn with it: Kafka refuses
#: local.retention.bytes > retention.bytes (LogConfig.validateRemoteStorageRetentionSize).
RETENTION_BYTES = (100_000, 200_000, 300_000)


@dataclass(frozen=True)
class TieredTopic:
    """A generated cluster's tiering: ``cluster.tiered_storage: true`` and these topic
    configs."""

    segment_ms: int = 2000
    local_retention_bytes: int = 60_000
    #: ``retention.bytes`` (None: Kafka's default, the remote tier keeps everything).
    retention_bytes: int | None = None

    def topic_config(self) -> dict[str, str]:
        """The topic's configs (FORMAT.md "Tiered storage"), as strings."""
        out = {"remote.storage.enable": "true", "segment.ms": str(self.segment_ms),
               "local.retention.bytes": str(self.local_retention_bytes)}
        if self.retention_bytes is not None:
            out["retention.bytes"] = str(self.retention_bytes)
        return out


def _version(text: str) -> tuple[int, int, int] | None:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:[-.].*)?", text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def supports(version: str) -> bool:
    """Whether a build of ``version`` has tiered storage (3.6.0 and later)."""
    v = _version(version)
    return v is not None and v >= FIRST_VERSION


def draw_tiered(seed: int | str, chance: float, version: str) -> TieredTopic | None:
    """The tiering of the schedule with this (scenario) seed on a cluster of build
    ``version``: with probability ``chance``, a segment.ms and a local retention drawn
    from the seed's own stream, and with ``RETENTION_CHANCE`` a remote retention at least
    the local one; None without tiered storage on the build (before 3.6.0) or when not
    drawn. Deterministic for a seed (the retention drawn after the others: a seed keeps
    the segment.ms and local retention it had before retention was drawn)."""
    if chance <= 0 or not supports(version):
        return None
    rng = random.Random(f"kafka-chaos-tiered:{seed}")
    if rng.random() >= chance:
        return None
    segment_ms, local = rng.choice(SEGMENT_MS), rng.choice(LOCAL_RETENTION_BYTES)
    retention = rng.choice([b for b in RETENTION_BYTES if b >= local]) \
        if rng.random() < RETENTION_CHANCE else None
    return TieredTopic(segment_ms=segment_ms, local_retention_bytes=local,
                       retention_bytes=retention)


#: Weight factors of a tiered schedule's step kinds (``tiered_weights``).
TIERED_FACTORS: Mapping[str, int] = {"kill": 2, "restart": 2, "elect": 2}
#: Kinds a tiered schedule never has, and kinds it has at least this weight of.
TIERED_OFF = ("delete_topic", "create_topic")
TIERED_FLOOR: Mapping[str, int] = {"sleep": 3}


def tiered_weights(weights: Mapping[str, int]) -> dict[str, int]:
    """A tiered schedule's weights from the campaign's: kills, restarts and elections
    doubled, sleeps at least 3 (segments roll and upload while time passes), topic
    deletion and re-creation off. A kind the campaign turned off (0) stays off."""
    out = {k: v * TIERED_FACTORS.get(k, 1) for k, v in weights.items()}
    for k, floor in TIERED_FLOOR.items():
        if out.get(k, 0) > 0:
            out[k] = max(out[k], floor)
    for k in TIERED_OFF:
        if k in out:
            out[k] = 0
    return out
