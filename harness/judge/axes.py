"""The three judging axes of a run (DESIGN.md "Judges").

- release: the build's own profile (the runner's lockstep model): CONFORMS / DIVERGES.
- kip: the ``kip966`` profile, run in lockstep on the same observations. A difference the
  KIP cannot explain but ``kip966`` plus cited known deviations of the build's profile can
  (reference/releases/deviations.py) is DEVIATES, naming them; any other is KIP-DIVERGES.
- safety: no profile. Acked acks=all records lost within the KIP's fault budget (at most
  min ISR - 1 replicas lost unflushed data), records visible above the HWM, the
  consumer-visible HWM going back, the trace invariants, and the observed-state invariants
  at every state sampled while steps ran (``sampled_findings``): UNSAFE, naming what broke.

An axis verdict is "as expected" when it is clean, or when the scenario declares exactly
that verdict for the build's version (``expect:`` in the scenario file, with a reason).

Every axis verdict says which partition-state fields it judged (``fields``): a field the
build cannot show (None in every observation, e.g. ELR on a build before 3.8 observed with
the Metadata API) is ``unobservable``; the model comparison skips it, so it is never a
divergence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.scenario.loader import Scenario
from reference.releases.deviations import (
    Deviation,
    apply_deviations,
    candidate_sets,
    deviations_of,
    kip_base,
)

AXES = ("release", "kip", "safety")
CONFORMS, DIVERGES, UNSUPPORTED, ERROR = "CONFORMS", "DIVERGES", "UNSUPPORTED", "ERROR"
DEVIATES, KIP_DIVERGES = "DEVIATES", "KIP-DIVERGES"
SAFE, UNSAFE = "SAFE", "UNSAFE"
INCOMPLETE = "INCOMPLETE"  # a history cut short (no run_end): nothing can be claimed
CLEAN = {"release": (CONFORMS,), "kip": (CONFORMS, DEVIATES), "safety": (SAFE,)}
NOT_JUDGED = (UNSUPPORTED, ERROR, INCOMPLETE)
#: The partition-state fields an observation holds (fixtures/histories/SCHEMA.md).
STATE_FIELDS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
                "fenced")
#: An ongoing reassignment's replicas (ListPartitionReassignments), compared like the rest.
REASSIGNMENT_FIELDS = ("adding", "removing")


def axis_as_expected(axis: str, verdict: str, expected: Mapping[str, Any] | None,
                     reason: str | None = None) -> bool:
    """An axis verdict is as expected when it is the scenario's declared verdict for the
    build (and, where the declaration says what it must be ``matching``, the axis's reason
    holds that text), or, with no declaration, clean; UNSUPPORTED always is. Offline
    readers (report, headline) derive it from a history's stored ``verdict``, ``reason``
    and ``expected`` with this."""
    if verdict == UNSUPPORTED:
        return True  # the build cannot run the scenario: a declaration has nothing to meet
    if expected is not None:
        matching = expected.get("matching")
        return verdict == expected.get("verdict") and (
            not matching or reason is None or str(matching) in reason)
    return verdict in CLEAN.get(axis, ())


@dataclass
class AxisVerdict:
    axis: str
    verdict: str
    reason: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)
    #: The scenario's declared verdict for this build, with its reason (or None).
    expected: dict[str, str] | None = None
    #: {"judged": [...], "unobservable": [...]}: the state fields the run's observations
    #: showed, and those the build never showed (skipped by the comparison).
    fields: dict[str, list[str]] | None = None

    @property
    def as_expected(self) -> bool:
        return axis_as_expected(self.axis, self.verdict, self.expected, self.reason)

    def to_json(self) -> dict[str, Any]:
        return {"axis": self.axis, "verdict": self.verdict, "reason": self.reason,
                "details": self.details, "expected": self.expected,
                "as_expected": self.as_expected, "fields": self.fields}


def judged_fields(events: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Which state fields the run's observations showed (judged) and which none showed
    (unobservable: None in every observation, so no comparison used them). Both are empty
    when nothing was observed. The reassignment fields (``adding``, ``removing``) count only
    where observations carry them: histories recorded before they were observed leave them
    out of both lists rather than call them unobservable."""
    shown: set[str] = set()
    carried: set[str] = set()
    observed = False
    for e in events:
        if e.get("kind") != "observation":
            continue
        observed = True
        state = e.get("state") or {}
        carried.update(f for f in REASSIGNMENT_FIELDS if f in state)
        shown.update(f for f in STATE_FIELDS + REASSIGNMENT_FIELDS + QUORUM_FIELDS
                     if state.get(f) is not None)
    if not observed:
        return {"judged": [], "unobservable": []}
    fields = STATE_FIELDS + tuple(f for f in REASSIGNMENT_FIELDS if f in carried)
    return {"judged": [f for f in fields + QUORUM_FIELDS if f in shown],
            "unobservable": [f for f in fields if f not in shown]}


#: Observed with several controllers only (the active controller, DescribeQuorum): judged
#: when shown, never listed as unobservable (a one-controller run has no quorum to show).
QUORUM_FIELDS = ("controller",)


def fields_note(fields: Mapping[str, list[str]] | None) -> str:
    """One line for a verdict: the fields judged, and those the build cannot show."""
    if not fields or not (fields.get("judged") or fields.get("unobservable")):
        return "fields judged: none (nothing observed)"
    note = f"fields judged: {', '.join(fields['judged'])}"
    if fields.get("unobservable"):
        note += f"; unobservable on this build (not judged): {', '.join(fields['unobservable'])}"
    return note


def declared(scenario: Scenario, axis: str, version: tuple[int, int, int]) -> dict[str, str] | None:
    """The scenario's expected verdict on ``axis`` for this version, if it declares one."""
    finder = getattr(scenario, "expected", None)
    exp = finder(axis, version) if callable(finder) else None
    if exp is None:
        return None
    out = {"verdict": exp.verdict, "reason": exp.reason}
    for key in ("matching", "known_bug", "deviation"):
        if getattr(exp, key, None) is not None:
            out[key] = getattr(exp, key)
    return out


# --- kip axis ----------------------------------------------------------------------------

Mismatch = Callable[[Any, Any], str | None]  # (prediction, observed step) -> reason | None


@dataclass
class ObservedStep:
    """What the release run saw for one step: the step, the settled observation (a
    reference PartitionState, None when nothing was observed) and the step's outcome."""

    index: int
    step: Any
    observed: Any
    outcome: Any
    #: The step happens during the previous one (the traffic's tick: Model.apply).
    continues: bool = False
    #: Model steps the kip model takes before ``step``: the local logs observed at the end of
    #: the step before (KIP-1303's reports, harness/judge/tiered.local_log_steps).
    before: tuple[Any, ...] = ()



def read_of(outcome: Any) -> frozenset[str] | None:
    """The record ids a consume step read (None: the step read nothing)."""
    consumed = getattr(outcome, "consumed", None)
    return None if consumed is None else frozenset(rid for _, rid in consumed)

def upgrade_profiles(scenario: Scenario, elr_enabled: bool) -> list[Any]:
    """The release profiles of the builds a scenario's ``upgrade`` steps start nodes on."""
    from reference.model.upgrade import version_tuple as vt
    from reference.releases.catalog import get_profile, profile_for_build
    versions = sorted({str(getattr(s.step, "version", "")) for s in scenario.steps
                       if s.kind == "upgrade"})
    return [get_profile(profile_for_build(vt(v), elr_enabled)) for v in versions]


class KipJudge:
    """``kip966`` in lockstep with the release run, adopting cited deviations on demand."""

    def __init__(self, new_model: Callable[[Any], Any], release_profile: Any,
                 elr_enabled: bool, mismatch: Mismatch, more_profiles: Iterable[Any] = (),
                 kip: Any = None) -> None:
        """``more_profiles``: the profiles of the other builds the run's nodes ran (a
        rolling upgrade): their cited deviations explain the decisions those builds made,
        as the release model's rules follow the active controller's build. ``kip``: the KIP
        to judge against when not the release profile's (kip_base): KIP-1303 for a tiered
        cluster that configures it (harness/judge/tiered.kip_profile)."""
        self._new_model, self._mismatch = new_model, mismatch
        self.base = kip if kip is not None else kip_base(release_profile)
        available = list(deviations_of(release_profile, elr_enabled, self.base))
        for prof in more_profiles:
            available += [d for d in deviations_of(prof, elr_enabled, self.base)
                          if d not in available]
        self.available = tuple(available)
        self.adopted: tuple[Deviation, ...] = ()
        self.model = new_model(self.base)
        self.seen: list[ObservedStep] = []
        self.found: list[dict[str, Any]] = []
        self.diverged: str | None = None

    def step(self, seen: ObservedStep) -> None:
        if self.diverged is not None:
            return
        why = self._advance(self.model, seen)
        if why is not None:
            model = self._explain_with_deviations(seen, why)
            if model is None:
                self.diverged = f"step {seen.index + 1}: {why}"
                return
            self.model = model
        self.seen.append(seen)

    def finish(self, lost: Iterable[str]) -> None:
        """Acked records the final read lacks: a loss the KIP forbids is a difference too."""
        lost_ids = frozenset(lost)
        if self.diverged is not None or not self.model.unread(lost_ids):
            return
        why = f"acked records lost: {sorted(self.model.unread(lost_ids))[:5]}"
        for devs in candidate_sets(self.available, self.adopted):
            model = self._replay(devs, self.seen)
            if model is not None and not model.unread(lost_ids):
                self._adopt(devs, len(self.seen), why, model)
                return
        self.diverged = why

    def finish_trace(self, violations_under: Callable[[Any], list[dict[str, Any]]]) -> None:
        """The committed trace judged under the KIP with the adopted deviations; further
        cited deviations may explain a violation, else the run KIP-DIVERGES."""
        if self.diverged is not None:
            return
        found = violations_under(self.profile)
        if not found:
            return
        why = f"trace: {found[0]['rule']} at offset {found[0]['offset']}: {found[0]['detail']}"
        for devs in candidate_sets(self.available, self.adopted):
            if not violations_under(apply_deviations(self.base, devs)):
                self._adopt(devs, len(self.seen), why, self.model)
                return
        self.diverged = why

    @property
    def profile(self) -> Any:
        return apply_deviations(self.base, self.adopted)

    def verdict(self) -> AxisVerdict:
        if self.diverged is not None:
            return AxisVerdict("kip", KIP_DIVERGES, self.diverged, self.found)
        if self.found:
            ids = ", ".join(d.id for d in self.adopted)
            return AxisVerdict("kip", DEVIATES, f"known deviations: {ids}", self.found)
        return AxisVerdict("kip", CONFORMS)

    def _advance(self, model: Any, seen: ObservedStep) -> str | None:
        for report in seen.before:
            model.apply(report, continues_step=True)
        pred = model.apply(seen.step, continues_step=seen.continues)
        if pred.unsupported:
            return None  # the release run marks the step UNSUPPORTED already
        why = (model.explain(seen.observed) if seen.observed is not None else None) \
            or self._mismatch(pred, seen.outcome)
        if why is None and seen.observed is not None:
            model.resolve(seen.observed, getattr(seen.outcome, "acks", {}) or {},
                          read_of(seen.outcome))
        return why

    def _explain_with_deviations(self, seen: ObservedStep, why: str) -> Any:
        for devs in candidate_sets(self.available, self.adopted):
            model = self._replay(devs, [*self.seen, seen])
            if model is not None:
                self._adopt(devs, seen.index, why, model)
                return model
        return None

    def _replay(self, devs: tuple[Deviation, ...], steps: list[ObservedStep]) -> Any:
        model = self._new_model(apply_deviations(self.base, devs))
        for seen in steps:
            if self._advance(model, seen) is not None:
                return None
        return model

    def _adopt(self, devs: tuple[Deviation, ...], index: int, why: str, model: Any) -> None:
        new = devs[len(self.adopted):]
        self.found.extend({"index": index, "deviation": d.id, "cite": d.cite,
                           "summary": d.summary, "kip_difference": why} for d in new)
        self.adopted = devs
        self.model = model


# --- safety axis -------------------------------------------------------------------------

def lost_data_brokers(events: Iterable[Mapping[str, Any]]) -> set[int]:
    return {int(e["params"]["node"]) for e in events
            if e.get("kind") == "fault" and e.get("action") == "lose_unflushed"}


def judge_safety(events: list[dict[str, Any]], checks: list[Any], min_isr: int,
                 trace_invariant_violations: Sequence[dict[str, Any]] = ()) -> AxisVerdict:
    """``checks``: datachecks.CheckResult list over the same events; ``min_isr``: the
    smallest effective min ISR the run had (min(min.insync.replicas, replication factor))."""
    by_name = {c.name: c for c in checks}
    findings: list[dict[str, Any]] = []
    lost_replicas = lost_data_brokers(events)
    budget = max(min_isr - 1, 0)
    lost_all = [d for d in by_name["acked_lost"].details if str(d.get("acks")) == "all"]
    readable = readable_after_recovery(events)
    hidden = [d for d in lost_all if d.get("record_id") in readable]
    lost = [d for d in lost_all if d.get("record_id") not in readable]
    within_budget = len(lost_replicas) <= budget
    if lost and within_budget:
        findings.append({"rule": "acked-record-durable", "records": lost,
                         "why": f"{len(lost)} acks=all record(s) lost although only "
                                f"{len(lost_replicas)} replica(s) lost unflushed data (fault "
                                f"budget min ISR - 1 = {budget})"})
    if hidden and within_budget:
        findings.append({"rule": "acked-record-hidden", "records": hidden,
                         "why": f"{len(hidden)} acks=all record(s) not visible to the final "
                                "read but readable once the run healed the cluster: the HWM "
                                "stood below acked records (hidden, not lost)"})
    for name, rule in (("above_hwm", "nothing-visible-above-hwm"),
                       ("hwm_regression", "consumer-hwm-monotonic")):
        if not by_name[name].ok:
            findings.append({"rule": rule, "records": by_name[name].details,
                             "why": f"{len(by_name[name].details)} {name} finding(s)"})
    sampled = sampled_findings(events)
    if sampled:
        findings.append({"rule": "sampled-state-invariants", "records": sampled,
                         "why": f"{len(sampled)} sampled state(s) break an observed-state "
                                f"invariant (first: step {_step_no(sampled[0])} "
                                f"{sampled[0]['invariant']}: {sampled[0]['detail']})"})
    if trace_invariant_violations:
        findings.append({"rule": "trace-invariants", "records": list(trace_invariant_violations),
                         "why": f"{len(trace_invariant_violations)} committed state(s) break "
                                "a KIP-966 invariant"})
    if not findings:
        note = "" if not lost_all else (f"{len(lost_all)} acks=all record(s) lost beyond the "
                                        f"fault budget ({len(lost_replicas)} replicas lost data)")
        return AxisVerdict("safety", SAFE, note)
    return AxisVerdict("safety", UNSAFE, "; ".join(f["why"] for f in findings), findings)


def readable_after_recovery(events: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """Record ids the final read missed and the recovery read found (harness/run/recovery.py):
    on a replica all along, hidden by the HWM or by a partition with no leader."""
    return frozenset(str(r) for e in events if e.get("kind") == "recovery"
                     for r in e.get("readable") or ())


def sampled_findings(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every ``sample`` event (the states sampled while steps ran, harness/run/sampler.py)
    checked against the observed-state invariants (reference.model.invariants.observed_violations):
    a violation at any sample counts, with its time, even if repaired before the step
    settled. The runner and the audit judge the same events."""
    from reference.model.invariants import observed_violations
    from reference.model.state import PartitionState
    out: list[dict[str, Any]] = []
    top: int | None = None
    for e in events:
        if e.get("kind") == "topic_created":
            top = None  # a topic created again under its name: its HWM starts at 0
        if e.get("kind") != "sample":
            continue
        state = PartitionState.from_json(e.get("state") or {})
        if not state.replicas:
            top = None  # a deleted topic
        for name, detail in observed_violations(state, top):
            out.append({"invariant": name, "detail": detail, "index": e.get("index"),
                        "seq": e.get("seq"), "t_wall": e.get("t_wall")})
        if state.hwm is not None:
            top = state.hwm if top is None else max(top, state.hwm)
    return out


def _step_no(finding: Mapping[str, Any]) -> str:
    index = finding.get("index")
    return "-" if index is None else str(int(index) + 1)


def effective_min_isr(scenario: Scenario) -> int:
    """The smallest effective min ISR of the run: min(min.insync.replicas, RF), over the
    topic's setting and every alter_config step's."""
    values = [int(scenario.topic.min_insync_replicas)]
    for loaded in scenario.steps:
        cfg = getattr(loaded.step, "config", None)
        if isinstance(cfg, Mapping) and "min.insync.replicas" in cfg:
            values.append(int(cfg["min.insync.replicas"]))
    return min(min(values), len(scenario.topic.replicas))


@dataclass
class RunEvidence:
    """What a finished run leaves to judge: its events and data checks, and its trace
    (a function from a profile to the violations of the committed records under it)."""

    scenario: Scenario
    version: tuple[int, int, int]
    events: list[dict[str, Any]]
    raw_checks: list[Any] | None
    trace_under: Callable[[Any], list[dict[str, Any]]]
    safety_rules: tuple[str, ...]


def judge_run(release: AxisVerdict, release_profile: Any, kip: KipJudge,
              ev: RunEvidence) -> dict[str, AxisVerdict]:
    """The three axes of a run from the lockstep release verdict, the kip judge that ran
    beside it, and the run's evidence. Used live by the runner and offline by `audit`."""
    judged = release.verdict not in NOT_JUDGED and ev.raw_checks is not None
    trace = ev.trace_under(release_profile) if judged else []
    if trace and release.verdict == CONFORMS:
        first = trace[0]
        release = AxisVerdict("release", DIVERGES, f"trace: {first['rule']} at offset "
                              f"{first['offset']}: {first['detail']}")
    release.details = trace
    if judged or kip.diverged is not None:
        kip.finish([d["record_id"] for c in ev.raw_checks or [] if c.name == "acked_lost"
                    for d in c.details])
        if judged:
            kip.finish_trace(ev.trace_under)
        kip_axis = kip.verdict()
    else:
        kip_axis = AxisVerdict("kip", release.verdict, release.reason)
    if judged:
        assert ev.raw_checks is not None
        safety = judge_safety(ev.events, ev.raw_checks, effective_min_isr(ev.scenario),
                              [f for f in trace if f["rule"] in ev.safety_rules])
    else:
        safety = AxisVerdict("safety", release.verdict if release.verdict in NOT_JUDGED
                             else ERROR, release.reason or "no data checks ran")
    axes = {"release": release, "kip": kip_axis, "safety": safety}
    fields = judged_fields(ev.events)
    for axis in axes.values():
        axis.expected = declared(ev.scenario, axis.axis, ev.version)
        axis.fields = fields
    return axes
