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

The run directory's bind is *non-recursive* (``container_mounts``): a broker's extra log
directories (loop mounts under ``nodes/broker-N/mnt-I``, harness.cluster.logdirs) are bound
into that broker's container only, each by a bind of its own. A recursive bind would copy
every broker's loop mounts into every container's mount namespace; such a copy keeps the
filesystem alive after the host unmounts it, so a failed directory's repair (unmount,
e2fsck, mount, ``docker start``) found the old, shut-down superblock again: the same loop
device, reused by the mount (docs/LOG-DIRS.md "Docker"). With a bind per owner, the stopped
broker's namespace is gone when the host repairs the directory, and ``docker start`` binds
the new mount. Tiered storage: the remote tier (``<run>/remote``) is in the run directory,
shared by every broker through that bind; LocalTieredStorage's jar (and the LogContext
bridge, when one is needed: harness.cluster.tiered) are bound read-only at their host paths
and appended to the image's class path (``docker_classpath``).
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
from harness.cluster import logdirs
from harness.cluster.backends.base import Cluster, Readiness
from harness.cluster.builds import Build
from harness.cluster.topology import ClusterShape, node_name
from harness.infra import dockerengine
from harness.infra.errors import ClusterError
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

_TOXIPROXY_HOST = 253
_GATEWAY = 254
NAME_PREFIX = "kafka-chaos-"


def container_mounts(run_dir: Path, rw: list[Path], ro: list[Path]) -> list[dict[str, Any]]:
    """The bind mounts of a container (Docker API ``Mounts``), each at its host path: the
    run directory, non-recursive (``BindOptions.NonRecursive``, API 1.40+: mounts below it
    are not copied in), then ``rw`` (a broker's own log-dir mounts) and ``ro`` (jars)."""
    def bind(path: Path, read_only: bool, recursive: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"Target": str(path), "Source": str(path), "Type": "bind",
                               "ReadOnly": read_only}
        if not recursive:
            out["BindOptions"] = {"NonRecursive": True}
        return out
    return ([bind(run_dir, False, recursive=False)] + [bind(p, False) for p in rw]
            + [bind(p, True) for p in ro])


def docker_classpath(tiered_entries: list[Path]) -> str:
    """A broker's class path in its container: the image's jars, then what tiered storage
    adds (harness.cluster.tiered.rsm_classpath: bound at the same paths)."""
    return ":".join([f"{dockerimages.KAFKA_LIBS}/*", *map(str, tiered_entries)])


def name_prefix() -> str:
    """Prefix of every container/network name this process creates."""
    return f"{NAME_PREFIX}{os.getpid()}-"


class DockerCluster(Cluster):
    NET = "10"

    NODE_START_S = 120
    READY_S = 90

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History,
                 readiness: Readiness):
        super().__init__(build, shape, run_dir, history, readiness)
        self._kafka_image = ""
        self.run_tag = f"{int(time.time() * 1000) % 10**9:09d}"
        self._network: Any = None
        self._containers: dict[int, Any] = {}  # node -> testcontainers DockerContainer
        self._toxi: Any = None
        self._paused: set[int] = set()
        self._client: Any = None

    def container_name(self, what: str) -> str:
        return f"{name_prefix()}{self.run_tag}-{what}"

    # -- lifecycle ------------------------------------------------------------------
    def _check_prerequisites(self) -> None:
        # No AppCDS archive here (harness/cluster/cds.py): an archive maps only into the
        # JDK that dumped it, and the image's JDK is not the host's; baking one into the
        # image would need a training start of Kafka during the image build.
        dockerengine.ensure_engine()

    def _provision(self) -> None:
        self._kafka_image = dockerimages.ensure_kafka_image(self.build)
        toxi_image = dockerimages.ensure_toxiproxy_image()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "logs").mkdir(exist_ok=True)
        self._create_network()
        self._start_proxies(toxi_image)

    def _where(self) -> str:
        return f"in containers on 10.{self.block}.0.0/16 ({self._kafka_image})"

    def _stop_nodes(self) -> None:
        # By name, not by the handles: an interrupt can land between the daemon creating
        # a network or container and this object holding it.
        dockerengine.remove_named(self.container_name(""))
        self._containers.clear()
        self._toxi = None
        self._network = None

    def _docker(self) -> Any:
        if self._client is None:
            import docker

            self._client = docker.from_env(timeout=120)  # type: ignore[attr-defined,unused-ignore]
            self._resources.callback(self._forget_client)
        return self._client

    def _forget_client(self) -> None:
        self._client.close()
        self._client = None

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
                   extra: dict[str, Any], rw: list[Path] | None = None,
                   ro: list[Path] | None = None) -> Any:
        from testcontainers.core.container import DockerContainer

        import docker

        container = DockerContainer(image, name=self.container_name(name))
        container.with_command(["sh", "-c", command])
        mounts = container_mounts(self.run_dir, rw or [], ro or [])
        endpoint = docker.types.EndpointConfig(docker.constants.DEFAULT_DOCKER_API_VERSION,  # type: ignore[attr-defined,unused-ignore]
                                               ipv4_address=ip)
        container.with_kwargs(network=self._network.name,
                              networking_config={self._network.name: endpoint},
                              mounts=mounts, **extra)
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
        self._api.create_proxies(self.proxies())

    def _launch(self, node: int) -> None:
        ndir = self.node_dir(node)
        jars = self.tiered_jar[0] if self.tiered_jar else []
        java = self.jvm_args(node, "$JAVA", docker_classpath(jars))
        # An existing image (KAFKA_CHAOS_KAFKA_IMAGE) may keep java elsewhere: use PATH then.
        args = " ".join(a if a == "$JAVA" else shlex.quote(a) for a in java)
        cmd = (f"JAVA={dockerimages.JAVA}; [ -x $JAVA ] || JAVA=java; "
               f"cd {shlex.quote(str(ndir))} && exec {args} "
               f">> {shlex.quote(str(self.log_path(node)))} 2>&1")
        own_dirs = [logdirs.mount_point(ndir, i) for i in range(1, len(self.log_dirs(node)))]
        container = self._container(self._kafka_image, node_name(node), self.ip(0, node), cmd,
                                    {"extra_hosts": self.hosts(node), "init": False},
                                    rw=own_dirs, ro=list(jars))
        self._containers[node] = container
        container.start()

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

    def _relaunch(self, node: int) -> None:
        self._raw(node).start()

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
