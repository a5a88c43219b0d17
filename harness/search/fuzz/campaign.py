"""The campaign loop (``Campaign``): generated schedules run ``width`` at a time until
the run count or the budget is spent, model-guided selection (--guided, --target),
failures de-duplicated by signature, re-run to tell a reproducible one from a flaky one,
and shrunk (harness/search/shrink.py) to a minimal scenario beside the failing run."""

from __future__ import annotations

import functools
import itertools
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness.run.parallel import run_all
from harness.search.fuzz.config import CampaignConfig
from harness.search.fuzz.outcome import Outcome, RunFn, prefer_for, signature_text
from harness.search.fuzz.result import CampaignResult, Failure
from harness.search.fuzz.scenario import scenario_yaml
from harness.search.fuzz.schedules import models_of, repairer, schedule, schedule_seed
from harness.search.shrink import Signature, Steps, shrink
from reference.search import fuzzgen

MAX_GUIDED_SKIPS = 5000


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
                                       "error": out.error}
                                      | ({"birth": out.birth} if out.birth else {}))
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
        born = f", born on {out.birth}" if out.birth else ""
        if out.birth:
            self.result.births[name] = out.birth
        self.say(f"fuzz: {name} ({len(steps)} steps{born}, {out.seconds:.0f} s): {what}")
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
