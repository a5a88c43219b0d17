"""Recorded diff findings replayed again with today's code when a certify call runs, so that a
campaign resumed or re-rendered after the model or the comparison changed does not list, as
a new finding, a class today's code no longer reports (a model gap closed since, with its
test: e.g. `release:partitionEpoch:unfence`, bench/RESULTS-diff.md "Triage, fifth session").

Which: every diff finding that no known bug names (after the catalog's naming at report time,
render.rejudged) and no cited deviation explains, on the build it was found on: its own
events (its ``findings/*.json``) in one fresh driver session (confirm.replay_one, the library
function of `kafka-chaos diff --replay`). One record per finding and build, state key
``diff-rereplay/ROLE/KEY``, with ``code``: the fingerprint of the files that decide a diff
finding (``code_id``: the model, reference/, and the driver and comparison,
harness/differential/). A record made by other code is stale and made again; only a record
of today's code counts. A finding whose replay does not show its class again is
``compare.GONE``: listed under "RE-JUDGED WITH TODAY'S CODE", never as a new finding, a
regression or a fix; one reproduced is looked up in the catalog again with what today's code
said of it (a known bug named by its detail, e.g. the text of the exception the original
controller threw, which older code did not write); one the replay could not judge stays as
recorded (render.rejudged)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from harness.certify import compare, confirm

PART = "diff-rereplay"
#: The trees whose files decide what a diff finding is (relative to the checkout).
DECIDING = ("reference", "harness/differential")
_ROOT = Path(__file__).resolve().parents[2]


@cache
def code_id(root: Path = _ROOT) -> str:
    """A fingerprint of the model's and the comparison's files (path and bytes)."""
    h = hashlib.sha256()
    for tree in DECIDING:
        for p in sorted((root / tree).rglob("*")):
            if p.suffix in (".py", ".java") and p.is_file():
                h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def key_of(role: str, finding_key: str) -> str:
    return f"{PART}/{role}/{finding_key}"


def unexplained(f: Mapping[str, Any]) -> bool:
    return not f.get("known_bug") and f.get("cls") not in (*compare.EXPLAINED,
                                                            compare.HARNESS_ERROR)


def todo(items: Mapping[str, Mapping[str, Any]], searches: Sequence[Mapping[str, Any]],
         code: str) -> list[confirm.Item]:
    """The replays to make: each unexplained diff finding of ``searches`` (as the report
    reads them) without a record of ``code``."""
    out = []
    for s in searches:
        if s.get("part") != "diff":
            continue
        for f in s.get("findings", ()):
            k = key_of(s["role"], f["key"])
            if unexplained(f) and f.get("file") and items.get(k, {}).get("code") != code:
                out.append(confirm.Item(k, "diff", s["role"], s["role"], dict(f)))
    return out


def replayed(item: confirm.Item, build: Any, campaign_dir: Path, code: str
             ) -> dict[str, Any]:
    """The record of one finding replayed on its own build with today's code."""
    return {**confirm.replay_one(item, build, campaign_dir), "part": PART, "code": code}


def current(items: Mapping[str, Mapping[str, Any]], code: str
            ) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(role, finding key) -> the record of each finding replayed with ``code``."""
    return {(r["role"], r["key"]): r for k, r in items.items()
            if k.split("/")[0] == PART and r.get("code") == code}
