"""Shared by the fast tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.infra import procs


@pytest.fixture(autouse=True)
def _not_interrupted() -> Iterator[None]:
    """A test that interrupts a run (run_all on Ctrl-C) marks the process interrupted, as a
    real interrupt does; the next test starts from a process that is not."""
    yield
    procs._interrupted.clear()
