"""The scenario runner: each step runs on the real cluster and on the model in lockstep.

For every step: the model predicts the set of allowed settled states; the harness acts;
the observer polls (bounded) until the observed state is one the model allows or the
deadline passes. Each step gets a verdict (CONFORMS, DIVERGES with the first differing
field, UNSUPPORTED with the missing feature, ERROR for harness faults), recorded in the
history with the prediction and the observations. The first non-conforming step ends
the run: after it the model no longer knows the cluster's state.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from harness.client import admin, metadata_records
from harness.client.observe import ObserveError
from harness.client.session import Session, open_session
from harness.cluster.builds import Build, version_tuple
from harness.cluster.topology import ClusterShape
from harness.infra import procs, progress
from harness.infra.errors import HarnessError
from harness.infra.history import History, new_run_id, read_events
from harness.judge import trace_check
from harness.judge.axes import AXES, AxisVerdict, RunEvidence, judge_run
from harness.judge.compare import (
    CONFORMS,
    DIVERGES,
    ERROR,
    UNSUPPORTED,
    ack_mismatch,
    await_mismatch,
    consume_mismatch,
    hwm_hidden,
    model_for,
    observed_state,
    predicts_hwm_drop,
    quorum_unseen,
    run_data_checks,
    shape_of,
    with_checks,
    worst,
)
from harness.judge.headline import Headline, headline
from harness.judge.lanes import lane_events, merge_axes, merge_checks
from harness.judge.lockstep import Lockstep
from harness.judge.traffic import apply_traffic, hwm_bounded, hwm_drop_allowed, model_view
from harness.run import recovery
from harness.run.sampler import MIN_RATE, SampleObserver, Sampler
from harness.scenario import steps as step_kinds
from harness.scenario.loader import Scenario
from harness.scenario.steps import StepOutcome, Target
from reference.model.steps import Produce

DEFAULT_STEP_TIMEOUT_S = 30.0
#: How often a settling step looks at the cluster. Not a Kafka timeout: the latency of
#: noticing a settled state (each look is one metadata request over the observer's
#: untouched path, ~1-3 ms). Was 0.25 s; the steps a scenario waits on settle within
#: Kafka's own timeouts (config.TEST_FRIENDLY_BROKER), so a finer poll only ends the wait
#: sooner after they fire.
CONVERGE_POLL_S = 0.1
#: How long a step waits for an HWM the model says moved but the leader does not show yet
#: (runner._hwm_hidden): a follower reaches a new leader within its fetch backoff and
#: replica.fetch.wait.max.ms (1 s and 500 ms by default), so 5 s covers it with margin.
HWM_VISIBLE_WAIT_S = 5.0


@dataclass
class StepResult:
    index: int
    kind: str
    line: int | None
    predicted: str
    observed: str
    verdict: str
    reason: str = ""


@dataclass
class RunResult:
    scenario: str
    build: str
    run_dir: Path
    profile: str
    #: The step-wise lockstep result (settled states against the model), not the run's
    #: verdict: that is ``headline``.
    verdict: str
    steps: list[StepResult] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    wall_s: float = 0.0
    axes: dict[str, AxisVerdict] = field(default_factory=dict)

    @property
    def headline(self) -> Headline:
        """The run's verdict, from its three axes and the scenario's declarations
        (harness/judge/headline.py); ``verdict`` is the step-wise lockstep result only."""
        return headline(self.axes, self.verdict, self.reason)

    @property
    def as_expected(self) -> bool:
        """Every axis clean or as the scenario declares for this build; no ERROR."""
        return self.headline.passed


def step_mapping(step: Any) -> tuple[str, dict[str, Any], int | None]:
    """(kind, params, line) of a loaded scenario step, as written in the scenario file."""
    kind, params = next(iter(step.mapping.items()))
    return str(kind), dict(params or {}), step.line


def requirement_gap(scenario: Scenario, build: Build) -> str | None:
    """Why this build cannot run the scenario (its verdict is then UNSUPPORTED), or None."""
    req = scenario.requires
    low, high = _as_version(req.min_version), _as_version(req.max_version)
    if low and build.version_tuple < low:
        return f"needs Kafka >= {'.'.join(map(str, low))}, build is {build.version}"
    if high and build.version_tuple > high:
        return f"needs Kafka <= {'.'.join(map(str, high))}, build is {build.version}"
    missing = sorted(set(req.features) - build.features.names())
    if missing:
        return f"build {build.version} lacks feature(s): {', '.join(missing)}"
    if scenario.cluster.elr and not build.features.elr:
        return f"scenario wants ELR on; Kafka {build.version} has no ELR feature"
    return None


def _keep_scenario(scenario: Scenario, run_dir: Path) -> None:
    """The run directory carries the scenario it ran, so `audit` needs nothing else."""
    source = Path(str(getattr(scenario, "path", "") or ""))
    if source.is_file():
        shutil.copyfile(source, run_dir / "scenario.yaml")


def _as_version(value: Any) -> tuple[int, int, int] | None:
    if not value:
        return None
    if isinstance(value, str):
        return version_tuple(value)
    major, minor, patch = tuple(value)[:3]
    return int(major), int(minor), int(patch)


def elr_enabled(scenario: Scenario, build: Build) -> bool:
    if not build.features.elr:
        return False
    wanted = scenario.cluster.elr
    return build.features.elr_default_on if wanted is None else bool(wanted)


def choose_profile(scenario: Scenario, build: Build, override: str | None) -> str:
    from reference import profile_for_build
    if override:
        return override
    if scenario.profile and scenario.profile != "auto":
        return str(scenario.profile)
    return str(profile_for_build(build.version_tuple, elr_enabled(scenario, build)))


class Runner:
    def __init__(self, scenario: Scenario, build: Build, backend: str = "local",
                 runs_dir: Path = Path("runs"), profile: str | None = None,
                 step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
                 on_step: Callable[[StepResult], None] | None = None) -> None:
        self.scenario, self.build, self.backend = scenario, build, backend
        self.runs_dir, self.step_timeout_s = runs_dir, step_timeout_s
        self.profile = choose_profile(scenario, build, profile)
        self.on_step = on_step or (lambda r: None)
        self._events: list[dict[str, Any]] = []
        #: Each lane's data checks (datachecks.CheckResult lists), once the run has read.
        self._raw_checks: list[list[Any]] | None = None
        self._data_dirs: dict[int, Path] = {}
        #: Whether the metadata log was archived while the cluster ran (before a recovery).
        self._archived = False
        #: The quorum epoch when the current step started; the controller the latest
        #: ``active`` resolved to (several controllers only).
        self._epoch_before: int | None = None
        self._last_active: int | None = None
        #: The run's producers and consumers and their traffic.jsonl (a scenario with
        #: traffic only).
        self._traffic: Any = None
        self._traffic_writer: Any = None
        self.lockstep = Lockstep(scenario, self.profile, elr_enabled(scenario, build),
                                 lambda pred, outcome: ack_mismatch(pred, outcome)
                                 or consume_mismatch(pred, outcome), self.model_for)

    @property
    def model(self) -> Any:
        """Partition 0's model (the only one of a one-partition topic)."""
        return self.lockstep.first

    model_for = staticmethod(model_for)

    def shape(self) -> ClusterShape:
        return shape_of(self.scenario)

    # -- the run ------------------------------------------------------------------------
    def run(self) -> RunResult:
        sc = self.scenario
        run_dir = self.runs_dir / new_run_id(sc.name)
        history = History(run_dir)
        history.update(scenario={"name": sc.name, "file": str(getattr(sc, "path", "") or "")},
                       build=self.build.describe(), backend=self.backend, seed=sc.seed,
                       profile=self.profile)
        _keep_scenario(sc, run_dir)
        result = RunResult(sc.name, self.build.version, run_dir, self.profile, CONFORMS)
        t0 = time.monotonic()
        try:
            gap = requirement_gap(sc, self.build)
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

    def _judge_axes(self, history: History, result: RunResult) -> None:
        """The release verdict is the lockstep run's; kip, safety and the trace are judged
        here, lane by lane, as `audit` judges them offline (judges.judge_run)."""
        logs = trace_check.read_logs(history.run_dir)
        trace_under = trace_check.memo(logs, self.scenario, self._events,
                                       elr_enabled(self.scenario, self.build))
        per_lane = []
        for i, lm in enumerate(self.lockstep.lanes):
            release = AxisVerdict("release", result.verdict, result.reason)
            evidence = RunEvidence(lm.lane.scenario, self.build.version_tuple,
                                   lane_events(self._events, self.scenario, lm.lane),
                                   None if self._raw_checks is None else self._raw_checks[i],
                                   trace_under, trace_check.SAFETY_RULES)
            per_lane.append((lm.lane, judge_run(release, lm.model.profile, lm.kip, evidence)))
        result.axes = merge_axes(per_lane)
        verdict = apply_traffic(result.axes, history.run_dir, self.scenario, self._events)
        if verdict is not None:
            history.update(traffic={**(history.meta.get("traffic") or {}),
                                    "checks": verdict.to_json()})
        for finding in result.axes["release"].details:
            history.record("trace", profile=self.profile, **finding)
        for axis in AXES:
            history.record("axis", **result.axes[axis].to_json())
        history.update(axes={a: result.axes[a].to_json() for a in AXES},
                       trace=trace_check.describe(result.axes["release"].details, logs),
                       headline=result.headline.to_json())

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

    def _archive_metadata(self, history: History) -> None:
        """After teardown every committed record is on disk: the trace's evidence. A copy
        that fails is said, never raised over the run's own outcome."""
        try:
            metadata_records.archive(history.run_dir, self._data_dirs)
        except OSError as exc:
            progress.say(f"metadata log not archived ({exc}): the trace cannot be judged")

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

    def _recovery_read(self, session: Session, history: History,
                       checks: list[dict[str, Any]]) -> None:
        """Acked records the final read missed: heal the cluster and look again, to tell
        lost from hidden (run/recovery.py). The trace is judged on what the schedule did,
        so the metadata log is archived before the recovery writes to it."""
        unread = recovery.unread_acks_all(checks)
        if not unread:
            return
        self._archive_metadata(history)
        self._archived = True
        try:
            recovery.recover_and_reread(session, unread)
        except Exception as exc:  # noqa: BLE001 - evidence lost; the run's verdicts stand
            history.record("recovery", error=f"{type(exc).__name__}: {exc}")
            progress.say(f"recovery read failed ({type(exc).__name__}: {exc}): the records "
                         "the final read missed count as lost")
        self._events = list(read_events(history.run_dir))

    def _start_traffic(self, session: Session, history: History) -> None:
        """The scenario's producers and consumers, recording into the run's traffic.jsonl
        (harness/client/traffic.py): those without ``from`` start now, the others after
        their step (``_traffic_between``)."""
        spec = self.scenario.traffic
        if spec is None:
            return
        from harness.client.traffic import Traffic
        from harness.traffic.history import TrafficWriter
        sizes = {t.name: t.partitions for t in self.scenario.every_topic()}
        self._traffic_writer = TrafficWriter(history.run_dir, history.run_id)
        self._traffic = Traffic(spec, session.cluster, self._traffic_writer, sizes.__getitem__)
        history.record("traffic", phase="start", spec=spec.to_json())
        self._traffic.start(None)

    def _traffic_between(self, index: int, history: History) -> None:
        """After step ``index``: the traffic clients whose window ends with it stop, those
        whose window starts after it start (FORMAT.md "Traffic")."""
        if self._traffic is None:
            return
        stopped, started = self._traffic.between(index)
        if stopped or started:
            history.record("traffic", phase="clients", after_step=index, stopped=stopped,
                           started=started)
            progress.say(f"traffic after step {index + 1}: "
                         + "; ".join(f"{what} {', '.join(names)}" for what, names in
                                     (("stopped", stopped), ("started", started)) if names))

    def _stop_traffic(self, history: History) -> None:
        """Stop the producers and consumers (bounded); the writer stays open for the final
        read, and is closed by it (or here, if the run ends before it)."""
        if self._traffic is None:
            return
        try:
            problems = self._traffic.stop()
            summary = self._traffic.summary()
            history.record("traffic", phase="stop", problems=problems, **summary)
            history.update(traffic={"summary": summary, "problems": problems})
            progress.say(f"traffic: {summary['sent']} sent, {summary['acked']} acked "
                         f"({summary['acked_all_per_s']}/s acks=all), {summary['failed']} "
                         f"failed, {summary['polled']} polled in {summary['seconds']} s")
        finally:
            self._traffic = None

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
            config = {"min.insync.replicas": str(topic.min_insync_replicas),
                      **{k: str(v) for k, v in dict(topic.config).items()}}
            admin.create_topic(session.observer, topic.name, list(topic.replicas), config,
                               [list(r) for r in topic.assignment[1:]])
        for lm in self.lockstep.lanes:
            self._poll(session, lm.lane.topic, lm.lane.partition,
                       _fully_replicated(lm.lane.scenario.topic.replicas), self.step_timeout_s)

    def _run_step(self, session: Session, history: History, result: RunResult, index: int,
                  loaded: Any) -> str:
        kind, params, line = step_mapping(loaded)
        step_kind = step_kinds.KINDS[kind]
        ls = self.lockstep
        count = step_kind.records(loaded.step) * len(ls.targeted(index))
        ids = session.workload.next_ids(count) if count else []
        if ids:
            params = {**params, "record_ids": ids}
        step, resolved, self._epoch_before = self._quorum_at_start(session, loaded.step)
        if resolved:
            params = {**params, "resolved": resolved}
        steps = ls.steps_at(index, step, ids)
        # The epoch the step's quorum_elected is judged against, recorded: when DescribeQuorum
        # could not be answered it is None, and audit must not take an older recorded one.
        at_start = ({"quorum_epoch_at_start": self._epoch_before}
                    if len(self.shape().controller_ids) > 1 else {})
        history.record("step", index=index, phase="start", step={kind: params}, line=line,
                       **at_start)
        preds = ls.apply(steps)
        # Under traffic the model then sees the traffic go on (judge/traffic.py tick_step):
        # ``settled`` is what the observation is compared with; ``preds`` the step's own
        # (its acks).
        ticks = ls.ticks(index)
        settled = _settled_predictions(preds, ls.apply_ticks(ticks, preds))
        self._record_predictions(history, index, settled)
        progress.say(f"step {index + 1}/{len(self.scenario.steps)} {kind} "
                     f"{ {k: v for k, v in params.items() if k != 'record_ids'} }: "
                     f"expecting {self._summary(settled)}")
        summary = self._summary(settled)
        unsupported = next((p.unsupported for p in preds if p.unsupported), None)
        if unsupported:
            return self._finish_step(history, result, StepResult(
                index, kind, line, summary, "-", UNSUPPORTED, unsupported))
        outcomes = self._execute(session, index, kind, steps)
        unsupported = next((o.unsupported for o in outcomes if o.unsupported), None)
        if unsupported:
            return self._finish_step(history, result, StepResult(
                index, kind, line, summary, "-", UNSUPPORTED, unsupported))
        if not step_kind.settles(step):
            # Not waited for (restart wait: false): its prediction is checked by the steps
            # after it, on the model's branches it leaves; nothing is observed here.
            ls.kip_step(index, steps, None, outcomes, ticks)
            history.record("step", index=index, phase="end", step={kind: params}, line=line)
            return self._finish_step(history, result, StepResult(
                index, kind, line, summary, "-", CONFORMS,
                "not waited for: the next steps check it"))
        timeout = float(params.get("timeout_s", self.step_timeout_s))
        observed, why, blind = self._converge(session, settled, ls.expects(index), timeout,
                                              index)
        if why is not None:
            progress.say(f"step {index + 1} did not settle in {timeout:g} s: {why}; last "
                         f"observed {_unsettled(observed)}")
        reason = why or self._outcome_mismatch(preds, outcomes)
        states = None if observed is None else self._views(index, observed)
        if states is not None and reason is None:
            ls.resolve(states, outcomes)
        if not blind:
            ls.kip_step(index, steps, states, outcomes, ticks)
        history.record("step", index=index, phase="end", step={kind: params}, line=line)
        # A cluster the observer could not see at the deadline is a harness fault, not
        # evidence against the broker.
        verdict = CONFORMS if reason is None else ERROR if blind else DIVERGES
        return self._finish_step(history, result, StepResult(
            index, kind, line, summary, self._fmt(observed), verdict, reason or ""))

    def _execute(self, session: Session, index: int, kind: str, steps: list[Any]
                 ) -> list[Any]:
        """Each lane's outcome: a step on partitions runs once per partition it names (the
        others' outcome is empty), any other step once, its outcome every lane's."""
        if not step_kinds.KINDS[kind].on_partitions:
            topic = self.scenario.steps[index].topic or self.scenario.topic.name
            outcome = step_kinds.execute(session, Target(topic), kind,
                                         steps[self._first_named(index)])
            return [outcome] * len(steps)
        targeted = self.lockstep.targeted(index)
        runs = {i: partial(step_kinds.execute, session, Target(lm.lane.topic, lm.lane.partition),
                           kind, s)
                for i, (lm, s) in enumerate(zip(self.lockstep.lanes, steps, strict=True))
                if lm.lane in targeted}
        if step_kinds.KINDS[kind].concurrent and len(runs) > 1:
            with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix=kind) as pool:
                done = dict(zip(runs, pool.map(lambda run: run(), runs.values()), strict=True))
        else:
            done = {i: run() for i, run in runs.items()}
        return [done.get(i, StepOutcome()) for i in range(len(steps))]

    def _first_named(self, index: int) -> int:
        """The lane whose step ``index`` a step run once executes (a step on one topic: the
        first lane of that topic; the others' is an empty await)."""
        (lane,) = self.lockstep.targeted(index)
        return next(i for i, lm in enumerate(self.lockstep.lanes) if lm.lane == lane)

    def _outcome_mismatch(self, preds: list[Any], outcomes: list[Any]) -> str | None:
        for lm, pred, outcome in zip(self.lockstep.lanes, preds, outcomes, strict=True):
            why = ack_mismatch(pred, outcome) or consume_mismatch(pred, outcome)
            if why is not None:
                return self.lockstep.said(lm, why)
        return None

    def _quorum_at_start(self, session: Session, step: Any
                         ) -> tuple[Any, dict[str, int], int | None]:
        """With several controllers: the quorum epoch when the step starts (a step's
        ``quorum_elected`` is whether it changed) and the step with its controller roles
        (``active``, ``last_active``, ``follower``) replaced by ids, ``active`` being
        DescribeQuorum's leader now (polled, bounded, until there is one)."""
        if len(self.shape().controller_ids) < 2:
            return step, {}, None
        from harness.infra.wait import until
        from reference.model.steps import ACTIVE, FOLLOWER, ROLES

        roles = {f.name: getattr(step, f.name) for f in dataclasses.fields(step)
                 if getattr(step, f.name) in ROLES}

        def ask() -> dict[str, Any] | None:
            try:
                q = session.observer.quorum()
            except ObserveError:
                return None
            return q if q["leader"] is not None and q["leader"] >= 0 else None

        if {ACTIVE, FOLLOWER} & set(roles.values()):
            q = until(ask, lambda x: x is not None, "an active controller (DescribeQuorum)",
                      self.step_timeout_s)
        else:
            q = ask()
        epoch = None if q is None else q["leader_epoch"]
        if not roles:
            return step, {}, epoch
        resolved: dict[str, int] = {}
        for name, role in roles.items():
            if role == ACTIVE:
                assert q is not None
                resolved[name] = int(q["leader"])
                self._last_active = resolved[name]
            elif role == FOLLOWER:
                assert q is not None
                resolved[name] = min(c for c in self.shape().controller_ids
                                     if c != q["leader"])
            elif self._last_active is None:
                raise HarnessError(f"{name}: last_active names no controller: no earlier step "
                                   "named active")
            else:
                resolved[name] = self._last_active
        concrete = dataclasses.replace(step, **resolved)
        # Said as the scenario file names them (a controller step's ``controller``).
        was = step.params()
        return concrete, {k: v for k, v in concrete.params().items() if was.get(k) != v}, epoch

    def _observe(self, session: Session) -> list[dict[str, Any]]:
        """Each partition's state, with whether the quorum held an election during the step
        (its epoch moved since the step started)."""
        with session.observer.one_look():
            states = [session.observer.partition_state(lm.lane.topic, lm.lane.partition)[0]
                      for lm in self.lockstep.lanes]
        for state in states:
            epoch = state.get("quorum_epoch")
            if self._epoch_before is not None and epoch is not None:
                state["quorum_elected"] = epoch != self._epoch_before
        return states

    def _views(self, index: int | None, observed: list[dict[str, Any]]) -> list[Any]:
        """Each lane's observation of step ``index`` as the model compares it (under
        traffic without the HWM once its topic's producers have started: judge/traffic.py
        ``model_view``; ``index`` None: whenever the run has traffic)."""
        return [observed_state(model_view(o, self.scenario, index, lm.lane.topic))
                for lm, o in zip(self.lockstep.lanes, observed, strict=True)]

    def _converge(self, session: Session, preds: list[Any],
                  expected: list[Mapping[str, Any]], timeout_s: float,
                  index: int | None = None
                  ) -> tuple[list[dict[str, Any]] | None, str | None, bool]:
        """Poll until every partition's observation is allowed. On timeout: the last
        observations, the model's explanation, and whether the last poll could not observe
        at all."""
        last: list[dict[str, Any]] | None = None
        deadline = time.monotonic() + timeout_s
        hwm_deadline = time.monotonic() + min(timeout_s, HWM_VISIBLE_WAIT_S)
        while True:
            blind = False
            try:
                last = self._observe(session)
                why = self.lockstep.explain(self._views(index, last)) \
                    or self._await_mismatches(expected, last) \
                    or next(filter(None, (_not_started(session, e) for e in expected)), None)
                pairs = list(zip(preds, last, strict=True))
                if why is None and any(quorum_unseen(p, o) for p, o in pairs):
                    why, blind = ("controller: DescribeQuorum not answered (the prediction "
                                  "names an active controller)"), True
                # Where the HWM is judged by bounds (traffic) it is never waited for.
                hidden = any(hwm_hidden(p, o) for p, o, lm in zip(
                    preds, last, self.lockstep.lanes, strict=True)
                    if not hwm_bounded(self.scenario, index, lm.lane.topic))
                if why is None and not (hidden and time.monotonic() < hwm_deadline):
                    return last, None, False
            except ObserveError as exc:
                why, blind = f"no current broker could be observed: {exc}", True
            if time.monotonic() >= deadline:
                return last, why, blind
            time.sleep(CONVERGE_POLL_S)
            procs.check_interrupted()

    def _await_mismatches(self, expected: list[Mapping[str, Any]],
                        observed: list[dict[str, Any]]) -> str | None:
        for lm, want, got in zip(self.lockstep.lanes, expected, observed, strict=True):
            why = await_mismatch(want, got)
            if why is not None:
                return self.lockstep.said(lm, why)
        return None

    def _poll(self, session: Session, topic: str, partition: int,
              ok: Callable[[dict[str, Any]], bool], timeout_s: float) -> dict[str, Any]:
        from harness.infra.wait import until

        def observe() -> dict[str, Any] | None:
            try:
                return session.observer.partition_state(topic, partition)[0]
            except ObserveError:
                return None
        state = until(observe, lambda st: st is not None and ok(st),
                      f"initial state of {topic}-{partition}",
                      timeout_s, CONVERGE_POLL_S)
        assert state is not None
        return state

    def _summary(self, preds: list[Any]) -> str:
        return self.lockstep.grouped([_summary(p) for p in preds])

    def _fmt(self, observed: list[dict[str, Any]] | None) -> str:
        if observed is None:
            return _fmt(None)
        return self.lockstep.grouped([_fmt(o) for o in observed])

    def _record_predictions(self, history: History, index: int, preds: list[Any]) -> None:
        for lm, pred in zip(self.lockstep.lanes, preds, strict=True):
            if self.lockstep.multi:
                self._record_prediction(history, index, pred, topic=lm.lane.topic,
                                        partition=lm.lane.partition)
            else:
                self._record_prediction(history, index, pred)

    def _record_prediction(self, history: History, index: int, pred: Any,
                           **where: Any) -> None:
        history.record("prediction", index=index, profile=self.profile, **where,
                       allowed=[s.to_json() for s in pred.allowed],
                       must_survive=sorted(pred.must_survive), hwm_may_move=pred.hwm_may_move,
                       expected_acks=pred.expected_acks, unsupported=pred.unsupported)

    def _finish_step(self, history: History, result: RunResult, step: StepResult) -> str:
        history.record("verdict", index=step.index, verdict=step.verdict, reason=step.reason,
                       field=step.reason.split(":", 1)[0]
                       if step.verdict == DIVERGES and step.reason else None)
        result.steps.append(step)
        self.on_step(step)
        return step.verdict

    def _data_checks(self, history: History, session: Session) -> list[dict[str, Any]]:
        """Final read of every visible record, then the data checks over the whole history."""
        from harness.infra.history import read_events
        traffic = self._traffic_writer is not None
        if traffic:
            self._final_read_with_traffic(history, session)
        for lm in self.lockstep.lanes if not traffic else ():
            try:
                session.workload.consume_all(lm.lane.topic, lm.lane.partition)
            except Exception as exc:  # noqa: BLE001 - a partition with no leader: nothing to read
                progress.say(f"final read of {lm.lane.label} failed: {exc}")
        from harness.judge import datachecks
        events = list(read_events(history.run_dir))
        self._events, self._raw_checks = events, []
        per_lane = []
        for lm in self.lockstep.lanes:
            mine = lane_events(events, self.scenario, lm.lane)
            raw = datachecks.run_checks(mine)
            self._raw_checks.append(raw)
            per_lane.append((lm.lane, run_data_checks(
                raw, lm.model, predicts_hwm_drop(mine) or hwm_drop_allowed(self.scenario, mine))))
        checks = merge_checks(per_lane)
        for check in checks:
            history.record("check", **check)
        return checks

    def _final_read_with_traffic(self, history: History, session: Session) -> None:
        """One full re-read of every partition into traffic.jsonl (final_read lines); the
        scenario's own records it finds are also the history's consume events, closed by a
        read event per partition, as the data checks read them."""
        from harness.client.traffic import final_read
        from harness.infra.history import read_events
        writer, self._traffic_writer = self._traffic_writer, None
        own = {e["record_id"] for e in read_events(history.run_dir) if e["kind"] == "produce"}
        counts: dict[tuple[str, int], int] = {}
        # The whole read's skips (the data checks' gaps: its consume events are the
        # scenario's own records only, with the traffic's between them).
        last: dict[tuple[str, int], int] = {}
        gaps: dict[tuple[str, int], list[dict[str, int]]] = {}

        def seen(topic: str, partition: int, offset: int, rid: str) -> None:
            tp = (topic, partition)
            if tp in last and offset != last[tp] + 1:
                gaps.setdefault(tp, []).append({"after": last[tp], "next": offset})
            last[tp] = offset
            if rid in own:
                counts[(topic, partition)] = counts.get((topic, partition), 0) + 1
                history.record("consume", record_id=rid, topic=topic, partition=partition,
                               offset=offset)
        try:
            lanes = [(lm.lane.topic, lm.lane.partition) for lm in self.lockstep.lanes]
            done = final_read(session.cluster, writer, lanes, on_record=seen)
            for (topic, partition), complete in done.items():
                history.record("read", topic=topic, partition=partition,
                               records=counts.get((topic, partition), 0), complete=complete,
                               gaps=gaps.get((topic, partition), []))
        except Exception as exc:  # noqa: BLE001 - said; the checks judge an incomplete read
            progress.say(f"final read with traffic failed: {exc}")
        finally:
            writer.close()


def _settled_predictions(preds: list[Any], ticked: list[Any]) -> list[Any]:
    """Each lane's prediction to compare the observation with: after the traffic's tick
    where there is one, with the step's own expected acks and unsupported reason."""
    return [p if t is p else dataclasses.replace(t, expected_acks=p.expected_acks,
                                                 unsupported=p.unsupported)
            for p, t in zip(preds, ticked, strict=True)]


def _fully_replicated(replicas: tuple[int, ...]) -> Callable[[dict[str, Any]], bool]:
    """A new partition's first settled state: every replica in the ISR, the first leads."""
    return lambda st: set(st["isr"]) == set(replicas) and st["leader"] == replicas[0]


def _not_started(session: Session, expected: Mapping[str, Any]) -> str | None:
    """An await's ``ready`` brokers whose last restart has not finished starting their
    server (its "Kafka Server started": registered, then unfenced by the controller)."""
    waiting = [b for b in expected.get("ready", ()) if not session.faults.started(int(b))]
    return f"ready: brokers {waiting} still starting" if waiting else None


def _summary(pred: Any) -> str:
    if not pred.allowed:
        return "-"
    return " | ".join(_fmt(s.to_json()) for s in pred.allowed[:3]) + (
        f" (+{len(pred.allowed) - 3})" if len(pred.allowed) > 3 else "")


#: What a step that did not settle prints of its last observation beside the short form:
#: the fields that say why a fault had no effect (who leads the quorum, whether it changed
#: during the step, who is fenced) for a failure seen only in a CI log.
_UNSETTLED_FIELDS = ("leader", "leader_epoch", "isr", "elr", "fenced", "hwm", "controller",
                     "quorum_epoch", "quorum_elected")


def _unsettled(observed: list[dict[str, Any]] | None) -> str:
    if observed is None:
        return "nothing (the observer saw no broker)"
    return "; ".join(", ".join(f"{k}={o[k]}" for k in _UNSETTLED_FIELDS if k in o)
                     for o in observed)


def _fmt(state: Mapping[str, Any] | None) -> str:
    if state is None:
        return "-"
    parts = [f"L={state.get('leader')}", f"ISR={_ids(state.get('isr'))}"]
    if state.get("elr") is not None:
        parts.append(f"ELR={_ids(state.get('elr'))}")
    if state.get("last_known_elr"):
        parts.append(f"LKE={_ids(state.get('last_known_elr'))}")
    if state.get("hwm") is not None:
        parts.append(f"HWM={state.get('hwm')}")
    return " ".join(parts)


def _ids(ids: Any) -> str:
    return "[" + ",".join(str(i) for i in sorted(ids or [])) + "]"
