"""A shrink's candidates share one session (harness/differential/campaign/shrink.py), and the
cluster's configs are the whole controller's: a candidate must not run with an unclean
election or a min ISR an earlier candidate set. Found triaging certify's 4.4.0
`index:brokersToElrs:cancelReassignment` (bench/RESULTS-diff.md "Triage, sixth session"): a
43-event shrink whose cancel (a revert with an empty ISR, PartitionReassignmentRevert's
unclean case) was allowed only by an earlier candidate's unclean.leader.election.enable=true,
so it did not reproduce alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_diff_snapshot import _Ready, sent_by_replay

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.campaign import Campaign, Config
from harness.infra.cache import cache_root

UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"


def _sent_by_replay(tmp_path: Path, candidates: list[list[dict[str, Any]]]
                    ) -> list[list[dict[str, Any]]]:
    """The session starts at min ISR 2 (its first answer); the campaign's setting is 3."""
    return sent_by_replay(tmp_path, candidates, min_isr=3)


def test_a_candidates_cluster_configs_are_put_back_before_the_next(tmp_path: Path) -> None:
    sent = _sent_by_replay(tmp_path, [
        [p.alter_config({UNCLEAN: "true"}), p.alter_config({MIN_ISR: "1"})],
        [p.alter_config({UNCLEAN: "true"}, topic="k0t0"), p.fence(2)],
        [p.fence(1)]])
    # after the first: the unclean default deleted, the min ISR the session started with
    assert sent[1] == [p.alter_config({MIN_ISR: "2", UNCLEAN: None})]
    # a topic's config is the candidate's own namespace's: nothing put back
    assert sent[2] == [p.alter_config({UNCLEAN: "true"}, topic="k1t0"), p.fence(12)]
    assert len(sent) == 4


def test_a_min_isr_the_session_did_not_set_is_put_back_to_the_static_one(tmp_path: Path
                                                                         ) -> None:
    _Ready.records, kept = (), _Ready.records
    try:
        sent = _sent_by_replay(tmp_path, [[p.alter_config({MIN_ISR: "1"})], [p.fence(1)]])
    finally:
        _Ready.records = kept
    assert sent[1] == [p.alter_config({MIN_ISR: "3"})]


# ---- the real driver ----

def _cached(version: str) -> builds.Build:
    if not (cache_root() / "kafka" / version / "libs" / ".complete").exists():
        pytest.skip(f"Kafka {version} is not in the cache; fast tests do not download Kafka")
    return builds.from_maven(version)


def _stale_then_cancel() -> list[dict[str, Any]]:
    """docs/findings/elr-index-stale-after-min-isr-change.md's phantom entry at a cancel: k0t0-1's
    ELR member 4 left indexed by a ClearElrRecord, indexed again (twice) when it rejoins the
    ELR, a reassignment, its ISR emptied, and a cancel whose revert (ISR minus the adding
    replicas: empty) puts 4 back in the ISR uncleanly, out of the ELR; removing the doubly
    indexed partition leaves broker 4 indexed for k0t0-0 (BrokersToElrs.remove). Without an
    unclean election allowed the cancel is refused."""
    t = "k0t0"
    return [p.create_topic(t, [[1, 2], [4, 5]]), p.fence(4),
            p.alter_config({MIN_ISR: "1"}, topic=t), p.unfence(4),
            p.alter_partition(t, [5, 4], partition=1), p.alter_config({MIN_ISR: "2"}, topic=t),
            p.fence(4), p.reassign(t, [4, 3], partition=1), p.fence(5),
            p.cancel_reassignment(t, partition=1)]


def test_a_shrink_candidate_does_not_inherit_an_unclean_election(tmp_path: Path) -> None:
    campaign = Campaign(build=_cached("4.4.0"), cfg=Config(seed=1, budget_s=1, elr=True),
                        out_dir=tmp_path, say=lambda s: None)
    cancel = _stale_then_cancel()
    allowed = [*cancel[:-1], p.alter_config({UNCLEAN: "true"}), cancel[-1]]
    alone, with_unclean = campaign.replay([cancel]), campaign.replay([allowed])
    sig = "index:brokersToElrs:cancelReassignment:kafka-4.3"
    assert sig not in alone[0] and sig in with_unclean[0]
    # the same candidate after one that allowed unclean elections shows what it shows alone
    after = campaign.replay([[p.alter_config({UNCLEAN: "true"})], cancel])
    assert after[1] == alone[0]
