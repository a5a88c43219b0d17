"""The run history: `run.json` and an append-only, flushed `events.jsonl` (schema 1.x).

Written as events happen so a crashed run still leaves its evidence. The contract is
in fixtures/histories/SCHEMA.md; every verdict and report is derived from it.
"""

from __future__ import annotations

import json
import os
import platform
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.infra import machine
from harness.infra.errors import UsageError

SCHEMA_VERSION = "1.8"


class SchemaError(ValueError):
    """A history this reader cannot understand."""


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


class HistoryExists(FileExistsError):
    """The run directory already holds a history: two runs must never share one."""


class History:
    def __init__(self, run_dir: Path, run_id: str | None = None) -> None:
        self.run_dir = run_dir
        self.run_id = run_id or run_dir.name
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "logs").mkdir(exist_ok=True)
        self._lock = threading.Lock()
        self._seq = 0
        self._events = _create_events_file(run_dir)
        self.meta: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "run_id": self.run_id, "scenario": None,
            "build": None, "backend": None, "seed": None, "profile": None,
            "started_wall": time.time(), "ended_wall": None, "timings": {}, "verdict": None,
            "versions": _versions(), "machine": machine.describe(),
        }
        self.write_meta()
        self.record("run_start", schema_version=SCHEMA_VERSION)

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        with self._lock:
            event = {"run_id": self.run_id, "seq": self._seq, "t_wall": time.time(),
                     "t_mono": time.monotonic(), "kind": kind, **fields}
            self._seq += 1
            if not self._events.closed:
                self._events.write(json.dumps(event, default=_jsonable) + "\n")
                self._events.flush()
        return event

    def update(self, **fields: Any) -> None:
        self.meta.update(fields)
        self.write_meta()

    def write_meta(self) -> None:
        tmp = self.run_dir / "run.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=2, default=_jsonable))
        os.replace(tmp, self.run_dir / "run.json")

    def close(self, verdict: str | None) -> None:
        if self._events.closed:
            return
        self.record("run_end", verdict=verdict)
        self.meta.update(ended_wall=time.time(), verdict=verdict)
        self.write_meta()
        self._events.close()


def _create_events_file(run_dir: Path) -> TextIO:
    """Claim the directory: exclusive create, so a second run aimed at the same directory
    fails instead of appending its events to another run's (seq and run_end would mix)."""
    if (run_dir / "run.json").exists():
        raise HistoryExists(f"{run_dir} already holds a run history (run.json); "
                            "every run needs a directory of its own")
    try:
        return open(run_dir / "events.jsonl", "x", encoding="utf-8")  # noqa: SIM115
    except FileExistsError as exc:
        raise HistoryExists(f"{run_dir} already holds a run history (events.jsonl); "
                            "every run needs a directory of its own") from exc


def _jsonable(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    return str(value)


def _versions() -> dict[str, str]:
    from harness import __version__
    out = {"kafka-chaos": __version__, "python": platform.python_version()}
    try:
        import confluent_kafka
        # version() is the version string itself: version()[0] recorded "2" for 2.16.1
        out["confluent-kafka"] = str(confluent_kafka.__version__)
        out["librdkafka"] = str(confluent_kafka.libversion()[0])
    except ImportError:
        pass
    return out


def read_events(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Events of a history; a truncated last line (crashed writer) is skipped."""
    check_schema(run_dir)
    with open(run_dir / "events.jsonl", encoding="utf-8") as fh:
        for line in fh:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                if line.endswith("\n"):
                    raise
                return


@dataclass
class RecordedRun:
    """A run as its directory holds it: run.json and the events of its history."""

    run_dir: Path
    meta: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def version(self) -> str:
        """The Kafka version the run ran on."""
        return str(self.meta["build"]["version"])

    @property
    def complete(self) -> bool:
        """The run ended: run.json has its end and the history its run_end (else it
        crashed, was killed or is still running)."""
        return self.meta.get("ended_wall") is not None and any(
            e["kind"] == "run_end" for e in self.events)


def runs_below(path: Path, command: str) -> list[Path]:
    """The run directories (each holds run.json) directly below ``path``, which is not one
    itself; a UsageError naming ``path`` when it does not exist, is a file or holds none."""
    if not path.exists():
        raise UsageError(f"{command}: {path} does not exist")
    if not path.is_dir():
        raise UsageError(f"{command}: {path} is not a directory (give a run directory, with "
                         "run.json, or a directory of run directories)")
    found = sorted(p for p in path.iterdir() if (p / "run.json").is_file())
    if not found:
        raise UsageError(f"{command}: {path} is not a run directory (no run.json) and holds "
                         "no run directories")
    return found


def check_schema(run_dir: Path) -> dict[str, Any]:
    try:
        meta: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{run_dir}: unreadable run.json ({exc})") from exc
    if not isinstance(meta, dict):
        raise SchemaError(f"{run_dir}: run.json is not a JSON object")
    major = str(meta.get("schema_version", "?")).split(".")[0]
    if major != SCHEMA_VERSION.split(".")[0]:
        raise SchemaError(f"{run_dir}: history schema {meta.get('schema_version')} is not "
                          f"supported (this reader knows {SCHEMA_VERSION}); upgrade kafka-chaos")
    return meta
