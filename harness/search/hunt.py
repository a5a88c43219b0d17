"""`kafka-chaos hunt`: a coverage-guided campaign over several builds (issue 35, items 2-3).

Per build, the fuzz campaign (harness/search/fuzz.py ``Campaign``) runs as `kafka-chaos fuzz`
runs it: schedules from the generator, failures de-duplicated by signature, each new one
re-run (``confirm``) and shrunk once. The hunt adds, through the Campaign's hooks (``source``,
``first_index``, ``after_generated``):

**Coverage** (per build). After every run that did not end in ERROR (generated, re-run or
shrink attempt), what the real broker reached is read from its history (``reach_of_run``):

- transitions: the named KIP-966 transitions of reference/search/transitions.py between
  consecutive step-end observations, partition by partition (harness/judge/transitions.py,
  read as `kafka-chaos mutate` reads them, but from every judged run, not only conforming
  ones);
- trace rules: the rules of reference/trace/rules.py for which the run's committed metadata
  log (the longest controller log, replayed as harness/judge/trace_check.py replays it) holds
  a case to decide (``rules_reached``: e.g. ElrElectionOnlyWithEmptyIsr needs an election
  from the ELR, ClearElrOnlyOnMinIsrChange a ClearElrRecord, MetadataLogMatching two
  controller logs). Reached is not "told from its flip": `kafka-chaos mutate` measures that.

**Corpus** (per build). A run that reaches a transition or a rule the build's campaign had
not reached joins the corpus (its schedule, as a scenario file in DIR/<build>/corpus/). Once
the corpus holds an entry, each schedule index is, with chance ``MUTATE_SHARE`` (drawn from
the seed, the build and the index), a mutation of a corpus entry instead of the generator's
schedule: one to three schedule-level edits (insert a step, delete one, replace one, swap two
neighbours; inserted and replacing steps come from the generator's schedule of the same
index), repaired with ``fuzz.repairer`` (steps the generator's guards refuse are dropped),
ending with a consume. A mutation the repair empties or leaves unchanged falls back to the
generator's schedule.

**Directed schedules**. An index that does not mutate is, with chance ``direct_share``, the
first of its other candidates (``fuzz.schedule(..., variant)``) whose model shows for sure a
transition the build has not reached (``fuzzgen.predicted_transitions``), while one is left
(docs/HUNT.md "Directed schedules").

**State**: DIR/hunt-state.json holds the seed and the settings that shape schedules, and per
build the next schedule index, the counters, the coverage (the run that first reached each
transition or rule), the corpus and every signature with its class; it is written after
every generated run and when the hunt stops (Ctrl-C too). `hunt` on the same DIR resumes: it
goes on at the next index, with the corpus and coverage; a known signature is counted again
but not re-run or shrunk again. A DIR of another seed, or other schedule settings, is
refused before anything runs.

**Classification** (``classify``) of each de-duplicated failure of a build, from its
signature (the axes not as expected) and, for an axis not in it, the first failing run's
own verdict (run.json); the first rule that applies decides:

1. ``harness-error``: the run ended in ERROR (the runner's ERROR verdict or an exception
   of the run itself; de-duplicated by the error's first line, numbers blanked), or an axis
   of the signature is ERROR, INCOMPLETE or UNSUPPORTED.
2. ``known-bug``: release DIVERGES by a trace rule that names a known bug of the build
   (reference/releases/known_bugs.py: reported, measured on the releases it affects). The
   ``why`` names the bug and any other names the signature holds: a second cause showing
   beside a known bug would look the same, so the shrunk schedule is the thing to read.
3. ``model-gap``, hidden records: release DIVERGES and safety UNSAFE only by
   ``acked-record-hidden`` (acks=all records the final read missed and the recovery read
   found once the cluster was healed, harness/run/recovery.py) on a build whose profile
   carries ``new-leader-hwm-lag``: the broker's HWM lag outlasted the model's window
   (docs/KNOWN-DEVIATIONS.md#new-leader-hwm-lag), nothing was lost.
   ``kafka-candidate``: release DIVERGES and safety UNSAFE otherwise: the broker left the
   build's documented behaviour and broke what no profile relaxes.
4. ``cited-deviation``: release as expected, safety UNSAFE, kip DEVIATES, and every
   deviation the kip axis adopted is one of the build's catalog deviations
   (reference/releases/catalog.py): the build's profile predicted the unsafe outcome and a
   cited deviation explains it (e.g. no ELR: data lost with min ISR - 1 unclean shutdowns).
5. ``model-gap``: (a) release as expected, safety UNSAFE, kip CONFORMS: the KIP's own model
   predicts what the safety checks forbid, so the model or a check is wrong; or (b) release
   DIVERGES, safety as expected, kip CONFORMS or DEVIATES: the KIP (with cited deviations)
   explains what the broker did and the build's profile does not: the profile is wrong (the
   fix needs a citation).
6. ``kafka-candidate``: release DIVERGES, safety as expected, kip KIP-DIVERGES: neither the
   build's profile nor the KIP with any cited deviation explains it (it matches no
   deviation). The class says so; it may still be a behaviour the KIP allows and the model
   lacks, which only reading the KIP can tell (the ``why`` says that too).
7. ``undecided``: anything else (e.g. release as expected but kip KIP-DIVERGES: the judges
   disagree; the first run's kip verdict unreadable), named as undecided with the verdicts,
   never guessed.

Whether the failure reproduced (``status``: reproducible, flaky, ...) is shown beside the
class, never folded into it. The logic here is pure where it can be: the run function, the
coverage reader and the kip reader are parameters (``BuildPlan``); the command gives the
real ones.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.infra.errors import UsageError
from harness.search import fuzz
from harness.search.shrink import Signature, Steps
from reference.model import steps as S
from reference.model.state import NO_LEADER
from reference.releases.deviations import BY_ID, DOC
from reference.releases.known_bugs import KnownBug, affecting
from reference.search import fuzzgen
from reference.search.transitions import TRANSITIONS
from reference.trace import rules as trace_rules
from reference.trace.records import Record, TraceContext, batch_of, data, initial_state
from reference.trace.replay import profile_of, replay

STATE_FILE = "hunt-state.json"
STATE_VERSION = 1
#: Chance that an index runs a mutation of a corpus entry (once the corpus has one).
MUTATE_SHARE = 0.5
#: Chance that an index not mutating runs a directed schedule: while some transition is
#: not reached on the build, the first of the index's candidates whose model shows it for
#: sure (``fuzzgen.predicted_transitions``), among ``DIRECT_PROBES``.
DIRECT_SHARE = 0.25
#: Candidates a directed index looks at (about 30 ms of model time each on 2 cores).
DIRECT_PROBES = 100
#: Schedule-level edits of a corpus entry.
MUTATIONS = ("insert", "delete", "replace", "swap")
CLASSES = ("known-bug", "cited-deviation", "model-gap", "harness-error", "kafka-candidate",
           "undecided")
RULE_NAMES: tuple[str, ...] = tuple(trace_rules.RULES)
TRANSITION_NAMES: tuple[str, ...] = tuple(TRANSITIONS)
_NOT_JUDGED = ("ERROR", "INCOMPLETE", "UNSUPPORTED")
#: The cited deviation under which acked records may be hidden by a lagging HWM (looked up
#: in the catalog, so a renamed deviation fails at import, not silently here).
HWM_LAG = BY_ID["new-leader-hwm-lag"].id


# --- input -----------------------------------------------------------------------------------

def catalog_builds() -> tuple[str, ...]:
    """`--builds all`: the newest patch of each release line the catalog has a profile for."""
    from harness.cluster.builds import DEFAULT_MATRIX_VERSIONS
    return tuple(DEFAULT_MATRIX_VERSIONS)


def parse_builds(kafka_version: str | None, builds: str | None) -> tuple[str, ...]:
    """--kafka-version V[,V...] or --builds all: versions of the catalog's builds, in order."""
    known = catalog_builds()
    if (kafka_version is None) == (builds is None):
        raise UsageError("hunt: give exactly one of --kafka-version V[,V...] (e.g. "
                         "--kafka-version 4.0.2,4.3.1) or --builds all")
    if builds is not None:
        if builds.strip() != "all":
            raise UsageError(f"hunt: --builds {builds!r}: the only value is `all` (the "
                             f"catalog's builds: {', '.join(known)}); name builds with "
                             "--kafka-version V[,V...]")
        return known
    assert kafka_version is not None
    out: list[str] = []
    for v in (p.strip() for p in kafka_version.split(",")):
        if not v:
            raise UsageError(f"hunt: --kafka-version {kafka_version!r}: an empty version; give "
                             "versions separated by commas, e.g. 4.0.2,4.3.1")
        if v not in known:
            raise UsageError(f"hunt: --kafka-version {v!r} is not one of the catalog's builds "
                             f"({', '.join(known)}); give some of them, or --builds all")
        if v in out:
            raise UsageError(f"hunt: --kafka-version {v} is named twice")
        out.append(v)
    return tuple(out)


def parse_budget(text: str | None) -> float:
    """--budget: time PER BUILD, as fuzz reads durations (30m, 90s, 1h30m)."""
    if text is None:
        raise UsageError("hunt: give --budget DURATION (time per build, e.g. 30m)")
    try:
        return fuzz.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"hunt: --budget: {exc}; it is the time per build") from None


# --- settings and state ----------------------------------------------------------------------

@dataclass(frozen=True)
class HuntConfig:
    seed: int
    budget_s: float
    length: int = 10
    weights: Mapping[str, int] | None = None
    confirm: int = 1
    shrink_attempts: int = 12
    shrink_budget_s: float = 300.0
    mutate_share: float = MUTATE_SHARE
    direct_share: float = DIRECT_SHARE
    #: Generated runs per build per session (tests; the command gives a budget only).
    runs: int | None = None
    #: Every schedule under client traffic drawn from its seed (``--traffic``).
    traffic: bool = False

    def schedule_settings(self) -> dict[str, Any]:
        """What shapes the schedules: a resumed campaign must have the same."""
        return {"seed": self.seed, "steps": self.length,
                "weights": dict(sorted((self.weights or {}).items())),
                "mutate_share": self.mutate_share, "direct_share": self.direct_share,
                "traffic": self.traffic}

    def gen(self) -> Any:
        return fuzz.gen_config(length=self.length, weights=self.weights, traffic=self.traffic)

    def campaign(self) -> fuzz.CampaignConfig:
        return fuzz.CampaignConfig(seed=self.seed, runs=self.runs, budget_s=self.budget_s,
                                   gen=self.gen(),
                                   confirm=self.confirm, shrink=True,
                                   shrink_attempts=self.shrink_attempts,
                                   shrink_budget_s=self.shrink_budget_s)


@dataclass
class CorpusEntry:
    name: str
    file: str  # relative to the campaign dir
    new: list[str]  # the features it reached first
    origin: str
    steps: Steps = ()


@dataclass
class Known:
    """A de-duplicated failure of one build (or a harness error), with its class."""

    key: str  # signature text, or "ERROR: <first line>"
    signature: list[Any] | None
    cls: str
    why: str
    status: str
    first_run: str
    occurrences: int
    minimal: str = ""
    minimal_steps: int | None = None
    found_at_run: int = 0
    found_after_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BuildState:
    version: str
    next_index: int = 0
    generated: int = 0
    mutated: int = 0
    #: Generated runs that were directed schedules (``BuildHunt._directed``).
    directed: int = 0
    runs: int = 0
    errors: int = 0
    seconds: float = 0.0
    run_seconds: float = 0.0
    #: feature ("transition:NAME" / "rule:NAME") -> the run that reached it first.
    coverage: dict[str, str] = field(default_factory=dict)
    corpus: list[CorpusEntry] = field(default_factory=list)
    known: list[Known] = field(default_factory=list)
    #: [seconds, generated runs, transitions, rules, signatures] after each generated run.
    timeline: list[list[float]] = field(default_factory=list)
    #: Every run (generated, re-run, shrink attempt) as it ended: {"run": name, "ended_s": the
    #: build's campaign seconds, "error": it ended in ERROR}; with ``coverage``, when each
    #: transition or rule was first reached (the campaign report, harness/report/campaign.py).
    run_log: list[dict[str, Any]] = field(default_factory=list)

    def transitions(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self.coverage if k.startswith("transition:"))

    def rules(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self.coverage if k.startswith("rule:"))

    def deviations_met(self) -> dict[str, dict[str, Any]]:
        """Each cited deviation a run needed, with the first such run and when it ended
        (minutes of the build's campaign; None for a run the log does not time)."""
        ended = {e["run"]: e["ended_s"] for e in self.run_log}
        out = {}
        for k, run in sorted(self.coverage.items()):
            if k.startswith("deviation:"):
                t = ended.get(run)
                out[k.split(":", 1)[1]] = {"run": run,
                                           "minutes": None if t is None else round(t / 60, 1)}
        return out

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("corpus", "known")}
        out["corpus"] = [{k: v for k, v in e.__dict__.items() if k != "steps"}
                         for e in self.corpus]
        out["known"] = [k.to_json() for k in self.known]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BuildState:
        st = cls(**{k: v for k, v in d.items() if k not in ("corpus", "known")})
        st.corpus = [CorpusEntry(**e) for e in d.get("corpus", [])]
        st.known = [Known(**k) for k in d.get("known", [])]
        return st


@dataclass
class HuntState:
    settings: dict[str, Any]
    builds: dict[str, BuildState] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "settings": self.settings,
                "builds": {v: b.to_json() for v, b in self.builds.items()}}

    def build(self, version: str) -> BuildState:
        return self.builds.setdefault(version, BuildState(version))


def read_state(path: Path) -> HuntState:
    """A campaign's state file; OSError, ValueError (another state version), KeyError,
    TypeError or AttributeError when it is not one this code wrote."""
    raw = json.loads(path.read_text())
    if raw.get("version") != STATE_VERSION:
        raise ValueError(f"state version {raw.get('version')!r}, not {STATE_VERSION}")
    return HuntState(dict(raw["settings"]),
                     {v: BuildState.from_json(b) for v, b in raw["builds"].items()})


def load_state(campaign_dir: Path, cfg: HuntConfig) -> HuntState:
    """The campaign in ``campaign_dir`` (a new one when it holds none). A directory of another
    seed or other schedule settings, or a non-empty one that is no hunt, is a UsageError naming
    the flag and the fix."""
    path = campaign_dir / STATE_FILE
    settings = cfg.schedule_settings()
    if campaign_dir.exists() and not campaign_dir.is_dir():
        raise UsageError(f"hunt: --campaign-dir {campaign_dir} is a file; give a directory")
    if not path.is_file():
        if campaign_dir.is_dir() and any(p.name != "runs" for p in campaign_dir.iterdir()):
            raise UsageError(f"hunt: --campaign-dir {campaign_dir} is not empty and holds no "
                             f"{STATE_FILE}: it is no hunt campaign; give a new or empty "
                             "directory")
        return HuntState(settings)
    try:
        state = read_state(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"hunt: --campaign-dir {campaign_dir}: {STATE_FILE} is unreadable "
                         f"({exc}); give another --campaign-dir") from None
    old = state.settings
    if old.get("seed") != settings["seed"]:
        raise UsageError(f"hunt: --campaign-dir {campaign_dir} holds a campaign of --seed "
                         f"{old.get('seed')}, not {settings['seed']}: give --seed "
                         f"{old.get('seed')} to resume it, or a new --campaign-dir")
    old.setdefault("traffic", False)  # a campaign from before --traffic had none
    old.setdefault("direct_share", 0.0)  # nor directed schedules before --direct-share
    for key, flag in (("steps", "--steps"), ("weights", "--weights"),
                      ("mutate_share", "the mutation share"),
                      ("direct_share", "--direct-share"), ("traffic", "--traffic")):
        if old.get(key) != settings[key]:
            raise UsageError(f"hunt: --campaign-dir {campaign_dir} was started with {flag} "
                             f"{old.get(key)!r}, not {settings[key]!r}: give the same to resume "
                             "it, or a new --campaign-dir")
    return state


def save_state(campaign_dir: Path, state: HuntState) -> None:
    campaign_dir.mkdir(parents=True, exist_ok=True)
    tmp = campaign_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=1))
    os.replace(tmp, campaign_dir / STATE_FILE)


# --- coverage --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Reach:
    transitions: frozenset[str] = frozenset()
    rules: frozenset[str] = frozenset()
    #: Cited deviations the kip axis adopted to explain the run: behaviours of the build
    #: that differ from the KIP, several of them bugs a later release fixed (KAFKA-12670's
    #: ignored unclean.leader.election.enable, the reassignment KAFKA-19975 unblocked).
    deviations: frozenset[str] = frozenset()

    def features(self) -> frozenset[str]:
        return frozenset({f"transition:{t}" for t in self.transitions}
                         | {f"rule:{r}" for r in self.rules}
                         | {f"deviation:{d}" for d in self.deviations})


def rules_reached(records: Sequence[Record], ctx: TraceContext) -> frozenset[str]:
    """The trace rules for which ``records`` (one controller's committed log) hold a case to
    decide: the change, state or record each rule judges. Pure."""
    if not records:
        return frozenset()
    profile = profile_of(ctx)
    states = replay(records, ctx)
    start = initial_state(ctx)
    ops = trace_rules.operations(records, states, start)
    out = {"ReplayConsistency"}
    # A topic's creation writes its configs and a ClearElrRecord: no change to decide.
    creating = {batch_of(r) for r in records if r.get("type") == "TOPIC_RECORD"}
    for i, rec in enumerate(records):
        before = states[i - 1] if i else start
        after = states[i]
        elr = trace_rules.elr_on(before, profile, ctx)
        kind = rec.get("type")
        snapshot = rec.get("source") == "snapshot"
        if kind == "PARTITION_CHANGE_RECORD" and not snapshot:
            key = (str(data(rec).get("topicId")), int(data(rec).get("partitionId", -1)))
            p, q = before.partitions.get(key), after.partitions.get(key)
            if p is not None and q is not None:
                step = trace_rules.Step(records, i, before, after, ops[i], profile, ctx, elr)
                out |= _change_rules(p, q, trace_rules.analyse(step, key, p, q).kind, elr)
        elif kind == "CLEAR_ELR_RECORD" and batch_of(rec) not in creating:
            out.add("ClearElrOnlyOnMinIsrChange")
        elif kind == "CONFIG_RECORD" and data(rec).get("name") == "min.insync.replicas" \
                and elr and batch_of(rec) not in creating:
            out.add("MinIsrChangeClearsElr")
        elif kind == "REGISTER_BROKER_RECORD" and elr:
            b = after.brokers.get(int(data(rec).get("brokerId", -1)))
            if b is not None and (b.unclean_shutdown or (b.id, b.incarnations)
                                  in ctx.unclean_registrations):
                out.add("UncleanShutdownReplicaNotInElr")
        for q in after.partitions.values():
            if q.elr:
                out |= {"ElrIsrDisjoint", "ElrEmptyAtMinIsr", "IsrElrWithinReplicas"}
            if q.last_known_elr:
                out.add("LastKnownElrShape")
            inactive = [r for r in q.replicas if r in after.brokers and not after.brokers[r].active]
            if inactive:
                out.add("FencedReplicaNotInIsr")
            # A replica's broker stops being active: who may lead is decided again.
            if any(before.brokers[r].active and not after.brokers[r].active for r in q.replicas
                   if r in before.brokers and r in after.brokers):
                out.add("LeaderIsLive")
    return frozenset(out)


def _change_rules(p: Any, q: Any, kind: str, elr: bool) -> set[str]:
    """The change rules one partition change (p -> q, election ``kind`` as the validator
    reads it) gives something to decide."""
    out = {"EpochsNeverGoBack", "LeaderEpochBump"}
    if set(q.isr) - set(p.isr):
        out.add("IsrJoinOnlyLive")
    if set(p.isr) - set(q.isr) or set(q.elr) - set(p.elr):
        out.add("ElrJoinOnlyFromIsrUnderMinIsr" if elr else "NoElrWhenDisabled")
    if set(p.elr) - set(q.elr):
        out.add("ElrMembersRetained")
    if q.leader != p.leader and q.leader >= 0:
        out |= {"NewLeaderIsLive", "LeaderInIsr", "ElectionFollowsAssignmentOrder"}
    if kind == "elr":
        out.add("ElrElectionOnlyWithEmptyIsr")
    if kind == "unclean":
        out |= {"UncleanElectionOnlyWhenAllowed", "UncleanElectionMarksRecovering"}
    if q.leader == NO_LEADER != p.leader:
        out.add("LeaderlessOnlyWithoutCandidate")
        if not elr:
            out.add("IsrNotEmptyWhenElrDisabled")
    if p.leader_recovery_state != q.leader_recovery_state:
        out.add("LeaderRecoveryStateChange")
    if p.last_known_elr != q.last_known_elr or (elr and q.leader == NO_LEADER != p.leader):
        out.add("LastKnownElrUpdate")
    if set(q.replicas) != set(p.replicas):
        out.add("IsrElrWithinReplicas")
    return out


def reach_of_outcome(out: fuzz.Outcome) -> Reach:
    return reach_of_run(out.run_dir) if out.run_dir is not None else Reach()


def reach_of_run(run_dir: Path) -> Reach:
    """What a recorded run reached: transitions per partition and trace rules (I/O)."""
    from harness.infra.history import read_events
    from harness.judge import trace_check
    from harness.judge.lanes import lane_events, lanes
    from harness.judge.transitions import observed_transitions
    from harness.scenario.loader import load_scenario
    meta = json.loads((run_dir / "run.json").read_text())
    events = list(read_events(run_dir))
    scenario = load_scenario(run_dir / "scenario.yaml")
    seen: set[str] = set()
    for ln in lanes(scenario):
        seen |= observed_transitions(lane_events(events, scenario, ln),
                                     ln.scenario.topic.min_insync_replicas)
    logs = trace_check.read_logs(run_dir)
    rules: set[str] = set()
    longest = logs.longest
    if longest is not None:
        ctx = replace(trace_check.context(scenario, events, str(meta.get("profile") or "kip966"),
                                          False), elr_enabled=None)
        rules |= rules_reached(longest[1], ctx)
        if len(logs.by_controller) > 1:
            rules.add("MetadataLogMatching")
    return Reach(frozenset(seen), frozenset(rules), frozenset(kip_of_meta(meta)[1]))


# --- mutation --------------------------------------------------------------------------------

def mutate_schedule(parent: Steps, donor: Steps, rng: random.Random,
                    repair: Callable[[Steps], Steps | None], max_len: int
                    ) -> tuple[Steps, str] | None:
    """One to three edits of ``parent`` (steps inserted or replacing come from ``donor``),
    repaired, ending with a consume; None when nothing new is left."""
    cur = list(parent)
    done: list[str] = []
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(MUTATIONS)
        if op == "insert" and donor and len(cur) < max_len:
            cur.insert(rng.randint(0, len(cur)), rng.choice(donor))
        elif op == "delete" and len(cur) > 1:
            del cur[rng.randrange(len(cur))]
        elif op == "replace" and donor and cur:
            cur[rng.randrange(len(cur))] = rng.choice(donor)
        elif op == "swap" and len(cur) >= 2:
            i = rng.randrange(len(cur) - 1)
            cur[i], cur[i + 1] = cur[i + 1], cur[i]
        else:
            continue
        done.append(op)
    if not cur or cur[-1].kind != "consume":
        cur.append(S.Consume())
    fixed = repair(tuple(cur))
    if not done or not fixed or fixed == tuple(parent):
        return None
    return fixed, "+".join(done)


# --- classification --------------------------------------------------------------------------

@dataclass(frozen=True)
class Classification:
    cls: str
    why: str


def build_deviation_ids(version: str) -> frozenset[str]:
    """The catalog deviations of a build's profiles (both ELR settings where it has two)."""
    from harness.cluster.builds import version_tuple
    from reference.releases.catalog import get_profile, profile_for_build
    from reference.releases.deviations import deviations_of
    out: set[str] = set()
    for elr in (True, False):
        profile = get_profile(profile_for_build(version_tuple(version), elr))
        for on in (True, False):
            try:
                out |= {d.id for d in deviations_of(profile, on)}
            except ValueError:
                continue
    return frozenset(out)


def classify(signature: Signature | None, error: str | None, kip: str | None,
             kip_deviations: Sequence[str], build_deviations: Iterable[str],
             build_bugs: Sequence[KnownBug] = ()) -> Classification:
    """The class of one failure (module docstring, rules 1-7). ``kip``: the first run's kip
    verdict (None: unreadable); ``kip_deviations``: the deviations it adopted;
    ``build_bugs``: the known bugs of the build (known_bugs_of)."""
    if error is not None:
        return Classification("harness-error", f"the run ended in ERROR: {error}")
    sig = {axis: verdict for axis, verdict, _ in signature or ()}
    bad = sorted(a for a, v in sig.items() if v in _NOT_JUDGED)
    if bad:
        return Classification("harness-error", "axis " + ", ".join(
            f"{a} {sig[a]}" for a in bad) + ": the harness could not judge the run")
    release, safety = sig.get("release"), sig.get("safety")
    kip_v = sig.get("kip", kip)
    said = f"(release {release or 'as expected'}, kip {kip_v or 'unreadable'}, safety " \
           f"{safety or 'as expected'})"
    known = _known_bug(signature or (), build_bugs)
    if release == "DIVERGES" and known is not None:
        return Classification("known-bug", f"{known} {said}")
    if release == "DIVERGES" and _only_hidden(signature or ()) and \
            HWM_LAG in frozenset(build_deviations):
        return Classification("model-gap", "acks=all records hidden, not lost: the final read "
                              "missed them and the recovery read found them once the cluster "
                              "was healed; the HWM stood below them longer than the model's "
                              f"lag window ({DOC}#{HWM_LAG}) {said}")
    if release == "DIVERGES" and safety == "UNSAFE":
        return Classification("kafka-candidate", f"the broker left the build's profile and "
                              f"broke a safety rule no profile relaxes {said}")
    if release is None and safety == "UNSAFE" and kip_v == "DEVIATES":
        outside = sorted(set(kip_deviations) - set(build_deviations))
        if kip_deviations and not outside:
            return Classification("cited-deviation", "the build's profile predicted it; cited "
                                  f"deviation(s) {', '.join(kip_deviations)} explain it {said}")
        return Classification("undecided", "kip DEVIATES by " + (
            f"{', '.join(outside)}, not a catalog deviation of the build" if outside
            else "no named deviation") + f" {said}")
    if release is None and safety == "UNSAFE" and kip_v == "CONFORMS":
        return Classification("model-gap", "the KIP's model predicts an outcome the safety "
                              f"checks forbid: the model or a check is wrong {said}")
    if release == "DIVERGES" and safety is None and kip_v in ("CONFORMS", "DEVIATES"):
        return Classification("model-gap", "the KIP (with cited deviations) explains the broker, "
                              f"the build's profile does not: the profile is wrong {said}")
    if release == "DIVERGES" and safety is None and kip_v == "KIP-DIVERGES":
        return Classification("kafka-candidate", "neither the build's profile nor the KIP with "
                              "any cited deviation explains it (no deviation matches); a "
                              "behaviour the KIP allows and the model lacks would look the "
                              f"same: read the KIP before filing {said}")
    return Classification("undecided", f"no classification rule decides these verdicts {said}")


def _only_hidden(signature: Signature) -> bool:
    """Whether the safety axis failed only because acked records were hidden: missed by the
    final read, found by the recovery read (harness/run/recovery.py)."""
    safety = next((names for axis, verdict, names in signature
                   if axis == "safety" and verdict == "UNSAFE"), ())
    return set(safety) == {"acked-record-hidden"}


def known_bugs_of(version: str) -> tuple[KnownBug, ...]:
    from harness.cluster.builds import version_tuple
    return affecting(version_tuple(version))


def _known_bug(signature: Signature, bugs: Sequence[KnownBug]) -> str | None:
    """Which known bug the release axis's trace rules name, and what else the signature
    says; None when no known bug of the build is named."""
    release = next((names for axis, _, names in signature if axis == "release"), ())
    rules = frozenset(n.removeprefix("trace:") for n in release if n.startswith("trace:"))
    named = [b for b in bugs if b.trace_rules & rules]
    if not named:
        return None
    explained = {f"trace:{r}" for b in named for r in b.trace_rules}
    others = sorted({n for _, _, names in signature for n in names} - explained)
    return ("; ".join(f"known bug {b.id} ({b.reference}): {b.summary}" for b in named)
            + (f"; also named: {', '.join(others)}" if others else ""))


def kip_of_run(run_dir: Path | None) -> tuple[str | None, tuple[str, ...]]:
    """The kip axis verdict of a run (run.json) and the deviations it adopted."""
    if run_dir is None:
        return None, ()
    try:
        return kip_of_meta(json.loads((run_dir / "run.json").read_text()))
    except (OSError, ValueError):
        return None, ()


def kip_of_meta(meta: Mapping[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """``kip_of_run`` from a run.json already read."""
    try:
        kip = meta["axes"]["kip"]
        return str(kip["verdict"]), tuple(str(d["deviation"]) for d in kip.get("details") or ()
                                          if isinstance(d, Mapping) and "deviation" in d)
    except (KeyError, TypeError):
        return None, ()


def error_key(error: str) -> str:
    line = (error or "ERROR").strip().splitlines()[0] if (error or "").strip() else "ERROR"
    return "ERROR: " + re.sub(r"\d+", "N", line)[:160]


# --- the hunt --------------------------------------------------------------------------------

@dataclass
class BuildPlan:
    """One build of the hunt: its model factory, the function that runs a schedule, and the
    readers of what a run reached and of its kip axis (the command gives the real ones)."""

    version: str
    new_model: Callable[[], Any]
    run: fuzz.RunFn
    reach: Callable[[fuzz.Outcome], Reach] = field(default=lambda out: reach_of_outcome(out))
    kip: Callable[[Path | None], tuple[str | None, tuple[str, ...]]] = kip_of_run
    width: int = 1
    on_interrupt: Callable[[], None] | None = None


class BuildHunt:
    """The campaign of one build: a fuzz Campaign fed by the corpus, coverage read after
    every run, failures classified, the state saved after every generated run."""

    def __init__(self, cfg: HuntConfig, plan: BuildPlan, state: HuntState, campaign_dir: Path,
                 say: Callable[[str], None], clock: Callable[[], float]) -> None:
        self.cfg, self.plan, self.hunt_state, self.dir = cfg, plan, state, campaign_dir
        self.state = state.build(plan.version)
        self.say, self.clock = say, clock
        self.out_dir = campaign_dir / plan.version
        self.lock = threading.Lock()
        self.repair = fuzz.repairer(plan.new_model)
        self.deviations = build_deviation_ids(plan.version)
        self.bugs = known_bugs_of(plan.version)
        self.origin: dict[int, str] = {}
        self._load_corpus()

    def _load_corpus(self) -> None:
        from harness.scenario.loader import load_scenario
        kept = []
        for e in self.state.corpus:
            try:
                e.steps = tuple(s.step for s in load_scenario(self.dir / e.file).steps)
            except Exception as exc:  # noqa: BLE001 - a lost corpus file: say it, go on
                self.say(f"hunt {self.plan.version}: corpus entry {e.file} unreadable ({exc}); "
                         "left out")
                continue
            kept.append(e)
        self.state.corpus = kept

    # -- hooks the Campaign calls ---------------------------------------------------------
    def source(self, index: int) -> Steps:
        fresh = fuzz.schedule(self.plan.new_model, self.cfg.seed, index, self.cfg.gen())
        rng = random.Random(f"kafka-chaos-hunt:{self.cfg.seed}:{self.plan.version}:{index}")
        with self.lock:
            corpus = [e for e in self.state.corpus if e.steps]
            self.state.next_index = max(self.state.next_index, index + 1)
        if corpus and rng.random() < self.cfg.mutate_share:
            parent = rng.choice(corpus)
            got = mutate_schedule(parent.steps, fresh, rng, self.repair,
                                  max(2 * self.cfg.length, len(parent.steps) + 3))
            if got is not None:
                self.origin[index] = f"{got[1]} of {parent.name}"
                with self.lock:
                    self.state.mutated += 1
                return got[0]
        if rng.random() < self.cfg.direct_share:
            directed = self._directed(index)
            if directed is not None:
                return directed
        self.origin[index] = "generated"
        return fresh

    def _directed(self, index: int) -> Steps | None:
        """The first of the index's candidates whose model shows, for sure, a transition
        the build has not reached yet (None: every one reached, or no candidate shows
        one; the index's own cluster is then put back for its scenario file)."""
        with self.lock:
            wanted = frozenset(TRANSITION_NAMES) - frozenset(self.state.transitions())
        if not wanted:
            return None
        sseed, gen = fuzz.schedule_seed(self.cfg.seed, index), self.cfg.gen()
        kept = fuzz.CLUSTERS.kept(sseed)
        for variant in range(1, DIRECT_PROBES + 1):
            steps = fuzz.schedule(self.plan.new_model, self.cfg.seed, index, gen, variant)
            aimed = fuzzgen.predicted_transitions(
                fuzz.models_of(self.plan.new_model, sseed), steps) & wanted
            if aimed:
                self.origin[index] = f"directed to {', '.join(sorted(aimed))} (candidate " \
                                     f"{variant})"
                with self.lock:
                    self.state.directed += 1
                return steps
        fuzz.CLUSTERS.put_back(sseed, kept)
        return None

    def run_one(self, name: str, seed: int, steps: Steps) -> fuzz.Outcome:
        """The plan's run, an exception turned into an ERROR outcome, and its coverage."""
        try:
            out = self.plan.run(name, seed, steps)
        except Exception as exc:  # noqa: BLE001 - a harness failure, never Kafka's
            out = fuzz.Outcome(None, f"harness exception: {type(exc).__name__}: {exc}")
        # When it ended, in the build's campaign time: a new signature's time to first hit.
        self._ended[name] = self._base[4] + self.clock() - self._t0
        with self.lock:
            self.state.run_log.append({"run": name, "ended_s": round(self._ended[name], 1),
                                       "error": out.error is not None})
        if out.error is None:
            try:
                reach = self.plan.reach(out)
            except Exception as exc:  # noqa: BLE001 - say it; the run still counts
                self.say(f"hunt {self.plan.version}: {name}: coverage unreadable "
                         f"({type(exc).__name__}: {exc})")
                reach = Reach()
            self._covered(name, seed, steps, reach, out.run_dir)
        return out

    def _covered(self, name: str, seed: int, steps: Steps, reach: Reach,
                 run_dir: Path | None) -> None:
        with self.lock:
            new = sorted(reach.features() - set(self.state.coverage))
            if not new:
                return
            for f in new:
                self.state.coverage[f] = name
            index = _index_of(name)
            origin = self.origin.get(index, "generated") if index is not None else "re-run"
            rel = Path(self.plan.version) / "corpus" / f"{name}.yaml"
            (self.dir / rel).parent.mkdir(parents=True, exist_ok=True)
            ran = run_dir / "scenario.yaml" if run_dir is not None else None
            # The scenario the run ran (its cluster too), else the schedule written anew.
            (self.dir / rel).write_text(ran.read_text() if ran is not None and ran.is_file()
                                        else fuzz.scenario_yaml(name, seed, steps))
            self.state.corpus.append(CorpusEntry(name, str(rel), new, origin, tuple(steps)))
        self.say(f"hunt {self.plan.version}: {name} reached {len(new)} new: {', '.join(new)}; "
                 f"corpus {len(self.state.corpus)}")

    def after_generated(self, name: str, out: fuzz.Outcome) -> None:
        self._absorb()
        st = self.state
        st.timeline.append([round(st.seconds, 1),
                            float(st.generated),
                            float(len(st.transitions())), float(len(st.rules())),
                            float(len(st.known))])
        self.say(self.progress_line())
        self._save()

    # -- the campaign ---------------------------------------------------------------------
    def run(self) -> fuzz.CampaignResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        (self.out_dir / "schedules").mkdir(exist_ok=True)
        version = self.plan.version

        def said(line: str) -> None:
            self.say(f"hunt {version}:" + line[len("fuzz:"):] if line.startswith("fuzz:")
                     else line)
        camp = fuzz.Campaign(self.cfg.campaign(), self.plan.new_model, self.run_one,
                             self.out_dir, say=said, clock=self.clock, width=self.plan.width)
        camp.source, camp.first_index = self.source, self.state.next_index
        camp.after_generated = self.after_generated
        camp.on_interrupt = self.plan.on_interrupt
        # Known signatures: counted again, not re-run or shrunk again.
        camp.result.failures = [fuzz.Failure(_signature(k.signature), k.key, 0, (), None,
                                             [k.first_run], tries=0, hits=0)
                                for k in self.state.known if k.signature is not None]
        self._stub_base = {k.key: k.occurrences for k in self.state.known
                           if k.signature is not None}
        st = self.state
        self._base = (st.generated, st.runs, st.errors, st.run_seconds, st.seconds)
        self._seen_errors = 0
        self._ended: dict[str, float] = {}
        self.campaign, self._t0 = camp, self.clock()
        try:
            camp.run()
        finally:
            self._absorb()
            self._save()
        return camp.result

    def _absorb(self) -> None:
        """New failures and errors of the campaign into the state, classified; counters."""
        res, st = self.campaign.result, self.state
        st.generated = self._base[0] + res.generated
        st.runs = self._base[1] + res.runs
        st.errors = self._base[2] + len(res.errors)
        st.run_seconds = self._base[3] + res.run_seconds
        st.seconds = self._base[4] + (self.clock() - self._t0)
        by_key = {k.key: k for k in st.known}
        for f in res.failures:
            key = fuzz.signature_text(f.signature)
            if key in self._stub_base:  # known from an earlier session
                by_key[key].occurrences = self._stub_base[key] + len(f.runs) - 1
                continue
            k = by_key.get(key)
            if k is None:
                kip, devs = self.plan.kip(f.first_run)
                c = classify(f.signature, None, kip, devs, self.deviations, self.bugs)
                k = Known(key, [list(x[:2]) + [list(x[2])] for x in f.signature], c.cls,
                          c.why, f.status, str(f.first_run or f.name), len(f.runs),
                          found_at_run=st.generated,
                          found_after_s=round(self._ended.get(f.name, st.seconds), 1))
                st.known.append(k)
                by_key[key] = k
                self.say(f"hunt {self.plan.version}: signature {key}: {c.cls} ({f.status}): "
                         f"{c.why}")
            k.occurrences, k.status = len(f.runs), f.status
            k.minimal = str(f.minimal or "")
            k.minimal_steps = None if f.minimal_steps is None else len(f.minimal_steps)
        for e in res.errors[self._seen_errors:]:
            key = error_key(e.get("error", ""))
            if key in by_key:
                by_key[key].occurrences += 1
                continue
            c = classify(None, e.get("error", ""), None, (), ())
            k = Known(key, None, c.cls, c.why, "error", e.get("run") or e.get("schedule", ""),
                      1, found_at_run=st.generated, found_after_s=round(st.seconds, 1))
            st.known.append(k)
            by_key[key] = k
            self.say(f"hunt {self.plan.version}: {key}: harness-error")
        self._seen_errors = len(res.errors)

    def _save(self) -> None:
        with self.lock:
            save_state(self.dir, self.hunt_state)

    def progress_line(self) -> str:
        st = self.state
        left = self.campaign.time_left()
        extra = st.runs - st.generated
        return (f"hunt {self.plan.version}: runs {st.generated}"
                + (f" (+{extra} re-runs/shrink runs)" if extra else "")
                + f", {st.mutated} mutated, {st.directed} directed; coverage transitions "
                f"{len(st.transitions())}/{len(TRANSITION_NAMES)}, rules {len(st.rules())}/"
                f"{len(RULE_NAMES)}; "
                f"signatures {len(st.known)} ({_classes_text(st)}); corpus {len(st.corpus)}"
                + ("" if left == float("inf") else f"; time left {int(max(left, 0)) // 60}m"
                   f"{int(max(left, 0)) % 60:02d}s"))


def _signature(raw: Any) -> Signature:
    return tuple((str(a), str(v), tuple(str(n) for n in names)) for a, v, names in raw)


def _index_of(name: str) -> int | None:
    m = re.fullmatch(r"fuzz-s\d+-(\d+)", name)
    return int(m.group(1)) if m else None


def _classes_text(st: BuildState) -> str:
    counts = {c: sum(1 for k in st.known if k.cls == c) for c in CLASSES}
    return ", ".join(f"{c} {n}" for c, n in counts.items() if n) or "none"


def hunt(cfg: HuntConfig, plans: Sequence[BuildPlan], campaign_dir: Path,
         say: Callable[[str], None] = lambda s: None,
         clock: Callable[[], float] = time.monotonic,
         state: HuntState | None = None) -> HuntState:
    """Every build's campaign in turn (each ``cfg.budget_s`` long), then the summary:
    DIR/hunt.json and DIR/hunt.md. Ctrl-C stops the running build; the state and the
    summary are written all the same. ``state``: the one load_state gave (else loaded here)."""
    state = state if state is not None else load_state(campaign_dir, cfg)
    campaign_dir.mkdir(parents=True, exist_ok=True)
    save_state(campaign_dir, state)
    try:
        for plan in plans:
            say(f"hunt {plan.version}: budget {int(cfg.budget_s)} s, resuming at schedule "
                f"{state.build(plan.version).next_index}" if state.build(plan.version).next_index
                else f"hunt {plan.version}: budget {int(cfg.budget_s)} s, a new campaign")
            BuildHunt(cfg, plan, state, campaign_dir, say, clock).run()
    finally:
        write_summary(campaign_dir, state, [p.version for p in plans])
    return state


# --- the summary -----------------------------------------------------------------------------

def build_summary(st: BuildState) -> dict[str, Any]:
    classes = {c: sum(1 for k in st.known if k.cls == c) for c in CLASSES}
    return {"build": st.version, "runs": st.runs, "generated": st.generated,
            "mutated": st.mutated, "directed": st.directed, "errors": st.errors,
            "minutes": round(st.seconds / 60, 1),
            "runs_per_hour": round(3600 * st.runs / st.seconds, 1) if st.seconds else None,
            "transitions": f"{len(st.transitions())}/{len(TRANSITION_NAMES)}",
            "rules": f"{len(st.rules())}/{len(RULE_NAMES)}",
            "signatures": len(st.known), "classes": classes, "corpus": len(st.corpus),
            "deviations_met": st.deviations_met(),
            "never_reached": {
                "transitions": [t for t in TRANSITION_NAMES if t not in st.transitions()],
                "rules": [r for r in RULE_NAMES if r not in st.rules()]}}


def write_summary(campaign_dir: Path, state: HuntState, order: Sequence[str] = ()) -> str:
    """hunt.json and hunt.md in the campaign dir; returns the markdown table."""
    versions = list(dict.fromkeys([*order, *state.builds]))
    builds = [state.builds[v] for v in versions if v in state.builds]
    summary = {"settings": state.settings, "builds": [build_summary(b) for b in builds],
               "signatures": [{"build": b.version, **k.to_json()} for b in builds
                              for k in b.known]}
    campaign_dir.mkdir(parents=True, exist_ok=True)
    (campaign_dir / "hunt.json").write_text(json.dumps(summary, indent=1))
    table = summary_table(builds)
    lines = [f"# kafka-chaos hunt, seed {state.settings.get('seed')}", "", table, "",
             "## Signatures", ""]
    for b in builds:
        for k in b.known:
            lines.append(f"- **{b.version}** `{k.key}`: **{k.cls}** ({k.status}, "
                         f"{k.occurrences} occurrence(s), first after {k.found_at_run} runs / "
                         f"{k.found_after_s:.0f} s): {k.why}. First run: {k.first_run}"
                         + (f"; minimal: {k.minimal} ({k.minimal_steps} steps)" if k.minimal
                            else ""))
    if not any(b.known for b in builds):
        lines.append("none")
    lines += ["", "## Cited deviations met (the kip axis needed them; first run)", ""]
    for b in builds:
        lines.append(f"- **{b.version}**: {deviations_text(b.deviations_met())}")
    lines += ["", "## Never reached", ""]
    for b in builds:
        nr = build_summary(b)["never_reached"]
        lines.append(f"- **{b.version}**: transitions {', '.join(nr['transitions']) or 'none'}; "
                     f"rules {', '.join(nr['rules']) or 'none'}")
    (campaign_dir / "hunt.md").write_text("\n".join(lines) + "\n")
    return table


def deviations_text(met: Mapping[str, Mapping[str, Any]]) -> str:
    """``BuildState.deviations_met`` as one line: each deviation with its first run and
    minute (hunt.md and the campaign report)."""
    return ", ".join(f"{d} ({m['run']}" + ("" if m["minutes"] is None
                                          else f", {m['minutes']} min") + ")"
                     for d, m in met.items()) or "none"


def summary_table(builds: Sequence[BuildState]) -> str:
    rows = ["| build | runs | runs/h | minutes | transitions | rules | signatures | classes |",
            "|---|---|---|---|---|---|---|---|"]
    for b in builds:
        s = build_summary(b)
        classes = ", ".join(f"{c} {n}" for c, n in s["classes"].items() if n) or "-"
        per_hour = s['runs_per_hour'] if s['runs_per_hour'] is not None else '-'
        rows.append(f"| {b.version} | {s['runs']} ({s['generated']} generated, {s['mutated']} "
                    f"mutated, {s.get('directed', 0)} directed) | {per_hour} "
                    f"| {s['minutes']} | {s['transitions']} | {s['rules']} | {s['signatures']} "
                    f"| {classes} |")
    return "\n".join(rows)
