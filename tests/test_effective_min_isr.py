"""The effective min ISR of a topic whose partitions have different replica counts: Kafka
takes partition 0's (ReplicationControlManager.getTopicEffectiveMinIsr, 4.3.1:
min(min.insync.replicas, topics.get(topicId).parts.get(0).replicas.length)) for every
partition of the topic, in every PartitionChangeBuilder it makes. Found by certify's diff
on 4.3.1 (release:elr:alterPartition, model ELR [2], build []): a partition of 4 replicas at
min.insync.replicas 3 whose partition 0 had 2 replicas (bench/RESULTS-certify.md)."""

from __future__ import annotations

from test_differential_model import answer, brokers, comparator, part

from harness.differential import protocol as p
from harness.differential.compare import AGREES
from reference.model.controller_events.changes import world_of

IDS = [1, 2, 3, 4]


def _two_partitions(min_isr: int):  # type: ignore[no-untyped-def]
    c = comparator(IDS, min_isr=min_isr)
    created = {"t-0": part(1, 0, 0, [1, 2], [1, 2]), "t-1": part(1, 0, 0, IDS, IDS)}
    rep = c.step(p.create_topic("t", [[1, 2], IDS]), answer("createTopic", created,
                                                            brokers(IDS)))
    assert (rep.release, rep.kip, rep.findings) == (AGREES, AGREES, [])
    return c


def test_every_partition_takes_partition_0_s_replica_count() -> None:
    c = _two_partitions(min_isr=3)
    cluster = c.states["release"]
    assert world_of(cluster, "t-0").min_isr == 2
    assert world_of(cluster, "t-1").min_isr == 2  # min(3, |replicas of t-0| = 2), not 3


def test_an_isr_at_partition_0_s_min_isr_keeps_no_elr() -> None:
    # t-1 (4 replicas) at min.insync.replicas 3: its ISR shrinks to [1, 2]; Kafka's effective
    # min ISR is 2 (partition 0 has 2 replicas), so the ISR is at min ISR: no ELR.
    c = _two_partitions(min_isr=3)
    t0 = part(1, 0, 0, [1, 2], [1, 2])
    for event, t1, regs in [
            (p.fence(4), part(1, 0, 1, IDS, [1, 2, 3]), brokers(IDS, (4,), (4,))),
            (p.fence(3), part(1, 0, 2, IDS, [1, 2]), brokers(IDS, (3, 4), (3, 4)))]:
        rep = c.step(event, answer(event["op"], {"t-0": t0, "t-1": t1}, regs))
        assert (rep.release, rep.kip, rep.findings) == (AGREES, AGREES, []), rep
