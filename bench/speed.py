"""Time to verdict (issue 15): the old path and the new side by side, in one run, as ratios.

    flock /tmp/kafka-chaos-cluster.lock python bench/speed.py [--version 4.3.1]
        [--bringup N] [--suite] [--matrix V1,V2,..] [--jobs N] [--scenarios GLOB]
        [--runs-dir DIR]

Old path = every change turned off: no class-data archive (KAFKA_CHAOS_CDS=0), the former
poll intervals (readiness 0.2 s, settling 0.25 s), Kafka's own sizes for the internal state
no scenario judges (config.LEAN_INTERNALS off), bring-ups free to overlap
(KAFKA_CHAOS_START_SLOTS=0), one cluster at a time. New path = the
defaults with ``--jobs N`` clusters at once (default: parallel.default_jobs()).

- bring-up: 3 brokers + 1 controller to every broker unfenced (Cluster.start), and one
  broker's restart (clean stop, start until its server has started), old and new in turn;
- each scenario end to end (Runner.run: bring-up, steps, checks, teardown) and the suite
  of every scenario file, old (one at a time) then new (N at a time); the verdicts of the
  two must agree (every axis as the scenario expects), else this says which differ.
- the matrix (``--matrix 3.7.2,3.9.2,4.1.2,4.3.1``: the issue's 4 builds): every cell, old
  (one at a time) then new (N at a time), cluster time per build and the whole wall;
``--bringup-once`` brings one cluster up and exits (for timing whole processes).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

# This tree's harness, not whichever is installed (an editable install may point elsewhere).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.client import readiness  # noqa: E402
from harness.client.session import open_session  # noqa: E402
from harness.cluster import builds, cds  # noqa: E402
from harness.cluster import config as kafkaconfig  # noqa: E402
from harness.cluster.topology import ClusterShape  # noqa: E402
from harness.infra import machine, startslots  # noqa: E402
from harness.infra.history import History  # noqa: E402
from harness.run import parallel  # noqa: E402
from harness.run.runner import Runner, settle  # noqa: E402
from harness.scenario.loader import load_scenario  # noqa: E402

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
OLD_POLLS = {"readiness": 0.2, "converge": 0.25}


@contextmanager
def path(new: bool) -> Iterator[None]:
    """Every change on (new) or off (old) for what runs inside; all restored after."""
    with patch.dict(os.environ):
        os.environ.pop(cds.ENV, None)
        os.environ.pop(startslots.ENV, None)
        if new:
            yield
            return
        os.environ[cds.ENV] = "0"
        os.environ[startslots.ENV] = "0"  # bring-ups overlap freely
        with patch.object(readiness, "POLL_S", OLD_POLLS["readiness"]), \
                patch.object(settle, "CONVERGE_POLL_S", OLD_POLLS["converge"]), \
                patch.object(kafkaconfig, "LEAN_INTERNALS", {}):  # Kafka's own sizes
            yield


def bring_up(build: builds.Build, root: Path, tag: str, restart: bool = True
             ) -> tuple[float, float | None]:
    run_dir = root / tag
    history = History(run_dir)
    with open_session(build, ClusterShape(), run_dir, history=history) as s:
        up = float(history.meta["timings"]["bring_up_s"])
        if not restart:
            return up, None
        s.cluster.stop_node(3)
        t0 = time.monotonic()
        s.cluster.start_node(3)
        return up, time.monotonic() - t0


def _med(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def _ratio(old: float, new: float) -> str:
    return f"{old / new:.2f}x" if new else "-"


def bench_bringup(build: builds.Build, root: Path, repeats: int) -> None:
    _make_archive(build)
    figures: dict[bool, dict[str, list[float]]] = {m: {"up": [], "restart": []}
                                                   for m in (False, True)}
    for i in range(repeats):
        for new in (False, True):  # in turn, so drift in load hits both alike
            with path(new):
                up, restart = bring_up(build, root, f"up-{'new' if new else 'old'}-{i}")
            figures[new]["up"].append(up)
            figures[new]["restart"].append(restart or 0.0)
    print(f"\n#### Bring-up, {repeats} runs each (median; runs)\n")
    print("| figure | old | new | old/new |\n|---|---|---|---|")
    for key, label in (("up", "3 brokers + 1 controller up (s)"),
                       ("restart", "one broker restart to started (s)")):
        old, new = figures[False][key], figures[True][key]
        print(f"| {label} | {_med(old)} ({', '.join(f'{v:.1f}' for v in old)}) | "
              f"{_med(new)} ({', '.join(f'{v:.1f}' for v in new)}) | "
              f"{_ratio(statistics.median(old), statistics.median(new))} |")


def _make_archive(build: builds.Build) -> None:
    """The first use makes the build's class-data archive: kept out of the figures."""
    with path(True):
        cds.archive_args(build, Path(_java(build)))


def _java(build: builds.Build) -> str:
    from harness.infra import tools
    return str(tools.require_java(build.java_major))


def run_suite(build: builds.Build, files: list[Path], runs_dir: Path, jobs: int
              ) -> tuple[float, list[Any]]:
    return run_cells([(build, p) for p in files], runs_dir, jobs)


def run_cells(cells: list[tuple[builds.Build, Path]], runs_dir: Path, jobs: int
              ) -> tuple[float, list[Any]]:
    """Every (build, scenario file) end to end, ``jobs`` at a time: wall and results."""
    loaded = [(b, load_scenario(p)) for b, p in cells]
    t0 = time.monotonic()
    results = parallel.run_all(
        [lambda b=b, sc=sc: Runner(sc, b, "local", runs_dir).run() for b, sc in loaded], jobs)
    return time.monotonic() - t0, results


def _verdicts(result: Any) -> str:
    axes = ",".join(f"{a.axis}={a.verdict}" for a in (result.axes or {}).values())
    return f"{result.verdict} [{axes}] as_expected={result.as_expected}"


def bench_suite(build: builds.Build, files: list[Path], runs_dir: Path, jobs: int,
                paths: tuple[bool, ...]) -> bool:
    walls: dict[bool, float] = {}
    results: dict[bool, list[Any]] = {}
    old_too = False in paths
    for new in paths:
        with path(new):
            walls[new], results[new] = run_suite(
                build, files, runs_dir / ("new" if new else "old"), jobs if new else 1)
        print(f"suite {'new' if new else 'old'}: {walls[new]:.0f} s", file=sys.stderr)
    print(f"\n#### The suite of one build: {len(files)} scenario files, old 1 at a time, "
          f"new {jobs} at a time\n")
    print("| scenario | old (s) | new (s) | old/new | verdict (new) | same verdict |")
    print("|---|---|---|---|---|---|")
    same_all = True
    if True not in paths:  # the old path alone: its figures, for a table made later
        for p, r in zip(files, results[False], strict=True):
            print(f"| {p.stem} | {r.wall_s:.1f} | {_verdicts(r)} |")
        print(f"| **whole suite** | {walls[False]:.0f} | |")
        return all(r.as_expected for r in results[False])
    for i, p in enumerate(files):
        new_r = results[True][i]
        old_r = results[False][i] if old_too else None
        same = old_r is None or _verdicts(old_r) == _verdicts(new_r)
        same_all &= same and bool(new_r.as_expected)
        print(f"| {p.stem} | {f'{old_r.wall_s:.1f}' if old_r else '-'} | {new_r.wall_s:.1f} | "
              f"{_ratio(old_r.wall_s, new_r.wall_s) if old_r else '-'} | {new_r.verdict}"
              f"{'' if new_r.as_expected else ' NOT AS EXPECTED'} | "
              f"{'yes' if same else 'NO: ' + _verdicts(old_r)} |")  # type: ignore[arg-type]
    old_wall = walls.get(False)
    print(f"| **whole suite** | {f'{old_wall:.0f}' if old_wall else '-'} | {walls[True]:.0f} "
          f"| {_ratio(old_wall, walls[True]) if old_wall else '-'} | | |")
    if not same_all:
        print("\nVERDICTS DIFFER or are not as expected: see the rows above.")
    return same_all


def bench_matrix(versions: list[str], files: list[Path], runs_dir: Path, jobs: int,
                 paths: tuple[bool, ...]) -> bool:
    """The matrix of ``versions`` x ``files``, old path (one cell at a time) then new
    (``jobs`` at a time): per build the cluster time (sum of the cells' walls), the whole
    matrix's wall, and whether every cell's verdicts agree."""
    cells = [(builds.resolve(v), p) for v in versions for p in files]
    for b in {b.version: b for b, _ in cells}.values():
        _make_archive(b)
    walls: dict[bool, float] = {}
    results: dict[bool, list[Any]] = {}
    for new in paths:
        with path(new):
            walls[new], results[new] = run_cells(
                cells, runs_dir / ("matrix-new" if new else "matrix-old"), jobs if new else 1)
        print(f"matrix {'new' if new else 'old'}: {walls[new]:.0f} s", file=sys.stderr)
    print(f"\n#### The matrix: {len(versions)} builds x {len(files)} scenario files, old 1 "
          f"at a time, new {jobs} at a time\n")
    print("| build | old cluster time (s) | new cluster time (s) | cells as expected (new) "
          "| same verdicts |\n|---|---|---|---|---|")
    ok = True
    for v in versions:
        idx = [i for i, (b, _) in enumerate(cells) if b.version == v]
        sums = {n: sum(results[n][i].wall_s for i in idx) for n in paths}
        new_r = [results[paths[-1]][i] for i in idx]
        same = all(_verdicts(results[False][i]) == _verdicts(results[True][i]) for i in idx) \
            if len(paths) == 2 else None
        good = sum(bool(r.as_expected) for r in new_r)
        ok &= good == len(idx) and same is not False
        print(f"| {v} | {sums.get(False, 0):.0f} | {sums.get(True, 0):.0f} | {good}/{len(idx)} "
              f"| {'-' if same is None else 'yes' if same else 'NO'} |")
    old_w, new_w = walls.get(False), walls.get(True)
    print(f"| **whole matrix (wall)** | {f'{old_w:.0f}' if old_w else '-'} | "
          f"{f'{new_w:.0f}' if new_w else '-'} | "
          f"{_ratio(old_w, new_w) if old_w and new_w else '-'} old/new | |")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default=builds.DEFAULT_KAFKA_VERSION)
    ap.add_argument("--bringup", type=int, default=3, help="bring-up runs of each path (0: none)")
    ap.add_argument("--suite", action="store_true", help="also the suite, old then new")
    ap.add_argument("--paths", default="old,new", help="the suite's paths, in this order")
    ap.add_argument("--jobs", type=int, default=parallel.default_jobs())
    ap.add_argument("--scenarios", default="*.yaml", help="glob under fixtures/scenarios")
    ap.add_argument("--matrix", metavar="VERSIONS",
                    help="also the matrix of these builds (comma-separated) x the scenarios")
    ap.add_argument("--runs-dir", type=Path)
    ap.add_argument("--bringup-once", action="store_true")
    ap.add_argument("--old", action="store_true", help="with --bringup-once: the old path")
    args = ap.parse_args()
    build = builds.resolve(args.version)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.bringup_once:
            with path(not args.old):
                bring_up(build, root, "once", restart=False)
            return 0
        host = machine.describe()
        print(f"### Kafka {build.version}, {time.strftime('%Y-%m-%d %H:%M')} UTC, "
              f"{host['cpu']}, {host['cores']} cores, "
              f"{(parallel.available_memory() or 0) / 2**30:.0f} GiB "
              f"available, Python {platform.python_version()}, jobs {args.jobs}")
        if args.bringup:
            bench_bringup(build, root, args.bringup)
        ok = True
        files = sorted(SCENARIOS.glob(args.scenarios))
        paths = tuple(p.strip() == "new" for p in args.paths.split(",") if p.strip())
        runs = args.runs_dir or root / "runs"
        if args.suite:
            ok = bench_suite(build, files, runs, args.jobs, paths)
        if args.matrix:
            versions = [v.strip() for v in args.matrix.split(",") if v.strip()]
            ok &= bench_matrix(versions, files, runs, args.jobs, paths)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
