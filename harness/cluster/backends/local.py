"""The default backend: one JVM per node on loopback, one Toxiproxy server.

Addressing: the cluster gets a loopback block 127.A.*.* (A chosen free at start). Node j
listens on 127.A.0.j. The proxy carrying connections opened by node i to node j listens
on 127.A.i.j (same port), and node i's own hosts file (-Djdk.net.hosts.file) maps
`node-j` to it. Clients (pseudo node 250) reach broker j at 127.A.250.j. The observer
dials 127.A.0.j directly: faults never touch that path.
"""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path

from harness.cluster import cds
from harness.cluster import config as kafkaconfig
from harness.cluster.backends.base import Cluster, Readiness
from harness.cluster.builds import Build
from harness.cluster.topology import ClusterShape, node_name
from harness.infra import blocks, procs, tools
from harness.infra.errors import ClusterError, PortClash
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi, ToxiproxyServer


class LocalCluster(Cluster):
    NET = "127"
    BUILDS_PER_NODE = True

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History,
                 readiness: Readiness):
        super().__init__(build, shape, run_dir, history, readiness)
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._paused: set[int] = set()
        self._java = ""
        #: Each build's (java, JVM flags) once prepared: a node switched to another build
        #: (``switch_build``) may need another JDK (3.x: 11, 4.x: 17) and that build's
        #: class-data archive (an archive of other jars is refused by the JVM).
        self._runtimes: dict[Build, tuple[str, list[str]]] = {}

    # -- lifecycle ------------------------------------------------------------------
    def _check_prerequisites(self) -> None:
        self._java = str(tools.require_java(self.build.java_major))
        self.extra_jvm_opts = cds.archive_args(self.build, Path(self._java))
        self._runtimes[self.build] = (self._java, self.extra_jvm_opts)

    def _prepare_build(self, build: Build) -> None:
        if build not in self._runtimes:
            java = str(tools.require_java(build.java_major))
            self._runtimes[build] = (java, cds.archive_args(build, Path(java)))

    def _provision(self) -> None:
        self._choose_block()
        self._start_proxies()

    def _where(self) -> str:
        return f"on 127.{self.block}.*.*"

    def _stop_nodes(self) -> None:
        for proc in list(self._procs.values()):
            if proc.poll() is None:
                procs.signal_process(proc, signal.SIGCONT)
            procs.kill(proc)
        self._procs.clear()

    def _choose_block(self) -> None:
        """A free block, leased for the cluster's life (infra.blocks): clusters started at
        once in other processes or threads never pick the same one."""
        points = self._listen_points()
        lease = blocks.lease_free_block(
            "127", 16, 250,
            lambda block: all(_free(f"127.{block}.0.{n}", port) for n, port in points))
        if lease is None:
            raise PortClash("no free loopback block 127.A.*.* found for the cluster in 40 "
                            "tries; stop stray Kafka/Toxiproxy processes holding ports "
                            "8474/9092-9095")
        self._resources.callback(lease.release)
        self.block = lease.block

    def _listen_points(self) -> list[tuple[int, int]]:
        out = [(254, kafkaconfig.TOXIPROXY_API_PORT)]
        for c in self.shape.controller_ids:
            out.append((c, kafkaconfig.CONTROLLER_PORT))
        for b in self.shape.broker_ids:
            out += [(b, kafkaconfig.INTERNAL_PORT), (b, kafkaconfig.CLIENT_PORT),
                    (b, kafkaconfig.OBSERVER_PORT)]
        return out

    def _start_proxies(self) -> None:
        server = ToxiproxyServer(self.ip(0, 254), kafkaconfig.TOXIPROXY_API_PORT,
                                 self.run_dir / "logs" / "toxiproxy.log")
        self._resources.callback(server.stop)
        server.start()
        self._api = ToxiproxyApi(self.ip(0, 254), kafkaconfig.TOXIPROXY_API_PORT)
        self._api.create_proxies(self.proxies())

    def _launch(self, node: int) -> None:
        build = self.build_of(node)
        self._prepare_build(build)
        java, opts = self._runtimes[build]
        cmd = self.jvm_args(node, java, self.classpath_of(build), opts)
        self._procs[node] = procs.spawn(cmd, self.log_path(node), cwd=self.node_dir(node))

    _relaunch = _launch

    # -- processes ------------------------------------------------------------------
    def _proc(self, node: int) -> subprocess.Popen[bytes]:
        proc = self._procs.get(node)
        if proc is None:
            raise ClusterError(f"{node_name(node)} is not part of this cluster or never started")
        return proc

    def is_running(self, node: int) -> bool:
        proc = self._procs.get(node)
        return proc is not None and proc.poll() is None

    def kill(self, node: int) -> None:
        self._paused.discard(node)
        procs.kill(self._proc(node), signal.SIGKILL)

    def stop_node(self, node: int, timeout_s: float = 60.0) -> None:
        proc = self._proc(node)
        if node in self._paused:
            self.resume(node)
        procs.kill(proc, signal.SIGTERM, wait_s=timeout_s)

    def pause(self, node: int) -> None:
        procs.signal_process(self._proc(node), signal.SIGSTOP)
        self._paused.add(node)

    def resume(self, node: int) -> None:
        procs.signal_process(self._proc(node), signal.SIGCONT)
        self._paused.discard(node)

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs.values() if p.poll() is None]


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
