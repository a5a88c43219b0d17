"""The `kafka-chaos` command line: `app` composes the subcommands each module here adds
(run/matrix, audit, predict/explore, report, demo, build); `options` holds the options
they share, so no subcommand module imports another.

May import: every other harness package and reference; nothing imports harness.cli.
"""


from harness.cli.app import main

__all__ = ["main"]
