"""The campaign loop: each build's fuzz Campaign fed by the corpus and directed schedules,
its coverage and failures absorbed into the state (docs/HUNT.md "Per build", "Corpus and
mutation", "Directed schedules").

Per build, the fuzz campaign (harness/search/fuzz/ ``Campaign``) runs as `kafka-chaos fuzz`
runs it: schedules from the generator, failures de-duplicated by signature, each new one
re-run (``confirm``) and shrunk once. The hunt adds, through the Campaign's hooks (``source``,
``first_index``, ``after_generated``), coverage (reach.py), the corpus and directed schedules
(here), the classification of each failure (classification.py) and the state saved after
every generated run (state.py).

**Corpus** (per build). A run that reaches a transition or a rule the build's campaign had
not reached joins the corpus (its schedule, as a scenario file in DIR/<build>/corpus/). Once
the corpus holds an entry, each schedule index is, with chance ``MUTATE_SHARE`` (drawn from
the seed, the build and the index), a mutation of a corpus entry instead of the generator's
schedule: one to three schedule-level edits (insert a step, delete one, replace one, swap two
neighbours; inserted and replacing steps come from the generator's schedule of the same
index) of the entry's body (its recovery tail cut off), repaired with ``fuzz.repairer``
(steps the generator's guards refuse are dropped) and ended with the recovery tail computed
after the edited steps (every node up, every link whole, then the final consume), as a
generated schedule ends (reference/search/recovery.py). A mutation the repair empties or
leaves unchanged falls back to the generator's schedule.

**Directed schedules**. An index that does not mutate is, with chance ``direct_share``, the
first of its other candidates (``fuzz.schedule(..., variant)``) whose model shows for sure a
transition the build has not reached (``fuzzgen.predicted_transitions``), while one is left
(docs/HUNT.md "Directed schedules").

The logic here is pure where it can be: the run function, the coverage reader and the kip
reader are parameters (``BuildPlan``); the command gives the real ones.
"""

from __future__ import annotations

import dataclasses
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.search import fuzz
from harness.search.hunt.classification import (
    CLASSES,
    build_deviation_ids,
    classify,
    error_key,
    hwm_lag_outlived,
    kip_of_run,
    known_bugs_of,
    replication_race,
)
from harness.search.hunt.reach import RULE_NAMES, TRANSITION_NAMES, Reach, reach_of_outcome
from harness.search.hunt.state import (
    BuildState,
    CorpusEntry,
    HuntConfig,
    HuntState,
    Known,
    load_state,
    save_state,
)
from harness.search.hunt.summary import write_summary
from harness.search.shrink import Signature, Steps
from reference.search import fuzzgen
from reference.search.generators import Builds
from reference.search.recovery import body_of

#: Candidates a directed index looks at (about 30 ms of model time each on 2 cores).
DIRECT_PROBES = 100
#: Schedule-level edits of a corpus entry.
MUTATIONS = ("insert", "delete", "replace", "swap")


# --- mutation --------------------------------------------------------------------------------

def mutate_schedule(parent: Steps, donor: Steps, rng: random.Random,
                    repair: Callable[[Steps], Steps | None], max_len: int
                    ) -> tuple[Steps, str] | None:
    """One to three edits of ``parent``'s body (its recovery tail cut off:
    reference/search/recovery.py ``body_of``; steps inserted or replacing come from
    ``donor``), repaired by ``repair``, which ends them with the recovery tail computed
    after the edited steps (``fuzz.repairer(..., tail=True)``); None when nothing new is
    left. (Edited with its tail, a kill inserted after the tail or the tail's restart
    deleted left a broker down at the final read: acked records above a frozen HWM read
    as lost, a false positive.)"""
    cur = list(body_of(parent))
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
    fixed = repair(tuple(cur))
    if not done or not fixed or fixed == tuple(parent):
        return None
    return fixed, "+".join(done)


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
        self.repair = fuzz.repairer(plan.new_model, tail=True)
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

    def gen(self) -> Any:
        """The generator's settings on this build: the hunt's, with the build's catalog
        (its births, resolved by the command: ``fuzz.CampaignModels``)."""
        gen = self.cfg.gen()
        models = self.plan.new_model
        if not isinstance(models, fuzz.CampaignModels):
            return gen
        return dataclasses.replace(gen, builds=Builds(models.build.version,
                                                      models.build.version, models.catalog),
                                   births=tuple(models.births))

    # -- hooks the Campaign calls ---------------------------------------------------------
    def source(self, index: int) -> Steps:
        fresh = fuzz.schedule(self.plan.new_model, self.cfg.seed, index, self.gen())
        rng = random.Random(f"kafka-chaos-hunt:{self.cfg.seed}:{self.plan.version}:{index}")
        with self.lock:
            corpus = [e for e in self.state.corpus if e.steps]
            self.state.next_index = max(self.state.next_index, index + 1)
        if corpus and rng.random() < self.cfg.mutate_share:
            parent = rng.choice(corpus)
            got = mutate_schedule(parent.steps, fresh, rng, self.repair,
                                  max(2 * self.cfg.length, len(parent.steps) + 3))
            # a mutation the loader refuses: the index's own schedule, not a harness error
            if got is not None and self._loads(index, got[0]):
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

    def _loads(self, index: int, steps: Steps) -> bool:
        """Whether `run`'s loader takes ``steps`` as the index's scenario file. A mutation
        mixes the parent's steps (made for the parent's cluster) with the index's cluster:
        e.g. a create_topic placed by Kafka on 4 brokers that the index's 5-broker cluster
        gives 60 placements, which the loader refuses (seen in certify's hunt, 4.4.0)."""
        from harness.scenario.loader import ScenarioError, parse_scenario
        name = f"fuzz-s{self.cfg.seed}-{index}"
        try:
            parse_scenario(fuzz.scenario_yaml(name, fuzz.schedule_seed(self.cfg.seed, index),
                                              steps), name)
        except ScenarioError:
            return False
        return True

    def _directed(self, index: int) -> Steps | None:
        """The first of the index's candidates whose model shows, for sure, a transition
        the build has not reached yet (None: every one reached, or no candidate shows
        one; the index's own cluster is then put back for its scenario file)."""
        with self.lock:
            wanted = frozenset(TRANSITION_NAMES) - frozenset(self.state.transitions())
        if not wanted:
            return None
        sseed, gen = fuzz.schedule_seed(self.cfg.seed, index), self.gen()
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
                                       "error": out.error is not None}
                                      | ({"birth": out.birth} if out.birth else {}))
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
        camp = fuzz.Campaign(dataclasses.replace(self.cfg.campaign(), gen=self.gen()),
                             self.plan.new_model, self.run_one,
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
                c = classify(f.signature, None, kip, devs, self.deviations, self.bugs,
                             race=replication_race(f.first_run),
                             lag=hwm_lag_outlived(f.first_run))
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
