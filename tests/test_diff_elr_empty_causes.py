"""``invariant:ElrEmptyAtMinIsr:unfence`` has several causes (bench/RESULTS-diff.md "Triage,
sixth session" h/tidx, h/tacc, h/telr): the finding's detail notes what the partition broke
before the event (compare.py ``_broken_before``), and the catalog names
elr-keeps-removed-replica only with a removed replica in the ELR before it, and
elr-survives-effective-min-isr-drop only without any such note; another note names nothing.
The last test runs both lanes on the real 4.4.0 driver when it is cached."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.campaign.replay import replay
from harness.infra.cache import cache_root
from reference.releases.known_bugs import naming_diff_finding

SIG = "invariant:ElrEmptyAtMinIsr:unfence:kafka-4.3"
RULE = "(reference/trace/rules.py ElrEmptyAtMinIsr)"
PLAIN = f"k0t0-1: ELR [2] with ISR [1] at min ISR 1 {RULE}"
REMOVED = (f"k0t0-0: ELR [3, 4] with ISR [5] at min ISR 1 {RULE}; before the event k0t0-0 "
           "already broke IsrElrWithinReplicas (k0t0-0: [3, 4] in ISR [] / ELR [3, 4, 5] / "
           "LastKnownELR [] but not in replicas [5])")
LAST_LEADER = (f"k0t0-0: ELR [3] with ISR [5] at min ISR 1 {RULE}; before the event k0t0-0 "
               "already broke IsrElrWithinReplicas (k0t0-0: [4] in ISR [] / ELR [3, 5] / "
               "LastKnownELR [4] but not in replicas [3, 5])")


def _named(detail: str) -> str | None:
    bug = naming_diff_finding((4, 4, 0), SIG, detail)
    return None if bug is None else bug.id


def test_the_note_decides_which_known_bug_names_the_class() -> None:
    assert _named(PLAIN) == "elr-survives-effective-min-isr-drop"
    assert _named(REMOVED) == "elr-keeps-removed-replica"
    assert _named(LAST_LEADER) is None  # another cause: left to be triaged
    assert _named("anything") is None and naming_diff_finding((4, 4, 0), SIG) is None


def _doc(events: list[dict[str, Any]], elr: bool) -> dict[str, Any]:
    return {"finding": {"signature": SIG}, "events": events, "elr": elr,
            "settings": {"minIsr": 2, "uncleanElection": False}}


def test_both_causes_on_the_real_driver() -> None:
    """tidx's shrunk campaign lane (4.4.0 seed 606: the removed replicas 3, 4 kept in the
    ELR, then the election) and the hand case with ELR on throughout (partition 0 shrunk
    to one replica lowers the topic's effective min ISR)."""
    if not (cache_root() / "kafka" / "4.4.0" / "libs" / ".complete").exists():
        pytest.skip("Kafka 4.4.0 is not in the cache; fast tests do not download Kafka")
    build = builds.from_maven("4.4.0")
    removed = [p.create_topic("k0t0", [[5, 3, 4]]), p.update_feature(p.ELR_FEATURE, 1),
               {**p.reassign("k0t0", [5]), "allowRfChange": True},
               {"op": "heartbeat", "broker": 5, "wantFence": True}, p.unfence(5)]
    r = replay(build, _doc(removed, elr=False), say=lambda _: None)
    assert r.seen.get(SIG) == 4, r.seen
    assert _named(r.details[SIG]) == "elr-keeps-removed-replica", r.details[SIG]
    drop = [p.create_topic("k0t0", [[4, 5, 1], [1, 2, 3]]), p.fence(3), p.fence(2),
            p.fence(1), {**p.reassign("k0t0", [4]), "allowRfChange": True}, p.unfence(1)]
    r = replay(build, _doc(drop, elr=True), say=lambda _: None)
    assert r.seen.get(SIG) == 5, r.seen
    assert _named(r.details[SIG]) == "elr-survives-effective-min-isr-drop", r.details[SIG]
