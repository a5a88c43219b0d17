"""The findings of differential campaigns (`kafka-chaos diff`, harness/differential/) by
class, as `hunt`'s campaign report shows them ("Controller findings by class",
harness/report/campaign.py) and `kafka-chaos finding` reads them
(harness/report/finding/diff.py).

A diff campaign's directory holds ``summary.json`` and ``findings/NN-<signature>.json``
(harness/differential/campaign/write.py). A finding's class is its signature's first part
(``axis:name:op:profile``): the model's axes and the oracles that need no model. Its label:
the known bug its file names (reference/releases/known_bugs.py, at the campaign), else the
one the catalog names now (a bug triaged after the campaign), else "not triaged"; an
``oracle-error`` is the harness's own failure."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.cluster.builds import version_tuple
from reference.releases.known_bugs import naming_diff_finding

#: Every class, in the order a report lists them, with what a finding of it means.
CLASSES: dict[str, str] = {
    "release": "the build's controller differs from its release line's profile (the model)",
    "kip": "the build's controller differs from the accepted KIP-966 (profile kip966) with "
           "any of the build's cited deviations",
    "invariant": "a KIP-966 state invariant broken by the event (whatever the profile)",
    "fault": "the controller threw a non-API exception: QuorumController renounces "
             "leadership and reverts the event",
    "snapshot": "a controller loaded from the build's own snapshot answers differently from "
                "the original",
    "index": "an index the controller keeps disagrees with the registrations it indexes",
    "image": "the MetadataImage replayed from the controller's records disagrees with the "
             "controller",
    "oracle-error": "an oracle of the driver failed (a harness failure, not the build's)",
}
#: Classes the model speaks in; the others need no model.
MODEL_CLASSES = ("release", "kip", "invariant")
SUMMARY = "summary.json"


def class_of(signature: str) -> str:
    return signature.split(":", 1)[0]


def is_campaign(path: Path) -> bool:
    """A directory a diff campaign wrote (its summary.json names a build and findings)."""
    try:
        doc = json.loads((path / SUMMARY).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "kafka" in doc and isinstance(doc.get("findings"), list)


def campaigns_under(paths: Iterable[Path], depth: int = 2) -> list[Path]:
    """The diff campaign directories among ``paths`` and below them (at most ``depth``
    levels: DIR/diff/diff-4.4.0-s1-.../, certify's DIR/diff/4.4.0/)."""
    out: list[Path] = []
    for path in paths:
        if is_campaign(path):
            out.append(path)
        elif depth > 0 and path.is_dir():
            out += campaigns_under(sorted(p for p in path.iterdir() if p.is_dir()), depth - 1)
    return out


def label(doc: Mapping[str, Any], version: str) -> tuple[str, str | None]:
    """(the label, the known bug's id or None) of one finding file's document."""
    f = doc.get("finding") or {}
    sig = str(f.get("signature", ""))
    if class_of(sig) == "oracle-error":
        return "harness error (an oracle of the driver failed)", None
    bug = doc.get("known_bug")
    if isinstance(bug, Mapping) and bug.get("id"):
        company = (" (by its event's release-axis finding)"
                   if bug.get("at_the_same_event_as_a_release_finding") else "")
        return f"known bug {bug['id']} ({bug.get('reference')}){company}", str(bug["id"])
    try:
        now = naming_diff_finding(version_tuple(version), sig, f.get("detail"))
    except ValueError:
        now = None
    if now is not None:
        return f"known bug {now.id} ({now.reference}; named by the catalog now)", now.id
    return "not triaged (no known bug names it)", None


def replay_command(file: Path, version: str) -> str:
    return f"kafka-chaos diff --replay {file} --kafka-version {version}"


def read_campaign(path: Path) -> dict[str, Any]:
    """One campaign's facts and its findings by class (each finding's file read for its
    label; one that cannot be read is said in its row)."""
    summary = json.loads((path / SUMMARY).read_text())
    version = str(summary.get("kafka"))
    stats = summary.get("stats") or {}
    rows = []
    for f in summary.get("findings") or []:
        finding = f.get("finding") or {}
        sig = str(finding.get("signature", "?"))
        file = path / str(f.get("file", ""))
        try:
            doc = json.loads(file.read_text())
            text, bug = label(doc, version)
            events = len(doc.get("events") or [])
        except (OSError, ValueError) as exc:
            text, bug, events = f"finding file unreadable ({exc})", None, 0
        rows.append({"class": class_of(sig), "signature": sig, "count": f.get("count"),
                     "first_event": f.get("first_event"),
                     "first_seconds": f.get("first_seconds"), "label": text, "known_bug": bug,
                     "events": events, "shrink": f.get("shrink") or "",
                     "file": str(file), "repro": replay_command(file, version),
                     "detail": str(finding.get("detail", ""))[:240]})
    order = list(CLASSES)
    rows.sort(key=lambda r: (order.index(r["class"]) if r["class"] in order else len(order),
                             r["first_event"] if isinstance(r["first_event"], int) else 0))
    classes: dict[str, int] = {}
    for r in rows:
        classes[r["class"]] = classes.get(r["class"], 0) + 1
    return {"dir": str(path), "build": version, "seed": summary.get("seed"),
            "elr": summary.get("elr"), "events": stats.get("events"),
            "seconds": stats.get("seconds"), "classes": classes, "findings": rows,
            "campaign": f"kafka-chaos diff --kafka-version {version} --seed "
                        f"{summary.get('seed')}"}


def read_all(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every diff campaign under ``paths`` (campaigns_under), read; an unreadable summary
    becomes a campaign with its problem and no findings."""
    out = []
    for path in campaigns_under(paths):
        try:
            out.append(read_campaign(path))
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            out.append({"dir": str(path), "build": "?", "problem": f"{exc}", "classes": {},
                        "findings": []})
    return out


def markdown(campaigns: list[dict[str, Any]]) -> list[str]:
    """The report section's lines (none without a campaign)."""
    if not campaigns:
        return []
    lines = ["", "## Controller findings by class (differential campaigns)", "",
             "From `kafka-chaos diff` (harness/differential/README.md); classes: "
             + "; ".join(f"`{c}` {what}" for c, what in CLASSES.items()) + ".", ""]
    for c in campaigns:
        if c.get("problem"):
            lines += [f"### {c['dir']}: unreadable ({c['problem']})", ""]
            continue
        counts = ", ".join(f"{k} {n}" for k, n in c["classes"].items()) or "none"
        lines += [f"### Kafka {c['build']}, seed {c['seed']}: {c['events']} events in "
                  f"{c['seconds']} s; {len(c['findings'])} signature(s): {counts}", "",
                  f"Campaign `{c['dir']}` (again: `{c['campaign']}`).", ""]
        if not c["findings"]:
            continue
        lines += ["| class | signature | count | first event | label | reproduce |",
                  "|---|---|---|---|---|---|"]
        for r in c["findings"]:
            lines.append(f"| {r['class']} | `{r['signature']}` | {r['count']} | "
                         f"{r['first_event']} ({r['first_seconds']} s) | {r['label']} | "
                         f"`{r['repro']}` |")
        lines.append("")
    return lines


def html(campaigns: list[dict[str, Any]], escape: Any) -> str:
    """The same section for report.html (``escape``: harness.report.text.html_text)."""
    if not campaigns:
        return ""
    parts = ["<section id='diff'><h2>Controller findings by class (differential "
             "campaigns)</h2><p class='small'>" + escape("; ".join(
                 f"{c}: {what}" for c, what in CLASSES.items())) + "</p>"]
    for c in campaigns:
        if c.get("problem"):
            parts.append(f"<h3>{escape(c['dir'])}: unreadable ({escape(c['problem'])})</h3>")
            continue
        counts = ", ".join(f"{k} {n}" for k, n in c["classes"].items()) or "none"
        parts.append(f"<h3>Kafka {escape(c['build'])}, seed {escape(c['seed'])}</h3><p>"
                     f"{escape(c['events'])} events in {escape(c['seconds'])} s; "
                     f"{len(c['findings'])} signature(s): {escape(counts)}. Campaign "
                     f"<code>{escape(c['dir'])}</code>.</p>")
        if c["findings"]:
            parts.append("<table class='diff'><tr><th>class</th><th>signature</th>"
                         "<th>count</th><th>first event</th><th>label</th><th>reproduce</th>"
                         "</tr>" + "".join(
                             f"<tr><td>{escape(r['class'])}</td><td><code>"
                             f"{escape(r['signature'])}</code></td><td>{escape(r['count'])}"
                             f"</td><td>{escape(r['first_event'])} "
                             f"({escape(r['first_seconds'])} s)</td><td>"
                             f"{escape(r['label'])}</td><td><code>{escape(r['repro'])}"
                             "</code></td></tr>" for r in c["findings"]) + "</table>")
    return "".join(parts) + "</section>"
