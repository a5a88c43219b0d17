"""A tiered cluster's storage at each step's end and after the final read: every replica's
log start, local log start and log end, and the remote tier's segments (harness/client/
observe/storage.py), one ``storage`` event per partition, and run.json's ``storage`` the
same per step in short (fixtures/histories/SCHEMA.md 1.8). The tiered checks
(harness/judge/tiered.py) judge these events, live and in ``audit``."""

from __future__ import annotations

from typing import Any

from harness.client.observe import ObserveError
from harness.client.observe.storage import storage_state
from harness.client.session import Session
from harness.cluster import tiered
from harness.infra import progress
from harness.infra.history import History
from harness.judge.tiered import kip_profile, local_log_steps
from harness.run.runner.state import RunnerState

#: run.json's short form of a storage observation.
_SHORT = ("topic", "partition", "leader", "log_start", "local_log_start", "log_end")


class StorageMixin(RunnerState):
    """The storage observations of a run on a cluster with tiered storage."""

    #: The last storage observation of each (topic, partition).
    _last_storage: dict[tuple[str, int], dict[str, Any]]

    def _kip_before(self) -> list[tuple[Any, ...]] | None:
        """Each lane's local logs as last observed, for the kip model before the step
        (KIP-1303 on a tiered cluster that configures it: judge/tiered.py); None otherwise."""
        if kip_profile(self.scenario) is None:
            return None
        last = getattr(self, "_last_storage", {})
        return [local_log_steps(last.get((lm.lane.topic, lm.lane.partition)))
                for lm in self.lockstep.lanes]

    def _observe_storage(self, session: Session, history: History, index: int | None) -> None:
        if not getattr(self.scenario.cluster, "tiered_storage", False):
            return
        if not hasattr(self, "_last_storage"):
            self._last_storage = {}
        root = tiered.remote_root(session.cluster.run_dir)
        short: list[dict[str, Any]] = []
        for lm in self.lockstep.lanes:
            topic, partition = lm.lane.topic, lm.lane.partition
            try:
                state, _ = session.observer.partition_state(topic, partition)
                leader = state.get("leader")
                replicas = [int(r) for r in state.get("replicas") or []]
                seen = storage_state(session.observer, root, topic, partition,
                                     leader if isinstance(leader, int) and leader >= 0
                                     else None, replicas)
            except (ObserveError, OSError) as exc:
                history.record("storage", index=index, topic=topic, partition=partition,
                               error=f"{type(exc).__name__}: {exc}")
                continue
            history.record("storage", index=index, **seen)
            self._last_storage[(topic, partition)] = seen
            remote = seen["remote"]
            short.append({**{k: seen[k] for k in _SHORT}, "remote_segments": remote["segments"],
                          "remote_start": remote["start"], "remote_end": remote["end"],
                          "retained_bytes": seen["retained_bytes"],
                          "replicas": seen["replicas"]})
            progress.say(f"  storage {topic}-{partition}: log start {seen['log_start']}, local "
                         f"{seen['local_log_start']}, end {seen['log_end']}; remote "
                         f"{remote['segments']} segment(s) {remote['start']}..{remote['end']}")
        history.meta.setdefault("storage", []).append({"step": index, "partitions": short})
        history.write_meta()
