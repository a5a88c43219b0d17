"""Bounded waits a backend uses while bringing nodes up (the readiness of the whole
cluster is a strategy the caller passes: base.Readiness)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from harness.infra import procs
from harness.infra.errors import NodeNotReady

_POLL_S = 0.1


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def wait_log_line(log: Path, marker: str, offset: int, alive: Callable[[], bool], what: str,
                  timeout_s: float) -> None:
    """Wait until `marker` appears in `log` after byte `offset`; fail fast if the process dies.

    Each poll reads only what the log gained since the last one (plus the marker's length
    less one byte, for a marker split across two reads): a JVM's start-up log is read once,
    not once per poll."""
    deadline = time.monotonic() + timeout_s
    needle = marker.encode()
    seen = b""
    while time.monotonic() < deadline:
        procs.check_interrupted()
        if log.exists():
            with open(log, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
            offset += len(chunk)
            seen = seen[-(len(needle) - 1):] + chunk if len(needle) > 1 else chunk
            if needle in seen:
                return
        if not alive():
            raise NodeNotReady(f"{what} exited before it was ready. Last lines of {log}:\n"
                               f"{log_tail(log)}")
        time.sleep(_POLL_S)
    raise NodeNotReady(f"{what} not ready after {timeout_s:.0f}s (no '{marker}' in its log). "
                       f"Last lines of {log}:\n{log_tail(log)}")
