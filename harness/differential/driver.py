"""The differential driver's process: the build's own controller code in one JVM, fed
events on stdin, answering on stdout (harness/differential/README.md).

``ControllerDriver.for_build(build, settings)`` compiles the sources in java/ (main class
ControllerDriver; the files by job in its header) together against the build's jars
(harness/cluster/javaprogram.py: once per sources, build and JDK, cached beside the
build) and gives a driver to ``start()``; ``send(event)`` answers one event,
``send_many(events)`` pipelines many (written while answers are read, so neither
pipe fills). Every wait is bounded; a driver that dies, hangs or answers out of protocol is
a DriverError carrying its exit status and the tail of its stderr (a log file, not a pipe:
a chatty JVM cannot block on it). ``close()`` (and leaving the ``with`` block) ends it:
stdin closed, then SIGKILL to its process group if it has not exited; the process is also
registered with harness.infra.procs, so an exit or SIGTERM of the harness kills it, and the
kernel kills it if the harness dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from harness.cluster import javaprogram
from harness.cluster.builds import Build
from harness.differential.protocol import (
    Answer,
    DriverError,
    Ready,
    SessionUnsupported,
    Settings,
    check_event,
    encode,
    parse_answer,
    parse_ready,
)
from harness.infra import procs
from harness.infra.cache import cache_dir

#: The driver's sources, compiled together; MAIN is the main class's file name.
SOURCES = Path(__file__).resolve().parent / "java"
MAIN = "ControllerDriver"
#: A small heap and the client compiler only: the driver's work is many small calls, and
#: C1 reaches its speed within the first thousand events (bench/RESULTS-diff.md).
JVM_OPTS: tuple[str, ...] = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xms64m",
                             "-Xmx512m", "-Xshare:auto")
#: JVM start, class loading and the session's set-up (4.3.1, 2 busy cores: about 1 s).
START_TIMEOUT_S = 60.0
#: One event's answer (milliseconds in practice); send_many adds PER_EVENT_S per event.
ANSWER_TIMEOUT_S = 30.0
PER_EVENT_S = 0.05
#: close(): how long the driver gets to exit on its own once its input is closed.
CLOSE_GRACE_S = 5.0
_READ_CHUNK = 1 << 20
_WRITE_CHUNK = 1 << 16
_TAIL_LINES = 25


#: Client utilities the driver imports (only in java/DriverKafkaUtils.java) that Kafka 4.4
#: moved to a subpackage (kafka-clients 4.4.0: org/apache/kafka/common/utils/internals/);
#: the rest of the sources are the same.
_MOVED_IN_44 = ("AppInfoParser", "LogContext")
_UTILS = "org.apache.kafka.common.utils"


def source_for(build: Build) -> Path:
    """SOURCES, or for a build whose kafka-clients has the moved utilities only in their new
    package, a copy of the directory with those imports rewritten (in the cache, keyed by
    the files' names and texts)."""
    clients = sorted(build.libs.glob("kafka-clients-*.jar"))
    if not clients or not _moved_utils(clients[0]):
        return SOURCES
    texts = {}
    for path in sorted(SOURCES.glob("*.java")):
        text = path.read_text(encoding="utf-8")
        for name in _MOVED_IN_44:
            text = text.replace(f"import {_UTILS}.{name};", f"import {_UTILS}.internals.{name};")
        texts[path.name] = text
    digest = hashlib.sha256()
    for name, text in texts.items():
        digest.update(f"{name}\0{len(text)}\0".encode() + text.encode())
    copy = cache_dir("java-src") / digest.hexdigest()[:16] / SOURCES.name
    if not copy.is_dir():
        tmp = copy.with_name(f"{copy.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, text in texts.items():
            (tmp / name).write_text(text, encoding="utf-8")
        try:
            os.rename(tmp, copy)
        except OSError:  # another process put it in place first
            shutil.rmtree(tmp, ignore_errors=True)
    return copy


@functools.cache  # a session starts every few seconds: read the jar once
def _moved_utils(clients_jar: Path) -> bool:
    with zipfile.ZipFile(clients_jar) as z:
        names = set(z.namelist())
    old = _UTILS.replace(".", "/") + "/LogContext.class"
    new = _UTILS.replace(".", "/") + "/internals/LogContext.class"
    return old not in names and new in names


def compile_driver(build: Build) -> javaprogram.Program:
    """The driver compiled against the build's jars (from the cache after the first time)."""
    return javaprogram.compile_program(source_for(build), build, main=MAIN)


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) the process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ControllerDriver:
    """One session of the build's controller. Not thread-safe: one caller at a time."""

    def __init__(self, command: Sequence[str], settings: Settings | None = None, *,
                 log_path: Path | None = None, start_timeout_s: float = START_TIMEOUT_S,
                 answer_timeout_s: float = ANSWER_TIMEOUT_S, label: str = "driver") -> None:
        self.command = list(command)
        self.settings = settings or Settings()
        self.start_timeout_s = start_timeout_s
        self.answer_timeout_s = answer_timeout_s
        self.label = label
        self._own_log = log_path is None
        self.log_path = log_path
        self.ready: Ready | None = None
        self.start_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._selector: selectors.BaseSelector | None = None
        self._buffer = bytearray()
        self._seq = 0
        #: The brokers as the answers so far said them (protocol.parse_answer).
        self._brokers: dict[str, dict[str, Any]] = {}
        self._failed = False
        #: Seconds (wall) of send_many spent waiting for the driver's answers (``wait``), and
        #: the CPU seconds of this thread in it (``protocol``: encoding, writing, reading,
        #: decoding); bench.py.
        self.timing = {"wait": 0.0, "protocol": 0.0}

    @classmethod
    def for_build(cls, build: Build, settings: Settings | None = None, *,
                  jvm_opts: Sequence[str] = JVM_OPTS, **kwargs: Any) -> ControllerDriver:
        program = compile_driver(build)
        kwargs.setdefault("label", f"differential driver (Kafka {build.version})")
        return cls(program.command(jvm_opts=jvm_opts), settings, **kwargs)

    # ---- life cycle ----

    def start(self) -> Ready:
        """Start the process and open the session; SessionUnsupported if this build cannot
        run these settings (the process is then closed)."""
        if self._proc is not None:
            raise DriverError(f"{self.label} is already started")
        t0 = time.monotonic()
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="kafka-chaos-differential-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        err: IO[bytes] = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=err,
                                          start_new_session=True,
                                          preexec_fn=procs._die_with_parent)
        except OSError as exc:
            raise DriverError(f"{self.label} could not start ({self.command[0]}): "
                              f"{exc}") from exc
        finally:
            err.close()
        procs.register_cleanup(self, self._kill)
        assert self._proc.stdout is not None and self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._proc.stdout.fileno(), selectors.EVENT_READ)
        self.ready = self._handshake(self.settings.to_json())
        self.start_seconds = time.monotonic() - t0
        self.timing = {"wait": 0.0, "protocol": 0.0}  # events only, not the start
        return self.ready

    def restart(self, settings: Settings) -> Ready:
        """A new session in the same JVM (``{"newSession": settings}``): the driver builds new
        managers and state as a new process would, its JIT warm and no JVM to start (issue
        44 item 3); answers count from 1 again. SessionUnsupported (the process closed) if
        the build cannot run these settings."""
        if self._proc is None or self.ready is None:
            raise DriverError(f"{self.label} is not started: call start() first")
        t0 = time.monotonic()
        self.settings = settings
        self.ready = self._handshake({"newSession": settings.to_json()})
        self._seq = 0
        self.start_seconds = time.monotonic() - t0
        return self.ready

    def _handshake(self, settings: Any) -> Ready:
        """Send a session's settings and read its ready answer; the process is closed if it
        cannot run them (SessionUnsupported) or failed (marked failed)."""
        try:
            line = self._exchange(encode(settings), 1, self.start_timeout_s)[0]
            ready = parse_ready(line)
            self._brokers = ready.brokers
            return ready
        except SessionUnsupported:
            self.close()
            raise
        except BaseException:
            self._failed = True
            self.close()
            raise

    def close(self) -> None:
        """End the process (stdin closed; SIGKILL to its group if still there after
        CLOSE_GRACE_S).
        Idempotent. The stderr log is removed unless something failed."""
        proc = self._proc
        if proc is None:
            return
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            self._kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            assert proc.stdout is not None
            proc.stdout.close()
        procs.unregister_cleanup(self)
        if self._own_log and not self._failed and self.log_path is not None:
            with contextlib.suppress(OSError):
                self.log_path.unlink()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def __enter__(self) -> ControllerDriver:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # ---- events ----

    def send(self, event: Mapping[str, Any]) -> Answer:
        return self.send_many([event])[0]

    def send_many(self, events: Iterable[Mapping[str, Any]]) -> list[Answer]:
        """Answers in order; all events are written while answers are being read."""
        if self._proc is None or self.ready is None:
            raise DriverError(f"{self.label} is not started: call start() first")
        cpu0 = time.thread_time()
        checked = [check_event(e) for e in events]
        if not checked:
            return []
        payload = b"".join(encode(e) for e in checked)
        timeout = self.answer_timeout_s + PER_EVENT_S * len(checked)
        try:
            lines = self._exchange(payload, len(checked), timeout)
            answers = []
            for line in lines:
                self._seq += 1
                answer = parse_answer(line, self._seq, self._brokers)
                if answer.brokers:
                    self._brokers = answer.brokers
                answers.append(answer)
        except BaseException:
            self._failed = True
            raise
        self.timing["protocol"] += time.thread_time() - cpu0
        return answers

    # ---- the pipes ----

    def _exchange(self, payload: bytes, answers: int, timeout_s: float) -> list[bytes]:
        """Write payload and read that many answer lines, within timeout_s."""
        proc, selector = self._proc, self._selector
        assert proc is not None and selector is not None
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin.fileno(), proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        view = memoryview(payload)
        sent = 0
        lines: list[bytes] = []
        try:  # most payloads fit the pipe at once: no selector registration needed
            sent = os.write(stdin, view[:_WRITE_CHUNK]) if payload else 0
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            raise self._failure("closed its input") from None
        if sent < len(payload):
            selector.register(stdin, selectors.EVENT_WRITE)
        try:
            while len(lines) < answers:
                procs.check_interrupted()  # a run being interrupted stops here too
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._kill()
                    raise self._failure(f"no answer within {timeout_s:.0f} s "
                                        f"({len(lines)} of {answers} answered; killed)")
                t0 = time.perf_counter()
                ready = selector.select(min(remaining, 1.0))
                self.timing["wait"] += time.perf_counter() - t0
                for key, _ in ready:
                    if key.fd == stdin:
                        try:
                            sent += os.write(stdin, view[sent:sent + _WRITE_CHUNK])
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            raise self._failure("closed its input") from None
                        if sent == len(payload):
                            selector.unregister(stdin)
                    else:
                        chunk = os.read(stdout, _READ_CHUNK)
                        if not chunk:
                            raise self._failure("ended its output" + _last_words(lines))
                        self._buffer += chunk
                        *complete, rest = self._buffer.split(b"\n")
                        lines.extend(bytes(c) for c in complete)
                        self._buffer = bytearray(rest)
        finally:
            if sent < len(payload):
                with contextlib.suppress(KeyError, ValueError):
                    selector.unregister(stdin)
        if len(lines) > answers:
            raise self._failure(f"answered {len(lines)} lines where {answers} were due",
                                exiting=False)
        return lines

    def _failure(self, what: str, exiting: bool = True) -> DriverError:
        """The error to raise, with the exit status (waited for briefly when the driver is
        exiting: it closed a pipe or was killed) and the tail of its stderr."""
        self._failed = True
        proc = self._proc
        status = ""
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2 if exiting else 0)
            if proc.returncode is not None:
                status = f", exit status {proc.returncode}"
        return DriverError(f"{self.label} {what}{status}; stderr ({self.log_path}):\n"
                           f"{self.stderr_tail()}")

    def stderr_tail(self, lines: int = _TAIL_LINES) -> str:
        if self.log_path is None:
            return "(no log)"
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 64 * 1024))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError as exc:
            return f"(cannot read {self.log_path}: {exc})"
        tail = text.strip().splitlines()[-lines:]
        return "\n".join(tail) if tail else "(empty)"


def _last_words(lines: Sequence[bytes]) -> str:
    """What the driver said it stopped for, if its last answers say (fatal, protocolError)."""
    for line in reversed(lines):
        try:
            answer = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(answer, dict):
            for key in ("fatal", "protocolError"):
                if key in answer:
                    return f" after answering {key}: {answer[key]}"
    return ""
