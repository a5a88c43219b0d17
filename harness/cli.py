"""`kafka-chaos` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import builds
from harness.backends import BACKENDS
from harness.errors import HarnessError


def add_build_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kafka-version", help=f"Kafka version from Maven Central (default "
                                                f"{builds.DEFAULT_KAFKA_VERSION})")
    parser.add_argument("--kafka-dist", type=Path, help="local Kafka distribution directory")
    parser.add_argument("--backend", default="local", choices=BACKENDS)
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"),
                        help="where run histories go (default ./runs)")


def _demo(args: argparse.Namespace) -> int:
    from harness import demo
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    return demo.run(build, args.runs_dir, args.backend)


def _build_info(args: argparse.Namespace) -> int:
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    print(f"Kafka {build.version} ({build.source})\n  libs: {build.libs}\n  features: "
          f"{', '.join(sorted(build.features.names())) or 'none'}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kafka-chaos", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="kill the leader of a 3-broker cluster, show the outcome")
    add_build_options(demo)
    demo.set_defaults(func=_demo)
    info = sub.add_parser("build", help="resolve a build and print its capabilities")
    add_build_options(info)
    info.set_defaults(func=_build_info)
    for module in ("harness.model_cli", "harness.report.cli", "harness.runner_cli",
                   "harness.audit_cli"):
        _add_optional(sub, module)
    return top


def _add_optional(sub: argparse._SubParsersAction, module: str) -> None:  # type: ignore[type-arg]
    import importlib
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module.startswith(exc.name):
            raise
        return
    mod.add_subcommands(sub)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except HarnessError as exc:
        print(f"kafka-chaos: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted; everything it started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
