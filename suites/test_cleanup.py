"""Nothing is left running: interrupting a chaos run stops every JVM and proxy it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.client.session import open_session
from harness.cluster.topology import ClusterShape
from harness.infra.errors import NodeNotReady
from harness.infra.history import History

pytestmark = pytest.mark.chaos


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _started_brokers(runs: Path) -> int:
    return sum(1 for log in runs.glob("*/logs/broker-*.log")
               if b"Kafka Server started" in log.read_bytes())


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_chaos_run_leaves_nothing_running(tmp_path: Path, sig: int,
                                                      request: pytest.FixtureRequest) -> None:
    runs = tmp_path / "runs"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "suites/test_smoke.py::test_hard_kill_and_restart_rejoins_isr",
            "--runs-dir", str(runs)]
    for opt in ("--kafka-version", "--kafka-dist"):
        if request.config.getoption(opt):
            args += [opt, str(request.config.getoption(opt))]
    root = Path(__file__).resolve().parent.parent
    child = subprocess.Popen(args, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = _wait_for(lambda: _started_brokers(runs) == 3, 120)
        assert started, "the child run never brought its cluster up"
        spawned = _children_of(child.pid)  # 4 JVMs and the Toxiproxy server
        assert len(spawned) == 5, spawned
        child.send_signal(sig)
        child.wait(timeout=90)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert _wait_for(lambda: not any(_alive(pid) for pid in spawned), 15), (
        f"left running after {sig!r}: {[pid for pid in spawned if _alive(pid)]}")


def test_node_that_never_starts_reports_its_log_tail_and_cleans_up(tmp_path: Path,
                                                                  kafka_build) -> None:
    shape = ClusterShape(brokers=1, controllers=1,
                         broker_config={"log.segment.bytes": "not-a-number"})
    run_dir = tmp_path / "bad"
    with pytest.raises(NodeNotReady) as info, open_session(kafka_build, shape, run_dir,
                                                           history=History(run_dir)):
        pass
    assert "log.segment.bytes" in str(info.value) and "Last lines of" in str(info.value)
    assert _wait_for(lambda: not _processes_mentioning(str(run_dir)), 15)


def test_unknown_kafka_version_is_rejected_before_anything_starts() -> None:
    from harness.cluster import builds
    from harness.infra.errors import BuildError
    with pytest.raises(BuildError, match=r"9\.9\.9.*not on Maven Central"):
        builds.from_maven("9.9.9")
