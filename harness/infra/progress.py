"""Progress lines on stderr, so long installs and runs show what they are doing."""

import sys
import time

_START = time.monotonic()


def say(message: str) -> None:
    elapsed = time.monotonic() - _START
    print(f"[kafka-chaos {elapsed:7.1f}s] {message}", file=sys.stderr, flush=True)
