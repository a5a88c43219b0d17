"""Each metadata record judged under the build of the controller that wrote it (issue 43:
"each decision is judged by the rules of the build that made it"): the KRaft leader of
its batch's epoch, and that leader's build at the time (run.json node_builds, the
``upgrade`` faults). A cluster born on 3.9.2 (pre-elr) whose controllers run 4.3.1 from
epoch 2 on, with ELR turned on at eligible.leader.replicas.version 1 by then."""

from __future__ import annotations

from typing import Any

from test_reference_trace import ELR, Log, change, cluster, feature

from harness.judge import trace_check
from reference import TraceContext, validate


def epochs(log: Log, epoch: int, first: int) -> Log:
    """Records from offset ``first`` on written in KRaft epoch ``epoch`` (the rest in 1)."""
    for i, rec in enumerate(log.records):
        rec["leader_epoch"] = epoch if i >= first else 1
    return log


def rules(log: Log, **ctx: Any) -> set[str]:
    result = validate(log.records, TraceContext(profile="pre-elr", brokers=(1, 2, 3), **ctx))
    return {v.rule for v in result.violations}


def born_39_upgraded(*more: Any) -> Log:
    """The 4.3.1 controller (epoch 2) turns ELR on and shrinks the ISR below min ISR 3,
    filling the ELR as 4.3.1 must; then ``more`` batches."""
    log = cluster(min_isr=3, elr=False, mv=21)
    first = len(log.records)
    log.batch(feature(ELR, 1)).batch(change(isr=[1, 2], elr=[3]))
    for rec in more:
        log.batch(rec)
    return epochs(log, 2, first)


WRITTEN_BY_43 = ((2, "kafka-4.3"),)


def test_a_record_legal_under_its_writers_build_but_not_the_birth_build() -> None:
    log = born_39_upgraded()
    assert rules(log) == {"NoElrWhenDisabled",               # the old check: 3.9's rules
                          "ElrJoinOnlyFromIsrUnderMinIsr"}
    assert rules(log, writer_profiles=WRITTEN_BY_43) == set()


def test_a_record_illegal_under_its_writers_build_but_legal_under_the_birth_build() -> None:
    # Then the 4.3.1 controller drops ELR member 3 while the ISR [1, 2] is under min ISR:
    # KIP-966 keeps it (ELR off, 3.9's rules, allow it).
    log = born_39_upgraded(change(elr=[]))
    assert "ElrMembersRetained" not in rules(log)            # the old check missed the drop
    assert rules(log, writer_profiles=WRITTEN_BY_43) == {"ElrMembersRetained"}


def test_records_of_epochs_led_by_the_birth_build_keep_its_rules() -> None:
    log = born_39_upgraded()
    assert "NoElrWhenDisabled" in rules(log, writer_profiles=((3, "kafka-4.3"),))


def test_writer_builds_from_leader_changes_and_upgrades() -> None:
    leaders = {1: (102, 1_000), 2: (100, 5_000), 3: (101, 9_000)}
    events = [{"kind": "fault", "action": "upgrade", "t_wall": 2.0,
               "params": {"node": 100, "version": "4.3.1", "was": "3.9.2"}},
              {"kind": "fault", "action": "upgrade", "t_wall": 10.0,
               "params": {"node": 101, "version": "4.3.1", "was": "3.9.2"}}]
    assert trace_check.writer_builds(leaders, events, "3.9.2") == {
        1: "3.9.2", 2: "4.3.1", 3: "3.9.2"}
    assert trace_check.writer_profiles(leaders, events, "3.9.2", elr=False) == (
        (2, "kafka-4.3"),)
