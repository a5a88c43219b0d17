"""The debugger side of reproduce.py: where to stop a ListOffsets handler thread in a build,
and a small driver of the JDK's `jdb` attached to a broker's JDWP agent.

The breakpoint: in Partition.fetchOffsetForTimestamp (the lambda its body runs in under
leaderIsrUpdateLock's read lock), the first line where `lastFetchableOffset` is in scope,
i.e. just after HWM read #1 (READ_UNCOMMITTED: `localLog.highWatermark`) and before the
KIP-207 guard's HWM read #2 (the `$anonfun$fetchOffsetForTimestamp$2` lambda). Both are
found in the build's own kafka_2.13 jar with `javap -c -l -p`, so no line is hard-coded
(4.4.0 and 4.3.1: line 1447; 3.9.2: line 1595).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PARTITION = "kafka.cluster.Partition"
_METHOD = re.compile(r"^  \S.*\b(\S*fetchOffsetForTimestamp\S*)\(.*\);$")
_HWM_READ = re.compile(r"^\s+(\d+): invokevirtual .*UnifiedLog\.highWatermark:\(\)J")
_LINE = re.compile(r"^\s+line (\d+): (\d+)$")
_LOCAL = re.compile(r"^\s+(\d+)\s+(\d+)\s+\d+\s+(\S+)\s+\S+$")


class Unsupported(Exception):
    """The build's code does not have the shape the reproduction needs (the reason)."""


@dataclass(frozen=True)
class Breakpoint:
    line: int  # the source line to stop at (after HWM read #1)
    read1_line: int  # the line of HWM read #1
    guard_line: int  # the line of HWM read #2 (the guard)
    method: str


def _methods(javap: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in javap.splitlines():
        m = _METHOD.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif re.match(r"^  \S", line):
            current = None
        elif current is not None:
            current.append(line)
    return out


def _lines(body: list[str]) -> list[tuple[int, int]]:
    """(bytecode index, source line) of the method's LineNumberTable, by index."""
    return sorted((int(m.group(2)), int(m.group(1))) for b in body if (m := _LINE.match(b)))


def _line_at(table: list[tuple[int, int]], bci: int) -> int:
    return max((bc, line) for bc, line in table if bc <= bci)[1]


def find_breakpoint(kafka_jar: Path, javap: str = "javap") -> Breakpoint:
    out = subprocess.run([javap, "-c", "-l", "-p", "-cp", str(kafka_jar), PARTITION],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise Unsupported(f"javap could not read {PARTITION} in {kafka_jar}: "
                          f"{out.stderr.strip()[-300:]}")
    methods = _methods(out.stdout)
    body_name = guard = None
    for name, body in methods.items():
        reads = [int(m.group(1)) for b in body if (m := _HWM_READ.match(b))]
        if not reads:
            continue
        if any(_LOCAL.match(b) and _LOCAL.match(b).group(3) == "lastFetchableOffset"  # type: ignore[union-attr]
               for b in body):
            body_name = name
        elif name.endswith("$2"):
            guard = name
    if body_name is None or guard is None:
        raise Unsupported(f"{PARTITION}.fetchOffsetForTimestamp has no HWM read into "
                          "lastFetchableOffset followed by a guard lambda reading the HWM again "
                          f"(methods: {sorted(methods)})")
    body = methods[body_name]
    table = _lines(body)
    read_bc = next(int(m.group(1)) for b in body if (m := _HWM_READ.match(b)))
    start = next(int(m.group(1)) for b in body
                 if (m := _LOCAL.match(b)) and m.group(3) == "lastFetchableOffset")
    stop = [line for bc, line in table if bc == start]
    if not stop:
        raise Unsupported("no line starts where lastFetchableOffset comes into scope "
                          f"(bci {start})")
    return Breakpoint(line=stop[0], read1_line=_line_at(table, read_bc),
                      guard_line=_lines(methods[guard])[0][1], method=body_name)


class Jdb:
    """`jdb -attach` driven through its stdin/stdout; every wait is bounded."""

    def __init__(self, port: int, log: Path, jdb: str = "jdb") -> None:
        self.log = log.open("a")
        self.proc = subprocess.Popen([jdb, "-attach", f"127.0.0.1:{port}"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.out = ""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for(r"Initializing jdb|> ", 60)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                return
            text = chunk.decode(errors="replace")
            self.log.write(text)
            self.log.flush()
            with self._lock:
                self.out += text

    def mark(self) -> int:
        with self._lock:
            return len(self.out)

    def send(self, command: str) -> int:
        """Send one command; the mark to wait for its answer from."""
        at = self.mark()
        self.log.write(f"\n>>> {command}\n")
        assert self.proc.stdin is not None
        self.proc.stdin.write((command + "\n").encode())
        self.proc.stdin.flush()
        return at

    def wait_for(self, pattern: str, timeout_s: float, since: int = 0) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        rx = re.compile(pattern)
        while True:
            with self._lock:
                m = rx.search(self.out, since)
            if m:
                return m
            if self.proc.poll() is not None and not self._reader.is_alive():
                raise RuntimeError(f"jdb exited waiting for {pattern!r}: {self.out[-500:]}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"jdb: no {pattern!r} in {timeout_s}s: {self.out[-500:]}")
            time.sleep(0.02)

    def select(self, thread_name: str, timeout_s: float = 15) -> str:
        """Make the named (suspended) thread jdb's current one; its id. A breakpoint that
        suspends only its thread (`stop thread at`) leaves jdb without a current thread."""
        at = self.send("threads")
        found = self.wait_for(r"\([\w.$]+\)(0x[0-9a-f]+|\d+)\s+"
                              + re.escape(thread_name) + r"\s", timeout_s, at).group(1)
        self.send(f"thread {found}")
        return found

    def locals(self, names: list[str], timeout_s: float = 15) -> dict[str, str]:
        """The named local variables of the current thread's top frame, as jdb shows them."""
        at = self.send("locals")
        out = {}
        for name in names:
            out[name] = self.wait_for(re.escape(name) + r" = (\S+)", timeout_s, at).group(1)
        return out

    def close(self) -> None:
        """Detach (the VM goes on, every breakpoint removed), bounded; then the process."""
        try:
            if self.proc.poll() is None:
                self.send("quit")
                self.proc.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            self.log.close()
