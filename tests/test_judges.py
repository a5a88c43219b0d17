"""The three judging axes: kip (deviation search), safety (fault budget), expectations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.judge.axes import (
    DEVIATES,
    KIP_DIVERGES,
    SAFE,
    UNSAFE,
    AxisVerdict,
    KipJudge,
    ObservedStep,
    judge_safety,
)
from harness.judge.datachecks import run_checks
from reference.releases.catalog import PROFILES
from reference.releases.deviations import BY_ID, KNOWN_DEVIATIONS, deviations_of, kip_base
from reference.releases.profiles import KIP966


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_release_profile_is_the_kip_plus_cited_deviations(name: str) -> None:
    profile = PROFILES[name]
    for elr in (True, False):
        for dev in deviations_of(profile, elr, kip_base(profile)):
            assert BY_ID[dev.id] is dev
    doc = (Path(__file__).resolve().parent.parent / "docs" / "KNOWN-DEVIATIONS.md").read_text()
    for dev in KNOWN_DEVIATIONS:
        assert f"## {dev.id}\n" in doc, f"{dev.id} has no cited section"


def test_an_uncited_difference_is_refused() -> None:
    from dataclasses import replace
    odd = replace(KIP966, name="odd", hwm_rule=False, election_order="any")
    assert [d.id for d in deviations_of(odd)] == ["no-hwm-rule"]
    with pytest.raises(ValueError, match="no known deviation"):
        deviations_of(replace(KIP966, name="odd", kip1303=True))


@dataclass
class _Pred:
    unsupported: str | None = None


class _Model:
    """Explains an observation only when the profile carries the field values it names."""

    def __init__(self, profile: Any, needs: dict[str, Any]) -> None:
        self.profile, self.needs = profile, needs

    def apply(self, step: Any, continues_step: bool = False) -> _Pred:
        return _Pred()

    def explain(self, observed: Any) -> str | None:
        field = self.needs.get(observed)
        if field is None or getattr(self.profile, field[0]) == field[1]:
            return None
        return f"{field[0]}: predicted the KIP's, observed {observed}"

    def resolve(self, observed: Any, acks: Any, read: Any = None) -> None:
        pass

    def must_survive(self) -> frozenset[str]:
        return frozenset({"r1"}) if self.profile.last_known_elr == "kip" else frozenset()

    def unread(self, lost: frozenset[str]) -> frozenset[str]:
        return lost & self.must_survive()


def _judge(needs: dict[str, Any]) -> KipJudge:
    return KipJudge(lambda prof: _Model(prof, needs), PROFILES["kafka-4.1"], True,
                    lambda pred, outcome: None)


def test_kip_axis_names_the_deviation_that_explains_an_observation() -> None:
    judge = _judge({"lke": ("last_known_elr", "last-leader")})
    judge.step(ObservedStep(0, "s0", "fine", None))
    judge.step(ObservedStep(1, "s1", "lke", None))
    v = judge.verdict()
    assert v.verdict == DEVIATES
    assert [d["deviation"] for d in v.details] == ["last-known-elr-is-last-leader"]
    assert v.details[0]["index"] == 1


def test_kip_axis_diverges_when_no_cited_deviation_explains() -> None:
    judge = _judge({"odd": ("hwm_rule", False)})  # kafka-4.1 keeps the HWM rule
    judge.step(ObservedStep(0, "s0", "odd", None))
    v = judge.verdict()
    assert v.verdict == KIP_DIVERGES and "step 1" in v.reason
    assert not AxisVerdict("kip", v.verdict).as_expected


def test_kip_axis_judges_a_loss_the_kip_forbids() -> None:
    judge = _judge({})
    judge.finish(["r1"])
    assert judge.verdict().verdict == DEVIATES  # LastKnownELR-as-last-leader explains it
    strict = KipJudge(lambda prof: _Model(prof, {}), KIP966, True, lambda p, o: None)
    strict.finish(["r1"])
    assert strict.verdict().verdict == KIP_DIVERGES


def _events(lost_node_count: int, acks: str = "all") -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = []

    def add(kind: str, **f: Any) -> None:
        ev.append({"seq": len(ev), "kind": kind, **f})
    add("ack", record_id="a", topic="t", partition=0, acks=acks, offset=0, error=None)
    for node in range(1, lost_node_count + 1):
        add("fault", action="lose_unflushed", params={"node": node, "offset": 0})
    add("read", topic="t", partition=0, records=0, complete=True)
    return ev


def test_safety_unsafe_for_an_acked_loss_within_the_fault_budget() -> None:
    ev = _events(lost_node_count=1)
    v = judge_safety(ev, run_checks(ev), min_isr=2)
    assert v.verdict == UNSAFE and v.details[0]["rule"] == "acked-record-durable"
    assert v.details[0]["records"][0]["record_id"] == "a"


def test_an_acked_record_the_recovery_read_found_is_hidden_not_lost() -> None:
    # The final read missed "a"; healed, the cluster showed it (harness/run/recovery.py).
    ev = _events(lost_node_count=1)
    ev.append({"seq": len(ev), "kind": "recovery", "topic": "t", "partition": 0,
               "readable": ["a"], "unread": []})
    v = judge_safety(ev, run_checks(ev), min_isr=2)
    assert v.verdict == UNSAFE and [d["rule"] for d in v.details] == ["acked-record-hidden"]
    assert v.details[0]["records"][0]["record_id"] == "a"
    assert "hidden, not lost" in v.reason
    # A record the recovery read did not find either is lost, as before.
    ev[-1] = {**ev[-1], "readable": [], "unread": ["a"]}
    assert [d["rule"] for d in judge_safety(ev, run_checks(ev), 2).details] == \
        ["acked-record-durable"]


def test_safety_does_not_claim_beyond_the_fault_budget_or_for_acks_1() -> None:
    ev = _events(lost_node_count=2)
    assert judge_safety(ev, run_checks(ev), min_isr=2).verdict == SAFE
    ev = _events(lost_node_count=0, acks="1")
    assert judge_safety(ev, run_checks(ev), min_isr=2).verdict == SAFE


def test_safety_unsafe_on_hwm_going_back_and_trace_invariants() -> None:
    ev = [{"seq": 0, "kind": "observation", "topic": "t", "partition": 0, "state": {"hwm": 5}},
          {"seq": 1, "kind": "observation", "topic": "t", "partition": 0, "state": {"hwm": 3}}]
    assert judge_safety(ev, run_checks(ev), 2).details[0]["rule"] == "consumer-hwm-monotonic"
    v = judge_safety([], run_checks([]), 2, [{"rule": "LeaderInIsr"}])
    assert v.verdict == UNSAFE and v.details[0]["rule"] == "trace-invariants"


def test_a_declared_verdict_is_as_expected_and_only_that_one() -> None:
    exp = {"verdict": UNSAFE, "reason": "pre-ELR"}
    assert AxisVerdict("safety", UNSAFE, expected=exp).as_expected
    assert not AxisVerdict("safety", SAFE, expected=exp).as_expected
    assert AxisVerdict("safety", SAFE).as_expected
    assert not AxisVerdict("safety", UNSAFE).as_expected


#: Every release profile's semantics as written out field by field before the profiles
#: became kip966 plus deviations (reference/releases/catalog.py): the deltas must rebuild them.
_RELEASE_FIELDS = {
    "pre-3.7": (False, False, "assignment", "none", "kip", False, False, False),
    "pre-elr": (False, True, "assignment", "none", "kip", False, False, False),
    "kafka-4.0-elr": (True, True, "assignment", "last-leader", "always", False, False, False),
    # LastKnownELR: 4.0's rule, which acts once a ``feature`` step turns ELR on (issue 43).
    "kafka-4.0-noelr": (False, True, "assignment", "last-leader", "always", False, False,
                        False),
    "kafka-4.1": (None, True, "assignment", "last-leader", "always", False, False, False),
    "kip1303": (True, True, "assignment", "kip", "kip", True, True, True),
    "kip966": (True, True, "any", "kip", "kip", True, False, True),
}


@pytest.mark.parametrize("name", sorted(_RELEASE_FIELDS))
def test_profiles_built_from_deltas_keep_their_semantics(name: str) -> None:
    p = PROFILES[name]
    assert (p.elr, p.hwm_rule, p.election_order, p.last_known_elr, p.min_isr_change_clears,
            p.unclean_recovery, p.kip1303, p.reassignment_needs_min_isr) == _RELEASE_FIELDS[name]


def test_unsupported_is_as_expected_even_where_a_verdict_is_declared() -> None:
    """A build that cannot run the scenario meets no declaration and breaks none; a
    declared verdict that does not happen on a runnable build still fails."""
    from harness.judge.axes import AxisVerdict
    declared = {"verdict": "UNSAFE", "reason": "r"}
    assert AxisVerdict("safety", "UNSUPPORTED", expected=declared).as_expected
    assert not AxisVerdict("safety", "SAFE", expected=declared).as_expected
    assert AxisVerdict("safety", "UNSAFE", expected=declared).as_expected
