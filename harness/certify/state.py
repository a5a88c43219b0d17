"""A certify campaign's bookkeeping: DIR/certify-state.json (docs/CERTIFY.md "Resuming").

It holds the settings (the two builds, the seed), the plan made at the start (each part's
budget and the matrix and upgrade scenario sets), every finished item (one scenario run on
one build, one build's diff or hunt) as its record, and each part's elapsed time and
whether it is done. It is written (atomically: a temporary file renamed) after every item,
so a campaign stopped anywhere loses at most the item that was running: the next call with
the same DIR runs the items without a record, and never a part marked done. A DIR of other
builds or another seed is refused before anything runs."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATE_FILE = "certify-state.json"
STATE_VERSION = 1


@dataclass
class CertifyState:
    settings: dict[str, Any]
    plan: dict[str, Any] = field(default_factory=dict)
    #: item key ("matrix/new/<scenario>", "diff/old", ...) -> its record
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: part -> {"elapsed_s": float, "done": bool, "note": str}
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: how many calls (sessions) worked on the campaign
    sessions: int = 0

    def part(self, name: str) -> dict[str, Any]:
        return self.parts.setdefault(name, {"elapsed_s": 0.0, "done": False, "note": ""})

    def done(self, key: str) -> bool:
        return key in self.items

    def record(self, key: str, rec: Mapping[str, Any]) -> None:
        self.items[key] = dict(rec)

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "settings": self.settings, "plan": self.plan,
                "items": self.items, "parts": self.parts, "sessions": self.sessions}


class SettingsMismatch(ValueError):
    pass


def load(campaign_dir: Path, settings: Mapping[str, Any]) -> CertifyState:
    """The campaign in DIR (resumed), or a new one; SettingsMismatch if DIR holds another
    campaign (other builds or seed)."""
    path = campaign_dir / STATE_FILE
    if not path.exists():
        return CertifyState(dict(settings))
    doc = json.loads(path.read_text())
    if doc.get("version") != STATE_VERSION:
        raise SettingsMismatch(f"{path}: state version {doc.get('version')}, this harness "
                               f"writes {STATE_VERSION}; use another --campaign directory")
    old = doc.get("settings", {})
    differ = sorted(k for k in settings if old.get(k) != settings[k])
    if differ:
        raise SettingsMismatch(
            f"{path} is a campaign with other settings ("
            + ", ".join(f"{k}: {old.get(k)!r} there, {settings[k]!r} now" for k in differ)
            + "); use another --campaign directory, or the same settings to resume it")
    return CertifyState(old, doc.get("plan", {}), doc.get("items", {}), doc.get("parts", {}),
                        int(doc.get("sessions", 0)))


def save(campaign_dir: Path, state: CertifyState) -> None:
    campaign_dir.mkdir(parents=True, exist_ok=True)
    path = campaign_dir / STATE_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
