"""Faults, each recorded in the history: network (via `Network`) and process faults."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from harness.cluster.topology import node_name
from harness.infra.errors import ClusterError, UsageError
from harness.nemesis import logfiles
from harness.nemesis.network import Network

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster
    from harness.cluster.builds import Build

#: How long a restart not waited for may take to have a running process.
_LAUNCH_S = 30.0


class Faults:
    def __init__(self, cluster: Cluster, network: Network | None = None) -> None:
        self.cluster = cluster
        self.network = network or Network(cluster)
        #: node -> (thread starting it, its outcome) for restarts not waited for
        self._starting: dict[int, tuple[threading.Thread, dict[str, BaseException | None]]] = {}

    def _record(self, action: str, **params: Any) -> None:
        self.cluster.history.record("fault", action=action, params=params)

    # -- network --------------------------------------------------------------------
    def isolate(self, node: int) -> None:
        self._record("isolate", node=node)
        self.network.isolate(node)

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        groups = [list(g) for g in groups]
        self._record("partition", groups=groups)
        self.network.partition(groups)

    def cut(self, src: int, dst: int, direction: str = "both") -> None:
        self._record("cut", src=src, dst=dst, direction=direction)
        self.network.cut(src, dst, direction)

    def heal(self) -> None:
        self._record("heal")
        self.network.heal()

    def latency(self, flows: Iterable[tuple[int, int]], ms: int, jitter_ms: int = 0,
                step: dict[str, Any] | None = None) -> None:
        """Delay the bytes of each directed flow (src, dst) by ms (+/- jitter_ms)."""
        flows = list(flows)
        self._record("latency", ms=ms, jitter_ms=jitter_ms, flows=[list(f) for f in flows],
                     step=step)
        for src, dst in flows:
            self.network.latency(src, dst, ms, jitter_ms)

    def bandwidth(self, flows: Iterable[tuple[int, int]], kbps: int,
                  step: dict[str, Any] | None = None) -> None:
        """Limit the bytes of each directed flow (src, dst) to kbps KB/s."""
        flows = list(flows)
        self._record("bandwidth", kbps=kbps, flows=[list(f) for f in flows], step=step)
        for src, dst in flows:
            self.network.bandwidth(src, dst, kbps)

    # -- processes ------------------------------------------------------------------
    def kill(self, node: int) -> None:
        self._on_process("kill", node, self.cluster.kill)
        self.network.paused.discard(node)  # both backends thaw a paused node to kill it

    def stop(self, node: int) -> None:
        self._on_process("stop", node, self.cluster.stop_node)

    def restart(self, node: int, wait: bool = True) -> None:
        """Start a killed or stopped node; with ``wait`` until its server has started
        (for a broker: registered and unfenced), else only until its process runs: the
        rest of the start goes on in a thread (``started`` says when it is done)."""
        self.network.paused.discard(node)
        if wait:
            self._on_process("restart", node, self.cluster.start_node)
            return
        self._record("restart", node=node, wait=False)
        outcome: dict[str, BaseException | None] = {}

        def start() -> None:
            try:
                self.cluster.start_node(node)
                outcome["error"] = None
                self._record("started", node=node)
            except BaseException as exc:  # noqa: BLE001 - kept for `started` to raise
                outcome["error"] = exc
                self._record("started", node=node, error=f"{type(exc).__name__}: {exc}")
                return
            # The local backend's children die with the thread that spawned them
            # (PR_SET_PDEATHSIG, procs.spawn): this thread lives as long as its process.
            while self.cluster.is_running(node):
                time.sleep(0.5)

        thread = threading.Thread(target=start, name=f"restart-{node}", daemon=True)
        self._starting[node] = (thread, outcome)
        thread.start()
        deadline = time.monotonic() + _LAUNCH_S
        while not self.cluster.is_running(node) and "error" not in outcome:
            if time.monotonic() >= deadline:
                raise ClusterError(f"{node_name(node)}: no process {_LAUNCH_S}s after restart")
            time.sleep(0.05)

    def started(self, node: int) -> bool:
        """Whether the node's last restart has finished starting its server (a restart
        that failed raises its error here)."""
        entry = self._starting.get(node)
        if entry is None:
            return True
        thread, outcome = entry
        if "error" not in outcome:
            return False
        error = outcome["error"]
        if error is not None:
            raise ClusterError(f"{node_name(node)} did not start: {error}")
        return True

    def pause(self, node: int) -> None:
        self._on_process("pause", node, self.cluster.pause)
        self.network.paused.add(node)

    def resume(self, node: int) -> None:
        self._on_process("resume", node, self.cluster.resume)
        self.network.paused.discard(node)

    def upgrade(self, node: int, build: Build) -> None:
        """Software upgrade or downgrade of one node: a clean shutdown (as ``stop``; none
        if it is down already), then a start on ``build``'s jars from the same data dir,
        waited for as ``restart`` waits (ClusterError, with the node's log, if it exits
        or does not start in time: e.g. a build that cannot read the cluster's
        metadata.version)."""
        was = self.cluster.build_of(node).version
        self._record("upgrade", node=node, version=build.version, was=was)
        self.network.paused.discard(node)
        if self.cluster.is_running(node):
            self.cluster.stop_node(node)
        self.cluster.switch_build(node, build)
        self.cluster.start_node(node)

    def fail_log_dir(self, node: int, index: int) -> None:
        """I/O errors on log dir ``index`` of a running broker (harness.cluster.logdirs:
        its filesystem shut down); the broker's next start repairs it."""
        if not self.cluster.is_running(node):
            raise UsageError(f"fail_log_dir on {node_name(node)}: it is not running")
        self._record("fail_log_dir", node=node, dir=index)
        self.cluster.fail_log_dir(node, index)

    def _on_process(self, action: str, node: int, act: Callable[[int], object]) -> None:
        """Recorded before it acts: a fault that hangs or fails is still in the history."""
        self._record(action, node=node)
        act(node)

    def lose_unflushed(self, node: int, topic: str, partition: int, offset: int) -> int:
        """After a hard kill: cut the node's replica back to `offset` as a power loss would."""
        if self.cluster.is_running(node):
            raise UsageError(f"lose_unflushed on {node_name(node)}: it is running; kill it first "
                             "(a power loss only loses data of a node that went down)")
        # With several log dirs (cluster.log_dirs) the replica is in one of them: the
        # first that holds it (a future replica of a move is "<topic>-<p>.<id>-future").
        dirs = self.cluster.log_dirs(node)
        data = next((d for d in dirs if logfiles.partition_dir(d, topic, partition).is_dir()),
                    dirs[0])
        before = logfiles.log_end_offset(logfiles.partition_dir(data, topic, partition))
        lost = logfiles.truncate(data, topic, partition, offset)
        self._record("lose_unflushed", node=node, topic=topic, partition=partition,
                     offset=offset, log_end_before=before, records_lost=lost)
        return lost
