"""Trace validation of the controller's metadata records (reference.trace.replay): for every rule a
crafted record sequence that breaks it and one that keeps it, a realistic sequence clean
under kafka-4.1, the cases where kip966 and kafka-4.1 disagree, and a real 4.3.1 trace."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reference import TRACE_RULES, TraceContext, common_prefix_agrees, replay, validate

ELR = "eligible.leader.replicas.version"
MIN_ISR = "min.insync.replicas"
Rec = tuple[str, dict[str, Any]]


class Log:
    """Records in the decoder's shape; each batch() call is one committed batch."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def batch(self, *recs: Rec) -> Log:
        base = len(self.records)
        for k, (kind, data) in enumerate(recs):
            self.records.append({"offset": base + k, "append_time_ms": 1_000 + base,
                                 "batch_base_offset": base, "type": kind, "version": 0,
                                 "data": data})
        return self

    def copy(self) -> Log:
        out = Log()
        out.records = list(self.records)
        return out


def feature(name: str, level: int) -> Rec:
    return "FEATURE_LEVEL_RECORD", {"name": name, "featureLevel": level}


def cluster_config(key: str, value: str) -> Rec:
    return "CONFIG_RECORD", {"resourceType": 4, "resourceName": "", "name": key, "value": value}


def topic_config(topic: str, key: str, value: str) -> Rec:
    return "CONFIG_RECORD", {"resourceType": 2, "resourceName": topic, "name": key,
                             "value": value}


def register(b: int, epoch: int, incarnation: str | None = None) -> Rec:
    return "REGISTER_BROKER_RECORD", {"brokerId": b, "brokerEpoch": epoch, "fenced": True,
                                      "incarnationId": incarnation or f"inc-{b}-{epoch}",
                                      "inControlledShutdown": False}


def brc(b: int, epoch: int, **fields: int) -> Rec:
    return "BROKER_REGISTRATION_CHANGE_RECORD", {"brokerId": b, "brokerEpoch": epoch, **fields}


def unfence(b: int, epoch: int) -> Rec:
    return brc(b, epoch, fenced=-1)


def fence(b: int, epoch: int) -> Rec:
    return brc(b, epoch, fenced=1)


def topic(name: str, tid: str) -> Rec:
    return "TOPIC_RECORD", {"name": name, "topicId": tid}


def partition(tid: str, replicas: list[int], isr: list[int], leader: int, **extra: Any) -> Rec:
    return "PARTITION_RECORD", {"partitionId": 0, "topicId": tid, "replicas": replicas,
                                "isr": isr, "removingReplicas": [], "addingReplicas": [],
                                "leader": leader, "leaderEpoch": 0, "partitionEpoch": 0, **extra}


_FIELDS = {"elr": "eligibleLeaderReplicas", "lke": "lastKnownElr", "lrs": "leaderRecoveryState"}


def change(tid: str = "T", **fields: Any) -> Rec:
    return "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": tid,
                                       **{_FIELDS.get(k, k): v for k, v in fields.items()}}


def clear_elr(name: str) -> Rec:
    return "CLEAR_ELR_RECORD", {"topicName": name}


#: Broker epochs of the first incarnations.
E = {1: 10, 2: 11, 3: 12}


def cluster(min_isr: int = 2, elr: bool = True, mv: int = 26, unclean: bool = False) -> Log:
    """Three registered, unfenced brokers and topic t (id T) on [1, 2, 3], led by 1 (as a
    4.x controller writes them: bootstrap, registrations, unfencing, topic creation)."""
    log = Log().batch(feature("metadata.version", mv), *([feature(ELR, 1)] if elr else []),
                      cluster_config(MIN_ISR, "1"))
    log.batch(register(1, E[1]), register(2, E[2]), register(3, E[3]))
    for b in (1, 2, 3):
        log.batch(unfence(b, E[b]))
    return log.batch(topic("t", "T"), topic_config("t", MIN_ISR, str(min_isr)),
                     *([topic_config("t", "unclean.leader.election.enable", "true")]
                       if unclean else []),
                     clear_elr("t"), partition("T", [1, 2, 3], [1, 2, 3], 1))


def run(log: Log, profile: str = "kafka-4.1", **ctx: Any) -> set[str]:
    result = validate(log.records, TraceContext(profile=profile, brokers=(1, 2, 3), **ctx))
    return {v.rule for v in result.violations}


# --- building blocks --------------------------------------------------------------------


def leader_fenced(log: Log) -> Log:
    """Broker 1 (leader) fenced: 2 takes over."""
    return log.batch(change(isr=[2, 3], leader=2), fence(1, E[1]))


def into_elr(log: Log) -> Log:
    """min ISR 2: the leader 1 drops 2, then 3 (AlterPartition): ISR [1], ELR [3]... then
    [2, 3] as each leaves."""
    return log.batch(change(isr=[1, 3])).batch(change(isr=[1], elr=[3]))


def leaderless(log: Log) -> Log:
    """From ISR [1], ELR [3]: 3 fenced (not in any ISR: no change), then 1 fenced: the
    partition becomes leaderless; shipped Kafka records 1 as LastKnownELR."""
    return into_elr(log).batch(fence(3, E[3])).batch(
        change(isr=[], leader=-1, elr=[1, 3], lke=[1]), fence(1, E[1]))


def realistic() -> Log:
    """Registration of 3 brokers, topic creation, fence, ISR shrink into ELR, unclean
    re-registration, election from ELR, last-known-leader election with RECOVERING."""
    log = leader_fenced(cluster())                                   # leader 2, ISR [2, 3]
    log.batch(change(isr=[2], elr=[3]))                              # 3 lags: ELR [3]
    log.batch(fence(3, E[3]))                                        # 3 not in ISR: no change
    log.batch(change(isr=[], leader=-1, elr=[2, 3], lke=[2]), fence(2, E[2]))
    log.batch(change(elr=[2]), register(3, 40))                      # 3 unclean: leaves ELR
    log.batch(unfence(3, 40))                                        # ELR [2] fenced: wait
    log.batch(register(2, 42))                                       # 2 clean: keeps ELR
    log.batch(unfence(2, 42), change(leader=2, isr=[2], elr=[], lke=[]))  # elected from ELR
    log.batch(change(isr=[2, 3]))                                    # 3 caught up
    log.batch(change(isr=[2], elr=[3]), fence(3, 40))
    log.batch(change(isr=[], leader=-1, elr=[2, 3], lke=[2]), fence(2, 42))
    log.batch(change(elr=[2]), register(3, 50))                      # unclean
    log.batch(change(elr=[]), register(2, 51))                       # unclean: ELR empty
    log.batch(unfence(2, 51), change(leader=2, isr=[2], lrs=1, lke=[]))  # last known leader
    log.batch(unfence(3, 50)).batch(change(isr=[2, 3], lrs=0))
    return log


def test_realistic_sequence_is_clean_under_kafka_41() -> None:
    log = realistic()
    ctx = TraceContext(profile="kafka-4.1", brokers=(1, 2, 3))
    result = validate(log.records, ctx)
    assert result.ok, [str(v) for v in result.violations]
    last = result.states[-1]
    p = last.partitions[("T", 0)]
    assert (p.leader, p.isr, p.elr, p.last_known_elr, p.leader_recovery_state) == \
        (2, (2, 3), (), (), 0)
    assert (p.leader_epoch, p.partition_epoch) == (5, 12)   # 5 leader changes, 12 changes
    assert [last.brokers[b].unclean_shutdown for b in (1, 2, 3)] == [None, True, True]
    by_offset = {s.offset: s for s in result.states}
    second_2 = next(r["offset"] for r in log.records
                    if r["type"] == "REGISTER_BROKER_RECORD" and r["data"]["brokerEpoch"] == 42)
    assert by_offset[second_2].brokers[2].unclean_shutdown is False   # stayed in the ELR
    assert by_offset[second_2].brokers[3].unclean_shutdown is True    # removed from the ELR
    assert by_offset[second_2].brokers[2].incarnations == 2


def test_kip966_and_kafka_41_differ_on_last_known_elr() -> None:
    """Shipped LastKnownELR holds the last leader; the KIP's holds ELR members removed after
    an unclean shutdown (seeds/003 'Other behaviors' 6)."""
    assert run(realistic(), "kip966") == {"LastKnownElrUpdate"}
    kip = cluster()
    leader_fenced(kip).batch(change(isr=[2], elr=[3])).batch(fence(3, E[3]))
    kip.batch(change(isr=[], leader=-1, elr=[2, 3]), fence(2, E[2]))
    kip.batch(change(elr=[2], lke=[3]), register(3, 40))
    assert run(kip, "kip966") == set()
    assert "LastKnownElrUpdate" in run(kip, "kafka-4.1")


def test_kip966_and_kafka_41_differ_on_min_isr_change() -> None:
    """Raising min ISR above the ISR: shipped Kafka clears the ELR (ClearElrRecord); the KIP
    keeps it ("only if the new min ISR <= current ISR")."""
    base = into_elr(cluster())
    cleared = base.copy().batch(topic_config("t", MIN_ISR, "3"), clear_elr("t"))
    kept = base.copy().batch(topic_config("t", MIN_ISR, "3"))
    assert run(cleared, "kafka-4.1") == set()
    assert run(cleared, "kip966") == {"ClearElrOnlyOnMinIsrChange"}
    assert run(kept, "kafka-4.1") == {"MinIsrChangeClearsElr"}
    assert run(kept, "kip966") == set()
    lowered = base.copy().batch(topic_config("t", MIN_ISR, "1"), clear_elr("t"))
    assert run(lowered, "kip966") == set()   # new min ISR 1 <= |ISR| 1: the KIP clears too


def test_kip966_and_kafka_41_differ_on_election_order() -> None:
    log = cluster().batch(change(isr=[2, 3], leader=3), fence(1, E[1]))
    assert run(log, "kafka-4.1") == {"ElectionFollowsAssignmentOrder"}
    assert run(log, "kip966") == set()   # the KIP: "choose an ISR member"


# --- one breaking and one keeping sequence per rule ---------------------------------------

Case = tuple[Callable[[], Log], dict[str, Any]]


def _pre_elr() -> Log:
    return cluster(elr=False).batch(change(isr=[1]))


def _known_unclean_2() -> Log:
    """min ISR 3: ISR [1], ELR [2, 3]; 2 fenced (about to re-register)."""
    return cluster(3).batch(change(isr=[1, 3], elr=[2])).batch(
        change(isr=[1], elr=[2, 3])).batch(fence(2, E[2]))


def _last_leader_ready() -> Log:
    """Leaderless, ISR and ELR empty after unclean restarts of 1 and 3 (still fenced);
    LastKnownELR [1]: shipped Kafka elects 1 once it is unfenced."""
    return leaderless(cluster()).batch(change(elr=[3]), register(1, 70)).batch(
        change(elr=[]), register(3, 71))


def _fenced_3() -> Log:
    return cluster().batch(change(isr=[1, 2]), fence(3, E[3]))


def _kip_last_known_elr() -> Log:
    """The KIP's LastKnownELR (min ISR 3): ELR member 3 restarts uncleanly, leaves the ELR
    and enters LastKnownELR; then it catches up."""
    return cluster(3).batch(change(isr=[1, 2], elr=[3])).batch(fence(3, E[3])).batch(
        change(elr=[], lke=[3]), register(3, 40)).batch(unfence(3, 40))


def _unclean_ready() -> Log:
    """ELR off, ISR [1] fenced and leaderless; 2 live, not in the ISR."""
    return _pre_elr().batch(change(leader=-1), fence(1, E[1]))


def _reassigning_off_the_isr() -> Log:
    """Topic u on [1, 2] led by 1 with ISR [1], being reassigned to [3, 2]: adding 3,
    removing 1, the only ISR member (4.3.1 hunt, fuzz-s36-18: ISR [4] -> [3])."""
    return cluster(min_isr=1).batch(
        topic("u", "U"), topic_config("u", MIN_ISR, "1"), partition("U", [1, 2], [1], 1)).batch(
        change(tid="U", replicas=[3, 2, 1], addingReplicas=[3], removingReplicas=[1]))


def _isr_join_completes_reassignment() -> Log:
    """Leader 1's AlterPartition adds 3 to the ISR, which completes the reassignment: ISR
    [1, 3] less the removed 1 is [3], and 3 is elected from it (disjoint from ISR [1])."""
    return _reassigning_off_the_isr().batch(change(
        tid="U", replicas=[3, 2], isr=[3], leader=3, leaderEpoch=1, addingReplicas=[],
        removingReplicas=[]))


def _leaderless_reassigned_onto_a_live_broker() -> Log:
    """ELR off, unclean election enabled on topic u ([1, 2], ISR [1]): 2 then 1 fenced, u
    leaderless with no live replica; a reassignment to [3, 1] adds live 3. Kafka's
    reassignment change runs no unclean election (the periodic electUnclean task does)."""
    return cluster(elr=False, min_isr=1).batch(
        topic("u", "U"), topic_config("u", MIN_ISR, "1"),
        topic_config("u", "unclean.leader.election.enable", "true"),
        partition("U", [1, 2], [1], 1)).batch(
        change(isr=[1, 3]), fence(2, E[2])).batch(
        change(isr=[3], leader=3), change(tid="U", leader=-1), fence(1, E[1])).batch(
        change(tid="U", replicas=[3, 1, 2], addingReplicas=[3], removingReplicas=[2]))


def _outsider_elected_mid_reassignment() -> Log:
    """The same partition, 3 elected with ISR [3] while the reassignment is still going on:
    no ISR expansion completed anything, so this is an unclean election."""
    return _reassigning_off_the_isr().batch(change(tid="U", isr=[3], leader=3, leaderEpoch=1))


UNCLEAN_2 = {"unclean_registrations": frozenset({(2, 2)})}
UNCLEAN_3 = {"unclean_registrations": frozenset({(3, 2)})}
PRE = {"profile": "pre-elr"}
KIP = {"profile": "kip966"}
KIP_3 = {**KIP, **UNCLEAN_3}
REQUESTED = {**PRE, "unclean_election_requested": True}   # an ElectLeaders UNCLEAN request

KEEP: dict[str, list[Case]] = {
    "LeaderInIsr": [(lambda: leader_fenced(cluster()), {})],
    "LeaderIsLive": [(lambda: leader_fenced(cluster()), {})],
    "IsrElrWithinReplicas": [(lambda: into_elr(cluster()), {})],
    "ElrIsrDisjoint": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[3])), {})],
    "ElrEmptyAtMinIsr": [(lambda: cluster().batch(change(isr=[1], elr=[2, 3])), {})],
    "FencedReplicaNotInIsr": [(_fenced_3, {}), (_unclean_ready, PRE)],
    "UncleanShutdownReplicaNotInElr": [
        (lambda: _known_unclean_2().batch(change(elr=[3]), register(2, 60)), UNCLEAN_2)],
    "EpochsNeverGoBack": [(lambda: leader_fenced(cluster()).batch(partition(
        "T", [1, 2, 3], [2, 3], 2, leaderEpoch=5, partitionEpoch=9)), {})],
    "NoElrWhenDisabled": [(_pre_elr, PRE)],
    "IsrNotEmptyWhenElrDisabled": [(_unclean_ready, PRE)],
    "LastKnownElrShape": [(lambda: leaderless(cluster()), {}),
                          (lambda: _kip_last_known_elr().batch(change(isr=[1, 2, 3], lke=[])),
                           KIP_3)],
    "IsrJoinOnlyLive": [(lambda: _fenced_3().batch(unfence(3, E[3])).batch(
        change(isr=[1, 2, 3])), {})],
    "ElrJoinOnlyFromIsrUnderMinIsr": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[3])), {})],
    "ElrMembersRetained": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[3])).batch(
        change(isr=[1, 2, 3], elr=[])), {})],
    "NewLeaderIsLive": [(realistic, {}),
                        (lambda: cluster().batch(   # controlled shutdown of the leader
                            brc(1, E[1], inControlledShutdown=1), change(isr=[2, 3], leader=2))
                         .batch(fence(1, E[1])), {})],
    "ElrElectionOnlyWithEmptyIsr": [(lambda: into_elr(cluster()).batch(
        change(isr=[3], leader=3, elr=[1]), fence(1, E[1])), {})],
    "ElectionFollowsAssignmentOrder": [(lambda: leader_fenced(cluster()), {})],
    "UncleanElectionOnlyWhenAllowed": [
        (lambda: _unclean_ready().batch(change(leader=2, isr=[2], lrs=1)), REQUESTED),
        (lambda: _last_leader_ready().batch(
            unfence(1, 70), change(leader=1, isr=[1], lrs=1, lke=[])), {}),
        (_isr_join_completes_reassignment, {})],
    "UncleanElectionMarksRecovering": [
        (lambda: _unclean_ready().batch(change(leader=2, isr=[2], lrs=1)), REQUESTED),
        (_isr_join_completes_reassignment, {})],
    "LeaderlessOnlyWithoutCandidate": [(lambda: leaderless(cluster()), {}),
                                       (_unclean_ready, PRE),   # 3.9: ISR keeps [1]
                                       (_leaderless_reassigned_onto_a_live_broker, {}),
                                       (_leaderless_reassigned_onto_a_live_broker, PRE)],
    "LeaderRecoveryStateChange": [(realistic, {})],
    "LastKnownElrUpdate": [(lambda: leaderless(cluster()), {})],
    "LeaderEpochBump": [(lambda: cluster(mv=11).batch(change(isr=[1, 2], leader=1)), {})],
    "ClearElrOnlyOnMinIsrChange": [(lambda: into_elr(cluster()).batch(
        topic_config("t", MIN_ISR, "3"), clear_elr("t")), {})],
    "MinIsrChangeClearsElr": [(lambda: into_elr(cluster()).batch(
        topic_config("t", MIN_ISR, "3"), clear_elr("t")), {})],
    "ReplayConsistency": [(cluster, {})],
}

BREAK: dict[str, list[Case]] = {
    "LeaderInIsr": [(lambda: cluster().batch(change(isr=[2, 3])), {})],
    "LeaderIsLive": [(lambda: cluster().batch(fence(1, E[1])), {})],
    "IsrElrWithinReplicas": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[4])), {})],
    "ElrIsrDisjoint": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[2, 3])), {})],
    "ElrEmptyAtMinIsr": [(lambda: cluster().batch(change(isr=[1, 2], elr=[3])), {})],
    "FencedReplicaNotInIsr": [(lambda: cluster().batch(fence(3, E[3])), {}),
                              (lambda: _pre_elr().batch(change(isr=[1, 2])).batch(
                                  fence(2, E[2])), PRE)],
    "UncleanShutdownReplicaNotInElr": [
        (lambda: _known_unclean_2().batch(register(2, 60)), UNCLEAN_2),
        # Derived: removed from one ELR, left in another, in the same registration batch.
        (lambda: _known_unclean_2().batch(
            topic("u", "U"), topic_config("u", MIN_ISR, "3"),
            ("PARTITION_RECORD", {**partition("U", [1, 2, 3], [1], 1)[1],
                                  "eligibleLeaderReplicas": [2]})).batch(
            change(elr=[3]), register(2, 60)), {})],
    "EpochsNeverGoBack": [(lambda: leader_fenced(cluster()).batch(
        partition("T", [1, 2, 3], [2, 3], 2)), {})],
    "NoElrWhenDisabled": [(lambda: cluster(elr=False).batch(change(isr=[1], elr=[2, 3])), PRE)],
    "IsrNotEmptyWhenElrDisabled": [(lambda: _pre_elr().batch(change(isr=[], leader=-1),
                                                              fence(1, E[1])), PRE)],
    "LastKnownElrShape": [(lambda: cluster().batch(change(isr=[1], elr=[2, 3], lke=[2])), {}),
                          (lambda: _kip_last_known_elr().batch(change(isr=[1, 2, 3])), KIP_3)],
    "IsrJoinOnlyLive": [(lambda: _fenced_3().batch(change(isr=[1, 2, 3])), {})],
    "ElrJoinOnlyFromIsrUnderMinIsr": [
        (lambda: cluster(3).batch(change(isr=[1, 2])).batch(change(elr=[3])), {}),
        (lambda: cluster().batch(change(isr=[1, 2], elr=[3])), {})],
    "ElrMembersRetained": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[3])).batch(
        change(elr=[])), {})],
    "NewLeaderIsLive": [  # KAFKA-19522: a fenced last known leader elected (4.0.x)
        (lambda: _last_leader_ready().batch(change(leader=1, isr=[1], lrs=1, lke=[])), {}),
        (lambda: cluster().batch(brc(3, E[3], inControlledShutdown=1), change(isr=[1, 2]))
         .batch(change(leader=3, isr=[1, 2, 3])), {})],
    "ElrElectionOnlyWithEmptyIsr": [(lambda: cluster(3).batch(change(isr=[1, 2], elr=[3])).batch(
        change(isr=[3], leader=3, elr=[1, 2]), fence(1, E[1])), {})],
    "ElectionFollowsAssignmentOrder": [
        (lambda: cluster().batch(change(isr=[2, 3], leader=3), fence(1, E[1])), {}),
        (lambda: cluster().batch(change(leader=2)), {})],
    "UncleanElectionOnlyWhenAllowed": [
        (lambda: _unclean_ready().batch(change(leader=2, isr=[2], lrs=1)), PRE),
        (lambda: cluster().batch(change(isr=[1, 2])).batch(
            change(isr=[3], leader=3, lrs=1)), {}),
        (_outsider_elected_mid_reassignment, {})],
    "UncleanElectionMarksRecovering": [
        (lambda: _unclean_ready().batch(change(leader=2, isr=[2])), REQUESTED)],
    "LeaderlessOnlyWithoutCandidate": [
        (lambda: cluster().batch(change(isr=[2, 3], leader=-1), fence(1, E[1])), {}),
        (lambda: _unclean_ready().batch(topic_config("t", "unclean.leader.election.enable",
                                                     "true")).batch(change(isr=[1])), PRE)],
    "LeaderRecoveryStateChange": [(lambda: cluster().batch(change(lrs=1)), {})],
    "LastKnownElrUpdate": [
        (lambda: into_elr(cluster()).batch(fence(3, E[3])).batch(
            change(isr=[], leader=-1, elr=[1, 3]), fence(1, E[1])), {}),
        (lambda: leaderless(cluster()), KIP)],
    "LeaderEpochBump": [(lambda: cluster().batch(change(isr=[1, 2], leader=1)), {}),
                        (lambda: cluster(mv=11).batch(change(isr=[1, 2])), {})],
    "ClearElrOnlyOnMinIsrChange": [(lambda: into_elr(cluster()).batch(clear_elr("t")), {})],
    "MinIsrChangeClearsElr": [(lambda: into_elr(cluster()).batch(
        topic_config("t", MIN_ISR, "3")), {})],
    "ReplayConsistency": [(lambda: cluster().batch(change(tid="X")), {}),
                          (lambda: cluster().batch(fence(1, 99)), {})],
}


def _cases(table: dict[str, list[Case]]) -> list[Any]:
    return [pytest.param(rule, i, id=f"{rule}-{i}") for rule, cases in table.items()
            for i in range(len(cases))]


def _run_case(table: dict[str, list[Case]], rule: str, i: int) -> set[str]:
    build, ctx = table[rule][i]
    ctx = dict(ctx)
    return run(build(), ctx.pop("profile", "kafka-4.1"), **ctx)


@pytest.mark.parametrize(("rule", "i"), _cases(BREAK))
def test_rule_breaks(rule: str, i: int) -> None:
    assert rule in _run_case(BREAK, rule, i)


@pytest.mark.parametrize(("rule", "i"), _cases(KEEP))
def test_rule_kept(rule: str, i: int) -> None:
    assert _run_case(KEEP, rule, i) == set()


def test_every_rule_has_cases() -> None:
    # MetadataLogMatching: test_common_prefix below; OfflineDirectoryNotLeaderOrIsr (KIP-858):
    # tests/test_logdirs.py, with the log directories these records leave out.
    rules = set(TRACE_RULES) - {"MetadataLogMatching", "OfflineDirectoryNotLeaderOrIsr"}
    assert rules == set(BREAK) == set(KEEP)
    for rule in TRACE_RULES.values():
        assert rule.citation and rule.kind in ("invariant", "change")


def test_violation_names_rule_record_and_states() -> None:
    log = cluster().batch(change(isr=[2, 3], leader=-1), fence(1, E[1]))
    result = validate(log.records, TraceContext(profile="kafka-4.1", brokers=(1, 2, 3)))
    (v,) = [v for v in result.violations if v.rule == "LeaderlessOnlyWithoutCandidate"]
    assert v.offset == log.records[-2]["offset"] and v.record == log.records[-2]
    assert v.partition == ("t", 0) and "seeds/003" in v.citation
    assert v.before is not None and v.before.partitions[("T", 0)].leader == 1
    assert v.after is not None and v.after.partitions[("T", 0)].leader == -1
    assert "valid replicas [2, 3]" in str(v)


def test_broken_state_is_reported_once() -> None:
    log = cluster().batch(fence(3, E[3])).batch(unfence(3, E[3])).batch(fence(3, E[3]))
    violations = validate(log.records, TraceContext(profile="kafka-4.1")).violations
    assert [v.rule for v in violations] == ["FencedReplicaNotInIsr", "FencedReplicaNotInIsr"]


def test_without_batch_offsets_records_of_one_append_time_form_a_batch() -> None:
    log = realistic()
    for r in log.records:
        del r["batch_base_offset"]
    assert run(log) == set()
    for r in log.records:   # each record alone: the fence batches break apart
        r["append_time_ms"] = r["offset"]
    assert "FencedReplicaNotInIsr" not in run(log)   # the change comes before the fence
    assert "LeaderIsLive" not in run(log)


def test_replay_follows_kafka_merge() -> None:
    log = cluster()
    log.batch(change(isr=[1, 3]))                         # ISR shrink: epoch unchanged
    log.batch(change(isr=[1], elr=[3]))
    log.batch(topic_config("t", MIN_ISR, "3"), clear_elr("t"))
    states = replay(log.records, TraceContext(brokers=(1, 2, 3)))
    assert len(states) == len(log.records)
    p = states[-1].partitions[("T", 0)]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.elr) == (1, 0, 3, ())
    assert states[-1].min_isr("T", 1) == 3 and states[-1].features[ELR] == 1
    assert states[-1].brokers[1].active and states[-1].brokers[1].epoch == E[1]
    assert [s.end_of_batch for s in states[-2:]] == [False, True]


def test_real_kafka_431_trace() -> None:
    """Decoded from a 4.3.1 controller log (last-known-leader-elected-after-unclean-restart):
    clean under kafka-4.1; kip966 sees the LastKnownELR differences."""
    log = Log()
    t = "oUP4DZO5SQ6rhzmsgASnRw"
    log.batch(feature("metadata.version", 30), feature(ELR, 1), cluster_config(MIN_ISR, "1"))
    log.batch(register(2, 13), register(1, 14)).batch(register(3, 18))
    log.batch(unfence(2, 13)).batch(unfence(1, 14)).batch(unfence(3, 18))
    log.batch(topic("t", t), topic_config("t", MIN_ISR, "2"), clear_elr("t"),
              partition(t, [1, 2, 3], [1, 2, 3], 1))
    log.batch(change(t, isr=[2, 3], leader=2), fence(1, 14))
    log.batch(change(t, isr=[3], leader=3, elr=[2]), fence(2, 13))
    log.batch(change(t, isr=[], leader=-1, elr=[2, 3], lke=[3]), fence(3, 18))
    log.batch(change(t, elr=[3]), register(2, 68)).batch(unfence(2, 68))
    log.batch(change(t, elr=[]), register(3, 78))
    log.batch(unfence(3, 78), change(t, isr=[3], leader=3, lrs=1, lke=[]))
    log.batch(change(t, isr=[2, 3], lrs=0))
    assert run(log) == set()
    kip = validate(log.records, TraceContext(profile="kip966")).violations
    leaderless_at, unclean_2_at = (
        next(r["offset"] for r in log.records if r["data"].get("lastKnownElr") == [3]),
        next(r["offset"] for r in log.records if r["data"].get("eligibleLeaderReplicas") == [3]))
    assert [(v.rule, v.offset) for v in kip] == [("LastKnownElrUpdate", leaderless_at),
                                                 ("LastKnownElrUpdate", unclean_2_at)]


def test_common_prefix() -> None:
    a = realistic().records
    assert common_prefix_agrees([a, a[:20], a[:5]]) is None
    assert common_prefix_agrees([]) is None
    b = [dict(r) for r in a[:20]]
    b[12] = {**b[12], "data": {**b[12]["data"], "brokerEpoch": 7}}
    v = common_prefix_agrees([a, b])
    assert v is not None and v.rule == "MetadataLogMatching" and v.offset == 12
    assert common_prefix_agrees([a[:10], a[:5] + a[6:12]]) is not None   # a gap


def test_validation_is_cheap() -> None:
    """A few thousand records over 50 partitions: well under a second."""
    log = cluster()
    log.batch(topic("__consumer_offsets", "C"),
              *[("PARTITION_RECORD", {**partition("C", [1, 2, 3], [1, 2, 3], 1)[1],
                                      "partitionId": k}) for k in range(50)])
    for _ in range(60):
        for k in range(0, 50, 5):
            log.batch(replace_partition(change("C", isr=[1, 2]), k))
            log.batch(replace_partition(change("C", isr=[1, 2, 3]), k))
        log.batch(("NO_OP_RECORD", {}))
        log.batch(unfence(1, E[1]))
    assert len(log.records) > 1_200
    start = time.process_time()  # CPU, not wall: other processes' load must not count
    result = validate(log.records, TraceContext(profile="kafka-4.1", brokers=(1, 2, 3)))
    assert result.ok and time.process_time() - start < 1.0


def replace_partition(rec: Rec, k: int) -> Rec:
    return rec[0], {**rec[1], "partitionId": k}


@pytest.mark.parametrize(("version", "profile"), [("4.3.1", "kafka-4.1"), ("3.9.1", "pre-elr")])
def test_real_decoded_logs(version: str, profile: str) -> None:
    """fixtures/metadata/<version>: a real controller log (controlled shutdown, reassignment,
    min ISR change, kills, unclean election enabled) decoded by harness.client.metadata_records:
    clean under its own profile, from the log and from the newest snapshot."""
    records = pytest.importorskip("harness.client.metadata_records")
    log_dir = Path(__file__).parent.parent / "fixtures" / "metadata" / version / \
        "__cluster_metadata-0"
    if not log_dir.is_dir():
        pytest.skip(f"no {log_dir}")
    for latest in (False, True):
        result = validate(records.read_log_dir(log_dir, latest_snapshot=latest),
                          TraceContext(profile=profile, brokers=(1, 2, 3, 4)))
        assert result.ok, [str(v) for v in result.violations]
    flagged = {v.rule for v in validate(records.read_log_dir(log_dir),
                                        TraceContext(profile="kip966")).violations}
    assert flagged == ({"FencedReplicaNotInIsr"} if version == "3.9.1"
                       else {"LastKnownElrUpdate"})


def test_context_defaults() -> None:
    ctx = TraceContext()
    assert replace(ctx, profile="pre-elr").profile == "pre-elr"
    assert ctx.min_isr_default == 1 and not ctx.unclean_election_requested
