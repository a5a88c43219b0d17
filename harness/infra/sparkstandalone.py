"""A Spark standalone master and workers on loopback, from the jars pyspark ships.

For the fan-out test and the benchmark: ``kafka-chaos run|matrix|fuzz --master`` against
the same kind of cluster a user runs across machines, here with every daemon on this one.
Daemons are harness processes (infra.procs): stopped by id on exit, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType

from harness.infra import procs
from harness.infra.errors import HarnessError

START_TIMEOUT_S = 90.0
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")


def spark_class() -> Path:
    import pyspark
    return Path(pyspark.__file__).parent / "bin" / "spark-class"


class StandaloneSpark:
    """``with StandaloneSpark(dir, workers=2) as master_url:`` one master, N workers."""

    def __init__(self, work_dir: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.work_dir, self.workers, self.cores, self.memory = work_dir, workers, cores, memory
        self._procs: list[subprocess.Popen[bytes]] = []
        self.url = ""

    def __enter__(self) -> str:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self.url

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        log = self.work_dir / "master.log"
        self._spawn(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", "0", "--webui-port", "0"], log)
        found = _MASTER_URL.search(self._await(log, _MASTER_URL.pattern))
        assert found is not None  # _await returned only once the pattern matched
        self.url = found.group(1)
        for i in range(self.workers):
            wlog = self.work_dir / f"worker-{i}.log"
            self._spawn(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0", "--cores", str(self.cores),
                         "--memory", self.memory, "--work-dir", str(self.work_dir / f"work-{i}"),
                         self.url], wlog)
        for i in range(self.workers):
            self._await(self.work_dir / f"worker-{i}.log", "Successfully registered with master")

    def _spawn(self, args: list[str], log: Path) -> None:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="384m",
                   SPARK_NO_DAEMONIZE="1")
        self._procs.append(procs.spawn([str(spark_class()), *args], log, env=env))

    def _await(self, log: Path, pattern: str) -> str:
        """The log's text once ``pattern`` appears in it (bounded; polls the file)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.is_file() else ""
            if re.search(pattern, text):
                return text
            if any(p.poll() is not None for p in self._procs):
                break
            time.sleep(0.2)
        raise HarnessError(f"Spark standalone: {pattern!r} did not appear in {log} within "
                           f"{START_TIMEOUT_S:.0f} s (or a daemon exited); see that log")

    def stop(self) -> None:
        for proc in reversed(self._procs):  # workers first: each stops its executors
            procs.kill(proc, signal.SIGTERM, wait_s=15)
        self._procs.clear()
