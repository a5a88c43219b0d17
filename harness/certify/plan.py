"""The budget rule and the scenario sets of a certify campaign (docs/CERTIFY.md "Budget").

**The rule.** The campaign's ``--budget`` is split between the four parts by fixed shares:
matrix 40%, upgrade 15%, diff 15%, hunt 30% (the matrix gets most: its cells are the
release's promises; the hunt next: it is what finds what nobody wrote down). A part named in
``--part-budget part=DURATION`` gets that duration; the parts not named share what is left
of the budget in the same proportions. A part whose budget is 0 is skipped (said in the
report). What a finished part left unspent goes to the later parts not overridden, in the
same proportions (``with_unspent``). Inside a part the budget is split evenly between the
two builds where the part runs per build (diff, hunt).

**The scenario sets.** The matrix and upgrade parts are *planned* when the campaign starts:
scenarios are taken in the order below while their estimated cost (both builds) fits the
part's budget, and the plan is stored in the campaign, so a resumed campaign runs the same
set whatever time is left (an interrupted campaign resumes to the same cells). Order:

1. scenarios both builds can run whose declarations (``expect``) say different things for
   the two builds (a difference the project already knows: the first thing to check is
   whether it still holds);
2. then the rest both builds can run, cheapest first (estimated cost), then by name;
3. then the scenarios only one of the builds can run (no pair to compare), in the same order.

A scenario neither build can run (its requirements, harness/run/runner/requirements.py) is
not planned; one only one build can run is planned for that build (its other cell shows
why not). The cost estimate is ``estimate_s``: no measurement of this machine is assumed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PARTS = ("matrix", "upgrade", "diff", "hunt")
SHARES: Mapping[str, float] = {"matrix": 0.40, "upgrade": 0.15, "diff": 0.15, "hunt": 0.30}
#: Estimated seconds of one scenario run: bring-up and teardown, then per step, per node
#: beyond 4, and a traffic block's final re-read (rough: runs of 2026-11 on 2 cores took
#: 30-90 s for 4-10 steps; bench/RESULTS-speed.md).
START_S, PER_STEP_S, PER_EXTRA_NODE_S, TRAFFIC_S = 25.0, 4.0, 8.0, 20.0
#: A part stops starting runs once it has used this much more than its budget (estimates
#: can be wrong); the runs not started are recorded as "not run: budget".
OVERRUN = 1.5


def split_budget(total_s: float, overrides: Mapping[str, float]) -> dict[str, float]:
    """Each part's seconds: an override as given, the rest of ``total_s`` in SHARES'
    proportions among the parts not overridden (never below 0)."""
    unknown = sorted(set(overrides) - set(PARTS))
    if unknown:
        raise ValueError(f"unknown part(s) {', '.join(unknown)}; the parts are "
                         f"{', '.join(PARTS)}")
    left = max(0.0, total_s - sum(overrides.values()))
    free = [p for p in PARTS if p not in overrides]
    weight = sum(SHARES[p] for p in free)
    out = {p: float(overrides[p]) for p in overrides}
    for p in free:
        out[p] = left * SHARES[p] / weight if weight else 0.0
    return {p: round(out[p], 1) for p in PARTS}


def with_unspent(split: Mapping[str, float], parts: Mapping[str, Mapping[str, Any]],
                 part: str, overridden: Sequence[str] = ()) -> float:
    """``part``'s seconds with what the finished earlier parts left unspent (their budget
    less their time, overspending counted against it), shared by this part and the later
    ones in SHARES' proportions; never below the part's own budget. An overridden part, or
    one whose budget is 0, keeps its own: the user named it. So a matrix that finished
    early (its plan, made from estimates, fits in less time) gives its rest to diff and
    hunt, whose searches use any time they get."""
    own = float(split[part])
    if part in overridden or own <= 0:
        return own
    i = PARTS.index(part)
    unspent = sum(float(split[q]) - float(parts[q]["elapsed_s"]) for q in PARTS[:i]
                  if parts[q]["done"])
    takers = [q for q in PARTS[i:] if q not in overridden and float(split[q]) > 0]
    share = SHARES[part] / sum(SHARES[q] for q in takers)
    return own + max(0.0, unspent) * share


def parse_part_budget(text: str | None, parse_duration: Any) -> dict[str, float]:
    """``matrix=10m,hunt=0`` -> {"matrix": 600.0, "hunt": 0.0}."""
    out: dict[str, float] = {}
    for item in (t.strip() for t in (text or "").split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        if not eq or name.strip() not in PARTS:
            raise ValueError(f"--part-budget {item!r}: give PART=DURATION, PART one of "
                             f"{', '.join(PARTS)} (e.g. matrix=10m,hunt=0)")
        out[name.strip()] = 0.0 if value.strip() in ("0", "0s") else parse_duration(value)
    return out


def rule_lines(budget_s: float, split: Mapping[str, float],
               overrides: Mapping[str, float], slots: int = 1) -> list[str]:
    """The rule as printed at the start and written in the report."""
    shares = ", ".join(f"{p} {SHARES[p]:.0%}" for p in PARTS)
    lines = [f"budget {fmt_s(budget_s)}: split by the rule ({shares}; an overridden part "
             "takes its own time, the others share the rest in these proportions)"]
    lines.append("  " + ", ".join(
        f"{p} {fmt_s(split[p])}" + (" (--part-budget)" if p in overrides else "")
        for p in PARTS))
    lines.append("  matrix and upgrade: scenarios both builds run whose declarations differ "
                 "first, then the cheapest first, one-build ones last, while the estimate "
                 f"fits{_in_slots(slots)}; diff and hunt: half of the part per build; what a "
                 "finished part leaves unspent goes to the later parts not overridden, in "
                 "these proportions")
    return lines


def _in_slots(slots: int) -> str:
    return "" if slots == 1 else f" in the part's budget times {slots} slots (clusters at once)"


def fmt_s(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else \
        f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def estimate_s(scenario: Any) -> float:
    """Estimated seconds of one run of the scenario (see the module's doc)."""
    nodes = len(scenario.cluster.broker_ids) + len(scenario.cluster.controller_ids)
    return (START_S + PER_STEP_S * len(scenario.steps) + PER_EXTRA_NODE_S * max(0, nodes - 4)
            + (TRAFFIC_S if scenario.traffic is not None else 0.0))


def declared(scenario: Any, version: tuple[int, int, int]) -> tuple[Any, ...]:
    """What the scenario declares for a build: per axis (verdict, known bug, deviation)."""
    out = []
    for axis in ("release", "kip", "safety"):
        e = scenario.expected(axis, version)
        out.append(None if e is None else (getattr(e, "verdict", None),
                                           getattr(e, "known_bug", None),
                                           getattr(e, "deviation", None)))
    return tuple(out)


@dataclass(frozen=True)
class Planned:
    path: str
    name: str
    #: The builds ("old", "new") that run it; the others' cells say why not (``gaps``).
    roles: tuple[str, ...]
    gaps: Mapping[str, str]
    estimate_s: float
    declared_differ: bool

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "roles": list(self.roles),
                "gaps": dict(self.gaps), "estimate_s": round(self.estimate_s, 1),
                "declared_differ": self.declared_differ}


def plan_scenarios(scenarios: Sequence[Any], gaps: Mapping[str, Mapping[str, str | None]],
                   versions: Mapping[str, tuple[int, int, int]],
                   budget_s: float) -> tuple[list[Planned], list[Planned]]:
    """(planned, left out by the budget) in the rule's order. ``gaps[path][role]``: why that
    build cannot run the scenario, or None."""
    cands = []
    for sc in scenarios:
        g = gaps[sc.path]
        roles = tuple(r for r in ("old", "new") if g.get(r) is None)
        if not roles:
            continue
        differ = declared(sc, versions["old"]) != declared(sc, versions["new"])
        cands.append(Planned(sc.path, sc.name, roles,
                             {r: str(v) for r, v in g.items() if v is not None},
                             estimate_s(sc), differ))
    cands.sort(key=lambda p: (len(p.roles) < 2, not p.declared_differ,
                              p.estimate_s * len(p.roles), p.name))
    planned, left, used = [], [], 0.0
    for p in cands:
        cost = p.estimate_s * len(p.roles)
        if used + cost <= budget_s:
            planned.append(p)
            used += cost
        else:
            left.append(p)
    return planned, left


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")
