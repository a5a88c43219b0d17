"""The verdicts of a differential campaign, without its timings: for checking that a speed
change alters nothing the campaign decides (issue 44 item 3).

    python bench/diff_verdicts.py --versions 3.9.2,4.3.1,4.4.0 --events 4000 --save before.json
    (change the code)
    python bench/diff_verdicts.py --versions 3.9.2,4.3.1,4.4.0 --events 4000 --against before.json

Each build runs ``kafka-chaos diff --seed S --events N --no-shrink --workers 1`` (one worker:
the events then depend on the seed alone). Kept: the event count, per-op counts, refusals, every
verdict count, every deviation count and first event, the unmodelled counts, and per finding its
signature, count, first event, known bug, the finding record and the lane's events. Left out:
seconds of every kind, CPU figures, and Kafka's random ids (topic ids, directory ids), which
differ between any two runs of one build.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_UUID = re.compile(r"\b[A-Za-z0-9_-]{22}\b")
_TIMINGS = {"seconds", "events_per_second", "driver_cpu_seconds", "harness_cpu_seconds",
            "events_per_cpu_second", "session_start_seconds", "first_seconds", "file"}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str):
        return _UUID.sub("<id>", value)
    return value


def digest(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    findings = {}
    for path in sorted((run_dir / "findings").glob("*.json")):
        f = json.loads(path.read_text())
        findings[f["finding"]["signature"]] = _clean(f)
    return {"stats": _clean(summary["stats"]), "finding_classes": summary["finding_classes"],
            "findings": findings}


def run(version: str, seed: int, events: int, root: Path) -> dict[str, Any]:
    out = root / version
    # exit status 1 means findings: expected here
    rc = subprocess.run([sys.executable, "-m", "harness.cli", "diff", "--kafka-version", version,
                         "--seed", str(seed), "--events", str(events), "--budget", "3600s",
                         "--no-shrink",
                         "--workers", "1", "--runs-dir", str(out)],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    if rc not in (0, 1):
        raise SystemExit(f"{version}: diff exited {rc}")
    (run_dir,) = [p for p in out.iterdir() if (p / "summary.json").exists()]
    return digest(run_dir)


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'after' if k in b else 'before'}"
            d = _first_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items before, {len(b)} after"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} before, {b!r} after"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", default="3.9.2,4.3.1,4.4.0")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--events", type=int, default=4000)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    result = {}
    with tempfile.TemporaryDirectory(prefix="diff-verdicts-") as tmp:
        for version in args.versions.split(","):
            result[version] = run(version, args.seed, args.events, Path(tmp))
            st = result[version]["stats"]
            print(f"{version}: {st['events']} events, verdicts {st['verdicts']}, "
                  f"{len(result[version]['findings'])} findings", flush=True)
    if args.save:
        args.save.write_text(json.dumps(result, indent=1, sort_keys=True))
    if args.against:
        before = json.loads(args.against.read_text())
        bad = 0
        for version in result:
            d = _first_difference(before.get(version), result[version], version)
            print(f"{version}: {'identical' if d is None else 'DIFFERS at ' + d}")
            bad += d is not None
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
