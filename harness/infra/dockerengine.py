"""A usable Docker engine for the docker backend: installed and started on demand.

`ensure_engine()` installs Debian's `docker.io` with apt when `dockerd` is missing, starts
`dockerd` in the background when `docker info` fails (log in the cache dir), and waits
(bounded) until it answers. A daemon we started is stopped at exit; one that was already
running is left alone. Nothing is ever pulled: Ryuk is disabled and images are built locally.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from harness.infra import procs, progress
from harness.infra.cache import cache_dir
from harness.infra.errors import ToolMissing

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

_READY_TIMEOUT_S = 60.0
_started: subprocess.Popen[bytes] | None = None


class DockerUnavailable(ToolMissing):
    """No Docker engine can be used or started on this machine."""


def _docker_info_ok(timeout_s: float = 10.0) -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        out = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                             capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and bool(out.stdout.strip())


def engine_running() -> bool:
    """True when a Docker engine answers right now (nothing is installed or started)."""
    return _docker_info_ok()


def _install() -> None:
    apt_install("docker.io", "the Docker engine (dockerd)")


def apt_install(package: str, what: str) -> None:
    """Install a Debian package with apt-get, or raise DockerUnavailable saying why not."""
    apt = shutil.which("apt-get")
    if apt is None:
        raise DockerUnavailable(f"no {what} and no apt-get to install {package}: install it "
                                "yourself (and start dockerd)")
    if os.geteuid() != 0:
        raise DockerUnavailable(f"no {what}; installing Debian's {package} needs root: run "
                                f"`apt-get install {package}` as root")
    progress.say(f"installing Debian's {package} with apt-get (first use of the docker backend)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in ([apt, "update", "-q"], [apt, "install", "-y", "-q", package]):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if out.returncode != 0:
            raise DockerUnavailable(f"`{' '.join(cmd)}` failed; cannot install {package}:\n"
                                    f"{(out.stdout + out.stderr)[-1500:]}")


def _dockerd() -> str | None:
    return shutil.which("dockerd") or (
        "/usr/sbin/dockerd" if Path("/usr/sbin/dockerd").exists() else None)


def ensure_engine() -> None:
    """Make `docker info` succeed, installing/starting an engine if needed, or raise
    DockerUnavailable with the reason."""
    global _started
    if _docker_info_ok():
        return
    if _started is not None and _started.poll() is None:
        _wait_ready(_started, Path(cache_dir("docker")) / "dockerd.log")
        return
    if _dockerd() is None:
        _install()
    dockerd = _dockerd()
    if dockerd is None:
        raise DockerUnavailable("docker.io installed but no dockerd binary found")
    if os.geteuid() != 0:
        raise DockerUnavailable("no Docker engine is running and starting dockerd needs root")
    if _previous_daemon_answers():
        return
    log = Path(cache_dir("docker")) / "dockerd.log"
    progress.say(f"starting dockerd (log: {log})")
    _started = procs.spawn([dockerd], log)
    procs.forget(_started)  # outlives cluster teardowns; stopped at exit by our own hook
    atexit.register(stop_engine)
    _wait_ready(_started, log)


PID_FILE = Path("/var/run/docker.pid")
#: The daemon's process name (/proc/PID/comm).
DOCKERD_COMM = "dockerd"


def _previous_daemon() -> int | None:
    """The pid in dockerd's pid file while that process lives (a daemon starting up or
    stopping: another harness process may be stopping the one it started), else None."""
    try:
        pid = int(PID_FILE.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive_dockerd(pid) else None


def _alive_dockerd(pid: int) -> bool:
    """The process is a dockerd that has not exited (a zombie waiting for its parent has;
    a stale pid file may name a pid since reused by another program)."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return comm == DOCKERD_COMM and stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])


def _previous_daemon_answers() -> bool:
    """Wait (bounded) while a daemon that does not answer yet still lives: True if it comes
    to answer, False once it is gone. A second dockerd would refuse to start beside it
    ("pid file found"), so starting one before it is gone fails every test after it."""
    pid = _previous_daemon()
    if pid is None:
        return False
    progress.say(f"a dockerd (pid {pid}) is starting or stopping: waiting for it")
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline and _previous_daemon() == pid:
        if _docker_info_ok(5):
            return True
        time.sleep(0.5)
    if _previous_daemon() == pid:
        raise DockerUnavailable(f"dockerd (pid {pid}, {PID_FILE}) neither answers nor exits "
                                f"within {_READY_TIMEOUT_S:.0f}s: stop it, then run again")
    return False


def _wait_ready(proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            raise DockerUnavailable(f"dockerd exited with {proc.returncode} at start "
                                    f"(log {log}):\n{tail}")
        if _docker_info_ok(5):
            progress.say("Docker engine ready")
            return
        time.sleep(0.5)
    raise DockerUnavailable(f"dockerd did not answer within {_READY_TIMEOUT_S:.0f}s (log {log})")


OWNER_LABEL = "kafka-chaos.owner"


def owner() -> str:
    """Label value marking containers/networks created by this process."""
    return str(os.getpid())


def remove_owned(owner_value: str | None = None) -> None:
    """Remove every container and network this process created (all named
    kafka-chaos-<pid>-...)."""
    remove_named(f"kafka-chaos-{owner_value or owner()}-")


def remove_named(prefix: str) -> None:
    """Remove every container and network whose name contains `prefix` (one run's), with
    the docker CLI: a fresh connection each time, so an API call that an interrupt cut
    short cannot stall the cleanup, and a container created just before the interrupt, that
    the harness never got a handle on, goes too."""
    try:
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"name={prefix}"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f", "-v", *ids], capture_output=True, timeout=60)
        nets = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"name={prefix}"],
                              capture_output=True, text=True, timeout=30).stdout.split()
        if nets:
            subprocess.run(["docker", "network", "rm", *nets], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass


def started_by_us() -> bool:
    return _started is not None and _started.poll() is None


def stop_engine() -> None:
    """Stop dockerd if (and only if) this process started it."""
    global _started
    proc, _started = _started, None
    if proc is None:
        return
    if proc.poll() is None:
        remove_owned()  # whatever a cleanup hook has not removed yet
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
