"""Replaying a written finding (`kafka-chaos diff --replay findings/NN-<signature>.json`):
its events (shrunk when the campaign shrank them; in lane 0's names) in one fresh session
of the build with the finding's settings (min ISR, unclean election, metadata.version) and
the ELR of the session it was found in, each answer compared with the model as the
campaign compares it. The reproduction command of a diff finding's write-up
(harness/report/finding/diff.py): the same driver code path as the shrinker's replays
(shrink.py ``replay``), one candidate, every event printed."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.differential.campaign.lanes import clock_broker, lane_brokers
from harness.differential.campaign.session import Session
from harness.differential.protocol import Settings
from harness.infra.errors import UsageError


@dataclass
class Replayed:
    """What the replay showed: each signature with the first event (0-based) it came at."""

    signature: str
    seen: dict[str, int] = field(default_factory=dict)
    #: each signature's first detail (what a known bug's ``diff_details`` are matched on)
    details: dict[str, str] = field(default_factory=dict)

    @property
    def again(self) -> str | None:
        """The signature seen that is the finding's: the same ``axis:name:op`` (the profile,
        the fourth part, names the release line, so another build's differs)."""
        key = _key(self.signature)
        return next((s for s in self.seen if _key(s) == key), None)

    @property
    def reproduced(self) -> bool:
        return self.again is not None


def _key(signature: str) -> str:
    return ":".join(signature.split(":")[:3])


def read_finding(path: Path) -> dict[str, Any]:
    """A finding file a diff campaign wrote; a UsageError naming what is wrong."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable diff finding ({exc})") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("finding"), dict)
            and isinstance(doc.get("events"), list)):
        raise UsageError(f"{path}: not a diff finding (a file `kafka-chaos diff` writes under "
                         "its run directory's findings/, with 'finding' and 'events')")
    return doc


def settings_of(doc: Mapping[str, Any]) -> Settings:
    """The finding's session settings, for lane 0 alone (its events are in lane 0's
    names)."""
    s = doc.get("settings") or {}
    return Settings(brokers=(*lane_brokers(0), clock_broker(0)),
                    min_isr=int(s.get("minIsr", 2)),
                    unclean_election=bool(s.get("uncleanElection", False)),
                    elr=doc.get("elr"), metadata_version=s.get("metadataVersion"),
                    report="changed")


def replay(build: Build, doc: Mapping[str, Any],
           say: Callable[[str], None] = print) -> Replayed:
    """Every event of ``doc`` through one fresh session, said one line each (the answer,
    both axes' verdicts, the findings)."""
    out = Replayed(str(doc["finding"]["signature"]))
    events = [dict(e) for e in doc["events"]]
    if not events:
        say("replay: the finding holds no events (its lane was not known): nothing to replay")
        return out
    s = Session(build, settings_of(doc))
    try:
        for i, (event, answer) in enumerate(zip(events, s.send(events), strict=True)):
            rep = s.comparator.step(event, answer)
            said = "ok" if answer.ok else (answer.error_name or answer.unsupported or "refused")
            say(f"{i:4d} {json.dumps(event)} -> {said}; release {rep.release}, kip {rep.kip}")
            for f in rep.findings:
                out.seen.setdefault(f.signature, i)
                out.details.setdefault(f.signature, f.detail)
                say(f"     FINDING {f.signature}: {f.detail[:300]}")
    finally:
        s.close()
    return out
