"""`certify --master spark://HOST:PORT`: the campaign's items as Spark tasks (issue 46 item 2;
docs/CERTIFY.md "On a Spark cluster").

The items and where they run:
- a matrix or upgrade **cell** (one scenario on one build) is one task (harness.run.fanout's
  RunSpec): the executor brings up a cluster on its own machine, runs and judges the scenario;
- one build's **diff** is one task (``DiffTask``): the executor compiles the differential
  driver against its own copy of the build and runs the campaign; the two builds side by side;
- the **hunt** searches here, on the driver (corpus, state, classification); every run it
  starts is a task, a wave of as many runs at once as there are slots.

**Slots.** One task per executor core: start each worker with ``--cores`` set to what its
machine holds, ``python -m harness.certify.slots`` on that machine (the rule of ``--jobs``,
harness.run.parallel.default_jobs: two clusters per core, no more than its available memory
holds at 2.5 GiB each, one on a one-core machine). The driver keeps one item in flight per
slot counted at start.

**Lost work; where results land.** A task writes only into a scratch directory on its
executor's machine and ships that directory back in its result (gzipped tar,
harness/infra/shipping.py); the driver lands it in the campaign directory and records the
item. Chosen over a shared filesystem because then the driver is the only writer of the
campaign (certify-state.json and the directories it names), workers need no common mount,
and an attempt lost half way (its executor gone) leaves nothing behind: Spark runs the task
again on another executor (spark.task.maxFailures = MAX_ATTEMPTS) and only the attempt that
finishes lands. An item is recorded once (the state); a resumed campaign skips it. A lost
attempt's scratch directory is removed by a later task on its machine (shipping.sweep).

**Budget.** As on one machine (plan.py): the plan is the same, an item's time (from its
submission to its result) counts in its part, a part starts no more items past 1.5x its
budget. So the matrix, upgrade and diff do the same work side by side and end sooner; the
hunt, bounded by time per build, runs a wave of ``slots`` runs at once and does more.

**Ctrl-C / SIGTERM.** Every Spark job is cancelled (the executors' Python workers are killed;
the clusters and driver JVMs they started die with them, PR_SET_PDEATHSIG), the session is
stopped by the command, items in flight have no record and run again on the next call.
"""

from __future__ import annotations

import shutil
import socket
import zipfile
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from harness.certify import plan
from harness.certify.parts import Campaign, cell_key, diff_record, not_run
from harness.certify.state import save
from harness.infra.errors import HarnessError

#: Attempts of one task: a task whose executor is lost runs again on another one.
MAX_ATTEMPTS = 4


# --- on the executor --------------------------------------------------------------------------

@dataclass(frozen=True)
class DiffTask:
    """One build's differential campaign, as plain values (the build resolves there)."""
    build_source: str  # Build.source: "maven:4.3.1" or "dist:/shared/kafka"
    seed: int
    budget_s: float


def resolve_source(source: str) -> Any:
    from harness.cluster import builds
    kind, _, where = source.partition(":")
    return builds.resolve(kafka_dist=where) if kind == "dist" else builds.resolve(where)


def attempt() -> int:
    """This task's attempt (0: the first), from Spark's task context (0 outside Spark)."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return int(ctx.attemptNumber()) if ctx is not None else 0


def diff_task(task: DiffTask) -> tuple[bytes, str, int]:
    """The task body: the campaign in a scratch directory, shipped back packed, with the
    host and the attempt that ran it."""
    from harness.certify.parts import diff_config
    from harness.differential.campaign import Campaign as DiffCampaign
    from harness.infra import progress
    from harness.infra.shipping import pack, scratch
    build = resolve_source(task.build_source)
    java_sources_from_zip()
    with scratch() as where:
        progress.say(f"spark task: diff of Kafka {build.version}, seed {task.seed}, "
                     f"{task.budget_s:.0f} s (attempt {attempt()})")
        DiffCampaign(build, diff_config(task.seed, task.budget_s, build),
                     where / plan.slug(build.version), say=progress.say).run()
        return pack(where), socket.gethostname(), attempt()


def java_sources_from_zip() -> None:
    """When the harness was imported from the zip the driver shipped (infra/spark.py
    _ship_package), the differential driver's Java sources are inside that zip: unpack them
    once (the cache, keyed by the zip's contents) and point the driver at them."""
    from harness.differential import driver
    from harness.infra.cache import cache_dir
    if driver.SOURCES.is_dir():
        return
    text = str(driver.SOURCES)
    cut = text.find(".zip/")
    if cut < 0:
        raise HarnessError(f"the differential driver's sources are not at {text}")
    archive, inner = Path(text[:cut + 4]), text[cut + 5:]
    with zipfile.ZipFile(archive) as zf:
        names = sorted(n for n in zf.namelist() if n.startswith(inner + "/"))
        key = f"{sum(zf.getinfo(n).CRC for n in names) & 0xFFFFFFFF:08x}"
        target = cache_dir("java-src") / f"shipped-{key}-{len(names)}" / "java"
        if not target.is_dir():
            tmp = target.with_name(f"java.tmp-{socket.gethostname()}-{id(names)}")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for n in names:
                (tmp / Path(n).name).write_bytes(zf.read(n))
            try:
                tmp.rename(target)
            except OSError:  # another task put it in place first
                shutil.rmtree(tmp, ignore_errors=True)
    driver.SOURCES = target


# --- on the driver ----------------------------------------------------------------------------

@dataclass
class Work:
    """One item to fan out: ``submit`` runs in a driver thread (blocks on its Spark job),
    ``record`` here once it returned (lands what it shipped, makes the record);
    ``skipped`` the record of an item not started because its part's budget was spent."""
    key: str
    what: str
    estimate_s: float
    submit: Callable[[], Any]
    record: Callable[[Any], dict[str, Any]]
    skipped: Callable[[], dict[str, Any]] | None = None


class SparkCampaign(Campaign):
    """The campaign of parts.py with every item a Spark task (``runs``: fanout.SparkRuns
    made with ``ship=True`` and MAX_ATTEMPTS)."""

    def __init__(self, *args: Any, runs: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.runs = runs

    @property
    def width(self) -> int:
        return max(1, int(self.runs.slots))

    # --- the parts -----------------------------------------------------------------------

    def _cells(self, part: str, planned: list[dict[str, Any]], confirm: bool = False) -> None:
        from harness.run.fanout import spec_for
        works = []
        for p in planned:
            for role in p["roles"]:
                build = self.builds[role]
                # the run ships back and lands in runs/ as on one machine (same paths)
                spec = replace(spec_for(Path(p["path"]), build, self.backend, self.runs_dir,
                                        None, self.step_timeout_s),
                               runs_dir=str(self.runs_dir), ship=True)
                why = f"not run: the part's budget was spent ({plan.OVERRUN}x overrun)"
                works.append(Work(cell_key(part, role, p["name"], confirm),
                                  f"{p['name']} on {build.version}"
                                  + (" (a re-run)" if confirm else ""),
                                  float(p["estimate_s"]), partial(self.runs.run, spec),
                                  partial(_confirmed, confirm, partial(self.cell_record, part,
                                                                       p, build, role)),
                                  partial(_confirmed, confirm, partial(
                                      not_run, part, p, role, build.version, why))))
        self.fan(part, works)
        if not confirm:
            self.state.part(part)["note"] = f"{len(works)} runs"

    def _confirm_runs(self, todo: list[Any]) -> None:
        """The hunt findings' schedules on both builds (certify/confirm.py), each a task as
        a matrix confirmation is; the diff findings' replays run here (parts.py)."""
        from harness.certify import confirm
        from harness.run.fanout import spec_for
        works = []
        for item in todo:
            build = self.builds[item.role]
            path = self._hunt_schedule(item)
            if path is None:
                continue
            spec = replace(spec_for(path, build, self.backend, self.runs_dir, None,
                                    self.step_timeout_s), runs_dir=str(self.runs_dir),
                           ship=True)
            works.append(Work(item.key, f"{path.name} on {build.version} (a confirmation)",
                              120.0, partial(self.runs.run, spec),
                              partial(confirm.hunt_one, item, build)))
        self.fan("hunt", works)

    def _diff(self) -> None:
        per_build = self.budget("diff") / 2
        works = [Work(f"diff/{role}", f"diff of {self.builds[role].version}", per_build,
                      partial(self._diff_submit, role, per_build),
                      partial(self._diff_land, role, per_build)) for role in ("old", "new")]
        self.fan("diff", works)
        self.state.part("diff")["note"] = "2 builds"

    def _diff_submit(self, role: str, budget_s: float) -> tuple[bytes, str, int]:
        from py4j.protocol import Py4JJavaError
        build = self.builds[role]
        sc = self.runs.spark.sparkContext
        try:
            got: tuple[bytes, str, int] = sc.parallelize(
                [DiffTask(build.source, self.seed, budget_s)], 1).map(diff_task).collect()[0]
            return got
        except Py4JJavaError as e:
            from harness.run.fanout import _last_line
            raise HarnessError(f"certify: the diff of {build.version} failed on the "
                               f"executors: {_last_line(str(e.java_exception))}") from None

    def _diff_land(self, role: str, budget_s: float,
                   got: tuple[bytes, str, int]) -> dict[str, Any]:
        from harness.infra.shipping import land
        data, _host, _attempt = got
        version = self.builds[role].version
        land(data, self.dir / "diff", replace=True)  # a re-run build's diff replaces its own
        return diff_record(role, version, self.dir / "diff" / plan.slug(version),
                           self._build_flag(role), self.seed, budget_s)

    def hunt_plan(self, build: Any, schedules: Path) -> Any:
        """One build's hunt: each run a task, ``width`` at once (a wave)."""
        from harness.search import fuzz, hunt
        runner = fuzz.spark_runner(self.runs, build, self.backend, self.runs_dir, schedules,
                                   self.step_timeout_s)
        return hunt.BuildPlan(build.version, fuzz.model_factory(build), runner,
                              width=self.width, on_interrupt=self.runs.cancel)

    # --- the fan-out ---------------------------------------------------------------------

    def fan(self, part: str, works: list[Work]) -> None:
        """Run the items not recorded yet, ``width`` in flight; record each as it returns
        (this thread only: the state has one writer). An interrupt or an error cancels
        every Spark job before it goes up; the items in flight keep no record."""
        todo = [w for w in works if not self.state.done(w.key)]
        finished = len(works) - len(todo)
        running: dict[Future[Any], tuple[Work, float]] = {}
        pool = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="certify-task")
        try:
            while todo or running:
                while todo and len(running) < self.width:
                    w = todo.pop(0)
                    if w.skipped is not None and self._over(part):
                        self.state.record(w.key, w.skipped())
                        save(self.dir, self.state)
                        finished += 1
                        continue
                    left = (w.estimate_s + sum(x.estimate_s for x in todo)) / self.width
                    self._progress(part, finished, len(works), left,
                                   f"{w.what} (a task; {len(running) + 1} in flight)")
                    running[pool.submit(w.submit)] = (w, self.clock())
                if not running:
                    break
                done, _ = wait(list(running), timeout=1.0, return_when=FIRST_COMPLETED)
                for f in done:
                    w, t0 = running.pop(f)
                    rec = w.record(f.result())
                    self.state.part(part)["elapsed_s"] += self.clock() - t0
                    self.state.record(w.key, rec)
                    save(self.dir, self.state)
                    finished += 1
                    self.say(f"certify [{part}] {w.what}: {_said(rec)} "
                             f"({self.clock() - t0:.0f} s)")
        except BaseException:
            self.runs.cancel()  # the executors' workers, clusters and drivers stop
            for f, (_, t0) in running.items():
                f.cancel()
                self.state.part(part)["elapsed_s"] += self.clock() - t0
            save(self.dir, self.state)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _confirmed(confirm: bool, record: Callable[..., dict[str, Any]],
               *args: Any) -> dict[str, Any]:
    """A cell's record, marked a re-run (compare.py "Confirmation") when it is one."""
    return {**record(*args), "confirm": confirm}


def _said(rec: dict[str, Any]) -> str:
    if "of" in rec:  # a finding's confirmation run (certify/confirm.py)
        return f"{rec['key']} (found on {rec['found_on']}): {rec['text']}"
    if "text" in rec:
        return str(rec["text"])
    found = rec.get("findings", [])
    stats = rec.get("stats") or {}
    return f"{len(found)} finding(s), {stats.get('events')} events"
