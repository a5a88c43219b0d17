"""The stale broker-to-ELR index's phantom entry (docs/findings/elr-index-stale-after-min-isr-
change.md, "Follow-ons the index oracle sees") at a cancel, a completion and a controlled
shutdown: the events that take a doubly indexed broker out of an ELR. Triaged 2026-11-28
(bench/RESULTS-diff.md "Triage, sixth session"): certify's 4.4.0 findings reproduce on 4.4.0
and not with the finding's fix; these hand cases (9-11 events) show each on the newest build,
and not without the min ISR changes that write the ClearElrRecords."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.campaign.session import Session
from harness.differential.protocol import Settings
from harness.infra.cache import cache_root
from reference.releases.known_bugs import naming_diff_finding

STALE = "elr-index-stale-after-min-isr-change"
OPS = ("cancelReassignment", "completeReassignment", "controlledShutdown")
T = "k0t0"


def test_the_catalog_names_the_phantom_at_these_ops() -> None:
    for op in OPS:
        bug = naming_diff_finding((4, 4, 0), f"index:brokersToElrs:{op}:kafka-4.3", "x")
        assert bug is not None and bug.id == STALE
        assert naming_diff_finding((3, 9, 2), f"index:brokersToElrs:{op}:kafka-3.9") is None


def _min_isr(v: str) -> dict[str, Any]:
    return p.alter_config({"min.insync.replicas": v}, topic=T)


def _doubly_indexed() -> list[dict[str, Any]]:
    """k0t0-1's ELR member 4 left indexed by a ClearElrRecord (its topic's min ISR lowered),
    back in the ISR, then in the ELR again: BrokersToElrs.add indexes k0t0-1 twice."""
    return [p.create_topic(T, [[1, 2], [4, 5]]), p.fence(4), _min_isr("1"), p.unfence(4),
            p.alter_partition(T, [5, 4], partition=1), _min_isr("2"), p.fence(4)]


CASES = {
    # the revert's ISR (the ISR without the adding replicas) is empty: the first original
    # replica, 4, goes back in the ISR (PartitionReassignmentRevert), out of the ELR
    "cancelReassignment": [*_doubly_indexed(), p.reassign(T, [4, 3], partition=1), p.fence(5),
                           p.alter_config({"unclean.leader.election.enable": "true"}),
                           p.cancel_reassignment(T, partition=1)],
    # the completed ISR [5, 3] reaches the min ISR: the ELR is cleared
    "completeReassignment": [*_doubly_indexed(), p.reassign(T, [5, 3], partition=1),
                             p.complete_reassignment(T, partition=1)],
    # with ELR off the builder clears the ELR of each partition the shutdown re-runs
    "controlledShutdown": [*_doubly_indexed(), p.update_feature(p.ELR_FEATURE, 0),
                           p.controlled_shutdown(5)],
}


def _signatures(events: list[dict[str, Any]]) -> set[str]:
    if not (cache_root() / "kafka" / "4.4.0" / "libs" / ".complete").exists():
        pytest.skip("Kafka 4.4.0 is not in the cache; fast tests do not download Kafka")
    s = Session(builds.from_maven("4.4.0"), Settings(brokers=(1, 2, 3, 4, 5), min_isr=2,
                                                     elr=True, report="changed"))
    try:
        return {f.signature for e, a in zip(events, s.send(events), strict=True)
                for f in s.comparator.step(e, a).findings}
    finally:
        s.close()


@pytest.mark.parametrize("op", OPS)
def test_the_phantom_entry_at_the_op_needs_the_clear_elr_record(op: str) -> None:
    events = CASES[op]
    sig = f"index:brokersToElrs:{op}:kafka-4.3"
    assert _signatures(events) == {"index:brokersToElrs:alterConfig:kafka-4.3", sig}
    assert _signatures([e for e in events if e not in (_min_isr("1"), _min_isr("2"))]) == set()
