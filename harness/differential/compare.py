"""The build's answer against the model's prediction, after every event (issue 33 part 2).

For each event the :class:`Comparator` predicts, from the state the build reported after
the previous event, what the event does under two profiles (``reference.model
.controller_events``), and compares field by field with the build's answer (accepted or
refused; every partition either side changed: leader, epochs, replicas, ISR, ELR,
LastKnownELR, adding, removing, recovery state; every broker's registration and fencing):

- **release** axis, the build's own profile (``reference.releases.catalog
  .profile_for_build``): a difference is a finding (DIVERGES);
- **kip** axis, ``kip966``: a difference that ``kip966`` plus some of the build's cited
  deviations (``reference.releases.deviations``, the fewest first) explains is DEVIATES,
  naming them; else a finding (KIP-DIVERGES), exactly as on the scenario runs' kip axis;
- **invariant**: the KIP's state invariants (the trace rules' names) on every partition the
  event changed, whatever the profile: a violation is a finding;
- **snapshot**: the fresh managers loaded from the build's own snapshot at the last
  ``snapshot`` event (java/DriverSnapshot.java) answered the event otherwise than the
  original ones (the answer's ``snapshotDiff``): ``snapshot:<what differs>:<op>:<profile>``,
  whatever the model says (e.g. the stale ELR index: the original faults at a
  registration, a controller restarted from a snapshot registers the broker);
- **fault**: the build's controller threw what is not an ``ApiException`` (the answer's
  ``exception``): QuorumController.handleEventException treats it as a fault, renounces
  leadership and reverts the event (nothing was replayed). A finding of its own class,
  ``fault:<exception class>:<op>:<profile>``, whatever the model predicts, and the model is
  not asked (e.g. docs/findings/elr-index-stale-after-min-isr-change.md: an unclean
  registration after a min ISR change and a topic deletion);
- **index** and **image**: the driver's own oracles after every event (oracles.py), each
  disagreement of the build with itself a finding ``index:<index>:<op>:<profile>`` or
  ``image:<field>:<op>:<profile>``, whatever the model says.

An event the model does not cover is UNMODELLED (never compared, never "equal"); one the
build cannot run is UNSUPPORTED. After every event both axes continue from the build's
state (configs, which answers do not carry, from the events the build accepted): each
comparison is one event from one known state, so a difference never hides the next.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import is_not
from time import thread_time
from typing import Any

from harness.differential.model import FIELDS, observed, view
from harness.differential.oracles import reports_of
from harness.differential.protocol import Answer
from harness.differential.stale_elr import StaleElr
from reference.model.controller_events import (
    Cluster,
    Outcome,
    Prediction,
    apply,
    configured,
)
from reference.model.controller_events.changes import min_isr_of
from reference.model.controller_events.cluster import Reg
from reference.model.controller_events.reads import Reads, ReadSet, same_reads
from reference.model.state import Partition, evolve
from reference.releases.catalog import get_profile, profile_for_build
from reference.releases.deviations import (
    Deviation,
    apply_deviations,
    candidate_sets,
    deviations_of,
    kip_base,
)
from reference.releases.profiles import Profile

AGREES, DEVIATES, DIVERGES, KIP_DIVERGES = "AGREES", "DEVIATES", "DIVERGES", "KIP-DIVERGES"
UNMODELLED, UNSUPPORTED, FAULT = "UNMODELLED", "UNSUPPORTED", "FAULT"
#: Profile fields no controller event reads: their deviations cannot explain an answer.
_NOT_CONTROLLER = frozenset({"leader_hwm_lag", "pre_vote", "hwm_rule", "acks_all_needs_min_isr",
                             "kip1303"})
_RULES = "reference/trace/rules.py"


@dataclass(frozen=True, slots=True)
class Diff:
    where: str  # "t-0", "broker 3" or "event"
    field: str
    predicted: Any
    observed: Any

    def text(self) -> str:
        return f"{self.where} {self.field}: model {self.predicted}, build {self.observed}"

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "field": self.field, "model": self.predicted,
                "build": self.observed}


@dataclass(frozen=True, slots=True)
class Finding:
    """One difference no cited deviation explains (or a broken invariant), at one event."""

    axis: str  # "release" | "kip" | "invariant" | "fault" | "snapshot" | "index" | "image"
    name: str  # the first differing field, or the invariant
    op: str
    profile: str
    detail: str
    diffs: tuple[Diff, ...] = ()
    #: The model's partitions and the build's, for the partitions that differ.
    model: Mapping[str, Any] = field(default_factory=dict)
    build: Mapping[str, Any] = field(default_factory=dict)
    #: The partition ("t-0") or broker ("broker 3") it is about ("event": the answer).
    where: str = "event"
    #: The records the build wrote for the event (those of the partition's topic when the
    #: finding is about a partition).
    records: tuple[Mapping[str, Any], ...] = ()

    @property
    def signature(self) -> str:
        return f"{self.axis}:{self.name}:{self.op}:{self.profile}"

    def to_json(self) -> dict[str, Any]:
        return {"signature": self.signature, "axis": self.axis, "name": self.name,
                "op": self.op, "profile": self.profile, "detail": self.detail,
                "where": self.where, "records": [dict(r) for r in self.records],
                "diffs": [d.to_json() for d in self.diffs], "model": dict(self.model),
                "build": dict(self.build)}


@dataclass(slots=True)
class StepReport:
    op: str
    release: str
    kip: str
    deviations: tuple[str, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    why: str | None = None


def accepted(answer: Answer) -> bool:
    """Accepted, or written with a new leader (AlterPartition's NEW_LEADER_ELECTED)."""
    return answer.ok or answer.error_name == "NEW_LEADER_ELECTED"


def _not_same(new: Mapping[str, Partition], old: Mapping[str, Partition]) -> Iterable[str]:
    """The keys of ``new`` whose partition is not ``old``'s object (or not in ``old``).
    A transition copies the prior's mapping and replaces values, so the keys are mostly
    the same in the same order: then a C loop finds them."""
    if len(new) == len(old) and list(new) == list(old):
        return compress(new, map(is_not, new.values(), old.values()))
    return [k for k, p in new.items() if old.get(k) is not p]


def _changed(c: Cluster, prior: Cluster) -> set[str]:
    """Partitions that differ from ``prior``'s, removed ones (a deleted topic's) too."""
    new, old = c.partitions, prior.partitions
    if new is old or new == old:
        return set()  # (dict equality: a C loop that takes identical values as equal)
    return {k for k in _not_same(new, old) if new[k] != old.get(k)} | (old.keys() - new.keys())


def diffs(out: Outcome, obs: Cluster, obs_accepted: bool, prior: Cluster,
          obs_changed: set[str] | None = None) -> list[Diff]:
    """Every field where the outcome and the build's state differ (``obs_changed``:
    ``_changed(obs, prior)`` if already known)."""
    found: list[Diff] = []
    if out.accepted != obs_accepted:
        found.append(Diff("event", "accepted", out.accepted, obs_accepted))
    if out.cluster.elr_now != obs.elr_now:
        found.append(Diff("event", "elr", out.cluster.elr_now, obs.elr_now))
    if obs_changed is None:
        obs_changed = _changed(obs, prior)
    for key in sorted(_changed(out.cluster, prior) | obs_changed):
        mp, op = out.cluster.partitions.get(key), obs.partitions.get(key)
        if mp is None or op is None:
            if (mp is None) != (op is None):
                found.append(Diff(key, "exists", mp is not None, op is not None))
            continue
        mv, ov = view(mp), view(op)
        found.extend(Diff(key, f, mv[f], ov[f]) for f in FIELDS if mv[f] != ov[f])
    mb, ob = out.cluster.brokers, obs.brokers
    for b in sorted(set(mb) | set(ob)) if mb != ob else ():
        mr, br = mb.get(b), ob.get(b)
        if mr is br:
            continue
        if (mr is None) != (br is None):
            found.append(Diff(f"broker {b}", "registered", mr is not None, br is not None))
        elif mr is not None and br is not None and mr.fenced != br.fenced:
            found.append(Diff(f"broker {b}", "fenced", mr.fenced, br.fenced))
    return found


def _same(a: Partition, b: Partition) -> bool:
    """``view(a) == view(b)`` (every compared field, the hidden last known leader not),
    without building the views."""
    return a is b or (
        (-1 if a.leader is None else a.leader) == (-1 if b.leader is None else b.leader)
        and a.leader_epoch == b.leader_epoch and a.partition_epoch == b.partition_epoch
        and a.replicas == b.replicas and a.isr == b.isr and a.elr == b.elr
        and a.last_known_elr == b.last_known_elr and a.adding == b.adding
        and a.removing == b.removing and a.recovering == b.recovering)


def matches(out: Outcome, obs: Cluster, obs_accepted: bool, prior: Cluster,
            obs_changed: set[str]) -> bool:
    """``not diffs(out, obs, obs_accepted, prior, obs_changed)``, stopping at the first
    difference (tests/test_diff_speed.py checks the two agree)."""
    if out.accepted != obs_accepted or out.cluster.elr_now != obs.elr_now:
        return False
    mparts, oparts = out.cluster.partitions, obs.partitions
    for key in _changed(out.cluster, prior) | obs_changed:
        mp, op = mparts.get(key), oparts.get(key)
        if mp is None or op is None:
            if (mp is None) != (op is None):
                return False
            continue
        if not _same(mp, op):
            return False
    mb, ob = out.cluster.brokers, obs.brokers
    if mb is ob or mb == ob:
        return True
    for b in set(mb) | set(ob):
        mr, br = mb.get(b), ob.get(b)
        if mr is br:
            continue
        if (mr is None) != (br is None):
            return False
        if mr is not None and br is not None and mr.fenced != br.fenced:
            return False
    return True


def best(outcomes: tuple[Outcome, ...], obs: Cluster, obs_accepted: bool, prior: Cluster,
         changed: set[str] | None = None) -> tuple[Outcome, list[Diff]]:
    """The allowed outcome closest to the build's (no differences: it matches);
    ``changed``: ``_changed(obs, prior)`` if already known."""
    if changed is None:
        changed = _changed(obs, prior)
    # The first that matches is the one ``min`` below would pick (the first of the fewest
    # differences), found without listing every difference of every outcome.
    for o in outcomes:
        if matches(o, obs, obs_accepted, prior, changed):
            return o, []
    scored = [(o, diffs(o, obs, obs_accepted, prior, changed)) for o in outcomes]
    return min(scored, key=lambda x: len(x[1]))


def violations(c: Cluster, key: str) -> list[tuple[str, str]]:
    """(rule, detail) for each of the KIP's state invariants partition ``key`` breaks (the
    names of reference/trace/rules.py)."""
    out: list[tuple[str, str]] = []
    q = c.partitions[key]
    leader = q.leader
    if leader is not None and leader not in q.isr:
        out.append(("LeaderInIsr", f"{key}: leader {leader} not in ISR {sorted(q.isr)}"))
    if leader is not None and (leader not in c.brokers or not c.brokers[leader].active):
        out.append(("LeaderIsLive", f"{key}: leader {leader} is fenced, shutting down or "
                                    "unregistered"))
    outside = (q.isr | q.elr | q.last_known_elr) - set(q.replicas)
    if outside:
        out.append(("IsrElrWithinReplicas",
                    f"{key}: {sorted(outside)} in ISR {sorted(q.isr)} / ELR {sorted(q.elr)} "
                    f"/ LastKnownELR {sorted(q.last_known_elr)} but not in replicas "
                    f"{list(q.replicas)}"))
    if q.isr & q.elr:
        out.append(("ElrIsrDisjoint", f"{key}: {sorted(q.isr & q.elr)} in both ISR and ELR"))
    min_isr = min_isr_of(c, key)
    if q.elr and len(q.isr) >= min_isr:
        out.append(("ElrEmptyAtMinIsr", f"{key}: ELR {sorted(q.elr)} with ISR "
                                        f"{sorted(q.isr)} at min ISR {min_isr}"))
    # Not asserted once the level changed live: the KIP removes the fields "on the next
    # partition change", the shipped controller keeps LastKnownELR (deviation
    # elr-disable-keeps-fields), as the trace rule is not asserted in such a run.
    if not c.elr_now and c.elr_live is None and (q.elr or q.last_known_elr):
        out.append(("NoElrWhenDisabled", f"{key}: ELR {sorted(q.elr)} / LastKnownELR "
                                         f"{sorted(q.last_known_elr)} with ELR off"))
    return out


def invariants(obs: Cluster, prior: Cluster) -> list[tuple[str, str, str]]:
    """The invariants broken by a partition the event changed that it did not break
    before the event (a broken state is reported by the event that made it)."""
    out: list[tuple[str, str, str]] = []
    for key in sorted(_changed(obs, prior) & obs.partitions.keys()):
        before = ({rule for rule, _ in violations(prior, key)} if key in prior.partitions
                  else set())
        out.extend((key, rule, detail) for rule, detail in violations(obs, key)
                   if rule not in before)
    return out


def _broken_before(prior: Cluster, key: str) -> str:
    """For a finding on whether the event is accepted: the invariants partition ``key``
    already broke before the event, as a note of the detail. The model carries on from the
    build's state, a known bug's broken one too (a removed replica kept in the ELR), and
    predicts what the KIP does from it, where the build may refuse the event because of
    that state (ReplicationControlManager.alterPartitionReassignments answers a throw of
    LeaderAcceptor for a broker outside the replicas as UNKNOWN_SERVER_ERROR): the note
    is what names the bug (reference/releases/known_bugs.py)."""
    if key not in prior.partitions:
        return ""
    return "".join(f"; before the event {key} already broke {rule} ({detail})"
                   for rule, detail in violations(prior, key))


def findings_of(op: str, answer: Answer, profile: str) -> list[Finding]:
    """The driver's own oracles' reports in the answer (oracles.py), as findings of their
    own classes: ``index:<index>:<op>:<profile>``, ``image:<field>:<op>:<profile>``."""
    return [Finding(r.axis, r.name, op, profile, r.detail, where=r.where, records=r.records)
            for r in reports_of(answer)]


def _records(answer: Answer, where: str) -> tuple[Mapping[str, Any], ...]:
    topic = where.rpartition("-")[0] if "-" in where else None
    if topic is None:
        return answer.records
    return tuple(r for r in answer.records if r.get("topic") in (None, topic)
                 and ("topic" in r or "brokerId" in r))


def _partitions(c: Cluster, ds: list[Diff]) -> dict[str, Any]:
    keys = sorted({d.where for d in ds if d.where in c.partitions})
    return {k: view(c.partitions[k]) for k in keys}


def _hidden_from(obs: Cluster, prior: Cluster) -> Cluster:
    """``obs`` with ``prior``'s last known leaders (the kip axis's own hidden field)."""
    parts: dict[str, Partition] | None = None
    now = obs.partitions
    for key in _not_same(prior.partitions, now):  # (the same object: the same field)
        p = now.get(key)
        old = prior.partitions[key]
        if p is not None and p.last_known_leader != old.last_known_leader:
            if parts is None:
                parts = dict(now)
            parts[key] = evolve(p, last_known_leader=old.last_known_leader)
    return obs if parts is None else evolve(obs, partitions=parts)


class Comparator:
    """Model and build, event by event, from the session's first state ``start``."""

    #: Whether ``step`` and the model keep their CPU time in ``timing`` (bench.py turns it
    #: on; each reading of the thread's CPU clock is a system call of about 2 us).
    timed = False

    def __init__(self, version: tuple[int, int, int], elr: bool, start: Cluster) -> None:
        self.release: Profile = get_profile(profile_for_build(version, elr))
        self.kip: Profile = kip_base(self.release)
        self.available: tuple[Deviation, ...] = tuple(
            d for d in deviations_of(self.release, elr, self.kip) if d.field not in _NOT_CONTROLLER)
        self.states: dict[str, Cluster] = {"release": start, "kip": start}
        #: The candidate deviation sets in the order they are tried (made at the first
        #: search) and their profiles, by the set's identity (``_sets`` holds every set).
        self._sets: tuple[tuple[Deviation, ...], ...] | None = None
        self._profiles: dict[int, Profile] = {}
        #: Deviation sets that explained a difference, most recent first (tried first).
        self._recent: list[tuple[Deviation, ...]] = []
        #: CPU seconds in the model (``apply``) and in the rest of ``step`` (bench.py):
        #: this thread's CPU time, which the machine's other load does not stretch.
        self.timing = {"model": 0.0, "compare": 0.0}
        #: ELR members a min ISR change with ELR off kept (stale_elr.py).
        self.stale = StaleElr()

    def _apply(self, prior: Cluster, profile: Profile, event: Mapping[str, Any]) -> Prediction:
        if not self.timed:
            return apply(prior, profile, event)
        t0 = thread_time()
        try:
            return apply(prior, profile, event)
        finally:
            self.timing["model"] += thread_time() - t0

    def step(self, event: Mapping[str, Any], answer: Answer) -> StepReport:
        if not self.timed:
            report = self._step(event, answer)
        else:
            t0, model = thread_time(), self.timing["model"]
            try:
                report = self._step(event, answer)
            finally:
                self.timing["compare"] += thread_time() - t0 - (self.timing["model"] - model)
        # the driver's own oracles (index consistency, image agreement): oracles.py
        report.findings.extend(findings_of(report.op, answer, self.release.name))
        return report

    def _step(self, event: Mapping[str, Any], answer: Answer) -> StepReport:
        op = str(event.get("op"))
        if answer.unsupported is not None:
            return StepReport(op, UNSUPPORTED, UNSUPPORTED, why=answer.unsupported)
        ok = accepted(answer)
        before = self.states["release"]
        report = StepReport(op, AGREES, AGREES)
        elr = answer.raw.get("elr") if op == "updateFeature" and ok else None
        base = observed(before, answer.partitions, answer.brokers, answer.removed,
                        elr if isinstance(elr, bool) else None)
        if answer.exception is not None:
            return self._snapshot(self._fault(op, answer, base), op, answer)
        touched = answer.partitions.keys() | set(answer.removed)
        for axis, profile in (("release", self.release), ("kip", self.kip)):
            prior = self.states[axis]
            obs = base if axis == "release" else _hidden_from(base, prior)
            pred = self._apply(prior, profile, event)
            if pred.unmodelled is not None:
                report.release = report.kip = UNMODELLED
                report.why = pred.unmodelled
                self.states[axis] = configured(obs, event) if ok else obs
                continue
            # The build changed only what its answer names (model.observed puts nothing
            # else in): the others are the prior's, or equal to them.
            seen = {k for k in touched if (q := prior.partitions.get(k)) is not
                    (p := obs.partitions.get(k)) and q != p}
            verdict = AGREES
            chosen = next((o for o in pred.outcomes if matches(o, obs, ok, prior, seen)), None)
            ds: list[Diff] = []
            explained = None
            if chosen is None and axis == "kip":
                # the deviation search first: the differences are listed only for a finding
                explained = self._explain(prior, event, obs, ok, seen)
                if explained is not None:
                    devs, chosen = explained
                    verdict = DEVIATES
                    report.deviations = tuple(d.id for d in devs)
            if chosen is None:
                chosen, ds = best(pred.outcomes, obs, ok, prior, seen)
            where = next((d.where for d in ds if d.where != "event"), "event")
            if ds and verdict == AGREES:
                verdict = DIVERGES if axis == "release" else KIP_DIVERGES
                said = (f" (build: {answer.error})" if answer.error else "") + (
                    f" (model: {chosen.error})" if chosen.error else "") + (
                    _broken_before(prior, where) if ds[0].field == "accepted" else "")
                report.findings.append(Finding(
                    axis, ds[0].field, op, profile.name,
                    "; ".join(d.text() for d in ds[:6]) + said,
                    tuple(ds), _partitions(chosen.cluster, ds), _partitions(obs, ds),
                    where, _records(answer, where)))
            setattr(report, axis, verdict)
            self.states[axis] = self._resync(obs, chosen, event, ok)
        after = self.states["release"]
        reported: set[str] = set()
        for key, rule, detail in invariants(after, before):
            if self._stale_elr(key, rule, report, before, event):
                continue
            if rule == "ElrEmptyAtMinIsr":
                reported.add(key)
            # An ELR beside an ISR at min ISR has several causes a known bug names by the
            # state before the event (reference/releases/known_bugs.py): the note says it.
            note = _broken_before(before, key) if rule == "ElrEmptyAtMinIsr" else ""
            report.findings.append(Finding("invariant", rule, op, self.release.name,
                                           f"{detail} ({_RULES} {rule}){note}",
                                           build={key: view(after.partitions[key])}, where=key,
                                           records=_records(answer, key)))
        self.stale.update(event, ok, before, after, reported)
        return self._snapshot(report, op, answer)

    def _stale_elr(self, key: str, rule: str, report: StepReport, before: Cluster,
                   event: Mapping[str, Any]) -> bool:
        """An ``ElrEmptyAtMinIsr`` the ELR members kept across a min ISR change made with
        ELR off alone explain (stale_elr.py: exact, by the release model from the prior
        without them): the cited deviation elr-disable-keeps-fields, named, no finding."""
        if (rule != "ElrEmptyAtMinIsr" or report.release != AGREES
                or not self.release.elr_disable_keeps_fields
                or not self.stale.explains(
                    key, before, event, lambda c: self._apply(c, self.release, event),
                    lambda c, k: any(r == rule for r, _ in violations(c, k)))):
            return False
        if "elr-disable-keeps-fields" not in report.deviations:
            report.deviations = (*report.deviations, "elr-disable-keeps-fields")
        return True

    def _snapshot(self, report: StepReport, op: str, answer: Answer) -> StepReport:
        """The snapshot class (``_with_snapshot``), but for a difference the build's cited
        deviation explains: with ELR turned off live, the 4.x controller keeps a partition's
        ELR and LastKnownELR (elr-disable-keeps-fields) while its snapshot, written with
        ELR off (SnapshotEmitter: ``setEligibleLeaderReplicasEnabled(false)``), leaves them
        out, as the KIP clears them: a fresh controller loads them empty."""
        d = answer.snapshot_diff
        if (d and self.release.elr_disable_keeps_fields
                and not self.states["release"].elr_now
                and d.get("name") in ("loaded.partitions.elr", "loaded.partitions.lastKnownElr")
                and d.get("fresh") in (0, [])):
            report.deviations = (*report.deviations, "elr-disable-keeps-fields")
            return report
        return _with_snapshot(report, op, answer, self.release.name)

    def _fault(self, op: str, answer: Answer, base: Cluster) -> StepReport:
        """The build's controller threw a non-API exception: a fault finding; both axes
        continue from the build's state (the event was reverted: nothing replayed)."""
        exc = str(answer.exception)
        name = exc.split(":", 1)[0].rsplit(".", 1)[-1] or "exception"
        for axis in ("release", "kip"):
            self.states[axis] = base if axis == "release" else _hidden_from(
                base, self.states[axis])
        return StepReport(op, FAULT, FAULT, why=exc, findings=[Finding(
            "fault", name, op, self.release.name,
            f"the controller threw {exc} (not an ApiException: QuorumController treats it "
            "as a fault, renounces leadership and reverts the event)",
            records=answer.records)])

    def _explain(self, prior: Cluster, event: Mapping[str, Any], obs: Cluster, ok: bool,
                 seen: set[str] | None = None
                 ) -> tuple[tuple[Deviation, ...], Outcome] | None:
        """The first deviation set (the recent ones, then the fewest first) under which
        the model allows the build's answer, and that outcome; None if none does.

        Each set's run is made with its profile wrapped in ``Reads`` (reads.py): a later
        set whose profile holds the same value in every field that run read would make the
        same run (the handlers are pure and read the profile only through its fields), so
        its answer is the earlier one's, reused instead of run again. The same sets are
        tried in the same order with the same answers as running each
        (tests/test_diff_explain.py)."""
        if seen is None:
            seen = _changed(obs, prior)
        if self._sets is None:  # candidate_sets' order, made once
            self._sets = tuple(candidate_sets(self.available, ()))
        recent = self._recent
        #: (the profile fields a run read and their values, the outcome it matched or None)
        runs: list[tuple[ReadSet, Outcome | None]] = []
        # the recent sets, then every other one: each set once (the recent ones are the
        # same tuples as ``_sets``'s, so ``in`` finds them by identity)
        for devs in chain(list(recent), (d for d in self._sets if d not in recent)):
            profile = self._profiles.get(id(devs))
            if profile is None:
                profile = self._profiles[id(devs)] = apply_deviations(self.kip, devs)
            known = next((run for run in runs if same_reads(profile, run[0])), None)
            if known is not None:
                chosen = known[1]
            else:
                track = Reads(profile)
                pred = self._apply(prior, track.as_profile(), event)
                if pred.unmodelled is not None:
                    return None
                # the first outcome without a difference, as best() would choose it
                chosen = next((o for o in pred.outcomes
                               if matches(o, obs, ok, prior, seen)), None)
                runs.append((track.reads(), chosen))
            if chosen is not None:
                if devs in recent:
                    recent.remove(devs)
                recent.insert(0, devs)
                del recent[8:]
                return devs, chosen
        return None

    @staticmethod
    def _resync(obs: Cluster, chosen: Outcome, event: Mapping[str, Any], ok: bool) -> Cluster:
        """The build's state, with the model's hidden fields (the KIP's last known leader)
        and the configs of the event if the build accepted it."""
        parts: dict[str, Partition] | None = None
        for key in _not_same(chosen.cluster.partitions, obs.partitions):
            p, q = chosen.cluster.partitions[key], obs.partitions.get(key)
            if q is not None and q.last_known_leader != p.last_known_leader:
                if parts is None:
                    parts = dict(obs.partitions)
                parts[key] = evolve(q, last_known_leader=p.last_known_leader)
        model = chosen.cluster.brokers
        regs: dict[int, Reg] | None = None
        for b, r in obs.brokers.items():
            m = model.get(b)
            if not r.alive and m is not None and m is not r and m.expired != r.expired:
                if regs is None:
                    regs = dict(obs.brokers)
                regs[b] = evolve(r, expired=m.expired)
        out = obs
        if parts is not None or regs is not None:
            out = evolve(obs, partitions=obs.partitions if parts is None else parts,
                         brokers=obs.brokers if regs is None else regs)
        return configured(out, event) if ok else out


def _with_snapshot(report: StepReport, op: str, answer: Answer, profile: str) -> StepReport:
    """Snapshot equivalence (java/DriverSnapshot.java): the fresh managers loaded from the
    build's own snapshot at the last ``snapshot`` event answered this event otherwise (or
    the snapshot could not be written or loaded, or its loaded state differs): a finding of
    its own class, ``snapshot:<what differs>:<op>:<profile>``, whatever the model says."""
    d = answer.snapshot_diff
    if not d:
        return report
    path = str(d.get("path", ""))
    parts = path.split(".")
    where = "event"
    if len(parts) > 1 and parts[0] == "partitions":
        where = parts[1]
    elif len(parts) > 1 and parts[0] == "brokers":
        where = f"broker {parts[1]}"
    elif len(parts) > 1 and parts[0] == "configs" and parts[1].startswith("topic "):
        where = parts[1].split(" ", 1)[1] + "-configs"  # the topic's lane (lanes.lane_of_where)
    fresh = d.get("freshAnswer") or {}
    # What the original threw, when it faulted: the cause a known bug is named by
    # (known_bugs.py ``diff_details``: the fault's own text).
    threw = f"; the original threw {answer.exception}" if answer.exception else ""
    report.findings.append(Finding(
        "snapshot", str(d.get("name", "answer")), op, profile,
        f"{d.get('detail')}: original {json.dumps(d.get('original'))}, fresh "
        f"{json.dumps(d.get('fresh'))}" + threw + (
            f"; the fresh controller: {json.dumps(fresh)}" if fresh else ""),
        where=where, records=answer.records))
    return report
