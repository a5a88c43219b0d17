"""``invariant:ElrEmptyAtMinIsr:unfence`` on 4.4.0 (bench/RESULTS-diff.md "Triage, sixth
session (h/telr)"): the ELR members a min ISR change made while ELR was off kept (no
ClearElrRecord: ConfigurationControlManager.createClearElrRecordsAsNeeded is gated on the
feature) are the cited deviation elr-disable-keeps-fields, named, not a finding
(harness/differential/stale_elr.py); a violation they do not explain stays a finding.

The crafted answers are 4.4.0's own for the 8 events the campaign's 106-event lane shrank to
(driver run, 2026-11-28); the last test runs them on the real driver when 4.4.0 is cached."""

from __future__ import annotations

from typing import Any

import pytest
from test_differential_model import answer, comparator, part

from harness.cluster import builds
from harness.differential import protocol as p
from harness.differential.campaign.replay import replay
from harness.differential.compare import AGREES, DIVERGES, Comparator, StepReport
from harness.differential.model import initial, observed
from harness.differential.protocol import Answer
from harness.differential.stale_elr import StaleElr
from harness.infra.cache import cache_root
from reference.model.controller_events import apply
from reference.model.state import evolve
from reference.releases.catalog import get_profile

R = [2, 3, 4]
IDS = [1, 2, 3, 4, 5]
SIG = "invariant:ElrEmptyAtMinIsr:unfence:kafka-4.3"


def _regs(fenced: tuple[int, ...] = (), shutting: tuple[int, ...] = ()) -> dict[str, Any]:
    return {str(b): {"epoch": 1, "fenced": b in fenced, "inControlledShutdown": b in shutting,
                     "alive": b not in fenced} for b in IDS}


def _feature(level: int) -> tuple[dict[str, Any], Answer]:
    a = answer("updateFeature", {}, {})
    return (p.update_feature(p.ELR_FEATURE, level),
            Answer(**{**a.__dict__, "raw": {"elr": bool(level), "level": level}}))


def _steps(window: bool = True, last: dict[str, Any] | None = None
           ) -> list[tuple[dict[str, Any], Answer]]:
    """create t [2, 3, 4] (min ISR 2); fence 4; controlledShutdown 3 (ISR [2], ELR [3]);
    ELR off; cluster min ISR 1 (no ClearElrRecord); ELR on; controlledShutdown 2 (ISR [],
    ELR [2, 3]); unfence 3: elected from the ELR, ISR [3], ELR [2] at min ISR 1.
    ``window`` False: the min ISR change with ELR on (ClearElrRecord: ELR [])."""
    min_isr = (p.alter_config({"min.insync.replicas": "1"}),
               answer("alterConfig", {} if window else {"t-0": part(2, 0, 3, R, [2])}, {}))
    out = [(p.create_topic("t", [R]), answer("createTopic", {"t-0": part(2, 0, 0, R, R)}, {})),
           (p.fence(4), answer("fence", {"t-0": part(2, 0, 1, R, [2, 3])}, _regs((4,)))),
           (p.controlled_shutdown(3),
            answer("controlledShutdown", {"t-0": part(2, 0, 2, R, [2], [3])}, _regs((3, 4))))]
    out += [_feature(0), min_isr, _feature(1)] if window else [min_isr]
    if not window:
        out.append((p.controlled_shutdown(2), answer(
            "controlledShutdown", {"t-0": part(-1, 1, 4, R, [], [2], [2])},
            _regs((2, 3, 4), (2,)))))
        out.append((p.unfence(3), answer("unfence", {}, _regs((2, 4), (2,)))))
        return out
    out.append((p.controlled_shutdown(2), answer(
        "controlledShutdown", {"t-0": part(-1, 1, 3, R, [], [2, 3], [2])},
        _regs((2, 3, 4), (2,)))))
    out.append((p.unfence(3), answer("unfence", {"t-0": last or part(3, 2, 4, R, [3], [2])},
                                     _regs((2, 4), (2,)))))
    return out


def _run(steps: list[tuple[dict[str, Any], Answer]]) -> tuple[Comparator, list[StepReport]]:
    c = comparator(IDS, min_isr=2, version=(4, 4, 0))
    return c, [c.step(e, a) for e, a in steps]


def test_an_elr_kept_across_a_min_isr_change_with_elr_off_is_the_cited_deviation() -> None:
    """The campaign's class: the release axis agrees at every event, and the unfencing's
    ELR [2] beside ISR [3] at min ISR 1 is elr-disable-keeps-fields, not a finding."""
    _, reps = _run(_steps())
    assert all(r.release == AGREES for r in reps), [(r.op, r.release) for r in reps]
    assert all(not r.findings for r in reps), [f.signature for r in reps for f in r.findings]
    assert "elr-disable-keeps-fields" in reps[-1].deviations


def test_the_state_it_leaves_is_the_deviation_at_the_next_election_too() -> None:
    """ISR [3], ELR [2] at min ISR 1 (the deviation's): 3 fenced (ISR [], ELR [2, 3]) and
    unfenced again breaks the invariant anew (the campaign's second and third ``unfence``
    of the lane): still the deviation, every member of that ELR being one ELR on would have
    cleared."""
    steps = _steps()
    steps += [(p.fence(3), answer("fence", {"t-0": part(-1, 3, 5, R, [], [2, 3], [3])},
                                  _regs((2, 3, 4), (2,)))),
              (p.unfence(3), answer("unfence", {"t-0": part(3, 4, 6, R, [3], [2])},
                                    _regs((2, 4), (2,))))]
    _, reps = _run(steps)
    assert all(not r.findings for r in reps), [f.signature for r in reps for f in r.findings]
    assert "elr-disable-keeps-fields" in reps[-1].deviations


def test_without_the_elr_off_window_the_min_isr_change_clears_and_nothing_is_stale() -> None:
    """The control: with ELR on the min ISR change writes a ClearElrRecord (the build's
    answer: ELR []), so the partition is not tracked and the ELR holds only the last ISR
    member."""
    c, reps = _run(_steps(window=False))
    assert all(r.release == AGREES and not r.findings for r in reps)
    assert c.stale.members == {}


def test_a_violation_the_model_does_not_make_is_still_a_finding() -> None:
    """The same window, but a build whose unfencing left ELR [2, 4] (the model: [2]): the
    release axis diverges, so the kept members are not asked about and the invariant is a
    finding beside it."""
    _, reps = _run(_steps(last=part(3, 2, 4, R, [3], [2, 4])))
    sigs = {f.signature for f in reps[-1].findings}
    assert reps[-1].release == DIVERGES and SIG in sigs
    assert "elr-disable-keeps-fields" not in reps[-1].deviations


def test_a_violation_without_the_toggle_is_still_a_finding() -> None:
    """No ELR-off window at all: a build that leaves ELR [4] beside ISR [2, 3] at min ISR
    2 (as docs/findings/elr-keeps-removed-replica.md's does) is a finding."""
    c = comparator(IDS, min_isr=2, version=(4, 4, 0))
    c.step(p.create_topic("t", [R]), answer("createTopic", {"t-0": part(2, 0, 0, R, R)}, {}))
    rep = c.step(p.alter_partition("t", [2, 3]),
                 answer("alterPartition", {"t-0": part(2, 0, 1, R, [2, 3], [4])}, {}))
    assert "invariant:ElrEmptyAtMinIsr:alterPartition:kafka-4.3" in {
        f.signature for f in rep.findings}


def test_kept_members_that_do_not_make_the_violation_do_not_name_the_deviation() -> None:
    """Exactness (StaleElr.explains): a partition with ELR [2, 3, 4] at min ISR 1 of which
    only 4 was kept by the window: unfencing 3 elects it and leaves ELR [2, 4]; without 4 it
    would leave [2], still a violation, so the kept member is not the cause. With 3 the
    kept one, the violation needs it (without 3 nothing is elected)."""
    k43 = get_profile("kafka-4.3")
    start = initial({}, _regs((2, 3, 4)), min_isr=1, unclean=False, elr=True)
    prior = evolve(observed(start, {"t-0": part(-1, 1, 3, R, [], [2, 3, 4])}, None),
                   elr_live=True)
    event = p.unfence(3)

    def violated(c: Any, k: str) -> bool:
        q = c.partitions[k]
        return bool(q.elr) and len(q.isr) >= 1

    def predict(c: Any) -> Any:
        return apply(c, k43, event)

    (out,) = predict(prior).outcomes
    assert (out.cluster.partitions["t-0"].leader, violated(out.cluster, "t-0")) == (3, True)
    s = StaleElr()
    s.members = {"t-0": frozenset({4})}
    assert not s.explains("t-0", prior, event, predict, violated)
    s.members = {"t-0": frozenset({3})}
    assert s.explains("t-0", prior, event, predict, violated)


def test_only_a_min_isr_change_elr_on_would_clear_for_is_tracked() -> None:
    """ELR off: a topic's min ISR, or the cluster's, marks the ELR members of the
    partitions it covers; another config, a broker's own value, or the cluster's removed
    (both refused with ELR on) does not; with ELR on nothing is marked."""
    start = initial({}, _regs(), min_isr=2, unclean=False, elr=True)
    c = observed(start, {"t-0": part(2, 0, 2, R, [2], [3]),
                         "u-0": part(2, 0, 2, R, [2], [4])}, None)
    off = evolve(c, elr_live=False)
    for event, marked in [
            (p.alter_config({"min.insync.replicas": "1"}, topic="t"), {"t-0"}),
            (p.alter_config({"min.insync.replicas": "1"}), {"t-0", "u-0"}),
            (p.alter_config({"unclean.leader.election.enable": "true"}), set()),
            ({**p.alter_config({"min.insync.replicas": "1"}), "broker": 2}, set()),
            (p.alter_config({"min.insync.replicas": None}), set())]:
        s = StaleElr()
        s.update(event, True, off, off)
        assert set(s.members) == marked, event
        s = StaleElr()
        s.update(event, True, c, c)
        assert s.members == {}, event
    s = StaleElr()
    s.update(p.alter_config({"min.insync.replicas": "1"}), False, off, off)
    assert s.members == {}


def test_the_kips_own_text_reaches_the_state_and_4x_with_elr_on_does_not() -> None:
    """Why this is no Kafka defect of its own: KIP-966 removes the ELR at a min ISR change
    only "if the new min ISR <= current ISR" and removes only the elected member at an ELR
    election ('Controller behaviors' 3), so from ISR [], ELR [2, 3, 4] at min ISR 3 the KIP
    (``kip966``) keeps the ELR at min ISR 1 and unfencing 2 leaves ELR [3, 4] beside ISR
    [2]: the KIP's rules break its own invariant with ELR on throughout. 4.x clears the ELR
    at every min ISR change while ELR is on (min-isr-change-always-clears-elr), so only a
    change made with ELR off keeps one."""
    for name, after_change, elected in [("kip966", [2, 3, 4], (2, [2], [3, 4])),
                                        ("kafka-4.3", [], (None, [], []))]:
        profile = get_profile(name)
        c = initial({}, _regs((2, 3, 4)), min_isr=3, unclean=False, elr=True)
        c = observed(c, {"t-0": part(-1, 1, 3, R, [], [2, 3, 4])}, None)
        (out,) = apply(c, profile, p.alter_config({"min.insync.replicas": "1"})).outcomes
        assert sorted(out.cluster.partitions["t-0"].elr) == after_change, name
        (end,) = apply(out.cluster, profile, p.unfence(2)).outcomes
        q = end.cluster.partitions["t-0"]
        assert (q.leader, sorted(q.isr), sorted(q.elr)) == elected, name


# ---- the real driver ----

def _doc(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {"finding": {"signature": SIG}, "events": events, "elr": True,
            "settings": {"minIsr": 2, "uncleanElection": False}}


def test_on_4_4_0_the_shrunk_lane_names_the_deviation_the_rest_stay_findings() -> None:
    if not (cache_root() / "kafka" / "4.4.0" / "libs" / ".complete").exists():
        pytest.skip("Kafka 4.4.0 is not in the cache; fast tests do not download Kafka")
    build = builds.from_maven("4.4.0")
    feature = [p.update_feature(p.ELR_FEATURE, 0), p.update_feature(p.ELR_FEATURE, 1)]
    head = [p.create_topic("k0t1", [R]), p.fence(4), p.controlled_shutdown(3)]
    tail = [p.controlled_shutdown(2), p.unfence(3)]
    change = p.alter_config({"min.insync.replicas": "1"})
    shrunk = head + [feature[0], change, feature[1]] + tail
    control = head + [change] + tail
    assert SIG not in replay(build, _doc(shrunk), say=lambda _: None).seen
    assert SIG not in replay(build, _doc(control), say=lambda _: None).seen
    # The lead's campaign's elr-keeps-removed-replica instance (finding #38, 466 events
    # shrunk to 6 on this branch): no toggle window, ELR [5] beside ISR [1, 4] at min ISR 2
    # after a reassignment that removed 5. Still a finding.
    removed = [p.create_topic("k0t2", [[3, 4, 5]]), p.fence(3),
               p.update_feature(p.ELR_FEATURE, 1), p.alter_config({"min.insync.replicas": "3"}),
               {**p.reassign("k0t2", [4, 1]), "allowRfChange": True},
               p.alter_partition("k0t2", [4, 1])]
    seen = replay(build, _doc(removed), say=lambda _: None).seen
    assert seen.get("invariant:ElrEmptyAtMinIsr:alterPartition:kafka-4.3") == 5, seen
