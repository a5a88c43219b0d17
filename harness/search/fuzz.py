"""`kafka-chaos fuzz`: generated schedules run through the normal Runner (issue 13).

A generated schedule (reference/search/fuzzgen.py) becomes a scenario file (YAML) on the
cluster generated for it (``schedule``: brokers, controllers, replicas, partitions, min
ISR, unclean election, ELR where the build allows both; ``gen_config(clusters=False)``:
the fixed BASE below), loaded by the same loader as `kafka-chaos run`, so it IS a
scenario: the run is a normal history judged on every axis, and the file can be handed
to `kafka-chaos run`. A run whose axes are not all as expected (no declaration: clean)
is a failure with a signature (``signature``); the campaign de-duplicates failures by
signature, re-runs a new one to tell a reproducible failure from a flaky one, and
shrinks a reproducible one (harness/search/shrink.py) to a minimal scenario written beside
the failing run's history (``minimal.yaml``).

The campaign logic takes the function that runs a schedule as a parameter (``RunFn``);
the command gives it the real one (``real_runner``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.run.parallel import run_all
from harness.scenario import steps as step_kinds
from harness.search.shrink import ShrinkResult, Signature, Steps, shrink
from reference.model import steps as S
from reference.search import fuzzgen

#: The cluster a schedule runs on without generated settings: 3 brokers, 1 controller, one
#: partition on all three with min ISR 2 (the KIP's examples), unclean election off.
BASE: dict[str, Any] = {
    "version": 1,
    "cluster": {"brokers": 3, "controllers": 1},
    "topic": {"name": "t", "replicas": [1, 2, 3], "min_insync_replicas": 2,
              "config": {"unclean.leader.election.enable": "false"}},
}


def gen_config(**settings: Any) -> fuzzgen.GenConfig:
    """The generator's settings with the kinds it makes: those whose definition in
    harness/scenario/steps/ names a generator (pause and resume included), each schedule on
    a cluster of its own (``clusters``; off: the fixed BASE), under client traffic drawn
    from its seed with ``traffic`` (``fuzz --traffic``)."""
    settings.setdefault("clusters", True)
    return fuzzgen.GenConfig(generators=step_kinds.generators(), **settings)


class Clusters:
    """The cluster of each schedule generated in this process, by its scenario seed
    (``schedule`` draws it), so the scenario file written for that seed (``scenario_yaml``:
    the run, a re-run, a shrink attempt, the minimal scenario) holds it; and the one a
    campaign works on now (the latest seed generated or written), for the callers that ask
    for a model without naming the schedule (``CampaignModels.__call__``)."""

    def __init__(self) -> None:
        self.by_seed: dict[int, fuzzgen.Cluster] = {}
        self.current: fuzzgen.Cluster | None = None

    def of(self, seed: int) -> fuzzgen.Cluster | None:
        return self.by_seed.get(seed)

    def kept(self, seed: int) -> tuple[fuzzgen.Cluster | None, fuzzgen.Cluster | None]:
        """What ``put_back`` restores: seed's cluster and the current one."""
        return self.by_seed.get(seed), self.current

    def put_back(self, seed: int,
                 kept: tuple[fuzzgen.Cluster | None, fuzzgen.Cluster | None]) -> None:
        cluster, self.current = kept
        if cluster is None:
            self.by_seed.pop(seed, None)
        else:
            self.by_seed[seed] = cluster


CLUSTERS = Clusters()


def cluster_doc(cluster: fuzzgen.Cluster) -> dict[str, Any]:
    """The scenario file's ``cluster`` and ``topic`` (FORMAT.md) of a generated cluster,
    and its ``traffic`` when it has some."""
    c = cluster
    shape: dict[str, Any] = {"brokers": c.brokers, "controllers": c.controllers}
    if c.elr is not None:
        shape["elr"] = c.elr
    topic: dict[str, Any] = {"name": "t", "replicas": list(c.replicas)}
    if c.partitions > 1:
        topic["partitions"] = c.partitions
    topic["min_insync_replicas"] = c.min_isr
    topic["config"] = {"unclean.leader.election.enable": "true" if c.unclean else "false"}
    out = {"cluster": shape, "topic": topic}
    if c.traffic is not None:
        out["traffic"] = c.traffic.to_dict()
    return out


def scenario_yaml(name: str, seed: int, steps: Steps, description: str = "",
                  cluster: fuzzgen.Cluster | None = None) -> str:
    """The scenario file of a schedule (FORMAT.md), as `kafka-chaos run` reads it: on
    ``cluster``, else the cluster generated for ``seed`` (``schedule``), else BASE."""
    doc: dict[str, Any] = {"version": 1, "name": name}
    if description:
        doc["description"] = description
    doc["seed"] = seed
    if cluster is None:
        cluster = CLUSTERS.of(seed)
        if cluster is not None:
            CLUSTERS.current = cluster
    doc.update(cluster_doc(cluster) if cluster is not None
               else {k: v for k, v in BASE.items() if k != "version"})
    doc["steps"] = [S.step_to_dict(s) for s in steps]
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    return str(text)


def base_scenario(name: str = "fuzz-base", cluster: fuzzgen.Cluster | None = None) -> Any:
    """The base cluster (or ``cluster``, without its traffic: the model's settings are the
    cluster's) as a loaded Scenario (one consume step), to build the model."""
    from harness.scenario.loader import parse_scenario
    shape = dataclasses.replace(cluster or fuzzgen.BASE_CLUSTER, traffic=None)
    return parse_scenario(scenario_yaml(name, 0, (S.Consume(),), cluster=shape), f"<{name}>")


def schedule_seed(seed: int, index: int) -> int:
    """The scenario seed of run ``index`` of a campaign (record ids derive from it)."""
    return (seed * 1_000_003 + index) % (2**63)


def schedule(new_model: Callable[[], Any], seed: int, index: int,
             cfg: fuzzgen.GenConfig, variant: int = 0) -> Steps:
    """Run ``index``'s schedule: the same for the same (seed, index, config, build). With
    ``cfg.clusters`` and a campaign's model factory (``CampaignModels``), the schedule gets
    a cluster of its own, drawn from its scenario seed among what the build allows, and
    is generated against that cluster's model; the cluster is kept for the scenario
    file (``scenario_yaml``). With ``cfg.traffic`` the schedule runs under traffic drawn
    from the same seed (kept with its cluster, on BASE without ``cfg.clusters``), and is
    generated against the model under it (``fuzzgen.under_traffic``). ``variant`` > 0: one
    of the index's other candidates (its cluster, traffic and steps drawn from streams of
    their own), for the same run (the hunt's directed schedules)."""
    sseed = schedule_seed(seed, index)
    drawn: int | str = sseed if variant == 0 else f"{sseed}:{variant}"
    cluster = None
    if cfg.clusters and isinstance(new_model, CampaignModels):
        cluster = fuzzgen.draw_cluster(drawn, new_model.elr_choices, traffic=cfg.traffic)
    elif cfg.traffic:
        cluster = dataclasses.replace(fuzzgen.BASE_CLUSTER, traffic=fuzzgen.draw_traffic(
            drawn, fuzzgen.BASE_CLUSTER.partitions))
    stream = f"{seed}:{index}" if variant == 0 else f"{seed}:{index}:{variant}"
    if cluster is None:
        CLUSTERS.by_seed.pop(sseed, None)
        CLUSTERS.current = None
        return fuzzgen.generate(new_model, stream, cfg)
    CLUSTERS.by_seed[sseed] = CLUSTERS.current = cluster
    return fuzzgen.generate(models_of(new_model, sseed), stream, cfg)


def models_of(new_model: Callable[[], Any], seed: int | None) -> Callable[[], Any]:
    """The model factory of the schedule with scenario seed ``seed`` (its generated
    cluster's, when ``schedule`` drew one for it, under its traffic if it has some);
    without a seed, ``new_model`` (a campaign's: the schedule it works on now)."""
    cluster = CLUSTERS.of(seed) if seed is not None else None
    if cluster is None:
        return new_model
    if not isinstance(new_model, CampaignModels):
        return fuzzgen.under_traffic(new_model, cluster.traffic)
    return functools.partial(new_model.for_cluster, cluster)


def repairer(new_model: Callable[[], Any], seed: int | None = None
             ) -> Callable[[Steps], Steps | None]:
    """Drop the steps a shrink candidate made invalid, until the generator's rules hold
    (no count bound: merged produces may exceed the generator's counts). ``seed``: the
    schedule's scenario seed (its cluster's model; see ``models_of``)."""
    cfg = gen_config(max_count=10_000)
    new_model = models_of(new_model, seed)

    def repair(steps: Steps) -> Steps | None:
        cur = tuple(steps)
        while cur:
            bad = fuzzgen.validate(new_model, cur, cfg)
            if bad is None:
                return cur
            cur = cur[:bad[0]] + cur[bad[0] + 1:]
        return None
    return repair


# --- signatures ------------------------------------------------------------------------

_STEP_PREFIX = re.compile(r"^step \d+:\s*")
#: A multi-partition reason names its partition first (``t-1: replicas: ...``, or
#: ``t-{0,3}: ...``): the signature is the field, whichever partition showed it.
_LANE_PREFIX = re.compile(r"^[A-Za-z0-9._-]+-(\d+|\{[\d,]+\}):\s*")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_. -]{0,40}$")


def _reason_name(reason: str) -> str:
    text = _LANE_PREFIX.sub("", _STEP_PREFIX.sub("", reason or "").strip())
    if text.startswith("trace:"):
        rule = text[len("trace:"):].strip().split(" at offset", 1)[0].strip()
        return f"trace:{rule}"
    head = text.split(":", 1)[0].strip()
    return head if _NAME.match(head) else "other"


def axis_names(axis: Any) -> tuple[str, ...]:
    """The rule or check names an axis verdict broke."""
    rules = {str(d["rule"]) for d in (axis.details or []) if isinstance(d, Mapping)
             and "rule" in d and (axis.axis == "safety" or axis.axis == "release")}
    if axis.axis == "release" and rules:
        return tuple(sorted(f"trace:{r}" for r in rules))
    if axis.axis == "safety":
        return tuple(sorted(rules)) or ("other",)
    return (_reason_name(axis.reason),)


def signature(axes: Mapping[str, Any]) -> Signature | None:
    """(axis, verdict, rule/check names) of every axis not as expected; None when all are."""
    sig = tuple(sorted((a.axis, a.verdict, axis_names(a))
                       for a in axes.values() if not a.as_expected))
    return sig or None


def reasons(axes: Mapping[str, Any]) -> str:
    """The reasons of every axis not as expected (``axis: reason``), in axis order: what
    a signature leaves out (a traffic loss's count and lost ids, a divergence's step)."""
    return "; ".join(f"{a.axis}: {a.reason}" for a in axes.values()
                     if not a.as_expected and a.reason)


def signature_text(sig: Signature) -> str:
    return "; ".join(f"{axis} {verdict} [{', '.join(names)}]" for axis, verdict, names in sig)


def prefer_for(sig: Signature, new_model: Callable[[], Any]
               ) -> Callable[[Steps], bool] | None:
    """The shrinker's ordering hint for a signature: an acks=all loss the release model
    predicted (release as expected, safety UNSAFE acked-record-durable) is kept by the
    candidates the model still says lose data, so those run first. Other failures (the
    model disagrees with the broker) get no hint."""
    axes = {axis: names for axis, _, names in sig}
    if "release" in axes or "acked-record-durable" not in axes.get("safety", ()):
        return None
    return lambda steps: fuzzgen.predicts_acked_loss(new_model, steps)


# --- the campaign ----------------------------------------------------------------------

@dataclass
class Outcome:
    """One run of a schedule: its signature (None: every axis as expected), whether the
    harness failed (ERROR: not a finding), and its history."""

    signature: Signature | None
    error: str | None = None
    run_dir: Path | None = None
    seconds: float = 0.0
    #: Why: the reasons of the axes not as expected (``reasons``; a traffic loss names
    #: the lost ids there), "" when every axis is.
    reason: str = ""


MAX_GUIDED_SKIPS = 5000

#: (scenario name, scenario seed, steps) -> the run's outcome.
RunFn = Callable[[str, int, Steps], Outcome]


@dataclass
class Failure:
    signature: Signature
    name: str
    scenario_seed: int
    steps: Steps
    first_run: Path | None
    runs: list[str] = field(default_factory=list)
    #: Runs of the failing schedule itself and how many gave the signature.
    tries: int = 0
    hits: int = 0
    minimal: Path | None = None
    shrink: ShrinkResult | None = None
    minimal_steps: Steps | None = None
    #: Re-runs of the minimal schedule after shrinking, and how many gave the signature.
    minimal_tries: int = 0
    minimal_hits: int = 0
    #: The first run's reasons (``Outcome.reason``).
    reason: str = ""

    @property
    def flaky(self) -> bool:
        return self.tries > 1 and self.hits < self.tries

    @property
    def status(self) -> str:
        if self.tries <= 1:
            return "unconfirmed"
        if self.hits == self.tries:
            return "reproducible"
        return "flaky" if self.hits <= 1 else "intermittent"

    def to_json(self) -> dict[str, Any]:
        return {"signature": signature_text(self.signature), "reason": self.reason,
                "schedule": self.name,
                "steps": len(self.steps), "first_run": str(self.first_run or ""),
                "occurrences": len(self.runs), "runs": self.runs,
                "status": self.status, "rate": f"{self.hits}/{self.tries}",
                "minimal": str(self.minimal or ""),
                "minimal_steps": None if self.minimal_steps is None else len(self.minimal_steps),
                "minimal_rate": f"{self.minimal_hits}/{self.minimal_tries}",
                "shrink": None if self.shrink is None else self.shrink.to_json()}


@dataclass
class CampaignConfig:
    seed: int
    runs: int | None = None
    budget_s: float | None = None
    gen: fuzzgen.GenConfig = field(default_factory=lambda: gen_config())
    #: Re-runs of a new failure's schedule before shrinking (flaky classification).
    confirm: int = 1
    shrink: bool = True
    shrink_attempts: int = 30
    shrink_budget_s: float = 1200.0
    #: Run only the schedules the build's model predicts lose acks=all records
    #: (model-guided; the others are counted as skipped, never run).
    guided: bool = False
    #: Mutant names (reference/releases/mutants.py): run only the schedules whose model predicts a
    #: run would tell one of these KIP rules from its flip (``--target``; rule coverage).
    targets: tuple[str, ...] = ()


@dataclass
class CampaignResult:
    """What a fuzz campaign did (counts and times) and found (errors, failures): the
    summary it prints and writes as JSON."""

    #: Runs on a cluster: the generated schedules, their re-runs and the shrink runs.
    runs: int = 0
    #: Generated schedules run.
    generated: int = 0
    #: Generated schedules the model said would tell nothing (``guided``): never run.
    skipped_by_model: int = 0
    as_expected: int = 0
    #: Why the campaign stopped: its run count done, its budget spent, or no schedule
    #: the guide selects.
    stopped: str = ""
    errors: list[dict[str, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    run_seconds: float = 0.0
    shrink_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.runs, "generated": self.generated,
                "skipped_by_model": self.skipped_by_model,
                "as_expected": self.as_expected, "errors": self.errors,
                "failures": [f.to_json() for f in self.failures],
                "seconds": round(self.seconds, 1), "run_seconds": round(self.run_seconds, 1),
                "shrink_seconds": round(self.shrink_seconds, 1),
                "runs_per_hour": round(3600 * self.runs / self.run_seconds, 1)
                if self.run_seconds else None,
                "runs_per_hour_wall": round(3600 * self.runs / self.seconds, 1)
                if self.seconds else None, "stopped": self.stopped}


class Campaign:
    """Generated runs until ``runs`` or ``budget_s``; failures de-duplicated by signature,
    confirmed (flaky or not) and shrunk."""

    def __init__(self, cfg: CampaignConfig, new_model: Callable[[], Any], run: RunFn,
                 out_dir: Path, say: Callable[[str], None] = lambda s: None,
                 clock: Callable[[], float] = time.monotonic, width: int = 1) -> None:
        self.cfg, self.new_model, self.run_fn = cfg, new_model, run
        #: Generated runs side by side (--jobs, or the Spark executors' cores); re-runs and
        #: shrink attempts go one at a time, each deciding the next.
        self.width = max(1, width)
        self.on_interrupt: Callable[[], None] | None = None
        #: Steps -> whether to run them (--target; see target_predicate).
        self.target: Callable[[Steps], bool] | None = None
        #: Hooks for `kafka-chaos hunt` (harness/search/hunt.py): the schedule of an index
        #: (default: the generator's), the first index (a resumed campaign goes on from
        #: there), and a call after each generated run has been counted, confirmed and shrunk.
        self.source: Callable[[int], Steps] | None = None
        self.first_index = 0
        self.after_generated: Callable[[str, Outcome], None] | None = None
        self.out_dir, self.say, self.clock = out_dir, say, clock
        self.result = CampaignResult()
        self._t0 = clock()

    def time_left(self) -> float:
        if self.cfg.budget_s is None:
            return math.inf
        return self.cfg.budget_s - (self.clock() - self._t0)

    def schedules(self) -> Iterator[tuple[int, Steps]]:
        index, ran = self.first_index, 0
        while self.cfg.runs is None or ran < self.cfg.runs:
            if self.time_left() <= 0:
                self.result.stopped = "budget spent"
                return
            steps = self.source(index) if self.source is not None else \
                schedule(self.new_model, self.cfg.seed, index, self.cfg.gen)
            if not self._wanted(steps):
                self.result.skipped_by_model += 1
                index += 1
                if self.result.skipped_by_model % MAX_GUIDED_SKIPS == 0 and ran == 0:
                    self.result.stopped = (
                        f"{self._guide_name()}: none of the first {index} schedules is one the "
                        "model selects (--guided: loses acks=all records; --target: exercises "
                        "the rule; the generator may never make the steps a rule needs, e.g. "
                        "reassignment or config changes)")
                    return
                continue
            yield index, steps
            index += 1
            ran += 1
        self.result.stopped = f"{self.cfg.runs} runs done"

    def _wanted(self, steps: Steps) -> bool:
        """Model-guided selection: --guided (the build's model loses acks=all records)
        and --target (the model parts from a target mutant's)."""
        if self.cfg.guided and not fuzzgen.predicts_acked_loss(self.new_model, steps):
            return False
        return self.target is None or self.target(steps)

    def _guide_name(self) -> str:
        return " ".join(n for n, on in (("--guided", self.cfg.guided),
                                        ("--target", self.target is not None)) if on)

    def _timed(self, name: str, seed: int, steps: Steps) -> Outcome:
        """One run and its wall time (safe on a worker thread: it touches no counters)."""
        t0 = self.clock()
        out = self.run_fn(name, seed, steps)
        out.seconds = self.clock() - t0
        return out

    def _run(self, name: str, seed: int, steps: Steps) -> Outcome:
        return self._count(name, self._timed(name, seed, steps))

    def _count(self, name: str, out: Outcome) -> Outcome:
        self.result.runs += 1
        self.result.run_seconds += out.seconds
        if out.error is not None:
            self.result.errors.append({"schedule": name, "run": str(out.run_dir or ""),
                                       "error": out.error})
        elif out.signature is None:
            self.result.as_expected += 1
        return out

    def _waves(self) -> Iterator[list[tuple[int, Steps]]]:
        """The schedules, ``width`` at a time (one cluster each, run side by side)."""
        schedules = self.schedules()
        while wave := list(itertools.islice(schedules, self.width)):
            yield wave

    def run(self) -> CampaignResult:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for wave in self._waves():
            named = [(f"fuzz-s{self.cfg.seed}-{i}", schedule_seed(self.cfg.seed, i), steps)
                     for i, steps in wave]
            outs = run_all([functools.partial(self._timed, *n) for n in named], self.width,
                           self.on_interrupt)
            for (name, seed, steps), out in zip(named, outs, strict=True):
                self._generated(name, seed, steps, self._count(name, out))
        self.result.seconds = self.clock() - self._t0
        self._write()
        return self.result

    def _generated(self, name: str, seed: int, steps: Steps, out: Outcome) -> None:
        self.result.generated += 1
        what = ("ERROR: " + (out.error or "")) if out.error else \
            "as expected" if out.signature is None else signature_text(out.signature)
        self.say(f"fuzz: {name} ({len(steps)} steps, {out.seconds:.0f} s): {what}")
        if out.error is None and out.signature is not None:
            self._failure(name, seed, steps, out)
        self._progress()
        if self.after_generated is not None:
            self.after_generated(name, out)

    def _progress(self) -> None:
        left = self.time_left()
        left_text = "" if math.isinf(left) else f", time left {_duration(max(left, 0))}"
        total = f"/{self.cfg.runs}" if self.cfg.runs is not None else ""
        extra = self.result.runs - self.result.generated
        self.say(f"fuzz: runs done {self.result.generated}{total}"
                 + (f" (+{extra} re-runs/shrink runs)" if extra else "")
                 + f", failures found {len(self.result.failures)} (signatures), errors "
                 f"{len(self.result.errors)}{left_text}")

    def _failure(self, name: str, seed: int, steps: Steps, out: Outcome) -> None:
        assert out.signature is not None
        known = next((f for f in self.result.failures if f.signature == out.signature), None)
        if known is not None:
            known.runs.append(str(out.run_dir or name))
            self.say(f"fuzz: known failure ({signature_text(out.signature)}), "
                     f"{len(known.runs)} occurrences")
            return
        fail = Failure(out.signature, name, seed, steps, out.run_dir, [str(out.run_dir or name)],
                       tries=1, hits=1, reason=out.reason)
        self.result.failures.append(fail)
        self.say(f"fuzz: NEW failure {signature_text(out.signature)} in {name}; re-running "
                 f"it {self.cfg.confirm} time(s)")
        for _ in range(self.cfg.confirm):
            again = self._run(f"{name}-again", seed, steps)
            fail.tries += 1
            fail.hits += int(again.signature == out.signature and again.error is None)
        self.say(f"fuzz: {name}: signature in {fail.hits}/{fail.tries} runs ({fail.status})")
        if (fail.tries > 1 and fail.hits <= 1) or not self.cfg.shrink:
            return
        self._shrink(fail)

    def _shrink(self, fail: Failure) -> None:
        t0 = self.clock()
        counter = [0]

        def attempt(cand: Steps) -> Signature | None:
            counter[0] += 1
            out = self._run(f"{fail.name}-shrink{counter[0]}", fail.scenario_seed, cand)
            return None if out.error is not None else out.signature

        def said(a: Any) -> None:
            self.say(f"fuzz: shrink {fail.name} attempt {counter[0]} ({a.note}, "
                     f"{len(a.steps)} steps): {'kept' if a.kept else 'not kept'}")
        res = shrink(fail.steps, fail.signature, attempt,
                     repairer(self.new_model, fail.scenario_seed),
                     self.cfg.shrink_attempts, self.cfg.shrink_budget_s, self.clock, said,
                     prefer_for(fail.signature, models_of(self.new_model, fail.scenario_seed)))
        self.result.shrink_seconds += self.clock() - t0
        fail.shrink, fail.minimal_steps = res, res.steps
        text = scenario_yaml(f"{fail.name}-min", fail.scenario_seed, res.steps,
                             f"shrunk by kafka-chaos fuzz from {fail.name} ({len(fail.steps)} "
                             f"-> {len(res.steps)} steps); failure: "
                             f"{signature_text(fail.signature)}")
        where = fail.first_run if fail.first_run is not None and fail.first_run.is_dir() \
            else self.out_dir
        fail.minimal = where / "minimal.yaml"
        fail.minimal.write_text(text)
        (where / "shrink.json").write_text(json.dumps(res.to_json(), indent=1))
        for i in range(self.cfg.confirm if res.steps != fail.steps else 0):
            again = self._run(f"{fail.name}-min{i + 1}", fail.scenario_seed, res.steps)
            fail.minimal_tries += 1
            fail.minimal_hits += int(again.signature == fail.signature and again.error is None)
        if fail.minimal_tries:
            self.say(f"fuzz: {fail.name}: minimal schedule re-run: signature in "
                     f"{fail.minimal_hits}/{fail.minimal_tries} runs")
        self.say(f"fuzz: {fail.name} shrunk {len(fail.steps)} -> {len(res.steps)} steps in "
                 f"{res.seconds:.0f} s ({len(res.attempts)} runs; {res.stopped}): "
                 f"{fail.minimal}")

    def _write(self) -> None:
        (self.out_dir / "fuzz-summary.json").write_text(
            json.dumps(self.result.to_json(), indent=1))


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s"


def parse_duration(text: str) -> float:
    """'30m', '90s', '1h', '1h30m' or a number of seconds -> seconds (> 0)."""
    t = text.strip().lower()
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", t)
    if t and re.fullmatch(r"\d+(\.\d+)?", t):
        value = float(t)
    elif t and m and any(m.groups()):
        h, mi, s = (int(x or 0) for x in m.groups())
        value = float(h * 3600 + mi * 60 + s)
    else:
        raise ValueError(f"{text!r} is not a duration (e.g. 30m, 90s, 1h30m)")
    if not 0 < value <= 7 * 24 * 3600:
        raise ValueError(f"{text!r}: give a duration > 0 and at most a week")
    return value


def parse_weights(text: str) -> dict[str, int]:
    """'produce=5,kill=2' over the defaults; unknown kinds and bad numbers are errors."""
    kinds = step_kinds.generators()
    weights = {k: g.weight for k, g in kinds.items()}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{part!r}: give KIND=WEIGHT")
        if key not in kinds:
            raise ValueError(f"unknown step kind {key!r} (one of {', '.join(kinds)})")
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{part!r}: the weight must be a whole number") from None
        if not 0 <= n <= 1000:
            raise ValueError(f"{part!r}: give a weight of 0..1000")
        weights[key] = n
    if not any(weights.get(k, 0) for k in ("produce",)):
        raise ValueError("the produce weight must be > 0 (a schedule without records "
                         "checks no data)")
    return weights


# --- the real run ----------------------------------------------------------------------

def real_runner(build: Any, backend: str, runs_dir: Path, schedules_dir: Path,
                step_timeout_s: float, on_step: Callable[[Any], None] = lambda s: None) -> RunFn:
    """Each schedule written as a scenario file, loaded by `run`'s loader, run by the
    Runner on a fresh cluster and judged on every axis."""
    from harness.run.runner import Runner
    from harness.scenario.loader import load_scenario

    def run(name: str, seed: int, steps: Steps) -> Outcome:
        sc = load_scenario(_write_schedule(schedules_dir, name, seed, steps))
        return _outcome(Runner(sc, build, backend, runs_dir, step_timeout_s=step_timeout_s,
                               on_step=on_step).run())
    return run


def spark_runner(spark: Any, build: Any, backend: str, runs_dir: Path, schedules_dir: Path,
                 step_timeout_s: float) -> RunFn:
    """As real_runner, with each run a task on the Spark executors (harness.run.fanout)."""
    from harness.run.fanout import spec_for

    def run(name: str, seed: int, steps: Steps) -> Outcome:
        path = _write_schedule(schedules_dir, name, seed, steps)
        return _outcome(spark.run(spec_for(path, build, backend, runs_dir, None,
                                           step_timeout_s)))
    return run


def _write_schedule(schedules_dir: Path, name: str, seed: int, steps: Steps) -> Path:
    path = schedules_dir / f"{name}.yaml"
    path.write_text(scenario_yaml(name, seed, steps, "generated by kafka-chaos fuzz"))
    return path


def _outcome(result: Any) -> Outcome:
    from harness.judge.compare import ERROR
    if result.verdict == ERROR:
        return Outcome(None, result.reason or "ERROR", result.run_dir)
    return Outcome(signature(result.axes), None, result.run_dir,
                   reason=reasons(result.axes))


def target_predicate(build: Any, names: Sequence[str]) -> Callable[[Steps], bool]:
    """Whether a schedule's model, under the build's profile or kip966, parts from one of
    the named mutants' (mutate.predicted_kill): a run of it would exercise that rule."""
    from harness.run.runner import choose_profile
    from harness.scenario.loader import parse_scenario
    from harness.search.mutate import predicted_kill
    from reference.releases.catalog import get_profile
    from reference.releases.mutants import get_mutant
    mutants = [get_mutant(n) for n in names]

    def wanted(steps: Steps) -> bool:
        sc = parse_scenario(scenario_yaml("fuzz-target", 0, steps, cluster=CLUSTERS.current
                                          or fuzzgen.BASE_CLUSTER), "<fuzz-target>")
        profiles = [get_profile(choose_profile(sc, build, None)), get_profile("kip966")]
        return any(predicted_kill(sc, p, m) is not None for m in mutants for p in profiles)
    return wanted


class CampaignModels:
    """A campaign's models on one build: the runner's model of a generated cluster (its
    profile and ELR as a run of it would have them; one model per partition,
    harness/judge/lanes.py). Called without a cluster: the model of the schedule the
    campaign works on now (``CLUSTERS.current``; BASE before any)."""

    def __init__(self, build: Any) -> None:
        self.build = build
        self._scenarios: dict[fuzzgen.Cluster, tuple[Any, str, bool]] = {}

    @property
    def elr_choices(self) -> tuple[bool | None, ...]:
        """ELR on and off where the build can be formatted either way (4.0+), else its
        default (the build decides: `cluster.elr` on a build without it is refused)."""
        return (True, False) if self.build.features.elr else (None,)

    def _scenario(self, cluster: fuzzgen.Cluster) -> tuple[Any, str, bool]:
        from harness.run.runner import choose_profile, elr_enabled
        if cluster not in self._scenarios:
            sc = base_scenario("fuzz-model", cluster)
            self._scenarios[cluster] = (sc, choose_profile(sc, self.build, None),
                                        elr_enabled(sc, self.build))
        return self._scenarios[cluster]

    def for_cluster(self, cluster: fuzzgen.Cluster) -> Any:
        """The model of ``cluster``, under its traffic when it has some (the traffic goes
        on after every step: ``fuzzgen.UnderTraffic``)."""
        from harness.judge.lanes import lanes, single
        from harness.run.runner import Runner
        sc, profile, elr = self._scenario(dataclasses.replace(cluster, traffic=None))
        if single(sc):
            model = Runner.model_for(sc, profile, elr)
        else:
            model = fuzzgen.PartitionModels([Runner.model_for(ln.scenario, profile, elr)
                                             for ln in lanes(sc)])
        return fuzzgen.under_traffic(lambda: model, cluster.traffic)()

    def __call__(self) -> Any:
        return self.for_cluster(CLUSTERS.current or fuzzgen.BASE_CLUSTER)


def model_factory(build: Any) -> CampaignModels:
    """The runner's model of the base scenario on this build (profile and ELR as a run
    of it would have them), and of each generated cluster (``CampaignModels``)."""
    return CampaignModels(build)
