"""Leases on address blocks, so clusters started at once (``--jobs N``, pytest-xdist, two
users) never pick the same loopback block.

Checking that a block's ports are free and then binding them is a race between two
processes choosing at the same moment. A lease is an exclusive flock on a file named after
the block, held by the cluster until its teardown: the kernel drops it if the holder
dies, so a crashed run never leaves a block taken.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def lease_dir() -> Path:
    path = Path(os.environ.get("KAFKA_CHAOS_LEASES") or
                Path(tempfile.gettempdir()) / "kafka-chaos-blocks")
    path.mkdir(parents=True, exist_ok=True)
    return path


class BlockLease:
    """An exclusive hold on block ``<net>.<block>``; ``release`` (idempotent) gives it up."""

    def __init__(self, net: str, block: int, fh: IO[str]) -> None:
        self.net, self.block, self._fh = net, block, fh

    def release(self) -> None:
        release(self._fh)


def try_exclusive(path: Path) -> IO[str] | None:
    """An exclusive flock on ``path`` (made if missing), or None when another holds it; the
    holder gives it up with ``release`` (or by dying)."""
    fh = open(path, "a")  # noqa: SIM115 - held until release
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    return fh


def release(fh: IO[str]) -> None:
    """Give up a hold from ``try_exclusive``; idempotent."""
    if not fh.closed:
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def try_lease(net: str, block: int) -> BlockLease | None:
    fh = try_exclusive(lease_dir() / f"{net}.{block}.lock")
    return None if fh is None else BlockLease(net, block, fh)


def lease_free_block(net: str, low: int, high: int, is_free: Callable[[int], bool],
                     tries: int = 40, rng: random.Random | None = None) -> BlockLease | None:
    """A leased block in low..high whose addresses ``is_free`` (checked under the lease),
    or None after ``tries`` candidates."""
    rng = rng or random.Random()
    candidates = list(range(low, high + 1))
    rng.shuffle(candidates)
    for block in candidates[:tries]:
        lease = try_lease(net, block)
        if lease is None:
            continue
        if is_free(block):
            return lease
        lease.release()
    return None
