"""Options several subcommands share (the build under test, where runs go, how many
clusters at once, a Spark master). Subcommands import this module, never each other."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster import builds
from harness.cluster.backends import BACKENDS
from harness.infra import progress
from harness.infra.errors import UsageError
from harness.infra.history import runs_below
from reference.search.generators import DEFAULT_LOG_DIRS_CHANCE, DEFAULT_UPGRADE_CHANCE

if TYPE_CHECKING:
    from harness.run.fanout import SparkRuns


def add_build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kafka-version", help=f"Kafka version from Maven Central (default "
                                                f"{builds.DEFAULT_KAFKA_VERSION})")
    parser.add_argument("--kafka-dist", type=Path, help="local Kafka distribution directory")
    parser.add_argument("--backend", default="local", choices=BACKENDS)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"),
                        help="where run histories go (default ./runs)")


def run_dirs(paths: list[Path], command: str) -> list[Path]:
    """Every scenario run directory named or directly below a named directory. Under a
    directory, runs of pytest chaos tests (no scenario file: nothing to re-judge) are left
    out with a note; a path that does not exist or holds no scenario run is an error
    naming it."""
    out: list[Path] = []
    for path in paths:
        if (path / "run.json").is_file():
            out.append(path)
            continue
        found = runs_below(path, command)
        tests = [p for p in found if not _scenario_run(p)]
        if tests:
            progress.say(f"{command}: {path}: {len(tests)} run(s) of pytest tests left out "
                         "(no scenario file to judge against)")
        found = [p for p in found if p not in tests]
        if not found:
            raise UsageError(f"{command}: {path} is not a run directory and holds no scenario "
                             "run (no run.json of a scenario in it or in its subdirectories)")
        out.extend(found)
    return out


def _scenario_run(run_dir: Path) -> bool:
    if (run_dir / "scenario.yaml").is_file():
        return True
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return True  # let the judge name what is wrong with it
    return bool((meta.get("scenario") or {}).get("file"))


def jobs_count(text: str) -> int:
    """--jobs N (1..MAX_JOBS) or `auto` (2 clusters per core, as memory allows)."""
    from harness.run.parallel import MAX_JOBS, default_jobs
    if text == "auto":
        return default_jobs()
    return count(text, MAX_JOBS, " or `auto`")


def count(text: str, most: int, alternative: str = "") -> int:
    """A whole number of 1..most, as an argparse type (checked before anything runs)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of 1..{most}"
                                         f"{alternative}") from None
    if not 1 <= value <= most:
        raise argparse.ArgumentTypeError(f"{text}: give a count of 1..{most}{alternative}")
    return value


def add_generation_options(parser: argparse.ArgumentParser, shrink_attempts: int,
                           shrink_budget: str) -> None:
    """The generated schedules' options that `fuzz` and `hunt` share."""
    parser.add_argument("--weights", default="", help="step kind weights over the defaults, "
                                                      "e.g. produce=6,kill=3,lose_unflushed=4 "
                                                      "(0 turns a kind off)")
    parser.add_argument("--steps", default="10", help="generated steps per schedule before "
                                                      "the recovery tail (1..100, default 10)")
    parser.add_argument("--step-timeout", default="30",
                        help="seconds a step may take to settle")
    parser.add_argument("--confirm", default="1", help="re-runs of a new failure's schedule "
                                                       "(flaky or not; default 1)")
    parser.add_argument("--shrink-attempts", default=str(shrink_attempts),
                        help=f"runs per shrink (default {shrink_attempts})")
    parser.add_argument("--shrink-budget", default=shrink_budget,
                        help=f"time per shrink (default {shrink_budget})")
    # --upgrades, --log-dirs, --births and --tiered default to None: a resumed hunt keeps the
    # campaign's own value of a flag not given (hunt.resume_config).
    parser.add_argument("--upgrades", default=None,
                        help="chance (0..1) that a schedule's cluster is born on an older "
                             "build (--births) and its nodes upgraded to the run's build "
                             "during the schedule, one at a time, with faults in the mixed "
                             "windows; run.json node_builds and the report name the birth "
                             f"build (default {DEFAULT_UPGRADE_CHANCE}; 0 turns it off)")
    parser.add_argument("--log-dirs", default=None,
                        help="chance (0..1) that a schedule's cluster has 2-3 log directories "
                             "per broker (3.7+ builds only; local backend as root: "
                             "docs/LOG-DIRS.md) and its schedule move_replica_dir and "
                             "fail_log_dir steps, each failure repaired by a restart "
                             f"(default {DEFAULT_LOG_DIRS_CHANCE}: such a cluster costs loop "
                             "mounts at bring-up and most schedules should keep the one-"
                             "directory cluster; 0 turns it off)")
    parser.add_argument("--births", default=None,
                        help="builds a cluster may be born on, comma-separated, each older "
                             "than the run's build (default: the newest patch of each older "
                             "release line of the catalog from 3.9 on)")
    parser.add_argument("--tiered", default=None,
                        help="chance (0..1) that a schedule under --traffic is on a tiered "
                             "cluster (remote.storage.enable, segment.ms 1-5 s, a small "
                             "local.retention.bytes; FORMAT.md \"Tiered storage\"): its "
                             "kills and leader changes land during uploads. Only on builds "
                             "with tiered storage (3.6.0+) and clusters not born on an "
                             "older build (default 0: off)")
    parser.add_argument("--traffic", action="store_true",
                        help="run every schedule under client traffic drawn from its seed: "
                             "a traffic block (1-3 producers, acks all or 1, 50-400 records/s "
                             "each; 1-2 consumers) in its scenario file, so re-runs and the "
                             "minimal scenario keep it; no consume steps (FORMAT.md "
                             "\"Traffic\")")


def upgrade_chance(command: str, text: str | None, flag: str = "--upgrades") -> float:
    """--upgrades (or ``flag``, --log-dirs): a chance in [0, 1] (None: the flag's default),
    or a UsageError naming the command."""
    if text is None:
        return DEFAULT_UPGRADE_CHANCE if flag == "--upgrades" else DEFAULT_LOG_DIRS_CHANCE
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        every = ("born on an older build" if flag == "--upgrades"
                 else "with several log directories")
        raise UsageError(f"{command}: {flag} {text!r}: give a chance between 0 and 1 "
                         f"(e.g. 0.1; 1: every schedule {every})")
    return value


def tiered_chance(command: str, text: str | None, traffic: bool) -> float:
    """--tiered: a chance in [0, 1] (None: 0, off; a tiered cluster needs --traffic: its
    segments roll under the traffic's records), or a UsageError naming the command."""
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise UsageError(f"{command}: --tiered {text!r}: give a chance between 0 and 1")
    if value > 0 and not traffic:
        raise UsageError(f"{command}: --tiered needs --traffic (segments roll and upload "
                         "under the traffic's records)")
    return value


def step_timeout(command: str, text: str) -> float:
    """--step-timeout: seconds in (0, 600], or a UsageError naming the command."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{command}: --step-timeout {text!r} is not a number") from None
    if not 0 < value <= 600:
        raise UsageError(f"{command}: --step-timeout: give seconds > 0 and <= 600")
    return value


def whole_number(command: str, flag: str, text: str, lo: int, hi: int) -> int:
    """A flag's whole number in lo..hi, or a UsageError naming the command and the flag."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise UsageError(f"{command}: {flag} {text!r} is not a whole number") from None
    if not lo <= value <= hi:
        raise UsageError(f"{command}: {flag} {value}: give {lo}..{hi}")
    return value


JOBS_HELP = ("clusters run at once (default `auto`: 2 per core as memory allows, "
              "2.5 GiB each; 1: one after another); each has its own loopback block, "
              "Toxiproxy and run dir")
_MASTER_HELP = ("run each scenario as a task on a Spark cluster (spark://HOST:PORT): one "
                "cluster per executor core, on the executor's machine; --runs-dir must be a "
                "path every executor shares (--jobs is then the executor cores)")


def add_master_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help=_MASTER_HELP)


def check_master(master: str | None) -> None:
    """--master answers (or is local[N]): checked before a build resolves or a session starts."""
    if master:
        from harness.run.fanout import check_master as check
        check(master)


def spark_runs(master: str | None) -> SparkRuns | None:
    """The Spark fan-out for --master (None without it); checked before any build resolves."""
    if not master:
        return None
    from harness.run.fanout import SparkRuns
    return SparkRuns(master, progress.say)


def check_runs_dir(runs_dir: Path) -> None:
    """--runs-dir must be a directory this process can create and write in."""
    if runs_dir.exists() and not runs_dir.is_dir():
        raise UsageError(f"--runs-dir {runs_dir} is a file; give a directory for run histories")
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--runs-dir {runs_dir}: cannot create it ({e.strerror or e}); give a "
                         "writable directory") from None
