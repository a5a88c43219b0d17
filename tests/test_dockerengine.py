"""Starting dockerd beside one that is still stopping (no engine needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.infra import dockerengine


def test_a_daemon_still_stopping_is_waited_for_before_a_new_one_starts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # CI, 2026-11-25: another harness process stopped the dockerd it had started while this
    # one used it; the next test started dockerd at once, which refused ("pid file found")
    # as the old one was still stopping, and every later test failed the same way.
    stopping = subprocess.Popen([sys.executable, "-c",
                                 "import time; print('up', flush=True); time.sleep(1.5)"],
                                stdout=subprocess.PIPE)
    # Its process name is the interpreter's only once it runs: read before that (a loaded
    # machine), it is the forking parent's, and the "daemon" would not be recognised.
    assert stopping.stdout is not None and stopping.stdout.readline() == b"up\n"
    pid_file = tmp_path / "docker.pid"
    pid_file.write_text(str(stopping.pid))
    spawned: list[bool] = []

    def spawn(cmd: list[str], log: Path) -> Any:
        spawned.append(stopping.poll() is not None)  # was the old daemon gone by then?
        return subprocess.Popen([sys.executable, "-c", "pass"])

    monkeypatch.setattr(dockerengine, "PID_FILE", pid_file)
    monkeypatch.setattr(dockerengine, "DOCKERD_COMM", Path(f"/proc/{stopping.pid}/comm")
                        .read_text().strip())
    monkeypatch.setattr(dockerengine, "_docker_info_ok", lambda timeout_s=10.0: False)
    monkeypatch.setattr(dockerengine, "_dockerd", lambda: "/usr/sbin/dockerd")
    monkeypatch.setattr(dockerengine, "_wait_ready", lambda proc, log: None)
    monkeypatch.setattr(dockerengine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(dockerengine.procs, "spawn", spawn)
    monkeypatch.setattr(dockerengine.atexit, "register", lambda fn: None)
    monkeypatch.setattr(dockerengine, "cache_dir", lambda name: str(tmp_path))
    monkeypatch.setattr(dockerengine, "_started", None)
    try:
        dockerengine.ensure_engine()
    finally:
        stopping.kill()
        stopping.wait()
    assert spawned == [True]


def test_a_stale_pid_file_naming_another_program_is_no_daemon(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        pid_file = tmp_path / "docker.pid"
        pid_file.write_text(str(other.pid))  # the pid a dead dockerd left, now reused
        monkeypatch.setattr(dockerengine, "PID_FILE", pid_file)
        assert dockerengine._previous_daemon() is None
    finally:
        other.kill()
        other.wait()
