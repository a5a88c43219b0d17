"""Options several subcommands share (the build under test and where runs go)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cluster import builds
from harness.cluster.backends import BACKENDS
from harness.infra import progress
from harness.infra.errors import UsageError


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
        if not path.exists():
            raise UsageError(f"{command}: {path} does not exist")
        if not path.is_dir():
            raise UsageError(f"{command}: {path} is not a directory (give a run directory or "
                             "a directory of run directories)")
        found = sorted(p for p in path.iterdir() if (p / "run.json").is_file())
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
