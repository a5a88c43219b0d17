"""Differential findings named by known bugs, the first naming of each deviation, and the
default ELR setting of a diff campaign (no cluster, no JVM)."""

from __future__ import annotations

from typing import Any

from harness.cli.app import parser
from harness.cli.diff import for_build, parse_config
from harness.differential.campaign import Config, Found, Stats, summary_lines
from harness.differential.compare import Finding
from reference.releases.known_bugs import naming_diff_finding


def _named(version: tuple[int, int, int], signature: str) -> str | None:
    bug = naming_diff_finding(version, signature)
    return None if bug is None else bug.id


def test_each_known_bug_named_only_on_the_releases_it_affects() -> None:
    assert _named((4, 3, 1), "invariant:IsrElrWithinReplicas:completeReassignment:kafka-4.3") \
        == "elr-keeps-removed-replica"
    assert _named((4, 0, 2), "invariant:IsrElrWithinReplicas:cancelReassignment:x") \
        == "elr-keeps-removed-replica"
    assert _named((3, 9, 2), "invariant:IsrElrWithinReplicas:cancelReassignment:x") is None
    assert _named((4, 0, 2), "invariant:LeaderIsLive:register:kafka-4.0-elr") == "KAFKA-19522"
    assert _named((4, 1, 2), "invariant:LeaderIsLive:register:kafka-4.1") is None
    assert _named((4, 0, 2), "release:leader:unfence:kafka-4.0-elr") == "KAFKA-19522"
    assert _named((4, 3, 1), "release:leader:unfence:kafka-4.3") is None
    assert _named((4, 0, 2), "release:accepted:electLeaders:kafka-4.0-elr") == "KAFKA-19522"
    assert _named((4, 1, 2), "release:accepted:electLeaders:kafka-4.1") is None
    assert _named((4, 3, 1), "release:partitionEpoch:register:kafka-4.3") \
        == "elr-index-stale-after-min-isr-change"
    assert _named((3, 9, 2), "release:partitionEpoch:register:pre-elr") is None
    assert _named((4, 3, 1), "kip:partitionEpoch:register:kip966") is None  # other causes too


def test_other_signatures_are_not_named() -> None:
    # the same rule on another event, another field on the same event: not the bug's
    assert _named((4, 3, 1), "invariant:IsrElrWithinReplicas:register:kafka-4.3") is None
    assert _named((4, 3, 1), "release:isr:register:kafka-4.3") is None
    assert _named((4, 0, 2), "invariant:LeaderIsLive:alterPartition:kafka-4.0-elr") is None


class _Campaign:
    """What summary_lines reads of a campaign."""

    def __init__(self, found: dict[str, Found], stats: Stats) -> None:
        self.found = found
        self.stats = stats
        self.profiles_by_elr: dict[bool, tuple[str, str]] = {True: ("kafka-4.3", "kip966")}
        self.profiles = ("kafka-4.3", "kip966")
        self.elr = True
        self.coverage = None
        self.cfg = Config(seed=1, budget_s=1.0)
        self.build: Any = type("B", (), {"version": "4.3.1"})()


def test_summary_labels_known_bugs_and_says_when_a_deviation_was_first_needed() -> None:
    known = Finding("invariant", "IsrElrWithinReplicas", "completeReassignment", "kafka-4.3", "x")
    new = Finding("release", "isr", "fence", "kafka-4.3", "y")
    bug = naming_diff_finding((4, 3, 1), known.signature)
    found = {known.signature: Found(known, 3, 168, 1.8, [], known=bug),
             new.signature: Found(new, 1, 500, 4.0, [])}
    stats = Stats(events=1000, seconds=10.0)
    stats.deviations["reassignment-ignores-min-isr"] = 7
    stats.deviation_first["reassignment-ignores-min-isr"] = (42, 0.5)
    text = "\n".join(summary_lines(_Campaign(found, stats)))  # type: ignore[arg-type]
    assert "findings: 2 signature(s), 1 of them named by a known bug" in text
    assert "known bug elr-keeps-removed-replica (docs/findings/" in text
    assert text.count("\n  known bug ") == 1  # the release:isr finding is not labelled
    assert "reassignment-ignores-min-isr 7 (first at event 42, 0.5 s)" in text
    assert stats.to_json()["deviation_first"] == {
        "reassignment-ignores-min-isr": {"event": 42, "seconds": 0.5}}


def test_default_elr_alternates_where_the_build_runs_either() -> None:
    cfg = parse_config(parser().parse_args(["diff"]))
    assert isinstance(cfg, Config) and not cfg.elr_both
    assert for_build(cfg, "auto", True).elr_both          # 4.0+
    assert not for_build(cfg, "auto", False).elr_both     # 3.x: the build's default
    on = parse_config(parser().parse_args(["diff", "--elr", "on"]))
    assert isinstance(on, Config) and on.elr is True
    assert not for_build(on, "on", True).elr_both         # a fixed setting stays fixed


def test_a_kip_finding_is_named_by_the_bug_of_a_release_finding_at_the_same_event() -> None:
    from harness.differential.campaign import Campaign
    me: Any = type("C", (), {"build": type("B", (), {"version_tuple": (4, 3, 1)})()})()
    dup = Finding("release", "partitionEpoch", "register", "kafka-4.3", "x")
    lke = Finding("kip", "lastKnownElr", "register", "kip966", "y")
    got = Campaign._bugs_of(me, [dup, lke])
    assert got[dup.signature][0] is not None and got[dup.signature][1] is False
    bug, by_company = got[lke.signature]
    assert bug is not None and bug.id == "elr-index-stale-after-min-isr-change" and by_company
    # alone (no release finding at that event), the same kip finding is not named
    assert Campaign._bugs_of(me, [lke])[lke.signature] == (None, False)
    # a release finding no bug names lends nothing
    other = Finding("release", "isr", "register", "kafka-4.3", "z")
    assert Campaign._bugs_of(me, [other, lke])[lke.signature] == (None, False)
