"""The leader epoch rule of a partition change (LeaderEpochBump).

KIP-966 'Other behaviors' 1 (a change of the ELR does not require a leader epoch bump);
PartitionChangeBuilder bumps it on a leader change, on a replica removal, and on an ISR
shrink only before metadata.version 3.6-IV0 (KAFKA-15021). That epochs never go back
(EpochsNeverGoBack) is judged on a PartitionRecord for an existing partition (changes.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from reference.trace.records import data
from reference.trace.rules.election import Change
from reference.trace.rules.step import Finding, Step

#: metadata.version feature level (MetadataVersion): from 3.6-IV0 an ISR shrink no longer
#: bumps the leader epoch (KAFKA-15021).
MV_NO_EPOCH_BUMP_ON_SHRINK = 12


def _epoch_bump(s: Step, c: Change) -> Iterator[Finding]:
    p, q = c.p, c.q
    mv = s.before.features.get("metadata.version")
    shrink = data(s.record).get("isr") is not None and not set(q.isr) >= set(p.isr)
    removed = not set(q.replicas) >= set(p.replicas)
    required = (q.leader != p.leader or removed
                or (mv is not None and mv < MV_NO_EPOCH_BUMP_ON_SHRINK and shrink))
    bumped = q.leader_epoch > p.leader_epoch
    if bumped != required:
        why = "replicas were removed" if removed else "the ISR shrank"
        yield Finding("LeaderEpochBump", (
            f"leader epoch {p.leader_epoch} -> {q.leader_epoch} without a leader change or a "
            "replica removal" if bumped else f"leader epoch not bumped although {why}"), c.key)
