"""Results shipped back from a Spark executor to the driver, and landed there.

A task on an executor writes into a scratch directory of its own machine; ``pack`` makes a
gzipped tar of it (the task's return value), and the driver's ``land`` puts its entries
under the driver's directory: first unpacked beside their place, then renamed into it, so a
task lost half way (its executor gone) leaves nothing in the campaign, and a task run twice
(Spark's retry on another executor) lands once. No directory needs to be shared between
the machines (docs/CERTIFY.md "On a Spark cluster").
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

SCRATCH_PREFIX = "kafka-chaos-task-"
#: Files from this size on are made sparse again after landing (``resparse``), in blocks of
#: ``HOLE_BYTES`` of zeros: a tar does not keep holes, and a run directory holds sparse
#: files (the loop images of extra log dirs, 256 MiB each; Kafka's preallocated index files
#: of a killed broker, 10 MiB each) that would land dense: ~1 GB for one logdir run.
SPARSE_FROM_BYTES = 1 << 20
HOLE_BYTES = 1 << 16
#: A scratch directory this old whose task holds no lock on it is left by a lost or
#: cancelled attempt (its Python worker killed before its ``finally``).
STALE_S = 120.0


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A task's scratch directory in this machine's temp dir, removed at the end; held
    locked while the task lives, so the next task on the machine removes those of lost or
    cancelled attempts (``sweep``)."""
    sweep()
    path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    lock = open(path / ".lock", "w")  # noqa: SIM115 - held for the task's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield path
    finally:
        lock.close()
        shutil.rmtree(path, ignore_errors=True)


def sweep(now: float | None = None, root: Path | None = None) -> list[Path]:
    """Remove the scratch directories no task holds (their lock free) older than STALE_S."""
    now = time.time() if now is None else now
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        try:
            if now - path.stat().st_mtime < STALE_S:
                continue
            with open(path / ".lock", "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live task, or gone meanwhile
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def pack(root: Path) -> bytes:
    """Everything under ``root`` (names relative to it) as a gzipped tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for entry in sorted(root.iterdir()) if root.is_dir() else ():
            if entry.name != ".lock":  # scratch()'s, not the task's
                tar.add(entry, arcname=entry.name)
    return buf.getvalue()


def resparse(root: Path) -> int:
    """Rewrite every regular file under ``root`` of ``SPARSE_FROM_BYTES`` or more with its
    zero blocks as holes (the same bytes); returns the bytes no longer stored."""
    saved = 0
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        st = path.stat()
        if st.st_size < SPARSE_FROM_BYTES:
            continue
        tmp = path.with_name(path.name + ".sparse")
        with path.open("rb") as src, tmp.open("wb") as out:
            while block := src.read(HOLE_BYTES):
                if block.count(0) == len(block):
                    out.seek(len(block), os.SEEK_CUR)
                else:
                    out.write(block)
            out.truncate(st.st_size)
        os.chmod(tmp, st.st_mode)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, path)
        saved += max(0, st.st_blocks * 512 - path.stat().st_blocks * 512)
    return saved


def land(data: bytes, dest: Path, replace: bool = False) -> list[Path]:
    """Unpack ``data`` (from ``pack``) into ``dest``: each top-level entry is unpacked in a
    landing directory under ``dest`` and renamed into place. An entry already there is kept
    (a run directory's name is unique: the same one twice is the same run), or with
    ``replace`` removed first (a part's directory re-made by a re-run item). Returns the
    top-level paths under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    landing = dest / f".landing-{uuid.uuid4().hex[:12]}"
    landing.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(landing, filter="data")  # no absolute paths, no ../, no devices
        resparse(landing)
        out = []
        for entry in sorted(landing.iterdir()):
            target = dest / entry.name
            if target.exists() or target.is_symlink():
                if not replace:
                    out.append(target)
                    continue
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                else:
                    target.unlink()
            os.replace(entry, target)
            out.append(target)
        return out
    finally:
        shutil.rmtree(landing, ignore_errors=True)
