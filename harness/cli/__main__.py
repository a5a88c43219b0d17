"""`python -m harness.cli ...`: the kafka-chaos command, from a source tree that is not
the installed one (a git worktree, a clean clone)."""

import sys

from harness.cli import main

sys.exit(main())
