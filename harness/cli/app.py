"""`kafka-chaos` command line: the subcommands each module of harness.cli adds."""

from __future__ import annotations

import argparse
import sys

from harness.cli import audit, certify, diff, finding, fuzz, hunt, java, model, mutate, report, run
from harness.cli.options import add_build_options
from harness.cluster import builds
from harness.infra import startslots
from harness.infra.errors import HarnessError


def _demo(args: argparse.Namespace) -> int:
    from harness.cli import demo  # imported when used: it pulls in the whole cluster stack
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
    for module in (model, report, run, audit, mutate, fuzz, hunt, java, finding, diff,
                   certify):
        module.add_subcommands(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        startslots.default_slots()  # a bad KAFKA_CHAOS_START_SLOTS fails before any cluster
        return int(args.func(args))
    except HarnessError as exc:
        print(f"kafka-chaos: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted; everything it started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
