"""Runs as Spark tasks (``--master spark://HOST:7077``): one run, one task, one executor core.

A chaos run is a few seconds of JVM start-up and then mostly waiting on Kafka's timeouts, so
the unit that spreads is the whole run: the executor that takes the task brings up a local
cluster on its own machine (a leased loopback block, its own Toxiproxy), runs the scenario
and writes the history to ``--runs-dir``, which every executor must see at the same path
(a shared mount). The driver keeps one task in flight per executor core, so a worker started
with ``--cores N`` holds at most N clusters: give each worker the number of clusters its
machine holds (``harness.run.parallel.default_jobs`` on that machine).

Each task is its own one-task Spark job, submitted from a driver thread: results come back
as runs finish (progress on the driver's terminal), and a run that fails on an executor is
an ERROR of that run, not of the campaign. Spark does not retry a run (a second run on a
fresh cluster is a different history; the campaign re-runs deliberately when it wants to),
except for `certify` (``max_failures``): a run whose executor was lost is run again on
another, and its history is shipped back (``ship``: infra/shipping.py) instead of written
to a shared directory, so the lost attempt leaves nothing behind.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.infra.errors import UsageError

if TYPE_CHECKING:
    from harness.run.runner import RunResult

#: Seconds the driver waits for the first executor to register with the master.
EXECUTOR_WAIT_S = 90.0
#: Seconds the executor core count must hold before runs are handed out.
EXECUTORS_SETTLE_S = 3.0
#: Runs the driver keeps submitted at once when the executors counted at start are fewer:
#: an executor that registers late (a loaded machine; seen in CI, where the second of two
#: executors registered after the settle time and its core sat idle) still gets work, and
#: Spark queues the rest until a core frees. Each submitted run holds one driver thread.
SUBMITTED_RUNS = 32


@dataclass(frozen=True)
class RunSpec:
    """Everything an executor needs to run one scenario: plain text and paths, so a task
    pickles small and resolves the build (Maven cache or shared dist) on its own machine."""
    scenario_text: str
    scenario_path: str
    build_source: str  # Build.source: "maven:4.3.1" or "dist:/shared/kafka"
    backend: str
    runs_dir: str  # absolute, shared by every executor
    profile: str | None = None
    step_timeout_s: float = 30.0
    #: The history is written in a scratch directory of the executor's machine and shipped
    #: back in the result (``Shipped``); ``runs_dir`` is then the driver's.
    ship: bool = False


@dataclass(frozen=True)
class Shipped:
    """A shipped run: its result (``run_dir`` on the executor) and its history, packed."""
    result: RunResult
    data: bytes
    host: str


def spec_for(scenario_path: Path, build: Any, backend: str, runs_dir: Path,
             profile: str | None = None, step_timeout_s: float = 30.0) -> RunSpec:
    return RunSpec(scenario_path.read_text(encoding="utf-8"), str(scenario_path), build.source,
                   backend, str(runs_dir.resolve()), profile, step_timeout_s)


def run_spec(spec: RunSpec) -> RunResult | Shipped:
    """The task body, on the executor: parse, resolve, run, return the RunResult (shipped
    with its history when ``spec.ship``)."""
    if spec.ship:
        from harness.infra.shipping import pack, scratch
        with scratch() as scratch_dir:
            result = run_spec(replace(spec, ship=False, runs_dir=str(scratch_dir)))
            assert not isinstance(result, Shipped)
            return Shipped(result, pack(scratch_dir), socket.gethostname())
    from harness.cluster import builds
    from harness.infra import progress
    from harness.run.runner import Runner
    from harness.scenario.loader import parse_scenario
    kind, _, where = spec.build_source.partition(":")
    build = builds.resolve(kafka_dist=where) if kind == "dist" else builds.resolve(where)
    scenario = parse_scenario(spec.scenario_text, spec.scenario_path)
    progress.say(f"spark task: scenario {scenario.name} on Kafka {build.version}, histories "
                 f"in {spec.runs_dir}")
    return Runner(scenario, build, spec.backend, Path(spec.runs_dir), spec.profile,
                  spec.step_timeout_s).run()


def check_master(master: str) -> None:
    """--master: a spark:// URL whose master answers, or local[N]; checked before any
    session or cluster starts, so a typo does not hang on Spark's registration retries."""
    if master.startswith("local"):
        return
    url = urlsplit(master)
    if url.scheme != "spark" or not url.hostname or url.port is None:
        raise UsageError(f"--master {master!r}: give a standalone master URL, "
                         "spark://HOST:PORT (or local[N] for this machine)")
    try:
        with socket.create_connection((url.hostname, url.port), timeout=5):
            pass
    except OSError as e:
        raise UsageError(f"--master {master}: cannot reach it ({e.strerror or e}); start the "
                         "master (spark-class org.apache.spark.deploy.master.Master) or fix "
                         "the URL") from None


def _on_loopback(master: str) -> bool:
    host = urlsplit(master).hostname or ""
    return host == "localhost" or host.startswith("127.")


class SparkRuns:
    """A Spark session that runs RunSpecs on the executors, one task per free core."""

    def __init__(self, master: str, say: Callable[[str], None] = lambda s: None,
                 max_failures: int = 1, ship: bool = False, app: str = "kafka-chaos-runs",
                 ) -> None:
        """``max_failures``: attempts of a task (Spark's spark.task.maxFailures: a task whose
        executor was lost is tried again on another); ``ship``: every run's history comes
        back in its result and lands in the spec's runs_dir here (no shared directory)."""
        from harness.infra.spark import session
        check_master(master)
        if _on_loopback(master):  # every executor is on this machine: keep the driver there
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self.spark = session(master, app=app,
                             conf={"spark.task.maxFailures": str(max_failures)})
        self.ship = ship
        self.master, self.say, self._cores_lock = master, say, threading.Lock()
        self.slots = self._wait_for_cores(master)
        say(f"spark: {self.slots} executor core(s) at {master}: up to {self.slots} "
            "clusters at once")

    def _cores_now(self) -> int:
        jsc = self.spark.sparkContext._jsc.sc()
        profile = jsc.resourceProfileManager().defaultResourceProfile()
        return int(jsc.maxNumConcurrentTasks(profile))

    def note_late_cores(self) -> None:
        """Say so when executors registered after the count at start (a loaded machine: seen
        in CI, 1 core counted of 2), so the terminal shows the clusters that run at once."""
        from py4j.protocol import Py4JError
        with self._cores_lock:
            try:
                now = self._cores_now()
            except (Py4JError, AttributeError):  # the session is stopping (an interrupt)
                return
            if now > self.slots:
                self.slots = now
                self.say(f"spark: {now} executor core(s) at {self.master} now (registered "
                         f"late): up to {now} clusters at once")

    def _wait_for_cores(self, master: str) -> int:
        """The executor cores once the first executor has registered and the count has
        held for EXECUTORS_SETTLE_S (the master starts every worker's executor at once, and
        they register within a second or two; a core counted late would sit idle)."""
        start = time.monotonic()
        slots, changed = 0, start
        while True:
            now = time.monotonic()
            current = self._cores_now()
            if current != slots:
                slots, changed = current, now
            if slots >= 1 and now - changed >= EXECUTORS_SETTLE_S:
                return slots
            if slots < 1 and now - start > EXECUTOR_WAIT_S:
                self.stop()
                raise UsageError(f"--master {master}: no executor registered in "
                                 f"{EXECUTOR_WAIT_S:.0f} s; start workers with free cores "
                                 "(spark-class org.apache.spark.deploy.worker.Worker "
                                 f"--cores N {master})")
            time.sleep(0.25)

    def in_flight(self, runs: int) -> int:
        """How many of ``runs`` runs to keep submitted: at least one per executor core
        counted at start, more (SUBMITTED_RUNS) so that cores registered later are used."""
        return max(1, min(runs, max(self.slots, SUBMITTED_RUNS)))

    def run(self, spec: RunSpec) -> RunResult:
        """One run as a one-task job; a failure on the executor comes back as an ERROR run."""
        from py4j.protocol import Py4JJavaError
        sc = self.spark.sparkContext
        self.note_late_cores()
        if self.ship and not spec.ship:
            spec = replace(spec, ship=True)
        try:
            got: RunResult | Shipped = sc.parallelize([spec], 1).map(run_spec).collect()[0]
            return land_run(got, Path(spec.runs_dir)) if isinstance(got, Shipped) else got
        except Py4JJavaError as e:
            return _error_result(spec, _last_line(str(e.java_exception)))
        finally:
            self.note_late_cores()

    def cancel(self) -> None:
        """Cancel every run in flight: Spark kills the tasks' Python workers, and with them
        the clusters they started (PR_SET_PDEATHSIG, infra.procs)."""
        self.spark.sparkContext.cancelAllJobs()

    def stop(self) -> None:
        self.spark.stop()


def land_run(shipped: Shipped, runs_dir: Path) -> RunResult:
    """A shipped run's history under ``runs_dir`` (here), its result pointing at it."""
    from harness.infra.shipping import land
    land(shipped.data, runs_dir)
    return replace(shipped.result, run_dir=runs_dir / shipped.result.run_dir.name)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = [ln for ln in lines if "Error" in ln or "Exception" in ln]
    return (tail[-1] if tail else lines[-1] if lines else "task failed")[:300]


def _error_result(spec: RunSpec, reason: str) -> RunResult:
    from harness.judge.compare import ERROR
    from harness.run.runner import RunResult
    from harness.scenario.loader import parse_scenario
    name = parse_scenario(spec.scenario_text, spec.scenario_path).name
    return RunResult(name, spec.build_source.partition(":")[2], Path(spec.runs_dir),
                     spec.profile or "", ERROR, reason=f"spark task failed: {reason}")
