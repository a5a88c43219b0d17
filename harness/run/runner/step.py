"""One step on the cluster: resolve its controller roles from the quorum, record its start
and the model's prediction, execute it on every lane it targets, settle it and give its
verdict."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from harness.client.observe import ObserveError
from harness.client.session import Session
from harness.infra import progress
from harness.infra.errors import HarnessError
from harness.infra.history import History
from harness.judge.compare import (
    CONFORMS,
    DIVERGES,
    ERROR,
    UNSUPPORTED,
    ack_mismatch,
    consume_mismatch,
    refusal_mismatch,
)
from harness.run.runner.logdirs import log_dirs_at
from harness.run.runner.record import RecordMixin, _unsettled
from harness.run.runner.results import RunResult, StepResult
from harness.run.runner.settle import SettleMixin
from harness.run.runner.storage import StorageMixin
from harness.run.runner.traffic import topic_life
from harness.scenario import steps as step_kinds
from harness.scenario.steps import StepOutcome, Target


def step_mapping(step: Any) -> tuple[str, dict[str, Any], int | None]:
    """(kind, params, line) of a loaded scenario step, as written in the scenario file."""
    kind, params = next(iter(step.mapping.items()))
    return str(kind), dict(params or {}), step.line


class StepMixin(SettleMixin, RecordMixin, StorageMixin):
    """One scenario step on the cluster, judged against the model in lockstep."""

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
        life_topic = self.scenario.steps[index].topic or self.scenario.topic.name
        topic_life(self._traffic, history, kind, life_topic, "requested")
        outcomes = self._execute(session, index, kind, steps, step)
        if any("refused" in (o.note or "") for o in outcomes):
            topic_life(self._traffic, history, kind, life_topic, "refused")
        # What the execution said besides cluster state (a refusal, a tool's answer): on
        # the step's end event, for the audit and the finding draft.
        noted = {"notes": notes} if (notes := _notes(outcomes)) else {}
        for note in notes:
            progress.say(f"  note: {note}")
        unsupported = next((o.unsupported for o in outcomes if o.unsupported), None)
        if unsupported:
            return self._finish_step(history, result, StepResult(
                index, kind, line, summary, "-", UNSUPPORTED, unsupported))
        if not step_kind.settles(step):
            # Not waited for (restart wait: false): its prediction is checked by the steps
            # after it, on the model's branches it leaves; nothing is observed here.
            ls.kip_step(index, steps, None, outcomes, ticks, self._kip_before())
            self._observe_storage(session, history, index)
            history.record("step", index=index, phase="end", step={kind: params}, line=line,
                           **noted, **self._builds_at(session, history, index),
                           **log_dirs_at(session, history, index))
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
            ls.kip_step(index, steps, states, outcomes, ticks, self._kip_before())
        topic_life(self._traffic, history, kind, life_topic, "settled")
        self._observe_storage(session, history, index)
        history.record("step", index=index, phase="end", step={kind: params}, line=line,
                       **noted, **self._builds_at(session, history, index),
                       **log_dirs_at(session, history, index))
        # A cluster the observer could not see at the deadline is a harness fault, not
        # evidence against the broker.
        verdict = CONFORMS if reason is None else ERROR if blind else DIVERGES
        return self._finish_step(history, result, StepResult(
            index, kind, line, summary, self._fmt(observed), verdict, reason or ""))

    def _builds_at(self, session: Session, history: History, index: int) -> dict[str, Any]:
        """A scenario that runs nodes on other builds (``upgrade``): the build of every
        node at the step's end (``builds`` of its end event), and in run.json
        ``node_builds`` each change (the birth builds at step null)."""
        born = dict(getattr(self.scenario.cluster, "builds", ()))
        if not born and not any(s.kind == "upgrade" for s in self.scenario.steps):
            return {}
        now = {str(n): v for n, v in sorted(session.cluster.builds().items())}
        seen = history.meta.setdefault("node_builds", [])
        if not seen:  # the builds each node was born on (cluster.builds, else the run's)
            birth = {n: born.get(int(n), session.cluster.build.version) for n in now}
            seen.append({"step": None, "builds": birth})
            history.write_meta()
        if seen[-1]["builds"] != now:
            seen.append({"step": index, "builds": now})
            history.write_meta()
        return {"builds": now}

    def _execute(self, session: Session, index: int, kind: str, steps: list[Any],
                 step: Any = None) -> list[Any]:
        """Each lane's outcome: a step on partitions runs once per partition it names (the
        others' outcome is empty), any other step once (``step``: as the scenario says it,
        its controller roles resolved), its outcome every lane's."""
        if not step_kinds.KINDS[kind].on_partitions:
            topic = self.scenario.steps[index].topic or self.scenario.topic.name
            outcome = step_kinds.execute(session, Target(topic), kind,
                                         self.scenario.steps[index].step if step is None
                                         else step)
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

    def _outcome_mismatch(self, preds: list[Any], outcomes: list[Any]) -> str | None:
        for lm, pred, outcome in zip(self.lockstep.lanes, preds, outcomes, strict=True):
            why = (ack_mismatch(pred, outcome) or consume_mismatch(pred, outcome)
                   or refusal_mismatch(pred, outcome))
            if why is not None:
                return self.lockstep.said(lm, why)
        return None

    def _quorum_at_start(self, session: Session, step: Any
                         ) -> tuple[Any, dict[str, int], int | None]:
        """With several controllers: the quorum epoch when the step starts (a step's
        ``quorum_elected`` is whether it changed) and the step with its controller roles
        (``active``, ``last_active``, ``follower``) replaced by ids, ``active`` being
        DescribeQuorum's leader now (polled, bounded, until there is one)."""
        from harness.infra.wait import until
        from reference.model.steps import ACTIVE, FOLLOWER, ROLES

        roles = {f.name: getattr(step, f.name) for f in dataclasses.fields(step)
                 if getattr(step, f.name) in ROLES}
        if len(self.shape().controller_ids) < 2:
            # One controller is the active one and the last active one, up or down (the
            # loader refuses `follower` there): no quorum to ask.
            (only,) = self.shape().controller_ids
            sole = {name: only for name in roles}
            return (dataclasses.replace(step, **sole) if sole else step), sole, None

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


def _settled_predictions(preds: list[Any], ticked: list[Any]) -> list[Any]:
    """Each lane's prediction to compare the observation with: after the traffic's tick
    where there is one, with the step's own expected acks and unsupported reason."""
    return [p if t is p else dataclasses.replace(t, expected_acks=p.expected_acks,
                                                 unsupported=p.unsupported)
            for p, t in zip(preds, ticked, strict=True)]


def _notes(outcomes: list[Any]) -> list[str]:
    """The distinct notes of a step's executions, in lane order."""
    out: list[str] = []
    for o in outcomes:
        if o.note and o.note not in out:
            out.append(o.note)
    return out
