"""`kafka-chaos java`: compile one Java source file against a build's jars (with the JDK's
javac, cached per build) and run it; its output is printed and its exit status is the
command's. harness/cli/app.py calls ``add_subcommands(subparsers)``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli.options import add_build_options
from harness.cluster import builds, javaprogram

_USAGE = ("kafka-chaos java SOURCE [--kafka-version V | --kafka-dist DIR] [--junit] "
          "[--test-jars A,B] [-- ARGS ...]")


def _add_options(parser: argparse.ArgumentParser) -> None:
    add_build_options(parser)
    parser.add_argument("--junit", action="store_true",
                        help="SOURCE is a JUnit 5 test class: compile it with JUnit on the class "
                             "path and run it with the JUnit console launcher "
                             f"({javaprogram.JUNIT_CONSOLE}, from Maven Central on first use)")
    parser.add_argument("--test-jars", default="", metavar="A,B",
                        help="comma-separated org.apache.kafka artifacts whose published test "
                             "jar of the build's version goes on the class path too (e.g. "
                             "kafka-metadata,kafka-clients,kafka-server-common for Kafka's "
                             "ReplicationControlManagerTest context); from Maven Central on "
                             "first use")


def add_subcommands(sub: Any) -> None:
    p = sub.add_parser(
        "java", usage=_USAGE,
        help="compile a Java source file against a build's jars (cached) and run it",
        description="Compile SOURCE (a .java file; its public class is the main class, a "
                    "package declaration is honoured) with javac against the build's "
                    "libs/*.jar, cached beside the build once per source, build and JDK, and "
                    "run it with java -cp. Prints its output; exits with its exit status. "
                    "Arguments after -- go to the program (with --junit: to the console "
                    "launcher).",
        epilog="example: kafka-chaos java docs/findings/elr-keeps-removed-replica/"
               "ReproduceElrKeepsRemovedReplica.java --kafka-version 4.3.1 -- cancel")
    _add_options(p)
    # SOURCE, the options again and `-- ARGS`, in any order: argparse alone would take
    # SOURCE and an empty ARGS at once and refuse a later `-- ARGS` (java_command parses it).
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="SOURCE ... [-- ARGS]",
                   help=argparse.SUPPRESS)
    p.set_defaults(func=java_command)


def parse_command(args: argparse.Namespace) -> argparse.Namespace:
    """SOURCE, options and program arguments out of the words after `java`."""
    words = list(args.command)
    program_args: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, program_args = words[:cut], words[cut + 1:]
    inner = argparse.ArgumentParser(prog="kafka-chaos java", usage=_USAGE, add_help=False)
    inner.add_argument("source", type=Path)
    inner.add_argument("args", nargs="*")
    _add_options(inner)
    if not words:
        inner.error("give SOURCE, a .java file")
    parsed = inner.parse_intermixed_args(words, namespace=args)
    parsed.args = [*parsed.args, *program_args]
    return parsed


def java_command(args: argparse.Namespace) -> int:
    args = parse_command(args)
    source = javaprogram.check_source(args.source)  # a bad path fails before any build
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    test_jars = [name for name in args.test_jars.split(",") if name]
    extra = [javaprogram.junit_console_jar()] if args.junit else []
    extra += javaprogram.kafka_test_jars(test_jars, build)
    program = javaprogram.compile_program(source, build, extra)
    if args.junit:
        result = javaprogram.run(
            program, ["execute", "--disable-banner", "--disable-ansi-colors", "--details=tree",
                      "--select-class", program.main_class, *args.args],
            main_class=javaprogram.JUNIT_MAIN, timeout_s=None, capture=False)
    else:
        result = javaprogram.run(program, args.args, timeout_s=None, capture=False)
    return result.exit_code
