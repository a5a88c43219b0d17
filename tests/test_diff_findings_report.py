"""The differential campaigns' findings by class (issue 44, "Done when": in the campaign
summary, `hunt`'s report and `kafka-chaos finding`): harness/report/diff_findings.py, the
campaign report's section "Controller findings by class" (harness/report/campaign.py), the
drafts of harness/report/finding/diff.py, and the replay's input
(harness/differential/campaign/replay.py). Crafted campaign directories, no JVM, no
cluster."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from test_campaign_report import write_campaign

from harness.cli.app import main
from harness.differential.campaign.replay import read_finding, settings_of
from harness.infra.errors import UsageError
from harness.report import campaign, diff_findings
from harness.report.finding import finding_text
from reference.trace.rules import RULES

STALE = ("brokersToElrs indexes broker 33 for k3t1-0 but its ELR does not hold the broker "
         "(leader 31, isr [31], elr [], replicas [31, 32, 33])")
#: (signature, detail, known bug as the campaign wrote it, where)
FINDINGS: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("fault:RuntimeException:register:kafka-4.3",
     "the controller threw java.lang.RuntimeException: Topic ID x existed in isrMembers, "
     "but not in the topics map.",
     {"id": "elr-index-stale-after-min-isr-change",
      "reference": "docs/findings/elr-index-stale-after-min-isr-change.md",
      "at_the_same_event_as_a_release_finding": False}, "event"),
    # named by the catalog, not by the file (a bug triaged after the campaign)
    ("index:brokersToElrs:alterConfig:kafka-4.3", STALE, None, "k3t1-0"),
    ("snapshot:brokers:reassign:kafka-4.3", "the fresh controller's answer differs", None,
     "event"),
    # a signature no known bug names (release:leader:register is the stale index's now)
    ("release:leader:controlledShutdown:kafka-4.3", "k2t0-0 leader: model -1, build 22", None,
     "k2t0-0"),
    ("invariant:IsrElrWithinReplicas:alterPartition:kafka-4.3",
     "k0t2-0: [5] in ISR [1, 2] / ELR [4, 5] but not in replicas [1, 2, 4]", None, "k0t2-0"),
    ("oracle-error:NoSuchFieldException:fence:kafka-4.3",
     "java.lang.NoSuchFieldException: brokersToElrs (an oracle of the driver failed)", None,
     "event"),
]
EVENTS = [{"op": "createTopic", "topic": "k0t0", "assignment": [[1, 2, 3]]},
          {"op": "register", "broker": 3, "clean": False}]


def write_diff(root: Path, version: str = "4.4.0", seed: int = 12,
               findings: list[tuple[str, str, dict[str, Any] | None, str]] = FINDINGS
               ) -> Path:
    """A diff campaign directory as campaign/write.py writes it."""
    d = root / f"diff-{version}-s{seed}-20261128-120000"
    (d / "findings").mkdir(parents=True)
    rows = []
    for n, (sig, detail, bug, where) in enumerate(findings, 1):
        axis, name, op, profile = sig.split(":")
        finding = {"signature": sig, "axis": axis, "name": name, "op": op,
                   "profile": profile, "detail": detail, "where": where,
                   "records": [{"type": "PartitionChangeRecord", "topic": "k2t0"}],
                   "diffs": [], "model": {"k2t0-0": {"leader": -1}} if axis == "release"
                   else {}, "build": {"k2t0-0": {"leader": 22}} if axis == "release" else {}}
        doc = {"kafka": version, "settings": {"brokers": [1, 2, 3, 4, 5, 9], "minIsr": 2,
                                              "uncleanElection": False},
               "finding": finding, "count": n, "first_event": 100 * n,
               "first_seconds": float(n), "elr": True, "shrink": "40 -> 2 events in 9 "
               "replays (1 s)", "known_bug": bug, "events": EVENTS, "unshrunk_events": 40}
        file = d / "findings" / f"{n:02d}-{sig.replace(':', '-')}.json"
        file.write_text(json.dumps(doc))
        rows.append({k: doc[k] for k in ("finding", "count", "first_event", "first_seconds",
                                         "shrink", "known_bug")}
                    | {"file": str(file.relative_to(d))})
    classes: dict[str, int] = {}
    for sig, *_ in findings:
        classes[sig.split(":")[0]] = classes.get(sig.split(":")[0], 0) + 1
    (d / "summary.json").write_text(json.dumps({
        "kafka": version, "seed": seed, "elr": "both", "lanes": 8, "lane_events": 100,
        "workers": 1, "profiles": {"release": "kafka-4.3", "kip": "kip966"},
        "stats": {"events": 2446, "seconds": 30.4}, "findings": rows,
        "finding_classes": classes}))
    return d


def test_a_campaign_is_read_by_class_with_labels_and_reproduction(tmp_path: Path) -> None:
    d = write_diff(tmp_path)
    (c,) = diff_findings.read_all([tmp_path])
    assert c["build"] == "4.4.0" and c["seed"] == 12 and c["events"] == 2446
    assert c["classes"] == {"release": 1, "invariant": 1, "fault": 1, "snapshot": 1,
                            "index": 1, "oracle-error": 1}
    by = {r["class"]: r for r in c["findings"]}
    assert by["fault"]["label"].startswith("known bug elr-index-stale-after-min-isr-change (")
    assert "named by the catalog now" in by["index"]["label"]
    assert by["index"]["known_bug"] == "elr-index-stale-after-min-isr-change"
    assert by["release"]["label"] == "not triaged (no known bug names it)"
    assert by["oracle-error"]["label"].startswith("harness error")
    assert by["fault"]["first_event"] == 100 and by["fault"]["count"] == 1
    assert by["fault"]["repro"] == (f"kafka-chaos diff --replay {d}/findings/"
                                    "01-fault-RuntimeException-register-kafka-4.3.json "
                                    "--kafka-version 4.4.0")
    assert [r["class"] for r in c["findings"]] == [  # in CLASSES' order
        "release", "invariant", "fault", "snapshot", "index", "oracle-error"]


def test_campaigns_are_found_below_and_the_rest_is_not_one(tmp_path: Path) -> None:
    write_diff(tmp_path / "diff" / "a", "4.4.0")
    write_diff(tmp_path / "diff" / "b", "4.3.1")
    (tmp_path / "diff" / "junk").mkdir()
    (tmp_path / "diff" / "junk" / "summary.json").write_text("{torn")
    found = diff_findings.campaigns_under([tmp_path / "diff", tmp_path / "nothing"])
    assert [p.parent.name for p in found] == ["a", "b"]


def test_the_hunt_report_has_the_section_of_its_diff_campaigns(tmp_path: Path) -> None:
    """`report --campaign DIR` (and `hunt`, which builds the same report) lists the diff
    campaigns under DIR/diff and those named by --diff, with counts per class."""
    d = write_campaign(tmp_path)
    write_diff(d / "diff")
    other = write_diff(tmp_path / "elsewhere", "4.3.1", 7,
                       [f for f in FINDINGS if f[0].startswith("snapshot")])
    (d / "runs").rename(d / "no-runs")  # no run directory: no Spark session
    r = campaign.make_campaign_report(d, diff_dirs=[other])
    assert [(c["build"], c["classes"]) for c in r["diff"]] == [
        ("4.4.0", {"release": 1, "invariant": 1, "fault": 1, "snapshot": 1, "index": 1,
                   "oracle-error": 1}), ("4.3.1", {"snapshot": 1})]
    md = (d / "report.md").read_text()
    section = md.split("## Controller findings by class (differential campaigns)")[1]
    assert ("### Kafka 4.4.0, seed 12: 2446 events in 30.4 s; 6 signature(s): release 1, "
            "invariant 1, fault 1, snapshot 1, index 1, oracle-error 1") in section
    assert "| fault | `fault:RuntimeException:register:kafka-4.3` | 1 | 100 (1.0 s) | known " \
           "bug elr-index-stale-after-min-isr-change" in section
    assert "`kafka-chaos diff --replay " in section
    page = (d / "report.html").read_text()
    assert "<section id='diff'>" in page and "oracle-error" in page
    assert json.loads((d / "report.json").read_text())["diff"][1]["seed"] == 7


def test_a_hunt_report_without_diff_campaigns_has_no_section(tmp_path: Path) -> None:
    d = write_campaign(tmp_path)
    (d / "runs").rename(d / "no-runs")
    r = campaign.make_campaign_report(d)
    assert r["diff"] == [] and "Controller findings" not in (d / "report.md").read_text()
    assert "<section id='diff'>" not in (d / "report.html").read_text()


def test_report_refuses_a_diff_dir_that_is_not_there_or_without_campaign(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = write_campaign(tmp_path)
    assert main(["report", "--campaign", str(d), "--diff", str(tmp_path / "gone")]) == 2
    assert "--diff" in capsys.readouterr().err
    assert main(["report", str(d / "runs"), "--out", str(tmp_path / "o"), "--diff",
                 str(d)]) == 2
    assert "--diff goes with --campaign" in capsys.readouterr().err


DAY = dt.date(2026, 11, 28)


def _draft(text: str, cls: str) -> str:
    return next(d for d in text.split("\n\n---\n\n") if f"**Finding class:** `{cls}`" in d)


def test_finding_drafts_a_diff_finding_in_the_ticket_form(tmp_path: Path) -> None:
    d = write_diff(tmp_path)
    text = finding_text([d / "findings" / "01-fault-RuntimeException-register-kafka-4.3.json"],
                        DAY)
    for section in ("# TO WRITE: title. Suggested: fault at register on Kafka 4.4.0",
                    "- **Affected versions (measured):** 4.4.0",
                    "- **Label:** known bug elr-index-stale-after-min-isr-change",
                    "## Environment", "min.insync.replicas 2", "ELR on",
                    "## Steps to reproduce", json.dumps(EVENTS[1]),
                    "shrunk by the campaign (40 -> 2 events",
                    "kafka-chaos diff --replay ", "--kafka-version 4.4.0",
                    "kafka-chaos diff --kafka-version 4.4.0 --seed 12",
                    "## Expected", "handleEventException", "## Actual",
                    "Topic ID x existed in isrMembers", "## How the harness found it",
                    "first at event 100"):
        assert section in text, section


def test_each_class_says_what_must_hold_and_the_kip_clause_where_it_has_one(
        tmp_path: Path) -> None:
    text = finding_text([write_diff(tmp_path)], DAY)  # the campaign dir: every finding
    assert text.count("# TO WRITE: title.") == len(FINDINGS)
    release = _draft(text, "release")
    assert "kafka-4.3, reference/releases/catalog.py" in release
    assert "'Controller behaviors' 3" in release  # the field leader's clause
    assert '"k2t0-0": {"leader": -1}' in release and '"k2t0-0": {"leader": 22}' in release
    assert "lane 2 (brokers [21, 22, 23, 24, 25]" in release
    invariant = _draft(text, "invariant")
    assert RULES["IsrElrWithinReplicas"].citation in invariant
    assert "none: the controller must agree with itself" in _draft(text, "index")
    assert "named by the catalog now" in _draft(text, "index")
    error = _draft(text, "oracle-error")
    assert "Harness bug (not for Kafka)" in error and "Not a Kafka finding" in error


def test_the_same_class_on_two_builds_shares_a_draft(tmp_path: Path) -> None:
    snap = [f for f in FINDINGS if f[0].startswith("snapshot")]
    a = write_diff(tmp_path / "a", "4.4.0", 1, snap)
    b = write_diff(tmp_path / "b", "4.3.1", 2, snap)
    text = finding_text([a, b], DAY)
    assert text.count("# TO WRITE: title.") == 1
    assert "- **Affected versions (measured):** 4.3.1, 4.4.0" in text


def test_runs_and_diff_findings_together(tmp_path: Path) -> None:
    from test_finding import KAFKA_19522
    text = finding_text([KAFKA_19522, write_diff(tmp_path)], DAY)
    assert "## Affected versions (measured)" in text.split("\n\n---\n\n")[0]
    assert "**Finding class:** `fault`" in text


@pytest.mark.parametrize("case", ["not-json", "not-a-finding", "empty-campaign"])
def test_bad_diff_input_is_refused_with_the_path(tmp_path: Path, case: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.json"
    if case == "not-json":
        path.write_text("{torn")
    elif case == "not-a-finding":
        path.write_text(json.dumps({"kafka": "4.4.0"}))
    else:
        path = write_diff(tmp_path, findings=[])
    assert main(["finding", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafka-chaos: error: finding: ") and str(path) in err, err


def test_the_replay_takes_the_finding_s_settings(tmp_path: Path) -> None:
    d = write_diff(tmp_path)
    doc = read_finding(next((d / "findings").iterdir()))
    s = settings_of(doc)
    assert s.brokers == (1, 2, 3, 4, 5, 9) and s.min_isr == 2 and s.elr is True
    assert s.metadata_version is None and s.report == "changed"
    with pytest.raises(UsageError, match="not a diff finding"):
        read_finding(d / "summary.json")


def test_diff_replay_refuses_what_is_no_finding(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    assert main(["diff", "--replay", str(bad)]) == 2
    assert "diff --replay: " in capsys.readouterr().err


def test_a_hunt_starts_in_a_directory_that_holds_only_diff_campaigns(tmp_path: Path) -> None:
    from harness.search import hunt
    write_diff(tmp_path / "c" / "diff")
    state = hunt.load_state(tmp_path / "c", hunt.HuntConfig(seed=1, budget_s=1))
    assert state.builds == {}
    (tmp_path / "c" / "other").mkdir()
    with pytest.raises(UsageError, match="no hunt campaign"):
        hunt.load_state(tmp_path / "c", hunt.HuntConfig(seed=1, budget_s=1))


def test_a_replay_on_another_release_line_counts_the_same_class() -> None:
    from harness.differential.campaign.replay import Replayed
    r = Replayed("index:brokersToElrs:alterConfig:kafka-4.3",
                 {"index:brokersToElrs:alterConfig:kafka-3.9": 20, "fault:X:register:p": 3})
    assert r.reproduced and r.again == "index:brokersToElrs:alterConfig:kafka-3.9"
    assert not Replayed("index:brokersToElrs:unfence:kafka-4.3", dict(r.seen)).reproduced


def test_a_written_finding_replays_through_the_command_on_the_newest_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`diff --replay` on the newest build's own controller classes (4.4.0, from the cache;
    skipped when it is not there): the known deleted-topic-config finding's four events
    (docs/findings/deleted-topic-config-survives-image/events.json) written as a campaign
    writes a finding come back as the same class: exit 1."""
    from harness.infra.cache import cache_root
    if not (cache_root() / "kafka" / "4.4.0" / "libs" / ".complete").exists():
        pytest.skip("Kafka 4.4.0 is not in the cache; fast tests do not download Kafka")
    events = json.loads((Path(__file__).resolve().parent.parent / "docs" / "findings"
                         / "deleted-topic-config-survives-image" / "events.json").read_text())
    d = write_diff(tmp_path, findings=[("snapshot:loaded.configs:snapshot:kafka-4.3",
                                        "the loaded state differs at configs.topic k0t1", None,
                                        "k0t1-configs")])
    (file,) = (d / "findings").iterdir()
    doc = json.loads(file.read_text())
    file.write_text(json.dumps(doc | {"events": events["events"], "elr": events["elr"]}))
    assert main(["diff", "--replay", str(file)]) == 1
    out = capsys.readouterr().out
    assert "replay: REPRODUCED snapshot:loaded.configs:snapshot:" in out
    assert out.count(" -> ok; release ") == 4
