"""The min.insync.replicas change rules: a ClearElrRecord only with a min ISR change
(ClearElrOnlyOnMinIsrChange), and the topics and cluster level whose min ISR a batch sets
(invariants' MinIsrChangeClearsElr reads them too).

KIP-966 'Other behaviors' 2 (updating min.insync.replicas removes the ELR only if the new
min ISR <= current ISR); shipped Kafka wipes ELR and LastKnownELR on any change
(research/kafka-facts.md, ReplicationControlManager's ClearElrRecord).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from reference.trace.records import Record, batch_of, data
from reference.trace.rules.step import Finding, Step, _ids


def _batch(s: Step) -> list[Record]:
    mine = batch_of(s.record)
    lo = hi = s.index
    while lo > 0 and batch_of(s.records[lo - 1]) == mine:
        lo -= 1
    while hi + 1 < len(s.records) and batch_of(s.records[hi + 1]) == mine:
        hi += 1
    return list(s.records[lo:hi + 1])


def _min_isr_configs(records: Sequence[Record]) -> set[str | None]:
    """Topics whose min.insync.replicas the records set (None: the cluster level)."""
    out: set[str | None] = set()
    for r in records:
        d = data(r)
        if r.get("type") == "CONFIG_RECORD" and d.get("name") == "min.insync.replicas":
            rtype, name = int(d.get("resourceType", -1)), str(d.get("resourceName") or "")
            if rtype == 2:
                out.add(name)
            elif rtype == 4 and name == "":
                out.add(None)
    return out


def _clear_elr(s: Step) -> Iterator[Finding]:
    name = str(data(s.record).get("topicName") or "")
    batch = _batch(s)
    configs = _min_isr_configs(batch)
    justified = None in configs or (name and (name in configs or any(
        r.get("type") == "TOPIC_RECORD" and data(r).get("name") == name for r in batch))) or any(
        r.get("type") == "FEATURE_LEVEL_RECORD"
        and data(r).get("name") == "eligible.leader.replicas.version" for r in batch)
    if not justified:
        yield Finding("ClearElrOnlyOnMinIsrChange", f"ClearElrRecord for {name or 'all topics'} "
                      "without a min.insync.replicas change, topic creation or ELR feature change")
    if s.profile.min_isr_change_clears == "kip":
        for key, p in s.before.partitions.items():
            if (not name or s.before.topic_name(key[0]) == name) and p.elr:
                m = s.before.min_isr(key[0], s.ctx.min_isr_default)
                if len(p.isr) < m:
                    yield Finding("ClearElrOnlyOnMinIsrChange", f"ELR {_ids(p.elr)} wiped although "
                                  f"ISR {_ids(p.isr)} is below the new min ISR {m}", key)
