"""A broker's extra log directories as filesystems of their own, and their failure.

Directory 0 of a broker is its data dir (it holds the metadata log: Kafka halts when that
one fails, ReplicaManager.handleLogDirFailure "the metadata log dir ... has failed").
Directories 1.. are each a small ext4 filesystem in an image file, loop-mounted on
``NODE/mnt-I``; Kafka's log dir is ``NODE/mnt-I/kafka`` (not the mount's root: its
``lost+found`` is no topic-partition, and LogManager would fail the directory at start).

A failure (``fail``) is ext4's shutdown ioctl (EXT4_IOC_SHUTDOWN, Linux 4.10+, what
``xfs_io -c shutdown`` sends) with EXT4_GOING_FLAGS_DEFAULT: the filesystem is synced
first, then every read, write, fsync or create on it, through files already open too,
fails with EIO, which Kafka's log layer turns into a KafkaStorageException and its
LogDirFailureChannel into an offline directory. Its repair (``repair``, while the broker
is down: the broker's restart) is an unmount, e2fsck and a mount again. Why this way and
what else was tried: docs/LOG-DIRS.md.

Needs root (mount, loop devices) and e2fsprogs; every mount is released with the cluster
(a lazy unmount if a process still holds it), also when the run is interrupted.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

from harness.infra.errors import ClusterError

#: _IOR('X', 125, __u32): EXT4_IOC_SHUTDOWN (linux/fs/ext4/ext4.h), the same number as
#: XFS_IOC_GOINGDOWN.
EXT4_IOC_SHUTDOWN = 0x8004587D
#: Sync the filesystem, then shut it down (EXT4_GOING_FLAGS_DEFAULT): the records Kafka
#: wrote stay on the image, so a repaired directory comes back with its logs.
GOING_FLAGS_DEFAULT = 0
#: Size of each directory's image (sparse: only what Kafka writes takes disk space).
IMAGE_MB = 256
TOOL_TIMEOUT_S = 60


def mount_point(node_dir: Path, index: int) -> Path:
    return node_dir / f"mnt-{index}"


def log_dir(node_dir: Path, index: int) -> Path:
    """Kafka's log dir ``index`` (>= 1) of the node whose directory is ``node_dir``."""
    return mount_point(node_dir, index) / "kafka"


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    if done.returncode != 0:
        raise ClusterError(f"{what}: `{' '.join(cmd)}` exited {done.returncode}: "
                           f"{(done.stdout + done.stderr).strip()[-400:]}")


def require() -> str | None:
    """Why extra log directories cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "several log directories need root (each is a loop-mounted filesystem)"
    missing = [t for t in ("mount", "umount", "mkfs.ext4", "e2fsck") if not shutil.which(t)]
    if missing:
        return f"several log directories need {', '.join(missing)} (e2fsprogs, util-linux)"
    return None


def create(node_dir: Path, index: int) -> Path:
    """Make directory ``index`` of a node: its image, formatted and mounted. Returns the
    log dir (empty). The caller releases it (``release``)."""
    image = node_dir / f"disk-{index}.img"
    mnt = mount_point(node_dir, index)
    mnt.mkdir(parents=True, exist_ok=True)
    with image.open("wb") as f:
        f.truncate(IMAGE_MB * 1024 * 1024)
    _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1", str(image)],
         f"formatting {image.name}")
    _run(["mount", "-o", "loop", str(image), str(mnt)], f"mounting {image.name}")
    out = log_dir(node_dir, index)
    out.mkdir()
    return out


def fail(node_dir: Path, index: int) -> None:
    """Make every I/O on directory ``index`` fail with EIO (ext4 shutdown)."""
    fd = os.open(mount_point(node_dir, index), os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", GOING_FLAGS_DEFAULT))
    except OSError as exc:
        raise ClusterError(f"failing log dir {index} of {node_dir.name}: the ext4 shutdown "
                           f"ioctl was refused: {exc}") from exc
    finally:
        os.close(fd)


def repair(node_dir: Path, index: int) -> None:
    """Directory ``index`` usable again: unmounted, checked, mounted. Only while no process
    has files open on it (the broker is down): a second mount of an image still mounted
    would corrupt it, so a busy unmount is an error here."""
    image = node_dir / f"disk-{index}.img"
    mnt = mount_point(node_dir, index)
    if os.path.ismount(mnt):
        _run(["umount", str(mnt)], f"unmounting failed log dir {index} of {node_dir.name}")
    wait_released(image, f"log dir {index} of {node_dir.name}")
    done = subprocess.run(["e2fsck", "-f", "-y", str(image)], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S)
    if done.returncode >= 4:  # 1 and 2: errors corrected (e2fsck(8) exit codes)
        raise ClusterError(f"e2fsck of {image.name} exited {done.returncode}: "
                           f"{(done.stdout + done.stderr).strip()[-400:]}")
    _run(["mount", "-o", "loop", str(image), str(mnt)], f"mounting {image.name} again")


#: How long an unmounted image's loop device may take to be detached (autoclear: when the
#: filesystem's last reference goes).
RELEASE_WAIT_S = 10.0


def loop_devices(image: Path) -> list[str]:
    """The loop devices backed by ``image`` (``losetup -j``); [] without losetup."""
    if not shutil.which("losetup"):
        return []
    done = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S)
    return [line.split(":", 1)[0] for line in done.stdout.splitlines() if line.strip()]


def wait_released(image: Path, what: str, timeout_s: float = RELEASE_WAIT_S) -> None:
    """Return once no loop device backs ``image`` (bounded poll), else a ClusterError. The
    host's unmount only detaches its own view: a copy of the mount in another mount
    namespace (a container that bound a parent directory recursively) keeps the filesystem,
    and its loop device, alive. e2fsck on it then checks a mounted filesystem, and a mount
    of the image reuses that loop device and its shut-down superblock (seen on the docker
    backend before its binds became non-recursive, docs/LOG-DIRS.md)."""
    deadline = time.monotonic() + timeout_s
    while True:
        held = loop_devices(image)
        if not held:
            return
        if time.monotonic() >= deadline:
            raise ClusterError(f"{what}: {image.name} is unmounted here but still attached "
                               f"to {', '.join(held)} after {timeout_s:.0f}s: another mount "
                               "namespace (a container) still holds its filesystem, so it "
                               "cannot be checked and mounted afresh")
        time.sleep(0.1)


def release(node_dir: Path, index: int) -> None:
    """Unmount directory ``index`` (lazily if something still holds it: the mount leaves
    the namespace at once, the loop device when its last file closes). Idempotent."""
    mnt = mount_point(node_dir, index)
    if not os.path.ismount(mnt):
        return
    done = subprocess.run(["umount", str(mnt)], capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, text=True,
                       timeout=TOOL_TIMEOUT_S)
