"""`kafka-chaos finding` on differential findings: the files a `kafka-chaos diff` campaign
writes (RUN_DIR/findings/NN-<signature>.json), or a campaign directory (every finding in
it). One draft per finding class key (``axis:name:op``, as known_bugs.py and certify key
them: the profile names the release line), its files on several builds sharing one draft,
the details from the newest build's.

The draft has the form of the cluster findings' (render.py): title, type, priority, the
finding's class and label (the known bug its file or the catalog names, or not triaged),
affected versions, environment (the driver session's settings), steps to reproduce (the
events, shrunk when the campaign shrank them, and `kafka-chaos diff --replay`), expected
(per class; the KIP-966 clause where the class has one: the model's axes and the
invariants), actual (the detail, the build's partitions and records), impact and fix
``TO WRITE``, and how the harness found it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster.builds import version_tuple
from harness.differential.campaign.lanes import lane_brokers, lane_of_where, lane_topics
from harness.differential.campaign.replay import read_finding
from harness.infra.errors import UsageError
from harness.report.diff_findings import (
    CLASSES,
    SUMMARY,
    class_of,
    is_campaign,
    label,
    replay_command,
)
from reference.trace.rules import RULES

SEED = "seeds/003 (KIP-966)"
#: The KIP-966 clause a model-axis finding's first differing field rests on.
FIELD_CLAUSES: dict[str, str] = {
    "elr": f"{SEED} 'ELR invariants' and the 'ELR update' rules: \"When the proposed ISR is "
           "smaller than min ISR, the controller will retain the current members of the ELR, "
           "add (the current ISR - the proposed ISR) to ELR, remove the duplicate member in "
           "both ISR and ELR from ELR.\"",
    "lastKnownElr": f"{SEED} 'Other behaviors' 6: \"when an ELR member has an unclean "
                    "shutdown, it will be removed from ELR and added to the LastKnownELR. The "
                    "LastKnownELR will be cleaned when ISR reaches the min ISR.\"",
    "isr": f"{SEED} 'ISR invariants': \"The ISR can be empty now. The proposal maintains the "
           "behavior of removing a replica out of ISR if it is lagging from the ISR or it is "
           "fenced by the controller.\"",
    "leader": f"{SEED} 'Controller behaviors' 3: \"If the replica is an ELR member and ISR is "
              "empty, this replica will be elected as leader, added to ISR, and removed from "
              "ELR.\"",
    "leaderEpoch": f"{SEED} 'Other behaviors' 1: \"Change of the ELR does not require a "
                   "leader epoch bump.\"",
    "replicas": f"{SEED} 'Other behaviors' 4: \"upon completion, the ELR only contains "
                "replicas in the final replica set\"; the reassignment \"can only be completed "
                "if the ISR size is larger or equal to min ISR\" (also when canceled).",
}
WHAT_MUST_HOLD: dict[str, str] = {
    "fault": "An event the controller cannot apply is refused with the API error the request "
             "would get (an ApiException); any other exception is a fault: "
             "QuorumController.handleEventException renounces leadership and reverts the "
             "event, so every controller that takes over meets it again.",
    "snapshot": "A controller that loads the build's own snapshot of the state (the records "
                "MetadataImage.write gives, as SnapshotEmitter writes them) holds the same "
                "state and answers every later event as the controller that wrote it.",
    "index": "Every index the controller keeps equals the one recomputed from the "
             "registrations it indexes (ReplicationControlManager, ClusterControlManager).",
    "image": "The MetadataImage replayed from the controller's records (what a broker is "
             "told) says what the controller's managers hold.",
    "oracle-error": "Not a Kafka finding: an oracle of the harness's driver failed. Fix the "
                    "oracle (harness/differential/java/DriverOracleChecks.java and the oracle "
                    "the exception names), not Kafka.",
}


@dataclass
class DiffFinding:
    """One finding file and what the draft needs from beside it."""

    file: Path
    doc: dict[str, Any]
    summary: dict[str, Any] | None

    @property
    def version(self) -> str:
        return str(self.doc.get("kafka"))

    @property
    def finding(self) -> dict[str, Any]:
        return dict(self.doc["finding"])

    @property
    def key(self) -> str:
        f = self.finding
        return ":".join(str(f.get(k)) for k in ("axis", "name", "op"))


def is_diff_path(path: Path) -> bool:
    """A finding file (a .json file) or a diff campaign directory."""
    return (path.is_file() and path.suffix == ".json") or is_campaign(path)


def read(paths: Sequence[Path]) -> list[DiffFinding]:
    out: list[DiffFinding] = []
    for path in paths:
        files = ([path] if path.is_file() else
                 sorted((path / "findings").glob("*.json")))
        if not files:
            raise UsageError(f"finding: {path}: a diff campaign without findings: nothing "
                             "to report")
        for file in files:
            try:
                doc = read_finding(file)
            except UsageError as exc:
                raise UsageError(f"finding: {exc}") from None
            out.append(DiffFinding(file, doc, _summary(file)))
    return out


def _summary(file: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((file.parent.parent / SUMMARY).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def diff_text(paths: Sequence[Path], day: str) -> str:
    """The drafts of the diff findings under ``paths``, one per class key."""
    by_key: dict[str, list[DiffFinding]] = {}
    for f in read(paths):
        by_key.setdefault(f.key, []).append(f)
    return "\n\n---\n\n".join(_draft(fs, day) for fs in by_key.values())


def _draft(found: list[DiffFinding], day: str) -> str:
    found = sorted(found, key=lambda f: (version_tuple(f.version), str(f.file)), reverse=True)
    main = found[0]
    f = main.finding
    cls = class_of(str(f["signature"]))
    text, _ = label(main.doc, main.version)
    out = [f"# TO WRITE: title. Suggested: {_title(main, cls)}", "",
           f"Draft written by `kafka-chaos finding` on {day} from {len(found)} differential "
           "finding file(s); every `TO WRITE` is for a person.", "",
           "- **Type:** " + ("Harness bug (not for Kafka)" if cls == "oracle-error" else "Bug"),
           "- **Component:** KRaft controller (found on the build's own controller classes)",
           f"- **Priority (suggested):** {_priority(cls)}",
           f"- **Affected versions (measured):** "
           f"{', '.join(sorted({x.version for x in found}, key=version_tuple))}",
           f"- **Finding class:** `{cls}`: {CLASSES.get(cls, 'unknown class')}",
           f"- **Label:** {text}", "", "## Affected versions (measured)", "",
           "| build | signature | count | first event | label | finding file |",
           "|---|---|---|---|---|---|"]
    for x in sorted(found, key=lambda x: (version_tuple(x.version), str(x.file))):
        out.append(f"| {x.version} | `{x.finding['signature']}` | {x.doc.get('count')} | "
                   f"{x.doc.get('first_event')} ({x.doc.get('first_seconds')} s) | "
                   f"{label(x.doc, x.version)[0]} | `{x.file}` |")
    out += ["", "## Environment", ""] + _environment(main)
    out += ["", "## Steps to reproduce", ""] + _steps(main)
    out += ["", "## Expected", ""] + _expected(main, cls)
    out += ["", "## Actual", ""] + _actual(main)
    out += ["", "## Impact", "", "TO WRITE." + _impact_hint(cls), "",
            "## Suggested fix", "", "TO WRITE.", "", "## How the harness found it", ""]
    out += _how_found(main)
    return "\n".join(out).rstrip() + "\n"


def _title(x: DiffFinding, cls: str) -> str:
    f = x.finding
    detail = str(f.get("detail", "")).split("; ")[0].split(" (")[0][:160]
    return f"{cls} at {f.get('op')} on Kafka {x.version}'s controller: {detail}"


def _priority(cls: str) -> str:
    return {"fault": "Major: the active controller renounces leadership at the event, and "
                     "every controller that takes over meets it again",
            "oracle-error": "none for Kafka: fix the harness's oracle",
            "invariant": "Major: a committed partition state outside KIP-966's invariants",
            }.get(cls, "Minor/Major (to be measured): the controller disagrees with "
                       + ("itself" if cls in ("snapshot", "index", "image") else
                          "KIP-966 or its release line's own behaviour"))


def _environment(x: DiffFinding) -> list[str]:
    s = x.doc.get("settings") or {}
    summary = x.summary or {}
    e = x.doc.get("elr")
    elr = "the build's default" if e is None else "on" if e else "off"
    mv = s.get("metadataVersion") or "the build's latest production one"
    out = [f"- Kafka {x.version}'s own controller classes (QuorumController's managers: "
           "ReplicationControlManager, ClusterControlManager, ConfigurationControlManager, "
           "FeatureControlManager) in one JVM, driven by kafka-chaos's differential driver "
           "(harness/differential/README.md): no broker, no network; the records each event "
           "writes are replayed into the managers as QuorumController.replay does.",
           f"- Session: brokers {s.get('brokers')} registered and unfenced before the first "
           f"event, min.insync.replicas {s.get('minIsr')}, unclean leader election "
           f"{'on' if s.get('uncleanElection') else 'off'}, ELR {elr}, metadata.version "
           f"{mv}."]
    if summary:
        stats = summary.get("stats") or {}
        out.append(f"- Campaign: seed {summary.get('seed')}, {stats.get('events')} events in "
                   f"{stats.get('seconds')} s, {summary.get('lanes')} lanes of "
                   f"{summary.get('lane_events')} events, profiles "
                   f"{json.dumps(summary.get('profiles'))} (`{x.file.parent.parent}`).")
    return out


def _steps(x: DiffFinding) -> list[str]:
    events = x.doc.get("events") or []
    shrink = x.doc.get("shrink") or ""
    how = (f"shrunk by the campaign ({shrink})" if shrink and "not shrunk" not in shrink
           and "kept unshrunk" not in shrink else
           f"not shrunk{f' ({shrink})' if shrink else ''}: the lane's log up to the event")
    out = [f"The {len(events)} event(s), {how}, in the driver's event language "
           "(harness/differential/README.md, \"Events\"; lane 0's brokers and topics):", "",
           "```json"] + [json.dumps(e) for e in events] + ["```", ""]
    lane = lane_of_where(str(x.finding.get("where", "event")))
    if lane:
        out += [f"The finding's own names (below) are those of the campaign's lane {lane} "
                f"(brokers {lane_brokers(lane)}, topics {lane_topics(lane)}); the events are "
                f"renamed to lane 0's (brokers {lane_brokers(0)}, topics {lane_topics(0)}).",
                ""]
    out += ["One command (resolves the build, replays the events in one fresh session with "
            "the finding's settings, compares every answer with the model; exit 1 = "
            "reproduces; another --kafka-version measures another build):", "", "```sh",
            replay_command(x.file, x.version), "```"]
    if x.summary:
        out += ["", f"The campaign again: `kafka-chaos diff --kafka-version {x.version} --seed "
                f"{x.summary.get('seed')} --workers {x.summary.get('workers')}` (a search by "
                "time: the same seed meets the same events, not always as far)."]
    return out


def _expected(x: DiffFinding, cls: str) -> list[str]:
    f = x.finding
    name = str(f.get("name"))
    out: list[str] = []
    if cls in ("release", "kip"):
        who = (f"the build's release-line profile ({f.get('profile')}, "
               "reference/releases/catalog.py)" if cls == "release" else
               "the accepted KIP-966 (profile kip966) with any of the build's cited "
               "deviations (reference/releases/deviations.py)")
        clause = FIELD_CLAUSES.get(name, f"{SEED}: TO WRITE (no clause recorded for this "
                                         "field)")
        out += [f"What {who} predicts for the partitions that differ (first differing field "
                f"`{name}`):", "", "```json", *_partition_lines(f.get("model")), "```", "",
                f"- **KIP clause:** {clause}"]
        if cls == "release":
            out.append("- The release axis is the build's own line: a difference there is "
                       "the model's gap or the build's change; read both before filing.")
    elif cls == "invariant":
        rule = RULES.get(name)
        out.append(f"- **{name}** (reference/trace/rules.py): "
                   + (rule.citation if rule is not None else "(no citation recorded)"))
    else:
        out.append(WHAT_MUST_HOLD.get(cls, "TO WRITE."))
        out.append("- **KIP clause:** none: the controller must agree with itself.")
    return out


def _actual(x: DiffFinding) -> list[str]:
    f = x.finding
    out = [f"At `{f.get('where')}`: {f.get('detail')}"]
    if f.get("build"):
        out += ["", "The build's partitions:", "", "```json", *_partition_lines(f["build"]),
                "```"]
    diffs = f.get("diffs") or []
    if diffs:
        out += ["", "Differences, field by field:", ""]
        out += [f"- {json.dumps(d)}" for d in diffs[:12]]
    records = f.get("records") or []
    if records:
        out += ["", f"The records the build wrote for the event ({len(records)}):", "",
                "```json"] + [json.dumps(r) for r in records[:20]] + ["```"]
    return out


def _partition_lines(parts: Any) -> list[str]:
    """One line per partition (``"t-0": {...}``)."""
    if not isinstance(parts, dict) or not parts:
        return ["{}"]
    return [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in parts.items()]


def _impact_hint(cls: str) -> str:
    return {"fault": " From the class: the event's request fails and the active controller "
                     "resigns; measure on a cluster whether a broker can rejoin.",
            "snapshot": " From the class: a controller restarted (or failed over) after a "
                        "snapshot holds another state than the one that wrote it.",
            "index": " From the class: a later event reads the stale index (faults, "
                     "wrong elections); find the event that does.",
            "image": " From the class: brokers are told another state than the controller "
                     "holds."}.get(cls, "")


def _how_found(x: DiffFinding) -> list[str]:
    d = x.doc
    return [f"kafka-chaos (a harness that judges Kafka against a reference model of KIP-966) "
            f"ran `kafka-chaos diff` on Kafka {x.version}: random controller events on the "
            "build's own controller classes, each answer compared with the model (the "
            "release line's profile and kip966) and checked by the oracles that need no "
            "model (no fault, snapshot equivalence, index consistency, image agreement). "
            f"This signature came first at event {d.get('first_event')} "
            f"({d.get('first_seconds')} s) and {d.get('count')} time(s) in all "
            f"(`{x.file}`)."]


def split(paths: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(the diff paths, the run paths)."""
    diff = [p for p in paths if is_diff_path(p)]
    return diff, [p for p in paths if p not in diff]
