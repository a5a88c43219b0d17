"""The one interface every backend implements.

A backend owns processes/containers, the Toxiproxy server and the addresses. Everything
above it (network faults, process faults, observer, workload) goes through this API.
"""

from __future__ import annotations

import abc
from pathlib import Path

from harness.cluster import config as kafkaconfig
from harness.cluster.builds import Build
from harness.cluster.topology import CLIENT, ClusterShape, node_name
from harness.infra.errors import ClusterError
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi


class Cluster(abc.ABC):
    """A running KRaft cluster behind per-link Toxiproxy proxies.

    Addresses: node `dst` as seen by node `src` is `<net>.<block>.<src>.<dst>`, where
    `<net>.<block>` is the backend's address block (127.A on loopback, 10.A on a Docker
    network) and src 0 is the untouched path (the node itself, the observer)."""

    #: First octet of the backend's address block.
    NET: str = "127"

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History):
        self.build, self.shape, self.history = build, shape, history
        self.run_dir = run_dir.resolve()
        self.block = 0
        self._api: ToxiproxyApi | None = None

    # -- lifecycle ------------------------------------------------------------------
    @abc.abstractmethod
    def start(self) -> None:
        """Bring up proxies and every node; return when all brokers are registered and
        unfenced. On failure everything already started is stopped before raising."""

    @abc.abstractmethod
    def teardown(self) -> None:
        """Stop every process/container/proxy this cluster started. Idempotent."""

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    # -- addresses ------------------------------------------------------------------
    def ip(self, src: int, dst: int) -> str:
        """Address of `dst` as seen by `src` (src 0: the node itself / the observer)."""
        return f"{self.NET}.{self.block}.{src}.{dst}"

    def client_bootstrap(self) -> str:
        """bootstrap.servers for the harness's producers/consumers (proxied path)."""
        return ",".join(f"{self.ip(CLIENT, b)}:{kafkaconfig.CLIENT_PORT}"
                        for b in self.shape.broker_ids)

    def observer_address(self, broker: int) -> tuple[str, int]:
        """The untouched path to a broker, for the observer."""
        return self.ip(0, broker), kafkaconfig.OBSERVER_PORT

    def controller_observer_address(self, controller: int) -> tuple[str, int]:
        """The untouched path to a controller's CONTROLLER listener."""
        return self.ip(0, controller), kafkaconfig.CONTROLLER_PORT

    def toxiproxy(self) -> ToxiproxyApi:
        """The API of this cluster's Toxiproxy server."""
        if self._api is None:
            raise ClusterError("cluster not started")
        return self._api

    def proxy_name(self, src: int, dst: int) -> str:
        """Name of the proxy carrying connections opened by src to dst."""
        return f"{'client' if src == CLIENT else src}->{dst}"

    # -- processes ------------------------------------------------------------------
    @abc.abstractmethod
    def kill(self, node: int) -> None:
        """SIGKILL the node's JVM (no clean-shutdown file is written)."""

    @abc.abstractmethod
    def stop_node(self, node: int, timeout_s: float = 60.0) -> None:
        """Clean shutdown (SIGTERM), waiting for the JVM to exit."""

    @abc.abstractmethod
    def start_node(self, node: int) -> None:
        """Start a stopped or killed node and wait until its server has started."""

    @abc.abstractmethod
    def pause(self, node: int) -> None: ...

    @abc.abstractmethod
    def resume(self, node: int) -> None: ...

    @abc.abstractmethod
    def is_running(self, node: int) -> bool: ...

    # -- files (host paths) ----------------------------------------------------------
    def node_dir(self, node: int) -> Path:
        return self.run_dir / "nodes" / node_name(node)

    def data_dir(self, node: int) -> Path:
        """The node's log dir (lose_unflushed edits it while the node is down)."""
        return self.node_dir(node) / "data"

    def log_path(self, node: int) -> Path:
        """The node's server log."""
        return self.run_dir / "logs" / f"{node_name(node)}.log"
