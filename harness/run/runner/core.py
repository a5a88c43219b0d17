"""The Runner: one run from its start (run.json, the scenario's copy, the requirement gap,
the session, the topics) through the step loop (with the sampler and the traffic's windows)
to the final read and the verdicts. Each job it calls is its own module of this package."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from harness.client import admin
from harness.client.session import Session, open_session
from harness.infra import procs, progress
from harness.infra.errors import HarnessError
from harness.infra.history import History, new_run_id
from harness.judge.compare import CONFORMS, ERROR, UNSUPPORTED, with_checks, worst
from harness.run.runner.birth import birth_builds, birth_gap, check_birth, check_log_dirs
from harness.run.runner.final_read import FinalReadMixin
from harness.run.runner.judging import JudgingMixin
from harness.run.runner.requirements import requirement_gap, step_builds
from harness.run.runner.results import RunResult, StepResult
from harness.run.runner.settle import _fully_replicated
from harness.run.runner.step import StepMixin, _settled_predictions, step_mapping
from harness.run.runner.tiered import check_tiered, tiered_gap
from harness.run.runner.traffic import TrafficMixin
from harness.run.sampler import MIN_RATE, SampleObserver, Sampler
from harness.scenario import steps as step_kinds
from harness.scenario.loader import Scenario
from reference.model.steps import Produce


def _keep_scenario(scenario: Scenario, run_dir: Path) -> None:
    """The run directory carries the scenario it ran, so `audit` needs nothing else."""
    source = Path(str(getattr(scenario, "path", "") or ""))
    if source.is_file():
        shutil.copyfile(source, run_dir / "scenario.yaml")


class Runner(StepMixin, TrafficMixin, FinalReadMixin, JudgingMixin):
    """Runs one scenario on one build: ``run()`` returns its RunResult."""

    # -- the run ------------------------------------------------------------------------
    def run(self) -> RunResult:
        sc = self.scenario
        run_dir = self.runs_dir / new_run_id(sc.name)
        history = History(run_dir)
        history.update(scenario={"name": sc.name, "file": str(getattr(sc, "path", "") or "")},
                       build=self.build.describe(), backend=self.backend, seed=sc.seed,
                       profile=self.profile)
        if self.follow_builds:
            history.update(profile_follows_builds=True)
        _keep_scenario(sc, run_dir)
        result = RunResult(sc.name, self.build.version, run_dir, self.profile, CONFORMS)
        t0 = time.monotonic()
        try:
            step_builds(sc)  # every build a step names, resolved before any cluster starts
            born = birth_builds(sc)  # and every build a node is born on
            gap = (requirement_gap(sc, self.build) or birth_gap(sc, self.backend)
                   or tiered_gap(sc, self.backend))
            if not gap:
                # Several log dirs on a build before 3.7 the file did not declare out of
                # range (requires.min_version): a file:line ERROR, no cluster started.
                check_log_dirs(sc, self.build, born)
                check_birth(sc, self.build, born)  # the builds' tools take the birth
                check_tiered(sc, self.build)  # a build with KIP-405, its RSM jar fetched
            if gap:
                self._predict_only(history, result, gap)
            else:
                self._run_on_cluster(history, result)
        except HarnessError as exc:
            result.verdict, result.reason = ERROR, str(exc)
        except Exception as exc:  # noqa: BLE001 - a harness fault: ERROR, never blamed on Kafka
            result.verdict, result.reason = ERROR, f"{type(exc).__name__}: {exc}"
        except BaseException:
            history.close(ERROR)
            raise
        result.wall_s = time.monotonic() - t0
        history.meta["timings"]["run_s"] = round(result.wall_s, 2)
        if result.verdict != ERROR:
            result.verdict, result.reason = with_checks(
                worst([s.verdict for s in result.steps]), result.reason, result.checks)
        history.record("verdict", index=None, verdict=result.verdict, reason=result.reason,
                       field=None)
        self._judge_axes(history, result)
        history.close(result.verdict)
        return result

    def _predict_only(self, history: History, result: RunResult, gap: str) -> None:
        """UNSUPPORTED: the history still holds the model's predicted timeline."""
        progress.say(f"{self.scenario.name}: UNSUPPORTED on Kafka {self.build.version}: {gap}")
        result.reason = gap
        for index, loaded in enumerate(self.scenario.steps):
            kind, params, line = step_mapping(loaded)
            count = step_kinds.KINDS[kind].records(loaded.step)
            ids = [f"predicted-{index}-{ln.label}-{i}" if self.lockstep.multi
                   else f"predicted-{index}-{i}"
                   for ln in self.lockstep.targeted(index) for i in range(count)]
            steps = self.lockstep.steps_at(index, loaded.step, ids)
            preds = self.lockstep.apply(steps)
            preds = _settled_predictions(
                preds, self.lockstep.apply_ticks(self.lockstep.ticks(index), preds))
            self._record_predictions(history, index, preds)
            self._finish_step(history, result, StepResult(
                index, kind, line, self._summary(preds), "-", UNSUPPORTED, gap))

    def _run_on_cluster(self, history: History, result: RunResult) -> None:
        controllers = self.shape().controller_ids
        try:
            with open_session(self.build, self.shape(), history.run_dir, self.backend,
                              history=history) as session:
                self._data_dirs = {c: session.cluster.data_dir(c) for c in controllers}
                self._steps_on_cluster(session, history, result)
        finally:
            if self._traffic_writer is not None:  # the run ended before its final read
                self._traffic_writer.close()
                self._traffic_writer = None
            if not self._archived:  # a recovery archives it before it heals the cluster
                self._archive_metadata(history)

    def _steps_on_cluster(self, session: Session, history: History, result: RunResult) -> None:
        for acks in self._acks_used():
            session.workload.warm(acks)
        self._create_topic(session)
        self._start_traffic(session, history)
        try:
            self._schedule(session, history, result)
        finally:
            self._stop_traffic(history)
        session.observer.answers.check_foreign()
        traffic = self._traffic_writer is not None
        result.checks = self._data_checks(history, session)
        if not traffic:
            self._recovery_read(session, history, result.checks)

    def _schedule(self, session: Session, history: History, result: RunResult) -> None:
        sampler = self._sampler(session, history)
        sampler.start()
        try:
            for index, step in enumerate(self.scenario.steps):
                procs.check_interrupted()
                sampler.step(index)
                verdict = self._run_step(session, history, result, index, step)
                # An answer from another cluster, even one the sampler took and dropped,
                # makes the run an ERROR: nothing observed after it can be trusted.
                session.observer.answers.check_foreign()
                if verdict != CONFORMS:
                    result.reason = result.steps[-1].reason
                    break
                self._traffic_between(index, history)
        finally:
            sampler.step(None)
            rate = sampler.stop()
            below = (f", {rate['steps_below_min_rate']} below {MIN_RATE:g}/s"
                     if rate["steps_below_min_rate"] else "")
            progress.say(f"sampled {rate['samples']} states at {rate['rate_per_s']}/s "
                         f"(slowest step {rate['slowest_step_rate_per_s']}/s{below}), "
                         f"{rate['violations']} invariant violation(s)")

    def _acks_used(self) -> list[str]:
        return sorted({s.step.acks for s in self.scenario.steps if isinstance(s.step, Produce)})

    def _sampler(self, session: Session, history: History) -> Sampler:
        """Checks on every step: the state sampled while steps run (harness/run/sampler.py)."""
        from harness.client.session import current_brokers
        observer = SampleObserver(session.cluster,
                                  lambda: current_brokers(session.cluster, session.faults))
        return Sampler(observer, history,
                       [(lm.lane.topic, lm.lane.partition) for lm in self.lockstep.lanes])

    def _create_topic(self, session: Session) -> None:
        for topic in self.scenario.every_topic():
            have = topic.initial_partitions()  # the others a step creates
            if not have:
                continue
            config = {"min.insync.replicas": str(topic.min_insync_replicas),
                      **{k: str(v) for k, v in dict(topic.config).items()}}
            admin.create_topic(session.observer, topic.name, list(topic.replicas), config,
                               [list(topic.replicas_of(p)) for p in range(1, have)])
        for lm in self.lockstep.lanes:
            if lm.lane.scenario.topic.born_at(0) is not None:
                continue
            self._poll(session, lm.lane.topic, lm.lane.partition,
                       _fully_replicated(lm.lane.scenario.topic.replicas), self.step_timeout_s)
