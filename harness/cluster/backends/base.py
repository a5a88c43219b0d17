"""The one interface every backend implements.

`Cluster` owns bringing a cluster up (node preparation: storage, server.properties, hosts
file and log configs; the JVM's arguments; ports; waiting for readiness). A backend supplies
address allocation and the proxies (`_provision`), how a node process is launched
(`_launch`, `_relaunch`), killed, stopped and paused. Readiness is a strategy the caller
passes in (`Readiness`), so this package never talks to the cluster as a client.
Everything above (network faults, process faults, observer, workload) goes through this API.
"""

from __future__ import annotations

import abc
import os
import shlex
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Protocol

from harness.cluster import config as kafkaconfig
from harness.cluster import logdirs, storage, tiered
from harness.cluster.backends.readiness import wait_log_line
from harness.cluster.builds import Build, from_maven
from harness.cluster.topology import CLIENT, ClusterShape, host_alias, node_name
from harness.infra import procs, progress, startslots
from harness.infra.errors import ClusterError
from harness.infra.history import History
from harness.infra.toxiproxy import ToxiproxyApi

#: Opt-in extra JVM flags for one node, e.g. a JDWP agent to hold a broker thread at a
#: breakpoint (docs/findings/listoffsets-hwm-guard-race/reproduce.py):
#: ``KAFKA_CHAOS_JVM_OPTS_NODE2="-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,``
#: ``address=127.0.0.1:5005"`` (one line).
#: Unset (every normal run) adds nothing. Local backend only: the address is a host one.
DEBUG_JVM_OPTS_ENV = "KAFKA_CHAOS_JVM_OPTS_NODE{node}"


def debug_jvm_opts(node: int) -> list[str]:
    """The extra JVM flags of ``DEBUG_JVM_OPTS_ENV`` for ``node`` (shell-split), or []."""
    return shlex.split(os.environ.get(DEBUG_JVM_OPTS_ENV.format(node=node), ""))


class Readiness(Protocol):
    """When a started cluster is ready for a run (e.g. every broker registered and
    unfenced): waits, or raises ClusterError with what is missing."""

    def wait(self, cluster: Cluster, timeout_s: float) -> None: ...


class Cluster(abc.ABC):
    """A running KRaft cluster behind per-link Toxiproxy proxies.

    Addresses: node `dst` as seen by node `src` is `<net>.<block>.<src>.<dst>`, where
    `<net>.<block>` is the backend's address block (127.A on loopback, 10.A on a Docker
    network) and src 0 is the untouched path (the node itself, the observer)."""

    #: First octet of the backend's address block.
    NET: str = "127"
    #: Whether a node may run another build than the cluster's (``switch_build``: the
    #: ``upgrade`` step); a backend that cannot says why in ``builds_per_node_gap``.
    BUILDS_PER_NODE: bool = False
    #: Seconds a node may take to log that its server started; the whole cluster to be
    #: ready after that.
    NODE_START_S: float = 90
    READY_S: float = 60

    def __init__(self, build: Build, shape: ClusterShape, run_dir: Path, history: History,
                 readiness: Readiness):
        self.build, self.shape, self.history = build, shape, history
        self.readiness = readiness
        self.run_dir = run_dir.resolve()
        self.block = 0
        #: This cluster's own id (meta.properties cluster.id of every node): the observer
        #: refuses an answer that carries another.
        self.cluster_id = storage.new_cluster_id()
        self._api: ToxiproxyApi | None = None
        #: What the backend acquired for the cluster besides its nodes (a block lease, a
        #: proxy server, a Docker client): each pushes its release when acquired, and the
        #: teardown releases them in reverse order.
        self._resources = ExitStack()
        #: JVM flags a backend adds for its nodes (local: the AppCDS archive, cluster.cds).
        self.extra_jvm_opts: list[str] = []
        #: Nodes that run another build than ``build`` (the one the cluster was born on,
        #: formatted with): set by ``switch_build`` while the node is down.
        self.node_builds: dict[int, Build] = {}
        #: The kafka-storage test jar with LocalTieredStorage and its version, for a
        #: cluster with tiered storage (resolved at ``start``, appended to the class path).
        self.tiered_jar: tuple[list[Path], str] | None = None
        #: Nodes born on another build (``cluster.builds``; resolved, and cached, before
        #: the run starts a cluster: harness/run/runner/birth.py).
        for node, version in shape.builds:
            if version != build.version:
                self.node_builds[node] = from_maven(version)
        #: (broker, directory index) failed by ``fail_log_dir`` and not repaired yet: the
        #: broker's next start repairs them first (``start_node``).
        self.failed_dirs: set[tuple[int, int]] = set()

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        """Bring up proxies and every node; return when the readiness strategy says the
        cluster is ready. On failure everything already started is stopped before raising."""
        if self.shape.tiered_storage and self.tiered_jar is None:
            self.tiered_jar = tiered.rsm_classpath(self.build)
            entries, version = self.tiered_jar
            self.history.update(tiered_storage={
                "rsm_jar": entries[-1].name, "rsm_jar_version": version,
                "bridge": [str(e) for e in entries[:-1]],
                "remote_dir": str(tiered.remote_root(self.run_dir))})
        self._check_prerequisites()
        with startslots.start_slot() as waited:
            procs.register_cleanup(self, self.teardown)
            t0 = time.monotonic()
            try:
                self._bring_up()
            except BaseException:
                self.teardown()
                raise
        took = time.monotonic() - t0
        timings = self.history.meta["timings"]
        timings["bring_up_s"], timings["start_slot_wait_s"] = round(took, 2), round(waited, 2)
        self.history.write_meta()
        queued = f" (after {waited:.1f}s waiting for a start slot)" if waited >= 1 else ""
        progress.say(f"cluster up in {took:.1f}s{queued}")

    def _bring_up(self) -> None:
        self._provision()
        for node in self.shape.nodes:
            self._prepare_node(node)
        progress.say(f"starting {self.shape.brokers} brokers + {self.shape.controllers} "
                     f"controller(s), Kafka {self.build.version}, {self._where()}")
        for node in self.shape.controller_ids + self.shape.broker_ids:
            self._launch(node)
        for node in self.shape.nodes:
            self._wait_started(node, offset=0)
        self.readiness.wait(self, timeout_s=self.READY_S)

    @abc.abstractmethod
    def _check_prerequisites(self) -> None:
        """Fail before anything starts when a tool the backend needs is missing."""

    @abc.abstractmethod
    def _provision(self) -> None:
        """Allocate the address block and start the proxies (one per link)."""

    @abc.abstractmethod
    def _where(self) -> str:
        """Where the nodes run, for the progress line."""

    @abc.abstractmethod
    def _launch(self, node: int) -> None:
        """Start the node's process for the first time (its files are prepared)."""

    @abc.abstractmethod
    def _relaunch(self, node: int) -> None:
        """Start a stopped or killed node's process again, on the same files."""

    def start_node(self, node: int) -> None:
        """Start a stopped or killed node and wait until its server has started."""
        if self.is_running(node):
            raise ClusterError(f"{node_name(node)} is already running")
        offset = self.log_path(node).stat().st_size if self.log_path(node).exists() else 0
        for broker, index in sorted(self.failed_dirs):
            if broker == node:  # repair by restart: the process that held it is gone
                logdirs.repair(self.node_dir(node), index)
                self.failed_dirs.discard((broker, index))
        self._relaunch(node)
        self._wait_started(node, offset)

    def build_of(self, node: int) -> Build:
        """The build node runs (launches, relaunches on): the cluster's unless switched."""
        return self.node_builds.get(node, self.build)

    def builds(self) -> dict[int, str]:
        """Node -> the version of the build it runs now (run.json, each step's end)."""
        return {node: self.build_of(node).version for node in self.shape.nodes}

    def builds_per_node_gap(self) -> str | None:
        """Why this backend cannot run a node on another build, or None."""
        if self.BUILDS_PER_NODE:
            return None
        return (f"the {type(self).__name__} backend launches every node on the cluster's "
                "one build; only the local backend switches a node's build")

    def switch_build(self, node: int, build: Build) -> None:
        """Make a stopped node run ``build`` from its next start, on its same data dir:
        its server.properties written again for that build (node id, listeners, quorum
        and log dirs as before; what differs between builds, e.g. the controller's
        advertised listener before 3.9, follows the build)."""
        gap = self.builds_per_node_gap()
        if gap:
            raise ClusterError(gap)
        if self.is_running(node):
            raise ClusterError(f"{node_name(node)} is running: stop it before it changes build")
        self._prepare_build(build)
        if build == self.build:
            self.node_builds.pop(node, None)
        else:
            self.node_builds[node] = build
        self._write_properties(node)

    def _prepare_build(self, build: Build) -> None:
        """What the backend needs before it launches a node on ``build`` (local: its JDK
        and class-data archive); nothing by default."""
        return None

    def _wait_started(self, node: int, offset: int) -> None:
        wait_log_line(self.log_path(node), "Kafka Server started", offset,
                      alive=lambda: self.is_running(node), what=node_name(node),
                      timeout_s=self.NODE_START_S)

    # -- nodes ----------------------------------------------------------------------
    def _prepare_node(self, node: int) -> None:
        """Format the node's storage and write its server.properties, hosts file (each
        peer's name resolves to this node's proxy towards it) and log configs."""
        ndir = self.node_dir(node)
        ndir.mkdir(parents=True, exist_ok=True)
        build = self.build_of(node)
        storage.format_node(build, self.shape.elr, node, self.data_dir(node), self.cluster_id,
                            storage.birth_args(build, self.shape, self.build.version_tuple))
        for index, path in enumerate(self.log_dirs(node)[1:], start=1):
            self._resources.callback(logdirs.release, ndir, index)
            logdirs.create(ndir, index)
            storage.format_extra_dir(self.data_dir(node), path)
        self._write_properties(node)
        hosts = ["127.0.0.1 localhost"] + [f"{ip} {name}" for name, ip in
                                           self.hosts(node).items()]
        (ndir / "hosts").write_text("\n".join(hosts) + "\n")
        for name, content in kafkaconfig.log_configs().items():
            (ndir / name).write_text(content)

    def _write_properties(self, node: int) -> None:
        """The node's server.properties for the build it runs (``build_of``)."""
        addr = kafkaconfig.NodeAddresses(
            bind_host=self.ip(0, node),
            client_advertised=f"{self.ip(CLIENT, node)}:{kafkaconfig.CLIENT_PORT}",
            observer_advertised=f"{self.ip(0, node)}:{kafkaconfig.OBSERVER_PORT}")
        text = kafkaconfig.render(
            node, self.shape, addr, ",".join(map(str, self.log_dirs(node))),
            self.shape.broker_config,
            controller_leader_endpoints=self.build_of(node).version_tuple >= (3, 9, 0))
        if self.shape.tiered_storage:
            extra = (tiered.controller_props() if self.shape.is_controller(node)
                     else tiered.broker_props(self.shape, self.run_dir))
            text += "".join(f"{k}={kafkaconfig.escape(v)}\n" for k, v in extra.items()
                            if k not in self.shape.broker_config)
        if self.shape.unstable_features:
            # Born at a non-production level: each server needs the build's switch to
            # start on it (its supported range ends at latestTesting only with it).
            text += f"{storage.unstable_switch(self.build_of(node))}=true\n"
        (self.node_dir(node) / "server.properties").write_text(text)

    def hosts(self, node: int) -> dict[str, str]:
        """Name -> address as node sees them: itself directly, every peer via its proxy."""
        hosts = {host_alias(node): self.ip(0, node)}
        hosts.update({host_alias(other): self.ip(node, other)
                      for other in self.shape.nodes if other != node})
        return hosts

    def classpath_of(self, build: Build) -> str:
        """A node's class path: the build's jars, and LocalTieredStorage's test jar when
        the cluster has tiered storage (after the build's own jars)."""
        if self.tiered_jar is None:
            return build.classpath()
        return os.pathsep.join([build.classpath(), *map(str, self.tiered_jar[0])])

    def jvm_args(self, node: int, java: str, classpath: str,
                 extra_opts: list[str] | None = None) -> list[str]:
        """The command line of a node's JVM (paths are host paths, also in containers);
        ``extra_opts``: the backend's flags for the node's build (default extra_jvm_opts)."""
        ndir = self.node_dir(node)
        extra = self.extra_jvm_opts if extra_opts is None else extra_opts
        return [java, *kafkaconfig.JVM_OPTS, *extra, *debug_jvm_opts(node),
                f"-Djdk.net.hosts.file={ndir / 'hosts'}",
                f"-Dlog4j.configuration=file:{ndir / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={ndir / 'log4j2.properties'}",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-cp", classpath, "kafka.Kafka", str(ndir / "server.properties")]

    def port_towards(self, src: int, dst: int) -> int:
        """The port a connection from src to dst is opened on."""
        if src == CLIENT:
            return kafkaconfig.CLIENT_PORT
        if self.shape.is_controller(dst):
            return kafkaconfig.CONTROLLER_PORT
        return kafkaconfig.INTERNAL_PORT

    def proxies(self) -> dict[str, tuple[str, str]]:
        """Proxy name -> (listen, upstream) for every link of the shape."""
        out = {}
        for src, dst in self.shape.links():
            port = self.port_towards(src, dst)
            out[self.proxy_name(src, dst)] = (f"{self.ip(src, dst)}:{port}",
                                              f"{self.ip(0, dst)}:{port}")
        return out

    def teardown(self) -> None:
        """Stop every process/container/proxy this cluster started. Idempotent."""
        try:
            self._stop_nodes()
        finally:
            self._api = None
            self._resources.close()
            procs.unregister_cleanup(self)

    @abc.abstractmethod
    def _stop_nodes(self) -> None:
        """Stop the nodes (and the backend's proxies where they are nodes too, as the
        Toxiproxy container is), whatever state the bring-up left them in."""

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

    def log_dirs(self, node: int) -> list[Path]:
        """The node's log dirs (``log.dirs``, in order): its data dir, then for a broker
        of a cluster with ``log_dirs: N`` directories 1..N-1, each a filesystem of its
        own (harness.cluster.logdirs)."""
        extra = 0 if self.shape.is_controller(node) else self.shape.log_dirs - 1
        return [self.data_dir(node)] + [logdirs.log_dir(self.node_dir(node), i)
                                        for i in range(1, extra + 1)]

    def fail_log_dir(self, broker: int, index: int) -> None:
        """Make Kafka see I/O errors on log dir ``index`` (>= 1) of a running broker
        (logdirs.fail); its next start repairs it."""
        if not 1 <= index < len(self.log_dirs(broker)):
            raise ClusterError(f"{node_name(broker)} has no log dir {index} that can fail "
                               f"(dirs 1..{len(self.log_dirs(broker)) - 1})")
        logdirs.fail(self.node_dir(broker), index)
        self.failed_dirs.add((broker, index))

    def log_path(self, node: int) -> Path:
        """The node's server log."""
        return self.run_dir / "logs" / f"{node_name(node)}.log"
