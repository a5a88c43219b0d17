"""The order in which followers join the ISR during a reassignment (the certify hunt's
model gap on 4.4.0, fuzz-s1-41, bench/RESULTS-hunt.md "Triage of certify's model-gap hunt
finding"): the leader adds one follower per AlterPartition, in the order their fetches find
them in sync and their metadata unfenced (Partition.maybeExpandIsr, isReplicaIsrEligible),
and the change that adds the last adding replica completes the reassignment with the ISR of
that moment (PartitionReassignmentReplicas.maybeCompleteReassignment, KIP-966 "Other
behaviors" 4). Each test fails without the branch in
reference.model.protocol.replication._shrink_or_expand."""

from __future__ import annotations

from reference.model import steps as S
from reference.model.predict import Model
from reference.model.state import ClusterSpec, TopicSpec


def _heal_after_reassign(profile: str) -> set[tuple[int | None, int, tuple[int, ...]]]:
    """fuzz-s1-41's shrunk schedule without its controller kill: leader 3 of [3, 1]
    isolated (fenced, leader 1), 1 and 2 cut apart, 3 records, reassignment to [3, 2]
    (adding [2], removing [1]), heal. The (leader, epoch, ISR) after the heal."""
    topic = TopicSpec(replicas=(3, 1), min_insync_replicas=1,
                      config={"unclean.leader.election.enable": "true"})
    # auto.leader.rebalance.enable=false, as the harness's clusters (harness/cluster/config.py)
    cluster = ClusterSpec(brokers=(1, 2, 3),
                          broker_config={"auto.leader.rebalance.enable": "false"})
    m = Model(profile, cluster, topic, elr_enabled=False, seed=0)
    for step in (S.Isolate(3), S.Cut(1, 2, "both"), S.Produce(3, "1")):
        m.apply(step)
    pending = m.apply(S.Reassign((3, 2))).allowed
    assert {(a.replicas, a.adding, a.removing) for a in pending} == {
        ((3, 2, 1), frozenset({2}), frozenset({1}))}
    return {(a.leader, a.leader_epoch, tuple(sorted(a.isr))) for a in m.apply(S.Heal()).allowed}


def test_adding_replica_first_completes_without_the_fenced_target_replica() -> None:
    # 4.3.1/4.4.0 wait for the adding replica (2) only: if 2 joins before 3 (fenced until
    # its metadata catches up after the heal), the completion leaves ISR [2] and elects 2
    # (electAnyLeader: the first target replica in the ISR); if 3 joins first, 3 leads.
    # Observed on 4.4.0: records 45 (isr [2], leader 2, replicas [3, 2]) before 46 (3
    # unfenced) in controller 102's log of fuzz-s1-41-min1.
    assert _heal_after_reassign("kafka-4.3") == {(2, 2, (2, 3)), (3, 2, (2, 3))}
    assert _heal_after_reassign("kip966") == {(2, 2, (2, 3)), (3, 2, (2, 3))}


def test_every_target_replica_rule_leaves_one_outcome() -> None:
    # 3.8-4.2 (KAFKA-15665) complete only with every target replica in the ISR: the join
    # order cannot matter, the first target replica (3) leads.
    assert _heal_after_reassign("kafka-4.1") == {(3, 2, (2, 3))}
