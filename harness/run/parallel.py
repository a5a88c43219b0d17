"""Several clusters at once (``--jobs N``).

Each run brings up its own cluster: its own loopback block (leased, infra.blocks), its own
Toxiproxy server on that block and its own run directory, so runs share nothing but the
caches (which are filled under their entry locks). Runs go on threads: a run is mostly
waiting on Kafka's timeouts, not on Python.

Budget per cluster (3 brokers + 1 controller + Toxiproxy): CPU is what start-up and
produce bursts need, about one core for a few seconds, then little; memory is bounded by
the JVM options, 4 heaps of at most 512 MiB (config.JVM_OPTS) plus metaspace, code cache
and thread stacks, so CLUSTER_MEMORY (2.5 GiB) per cluster. The default N is
CLUSTERS_PER_CORE clusters per core, fewer when the memory available does not hold that
many.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from harness.infra import procs
from harness.infra.machine import available_memory, cores

T = TypeVar("T")
CLUSTER_MEMORY = int(2.5 * 2**30)
#: Measured on 2 cores (bench/RESULTS-speed.md, 2026-11-25), the suite of one build: 6:07 at
#: 2 clusters, 4:50 at 3, 4:26 at 4 with the cores saturated (97% busy); once brokers kept
#: their internal state small (config.LEAN_INTERNALS), 4:28 at 3 (82% busy) and 4:04 at 4
#: (median of 20 repetitions, 92% busy), every run as expected: 2 per core.
CLUSTERS_PER_CORE = 2.0
MAX_JOBS = 16


def default_jobs(ncores: int | None = None, memory: int | None = None) -> int:
    """CLUSTERS_PER_CORE clusters per core (rounded down; 1 on one core), no more than the
    available memory holds (at least 1)."""
    ncores = cores() if ncores is None else ncores
    memory = available_memory() if memory is None else memory
    # A single core keeps one cluster: the density was measured on 2 cores, where two JVM
    # starts at once still get a core each.
    by_cores = int(ncores * CLUSTERS_PER_CORE) if ncores > 1 else 1
    by_memory = by_cores if memory is None else memory // CLUSTER_MEMORY
    return max(1, min(by_cores, by_memory, MAX_JOBS))


def run_all(tasks: Sequence[Callable[[], T]], jobs: int,
            on_interrupt: Callable[[], None] | None = None) -> list[T]:
    """Run the tasks, ``jobs`` at a time; results in the tasks' order. An exception in one
    task is raised after every task has finished (their clusters are torn down by their
    own runners). On Ctrl-C or SIGTERM, ``on_interrupt`` (e.g. cancelling remote runs) is
    called, tasks not started yet are dropped and the running ones are told to stop
    (procs.interrupt: they raise at their next poll and tear their clusters down), so the
    process ends within a poll and a teardown, not after their remaining steps."""
    if jobs <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    procs.install_exit_hooks()  # the SIGTERM hook can only be set from the main thread
    # A local node dies with the thread that spawned it (PR_SET_PDEATHSIG, procs.spawn):
    # pool threads live until every task is done, and each task tears its cluster down.
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="cluster") as pool:
        futures = [pool.submit(task) for task in tasks]
        try:
            return [f.result() for f in futures]
        except KeyboardInterrupt:
            procs.interrupt()  # the running tasks stop at their next poll
            for f in futures:
                f.cancel()
            if on_interrupt is not None:
                on_interrupt()
            raise
