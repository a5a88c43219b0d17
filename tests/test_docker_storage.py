"""Several log directories and tiered storage on the docker backend, without Docker: how a
container's binds and class path are made (harness/cluster/backends/docker.py), and the
repair's refusal to check and mount a filesystem another mount namespace still holds
(harness/cluster/logdirs.py ``wait_released``), on a real loop mount where this machine
allows it (root). The real runs are in bench/RESULTS-docker.md."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness.client.readiness import BrokersUnfenced
from harness.cluster import logdirs
from harness.cluster.backends.docker import DockerCluster, container_mounts, docker_classpath
from harness.cluster.builds import Build, Features
from harness.cluster.topology import ClusterShape
from harness.infra.errors import ClusterError
from harness.infra.history import History


def _build() -> Build:
    feats = Features(elr=True, elr_default_on=True, describe_topic_partitions=True,
                     hwm_rule=True, unclean_recovery=False, kip1303=False,
                     previous_broker_epoch=True)
    return Build("4.3.1", "maven:4.3.1", Path("/nonexistent"), feats)


def test_the_run_dir_is_bound_non_recursively_and_the_extras_at_their_paths(
        tmp_path: Path) -> None:
    mounts = container_mounts(tmp_path, [tmp_path / "nodes/broker-1/mnt-1"],
                              [Path("/cache/kafka-storage-4.3.1-test.jar")])
    assert mounts[0] == {"Target": str(tmp_path), "Source": str(tmp_path), "Type": "bind",
                         "ReadOnly": False, "BindOptions": {"NonRecursive": True}}
    own = mounts[1]
    assert own["Source"] == own["Target"] == str(tmp_path / "nodes/broker-1/mnt-1")
    assert not own["ReadOnly"] and "BindOptions" not in own
    jar = mounts[2]
    assert jar["Source"] == jar["Target"] == "/cache/kafka-storage-4.3.1-test.jar"
    assert jar["ReadOnly"]


def test_the_class_path_is_the_images_jars_then_tiered_storages() -> None:
    assert docker_classpath([]) == "/opt/kafka/libs/*"
    assert docker_classpath([Path("/b/classes"), Path("/c/t.jar")]) == (
        "/opt/kafka/libs/*:/b/classes:/c/t.jar")


def _launched(tmp_path: Path, shape: ClusterShape,
              jars: list[Path] | None) -> dict[str, dict[str, Any]]:
    """What DockerCluster._launch asks of each node's container (no Docker)."""
    run = tmp_path / "run"
    cluster = DockerCluster(_build(), shape, run, History(run), BrokersUnfenced())
    cluster.block, cluster._kafka_image = 77, "img"
    if jars is not None:
        cluster.tiered_jar = (jars, "4.3.1")
    seen: dict[str, dict[str, Any]] = {}

    class Fake:
        def start(self) -> None:
            pass

    def container(image: str, name: str, ip: str, command: str, extra: dict[str, Any],
                  rw: list[Path] | None = None, ro: list[Path] | None = None) -> Fake:
        seen[name] = {"command": command, "rw": rw or [], "ro": ro or [], "ip": ip}
        return Fake()
    cluster._container = container  # type: ignore[method-assign]
    for node in shape.nodes:
        cluster._launch(node)
    return seen


def test_each_broker_gets_only_its_own_log_dir_mounts(tmp_path: Path) -> None:
    seen = _launched(tmp_path, ClusterShape(brokers=2, controllers=1, log_dirs=3), None)
    nodes = tmp_path / "run" / "nodes"
    assert seen["broker-1"]["rw"] == [nodes / "broker-1" / "mnt-1", nodes / "broker-1" / "mnt-2"]
    assert seen["broker-2"]["rw"] == [nodes / "broker-2" / "mnt-1", nodes / "broker-2" / "mnt-2"]
    assert seen["controller-100"]["rw"] == []  # controllers keep one directory
    assert all(s["ro"] == [] for s in seen.values())
    assert "-cp /opt/kafka/libs/* kafka.Kafka" in seen["broker-1"]["command"].replace("'", "")


def test_tiered_storages_jar_is_bound_read_only_and_on_the_class_path(tmp_path: Path) -> None:
    jar = tmp_path / "cache" / "kafka-storage-4.3.1-test.jar"
    seen = _launched(tmp_path, ClusterShape(brokers=2, controllers=1, tiered_storage=True),
                     [jar])
    for name in ("broker-1", "broker-2", "controller-100"):
        assert seen[name]["ro"] == [jar]
        assert f"-cp '/opt/kafka/libs/*:{jar}'" in seen[name]["command"]
        assert seen[name]["rw"] == []


def test_a_repair_waits_until_the_loop_device_is_gone(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    answers = [["/dev/loop3"], ["/dev/loop3"], []]
    monkeypatch.setattr(logdirs, "loop_devices", lambda image: answers.pop(0))
    logdirs.wait_released(tmp_path / "disk-1.img", "log dir 1 of broker-1", timeout_s=5)
    assert answers == []


def test_a_repair_refuses_a_filesystem_still_held_elsewhere(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    monkeypatch.setattr(logdirs, "loop_devices", lambda image: ["/dev/loop3"])
    with pytest.raises(ClusterError, match=r"disk-1.img is unmounted here but still attached "
                                           r"to /dev/loop3.*another mount namespace"):
        logdirs.wait_released(tmp_path / "disk-1.img", "log dir 1 of broker-1", timeout_s=0.3)


@pytest.mark.skipif(os.geteuid() != 0 or logdirs.require() is not None
                    or not Path("/usr/bin/unshare").exists(),
                    reason="needs root, mount, e2fsprogs and unshare")
def test_a_copy_of_the_mount_in_another_namespace_blocks_the_repair(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What a recursive bind of the run directory into another container did: that
    namespace's copy keeps the shut-down filesystem alive after the host's unmount. The
    repair says so instead of checking a mounted filesystem and mounting its old
    superblock again; once the holder is gone, the repair works."""
    monkeypatch.setattr(logdirs, "RELEASE_WAIT_S", 1.0)
    node = tmp_path / "broker-1"
    node.mkdir()
    holder: subprocess.Popen[bytes] | None = None
    try:
        d = logdirs.create(node, 1)
        (d / "f").write_text("kept")
        mnt = str(logdirs.mount_point(node, 1))
        holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private",
                                   "sleep", "120"])
        info = Path(f"/proc/{holder.pid}/mountinfo")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the child has unshared: its own mount table
            if (holder.poll() is None and os.readlink(f"/proc/{holder.pid}/ns/mnt")
                    != os.readlink("/proc/self/ns/mnt") and mnt in info.read_text()):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the holder never had its own copy of the mount")
        logdirs.fail(node, 1)
        with pytest.raises(ClusterError, match="another mount namespace"):
            logdirs.repair(node, 1)
        holder.kill()
        holder.wait(timeout=10)
        logdirs.repair(node, 1)  # the holder gone: unmounted already, checked, mounted
        assert (d / "f").read_text() == "kept"
        (d / "g").write_text("writable again")
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        logdirs.release(node, 1)
    assert not os.path.ismount(logdirs.mount_point(node, 1))
    assert logdirs.loop_devices(node / "disk-1.img") == []
