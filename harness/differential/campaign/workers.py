"""A campaign's search on every core (issue 44 item 3): ``workers`` processes, each one
driver (its JVM) and its model, each a campaign of its own seed (worker 0: the campaign's
seed, so one worker searches what a single-process campaign would first; worker k:
``worker_seed``), sharing the budget's time and ``max_events`` (split evenly); their
tallies summed and their findings merged by signature (counts added, the earliest first
occurrence kept, its event number its worker's). Shrinking and writing then run in the
campaign's own process, as after a single-process search."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.differential.campaign.state import CampaignState, Config, Stats


def worker_seed(seed: int, k: int) -> int:
    """Worker k's seed: the campaign's for worker 0, else a fixed function of both."""
    if k == 0:
        return seed
    return (seed * 1_000_003 + k * 0x9E3779B97F4A7C15) % (2**63 - 1)


def share(max_events: int | None, workers: int, k: int) -> int | None:
    if max_events is None:
        return None
    return max_events // workers + (1 if k < max_events % workers else 0)


def _work(campaign: Callable[..., Any], build: Build, cfg: Config, out_dir: Path, k: int
          ) -> dict[str, Any]:
    """One worker's search (in its own process): ``campaign`` is the campaign's class
    (loop.Campaign; passed, not imported, as loop.py imports this module)."""
    from harness.infra import progress

    def say(line: str) -> None:
        progress.say(f"[worker {k}] {line}")
    own = dataclasses.replace(cfg, seed=worker_seed(cfg.seed, k), workers=1, shrink=False,
                              max_events=share(cfg.max_events, cfg.workers, k))
    c = campaign(build, own, out_dir / f"worker-{k}", say=say)
    c.search()
    return {"stats": c.stats, "found": c.found, "profiles": c.profiles,
            "profiles_by_elr": c.profiles_by_elr, "elr": c.elr}


def merge_stats(total: Stats, part: Stats) -> None:
    total.events += part.events
    total.sessions += part.sessions
    total.start_seconds += part.start_seconds
    total.refused += part.refused
    total.driver_cpu_s += part.driver_cpu_s
    total.harness_cpu_s += part.harness_cpu_s
    for name in ("per_op", "verdicts", "deviations", "unmodelled"):
        getattr(total, name).update(getattr(part, name))
    for d, first in part.deviation_first.items():
        if d not in total.deviation_first or first[1] < total.deviation_first[d][1]:
            total.deviation_first[d] = first


def search_in_workers(c: CampaignState) -> None:
    """``c``'s search by ``c.cfg.workers`` processes; their results merged into ``c``."""
    cfg = c.cfg
    t0 = time.monotonic()
    cpu0 = time.process_time()
    c.say(f"diff: {cfg.workers} workers (one driver and model each), worker 0 on seed "
          f"{cfg.seed}")
    # spawn: a fresh interpreter per worker (the harness may hold threads and open pipes).
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=cfg.workers, mp_context=ctx) as pool:
        futures = [pool.submit(_work, type(c), c.build, cfg, c.out_dir, k)
                   for k in range(cfg.workers)]
        results = [f.result() for f in futures]
    for r in results:
        merge_stats(c.stats, r["stats"])
        for sig, found in r["found"].items():
            seen = c.found.get(sig)
            if seen is None:
                c.found[sig] = found
            else:
                if found.seconds < seen.seconds:
                    found.count += seen.count
                    c.found[sig] = found
                else:
                    seen.count += found.count
        c.profiles_by_elr.update(r["profiles_by_elr"])
        c.profiles, c.elr = r["profiles"], r["elr"]
    c.stats.seconds = time.monotonic() - t0
    c.stats.harness_cpu_s += time.process_time() - cpu0
