"""The default backend: one JVM per node on loopback, one Toxiproxy server.

Addressing: the cluster gets a loopback block 127.A.*.* (A chosen free at start). Node j
listens on 127.A.0.j. The proxy carrying connections opened by node i to node j listens
on 127.A.i.j (same port), and node i's own hosts file (-Djdk.net.hosts.file) maps
`node-j` to it. Clients (pseudo node 250) reach broker j at 127.A.250.j. The observer
dials 127.A.0.j directly: faults never touch that path.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import time
from pathlib import Path

from harness.cluster import config as kafkaconfig
from harness.cluster import storage
from harness.cluster.backends.base import Cluster
from harness.cluster.backends.readiness import wait_brokers_unfenced, wait_log_line
from harness.cluster.builds import Build
from harness.cluster.topology import CLIENT, ClusterShape, host_alias, node_name
from harness.infra import procs, progress, tools
from harness.infra.errors import ClusterError, PortClash
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi, ToxiproxyServer


class LocalCluster(Cluster):
    NET = "127"

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History):
        super().__init__(build, shape, run_dir, history)
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._paused: set[int] = set()
        self._server: ToxiproxyServer | None = None
        self._java = ""

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self._java = str(tools.require_java(self.build.java_major))
        procs.register_cleanup(self, self.teardown)
        t0 = time.monotonic()
        try:
            self._choose_block()
            self._start_proxies()
            for node in self.shape.nodes:
                self._prepare_node(node)
            progress.say(f"starting {self.shape.brokers} brokers + {self.shape.controllers} "
                         f"controller(s), Kafka {self.build.version}, on 127.{self.block}.*.*")
            for node in self.shape.controller_ids + self.shape.broker_ids:
                self._spawn(node)
            for node in self.shape.nodes:
                self._wait_started(node, offset=0)
            wait_brokers_unfenced(self, timeout_s=60)
        except BaseException:
            self.teardown()
            raise
        self.history.meta["timings"]["bring_up_s"] = round(time.monotonic() - t0, 2)
        self.history.write_meta()
        progress.say(f"cluster up in {time.monotonic() - t0:.1f}s")

    def teardown(self) -> None:
        for proc in list(self._procs.values()):
            if proc.poll() is None:
                procs.signal_process(proc, signal.SIGCONT)
            procs.kill(proc)
        self._procs.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None
        procs.unregister_cleanup(self)

    def _choose_block(self) -> None:
        rng = random.Random()
        for _ in range(20):
            block = rng.randint(16, 250)
            if all(_free(f"127.{block}.0.{n}", port) for n, port in self._listen_points()):
                self.block = block
                return
        raise PortClash("no free loopback block 127.A.*.* found for the cluster in 20 tries; "
                        "stop stray Kafka/Toxiproxy processes holding ports 8474/9092-9095")

    def _listen_points(self) -> list[tuple[int, int]]:
        out = [(254, kafkaconfig.TOXIPROXY_API_PORT)]
        for c in self.shape.controller_ids:
            out.append((c, kafkaconfig.CONTROLLER_PORT))
        for b in self.shape.broker_ids:
            out += [(b, kafkaconfig.INTERNAL_PORT), (b, kafkaconfig.CLIENT_PORT),
                    (b, kafkaconfig.OBSERVER_PORT)]
        return out

    def _start_proxies(self) -> None:
        self._server = ToxiproxyServer(self.ip(0, 254), kafkaconfig.TOXIPROXY_API_PORT,
                                       self.run_dir / "logs" / "toxiproxy.log")
        self._server.start()
        self._api = ToxiproxyApi(self.ip(0, 254), kafkaconfig.TOXIPROXY_API_PORT)
        proxies = {}
        for src, dst in self.shape.links():
            port = self._port_towards(src, dst)
            proxies[self.proxy_name(src, dst)] = (f"{self.ip(src, dst)}:{port}",
                                                  f"{self.ip(0, dst)}:{port}")
        self._api.create_proxies(proxies)

    def _port_towards(self, src: int, dst: int) -> int:
        if src == CLIENT:
            return kafkaconfig.CLIENT_PORT
        if self.shape.is_controller(dst):
            return kafkaconfig.CONTROLLER_PORT
        return kafkaconfig.INTERNAL_PORT

    def _prepare_node(self, node: int) -> None:
        ndir = self.node_dir(node)
        ndir.mkdir(parents=True, exist_ok=True)
        storage.format_node(self.build, self.shape.elr, node, self.data_dir(node))
        addr = kafkaconfig.NodeAddresses(
            bind_host=self.ip(0, node),
            client_advertised=f"{self.ip(CLIENT, node)}:{kafkaconfig.CLIENT_PORT}",
            observer_advertised=f"{self.ip(0, node)}:{kafkaconfig.OBSERVER_PORT}")
        (ndir / "server.properties").write_text(kafkaconfig.render(
            node, self.shape, addr, str(self.data_dir(node)), self.shape.broker_config))
        hosts = ["127.0.0.1 localhost", f"{self.ip(0, node)} {host_alias(node)}"]
        hosts += [f"{self.ip(node, other)} {host_alias(other)}"
                  for other in self.shape.nodes if other != node]
        (ndir / "hosts").write_text("\n".join(hosts) + "\n")
        for name, content in kafkaconfig.log_configs().items():
            (ndir / name).write_text(content)

    def _spawn(self, node: int) -> None:
        ndir = self.node_dir(node)
        cmd = [self._java, *kafkaconfig.JVM_OPTS, f"-Djdk.net.hosts.file={ndir / 'hosts'}",
               f"-Dlog4j.configuration=file:{ndir / 'log4j.properties'}",
               f"-Dlog4j2.configurationFile={ndir / 'log4j2.properties'}",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
               "-Dorg.slf4j.simpleLogger.logFile=System.out",
               "-cp", self.build.classpath(), "kafka.Kafka", str(ndir / "server.properties")]
        self._procs[node] = procs.spawn(cmd, self.log_path(node), cwd=ndir)

    def _wait_started(self, node: int, offset: int) -> None:
        wait_log_line(self.log_path(node), "Kafka Server started", offset,
                      alive=lambda: self.is_running(node), what=node_name(node), timeout_s=90)

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

    def start_node(self, node: int) -> None:
        if self.is_running(node):
            raise ClusterError(f"{node_name(node)} is already running")
        offset = self.log_path(node).stat().st_size if self.log_path(node).exists() else 0
        self._spawn(node)
        self._wait_started(node, offset)

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
