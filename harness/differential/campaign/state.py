"""What a campaign holds: its ``Config``, each signature's first occurrence (``Found``), the
tallies of the search (``Stats``), and ``CampaignState``, the attributes every job of the
campaign (the loop, classification, coverage feedback, shrinking, writing) works on."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.differential.compare import Finding
from harness.differential.corpus import Corpus, ProbeMap
from harness.differential.coverage import CoverageReport
from harness.differential.driver import ControllerDriver
from reference.releases.known_bugs import KnownBug


@dataclass
class Found:
    """A signature's first occurrence and how often it came back."""

    finding: Finding
    count: int
    event_no: int
    seconds: float
    events: list[dict[str, Any]]  # the lane's log up to the event, in lane 0's names
    shrunk: list[dict[str, Any]] | None = None
    shrink_note: str = ""
    file: Path | None = None
    #: The ELR setting of the session it was found in (replayed with the same).
    elr: bool | None = None
    #: The known bug (reference/releases/known_bugs.py) its signature names on this build.
    known: KnownBug | None = None
    #: Named only because a release-axis finding of the same event names the bug.
    known_by_company: bool = False


@dataclass
class Stats:
    events: int = 0
    seconds: float = 0.0
    sessions: int = 0
    start_seconds: float = 0.0
    per_op: collections.Counter[str] = field(default_factory=collections.Counter)
    verdicts: collections.Counter[str] = field(default_factory=collections.Counter)
    deviations: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Each deviation's first naming: (event number, seconds into the search): how soon a
    #: campaign meets a behaviour the release profile cites (e.g. a known fixed bug's).
    deviation_first: dict[str, tuple[int, float]] = field(default_factory=dict)
    unmodelled: collections.Counter[str] = field(default_factory=collections.Counter)
    refused: int = 0
    #: CPU seconds of the drivers and of this process during the search.
    driver_cpu_s: float = 0.0
    harness_cpu_s: float = 0.0

    @property
    def per_cpu_second(self) -> float:
        return self.events / max(self.driver_cpu_s + self.harness_cpu_s, 1e-9)

    def to_json(self) -> dict[str, Any]:
        return {"events": self.events, "seconds": round(self.seconds, 3),
                "events_per_second": round(self.events / max(self.seconds, 1e-9), 1),
                "driver_cpu_seconds": round(self.driver_cpu_s, 2),
                "harness_cpu_seconds": round(self.harness_cpu_s, 2),
                "events_per_cpu_second": round(self.per_cpu_second, 1),
                "sessions": self.sessions, "session_start_seconds": round(self.start_seconds, 3),
                "refused": self.refused, "per_op": dict(self.per_op),
                "verdicts": dict(self.verdicts), "deviations": dict(self.deviations),
                "deviation_first": {d: {"event": e, "seconds": round(t, 3)}
                                    for d, (e, t) in self.deviation_first.items()},
                "unmodelled": dict(self.unmodelled)}


@dataclass(frozen=True)
class Config:
    seed: int
    budget_s: float
    lanes: int = 8
    lane_events: int = 500
    min_isr: int = 2
    elr: bool | None = None
    #: Sessions alternate ELR on (odd) and off (even); ``elr`` is then ignored.
    elr_both: bool = False
    shrink: bool = True
    shrink_attempts: int = 400
    shrink_budget_s: float = 90.0
    #: Candidates replayed in one JVM while shrinking.
    shrink_batch: int = 32
    #: The search sessions run under the JaCoCo agent (coverage.py); shrinking does not.
    coverage: bool = False
    #: With coverage: the share of lanes that run a mutation of corpus entries.
    mutate_share: float = 0.5
    #: With coverage: at most this often, JaCoCo's branch report of the sessions so far.
    coverage_report_s: float = 60.0
    #: Weight of the live ELR toggle (``updateFeature``) per lane event where the build has
    #: the feature (``--feature-weight``); None: workload.FEATURE_WEIGHT.
    feature_weight: float | None = None
    #: Stop the search after this many events (None: the budget alone): the same seed and
    #: count meet the same events whatever the machine's speed (``--events``).
    max_events: int | None = None
    #: Driver and model pairs searching at once, each in a process of its own with its own
    #: JVM (``--workers``; the CLI's default: one per core). Worker 0 runs ``seed``'s events,
    #: worker k a seed of its own (campaign/workers.py); 1: this process alone, as before.
    #: With coverage: 1 (the corpus and the JaCoCo data are one per campaign).
    workers: int = 1
    #: The wider vocabulary of issue 44 item 2 (workload_more.py, by the build's
    #: capabilities); False (``--base-vocabulary``): the generator of issue 43 only.
    wide: bool = True
    #: Snapshot points (``--snapshot-rate``): the chance, per batch of one event per lane,
    #: that a ``snapshot`` event follows the batch (the whole controller's: every lane's
    #: log holds it); 0: none. The fresh managers loaded from it answer the next
    #: ``snapshot_shadow`` events beside the original (java/DriverSnapshot.java).
    snapshot_rate: float = 0.03
    snapshot_shadow: int = 96


class CampaignState:
    """The campaign's attributes; its jobs are mixins over this class, joined in
    ``loop.Campaign``."""

    def __init__(self, build: Build, cfg: Config, out_dir: Path,
                 say: Callable[[str], None] = print) -> None:
        self.build, self.cfg, self.out_dir, self.say = build, cfg, out_dir, say
        self.stats = Stats()
        self.found: dict[str, Found] = {}
        self.profiles: tuple[str, str] = ("", "")
        self.elr: bool | None = None
        #: Profiles of the sessions, by their ELR (two with elr_both).
        self.profiles_by_elr: dict[bool, tuple[str, str]] = {}
        self._replay_elr: bool | None = None
        self.coverage: CoverageReport | None = None
        self._agent: list[str] = []
        self.probes = ProbeMap()
        self.corpus = Corpus(out_dir / "corpus")
        #: Lanes run as mutations of corpus entries, and their planned events sent,
        #: skipped (not valid in the lane's state) and mended.
        self.mutants = collections.Counter[str]()
        #: (seconds, events, corpus size, probes covered per class, branch ratios or None).
        self.timeline: list[dict[str, Any]] = []
        self._last_report = 0.0
        #: The driver whose JVM the next session takes over (none with coverage).
        self._jvm: ControllerDriver | None = None
