"""Settling a step: poll the cluster (bounded) until every partition's observed state is
one the model allows, or the deadline passes; and the bounded polls for a new topic's first
settled state."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from harness.client.observe import ObserveError
from harness.client.session import Session
from harness.infra import procs
from harness.judge.compare import await_mismatch, hwm_hidden, observed_state, quorum_unseen
from harness.judge.traffic import hwm_bounded, model_view
from harness.run.runner.state import RunnerState

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


class SettleMixin(RunnerState):
    """Observing the cluster and waiting, bounded, for a state the model allows."""

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


def _fully_replicated(replicas: tuple[int, ...]) -> Callable[[dict[str, Any]], bool]:
    """A new partition's first settled state: every replica in the ISR, the first leads."""
    return lambda st: set(st["isr"]) == set(replicas) and st["leader"] == replicas[0]


def _not_started(session: Session, expected: Mapping[str, Any]) -> str | None:
    """An await's ``ready`` brokers whose last restart has not finished starting their
    server (its "Kafka Server started": registered, then unfenced by the controller)."""
    waiting = [b for b in expected.get("ready", ()) if not session.faults.started(int(b))]
    return f"ready: brokers {waiting} still starting" if waiting else None
