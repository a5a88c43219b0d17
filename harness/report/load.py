"""Finding run histories and reading their run.json; bad ones are named, never dropped."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history import SchemaError, check_schema


@dataclass
class Runs:
    good: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)  # (dir, run.json)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (dir, reason)


def discover(roots: list[Path]) -> Runs:
    """Every directory holding a run.json under the given roots (or the roots themselves)."""
    out = Runs()
    seen: set[Path] = set()
    for root in roots:
        if not root.exists():
            out.skipped.append((str(root), "no such directory"))
            continue
        for meta_file in sorted(root.rglob("run.json")):
            run_dir = meta_file.parent.resolve()
            if run_dir in seen or "nodes" in run_dir.parts[len(root.resolve().parts):]:
                continue
            seen.add(run_dir)
            _classify(run_dir, out)
    return out


def _classify(run_dir: Path, out: Runs) -> None:
    try:
        meta = check_schema(run_dir)
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
    except (ValueError, OSError) as exc:
        out.skipped.append((str(run_dir), f"events.jsonl unreadable: {exc}"))
        return
    meta.setdefault("run_id", run_dir.name)
    out.good.append((run_dir, meta))
