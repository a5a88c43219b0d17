"""The release's answer from a certify campaign's records (pure: no I/O).

Records are what parts.py stores per item: a *cell* (one scenario run on one build: its
headline verdict and label, the known bugs and deviations its declarations named) and a
*search* (one build's diff or hunt: its findings, each with a class and, when named, a known
bug; the cited deviations it needed; its coverage).

A cell's status: ``clean`` (CONFORMS with no declared failure), ``declared`` (CONFORMS
because a declared failure held: KNOWN BUG / DEVIATION / AS DECLARED), ``failing`` (UNSAFE,
DIVERGES, KIP-DIVERGES, NOT-AS-DECLARED) or ``unjudged`` (UNSUPPORTED, ERROR, INCOMPLETE,
not run). The rules (docs/CERTIFY.md "The answer"):

- **regression**: a scenario clean on OLD and declared or failing on NEW; a known bug NEW
  has that OLD has not (from any part); a diff or hunt finding class (signature) on NEW only;
- **fix**: the other way round;
- **known bug still present**: a known bug met on both builds;
- **new finding**: a diff or hunt finding on NEW that no known bug or cited deviation
  explains (class and reproduction), and a cell failing on NEW without a declaration;
- a finding class on one build only whose known bug both builds met is neither (the same
  bug seen another way by a time-bounded search); a hunt harness error is "could not judge";
- **cited deviations**: those each build needed (declared in a cell, met by diff or hunt);
- **could not judge**: cells unjudged on either build (never counted as a regression).

**Confirmation**: a matrix scenario whose two cells differ (clean on one build, not on the
other) is run again on both builds (``to_confirm``; records with ``confirm``). The
difference is a regression or a fix only when each re-run gives its build's first status;
a re-run that gives another is *flaky* ("could not judge", with both runs), so one slow or
unlucky run on a loaded machine does not read as a change of Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference.releases.known_bugs import KNOWN_BUGS

CLEAN, DECLARED, FAILING, UNJUDGED = "clean", "declared", "failing", "unjudged"
NOT_RUN = "NOT RUN"
_UNJUDGED = ("UNSUPPORTED", "ERROR", "INCOMPLETE", NOT_RUN, "NONE")
#: Hunt classes and diff findings that a known bug or a cited deviation explains.
EXPLAINED = ("known-bug", "cited-deviation")
HARNESS_ERROR = "harness-error"


def cell_status(verdict: str, label: str = "") -> str:
    if verdict == "CONFORMS":
        return DECLARED if label and label != "CONFORMS" else CLEAN
    return UNJUDGED if verdict in _UNJUDGED else FAILING


def differs(o: Mapping[str, Any] | None, n: Mapping[str, Any] | None) -> bool:
    """Two cells of a scenario that would make a regression or a fix."""
    if o is None or n is None:
        return False
    so, sn = (cell_status(c["verdict"], c.get("label", "")) for c in (o, n))
    return UNJUDGED not in (so, sn) and (so == CLEAN) != (sn == CLEAN)


def to_confirm(cells: Iterable[Mapping[str, Any]]) -> list[str]:
    """The matrix scenarios whose first two cells differ and have no confirmation yet."""
    firsts: dict[str, dict[str, Mapping[str, Any]]] = {}
    confirmed = set()
    for c in cells:
        if c["part"] != "matrix":
            continue
        if c.get("confirm"):
            confirmed.add(c["scenario"])
        else:
            firsts.setdefault(c["scenario"], {})[c["role"]] = c
    return sorted(n for n, pair in firsts.items()
                  if n not in confirmed and differs(pair.get("old"), pair.get("new")))


def _flaky(first: Mapping[str, Mapping[str, Any]], again: Mapping[str, Mapping[str, Any]],
           builds: Mapping[str, str]) -> str | None:
    """How the re-runs contradict the first runs ("" none ran; None: they confirm)."""
    moved = []
    for role in ("old", "new"):
        a, b = first.get(role), again.get(role)
        if a is None or b is None or cell_status(b["verdict"], b.get("label", "")) == UNJUDGED:
            continue
        if cell_status(a["verdict"], a.get("label", "")) != \
                cell_status(b["verdict"], b.get("label", "")):
            moved.append(f"{builds[role]} {shown(a)}, then {shown(b)}")
    return "; ".join(moved) or None


def bug_reference(bug_id: str) -> str:
    return next((b.reference for b in KNOWN_BUGS if b.id == bug_id), "")


@dataclass
class Answer:
    regressions: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    #: known bug id -> the builds' roles that met it and where
    known_bugs: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    new_findings: list[str] = field(default_factory=list)
    #: deviation id -> the roles that needed it and where
    deviations: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    unjudged: list[str] = field(default_factory=list)
    coverage: list[str] = field(default_factory=list)

    @property
    def still_present(self) -> list[str]:
        return [b for b, w in self.known_bugs.items() if w.get("old") and w.get("new")]

    def to_json(self) -> dict[str, Any]:
        return {"regressions": self.regressions, "fixes": self.fixes,
                "known_bugs": {b: {**w, "reference": bug_reference(b)}
                               for b, w in self.known_bugs.items()},
                "known_bugs_still_present": self.still_present,
                "new_findings": self.new_findings, "deviations": self.deviations,
                "unjudged": self.unjudged, "coverage": self.coverage}


def _cell_word(cell: Mapping[str, Any] | None) -> str:
    return "not planned" if cell is None else shown(cell)


def shown(cell: Mapping[str, Any]) -> str:
    """What a cell shows: its verdict, or for a declared failure that held its label with
    the names (``KNOWN BUG elr-keeps-removed-replica``, ``DEVIATION no-elr``): the run's
    ``Headline.short`` (harness/judge/headline.py), never a bare CONFORMS. A cell recorded
    before ``shown`` was stored shows its label."""
    return str(cell.get("shown") or cell.get("label") or cell.get("verdict"))


def answer(cells: Iterable[Mapping[str, Any]], searches: Iterable[Mapping[str, Any]],
           builds: Mapping[str, str]) -> Answer:
    """The answer over every record; ``builds``: {"old": version, "new": version}."""
    out = Answer()
    old, new = builds["old"], builds["new"]
    by_scenario: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    again: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for c in cells:
        if c.get("confirm"):  # a re-run: judged against its first run below
            again.setdefault((c["part"], c["scenario"]), {})[c["role"]] = c
            continue
        by_scenario.setdefault((c["part"], c["scenario"]), {})[c["role"]] = c
        for b in c.get("known_bugs", ()):
            _note(out.known_bugs, b, c["role"], f"{c['part']} {c['scenario']}")
        for d in c.get("deviations", ()):
            _note(out.deviations, d, c["role"], f"{c['part']} {c['scenario']}")
    for (part, name), pair in sorted(by_scenario.items()):
        o, n = pair.get("old"), pair.get("new")
        so = cell_status(o["verdict"], o.get("label", "")) if o else UNJUDGED
        sn = cell_status(n["verdict"], n.get("label", "")) if n else UNJUDGED
        what = f"{part} {name}: {old} {_cell_word(o)}, {new} {_cell_word(n)}"
        if part == "upgrade":  # a path between the builds: one cell, no pair to compare
            cell = n or o
            assert cell is not None
            st = cell_status(cell["verdict"], cell.get("label", ""))
            if st in (FAILING, DECLARED):
                out.regressions.append(f"upgrade {name}: {cell.get('text') or cell['verdict']}"
                                       f" (reproduce: {cell.get('repro', '')})")
            elif st == UNJUDGED and cell["verdict"] not in ("UNSUPPORTED", NOT_RUN):
                out.unjudged.append(f"upgrade {name}: {cell.get('text') or cell['verdict']}")
            continue
        flaky = _flaky(pair, again.get((part, name), {}), builds) if differs(o, n) else None
        if differs(o, n) and not flaky and len(again.get((part, name), {})) == 2:
            what += " (the same on a re-run of both)"
        if flaky:
            out.unjudged.append(f"{what} (flaky: {flaky})")
        elif UNJUDGED in (so, sn):
            if (o is not None and so == UNJUDGED and o["verdict"] != "UNSUPPORTED") or \
                    (n is not None and sn == UNJUDGED and n["verdict"] != "UNSUPPORTED"):
                out.unjudged.append(what)
        elif so == CLEAN and sn != CLEAN:
            out.regressions.append(what)
        elif so != CLEAN and sn == CLEAN:
            out.fixes.append(what)
        if n is not None and sn == FAILING and not flaky:
            out.new_findings.append(f"{part} {name} on {new}: {n.get('text') or n['verdict']}"
                                    f" (not declared; reproduce: {n.get('repro', '')})")
    keys: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for s in searches:
        for d in s.get("deviations", ()):
            _note(out.deviations, d, s["role"], s["part"])
        if s.get("coverage"):
            out.coverage.append(f"{s['part']} on {s['build']}: {s['coverage']}")
        for f in s.get("findings", ()):
            keys.setdefault((s["part"], f["key"]), {})[s["role"]] = {**f, "build": s["build"]}
            if f.get("known_bug"):
                _note(out.known_bugs, f["known_bug"], s["role"], f"{s['part']} {f['key']}")
    for (part, key), roles in sorted(keys.items()):
        f = roles.get("new") or roles["old"]
        if f.get("cls") == HARNESS_ERROR:  # the harness could not judge: never the build's
            out.unjudged.append(f"{part} on {f.get('build') or '?'}: {key}")
            continue
        named = f" (known bug {f['known_bug']})" if f.get("known_bug") else \
            f" ({f.get('cls')})" if f.get("cls") else ""
        met = out.known_bugs.get(str(f.get("known_bug")), {})
        # A signature on one build only, of a known bug both builds met: the same bug seen
        # another way (time-bounded searches), not a change; listed with the bug.
        if f.get("known_bug") and met.get("old") and met.get("new"):
            continue
        if "new" in roles and "old" not in roles:
            out.regressions.append(f"{part} finding on {new} only: {key}{named}")
        elif "old" in roles and "new" not in roles:
            out.fixes.append(f"{part} finding on {old} only: {key}{named}")
        if "new" in roles and not roles["new"].get("known_bug") and \
                roles["new"].get("cls") not in EXPLAINED:  # harness errors: skipped above
            out.new_findings.append(f"{part} on {new}: {key}: class {roles['new'].get('cls')}"
                                    f"; reproduce: {roles['new'].get('repro', '')}")
    for bug, where in sorted(out.known_bugs.items()):
        if where.get("new") and not where.get("old"):
            out.regressions.append(f"known bug {bug} on {new}, not on {old} "
                                   f"({'; '.join(where['new'][:3])})")
        elif where.get("old") and not where.get("new"):
            out.fixes.append(f"known bug {bug} on {old}, not on {new} "
                             f"({'; '.join(where['old'][:3])})")
    return out


def _note(table: dict[str, dict[str, list[str]]], key: str, role: str, where: str) -> None:
    seen = table.setdefault(key, {}).setdefault(role, [])
    if where not in seen:
        seen.append(where)


def _where(w: Mapping[str, Any], old: str, new: str) -> str:
    return "both" if w.get("old") and w.get("new") else old if w.get("old") else new


def headline_lines(a: Answer, builds: Mapping[str, str]) -> list[str]:
    """The release's answer in a few lines (the top of every report)."""
    old, new = builds["old"], builds["new"]

    def listed(items: Sequence[str], limit: int = 6) -> str:
        more = f"; and {len(items) - limit} more" if len(items) > limit else ""
        return "; ".join(items[:limit]) + more if items else "none"
    deviations = [f"{d} ({_where(w, old, new)})" for d, w in sorted(a.deviations.items())]
    still = [f"{b} ({bug_reference(b)})" for b in a.still_present]
    return [f"Kafka {new} against {old}:",
            f"REGRESSIONS ({len(a.regressions)}): {listed(a.regressions)}",
            f"FIXES ({len(a.fixes)}): {listed(a.fixes)}",
            f"KNOWN BUGS STILL PRESENT ({len(still)}): {listed(still)}",
            f"NEW FINDINGS ({len(a.new_findings)}): {listed(a.new_findings)}",
            f"CITED DEVIATIONS: {listed(deviations, 10)}",
            f"COVERAGE: {listed(a.coverage)}",
            f"COULD NOT JUDGE ({len(a.unjudged)}): {listed(a.unjudged)}"]
