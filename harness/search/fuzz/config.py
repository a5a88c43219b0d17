"""A campaign's settings: the generator's (``gen_config``), the campaign's
(``CampaignConfig``), and the command line's durations and step weights they are read
from (``parse_duration``, ``parse_weights``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from harness.scenario import steps as step_kinds
from reference.search import fuzzgen


def gen_config(**settings: Any) -> fuzzgen.GenConfig:
    """The generator's settings with the kinds it makes: those whose definition in
    harness/scenario/steps/ names a generator (pause and resume included), each schedule on
    a cluster of its own (``clusters``; off: the fixed BASE), under client traffic drawn
    from its seed with ``traffic`` (``fuzz --traffic``)."""
    settings.setdefault("clusters", True)
    return fuzzgen.GenConfig(generators=step_kinds.generators(), **settings)


@dataclass
class CampaignConfig:
    seed: int
    runs: int | None = None
    budget_s: float | None = None
    gen: fuzzgen.GenConfig = field(default_factory=lambda: gen_config())
    #: Re-runs of a new failure's schedule before shrinking (flaky classification).
    confirm: int = 1
    shrink: bool = True
    shrink_attempts: int = 30
    shrink_budget_s: float = 1200.0
    #: Run only the schedules the build's model predicts lose acks=all records
    #: (model-guided; the others are counted as skipped, never run).
    guided: bool = False
    #: Mutant names (reference/releases/mutants.py): run only the schedules whose model predicts a
    #: run would tell one of these KIP rules from its flip (``--target``; rule coverage).
    targets: tuple[str, ...] = ()



def parse_duration(text: str) -> float:
    """'30m', '90s', '1h', '1h30m' or a number of seconds -> seconds (> 0)."""
    t = text.strip().lower()
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", t)
    if t and re.fullmatch(r"\d+(\.\d+)?", t):
        value = float(t)
    elif t and m and any(m.groups()):
        h, mi, s = (int(x or 0) for x in m.groups())
        value = float(h * 3600 + mi * 60 + s)
    else:
        raise ValueError(f"{text!r} is not a duration (e.g. 30m, 90s, 1h30m)")
    if not 0 < value <= 7 * 24 * 3600:
        raise ValueError(f"{text!r}: give a duration > 0 and at most a week")
    return value


def parse_births(target: str, text: str) -> tuple[str, ...]:
    """--births for a run on ``target``: the builds a generated cluster may be born on,
    each of the catalog (harness.cluster.builds DEFAULT_MATRIX_VERSIONS and the cached
    patch releases a version names) and of an older release line than the target's
    whose metadata.version level the generator knows; empty: the default
    (``default_births``: the newest patch of each older line of the catalog from 3.9 on)."""
    from harness.cluster.builds import DEFAULT_MATRIX_VERSIONS
    from reference.search.generators import default_births
    from reference.search.generators.upgrade import line_of, mv_level
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        return default_births(target, DEFAULT_MATRIX_VERSIONS)
    tl = line_of(target)
    out: list[str] = []
    for v in names:
        line = line_of(v)
        if line is None:
            raise ValueError(f"--births {v!r} is not a version like 3.9.2")
        if tl is None or line >= tl:
            raise ValueError(f"--births {v}: not of an older release line than the run's "
                             f"build {target} (a cluster is upgraded to the run's build)")
        if mv_level(v) is None:
            raise ValueError(f"--births {v}: its metadata.version level is not known "
                             "(reference/search/generators/upgrade.py MV_LEVELS)")
        if v not in out:
            out.append(v)
    return tuple(out)


def resolve_births(target: Any, births: tuple[str, ...], upgrades: float) -> dict[str, Any]:
    """The birth builds resolved (downloaded and cached on first use) before any cluster
    starts, version -> Build; none when --upgrades is 0."""
    from harness.cluster import builds
    if upgrades <= 0:
        return {}
    return {v: builds.from_maven(v) for v in births if v != target.version}


def parse_weights(text: str) -> dict[str, int]:
    """'produce=5,kill=2' over the defaults; unknown kinds and bad numbers are errors."""
    kinds = step_kinds.generators()
    weights = {k: g.weight for k, g in kinds.items()}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{part!r}: give KIND=WEIGHT")
        if key not in kinds:
            raise ValueError(f"unknown step kind {key!r} (one of {', '.join(kinds)})")
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"{part!r}: the weight must be a whole number") from None
        if not 0 <= n <= 1000:
            raise ValueError(f"{part!r}: give a weight of 0..1000")
        weights[key] = n
    if not any(weights.get(k, 0) for k in ("produce",)):
        raise ValueError("the produce weight must be > 0 (a schedule without records "
                         "checks no data)")
    return weights
