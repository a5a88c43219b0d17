"""Every process the harness starts is registered here and stopped when the run ends.

Three layers make sure nothing is left running: explicit teardown by the owner, an
atexit/SIGTERM hook that kills whatever is still registered, and PR_SET_PDEATHSIG so
the kernel kills a child if the harness process itself dies.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1
# Reentrant: the SIGTERM handler runs on the main thread between any two bytecodes, also
# while that thread holds this lock (spawn, forget), and then takes it again, as do the
# cleanups it runs (a cluster teardown calls kill -> forget and unregister_cleanup). A
# plain Lock deadlocked the process there instead of stopping it.
_lock = threading.RLock()
_live: dict[int, subprocess.Popen[bytes]] = {}
_cleanups: dict[int, Callable[[], None]] = {}
_atexit_installed = False
_sigterm_installed = False
#: Set once the run is being interrupted (SIGTERM, Ctrl-C): runs on other threads stop at
#: their next poll instead of stepping on through clusters that are already gone.
_interrupted = threading.Event()


class Interrupted(KeyboardInterrupt):
    """Raised on a run's thread when the process is being interrupted."""


def interrupt() -> None:
    """Tell every run on every thread to stop (they raise Interrupted at their next poll)."""
    _interrupted.set()


def check_interrupted() -> None:
    """Raise Interrupted if the process is being interrupted; called wherever a run polls."""
    if _interrupted.is_set():
        raise Interrupted("the run was interrupted")


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass  # not Linux: the atexit hook still applies


def spawn(cmd: Sequence[str], log: Path, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start `cmd` in its own process group with stdout+stderr appended to `log`."""
    install_exit_hooks()
    log.parent.mkdir(parents=True, exist_ok=True)
    out: IO[bytes] = open(log, "ab")  # noqa: SIM115 - the child owns it after Popen
    try:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent)
    finally:
        out.close()
    with _lock:
        _live[proc.pid] = proc
    return proc


def kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL, wait_s: float = 30.0) -> None:
    """Send `sig` to the process group and reap it; escalate to SIGKILL after `wait_s`."""
    _signal_group(proc, sig)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=10)
    forget(proc)


def forget(proc: subprocess.Popen[bytes]) -> None:
    with _lock:
        _live.pop(proc.pid, None)


def signal_process(proc: subprocess.Popen[bytes], sig: int) -> None:
    _signal_group(proc, sig)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        proc.send_signal(sig)


def register_cleanup(key: object, fn: Callable[[], None]) -> None:
    """Run `fn` at exit/SIGTERM unless unregistered first (e.g. removing docker containers)."""
    install_exit_hooks()
    with _lock:
        _cleanups[id(key)] = fn


def unregister_cleanup(key: object) -> None:
    with _lock:
        _cleanups.pop(id(key), None)


def live_pids() -> list[int]:
    with _lock:
        return [pid for pid, proc in _live.items() if proc.poll() is None]


def kill_all() -> None:
    with _lock:
        procs = list(_live.values())
        cleanups = list(_cleanups.values())
        _cleanups.clear()
    for fn in cleanups:
        try:
            fn()
        except Exception:  # noqa: BLE001 - best effort at exit, keep killing the rest
            pass
    for proc in procs:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        forget(proc)


def _on_sigterm(signum: int, frame: object) -> None:
    interrupt()
    kill_all()
    # Re-raise as KeyboardInterrupt so pytest and the CLI unwind their own teardown too.
    raise KeyboardInterrupt(f"signal {signum}")


def _on_sigint(signum: int, frame: object) -> None:
    # Remembered as well as raised: a KeyboardInterrupt raised while a finalizer runs (the
    # __del__ of a socket the collector frees, e.g. under docker-py's HTTP connection) is
    # printed and swallowed by Python ("Exception ignored in"), and the run went on as if
    # Ctrl-C had never come (seen on CI: a docker bring-up interrupted by SIGINT reached UP).
    # The run's next poll (check_interrupted) raises it again.
    interrupt()
    raise KeyboardInterrupt


def install_exit_hooks() -> None:
    """Idempotent. Called where processes and cleanups are registered (spawn,
    register_cleanup), so a run that never starts one keeps Python's own SIGTERM and
    exit behaviour. The SIGTERM handler can only be set from the main thread: a first call
    from another thread leaves it for the next call from the main thread."""
    global _atexit_installed, _sigterm_installed
    with _lock:
        if not _atexit_installed:
            _atexit_installed = True
            atexit.register(kill_all)
        if not _sigterm_installed and threading.current_thread() is threading.main_thread():
            _sigterm_installed = True
            signal.signal(signal.SIGTERM, _on_sigterm)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                signal.signal(signal.SIGINT, _on_sigint)  # not when ignored or taken
