"""Fast tests of the time-to-verdict machinery (issue 15): the AppCDS archive's cache and
fallbacks, loopback block allocation, the default number of parallel clusters."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.cluster import builds, cds

pytest_plugins = ["pytester"]


def _dist(tmp_path: Path) -> builds.Build:
    libs = tmp_path / "dist" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"jar")
    features = builds.Features(elr=True, elr_default_on=True, describe_topic_partitions=True,
                               hwm_rule=True, unclean_recovery=False, kip1303=False,
                               previous_broker_epoch=True)
    return builds.Build("4.3.1", f"dist:{tmp_path / 'dist'}", libs, features)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> builds.Build:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cds.ENV, raising=False)
    monkeypatch.setattr(cds, "_verify_maps", lambda java, opts, cp, archive: None)
    cds._checked.clear()
    return _dist(tmp_path)


class Trainer:
    def __init__(self, content: bytes = b"archive", fail: bool = False) -> None:
        self.calls = 0
        self.content, self.fail = content, fail

    def __call__(self, build: builds.Build, java: Path, opts: Sequence[str],
                 archive: Path) -> None:
        self.calls += 1
        if self.fail:
            raise RuntimeError("training node exited")
        archive.write_bytes(self.content)


JAVA = Path("/usr/bin/java")


def test_archive_is_made_once_then_reused(env: builds.Build) -> None:
    trainer = Trainer()
    args = cds.archive_args(env, JAVA, trainer=trainer)
    path = cds.archive_path(env, JAVA, cds.kafkaconfig.JVM_OPTS)
    assert args == [f"-XX:SharedArchiveFile={path}", "-Xshare:auto"]
    assert cds.archive_args(env, JAVA, trainer=trainer) == args
    cds._checked.clear()  # another process: checks the sidecar, does not train again
    assert cds.archive_args(env, JAVA, trainer=trainer) == args
    assert trainer.calls == 1 and path.read_bytes() == b"archive"


def test_turned_off_by_env(env: builds.Build, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cds.ENV, "0")
    trainer = Trainer()
    assert cds.archive_args(env, JAVA, trainer=trainer) == [] and trainer.calls == 0


def test_corrupt_archive_is_made_again(env: builds.Build) -> None:
    trainer = Trainer()
    args = cds.archive_args(env, JAVA, trainer=trainer)
    path = cds.archive_path(env, JAVA, cds.kafkaconfig.JVM_OPTS)
    path.write_bytes(b"archivX")  # same size, other bytes: a torn or corrupted file
    cds._checked.clear()
    assert cds.archive_args(env, JAVA, trainer=trainer) == args
    assert trainer.calls == 2 and path.read_bytes() == b"archive"


def test_failed_training_runs_without_and_is_not_retried(env: builds.Build) -> None:
    trainer = Trainer(fail=True)
    assert cds.archive_args(env, JAVA, trainer=trainer) == []
    assert cds.archive_args(env, JAVA, trainer=trainer) == []
    assert trainer.calls == 1
    path = cds.archive_path(env, JAVA, cds.kafkaconfig.JVM_OPTS)
    assert not path.exists() and "training node exited" in cds._marker(
        path, ".failed").read_text()
    assert not list(path.parent.glob("*.tmp-*"))


def test_archive_the_jvm_cannot_map_is_not_used(env: builds.Build,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(java: Path, opts: Sequence[str], cp: str, archive: Path) -> None:
        raise RuntimeError("An error has occurred while processing the shared archive file")
    monkeypatch.setattr(cds, "_verify_maps", refuse)
    assert cds.archive_args(env, JAVA, trainer=Trainer()) == []
    assert not cds.archive_path(env, JAVA, cds.kafkaconfig.JVM_OPTS).exists()


def test_any_error_falls_back_to_no_archive(env: builds.Build,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise PermissionError("read-only cache")
    monkeypatch.setattr(cds, "ensure_archive", broken)
    assert cds.archive_args(env, JAVA, trainer=Trainer()) == []


def test_key_follows_jars_jdk_and_options(env: builds.Build, tmp_path: Path) -> None:
    opts = cds.kafkaconfig.JVM_OPTS
    key = cds.archive_key(env, JAVA, opts)
    assert cds.archive_key(env, JAVA, opts) == key
    assert cds.archive_key(env, JAVA, (*opts, "-Xmx1g")) != key
    other_jdk = tmp_path / "jdk" / "bin" / "java"
    other_jdk.parent.mkdir(parents=True)
    assert cds.archive_key(env, other_jdk, opts) != key
    (env.libs / "kafka_2.13-4.3.1.jar").write_bytes(b"rebuilt jar")
    assert cds.archive_key(env, JAVA, opts) != key


def test_concurrent_first_use_trains_once(env: builds.Build) -> None:
    inside = threading.Event()
    release = threading.Event()
    calls = []

    def slow(build: builds.Build, java: Path, opts: Sequence[str], archive: Path) -> None:
        calls.append(1)
        inside.set()
        release.wait(10)
        archive.write_bytes(b"archive")
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(
        cds.archive_args(env, JAVA, trainer=slow))) for _ in range(3)]
    for t in threads:
        t.start()
    assert inside.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(results) == 3 and results[0] and all(
        r == results[0] for r in results)


@pytest.mark.skipif(shutil.which("java") is None, reason="no java")
def test_real_jvm_refuses_a_garbage_archive(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(b"\0" * 4096)
    with pytest.raises(RuntimeError, match="cannot map"):
        cds._verify_maps(Path(shutil.which("java") or "java"), cds.kafkaconfig.JVM_OPTS,
                         str(tmp_path), bad)


# -- parallel clusters ------------------------------------------------------------------------
def test_default_jobs_follows_cores_and_memory() -> None:
    from harness.run.parallel import CLUSTER_MEMORY, default_jobs
    assert default_jobs(2, 24 * 2**30) == 4  # 2 per core
    assert default_jobs(1, 24 * 2**30) == 1
    assert default_jobs(8, 3 * CLUSTER_MEMORY + 1) == 3
    assert default_jobs(4, CLUSTER_MEMORY // 2) == 1  # never 0
    assert default_jobs(2, None) == 4  # no /proc/meminfo: by cores
    assert default_jobs(64, 2**40) == 16
    assert default_jobs() >= 1


def test_jobs_flag() -> None:
    import argparse

    from harness.cli.options import jobs_count
    assert jobs_count("3") == 3 and jobs_count("auto") >= 1
    for bad in ("0", "17", "many"):
        with pytest.raises(argparse.ArgumentTypeError):
            jobs_count(bad)


def test_run_all_runs_at_once_and_keeps_order() -> None:
    from harness.run.parallel import run_all
    barrier = threading.Barrier(2, timeout=10)

    def task(i: int) -> int:
        barrier.wait()  # both must be running at once, or this times out
        return i
    assert run_all([lambda: task(1), lambda: task(2)], 2) == [1, 2]
    assert run_all([lambda: 1, lambda: 2], 1) == [1, 2]


def test_leased_block_is_not_given_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from harness.infra import blocks
    monkeypatch.setenv("KAFKA_CHAOS_LEASES", str(tmp_path))
    first = blocks.lease_free_block("127", 16, 17, lambda b: True, rng=random.Random(1))
    second = blocks.lease_free_block("127", 16, 17, lambda b: True, rng=random.Random(1))
    assert first and second and first.block != second.block
    assert blocks.lease_free_block("127", 16, 17, lambda b: True) is None  # all leased
    first.release()
    first.release()  # idempotent
    third = blocks.lease_free_block("127", 16, 17, lambda b: True)
    assert third and third.block == first.block
    # a block whose ports are taken is not leased (and its lease is given back)
    second.release()
    third.release()
    assert blocks.lease_free_block("127", 16, 17, lambda b: b == 17).block == 17  # type: ignore[union-attr]


def test_lease_excludes_another_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from harness.infra import blocks
    monkeypatch.setenv("KAFKA_CHAOS_LEASES", str(tmp_path))
    lease = blocks.try_lease("127", 42)
    assert lease is not None
    code = "from harness.infra import blocks; print(blocks.try_lease('127', 42) is None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**__import__("os").environ})
    assert out.stdout.strip() == "True"
    lease.release()


def test_local_cluster_leases_its_block_until_teardown(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster.backends import local
    from harness.cluster.topology import ClusterShape
    from harness.infra import blocks
    monkeypatch.setenv("KAFKA_CHAOS_LEASES", str(tmp_path / "leases"))
    monkeypatch.setattr(local, "_free", lambda host, port: True)
    a = local.LocalCluster(None, ClusterShape(), tmp_path / "a", None, None)  # type: ignore[arg-type]
    b = local.LocalCluster(None, ClusterShape(), tmp_path / "b", None, None)  # type: ignore[arg-type]
    a._choose_block()
    b._choose_block()
    assert a.block != b.block and blocks.try_lease("127", a.block) is None
    a.teardown()
    b.teardown()
    again = blocks.try_lease("127", a.block)
    assert again is not None
    again.release()


def test_run_and_matrix_take_jobs() -> None:
    import argparse

    from harness.cli import run as runner_cli
    top = argparse.ArgumentParser(prog="kafka-chaos")
    sub = top.add_subparsers(dest="command", required=True)
    runner_cli.add_subcommands(sub)
    from harness.run.parallel import default_jobs
    for command in ("run", "matrix"):
        assert top.parse_args([command, "x.yaml"]).jobs == default_jobs()
        assert top.parse_args([command, "--jobs", "1", "x.yaml"]).jobs == 1
        assert top.parse_args([command, "--jobs", "2", "x.yaml"]).jobs == 2


def test_run_all_cancels_remote_runs_and_drops_queued_ones_on_ctrl_c() -> None:
    from harness.run.parallel import run_all
    started: list[int] = []
    cancelled = threading.Event()

    def task(i: int) -> int:
        started.append(i)
        if i == 0:
            raise KeyboardInterrupt  # as if Ctrl-C reached the driver while it waited
        assert cancelled.wait(5), "on_interrupt was not called while task 1 ran"
        return i
    with pytest.raises(KeyboardInterrupt):
        run_all([lambda i=i: task(i) for i in range(5)], 2, cancelled.set)
    assert cancelled.is_set() and {0, 1} <= set(started) and not {3, 4} & set(started)


def test_run_all_stops_the_running_tasks_on_ctrl_c_or_sigterm() -> None:
    # Seen on 4.3.1 (kafka-chaos run --jobs 2, SIGTERM): the hook killed the JVMs, but the
    # two running scenarios kept polling their dead clusters step after step while the
    # process waited for them. A running task now stops at its next poll.
    from harness.infra import procs
    from harness.run.parallel import run_all
    ended: dict[int, str] = {}
    polling = threading.Event()

    def task(i: int) -> int:
        if i == 0:
            assert polling.wait(5)
            raise KeyboardInterrupt  # as if Ctrl-C reached the driver while it waited
        polling.set()
        try:
            for _ in range(200):  # bounded: 10 s
                procs.check_interrupted()
                time.sleep(0.05)
            ended[i] = "ran to its end"
        except procs.Interrupted:
            ended[i] = "interrupted"
        return i
    with pytest.raises(KeyboardInterrupt):
        run_all([lambda i=i: task(i) for i in range(4)], 2)
    # Task 1 was polling; a task a freed worker took before the queue was dropped stops
    # at its first poll.
    assert ended[1] == "interrupted" and set(ended.values()) == {"interrupted"}


def test_pytest_n_auto_asks_the_harness_first(pytestconfig: pytest.Config,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`pytest -n auto` takes the first answer to this hook: the harness's, not xdist's own
    core count (which answered first before, so -n auto ignored default_jobs)."""
    import harness.run.parallel as parallel
    monkeypatch.setattr(parallel, "default_jobs", lambda: 7)
    assert pytestconfig.hook.pytest_xdist_auto_num_workers(config=pytestconfig) == 7


def test_brokers_get_lean_internals_and_the_old_path_turns_them_off(bench_script: Any) -> None:
    from harness.cluster import config as kafkaconfig
    from harness.cluster.topology import ClusterShape
    shape = ClusterShape(brokers=3)
    addr = kafkaconfig.NodeAddresses("h", "h:1", "h:2")
    speed = bench_script("speed")

    def broker_lines() -> list[str]:
        return kafkaconfig.render(1, shape, addr, "/d").splitlines()

    assert "offsets.topic.num.partitions=1" in broker_lines()
    assert "log.cleaner.dedupe.buffer.size=2097152" in broker_lines()
    assert not any(line.startswith("offsets.topic.num.partitions")
                   for line in kafkaconfig.render(100, shape, addr, "/d").splitlines())
    with speed.path(new=False):
        assert not any(line.startswith(("offsets.topic.num.partitions",
                                        "log.cleaner.dedupe.buffer.size"))
                       for line in broker_lines())
    assert "offsets.topic.num.partitions=1" in broker_lines()
    # a scenario's broker_config still wins over the harness's sizes
    mine = kafkaconfig.render(1, shape, addr, "/d", {"offsets.topic.num.partitions": "3"})
    assert "offsets.topic.num.partitions=3" in mine.splitlines()


def test_start_slots_default_follows_cores_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra import startslots
    from harness.infra.errors import UsageError
    monkeypatch.delenv(startslots.ENV, raising=False)
    assert startslots.default_slots(2) == 1  # one bring-up at a time on 2 cores
    assert startslots.default_slots(1) == 1
    assert startslots.default_slots(8) == 4
    monkeypatch.setenv(startslots.ENV, "0")
    assert startslots.default_slots(2) == 0  # no limit
    monkeypatch.setenv(startslots.ENV, "3")
    assert startslots.default_slots(2) == 3
    for bad in ("two", "-1", "1.5"):
        monkeypatch.setenv(startslots.ENV, bad)
        with pytest.raises(UsageError, match=startslots.ENV):
            startslots.default_slots(2)


def test_a_start_slot_is_held_by_one_cluster_at_a_time(tmp_path: Path) -> None:
    from harness.infra import startslots
    inside: list[int] = []
    most = [0]
    lock = threading.Lock()
    waits: list[float] = []

    def bring_up() -> None:
        with startslots.start_slot(1, directory=tmp_path) as waited:
            with lock:
                inside.append(1)
                most[0] = max(most[0], len(inside))
            time.sleep(0.2)
            with lock:
                inside.pop()
        waits.append(waited)
    threads = [threading.Thread(target=bring_up) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == 1 and len(waits) == 3
    assert max(waits) >= 0.3  # the last one waited for the other two


def test_two_start_slots_let_two_in_and_none_limits_nothing(tmp_path: Path) -> None:
    from harness.infra import startslots
    from harness.infra.errors import ClusterError
    with startslots.start_slot(2, directory=tmp_path), \
            startslots.start_slot(2, directory=tmp_path) as second:
        assert second < 0.5
        with pytest.raises(ClusterError, match="no cluster start slot free"), \
                startslots.start_slot(2, wait_s=0.2, directory=tmp_path):
            pass
    with startslots.start_slot(0, directory=tmp_path) as waited, \
            startslots.start_slot(0, directory=tmp_path):
        assert waited == 0.0


def test_a_start_slot_excludes_another_process_and_frees_when_it_dies(tmp_path: Path) -> None:
    import subprocess
    import sys

    from harness.infra import startslots
    from harness.infra.errors import ClusterError
    code = ("import sys, time\nfrom pathlib import Path\nfrom harness.infra import startslots\n"
            f"with startslots.start_slot(1, directory=Path({str(tmp_path)!r})):\n"
            "    print('held', flush=True)\n    time.sleep(30)\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ClusterError, match="no cluster start slot free"), \
                startslots.start_slot(1, wait_s=0.3, directory=tmp_path):
            pass
        holder.kill()
        holder.wait(10)
        with startslots.start_slot(1, wait_s=5, directory=tmp_path) as waited:
            assert waited < 5
    finally:
        holder.kill()
        holder.wait(10)


def test_a_wait_for_a_start_slot_stops_on_interrupt(tmp_path: Path) -> None:
    from harness.infra import procs, startslots
    with startslots.start_slot(1, directory=tmp_path):
        procs.interrupt()
        with pytest.raises(procs.Interrupted), startslots.start_slot(1, directory=tmp_path):
            pass


def test_a_cluster_comes_up_only_inside_a_start_slot(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster.backends.base import Cluster
    from harness.cluster.topology import ClusterShape
    from harness.infra import startslots
    from harness.infra.history import History
    monkeypatch.setenv("KAFKA_CHAOS_LEASES", str(tmp_path / "leases"))
    monkeypatch.setenv(startslots.ENV, "1")
    brought_up = threading.Event()

    class Quick(Cluster):
        def _check_prerequisites(self) -> None: ...
        def _bring_up(self) -> None:
            brought_up.set()
        _stop_nodes = _provision = _where = _launch = _relaunch = kill = stop_node = \
            pause = resume = is_running = lambda *a, **k: None  # type: ignore[assignment]
    Quick.__abstractmethods__ = frozenset()
    history = History(tmp_path / "run")
    cluster = Quick(None, ClusterShape(), tmp_path / "run", history, None)  # type: ignore[arg-type]
    with startslots.start_slot(1):
        starter = threading.Thread(target=cluster.start)
        starter.start()
        assert not brought_up.wait(0.3), "the cluster came up while another held the slot"
    starter.join(10)
    assert brought_up.is_set()
    assert history.meta["timings"]["start_slot_wait_s"] >= 0.3


def test_wait_log_line_finds_a_marker_written_in_pieces_and_only_after_offset(
        tmp_path: Path) -> None:
    from harness.cluster.backends import readiness
    from harness.infra.errors import NodeNotReady
    log = tmp_path / "node.log"
    log.write_bytes(b"old run: Kafka Server started\n")
    offset = log.stat().st_size

    def writer() -> None:
        for piece in (b"starting...\nKafka Ser", b"ver sta", b"rted (broker)\n"):
            time.sleep(0.15)  # more than one poll between the pieces
            with open(log, "ab") as fh:
                fh.write(piece)
    thread = threading.Thread(target=writer)
    thread.start()
    readiness.wait_log_line(log, "Kafka Server started", offset, alive=lambda: True,
                            what="node", timeout_s=5)
    thread.join(5)
    with pytest.raises(NodeNotReady, match="not ready"):  # the old run's line does not count
        readiness.wait_log_line(log, "Kafka Server started", log.stat().st_size,
                                alive=lambda: True, what="node", timeout_s=0.3)


def test_the_bench_old_path_lets_bring_ups_overlap(bench_script: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra import startslots
    monkeypatch.delenv(startslots.ENV, raising=False)
    speed = bench_script("speed")
    with speed.path(new=False):
        assert startslots.default_slots(2) == 0
    with speed.path(new=True):
        assert startslots.default_slots(2) == 1
    assert startslots.ENV not in __import__("os").environ


class _SlowProducer:
    """Delivers one record per poll slice, in order, as a producer with one request in
    flight and one record per request does; records the most ever outstanding."""

    def __init__(self, deliver: bool = True) -> None:
        self.queue: list[tuple[str, Any]] = []
        self.most_outstanding = 0
        self.deliver = deliver

    #: how many metadata answers lack the partition before it shows (add_partitions)
    unknown_answers = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        from types import SimpleNamespace
        parts = {} if self.unknown_answers > 0 else {0: None}
        self.unknown_answers -= 1
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=parts)})

    def produce(self, topic: str, key: str, value: str, partition: int, on_delivery: Any) -> None:
        if partition != 0 or self.unknown_answers >= 0:
            raise AssertionError("produced to a partition the client's metadata lacks")
        self.queue.append((key, on_delivery))
        self.most_outstanding = max(self.most_outstanding, len(self.queue))

    def poll(self, timeout: float) -> None:
        if self.deliver and self.queue and timeout > 0:  # poll(0) only serves callbacks
            key, report = self.queue.pop(0)

            class Msg:
                def key(self) -> bytes:
                    return key.encode()

                def offset(self) -> int:
                    return int(key[1:])
            report(None, Msg())


def _workload(tmp_path: Path, producer: _SlowProducer) -> Any:
    from harness.client.workload import Workload
    from harness.infra.history import History

    class FakeCluster:
        history = History(tmp_path / "run")
    load = Workload(FakeCluster())  # type: ignore[arg-type]
    load._producers["all"] = producer  # type: ignore[assignment]
    return load


def test_a_large_produce_keeps_a_window_of_records_ahead_of_their_reports(
        tmp_path: Path) -> None:
    from harness.client import workload
    producer = _SlowProducer()
    load = _workload(tmp_path, producer)
    ids = [f"r{i}" for i in range(250)]
    acks = load.produce("t", 250, acks="all", record_ids=ids)
    assert [a.offset for a in acks] == list(range(250))
    assert producer.most_outstanding == workload.SEND_WINDOW  # not all 250 at once


def test_a_produce_whose_reports_stop_gives_up_after_the_grace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.client import workload
    monkeypatch.setattr(workload, "REPORT_GRACE_S", 0.3)
    load = _workload(tmp_path, _SlowProducer(deliver=False))
    load.delivery_timeout_ms = 0
    t0 = time.monotonic()
    acks = load.produce("t", 3, acks="all", record_ids=["r0", "r1", "r2"])
    assert {a.error for a in acks} == {"NO_DELIVERY_REPORT"}
    assert time.monotonic() - t0 < 5


def test_a_bad_start_slots_value_fails_before_any_cluster(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        pytester: pytest.Pytester) -> None:
    from harness.cli.app import main
    from harness.infra import startslots
    monkeypatch.setenv(startslots.ENV, "lots")
    assert main(["run", "fixtures/scenarios/last-replica-standing.yaml"]) == 2
    assert "KAFKA_CHAOS_START_SLOTS='lots'" in capsys.readouterr().err
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "KAFKA_CHAOS_START_SLOTS" in result.stderr.str()


def test_a_produce_waits_until_the_producer_knows_a_new_partition(tmp_path: Path) -> None:
    """Right after add_partitions librdkafka refuses a record for a partition its metadata
    lacks ("Local: Unknown partition", 4.0.2): the produce asks, bounded, until it is known."""
    producer = _SlowProducer()
    producer.unknown_answers = 3
    load = _workload(tmp_path, producer)
    acks = load.produce("t", 2, acks="all", record_ids=["r0", "r1"])
    assert [a.offset for a in acks] == [0, 1] and producer.unknown_answers < 0
