"""The docker backend: one container per node plus a Toxiproxy container (Testcontainers).

Addressing mirrors the local backend, on a bridge network the run creates, 10.A.0.0/16
(A chosen free at start; the host is the gateway 10.A.0.254, so it reaches every address
directly). Node j gets the static address 10.A.0.j. The Toxiproxy container is 10.A.0.253
and also owns secondary addresses 10.A.i.j (added with `ip addr` at its start): the proxy
carrying connections opened by node i to node j listens on 10.A.i.j (same port). Node i's
host entries (its /etc/hosts via extra_hosts, and the JVM's own hosts file) map `node-j` to
10.A.i.j. The harness's clients reach broker j at 10.A.250.j; the observer dials 10.A.0.j
directly, a path no fault touches.

The run directory is bind-mounted at the same path in every container, so data dirs
(formatted on the host by `storage.format_node`), server.properties and the node logs
(`logs/<node>.log`, the JVM's stdout) are ordinary host files. The JVM is the container's
PID 1: hard kill = `docker kill --signal KILL`, clean stop = SIGTERM and wait, restart =
start the same container again (same data dir), pause = cgroup freezer.
"""

from __future__ import annotations

import ipaddress
import os
import random
import shlex
import time
from pathlib import Path
from typing import Any

from harness.cluster import config as kafkaconfig
from harness.cluster import images as dockerimages
from harness.cluster import storage
from harness.cluster.backends.base import Cluster
from harness.cluster.backends.readiness import wait_brokers_unfenced, wait_log_line
from harness.cluster.builds import Build
from harness.cluster.topology import CLIENT, ClusterShape, host_alias, node_name
from harness.infra import dockerengine, procs, progress
from harness.infra.errors import ClusterError
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

_TOXIPROXY_HOST = 253
_GATEWAY = 254
NAME_PREFIX = "kafka-chaos-"


def name_prefix() -> str:
    """Prefix of every container/network name this process creates."""
    return f"{NAME_PREFIX}{os.getpid()}-"


class DockerCluster(Cluster):
    NET = "10"

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History):
        super().__init__(build, shape, run_dir, history)
        self.run_tag = f"{int(time.time() * 1000) % 10**9:09d}"
        self._network: Any = None
        self._containers: dict[int, Any] = {}  # node -> testcontainers DockerContainer
        self._toxi: Any = None
        self._paused: set[int] = set()
        self._client: Any = None

    def container_name(self, what: str) -> str:
        return f"{name_prefix()}{self.run_tag}-{what}"

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        dockerengine.ensure_engine()
        procs.register_cleanup(self, self.teardown)
        t0 = time.monotonic()
        try:
            kafka_image = dockerimages.ensure_kafka_image(self.build)
            toxi_image = dockerimages.ensure_toxiproxy_image()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "logs").mkdir(exist_ok=True)
            self._create_network()
            self._start_proxies(toxi_image)
            for node in self.shape.nodes:
                self._prepare_node(node)
            progress.say(f"starting {self.shape.brokers} brokers + {self.shape.controllers} "
                         f"controller(s), Kafka {self.build.version}, in containers on "
                         f"10.{self.block}.0.0/16 ({kafka_image})")
            for node in self.shape.controller_ids + self.shape.broker_ids:
                self._start_container(node, kafka_image)
            for node in self.shape.nodes:
                self._wait_started(node, offset=0)
            wait_brokers_unfenced(self, timeout_s=90)
        except BaseException:
            self.teardown()
            raise
        self.history.meta["timings"]["bring_up_s"] = round(time.monotonic() - t0, 2)
        self.history.write_meta()
        progress.say(f"cluster up in {time.monotonic() - t0:.1f}s")

    def teardown(self) -> None:
        # By name, not by the handles: an interrupt can land between the daemon creating
        # a network or container and this object holding it.
        dockerengine.remove_named(self.container_name(""))
        self._containers.clear()
        self._toxi = None
        self._api = None
        self._network = None
        if self._client is not None:
            self._client.close()
            self._client = None
        procs.unregister_cleanup(self)

    def _docker(self) -> Any:
        if self._client is None:
            import docker

            self._client = docker.from_env(timeout=120)  # type: ignore[attr-defined,unused-ignore]
        return self._client

    def _create_network(self) -> None:
        import docker

        client = self._docker()
        used = []
        for net in client.networks.list():
            for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
                if cfg.get("Subnet"):
                    used.append(ipaddress.ip_network(cfg["Subnet"], strict=False))
        rng = random.Random()
        for _ in range(20):
            block = rng.randint(16, 250)
            subnet = ipaddress.ip_network(f"10.{block}.0.0/16")
            if any(subnet.overlaps(u) for u in used):
                continue
            pool = docker.types.IPAMPool(subnet=str(subnet), gateway=f"10.{block}.0.{_GATEWAY}")
            try:
                self._network = client.networks.create(
                    self.container_name("net"), driver="bridge",
                    ipam=docker.types.IPAMConfig(pool_configs=[pool]),
                    labels={dockerengine.OWNER_LABEL: dockerengine.owner()})
            except docker.errors.APIError as exc:
                if "overlap" in str(exc).lower():
                    continue
                raise ClusterError(f"cannot create the run's Docker network: {exc}") from exc
            self.block = block
            return
        raise ClusterError("no free 10.A.0.0/16 subnet for the run's Docker network in 20 tries")

    def _container(self, image: str, name: str, ip: str, command: str,
                   extra: dict[str, Any]) -> Any:
        from testcontainers.core.container import DockerContainer

        import docker

        container = DockerContainer(image, name=self.container_name(name))
        container.with_command(["sh", "-c", command])
        container.with_volume_mapping(str(self.run_dir), str(self.run_dir), "rw")
        endpoint = docker.types.EndpointConfig(docker.constants.DEFAULT_DOCKER_API_VERSION,  # type: ignore[attr-defined,unused-ignore]
                                               ipv4_address=ip)
        container.with_kwargs(network=self._network.name,
                              networking_config={self._network.name: endpoint}, **extra)
        return container

    def _start_proxies(self, image: str) -> None:
        links = self.shape.links()
        adds = "; ".join(f"ip addr add {self.ip(src, dst)}/32 dev eth0"
                         for src, dst in links)
        log = self.run_dir / "logs" / "toxiproxy.log"
        cmd = (f"{adds}; exec {dockerimages.TOXIPROXY_BIN} -host 0.0.0.0 -port "
               f"{kafkaconfig.TOXIPROXY_API_PORT} >> {shlex.quote(str(log))} 2>&1")
        self._toxi = self._container(image, "toxiproxy", self.ip(0, _TOXIPROXY_HOST), cmd,
                                     {"cap_add": ["NET_ADMIN"]})
        self._toxi.start()
        self._api = ToxiproxyApi(self.ip(0, _TOXIPROXY_HOST), kafkaconfig.TOXIPROXY_API_PORT)
        try:
            self._api.wait_until_up()
        except Exception as exc:
            raise ClusterError(f"the Toxiproxy container did not answer; log {log}:\n"
                               f"{_tail(log)}") from exc
        proxies = {}
        for src, dst in links:
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

    def _hosts(self, node: int) -> dict[str, str]:
        hosts = {host_alias(node): self.ip(0, node)}
        hosts.update({host_alias(other): self.ip(node, other)
                      for other in self.shape.nodes if other != node})
        return hosts

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
        hosts = ["127.0.0.1 localhost"] + [f"{ip} {name}" for name, ip in
                                           self._hosts(node).items()]
        (ndir / "hosts").write_text("\n".join(hosts) + "\n")
        for name, content in kafkaconfig.log_configs().items():
            (ndir / name).write_text(content)

    def _start_container(self, node: int, image: str) -> None:
        ndir = self.node_dir(node)
        java = ["$JAVA", *kafkaconfig.JVM_OPTS, f"-Djdk.net.hosts.file={ndir / 'hosts'}",
                f"-Dlog4j.configuration=file:{ndir / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={ndir / 'log4j2.properties'}",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-cp", f"{dockerimages.KAFKA_LIBS}/*", "kafka.Kafka",
                str(ndir / "server.properties")]
        # An existing image (KAFKA_CHAOS_KAFKA_IMAGE) may keep java elsewhere: use PATH then.
        args = " ".join(a if a == "$JAVA" else shlex.quote(a) for a in java)
        cmd = (f"JAVA={dockerimages.JAVA}; [ -x $JAVA ] || JAVA=java; "
               f"cd {shlex.quote(str(ndir))} && exec {args} "
               f">> {shlex.quote(str(self.log_path(node)))} 2>&1")
        container = self._container(image, node_name(node), self.ip(0, node), cmd,
                                    {"extra_hosts": self._hosts(node), "init": False})
        self._containers[node] = container
        container.start()

    def _wait_started(self, node: int, offset: int) -> None:
        wait_log_line(self.log_path(node), "Kafka Server started", offset,
                      alive=lambda: self.is_running(node), what=node_name(node), timeout_s=120)

    # -- processes ------------------------------------------------------------------
    def _raw(self, node: int) -> Any:
        container = self._containers.get(node)
        if container is None or container.get_wrapped_container() is None:
            raise ClusterError(f"{node_name(node)} is not part of this cluster or never started")
        return container.get_wrapped_container()

    def _status(self, node: int) -> str:
        raw = self._raw(node)
        raw.reload()
        return str(raw.status)

    def is_running(self, node: int) -> bool:
        try:
            return self._status(node) in ("running", "paused")
        except Exception:  # noqa: BLE001 - a removed container is not running
            return False

    def kill(self, node: int) -> None:
        raw = self._raw(node)
        if node in self._paused:
            raw.unpause()  # SIGKILL of a frozen cgroup waits for the thaw
            self._paused.discard(node)
        if self._status(node) == "running":
            raw.kill(signal="KILL")
        raw.wait(timeout=30)

    def stop_node(self, node: int, timeout_s: float = 60.0) -> None:
        raw = self._raw(node)
        if node in self._paused:
            self.resume(node)
        raw.stop(timeout=int(timeout_s))  # SIGTERM, SIGKILL after timeout_s
        raw.wait(timeout=30)

    def start_node(self, node: int) -> None:
        if self.is_running(node):
            raise ClusterError(f"{node_name(node)} is already running")
        offset = self.log_path(node).stat().st_size if self.log_path(node).exists() else 0
        self._raw(node).start()
        self._wait_started(node, offset)

    def pause(self, node: int) -> None:
        self._raw(node).pause()
        self._paused.add(node)

    def resume(self, node: int) -> None:
        self._raw(node).unpause()
        self._paused.discard(node)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
