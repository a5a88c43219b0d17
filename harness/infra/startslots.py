"""Start slots: how many clusters may be coming up at once on this machine.

A bring-up is the CPU-heaviest moment of a run (every node's JVM starts at once: class
loading, JIT, Kafka's start-up). Clusters run side by side (``--jobs``, pytest-xdist
workers, two users) that come up together oversubscribe the cores, and every JVM start
then costs more CPU, not only more time (2 cores, 4 clusters, 4 bring-ups at once: 8-33 s
each instead of 3.4 s alone; the suite 8% faster on average with one at a time, from 17%
faster to 3% slower per interleaved pair on a host whose speed drifted as much:
bench/RESULTS-speed.md, 2026-11-26). So a cluster holds a start slot from its first
process to "ready", and at most ``default_slots()`` clusters hold one at a time; the others
wait their turn before starting anything. Nothing a scenario judges has started then, so
the wait changes no verdict; steps (restarts included) never wait for a slot.

A slot is an exclusive flock on one of N files in the lease directory (the kernel drops
it when the holder dies), so the limit holds across processes as well as threads.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from harness.infra import blocks, wait
from harness.infra.errors import ClusterError, UsageError
from harness.infra.machine import cores

ENV = "KAFKA_CHAOS_START_SLOTS"
#: Bring-ups at once per core. On 2 cores, 4 clusters: one at a time 4:49 and 560 CPU-s,
#: two 5:19 and 620, no limit 6:35 and 772 (one run each, in a row); interleaved with no
#: limit, one at a time was 8% faster on average (4 + 3 repetitions).
SLOTS_PER_CORE = 0.5
_POLL_S = 0.05
#: A waiter gives up after this: longer than any bring-up the backends allow (node start
#: 90 s + ready 60 s) times the clusters that can be ahead of it.
WAIT_S = 1800.0


def default_slots(ncores: int | None = None) -> int:
    """Slots from ``KAFKA_CHAOS_START_SLOTS`` (0: no limit), else SLOTS_PER_CORE per core
    (at least 1)."""
    explicit = os.environ.get(ENV)
    if explicit is not None and explicit.strip() != "":
        try:
            value = int(explicit)
        except ValueError:
            value = -1
        if value < 0:
            raise UsageError(f"{ENV}={explicit!r}: give a whole number of clusters that may "
                             "start at once (0: no limit)")
        return value
    ncores = cores() if ncores is None else ncores
    return max(1, int(ncores * SLOTS_PER_CORE))


@contextlib.contextmanager
def start_slot(slots: int | None = None, wait_s: float = WAIT_S,
               directory: Path | None = None) -> Iterator[float]:
    """Hold one of ``slots`` start slots (default ``default_slots()``; 0: no limit) for the
    block; yields the seconds waited for it. Polls, so Ctrl-C/SIGTERM stop the wait."""
    slots = default_slots() if slots is None else slots
    if slots <= 0:
        yield 0.0
        return
    where = directory or blocks.lease_dir()
    files = [where / f"start-slot-{i}.lock" for i in range(slots)]

    def any_free() -> IO[str] | None:
        return next((fh for fh in map(blocks.try_exclusive, random.sample(files, slots))
                     if fh is not None), None)
    t0 = time.monotonic()
    try:
        held = wait.until(any_free, lambda fh: fh is not None, "a cluster start slot",
                          timeout_s=wait_s, interval_s=_POLL_S)
    except wait.WaitTimeout:
        raise ClusterError(f"no cluster start slot free after {wait_s:.0f}s ({slots} slot(s) "
                           f"under {where}); another run's bring-up is stuck, or set "
                           f"{ENV}=0") from None
    assert held is not None  # until returned only once any_free found one
    try:
        yield time.monotonic() - t0
    finally:
        blocks.release(held)
