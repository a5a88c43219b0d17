"""Finding run histories and reading their run.json; bad ones are named, never dropped."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.infra.errors import UsageError
from harness.infra.history import SchemaError, check_schema


@dataclass
class Runs:
    good: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)  # (dir, run.json)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (dir, reason)


def discover(roots: list[Path]) -> Runs:
    """Every directory holding a run.json under the given roots (or the roots themselves).

    A root that does not exist or is not a directory is an error, not an empty report.
    Symbolic links below a root are not followed (a link cycle, or a run counted twice
    through a `latest` link) but named as skipped; a root given as a link is followed."""
    for root in roots:
        if not root.exists():
            raise UsageError(f"{root}: no such directory (give the directory holding the "
                             "run histories, e.g. runs/)")
        if not root.is_dir():
            raise UsageError(f"{root}: not a directory (give the directory holding the run "
                             "histories, e.g. runs/, not a file in one)")
    out = Runs()
    seen: set[Path] = set()
    for root in roots:
        for run_dir in _run_dirs(root.resolve(), out):
            if run_dir not in seen:
                seen.add(run_dir)
                _classify(run_dir, out)
    return out


def _run_dirs(root: Path, out: Runs) -> list[Path]:
    found = []
    for top, dirs, files in os.walk(root):
        here = Path(top)
        if "run.json" in files:
            found.append(here)
            dirs[:] = []  # a run's own tree (nodes, data, logs) holds no other run
            continue
        for name in sorted(dirs):
            if (here / name).is_symlink():
                out.skipped.append((str(here / name), "symbolic link to "
                                    f"{os.readlink(here / name)}: not followed"))
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink())
    return sorted(found)


def _classify(run_dir: Path, out: Runs) -> None:
    try:
        meta = check_schema(run_dir)
        meta.setdefault("run_id", run_dir.name)
        _check_meta(meta)
    except SchemaError as exc:
        out.skipped.append((str(run_dir), str(exc)))
        return
    events = run_dir / "events.jsonl"
    if not events.exists():
        out.skipped.append((str(run_dir), "no events.jsonl"))
        return
    try:
        with open(events, encoding="utf-8") as fh:
            first = fh.readline()
        if first and json.loads(first).get("run_id") is None:
            raise ValueError("first event has no run_id")
    except (ValueError, OSError, AttributeError) as exc:
        out.skipped.append((str(run_dir), f"events.jsonl unreadable: {exc}"))
        return
    out.good.append((run_dir, meta))


def _check_meta(meta: dict[str, Any]) -> None:
    """The run.json fields the report sorts, groups and computes with must have their
    schema types; anything else is shown as text (escaped)."""
    for key, ok, what in _META_TYPES:
        value = _get(meta, key)
        if not ok(value):
            raise SchemaError(f"run.json: {key} is {json.dumps(value)[:80]}, expected {what}")


def _get(meta: dict[str, Any], key: str) -> Any:
    value: Any = meta
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def is_number(value: Any) -> bool:
    """A finite int or float (JSON numbers; bool is not one)."""
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _optional(check: Any) -> Any:
    return lambda v: v is None or check(v)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


_META_TYPES = (
    ("run_id", _is_str, "a string"),
    ("scenario", _optional(lambda v: isinstance(v, dict)), "an object or null"),
    ("scenario.name", _optional(_is_str), "a string or null"),
    ("build", _optional(lambda v: isinstance(v, dict)), "an object or null"),
    ("build.version", _optional(_is_str), "a string or null"),
    ("verdict", _optional(_is_str), "a string or null"),
    ("started_wall", _optional(is_number), "a number or null"),
    ("ended_wall", _optional(is_number), "a number or null"),
)
