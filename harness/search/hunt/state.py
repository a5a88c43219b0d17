"""The hunt's settings and its state file (docs/HUNT.md "State and resuming").

**State**: DIR/hunt-state.json holds the seed and the settings that shape schedules, and per
build the next schedule index, the counters, the coverage (the run that first reached each
transition or rule), the corpus and every signature with its class; it is written after
every generated run and when the hunt stops (Ctrl-C too). `hunt` on the same DIR resumes: it
goes on at the next index, with the corpus and coverage; a known signature is counted again
but not re-run or shrunk again. A DIR of another seed, or other schedule settings, is
refused before anything runs.

Also the command's input (the builds, the budget) and ``HuntConfig``, the settings a resumed
campaign must share.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.infra.errors import UsageError
from harness.search import fuzz
from harness.search.shrink import Steps

STATE_FILE = "hunt-state.json"
STATE_VERSION = 1
#: Chance that an index runs a mutation of a corpus entry (once the corpus has one).
MUTATE_SHARE = 0.5
#: Chance that an index not mutating runs a directed schedule: while some transition is
#: not reached on the build, the first of the index's candidates whose model shows it for
#: sure (``fuzzgen.predicted_transitions``), among ``DIRECT_PROBES``.
DIRECT_SHARE = 0.25


# --- input -----------------------------------------------------------------------------------

def catalog_builds() -> tuple[str, ...]:
    """`--builds all`: the newest patch of each release line the catalog has a profile for."""
    from harness.cluster.builds import DEFAULT_MATRIX_VERSIONS
    return tuple(DEFAULT_MATRIX_VERSIONS)


def parse_builds(kafka_version: str | None, builds: str | None) -> tuple[str, ...]:
    """--kafka-version V[,V...] or --builds all: versions of the catalog's builds, in order."""
    known = catalog_builds()
    if (kafka_version is None) == (builds is None):
        raise UsageError("hunt: give exactly one of --kafka-version V[,V...] (e.g. "
                         "--kafka-version 4.0.2,4.3.1) or --builds all")
    if builds is not None:
        if builds.strip() != "all":
            raise UsageError(f"hunt: --builds {builds!r}: the only value is `all` (the "
                             f"catalog's builds: {', '.join(known)}); name builds with "
                             "--kafka-version V[,V...]")
        return known
    assert kafka_version is not None
    out: list[str] = []
    for v in (p.strip() for p in kafka_version.split(",")):
        if not v:
            raise UsageError(f"hunt: --kafka-version {kafka_version!r}: an empty version; give "
                             "versions separated by commas, e.g. 4.0.2,4.3.1")
        if v not in known:
            raise UsageError(f"hunt: --kafka-version {v!r} is not one of the catalog's builds "
                             f"({', '.join(known)}); give some of them, or --builds all")
        if v in out:
            raise UsageError(f"hunt: --kafka-version {v} is named twice")
        out.append(v)
    return tuple(out)


def parse_budget(text: str | None) -> float:
    """--budget: time PER BUILD, as fuzz reads durations (30m, 90s, 1h30m)."""
    if text is None:
        raise UsageError("hunt: give --budget DURATION (time per build, e.g. 30m)")
    try:
        return fuzz.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"hunt: --budget: {exc}; it is the time per build") from None


# --- settings and state ----------------------------------------------------------------------

@dataclass(frozen=True)
class HuntConfig:
    seed: int
    budget_s: float
    length: int = 10
    weights: Mapping[str, int] | None = None
    confirm: int = 1
    shrink_attempts: int = 12
    shrink_budget_s: float = 300.0
    mutate_share: float = MUTATE_SHARE
    direct_share: float = DIRECT_SHARE
    #: Generated runs per build per session (tests; the command gives a budget only).
    runs: int | None = None
    #: Every schedule under client traffic drawn from its seed (``--traffic``).
    traffic: bool = False
    #: The chance that a schedule's cluster is born on an older build (``--upgrades``),
    #: and the births asked for (``--births``; "" the default of each build).
    upgrades: float = 0.0
    births: str = ""
    #: The chance that a schedule's cluster has several log directories (``--log-dirs``).
    log_dirs: float = 0.0
    #: The chance that a schedule's cluster is tiered (``--tiered``; reference/search/tiered.py).
    tiered: float = 0.0
    #: Of ``RESUMABLE``'s settings, those the command line left at their defaults: a
    #: resumed campaign keeps its own (``resume_config``); the others must match it.
    resume_defaults: frozenset[str] = frozenset()

    def schedule_settings(self) -> dict[str, Any]:
        """What shapes the schedules: a resumed campaign must have the same."""
        out = {"seed": self.seed, "steps": self.length,
               "weights": dict(sorted((self.weights or {}).items())),
               "mutate_share": self.mutate_share, "direct_share": self.direct_share,
               "traffic": self.traffic}
        if self.upgrades:  # a campaign from before births resumes with them off
            out.update(upgrades=self.upgrades, births=self.births)
        if self.log_dirs:  # a campaign from before log dirs resumes with them off
            out.update(log_dirs=self.log_dirs)
        if self.tiered:  # a campaign from before --tiered resumes with it off
            out.update(tiered=self.tiered)
        return out

    def gen(self) -> Any:
        return fuzz.gen_config(length=self.length, weights=self.weights, traffic=self.traffic,
                               upgrades=self.upgrades, log_dirs_chance=self.log_dirs,
                               tiered=self.tiered)

    def campaign(self) -> fuzz.CampaignConfig:
        return fuzz.CampaignConfig(seed=self.seed, runs=self.runs, budget_s=self.budget_s,
                                   gen=self.gen(),
                                   confirm=self.confirm, shrink=True,
                                   shrink_attempts=self.shrink_attempts,
                                   shrink_budget_s=self.shrink_budget_s)


@dataclass
class CorpusEntry:
    name: str
    file: str  # relative to the campaign dir
    new: list[str]  # the features it reached first
    origin: str
    steps: Steps = ()


@dataclass
class Known:
    """A de-duplicated failure of one build (or a harness error), with its class."""

    key: str  # signature text, or "ERROR: <first line>"
    signature: list[Any] | None
    cls: str
    why: str
    status: str
    first_run: str
    occurrences: int
    minimal: str = ""
    minimal_steps: int | None = None
    found_at_run: int = 0
    found_after_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BuildState:
    version: str
    next_index: int = 0
    generated: int = 0
    mutated: int = 0
    #: Generated runs that were directed schedules (``BuildHunt._directed``).
    directed: int = 0
    runs: int = 0
    errors: int = 0
    seconds: float = 0.0
    run_seconds: float = 0.0
    #: feature ("transition:NAME" / "rule:NAME") -> the run that reached it first.
    coverage: dict[str, str] = field(default_factory=dict)
    corpus: list[CorpusEntry] = field(default_factory=list)
    known: list[Known] = field(default_factory=list)
    #: [seconds, generated runs, transitions, rules, signatures] after each generated run.
    timeline: list[list[float]] = field(default_factory=list)
    #: Every run (generated, re-run, shrink attempt) as it ended: {"run": name, "ended_s": the
    #: build's campaign seconds, "error": it ended in ERROR}; with ``coverage``, when each
    #: transition or rule was first reached (the campaign report, harness/report/campaign.py).
    run_log: list[dict[str, Any]] = field(default_factory=list)

    def transitions(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self.coverage if k.startswith("transition:"))

    def rules(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self.coverage if k.startswith("rule:"))

    def deviations_met(self) -> dict[str, dict[str, Any]]:
        """Each cited deviation a run needed, with the first such run and when it ended
        (minutes of the build's campaign; None for a run the log does not time)."""
        ended = {e["run"]: e["ended_s"] for e in self.run_log}
        out = {}
        for k, run in sorted(self.coverage.items()):
            if k.startswith("deviation:"):
                t = ended.get(run)
                out[k.split(":", 1)[1]] = {"run": run,
                                           "minutes": None if t is None else round(t / 60, 1)}
        return out

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("corpus", "known")}
        out["corpus"] = [{k: v for k, v in e.__dict__.items() if k != "steps"}
                         for e in self.corpus]
        out["known"] = [k.to_json() for k in self.known]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BuildState:
        st = cls(**{k: v for k, v in d.items() if k not in ("corpus", "known")})
        st.corpus = [CorpusEntry(**e) for e in d.get("corpus", [])]
        st.known = [Known(**k) for k in d.get("known", [])]
        return st


@dataclass
class HuntState:
    settings: dict[str, Any]
    builds: dict[str, BuildState] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "settings": self.settings,
                "builds": {v: b.to_json() for v, b in self.builds.items()}}

    def build(self, version: str) -> BuildState:
        return self.builds.setdefault(version, BuildState(version))


def read_state(path: Path) -> HuntState:
    """A campaign's state file; OSError, ValueError (another state version), KeyError,
    TypeError or AttributeError when it is not one this code wrote."""
    raw = json.loads(path.read_text())
    if raw.get("version") != STATE_VERSION:
        raise ValueError(f"state version {raw.get('version')!r}, not {STATE_VERSION}")
    return HuntState(dict(raw["settings"]),
                     {v: BuildState.from_json(b) for v, b in raw["builds"].items()})


#: Settings added over time with defaults of their own, as (key, flag, the value of a
#: campaign that does not record it): a campaign resumes with its own when the flag is not
#: given, so a campaign from before a new default resumes unchanged.
RESUMABLE = (("upgrades", "--upgrades", 0.0), ("births", "--births", ""),
             ("log_dirs", "--log-dirs", 0.0), ("tiered", "--tiered", 0.0))


def resume_config(campaign_dir: Path, cfg: HuntConfig) -> HuntConfig:
    """``cfg`` with the settings of the campaign in ``campaign_dir`` for the flags the
    command line did not give (``cfg.resume_defaults``); ``cfg`` itself for a new campaign
    (load_state reports an unreadable one)."""
    path = campaign_dir / STATE_FILE
    if not cfg.resume_defaults or not path.is_file():
        return cfg
    try:
        old = read_state(path).settings
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return cfg
    return replace(cfg, **{key: old.get(key, empty) for key, _flag, empty in RESUMABLE
                           if key in cfg.resume_defaults})


def load_state(campaign_dir: Path, cfg: HuntConfig) -> HuntState:
    """The campaign in ``campaign_dir`` (a new one when it holds none). A directory of another
    seed or other schedule settings, or a non-empty one that is no hunt, is a UsageError naming
    the flag and the fix."""
    path = campaign_dir / STATE_FILE
    settings = cfg.schedule_settings()
    if campaign_dir.exists() and not campaign_dir.is_dir():
        raise UsageError(f"hunt: --campaign-dir {campaign_dir} is a file; give a directory")
    if not path.is_file():
        # runs/: the run histories; diff/: differential campaigns run beforehand (`kafka-chaos
        # diff --runs-dir DIR/diff`), whose findings the campaign report lists
        if campaign_dir.is_dir() and any(p.name not in ("runs", "diff")
                                         for p in campaign_dir.iterdir()):
            raise UsageError(f"hunt: --campaign-dir {campaign_dir} is not empty and holds no "
                             f"{STATE_FILE}: it is no hunt campaign; give a new or empty "
                             "directory")
        return HuntState(settings)
    try:
        state = read_state(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"hunt: --campaign-dir {campaign_dir}: {STATE_FILE} is unreadable "
                         f"({exc}); give another --campaign-dir") from None
    old = state.settings
    if old.get("seed") != settings["seed"]:
        raise UsageError(f"hunt: --campaign-dir {campaign_dir} holds a campaign of --seed "
                         f"{old.get('seed')}, not {settings['seed']}: give --seed "
                         f"{old.get('seed')} to resume it, or a new --campaign-dir")
    old.setdefault("traffic", False)  # a campaign from before --traffic had none
    old.setdefault("direct_share", 0.0)  # nor directed schedules before --direct-share
    for key, flag, empty in RESUMABLE:
        if old.get(key, empty) != settings.get(key, empty):
            raise UsageError(f"hunt: --campaign-dir {campaign_dir} was started with {flag} "
                             f"{old.get(key, empty)!r}, not {settings.get(key, empty)!r}: leave "
                             f"{flag} out (or give the same) to resume it, or a new "
                             "--campaign-dir")
    for key, flag in (("steps", "--steps"), ("weights", "--weights"),
                      ("mutate_share", "the mutation share"),
                      ("direct_share", "--direct-share"), ("traffic", "--traffic")):
        if old.get(key) != settings[key]:
            raise UsageError(f"hunt: --campaign-dir {campaign_dir} was started with {flag} "
                             f"{old.get(key)!r}, not {settings[key]!r}: give the same to resume "
                             "it, or a new --campaign-dir")
    return state


def save_state(campaign_dir: Path, state: HuntState) -> None:
    campaign_dir.mkdir(parents=True, exist_ok=True)
    tmp = campaign_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=1))
    os.replace(tmp, campaign_dir / STATE_FILE)
