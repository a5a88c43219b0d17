"""Confirming a diff or hunt finding one build's campaign met and the other's did not
(compare.py "Confirmation of one-build findings"; docs/CERTIFY.md "The answer").

Each build's time-bounded search explores other events, so a signature met on one build only
is often search luck. Each such finding the answer would call a regression or a fix
(``compare.searches_to_confirm``) is checked on both builds, its own build first:

- a **diff** finding: its own events (its ``findings/*.json`` file) replayed in one fresh
  driver session of the build (``replay``: harness/differential/campaign/replay.py, the
  library function of `kafka-chaos diff --replay`), each answer compared with the model as
  the campaign compares it; reproduced when the finding's ``axis:name:op`` comes again. On
  the machine the command runs on, also with ``--master`` (one driver JVM, a few seconds);
- a **hunt** finding: its shrunk schedule (``minimal.yaml`` beside its first run, else that
  run's own ``scenario.yaml``) run on a fresh cluster of the build, as a matrix
  confirmation is (a Spark task with ``--master``); reproduced when the run's signature
  (harness/search/fuzz/outcome.py ``signature``, the key the hunt de-duplicates by) is the
  finding's, as the fuzz campaign's own re-runs decide.

One record per finding and build, state key ``PART-confirm/ROLE/FOUND_ON/KEY``, with
``reproduced``: True, False, or None when the run could not judge (ERROR, UNSUPPORTED, a
session the build refuses, a file gone)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.certify import compare

#: The state keys' first part of the confirmation records, per searching part.
PARTS = {"diff": "diff-confirm", "hunt": "hunt-confirm"}


@dataclass(frozen=True)
class Item:
    """One confirmation run to make: ``finding`` (found on ``found_on``) on ``role``."""
    key: str
    part: str
    role: str
    found_on: str
    finding: dict[str, Any]


def confirm_key(part: str, role: str, found_on: str, key: str) -> str:
    return f"{PARTS[part]}/{role}/{found_on}/{key}"


def records(items: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The confirmation records of a campaign's state items."""
    return [dict(r) for k, r in items.items() if k.split("/")[0] in PARTS.values()]


def todo(items: Mapping[str, Mapping[str, Any]], part: str,
         cells: Sequence[Mapping[str, Any]], searches: Sequence[Mapping[str, Any]]
         ) -> list[Item]:
    """The confirmation runs of ``part`` ("diff" or "hunt") not in ``items`` yet: for each
    finding to confirm (compare.searches_to_confirm over ``cells`` and ``searches``, the
    records as the report reads them: render.split, render.rejudged), its own build first,
    then the other."""
    out = []
    for p, key, found_on, f in compare.searches_to_confirm(cells, searches):
        if p != part:
            continue
        for role in (found_on, compare.other_role(found_on)):
            k = confirm_key(part, role, found_on, key)
            if k not in items:
                out.append(Item(k, part, role, found_on, f))
    return out


def local(path: str, campaign_dir: Path) -> Path:
    """A path a record holds, in this campaign directory when the record was made in
    another (a copied or moved campaign: the same file under ``diff/`` or ``runs/`` here),
    else as recorded."""
    p = Path(path)
    for anchor in ("/diff/", "/runs/"):
        cut = path.rfind(anchor)
        if cut >= 0:
            here = campaign_dir / path[cut + 1:]
            if here.exists():
                return here
    return p


def base(item: Item, build: Any) -> dict[str, Any]:
    return {"part": PARTS[item.part], "of": item.part, "key": item.finding["key"],
            "found_on": item.found_on, "role": item.role, "build": build.version}


def replay_one(item: Item, build: Any, campaign_dir: Path) -> dict[str, Any]:
    """A diff finding's events replayed on ``build`` (its record)."""
    from harness.differential.campaign.replay import read_finding, replay
    from harness.differential.protocol import SessionUnsupported
    t0 = time.monotonic()
    path = local(str(item.finding.get("file") or ""), campaign_dir)
    rec = {**base(item, build), "source": str(path)}
    try:
        doc = read_finding(path)
        if not doc["events"]:  # the campaign did not know the finding's lane
            return {**rec, "reproduced": None, "wall_s": round(time.monotonic() - t0, 1),
                    "text": "could not replay: the finding holds no events"}
        r = replay(build, doc, say=lambda s: None)
    except SessionUnsupported as exc:
        return {**rec, "reproduced": None, "text": f"could not replay: {exc.reason}",
                "wall_s": round(time.monotonic() - t0, 1)}
    except Exception as exc:  # a driver that died, a file gone: this run cannot judge
        return {**rec, "reproduced": None,
                "text": f"could not replay: {type(exc).__name__}: {str(exc)[:200]}",
                "wall_s": round(time.monotonic() - t0, 1)}
    if r.again is not None:
        text = f"REPRODUCED at event {r.seen[r.again]} of {len(doc['events'])}"
    else:
        text = f"NOT REPRODUCED in {len(doc['events'])} events"
    return {**rec, "reproduced": r.again is not None, "text": text,
            "seen": sorted(r.seen), "wall_s": round(time.monotonic() - t0, 1),
            # what today's code said of the class (the catalog names some by it)
            "signature": r.again, "detail": r.details.get(r.again or "", ""),
            "repro": f"kafka-chaos diff --replay {path} --kafka-version {build.version}"}


def hunt_scenario(finding: Mapping[str, Any], campaign_dir: Path) -> Path | None:
    """A hunt finding's schedule: its record's ``scenario`` (hunt_record), or for a record
    from before that field the path its reproduction command runs."""
    where = str(finding.get("scenario") or "")
    if not where:
        words = str(finding.get("repro") or "").split()
        where = words[2] if len(words) > 2 and words[1] == "run" else ""
    return local(where, campaign_dir) if where else None


def hunt_one(item: Item, build: Any, result: Any) -> dict[str, Any]:
    """A hunt finding's schedule run on ``build`` (``result``: its RunResult)."""
    from harness.judge.compare import ERROR
    from harness.search.fuzz.outcome import signature, signature_text
    rec = {**base(item, build), "run_dir": str(result.run_dir),
           "verdict": result.verdict, "wall_s": round(result.wall_s, 1)}
    if result.verdict in (ERROR, "UNSUPPORTED", "INCOMPLETE"):
        return {**rec, "reproduced": None,
                "text": f"could not judge: {result.verdict} {result.reason[:200]}".strip()}
    sig = signature(result.axes)
    got = signature_text(sig) if sig else "every axis as expected"
    same = got == item.finding["key"]
    return {**rec, "reproduced": same, "signature": got,
            "text": "REPRODUCED" if same else f"NOT REPRODUCED ({got})"}


def hunt_missing(item: Item, build: Any, why: str) -> dict[str, Any]:
    """The record of a hunt finding whose schedule cannot be run (no file)."""
    return {**base(item, build), "reproduced": None, "text": f"could not judge: {why}",
            "wall_s": 0.0}


def said(rec: Mapping[str, Any]) -> str:
    return f"{rec['of']} {rec['key']} (found on {rec['found_on']}) on {rec['build']}: " \
           f"{rec['text']}"
