"""AppCDS: a class-data archive per (build, JDK, JVM options), so a node's JVM maps the
classes Kafka loads at start instead of parsing and verifying them from the jars.

Made on first use and cached with the build (beside a Maven build's jars; in the cache
for a local dist): one training start of the build in combined mode (broker+controller)
with ``-XX:ArchiveClassesAtExit`` (JDK 13+ dynamic archive, JEP 350), stopped with
SIGTERM so the JVM dumps at exit. Every node then starts with
``-XX:SharedArchiveFile=<archive> -Xshare:auto``.

Never fails a run:
- the key covers the jars (names, sizes, mtimes), the JDK (its ``release`` file and
  ``lib/modules``) and the JVM options, so a new build or JDK gets its own archive;
- the archive is written to a temporary name, checked with ``-Xshare:on`` (the JVM refuses
  to start if it cannot map it) and only then renamed into place, with a sidecar holding
  its size and SHA-256; a file that does not match its sidecar (corrupt, truncated) is not
  used (and is made again);
- concurrent first use: the entry lock (harness.infra.cache.entry_lock) lets one process
  train; the others wait, then find the archive;
- if training fails, a ``.failed`` marker with the reason stops every later run from
  paying for it again with the same key; the run goes on without an archive;
- ``-Xshare:auto``: a JVM that still cannot map the archive (e.g. a mismatch found only at
  start) runs without it, as the JDK documents.
``KAFKA_CHAOS_CDS=0`` turns it off (the old path, for benchmarks).
The docker backend does not use it: the archive must be dumped by the very JDK that maps
it, and the image's JDK is not the host's (see harness/cluster/backends/docker.py).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.cluster import config as kafkaconfig
from harness.cluster.builds import Build
from harness.infra import procs, progress, tools
from harness.infra.cache import cache_dir, entry_lock

ENV = "KAFKA_CHAOS_CDS"
_OFF = {"0", "off", "false", "no"}
#: The training start: JVM start + Kafka's own start on 2 cores takes 5-15 s; a loaded
#: machine gets up to this long before we give up (and run without an archive).
TRAIN_START_S = 120.0
#: Clean shutdown of the training node plus the archive dump (tens of MB).
TRAIN_STOP_S = 90.0
_SUFFIX = ".jsa"

#: Archives already checked by this process: path -> (size, mtime_ns) when checked.
_checked: dict[Path, tuple[int, int]] = {}
_checked_lock = threading.Lock()

Trainer = Callable[[Build, Path, Sequence[str], Path], None]


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in _OFF


def archive_args(build: Build, java: Path, jvm_opts: Sequence[str] = kafkaconfig.JVM_OPTS,
                 trainer: Trainer | None = None) -> list[str]:
    """The JVM flags that map the build's archive, or [] (turned off, or no usable
    archive: then the nodes start as before). Never raises."""
    if not enabled():
        return []
    try:
        archive = ensure_archive(build, java, jvm_opts, trainer or train)
    except Exception as exc:  # noqa: BLE001 - an archive is an optimisation, never a failure
        progress.say(f"class-data archive unavailable ({type(exc).__name__}: {exc}); "
                     "starting the JVMs without it")
        return []
    if archive is None:
        return []
    return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]


def archive_path(build: Build, java: Path, jvm_opts: Sequence[str]) -> Path:
    name = f"cds-{archive_key(build, java, jvm_opts)}{_SUFFIX}"
    if build.source.startswith("maven:"):
        return build.libs.parent / name
    return cache_dir("cds") / name


def archive_key(build: Build, java: Path, jvm_opts: Sequence[str]) -> str:
    """Stable across processes; changes with the jars, the JDK or the JVM options."""
    digest = hashlib.sha256(f"{build.version}\0{build.source}\0{' '.join(jvm_opts)}\0".encode())
    for jar in sorted(build.libs.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    home = Path(os.path.realpath(java)).parent.parent
    tools.hash_jdk(digest, home)
    return digest.hexdigest()[:16]


def ensure_archive(build: Build, java: Path, jvm_opts: Sequence[str],
                   trainer: Trainer) -> Path | None:
    """The archive, made now if missing or broken; None if training failed for this key."""
    archive = archive_path(build, java, jvm_opts)
    if _usable(archive):
        return archive
    with entry_lock(archive):  # one process trains; the others wait, then find it
        if _usable(archive):
            return archive
        failed = _marker(archive, ".failed")
        if failed.exists():
            return None
        _discard(archive)
        tmp = archive.with_name(f"{archive.name}.tmp-{os.getpid()}")
        t0 = time.monotonic()
        progress.say(f"making a class-data archive for Kafka {build.version} "
                     f"(once per build and JDK) at {archive}")
        try:
            trainer(build, java, jvm_opts, tmp)
            if not tmp.is_file() or tmp.stat().st_size == 0:
                raise RuntimeError("the training JVM wrote no archive")
            _verify_maps(java, jvm_opts, build.classpath(), tmp)
        except Exception as exc:  # noqa: BLE001 - recorded, then the run goes on without
            tmp.unlink(missing_ok=True)
            failed.write_text(f"{type(exc).__name__}: {exc}\n"
                              f"(delete this file to try again)\n")
            progress.say(f"class-data archive for Kafka {build.version} not made: {exc}; "
                         f"running without (reason kept in {failed})")
            return None
        os.replace(tmp, archive)
        _marker(archive, ".ok").write_text(_fingerprint(archive))
        progress.say(f"class-data archive made in {time.monotonic() - t0:.1f}s")
        with _checked_lock:
            st = archive.stat()
            _checked[archive] = (st.st_size, st.st_mtime_ns)
        return archive


def _marker(archive: Path, suffix: str) -> Path:
    return archive.with_name(archive.name + suffix)


def _fingerprint(archive: Path) -> str:
    digest = hashlib.sha256()
    with open(archive, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return f"{archive.stat().st_size} {digest.hexdigest()}\n"


def _usable(archive: Path) -> bool:
    """Present and matching its sidecar (checked once per process and file version)."""
    try:
        st = archive.stat()
        recorded = _marker(archive, ".ok").read_text()
    except OSError:
        return False
    with _checked_lock:
        if _checked.get(archive) == (st.st_size, st.st_mtime_ns):
            return True
    if recorded != _fingerprint(archive):
        return False
    with _checked_lock:
        _checked[archive] = (st.st_size, st.st_mtime_ns)
    return True


def _discard(archive: Path) -> None:
    """Drop a broken archive (and its sidecar) before making it again."""
    with _checked_lock:
        _checked.pop(archive, None)
    _marker(archive, ".ok").unlink(missing_ok=True)
    archive.unlink(missing_ok=True)


def _verify_maps(java: Path, jvm_opts: Sequence[str], classpath: str, archive: Path) -> None:
    """-Xshare:on makes the JVM exit with an error if it cannot map the archive for this
    class path: a file that passes here is one the nodes' JVMs will use."""
    out = subprocess.run([str(java), *jvm_opts, f"-XX:SharedArchiveFile={archive}",
                          "-Xshare:on", "-cp", classpath, "-version"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"the JVM cannot map it: {(out.stdout + out.stderr).strip()[-500:]}")


# -- the training start ------------------------------------------------------------------
_TRAIN_PROPS = """process.roles=broker,controller
node.id=100
controller.quorum.voters=100@127.0.0.1:{cport}
controller.listener.names=CONTROLLER
listeners=PLAINTEXT://127.0.0.1:{bport},CONTROLLER://127.0.0.1:{cport}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.dirs={data}
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def train(build: Build, java: Path, jvm_opts: Sequence[str], archive: Path) -> None:
    """Start the build once as a combined node with the nodes' JVM options and logging,
    wait until it has started, stop it cleanly: the JVM writes ``archive`` as it exits."""
    from harness.cluster import storage
    from harness.cluster.backends.readiness import wait_log_line
    work = Path(tempfile.mkdtemp(prefix="kafka-chaos-cds-"))
    try:
        data = work / "data"
        shutil.copytree(storage.template(build, None), data)
        (work / "server.properties").write_text(_TRAIN_PROPS.format(
            cport=_free_port(), bport=_free_port(), data=data))
        (work / "hosts").write_text("127.0.0.1 localhost\n")
        for name, content in kafkaconfig.log_configs().items():
            (work / name).write_text(content)
        log = work / "train.log"
        cmd = [str(java), *jvm_opts, f"-XX:ArchiveClassesAtExit={archive}",
               f"-Djdk.net.hosts.file={work / 'hosts'}",
               f"-Dlog4j.configuration=file:{work / 'log4j.properties'}",
               f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
               "-cp", build.classpath(), "kafka.Kafka", str(work / "server.properties")]
        proc = procs.spawn(cmd, log, cwd=work)
        try:
            wait_log_line(log, "Kafka Server started", 0, alive=lambda: proc.poll() is None,
                          what="the class-data training node", timeout_s=TRAIN_START_S)
        finally:
            # SIGTERM: Kafka's shutdown hook stops the server, then the JVM dumps the
            # archive on exit (a SIGKILL would leave none).
            procs.kill(proc, signal.SIGTERM, wait_s=TRAIN_STOP_S)
    finally:
        shutil.rmtree(work, ignore_errors=True)
