"""Options several subcommands share (the build under test and where runs go)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cluster import builds
from harness.cluster.backends import BACKENDS


def add_build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kafka-version", help=f"Kafka version from Maven Central (default "
                                                f"{builds.DEFAULT_KAFKA_VERSION})")
    parser.add_argument("--kafka-dist", type=Path, help="local Kafka distribution directory")
    parser.add_argument("--backend", default="local", choices=BACKENDS)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"),
                        help="where run histories go (default ./runs)")
