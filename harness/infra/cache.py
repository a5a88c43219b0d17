"""Where installed components (Kafka jars, Toxiproxy binary, images) are cached."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.infra import progress


def cache_root() -> Path:
    """`$KAFKA_CHAOS_CACHE`, else `$XDG_CACHE_HOME/kafka-chaos`, else `~/.cache/kafka-chaos`."""
    explicit = os.environ.get("KAFKA_CHAOS_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "kafka-chaos"
    root.mkdir(parents=True, exist_ok=True)
    return root


def cache_dir(*parts: str) -> Path:
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def lock_path(entry: Path) -> Path:
    """The lock file of a cache entry: beside it, so removing the entry keeps the lock."""
    return entry.parent / f".{entry.name}.lock"


@contextmanager
def entry_lock(entry: Path) -> Iterator[None]:
    """Hold the exclusive lock of one cache entry while it is checked and filled.

    Two test runs (or pytest-xdist workers) installing the same entry at once would write
    into each other's half-made files. flock is per open file, so it excludes threads of
    one process as well as other processes, and the kernel drops it if the holder dies."""
    path = lock_path(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.say(f"waiting for another kafka-chaos process to finish {entry}")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
