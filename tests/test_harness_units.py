"""Fast tests of harness logic that needs no cluster."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Coroutine
from pathlib import Path

import pytest

from harness.cluster import builds
from harness.cluster import config as kafkaconfig
from harness.cluster.topology import CLIENT, ClusterShape
from harness.infra.errors import BuildError, UsageError
from harness.infra.history import History, HistoryExists, SchemaError, new_run_id, read_events
from harness.infra.wait import WaitTimeout, until
from harness.nemesis import logfiles
from harness.nemesis.network import Network


# -- topology and configs -----------------------------------------------------------------
def test_links_never_let_controllers_dial_brokers() -> None:
    shape = ClusterShape(brokers=3, controllers=1)
    links = set(shape.links())
    assert (1, 100) in links and (2, 1) in links and (CLIENT, 3) in links
    assert (100, 1) not in links and (CLIENT, 100) not in links
    assert len(links) == 3 * 2 + 3 + 3  # broker<->broker, broker->controller, client->broker


def test_cluster_shape_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="brokers=0"):
        ClusterShape(brokers=0)
    with pytest.raises(ValueError, match="controllers=2"):
        ClusterShape(controllers=2)


def test_broker_config_advertises_alias_and_overrides_win() -> None:
    shape = ClusterShape(brokers=3)
    addr = kafkaconfig.NodeAddresses("127.9.0.2", "127.9.250.2:9094", "127.9.0.2:9095")
    text = kafkaconfig.render(2, shape, addr, "/d", {"replica.lag.time.max.ms": "9999"})
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["advertised.listeners"].startswith("INTERNAL://node-2:9092,")
    assert props["controller.quorum.voters"] == "100@node-100:9093"
    assert props["replica.lag.time.max.ms"] == "9999"
    assert props["auto.leader.rebalance.enable"] == "false"


def test_controller_advertises_its_name_only_where_leaders_send_endpoints() -> None:
    # KIP-853 (3.9+): followers connect to the endpoints the quorum leader advertises; by
    # name, each peer's hosts file sends that through its proxy, so partitions cut it.
    shape = ClusterShape(brokers=3, controllers=3)
    addr = kafkaconfig.NodeAddresses("127.9.0.101", "unused", "unused")

    def props(leader_endpoints: bool) -> dict[str, str]:
        text = kafkaconfig.render(101, shape, addr, "/d",
                                  controller_leader_endpoints=leader_endpoints)
        return dict(line.split("=", 1) for line in text.splitlines())

    assert props(True)["advertised.listeners"] == "CONTROLLER://node-101:9093"
    assert props(True)["listeners"] == "CONTROLLER://127.9.0.101:9093"
    assert "advertised.listeners" not in props(False)  # before 3.9 a controller refuses it


# -- builds ---------------------------------------------------------------------------------
def test_bad_version_string_is_rejected_before_maven() -> None:
    with pytest.raises(BuildError, match="not a version like"):
        builds.from_maven("latest")


def test_broken_dist_dir_names_the_input(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="no such directory"):
        builds.from_dist(tmp_path / "missing")
    (tmp_path / "libs").mkdir()
    with pytest.raises(BuildError, match="no kafka_2.13"):
        builds.from_dist(tmp_path)


def test_both_build_options_is_an_error() -> None:
    with pytest.raises(BuildError, match="either"):
        builds.resolve("4.3.1", "/tmp")


# -- log files --------------------------------------------------------------------------------
def _batch(base: int, records: int, epoch: int) -> bytes:
    body = bytes(49 - 12)  # rest of a v2 header after baseOffset+length, zeros
    length = len(body)
    header = struct.pack(">qiib", base, length, epoch, 2)
    raw = bytearray(header + body[5:])
    struct.pack_into(">i", raw, 23, records - 1)
    return bytes(raw)


def _write_replica(tmp_path: Path) -> Path:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    (pdir / "00000000000000000000.log").write_bytes(
        _batch(0, 1, 0) + _batch(1, 2, 0) + _batch(3, 1, 1))
    (pdir / "00000000000000000004.log").write_bytes(_batch(4, 1, 2))
    (pdir / "00000000000000000000.index").write_bytes(b"x")
    (pdir / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n1 3\n2 4\n")
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n2\nt 0 5\nu 0 7\n")
    (tmp_path / "replication-offset-checkpoint").write_text("")  # torn by the kill
    return pdir


def test_truncate_cuts_at_a_batch_boundary_and_fixes_checkpoints(tmp_path: Path) -> None:
    pdir = _write_replica(tmp_path)
    assert logfiles.log_end_offset(pdir) == 5
    assert logfiles.truncate(tmp_path, "t", 0, 3) == 2
    assert logfiles.log_end_offset(pdir) == 3
    assert not (pdir / "00000000000000000004.log").exists()
    assert not (pdir / "00000000000000000000.index").exists()
    assert (pdir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n2\nt 0 3\nu 0 7\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n0\n"


def test_truncate_inside_a_batch_lists_the_boundaries(tmp_path: Path) -> None:
    _write_replica(tmp_path)
    with pytest.raises(UsageError, match=r"not a batch boundary.*\[0, 1, 3, 4, 5\]"):
        logfiles.truncate(tmp_path, "t", 0, 2)


# -- history ----------------------------------------------------------------------------------
def test_history_events_are_sequenced_and_flushed(tmp_path: Path) -> None:
    history = History(tmp_path / "r1")
    history.record("fault", action="kill", params={"node": 1})
    events = list(read_events(tmp_path / "r1"))  # readable before close: flushed
    assert [e["seq"] for e in events] == [0, 1]
    assert events[1]["kind"] == "fault" and events[1]["run_id"] == "r1"
    history.close("CONFORMS")
    meta = json.loads((tmp_path / "r1" / "run.json").read_text())
    assert meta["verdict"] == "CONFORMS" and meta["ended_wall"] is not None


def test_history_reader_rejects_unknown_major(tmp_path: Path) -> None:
    History(tmp_path / "r2").close(None)
    meta = json.loads((tmp_path / "r2" / "run.json").read_text())
    meta["schema_version"] = "2.0"
    (tmp_path / "r2" / "run.json").write_text(json.dumps(meta))
    with pytest.raises(SchemaError, match="schema 2.0 is not supported"):
        list(read_events(tmp_path / "r2"))


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    history = History(tmp_path / "r3")
    history.record("fault", action="heal", params={})
    with open(tmp_path / "r3" / "events.jsonl", "a") as fh:
        fh.write('{"seq": 2, "kind": "ack"')  # crash mid-write
    assert [e["kind"] for e in read_events(tmp_path / "r3")] == ["run_start", "fault"]


def test_a_second_history_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    first = History(tmp_path / "r4")
    first.record("fault", action="kill", params={"node": 1})
    with pytest.raises(HistoryExists, match="already holds a run history"):
        History(tmp_path / "r4")  # would have appended to the first run's events
    first.close("CONFORMS")
    with pytest.raises(HistoryExists):
        History(tmp_path / "r4")
    events = list(read_events(tmp_path / "r4"))
    assert [e["seq"] for e in events] == [0, 1, 2] and events[-1]["kind"] == "run_end"


def test_run_ids_are_unique_within_one_second() -> None:
    ids = {new_run_id("same-test") for _ in range(200)}
    assert len(ids) == 200


def test_history_records_the_real_client_library_version(tmp_path: Path) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    history = History(tmp_path / "r5")
    history.close(None)
    versions = json.loads((tmp_path / "r5" / "run.json").read_text())["versions"]
    assert versions["confluent-kafka"] == confluent_kafka.__version__
    assert versions["confluent-kafka"].count(".") >= 1  # "2.16.1", not "2"



def test_history_records_the_machine_its_timings_were_taken_on(tmp_path: Path) -> None:
    History(tmp_path / "r6").close(None)
    host = json.loads((tmp_path / "r6" / "run.json").read_text())["machine"]
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    assert host["cpu"] and (not cpuinfo or host["cpu"] in cpuinfo)
    assert host["cores"] == len(os.sched_getaffinity(0))
    assert host["memory_gib"] is None or host["memory_gib"] > 0

def test_a_run_json_that_is_not_an_object_is_a_schema_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("[1, 2]")
    with pytest.raises(SchemaError, match="not a JSON object"):
        list(read_events(tmp_path))


# -- network fault table ----------------------------------------------------------------------
class _FakeApi:
    def __init__(self) -> None:
        self.toxics: set[tuple[str, str]] = set()

    def add_toxic(self, proxy: str, name: str, type_: str, stream: str, attrs: dict) -> None:
        assert type_ == "timeout" and attrs == {"timeout": 0}
        self.toxics.add((proxy, name))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.toxics.discard((proxy, name))

    def reset(self) -> None:
        self.toxics.clear()


class _FakeCluster:
    def __init__(self) -> None:
        self.shape = ClusterShape(brokers=3, controllers=1)
        self.api = _FakeApi()

    def toxiproxy(self) -> _FakeApi:
        return self.api

    def proxy_name(self, src: int, dst: int) -> str:
        return f"{src}->{dst}"


def test_oneway_cut_blackholes_both_proxies_carrying_that_flow() -> None:
    cluster = _FakeCluster()
    net = Network(cluster)  # type: ignore[arg-type]
    net.cut(3, 1, "oneway")
    assert cluster.api.toxics == {("3->1", "blackhole-upstream"), ("1->3", "blackhole-downstream")}
    assert not net.connected(3, 1) and net.connected(2, 1)


def test_isolate_controller_cuts_brokers_links_to_it_and_heal_clears() -> None:
    cluster = _FakeCluster()
    net = Network(cluster)  # type: ignore[arg-type]
    net.isolate(100)
    assert ("1->100", "blackhole-upstream") in cluster.api.toxics
    assert ("1->100", "blackhole-downstream") in cluster.api.toxics
    assert all(not net.connected(b, 100) for b in (1, 2, 3))
    net.heal()
    assert not cluster.api.toxics and net.connected(1, 100)


def test_unknown_node_is_a_usage_error() -> None:
    net = Network(_FakeCluster())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"unknown node\(s\) \[7\]"):
        net.isolate(7)


# -- waits --------------------------------------------------------------------------------------
def test_until_returns_the_first_good_value_and_times_out_with_evidence() -> None:
    values = iter(range(100))
    assert until(lambda: next(values), lambda v: v >= 3, "count", 5, 0.001) == 3
    with pytest.raises(WaitTimeout, match="last observed: 1"):
        until(lambda: 1, lambda v: v > 1, "never", 0.2, 0.01)


# -- bad input and missing pieces -------------------------------------------------------------
def test_missing_tool_names_it_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra import tools
    from harness.infra.errors import ToolMissing
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match=r"`mvn` not found on PATH: install Maven"):
        tools.require("mvn")


def test_unreachable_toxiproxy_is_a_network_error() -> None:
    import socket

    from harness.infra.errors import NetworkError
    from harness.infra.toxiproxy import ToxiproxyApi
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NetworkError, match=f"127.0.0.1:{port} unreachable"):
        ToxiproxyApi("127.0.0.1", port).create_proxies({"a": ("127.0.0.1:1", "127.0.0.1:2")})


def test_no_free_loopback_block_is_a_port_clash(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    from harness.cluster.backends import local
    from harness.infra.errors import PortClash
    monkeypatch.setattr(local, "_free", lambda host, port: False)
    cluster = local.LocalCluster(None, ClusterShape(), tmp_path, None, None)  # type: ignore[arg-type]
    with pytest.raises(PortClash, match="no free loopback block"):
        cluster._choose_block()


# -- the controller's metadata log --------------------------------------------------------------
def test_replay_of_controller_records_follows_partition_changes_and_clear_elr() -> None:
    from harness.client.metadata_log import replay
    tid = "abc"
    records = [
        {"type": "REGISTER_BROKER_RECORD", "data": {"brokerId": b, "fenced": True}}
        for b in (1, 2, 3)
    ] + [{"type": "UNFENCE_BROKER_RECORD", "data": {"id": b}} for b in (1, 2, 3)] + [
        {"type": "TOPIC_RECORD", "data": {"name": "t", "topicId": tid}},
        {"type": "PARTITION_RECORD", "data": {"partitionId": 0, "topicId": tid,
                                              "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                              "leader": 1}},
        {"type": "BROKER_REGISTRATION_CHANGE_RECORD", "data": {"brokerId": 3, "fenced": 1}},
        {"type": "PARTITION_CHANGE_RECORD", "data": {"partitionId": 0, "topicId": tid,
                                                     "isr": [1], "eligibleLeaderReplicas": [3]}},
        {"type": "PARTITION_CHANGE_RECORD", "data": {"partitionId": 0, "topicId": tid,
                                                     "isr": [], "leader": -1,
                                                     "eligibleLeaderReplicas": [1, 3],
                                                     "lastKnownElr": [1]}},
    ]
    state = replay(records, "t", 0, (1, 2, 3))
    assert state is not None
    assert (state["leader"], state["isr"], state["elr"], state["last_known_elr"]) == (
        -1, [], [1, 3], [1])
    assert state["fenced"] == [3]
    cleared = replay(records + [{"type": "CLEAR_ELR_RECORD", "data": {"topicName": "t"}}],
                     "t", 0, (1, 2, 3))
    assert cleared is not None and cleared["elr"] == [] and cleared["last_known_elr"] == []
    assert replay(records, "other", 0, (1, 2, 3)) is None


def test_observer_trusts_the_newest_epoch_then_the_majority_view() -> None:
    from harness.client.observe.partitions import _freshest

    def view(leader: int, epoch: int, isr: list[int]) -> dict:
        return {"leader": leader, "leader_epoch": epoch, "isr": isr, "elr": [],
                "last_known_elr": []}
    stale_ex_leader = (1, view(1, 0, [1, 2, 3]))  # just healed: still thinks it leads
    assert _freshest([stale_ex_leader, (2, view(2, 1, [2, 3])), (3, view(2, 1, [2, 3]))])[0] == 2
    lagging = (1, view(2, 1, [2, 3]))  # same epoch, old ISR
    node, state = _freshest([lagging, (2, view(2, 1, [1, 2, 3])), (3, view(2, 1, [1, 2, 3]))])
    assert state["isr"] == [1, 2, 3] and node in (2, 3)


def test_observer_starts_over_when_its_client_does_not_know_a_broker() -> None:
    import kafka.errors as kafka_errors

    from harness.client.observe import Observer

    class Manager:
        def __init__(self) -> None:
            self.cluster = self

        def run(self, call: Callable[[], Coroutine[None, None, None]]) -> None:
            call().close()  # the coroutine is never awaited here
            raise kafka_errors.UnknownBrokerIdError(2)

    class Admin:
        closed = False
        _manager = Manager()

        def close(self) -> None:
            self.closed = True

    observer = Observer(cluster=None)  # type: ignore[arg-type]
    stale = Admin()
    observer._admin = stale  # type: ignore[assignment]
    with pytest.raises(kafka_errors.UnknownBrokerIdError):
        observer._send(2, object())
    assert stale.closed and observer._admin is None  # the next call bootstraps afresh



def test_observer_asks_several_brokers_at_once_and_keeps_each_answer() -> None:
    """A look's views go out together in one hand-off to the client's I/O thread; one
    broker's failure (raised when sent, or answered) is that broker's alone."""
    import kafka.errors as kafka_errors
    from kafka.future import Future

    from harness.client.observe import Observer

    class Manager:
        def __init__(self) -> None:
            self.cluster, self.runs, self.updates = self, 0, 0

        def request_update(self) -> None:
            self.updates += 1

        def send(self, request: object, node_id: int) -> Future:
            if node_id == 3:
                raise kafka_errors.NodeNotReadyError(3)
            if node_id == 2:
                return Future().failure(kafka_errors.RequestTimedOutError())
            return Future().success(f"answer of {node_id}")

        def run(self, call: Callable[[], Coroutine[None, None, object]]) -> object:
            self.runs += 1
            try:
                call().send(None)
            except StopIteration as done:
                return done.value
            raise AssertionError("every future here is already done")

    class Admin:
        _manager = Manager()

    observer = Observer(cluster=None)  # type: ignore[arg-type]
    observer._admin = Admin()  # type: ignore[assignment]
    answers = observer._send_each({1: "r1", 2: "r2", 3: "r3"})
    assert answers[1] == "answer of 1"
    assert isinstance(answers[2], kafka_errors.RequestTimedOutError)
    assert isinstance(answers[3], kafka_errors.NodeNotReadyError)
    assert Admin._manager.runs == 1 and Admin._manager.updates == 2

def test_observer_bootstraps_only_from_running_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A killed container's address drops packets; kafka-python would spend its whole
    # bootstrap deadline on one such connect if it picked that address.
    from types import SimpleNamespace

    from harness.client import observe
    from harness.client.observe import connection

    seen: dict[str, object] = {}
    monkeypatch.setattr(connection, "KafkaAdminClient", lambda **kw: seen.update(kw) or object())
    running = {1: True, 2: False, 3: True}
    cluster = SimpleNamespace(shape=SimpleNamespace(broker_ids=[1, 2, 3]),
                              is_running=running.__getitem__,
                              observer_address=lambda b: (f"10.0.0.{b}", 9095))
    observe.Observer(cluster).admin()  # type: ignore[arg-type]
    assert seen["bootstrap_servers"] == ["10.0.0.1:9095", "10.0.0.3:9095"]
    running.update({1: False, 3: False})
    with pytest.raises(observe.ObserveError, match="no broker is running"):
        observe.Observer(cluster).admin()  # type: ignore[arg-type]


def test_observer_bootstraps_from_current_brokers_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # A paused broker answers nobody: bootstrapping from it cost the whole deadline
    # ("Unable to bootstrap", hunt on 4.0.2, bench/RESULTS-hunt.md).
    from types import SimpleNamespace

    from harness.client import observe
    from harness.client.observe import connection

    seen: dict[str, object] = {}
    monkeypatch.setattr(connection, "KafkaAdminClient", lambda **kw: seen.update(kw) or object())
    cluster = SimpleNamespace(shape=SimpleNamespace(broker_ids=[1, 2, 3]),
                              is_running=lambda b: True,
                              observer_address=lambda b: (f"10.0.0.{b}", 9095))
    current: list[int] = [3]
    observe.Observer(cluster, current_brokers=lambda: current).admin()  # type: ignore[arg-type]
    assert seen["bootstrap_servers"] == ["10.0.0.3:9095"]
    current.clear()  # none reaches the controller: any running broker will do
    observe.Observer(cluster, current_brokers=lambda: current).admin()  # type: ignore[arg-type]
    assert seen["bootstrap_servers"] == ["10.0.0.1:9095", "10.0.0.2:9095", "10.0.0.3:9095"]


def test_storage_uuids_never_start_with_a_dash() -> None:
    from harness.cluster.storage import _random_uuid
    ids = [_random_uuid() for _ in range(2000)]  # ~31 would start with '-' unchecked
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)


# -- process registry -------------------------------------------------------------------------
_SIGTERM_WHILE_LOCKED = """
import os, signal, sys
from pathlib import Path
from harness.infra import procs

child = procs.spawn(["sleep", "300"], Path(sys.argv[1]))
print(child.pid, flush=True)
# what a cluster registers: its teardown calls back into the registry
procs.register_cleanup("cluster", lambda: procs.kill(child))
try:
    with procs._lock:  # the main thread inside a registry update when SIGTERM lands
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next bytecode
        print("handler returned without raising", flush=True)
except KeyboardInterrupt:
    print("interrupted", procs.live_pids(), flush=True)
"""


def test_sigterm_while_the_main_thread_holds_the_registry_lock_stops_everything(
        tmp_path: Path) -> None:
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _SIGTERM_WHILE_LOCKED, str(tmp_path / "log")],
                         capture_output=True, text=True, timeout=30)  # deadlocked before
    lines = out.stdout.splitlines()
    assert lines[1:] == ["interrupted []"], out.stdout + out.stderr
    stat = Path(f"/proc/{lines[0]}/stat")
    assert not stat.exists() or ") Z" not in stat.read_text()  # killed and reaped


def test_exit_hooks_install_once_and_wait_for_the_main_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import threading

    from harness.infra import procs
    installed: list[object] = []
    monkeypatch.setattr(procs, "_atexit_installed", False)
    monkeypatch.setattr(procs, "_sigterm_installed", False)
    monkeypatch.setattr(procs.atexit, "register", installed.append)
    monkeypatch.setattr(procs.signal, "signal", lambda sig, fn: installed.append((sig, fn)))
    # Python's default Ctrl-C handler, as in a command's process (an xdist worker has another)
    monkeypatch.setattr(procs.signal, "getsignal", lambda sig: signal.default_int_handler)
    worker = threading.Thread(target=procs.install_exit_hooks)
    worker.start()
    worker.join()
    assert installed == [procs.kill_all]  # no signal handler from a worker thread
    procs.install_exit_hooks()
    procs.install_exit_hooks()
    # SIGINT too, while it has Python's default handler
    assert installed == [procs.kill_all, (signal.SIGTERM, procs._on_sigterm),
                         (signal.SIGINT, procs._on_sigint)]
    # Ctrl-C ignored (a background job) or taken by someone else: left as it is
    installed.clear()
    monkeypatch.setattr(procs, "_sigterm_installed", False)
    monkeypatch.setattr(procs.signal, "getsignal", lambda sig: signal.SIG_IGN)
    procs.install_exit_hooks()
    assert installed == [(signal.SIGTERM, procs._on_sigterm)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the point
def test_a_ctrl_c_swallowed_by_a_finalizer_is_raised_again_at_the_next_poll() -> None:
    """Python prints and swallows an exception raised in a finalizer (``__del__``): a
    KeyboardInterrupt that lands there was lost and the run went on (a docker bring-up
    interrupted by SIGINT reached UP on CI). The harness's SIGINT handler also marks the
    process interrupted, so the next poll raises it."""
    import gc

    from harness.infra import procs

    class Closing:
        def __del__(self) -> None:
            procs._on_sigint(2, None)  # Ctrl-C arriving while the finalizer runs

    obj = Closing()
    del obj  # the KeyboardInterrupt of __del__ is printed and swallowed by Python
    gc.collect()
    with pytest.raises(procs.Interrupted):
        procs.check_interrupted()
