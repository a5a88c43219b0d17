"""Checks on every step: while the scenario runs, a thread samples the partition's state
(at least 5 times a second; it aims at 10) and checks the profile-free state invariants
(reference/model/invariants.py OBSERVED) on every sample, so a state that breaks one is seen
even when the cluster repairs it before the step settles.

Every sample is a ``sample`` event (the audit re-judges them offline: judges.py
``sampled_findings``); a violation is also a ``sample_violation`` event at once, with its
time. Each step's achieved rate is a ``sampling`` event; the run's goes to run.json
(``sampling``). The sampler has its own observer (its own client, short timeouts) and asks
only brokers the fault table calls current (not paused, connected to the controllers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafka import KafkaAdminClient

from harness.client.observe import ObserveError, Observer
from harness.infra.history import History
from reference.model.invariants import observed_violations
from reference.model.state import PartitionState

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster

INTERVAL_S = 0.1
MIN_RATE = 5.0  # samples per second the checks promise (issue 11)
_REQUEST_TIMEOUT_MS = 1500


class SampleObserver(Observer):
    """An observer that never waits long on one broker: short request timeouts, and no
    HWM read from a leader the fault table does not call current (a paused leader would
    hold the request until its timeout)."""

    def __init__(self, cluster: Cluster, current_brokers: Callable[[], list[int]]) -> None:
        super().__init__(cluster, record=False, current_brokers=current_brokers)
        self._quorum_quiet_until = 0.0

    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            running = [b for b in self._current() if self.cluster.is_running(b)]
            if not running:
                running = self._running_brokers()
            servers = [f"{h}:{p}" for h, p in map(self.cluster.observer_address, running)]
            self._admin = KafkaAdminClient(
                bootstrap_servers=servers, client_id="kafka-chaos-sampler",
                request_timeout_ms=_REQUEST_TIMEOUT_MS, metadata_max_age_ms=1000,
                reconnect_backoff_max_ms=200, bootstrap_timeout_ms=3000)
        return self._admin

    def hwm(self, topic: str, partition: int, leader: int | None,
            leader_epoch: int | None = None) -> tuple[int | None, int | None]:
        if leader is None or leader not in self._current():
            return None, None
        return super().hwm(topic, partition, leader, leader_epoch)

    def quorum_fields(self) -> dict[str, Any]:
        """As the observer's, but a sample must stay cheap: after an unanswered
        DescribeQuorum (a broker still forwarding to a dead or cut-off controller) the
        next samples leave the quorum out (None) for a second."""
        if len(self.cluster.shape.controller_ids) < 2:
            return {}
        if time.monotonic() < self._quorum_quiet_until:
            return {"controller": None, "quorum_epoch": None, "quorum_lag": None,
                    "broker_metadata_lag": None}
        out = super().quorum_fields()
        if out.get("controller") is None:
            self._quorum_quiet_until = time.monotonic() + 1.0
        return out

    def _describe_quorum(self) -> dict[str, Any]:
        current = self._current()
        if not current:
            raise ObserveError("no current broker")
        resp = self._send(current[0], self._quorum_request())
        part = resp.to_dict()["topics"][0]["partitions"][0]
        if part.get("error_code"):
            raise ObserveError(f"DescribeQuorum: error {part['error_code']}")
        return dict(part)

    def partition_state(self, topic: str, partition: int = 0) -> tuple[dict[str, Any], int]:
        """The freshest current broker's view and the leader's HWM: only what the invariants
        read (no fencing, no reassignment, no metadata log: a sample must be cheap). ELR is
        None (unobservable) where the build shows it only in the metadata log."""
        node, state = self.freshest_view(topic, partition)
        if self.api == "Metadata":
            state["elr"] = state["last_known_elr"] = None
        state["hwm"], state["hwm_epoch"] = self.hwm(topic, partition, state["leader"],
                                                    state["leader_epoch"])
        state["fenced"] = None
        state.update(self.quorum_fields())  # several controllers: active, epoch, lag
        return state, node


class Sampler:
    """Samples every partition in ``partitions`` from ``start`` to ``stop``; ``step`` names
    the step running. A sample is one round over the partitions (one with a single partition);
    it counts as failed if any partition could not be observed."""

    def __init__(self, observer: Observer, history: History,
                 partitions: list[tuple[str, int]], interval_s: float = INTERVAL_S) -> None:
        self.observer, self.history = observer, history
        #: (topic, partition) of every partition sampled.
        self.partitions = partitions
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._index: int | None = None
        self._window = _Window(time.monotonic())
        self._total = _Window(time.monotonic())
        self._last: PartitionState | None = None
        self._max_hwm: dict[tuple[str, int], int] = {}
        self.steps: list[dict[str, Any]] = []

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self._thread.start()

    def step(self, index: int | None) -> None:
        """The step now running (None: between steps); closes the previous step's window."""
        with self._lock:
            self._close_window()
            self._index = index

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            self._close_window()
            summary = self._total.summary(time.monotonic())
        rated = [s for s in self.steps if s["seconds"] >= 1.0]
        summary["slowest_step_rate_per_s"] = min((s["rate_per_s"] for s in rated), default=None)
        summary["min_rate_per_s"] = MIN_RATE
        # A floor, not a guarantee: a step with every broker down samples nothing, and a
        # saturated machine slows every look; say how often it was not met.
        summary["steps_below_min_rate"] = sum(s["rate_per_s"] < MIN_RATE for s in rated)
        summary["violations"] = self._total.violations
        self.history.update(sampling=summary)
        return summary

    def _close_window(self) -> None:
        now = time.monotonic()
        if self._index is not None:
            entry = {"index": self._index, **self._window.summary(now)}
            self.steps.append(entry)
            self.history.record("sampling", **entry)
        self._window = _Window(now)

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            self._sample()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - t0)))
        self.observer.close()

    def _sample(self) -> None:
        with self.observer.one_look():
            states = [self._observe(t, p) for t, p in self.partitions]
        with self._lock:
            # Counted and recorded at once, so that a step boundary never splits a round:
            # a step's sampling counts exactly the samples recorded with its index.
            window = self._index
            if any(s is None for s in states):
                self._window.failed += 1
                self._total.failed += 1
                return
            self._window.ok += 1
            self._total.ok += 1
            for (topic, partition), state in zip(self.partitions, states, strict=True):
                assert state is not None
                self._record(window, topic, partition, state)

    def _observe(self, topic: str, partition: int) -> dict[str, Any] | None:
        try:
            return self.observer.partition_state(topic, partition)[0]
        except Exception:  # noqa: BLE001 - no current broker answered: a failed sample
            return None

    def _record(self, index: int | None, topic: str, partition: int,
                state: dict[str, Any]) -> None:
        observed = PartitionState.from_json(state)
        key = (topic, partition)
        found = observed_violations(observed, self._max_hwm.get(key))
        self._window.violations += len(found)
        self._total.violations += len(found)
        self.history.record("sample", index=index, topic=topic, partition=partition,
                            state=state)
        for name, detail in found:
            self.history.record("sample_violation", index=index, invariant=name,
                                detail=detail, state=state, topic=topic, partition=partition)
        if observed.hwm is not None:
            self._max_hwm[key] = max(observed.hwm, self._max_hwm.get(key, 0))
        elif not observed.replicas:
            # The topic is gone (deleted): one created again under its name starts at 0.
            self._max_hwm.pop(key, None)


class _Window:
    def __init__(self, t0: float) -> None:
        self.t0, self.ok, self.failed, self.violations = t0, 0, 0, 0

    def summary(self, now: float) -> dict[str, Any]:
        seconds = max(now - self.t0, 1e-9)
        return {"samples": self.ok, "failed": self.failed, "seconds": round(seconds, 3),
                "rate_per_s": round(self.ok / seconds, 2), "violations": self.violations}
