"""A reassignment that names again a replica the ELR kept after a reassignment removed it
(docs/findings/elr-keeps-removed-replica.md), while the ISR is empty: the builder finds the
broker in the ELR and asks LeaderAcceptor, built on the partition before the change, for
its directory; PartitionRegistration.directory throws and alterPartitionReassignments
answers UNKNOWN_SERVER_ERROR for the partition, where the model elects the ELR member
(`release:accepted:reassign`, `kip:accepted:reassign`; bench/RESULTS-diff.md "Triage,
sixth session"). The finding's detail says what the partition broke before the event, and
the catalog names the class by it: only with that state and that answer. And KAFKA-19522
met by a reassignment on 4.0.2 (a fenced last known leader elected)."""

from __future__ import annotations

from typing import Any

from test_diff_snapshot import _cached
from test_differential_model import answer, brokers, comparator, part

from harness.differential import protocol as p
from reference.releases.known_bugs import naming_diff_finding


def _session(version: str, events: list[dict[str, Any]], where: str | None = None
             ) -> tuple[list[Any], dict[str, str]]:
    """``events`` in one fresh driver session of ``version`` (ELR on, min ISR 2): the answers
    and each finding's signature with its detail (only those at ``where`` when given)."""
    from harness.differential.campaign import Config
    from harness.differential.campaign.session import Session, settings_for
    s = Session(_cached(version), settings_for(1, Config(seed=0, budget_s=0, min_isr=2),
                                               elr=True))
    try:
        answers = s.send(events)
        found = {f.signature: f.detail for e, a in zip(events, answers, strict=True)
                 for f in s.comparator.step(e, a).findings if where in (None, f.where)}
    finally:
        s.close()
    return answers, found

BUG = "elr-keeps-removed-replica"

#: 7 events by hand: t [1, 2, 3] at min ISR 2; 3 then 2 fenced (ISR [1], ELR [2]); a
#: reassignment to [1] completes at once and keeps 2 in the ELR (the known bug); 1 fenced
#: (ISR empty, ELR [1, 2]); 2 unfenced (2 is no replica: nothing elected); a reassignment
#: back to [1, 2].
EVENTS = [p.create_topic("k0t0", [[1, 2, 3]]), p.fence(3), p.fence(2),
          p.reassign("k0t0", [1]), p.fence(1), p.unfence(2), p.reassign("k0t0", [1, 2])]


def _steps(last_error: str, elr_before: list[int]) -> list[tuple[dict[str, Any], Any]]:
    """The events with the answers 4.3.1 gives (the last refused with ``last_error``), the
    ELR before the last event being ``elr_before``."""
    ids = [1, 2, 3]
    b = brokers
    return [
        (EVENTS[0], answer("createTopic", {"k0t0-0": part(1, 0, 0, ids, ids)}, b(ids))),
        (EVENTS[1], answer("fence", {"k0t0-0": part(1, 0, 1, ids, [1, 2])}, b(ids, (3,)))),
        (EVENTS[2], answer("fence", {"k0t0-0": part(1, 0, 2, ids, [1], [2])}, b(ids, (2, 3)))),
        (EVENTS[3], answer("reassign", {"k0t0-0": part(1, 1, 3, [1], [1], [2])},
                           b(ids, (2, 3)))),
        (EVENTS[4], answer("fence", {"k0t0-0": part(-1, 2, 4, [1], [], elr_before, [1])},
                           b(ids, (1, 2, 3)))),
        (EVENTS[5], answer("unfence", {}, b(ids, (1, 3)))),
        (EVENTS[6], answer("reassign", {}, b(ids, (1, 3)), ok=False, error_name=last_error)),
    ]


def _last_findings(last_error: str, elr_before: list[int]) -> dict[str, str]:
    c = comparator([1, 2, 3], min_isr=2)
    out: dict[str, str] = {}
    for event, a in _steps(last_error, elr_before):
        out = {f.signature: f.detail for f in c.step(event, a).findings}
    return out


def test_a_refused_reassignment_says_what_the_partition_broke_before_it() -> None:
    found = _last_findings("UNKNOWN_SERVER_ERROR", [1, 2])
    detail = found["release:accepted:reassign:kafka-4.3"]
    assert ("; before the event k0t0-0 already broke IsrElrWithinReplicas (k0t0-0: [2] in "
            "ISR [] / ELR [1, 2] / LastKnownELR [1] but not in replicas [1])") in detail
    for sig, d in found.items():
        bug = naming_diff_finding((4, 3, 1), sig, d)
        assert bug is not None and bug.id == BUG, (sig, d)


def test_the_class_is_named_only_with_the_removed_replica_in_the_elr_and_that_answer() -> None:
    # another refusal (a request the model should refuse too): not the bug's
    other = _last_findings("INVALID_REPLICA_ASSIGNMENT", [1, 2])
    assert other and all(naming_diff_finding((4, 3, 1), s, d) is None
                         for s, d in other.items())
    # the ELR holds no broker outside the replicas: nothing names it
    clean = _last_findings("UNKNOWN_SERVER_ERROR", [1])
    assert clean and all("already broke" not in d and naming_diff_finding((4, 3, 1), s, d)
                         is None for s, d in clean.items())
    # not on a release without the bug, nor without the detail
    d = _last_findings("UNKNOWN_SERVER_ERROR", [1, 2])["release:accepted:reassign:kafka-4.3"]
    assert naming_diff_finding((3, 9, 2), "release:accepted:reassign:pre-elr", d) is None
    assert naming_diff_finding((4, 3, 1), "release:accepted:reassign:kafka-4.3") is None


def test_the_reassignment_back_is_refused_by_the_newest_build() -> None:
    """The 7 events on 4.4.0's own controller classes (ELR on): the reassignment back is
    refused with UNKNOWN_SERVER_ERROR, and both findings are named by the known bug."""
    answers, found = _session("4.4.0", EVENTS)
    assert answers[-1].error_name == "UNKNOWN_SERVER_ERROR"
    for sig in ("release:accepted:reassign:kafka-4.3", "kip:accepted:reassign:kip966"):
        bug = naming_diff_finding((4, 4, 0), sig, found[sig])
        assert bug is not None and bug.id == BUG, found[sig]


#: KAFKA-19522 met at a reassignment (4.0.2): t [1, 2, 3] leaderless with ISR [], ELR
#: [1, 2], LastKnownELR [1] (every replica fenced); ELR off, a reassignment writes the ELR
#: empty and keeps LastKnownELR (elr-disable-keeps-fields); ELR on; a reassignment runs the
#: builder: 4.0.2's canElectLastKnownLeader elects the fenced broker 1.
FENCED_LAST_LEADER = [
    p.create_topic("k0t0", [[1, 2, 3]]), p.fence(3), p.fence(2), p.fence(1),
    p.update_feature(p.ELR_FEATURE, 0), p.reassign("k0t0", [2, 1, 3]),
    p.update_feature(p.ELR_FEATURE, 1), p.reassign("k0t0", [1, 2, 3])]


def test_kafka_19522_names_a_fenced_last_leader_elected_by_a_reassignment() -> None:
    for sig in ("release:leader:reassign:kafka-4.0-elr",
                "invariant:LeaderIsLive:reassign:kafka-4.0-elr",
                "invariant:LeaderIsLive:unregister:kafka-4.0-noelr",
                "invariant:LeaderIsLive:heartbeat:kafka-4.0-elr"):
        bug = naming_diff_finding((4, 0, 2), sig)
        assert bug is not None and bug.id == "KAFKA-19522", sig
        assert naming_diff_finding((4, 1, 2), sig.replace("4.0-elr", "4.1")) is None
    answers, found = _session("4.0.2", FENCED_LAST_LEADER)
    assert answers[-1].partition("k0t0")["leader"] == 1
    assert {"release:leader:reassign:kafka-4.0-elr",
            "invariant:LeaderIsLive:reassign:kafka-4.0-elr"} <= found.keys(), found


def test_an_elr_election_at_a_lowered_effective_min_isr_keeps_the_other_members() -> None:
    """docs/findings/elr-survives-effective-min-isr-drop/events.json on 4.4.0: partition 0
    reassigned to one replica lowers the topic's effective min ISR to 1; partition 1 then
    elects from its ELR [1, 3] and keeps ISR [1], ELR [3] (the KIP's invariant broken,
    named by the draft), and later elects 3 from the ELR; without the reassignment
    (control.json) the same states are the KIP's and nothing is reported."""
    import json
    from pathlib import Path

    here = Path(__file__).resolve().parents[1] / "docs/findings/elr-survives-effective-min-isr-drop"
    for name, reported in (("events.json", True), ("control.json", False)):
        events = json.loads((here / name).read_text())["events"]
        answers, found = _session("4.4.0", events, where="k0t0-1")
        assert answers[-1].partition("k0t0", 1)["leader"] == 3
        sig = "invariant:ElrEmptyAtMinIsr:unfence:kafka-4.3"
        assert (sig in found) is reported, found
        if reported:
            # named by the detail: no invariant broken before the event (known_bugs.py)
            bug = naming_diff_finding((4, 4, 0), sig, found[sig])
            assert bug is not None and bug.id == "elr-survives-effective-min-isr-drop"


def test_a_cancelled_reassignment_leaves_a_last_known_leader_that_faults_on_4_0() -> None:
    """docs/findings/last-known-leader-not-a-replica/events-cancel.json on 4.0.2 (ELR on, no
    toggle): the cancel keeps the removed adding replica 4 in LastKnownELR; an unclean
    registration empties the ISR and the election asks LeaderAcceptor about 4: the
    controller faults, named by last-known-leader-not-a-replica (4.0.0+)."""
    import json
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / (
        "docs/findings/last-known-leader-not-a-replica/events-cancel.json")
    events = json.loads(doc.read_text())["events"]
    answers, found = _session("4.0.2", events)
    assert answers[-1].exception is not None and "Replica 4" in answers[-1].exception
    sig = "fault:IllegalArgumentException:register:kafka-4.0-elr"
    bug = naming_diff_finding((4, 0, 2), sig, found[sig])
    assert bug is not None and bug.id == "last-known-leader-not-a-replica"
