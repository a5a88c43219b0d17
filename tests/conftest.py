"""Shared by the fast tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness.infra import procs


@pytest.fixture(autouse=True)
def _not_interrupted() -> Iterator[None]:
    """A test that interrupts a run (run_all on Ctrl-C) marks the process interrupted, as a
    real interrupt does; the next test starts from a process that is not."""
    yield
    procs._interrupted.clear()


@pytest.fixture
def bench_script() -> Callable[[str], ModuleType]:
    """A script under bench/ (not a package) loaded as a module by its stem; registered in
    sys.modules so what it defines pickles (Spark ships generated histories' classes)."""
    def load(stem: str) -> ModuleType:
        path = Path(__file__).resolve().parent.parent / "bench" / f"{stem}.py"
        spec = importlib.util.spec_from_file_location(stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[stem] = module
        spec.loader.exec_module(module)
        return module
    return load


@pytest.fixture
def local_report(monkeypatch: pytest.MonkeyPatch) -> Any:
    """make_report with each history judged in this process by the report's own task body
    (spark_jobs.judge_history), instead of on Spark: the same facts, no JVM."""
    from harness.report import build, spark_jobs
    monkeypatch.setattr(build, "spark_session", lambda master=None: None)
    monkeypatch.setattr(spark_jobs, "judge_runs", lambda spark, histories, limit=100_000: [
        spark_jobs.RunFacts(*spark_jobs.judge_history((rid, str(path), limit)))
        for rid, path in histories])
    return build.make_report
