"""Faults, each recorded in the history: network (via `Network`) and process faults."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from harness.cluster.topology import node_name
from harness.infra.errors import UsageError
from harness.nemesis import logfiles
from harness.nemesis.network import Network

if TYPE_CHECKING:
    from harness.cluster.backends.base import Cluster


class Faults:
    def __init__(self, cluster: Cluster, network: Network | None = None) -> None:
        self.cluster = cluster
        self.network = network or Network(cluster)

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

    def latency(self, src: int, dst: int, ms: int) -> None:
        self._record("latency", src=src, dst=dst, ms=ms)
        self.network.latency(src, dst, ms)

    def bandwidth(self, src: int, dst: int, kbps: int) -> None:
        self._record("bandwidth", src=src, dst=dst, kbps=kbps)
        self.network.bandwidth(src, dst, kbps)

    # -- processes ------------------------------------------------------------------
    def kill(self, node: int) -> None:
        self._on_process("kill", node, self.cluster.kill)

    def stop(self, node: int) -> None:
        self._on_process("stop", node, self.cluster.stop_node)

    def restart(self, node: int) -> None:
        self._on_process("restart", node, self.cluster.start_node)

    def pause(self, node: int) -> None:
        self._on_process("pause", node, self.cluster.pause)

    def resume(self, node: int) -> None:
        self._on_process("resume", node, self.cluster.resume)

    def _on_process(self, action: str, node: int, act: Callable[[int], object]) -> None:
        """Recorded before it acts: a fault that hangs or fails is still in the history."""
        self._record(action, node=node)
        act(node)

    def lose_unflushed(self, node: int, topic: str, partition: int, offset: int) -> int:
        """After a hard kill: cut the node's replica back to `offset` as a power loss would."""
        if self.cluster.is_running(node):
            raise UsageError(f"lose_unflushed on {node_name(node)}: it is running; kill it first "
                             "(a power loss only loses data of a node that went down)")
        data = self.cluster.data_dir(node)
        before = logfiles.log_end_offset(logfiles.partition_dir(data, topic, partition))
        lost = logfiles.truncate(data, topic, partition, offset)
        self._record("lose_unflushed", node=node, topic=topic, partition=partition,
                     offset=offset, log_end_before=before, records_lost=lost)
        return lost
