"""Mutation score of recorded runs (`kafka-chaos mutate RUNS_DIR...`).

Each run is re-judged offline, as `audit` does (run/audit.py), once under its build's
profile and once under each model mutant of that profile (reference/releases/mutants.py): the
lockstep model of the release axis, every model the kip axis builds and the trace rules
all read the mutated profile. A run kills a mutant when its judgement changes: an axis
verdict, the cited deviations the kip axis needs, the set of trace rules violated, or
where the release / kip axis first diverges. A mutant no run kills names a rule no
recorded run distinguishes. A judge that crashes under a mutant kills it too (reported
as such).

Runs whose unmutated judgement is INCOMPLETE, UNSUPPORTED or ERROR judge nothing: they
are skipped and counted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.infra.errors import UsageError
from harness.infra.history import RecordedRun, SchemaError, check_schema, read_events
from harness.judge import datachecks, trace_check
from harness.judge.audit import (
    _elr_enabled,
    _scenario,
    judge_lanes,
)
from harness.judge.axes import (
    AXES,
    CONFORMS,
    ERROR,
    INCOMPLETE,
    NOT_JUDGED,
    AxisVerdict,
)
from harness.judge.lanes import lane_events, lanes
from harness.judge.transitions import observed_transitions, unobservable_transitions
from harness.scenario.loader import Scenario
from reference.releases.catalog import get_profile
from reference.releases.mutants import MUTANTS, Mutant
from reference.releases.profiles import Profile
from reference.search.transitions import TRANSITIONS

Mutate = Callable[[Profile], Profile]


def _same(p: Profile) -> Profile:
    return p


@dataclass
class LoadedRun(RecordedRun):
    """A run directory read once: judged under the model and every mutant."""

    scenario: Scenario
    elr: bool
    logs: trace_check.TraceLogs
    raw_checks: list[Any]
    trace_under: Callable[[Any], list[dict[str, Any]]]

    @property
    def name(self) -> str:
        return self.run_dir.name

    @property
    def build(self) -> str:
        return self.version

    @property
    def profile(self) -> Profile:
        return get_profile(str(self.meta.get("profile")))

    @property
    def ended_in_error(self) -> bool:
        return any(e["kind"] == "run_end" and e.get("verdict") == ERROR for e in self.events)


def load_run(run_dir: Path, scenarios: Path | None = None) -> LoadedRun:
    """Read a run directory (run.json, events.jsonl, scenario, metadata logs); a
    directory that is not a readable run is a UsageError naming it."""
    if not (run_dir / "run.json").is_file():
        raise UsageError(f"mutate: {run_dir} is not a run directory (no run.json)")
    try:
        meta = check_schema(run_dir)
        events = list(read_events(run_dir))
        profile = str(meta.get("profile"))
        get_profile(profile)
    except (SchemaError, OSError, ValueError) as exc:
        raise UsageError(f"mutate: {run_dir}: {exc}") from None
    scenario = _scenario(run_dir, meta, scenarios)
    elr = _elr_enabled(scenario, list(meta["build"].get("features") or []))
    logs = trace_check.read_logs(run_dir)
    return LoadedRun(run_dir, meta, events, scenario, elr, logs,
                     datachecks.run_checks(events),
                     trace_check.memo(logs, scenario, events, elr))


def judge(run: LoadedRun, mutate: Mutate = _same) -> dict[str, AxisVerdict]:
    """The three axes of ``run`` with every profile the judges use passed through
    ``mutate`` (as run/audit._judge, which tests/test_mutate.py keeps it equal to)."""
    if not run.complete:
        why = "the history was cut short (no run_end)"
        return {a: AxisVerdict(a, INCOMPLETE, why) for a in AXES}
    if run.ended_in_error:
        return {a: AxisVerdict(a, ERROR, "the run ended in ERROR (harness failure)")
                for a in AXES}
    return judge_lanes(run.scenario, run.profile, run.build, run.meta, run.events,
                       run.raw_checks, run.trace_under, run.elr, mutate)


# --- what a judgement is, compared between the model and a mutant ------------------------

_WHERE = (re.compile(r"^step (\d+)"), re.compile(r"^trace: (\S+) at offset (\d+)"),
          re.compile(r"^(check \S+)"), re.compile(r"^(acked records lost)"))


def _where(reason: str) -> str:
    """Where an axis first diverged: the step, the trace rule and offset, or the check."""
    for pattern in _WHERE:
        m = pattern.match(reason or "")
        if m:
            return " ".join(m.groups())
    return ""


@dataclass(frozen=True)
class Judgement:
    verdicts: tuple[str, ...]
    #: Cited deviations the kip axis adopted.
    deviations: tuple[str, ...]
    #: Trace rules violated under the release profile.
    trace_rules: tuple[str, ...]
    release_at: str
    kip_at: str

    @classmethod
    def of(cls, axes: dict[str, AxisVerdict]) -> Judgement:
        rel, kip = axes["release"], axes["kip"]
        devs = tuple(d["deviation"] for d in kip.details if "deviation" in d)
        rules = tuple(sorted({str(d["rule"]) for d in rel.details if "rule" in d}))
        return cls(tuple(axes[a].verdict for a in AXES), devs, rules,
                   "" if rel.verdict == CONFORMS else _where(rel.reason),
                   _where(kip.reason) if kip.verdict not in (CONFORMS, "DEVIATES") else "")

    def differences(self, mutant: Judgement) -> list[str]:
        """What the mutant judges differently (empty: it survives this run)."""
        out = [f"{axis} {a} -> {b}" for axis, a, b in
               zip(AXES, self.verdicts, mutant.verdicts, strict=True) if a != b]
        same_kip = self.verdicts[1] == mutant.verdicts[1]
        if self.deviations != mutant.deviations and same_kip:
            out.append(f"kip deviations [{', '.join(self.deviations)}] -> "
                       f"[{', '.join(mutant.deviations)}]")
        new = sorted(set(mutant.trace_rules) - set(self.trace_rules))
        gone = sorted(set(self.trace_rules) - set(mutant.trace_rules))
        if new:
            out.append(f"trace rules newly violated: {', '.join(new)}")
        if gone:
            out.append(f"trace rules no longer violated: {', '.join(gone)}")
        for axis, a, b in (("release", self.release_at, mutant.release_at),
                           ("kip", self.kip_at, mutant.kip_at)):
            if a != b and self.verdicts == mutant.verdicts:
                out.append(f"{axis} diverges at {a or '-'} -> {b or '-'}")
        return out


# --- the campaign ---------------------------------------------------------------------------

@dataclass
class RunResult:
    run_dir: Path
    scenario: str
    build: str
    profile: str
    baseline: tuple[str, ...] = ()
    skipped: str | None = None
    #: mutant name -> what changed (only killed mutants).
    kills: dict[str, list[str]] = field(default_factory=dict)
    #: Named transitions a real broker made in this run (only runs whose every step
    #: conformed: the model allowed each of them).
    transitions: tuple[str, ...] = ()
    #: Transitions whose field this run's observer could not see.
    unobservable: tuple[str, ...] = ()
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "scenario": self.scenario, "build": self.build,
                "profile": self.profile, "baseline": dict(zip(AXES, self.baseline,
                                                              strict=False)),
                "skipped": self.skipped, "kills": self.kills,
                "transitions": list(self.transitions), "seconds": round(self.seconds, 3)}


@dataclass
class MutationReport:
    mutants: tuple[Mutant, ...]
    runs: list[RunResult]
    seconds: float = 0.0

    @property
    def judged(self) -> list[RunResult]:
        return [r for r in self.runs if r.skipped is None]

    @property
    def skipped(self) -> list[RunResult]:
        return [r for r in self.runs if r.skipped is not None]

    def killers(self, mutant: Mutant) -> list[RunResult]:
        return [r for r in self.judged if mutant.name in r.kills]

    @property
    def killed(self) -> list[Mutant]:
        return [m for m in self.mutants if self.killers(m)]

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if not self.killers(m)]

    @property
    def score(self) -> float:
        """Killed mutants / all mutants (0.0 with no mutant)."""
        return score(len(self.killed), len(self.mutants))

    def coverage(self) -> dict[str, dict[str, str]]:
        """Rule coverage per build: for each mutant (one KIP rule flipped) and each judged
        build, how many of that build's runs tell the rule from its mutant; ``equivalent``
        where every profile the build's runs were judged under already lacks the rule on
        the release axis (only the kip axis can then tell), ``0`` where no run does."""
        builds = sorted({r.build for r in self.judged}, key=_version_key)
        table: dict[str, dict[str, str]] = {}
        for m in self.mutants:
            row: dict[str, str] = {}
            for b in builds:
                runs = [r for r in self.judged if r.build == b]
                kills = sum(1 for r in runs if m.name in r.kills)
                same = all(m.equivalent_on(get_profile(r.profile)) for r in runs)
                row[b] = f"{kills}" + (" (kip axis only)" if same and kills else
                                       " (equivalent)" if same else "")
            table[m.name] = row
        return table

    def transition_coverage(self) -> dict[str, dict[str, int | None]]:
        """For each named transition (reference/search/transitions.py) and each judged build, how
        many of that build's conforming runs show a real broker making it (None: no
        conforming run of the build could observe it)."""
        builds = sorted({r.build for r in self.judged}, key=_version_key)
        conforming = {b: [r for r in self.judged if r.build == b and r.baseline[:1] == (CONFORMS,)]
                      for b in builds}
        table: dict[str, dict[str, int | None]] = {}
        for name in TRANSITIONS:
            row: dict[str, int | None] = {}
            for b in builds:
                seen = [r for r in conforming[b] if name not in r.unobservable]
                row[b] = sum(1 for r in seen if name in r.transitions) if seen else None
            table[name] = row
        return table

    def to_json(self) -> dict[str, Any]:
        return {
            "score": self.score, "killed": len(self.killed), "mutants": len(self.mutants),
            "runs_judged": len(self.judged), "runs_skipped": len(self.skipped),
            "builds": sorted({r.build for r in self.judged}),
            "seconds": round(self.seconds, 2),
            "by_mutant": [{"name": m.name, "description": m.description, "breaks": m.breaks,
                           "changes": dict(m.changes),
                           "killed_by": [{"run": r.run_dir.name, "scenario": r.scenario,
                                          "build": r.build, "how": r.kills[m.name]}
                                         for r in self.killers(m)],
                           "equivalent_on": sorted({r.profile for r in self.judged
                                                    if m.equivalent_on(get_profile(r.profile))})}
                          for m in self.mutants],
            "coverage_by_build": self.coverage(),
            "transitions_by_build": self.transition_coverage(),
            "runs": [r.to_json() for r in self.runs],
        }


def score(killed: int, total: int) -> float:
    return killed / total if total else 0.0


def mutate_run(run: LoadedRun, mutants: Sequence[Mutant]) -> RunResult:
    """Judge one run under the model and each mutant; which mutants it kills."""
    start = time.monotonic()
    out = RunResult(run.run_dir, run.scenario.name, run.build, run.profile.name)
    try:
        base_axes = judge(run)
    except Exception as exc:  # the run cannot be re-judged at all: nothing to compare
        out.baseline = (ERROR,) * len(AXES)
        out.skipped = f"{ERROR} (the judge crashed: {type(exc).__name__}: {exc})"
        out.seconds = time.monotonic() - start
        return out
    out.baseline = tuple(base_axes[a].verdict for a in AXES)
    if base_axes["release"].verdict in NOT_JUDGED:
        out.skipped = base_axes["release"].verdict
        out.seconds = time.monotonic() - start
        return out
    if base_axes["release"].verdict == CONFORMS:
        per_lane = [(ln, lane_events(run.events, run.scenario, ln)) for ln in lanes(run.scenario)]
        out.transitions = tuple(sorted(frozenset().union(*(observed_transitions(
            ev, ln.scenario.topic.min_insync_replicas) for ln, ev in per_lane))))
        out.unobservable = tuple(sorted(frozenset.intersection(*(
            unobservable_transitions(ev) for _, ev in per_lane))))
    base = Judgement.of(base_axes)
    for m in mutants:
        try:
            diff = base.differences(Judgement.of(judge(run, m.apply)))
        except Exception as exc:  # a mutant model may not settle, or break an assertion
            diff = [f"the judge crashed under the mutant: {type(exc).__name__}: {exc}"]
        if diff:
            out.kills[m.name] = diff
    out.seconds = time.monotonic() - start
    return out


def mutate(run_dirs: Sequence[Path], mutants: Sequence[Mutant] = MUTANTS,
           scenarios: Path | None = None,
           progress: Callable[[str], None] | None = None) -> MutationReport:
    """Load every run first (bad input fails before any judging), then judge each."""
    start = time.monotonic()
    loaded = [load_run(d, scenarios) for d in run_dirs]
    results: list[RunResult] = []
    for i, run in enumerate(loaded, 1):
        r = mutate_run(run, mutants)
        results.append(r)
        if progress is not None:
            what = (f"skipped ({r.skipped})" if r.skipped else
                    f"kills {len(r.kills)}/{len(mutants)}")
            progress(f"[{i}/{len(loaded)}] {run.name} ({r.build}, {r.profile}): {what} "
                     f"in {r.seconds:.1f}s")
    return MutationReport(tuple(mutants), results, time.monotonic() - start)


# --- which scenario would kill a survivor (model only, no run) -----------------------------

def predicted_kill(scenario: Scenario, profile: Profile, mutant: Mutant) -> str | None:
    """Where ``scenario`` would kill ``mutant`` if the broker behaved as ``profile``
    predicts: the first step at which the two models share no allowed settled state or
    expect different acks (both then follow a state they share, as a run would); None if
    they never part."""
    for lane in lanes(scenario):
        found = _predicted_kill_on(lane.scenario, profile, mutant)
        if found is not None:
            return found if len(lanes(scenario)) == 1 else f"{lane.label}: {found}"
    return None


def _predicted_kill_on(scenario: Scenario, profile: Profile, mutant: Mutant) -> str | None:
    from harness.run.runner import Runner

    elr = True if scenario.cluster.elr is None else bool(scenario.cluster.elr)
    model = Runner.model_for(scenario, profile, elr)
    mutated = Runner.model_for(scenario, mutant.apply(profile), elr)
    for i, loaded in enumerate(scenario.steps, 1):
        pa, pb = model.apply(loaded.step), mutated.apply(loaded.step)
        if pa.unsupported or pb.unsupported:
            return None
        shared = [x for x in pa.allowed if x in pb.allowed]
        if not shared:
            return f"step {i} ({loaded.step.kind}): no settled state in common"
        if pa.expected_acks != pb.expected_acks:
            return (f"step {i} ({loaded.step.kind}): acks {pa.expected_acks} vs "
                    f"{pb.expected_acks}")
        model.resolve(shared[0])
        mutated.resolve(shared[0])
    return None


def suggest(rep: MutationReport, scenario_files: Sequence[Path]
            ) -> dict[str, list[tuple[str, str, str]]]:
    """For each surviving mutant: (scenario, profiles, where) for every scenario file the
    model predicts would kill it, under the profiles of the judged runs and ``kip966``
    (``where``: under the first such profile). A file that does not load is skipped."""
    from harness.infra.errors import HarnessError
    from harness.scenario.loader import load_scenario

    profiles = sorted({r.profile for r in rep.judged} | {"kip966"})
    scenarios = []
    for f in scenario_files:
        try:
            scenarios.append(load_scenario(f))
        except HarnessError:
            continue
    out: dict[str, list[tuple[str, str, str]]] = {}
    for m in rep.survivors:
        found = out.setdefault(m.name, [])
        for sc in scenarios:
            hits = [(name, where) for name in profiles
                    if (where := predicted_kill(sc, get_profile(name), m)) is not None]
            if hits:
                found.append((sc.name, ", ".join(n for n, _ in hits), hits[0][1]))
    return out


# --- output ---------------------------------------------------------------------------------

def summary(rep: MutationReport) -> str:
    lines = []
    for m in rep.mutants:
        killers = rep.killers(m)
        if killers:
            scen = sorted({r.scenario for r in killers})
            lines.append(f"{m.name}: killed by {len(killers)} run(s): {', '.join(scen)}")
        else:
            lines.append(f"{m.name}: SURVIVED ({m.description})")
    lines += [f"skipped {r.run_dir.name}: {r.skipped}" for r in rep.skipped]
    table = rep.transition_coverage()
    for b in sorted({r.build for r in rep.judged}, key=_version_key):
        never = [name for name, row in table.items() if row.get(b) == 0]
        blind = [name for name, row in table.items() if row.get(b) is None]
        lines.append(f"transitions on {b}: {len(table) - len(never) - len(blind)}/{len(table)} "
                     f"made by a real broker; never: {', '.join(never) or 'none'}"
                     + (f"; unobservable: {', '.join(blind)}" if blind else ""))
    builds = ", ".join(sorted({r.build for r in rep.judged})) or "none"
    lines.append(f"mutation score {len(rep.killed)}/{len(rep.mutants)} = {rep.score:.0%} over "
                 f"{len(rep.judged)} judged run(s) (builds {builds}); {len(rep.skipped)} "
                 f"skipped (INCOMPLETE/UNSUPPORTED/ERROR); {rep.seconds:.1f}s")
    return "\n".join(lines)


def markdown(rep: MutationReport,
             suggestions: dict[str, list[tuple[str, str, str]]] | None = None) -> str:
    builds = ", ".join(sorted({r.build for r in rep.judged})) or "none"
    out = [f"Mutation score: **{len(rep.killed)}/{len(rep.mutants)} = {rep.score:.0%}** "
           f"over {len(rep.judged)} judged run(s), builds {builds}; {len(rep.skipped)} run(s) "
           f"skipped; {rep.seconds:.1f}s.", "",
           "| mutant | what the mutant does | KIP line it breaks | killed by |",
           "|---|---|---|---|"]
    for m in rep.mutants:
        killers = rep.killers(m)
        if killers:
            scen = sorted({r.scenario for r in killers})
            cell = f"{len(killers)} run(s): " + ", ".join(scen)
        else:
            cell = "**SURVIVED**"
        out.append(f"| `{m.name}` | {_cell(m.description)} | {_cell(m.breaks)} | {cell} |")
    out += ["", *coverage_markdown(rep), "", *transitions_markdown(rep)]
    out += ["", "| run | build | profile | baseline (release/kip/safety) | mutants killed |",
            "|---|---|---|---|---|"]
    for r in rep.runs:
        kills = (f"skipped ({r.skipped})" if r.skipped else
                 ", ".join(f"`{k}`" for k in r.kills) or "none")
        out.append(f"| {r.run_dir.name} | {r.build} | {r.profile} | {'/'.join(r.baseline)} "
                   f"| {kills} |")
    if suggestions is not None:
        out += ["", "| surviving mutant | scenario the model predicts kills it (profile, where) |",
                "|---|---|"]
        for name, found in suggestions.items():
            cell = "; ".join(f"`{sc}` ({prof}, {where})" for sc, prof, where in found)
            out.append(f"| `{name}` | {cell or 'none'} |")
    return "\n".join(out) + "\n"


def coverage_markdown(rep: MutationReport) -> list[str]:
    """Rule coverage per build: which KIP rules each build's recorded runs exercise."""
    table = rep.coverage()
    builds = sorted({b for row in table.values() for b in row}, key=_version_key)
    out = ["Rule coverage per build: runs of the build that kill the mutant (tell the rule "
           "from its flip); `0`: no run of that build exercises the rule.", "",
           "| mutant | " + " | ".join(builds) + " |", "|---" * (len(builds) + 1) + "|"]
    for name, row in table.items():
        out.append(f"| `{name}` | " + " | ".join(row.get(b, "") for b in builds) + " |")
    return out


def transitions_markdown(rep: MutationReport) -> list[str]:
    """Transition coverage per build: which of the model's named transitions real brokers
    of each build were seen to make, in runs that conformed at every step."""
    table = rep.transition_coverage()
    builds = sorted({b for row in table.values() for b in row}, key=_version_key)
    out = ["Transitions per build: conforming runs of the build in which a real broker made "
           "the transition (consecutive step-end observations); `0`: only the model has; "
           "`-`: the build's observer cannot see it.", "",
           "| transition | what it is | " + " | ".join(builds) + " |",
           "|---|---" + "|---" * len(builds) + "|"]
    for name, row in table.items():
        out.append(f"| `{name}` | {_cell(TRANSITIONS[name])} | "
                   + " | ".join("-" if row.get(b) is None else str(row.get(b)) for b in builds)
                   + " |")
    return out


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
