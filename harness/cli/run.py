"""`kafka-chaos run` and `kafka-chaos matrix`: scenarios on real builds, with verdicts."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from harness.cli.options import (
    JOBS_HELP,
    add_build_options,
    add_master_option,
    check_master,
    check_runs_dir,
    count,
    jobs_count,
    spark_runs,
)
from harness.cluster import builds
from harness.infra import progress
from harness.infra.errors import UsageError
from harness.judge.axes import fields_note
from harness.judge.compare import CONFORMS
from harness.judge.headline import lockstep_label
from harness.report.matrix import axes_matrix
from harness.run.fanout import spec_for
from harness.run.parallel import run_all
from harness.run.runner import Runner, RunResult, StepResult

MAX_STEP_TIMEOUT_S = 600
MAX_REPEAT = 1000


def seconds(text: str) -> float:
    """--step-timeout: a finite number of seconds, > 0 and <= 600 (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_STEP_TIMEOUT_S:  # NaN fails every comparison
        raise argparse.ArgumentTypeError(f"{text}: give seconds > 0 and <= {MAX_STEP_TIMEOUT_S}")
    return value


def repeat_count(text: str) -> int:
    """--repeat: 1..1000 (argparse type, so it is checked before anything runs)."""
    return count(text, MAX_REPEAT)


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = sub.add_parser("run", help="run scenario files on a real cluster against the model")
    run.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO")
    add_build_options(run)
    run.add_argument("--profile", help="model profile (default: follows the build)")
    run.add_argument("--step-timeout", type=seconds, default=30.0,
                     help="seconds a step may take to settle (default 30, at most 600)")
    run.add_argument("--repeat", type=repeat_count, default=1,
                     help="run each scenario N times and summarise the verdicts (flakiness)")
    run.add_argument("--jobs", type=jobs_count, default="auto", help=JOBS_HELP)
    add_master_option(run)
    run.set_defaults(func=_run)
    matrix = sub.add_parser("matrix", help="scenarios x builds -> markdown verdict table")
    matrix.add_argument("scenarios", nargs="+", type=Path, metavar="SCENARIO")
    matrix.add_argument("--versions", default=",".join(builds.DEFAULT_MATRIX_VERSIONS),
                        help="comma-separated Kafka versions (default: the newest patch of "
                             "every KRaft production line, "
                             f"{','.join(builds.DEFAULT_MATRIX_VERSIONS)})")
    matrix.add_argument("--backend", default="local")
    matrix.add_argument("--runs-dir", type=Path, default=Path("runs"))
    matrix.add_argument("--out", type=Path, help="write the markdown table here too")
    matrix.add_argument("--jobs", type=jobs_count, default="auto", help=JOBS_HELP)
    add_master_option(matrix)
    matrix.set_defaults(func=_matrix)


def load_all(paths: list[Path]) -> list[Any]:
    """Validate every scenario before any cluster starts."""
    from harness.scenario.loader import load_scenario
    return [load_scenario(p) for p in paths]


def check_profile(profile: str | None) -> None:
    from reference import PROFILES
    if profile is not None and profile not in PROFILES:
        raise UsageError(f"--profile {profile!r} is not a model profile; choose one of "
                         f"{', '.join(sorted(PROFILES))} (or leave it out to follow the build)")


def _run(args: argparse.Namespace) -> int:
    # Every input is checked before a build is resolved (which may download for minutes).
    scenarios = load_all(args.scenarios)
    check_profile(args.profile)
    check_runs_dir(args.runs_dir)
    check_master(args.master)
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    spark = spark_runs(args.master)
    runs = len(scenarios) * args.repeat
    jobs = spark.in_flight(runs) if spark else min(args.jobs, runs)

    def one(sc: Any, attempt: int) -> RunResult:
        what = f"scenario {sc.name} on Kafka {build.version} run {attempt + 1}/{args.repeat}"
        if spark:
            progress.say(f"{what}: sent to Spark")
            result = spark.run(spec_for(Path(sc.path), build, args.backend, args.runs_dir,
                                        args.profile, args.step_timeout))
            progress.say(f"{what}: {result.headline.verdict} ({result.wall_s:.0f} s)")
            return result
        runner = Runner(sc, build, args.backend, args.runs_dir, args.profile,
                        args.step_timeout, on_step=_step_printer(sc.name, jobs))
        progress.say(f"{what} (profile {runner.profile})")
        result = runner.run()
        if jobs <= 1:
            print_table(result)
        return result
    try:
        results = run_all([partial(one, sc, attempt) for sc in scenarios
                           for attempt in range(args.repeat)], jobs,
                          spark.cancel if spark else None)
    finally:
        if spark:
            spark.stop()
    if jobs > 1 or spark:  # tables after the runs, in order, not interleaved
        for result in results:
            print_table(result)
    if args.repeat > 1:
        print_repeat_summary(results)
    return max(exit_code(r) for r in results)


def exit_code(result: RunResult) -> int:
    """The run's headline's (harness/judge/headline.py): 2 on a harness error; 1 when an
    axis is neither clean nor as the scenario declares for this build; else 0
    (UNSUPPORTED included)."""
    return result.headline.exit_code


def print_repeat_summary(results: list[RunResult]) -> None:
    by_name: dict[str, list[RunResult]] = {}
    for r in results:
        by_name.setdefault(r.scenario, []).append(r)
    print("\nscenario | runs | verdicts | median wall s")
    for name, runs in by_name.items():
        counts: dict[str, int] = {}
        for r in runs:
            counts[r.headline.verdict] = counts.get(r.headline.verdict, 0) + 1
        walls = sorted(r.wall_s for r in runs)
        print(f"{name} | {len(runs)} | "
              f"{', '.join(f'{v} {n}' for v, n in sorted(counts.items()))} | "
              f"{walls[len(walls) // 2]:.1f}")


def _print_step(step: StepResult, prefix: str = "") -> None:
    progress.say(f"{prefix}  -> {step.verdict}" + (f": {step.reason}" if step.reason else ""))


def _step_printer(name: str, jobs: int) -> Any:
    """Step lines as they come; with runs in parallel, each says which run it is."""
    return _print_step if jobs <= 1 else partial(_print_step, prefix=f"[{name}]")


def print_table(result: RunResult, out: Any = None) -> None:
    out = out or sys.stdout  # the stdout of the call, not of the import (captured in tests)
    rows = [("#", "step", "predicted", "observed", "verdict")]
    rows += [(str(s.index + 1), s.kind, s.predicted, s.observed,
              s.verdict + (f" ({s.reason})" if s.reason and s.verdict != CONFORMS else ""))
             for s in result.steps]
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(4)]
    print(f"\n{result.scenario} on Kafka {result.build}, profile {result.profile}", file=out)
    for row in rows:
        cells = [row[i][:60].ljust(widths[i]) for i in range(4)] + [row[4]]
        print("  ".join(cells), file=out)
    for check in result.checks:
        status = "ok" if check["ok"] else "FAILED"
        extra = ""
        if check["details"]:
            extra = f" ({_describe_findings(check)}"
            extra += ", as the model predicts)" if check["ok"] else ")"
        print(f"check {check['name']}: {status}{extra}", file=out)
    print(f"VERDICT {result.headline.text}", file=out)
    print(f"  {lockstep_label(result.verdict, result.reason)}", file=out)
    fields = next((a.fields for a in result.axes.values() if a.fields is not None), None)
    if result.axes:
        print(f"  {fields_note(fields)}", file=out)
    for axis in result.axes.values():
        print(f"  {axis.axis:8s} {axis.verdict}" + _axis_note(axis), file=out)
    print(f"history: {result.run_dir}", file=out)


def _axis_note(axis: Any) -> str:
    if axis.expected is not None:
        mark = "as declared" if axis.as_expected else "DECLARED " + axis.expected["verdict"]
        return f" ({mark}: {axis.expected['reason']})"
    if not axis.as_expected:
        return f": {axis.reason} (not declared for this build)"
    return f": {axis.reason}" if axis.reason else ""


def _describe_findings(check: dict[str, Any]) -> str:
    if check["name"] != "acked_lost":
        return f"{len(check['details'])} findings"
    by_acks: dict[str, int] = {}
    for d in check["details"]:
        by_acks[str(d.get("acks"))] = by_acks.get(str(d.get("acks")), 0) + 1
    # "Not read", not "lost": the safety line says which were lost and which only hidden
    # (the recovery read, harness/run/recovery.py).
    return ", ".join(f"{n} acks={acks} record(s) not in the final read"
                     for acks, n in sorted(by_acks.items()))


def _matrix(args: argparse.Namespace) -> int:
    scenarios = load_all(args.scenarios)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    if not versions:
        raise UsageError(f"--versions {args.versions!r}: give Kafka versions, e.g. 3.9.1,4.3.1")
    check_runs_dir(args.runs_dir)
    check_master(args.master)
    resolved = [builds.resolve(v) for v in versions]  # unknown versions fail before any run
    cells: dict[tuple[str, str], RunResult] = {}
    spark = spark_runs(args.master)
    runs = len(resolved) * len(scenarios)
    jobs = spark.in_flight(runs) if spark else min(args.jobs, runs)

    def one(build: builds.Build, sc: Any) -> RunResult:
        if spark:
            result = spark.run(spec_for(Path(sc.path), build, args.backend, args.runs_dir))
        else:
            result = Runner(sc, build, args.backend, args.runs_dir,
                            on_step=_step_printer(f"{sc.name}@{build.version}", jobs)).run()
        progress.say(f"{sc.name} on {build.version}: {result.headline.verdict} "
                     f"({result.wall_s:.0f} s; "
                     f"{fields_note(result.axes['release'].fields if result.axes else None)})")
        return result
    pairs = [(build, sc) for build in resolved for sc in scenarios]
    try:
        results = run_all([partial(one, b, sc) for b, sc in pairs], jobs,
                          spark.cancel if spark else None)
    finally:
        if spark:
            spark.stop()
    for (build, sc), result in zip(pairs, results, strict=True):
        cells[(build.version, sc.name)] = result
    table = axes_matrix(list(cells.values()))
    print(table)
    if args.out:
        args.out.write_text(table)
    return max(exit_code(r) for r in cells.values())
