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
- a recorded diff finding that today's code replayed on its build without its class coming
  again (certify/rereplay.py: a model gap closed since the campaign) is none of these: it
  is listed as "re-judged with today's code, not reproduced";
- **cited deviations**: those each build needed (declared in a cell, met by diff or hunt);
- **could not judge**: cells unjudged on either build (never counted as a regression).

**Confirmation**: a matrix scenario whose two cells differ (clean on one build, not on the
other) is run again on both builds (``to_confirm``; records with ``confirm``). The
difference is a regression or a fix only when each re-run gives its build's first status;
a re-run that gives another is *flaky* ("could not judge", with both runs), so one slow or
unlucky run on a loaded machine does not read as a change of Kafka.

**Confirmation of one-build findings**: a diff or hunt finding class one build's campaign
met and the other's did not is often search luck (each build's time-bounded campaign
explores other events). Each one the answer would call a regression or a fix
(``searches_to_confirm``) is checked on both builds (certify/confirm.py): a diff finding's
own events replayed in a fresh driver session (`diff --replay`), a hunt finding's shrunk
schedule run on a fresh cluster; one record per build (``reproduced``: True, False, None
when the run could not judge). The rule (``confirmation``):

- reproduced on its own build and not on the other: a **confirmed** regression or fix
  ("(confirmed by replaying its events on both builds)" / "... re-running its shrunk
  schedule ...");
- reproduced on both: **on both** builds, neither a regression nor a fix; when no known bug
  or cited deviation explains it, a new finding listed once ("on both (one campaign missed
  it)"); a known bug it names is then met on both builds;
- not reproduced on its own build: **flaky**, "could not judge" (as is a run that could not
  judge: ERROR, UNSUPPORTED, a session the build refuses).
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
#: A recorded diff finding that today's code replayed without its class coming again
#: (certify/rereplay.py): neither a finding of the build nor a change between the builds.
GONE = "not-reproduced-now"


def hunt_bug(why: str) -> str | None:
    """The known bug a hunt finding's class names: its ``why`` starts "known bug ID (...)"
    (harness/search/hunt/classification.py ``_known_bug``)."""
    words = (why or "").split()
    return words[2] if words[:2] == ["known", "bug"] and len(words) > 2 else None


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
    #: the one-build findings confirmed on both builds: CONFIRMED / BOTH / FLAKY / CANNOT
    #: -> "part key" each
    checked: dict[str, list[str]] = field(default_factory=dict)
    #: the recorded findings today's code no longer reports (GONE)
    gone: list[str] = field(default_factory=list)

    @property
    def still_present(self) -> list[str]:
        return [b for b, w in self.known_bugs.items() if w.get("old") and w.get("new")]

    def to_json(self) -> dict[str, Any]:
        return {"regressions": self.regressions, "fixes": self.fixes,
                "known_bugs": {b: {**w, "reference": bug_reference(b)}
                               for b, w in self.known_bugs.items()},
                "known_bugs_still_present": self.still_present,
                "new_findings": self.new_findings, "deviations": self.deviations,
                "unjudged": self.unjudged, "coverage": self.coverage,
                "checked": self.checked, "gone": self.gone}


def _cell_word(cell: Mapping[str, Any] | None) -> str:
    return "not planned" if cell is None else shown(cell)


def shown(cell: Mapping[str, Any]) -> str:
    """What a cell shows: its verdict, or for a declared failure that held its label with
    the names (``KNOWN BUG elr-keeps-removed-replica``, ``DEVIATION no-elr``): the run's
    ``Headline.short`` (harness/judge/headline.py), never a bare CONFORMS. A cell recorded
    before ``shown`` was stored shows its label."""
    return str(cell.get("shown") or cell.get("label") or cell.get("verdict"))


def answer(cells: Iterable[Mapping[str, Any]], searches: Iterable[Mapping[str, Any]],
           builds: Mapping[str, str],
           confirms: Iterable[Mapping[str, Any]] | None = None) -> Answer:
    """The answer over every record; ``builds``: {"old": version, "new": version};
    ``confirms``: the confirmation runs of one-build findings (certify/confirm.py)."""
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
    keys = _finding_keys(searches, out)
    checked = confirmation_table(confirms or ())
    said = {(p, k): confirmation(checked.get((p, k), {}), next(iter(roles)))
            for (p, k), roles in keys.items() if len(roles) == 1}
    for (part, key), how in said.items():  # reproduced on the other build too: that
        [(found_on, f)] = keys[(part, key)].items()  # build met its known bug as well
        if how == BOTH and f.get("known_bug"):
            _note(out.known_bugs, f["known_bug"], other_role(found_on),
                  f"{part} {key} (replayed)")
    for (part, key), roles in sorted(keys.items()):
        f = roles.get("new") or roles["old"]
        if f.get("cls") == HARNESS_ERROR:  # the harness could not judge: never the build's
            out.unjudged.append(f"{part} on {f.get('build') or '?'}: {key}")
            continue
        named = f" (known bug {f['known_bug']})" if f.get("known_bug") else \
            f" ({f.get('cls')})" if f.get("cls") else ""
        if _met_on_both(out.known_bugs, f):  # the same known bug seen another way by a
            continue  # time-bounded search, not a change: listed with the bug
        how = said.get((part, key))
        if len(roles) == 1:
            found_on = next(iter(roles))
            line = f"{part} finding on {builds[found_on]} only: {key}{named}"
            _confirmed(out, part, key, line, how, found_on, checked.get((part, key), {}),
                       builds)
        explained = f.get("known_bug") or f.get("cls") in EXPLAINED
        if how == BOTH and not explained:
            out.new_findings.append(f"{part} on both (one campaign missed it): {key}: class "
                                    f"{f.get('cls')}; reproduce: {f.get('repro', '')}")
        elif "new" in roles and not roles["new"].get("known_bug") and how != FLAKY and \
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


def _finding_keys(searches: Iterable[Mapping[str, Any]], out: Answer
                  ) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(part, finding key) -> role -> the finding (with its build); the searches'
    deviations, coverage and known bugs noted in ``out`` on the way, and each finding today's
    code no longer reports (GONE) in ``out.gone`` instead of here."""
    keys: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for s in searches:
        for d in s.get("deviations", ()):
            _note(out.deviations, d, s["role"], s["part"])
        if s.get("coverage"):
            out.coverage.append(f"{s['part']} on {s['build']}: {s['coverage']}")
        for f in s.get("findings", ()):
            if f.get("cls") == GONE:  # not met now on the build it was recorded on
                out.gone.append(f"{s['part']} {f['key']} on {s['build']}: {f.get('now')} "
                                f"with today's code (recorded: {f.get('repro', '')})")
                continue
            keys.setdefault((s["part"], f["key"]), {})[s["role"]] = {**f, "build": s["build"]}
            if f.get("known_bug"):
                _note(out.known_bugs, f["known_bug"], s["role"], f"{s['part']} {f['key']}")
    return keys


def _met_on_both(known_bugs: Mapping[str, Mapping[str, Any]], f: Mapping[str, Any]) -> bool:
    met = known_bugs.get(str(f.get("known_bug")), {})
    return bool(f.get("known_bug") and met.get("old") and met.get("new"))


# --- confirmation of one-build findings (the module doc) ------------------------------------

CONFIRMED, BOTH, FLAKY, CANNOT = "confirmed", "on both", "flaky", "could not judge"
#: How the confirmation runs were made, per part (the line's suffix).
CONFIRMED_BY = {"diff": "replaying its events on both builds",
                "hunt": "re-running its shrunk schedule on both builds"}


def other_role(role: str) -> str:
    return "old" if role == "new" else "new"


def confirmation_table(confirms: Iterable[Mapping[str, Any]]
                       ) -> dict[tuple[str, str], dict[str, Mapping[str, Any]]]:
    """(part, finding key) -> the role a confirmation ran on -> its record."""
    out: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for c in confirms:
        out.setdefault((c["of"], c["key"]), {})[c["role"]] = c
    return out


def confirmation(runs: Mapping[str, Mapping[str, Any]], found_on: str) -> str | None:
    """The rule of the module doc over one finding's confirmation runs (role -> record):
    CONFIRMED, BOTH, FLAKY, CANNOT; None while a build's run is missing."""
    own, other = runs.get(found_on), runs.get(other_role(found_on))
    if own is None or other is None:
        return None
    if own.get("reproduced") is False:
        return FLAKY
    if own.get("reproduced") is None or other.get("reproduced") is None:
        return CANNOT
    return BOTH if other["reproduced"] else CONFIRMED


def _runs_said(runs: Mapping[str, Mapping[str, Any]], builds: Mapping[str, str]) -> str:
    return "; ".join(f"{builds[r]} {runs[r].get('text', '')}" for r in ("old", "new")
                     if r in runs)


def _confirmed(out: Answer, part: str, key: str, line: str, how: str | None, found_on: str,
               runs: Mapping[str, Mapping[str, Any]], builds: Mapping[str, str]) -> None:
    """A one-build finding's line where its confirmation puts it."""
    if how is not None:
        out.checked.setdefault(how, []).append(f"{part} {key}")
    if how is None:  # not confirmed (a campaign stopped before): as the campaign saw it
        (out.regressions if found_on == "new" else out.fixes).append(line)
    elif how == CONFIRMED:
        (out.regressions if found_on == "new" else out.fixes).append(
            f"{line} (confirmed by {CONFIRMED_BY.get(part, 're-running it on both builds')})")
    elif how == FLAKY:
        out.unjudged.append(f"{line} (flaky: not reproduced on its own build: "
                            f"{_runs_said(runs, builds)})")
    elif how == CANNOT:
        out.unjudged.append(f"{line} (not confirmed: {_runs_said(runs, builds)})")


def searches_to_confirm(cells: Iterable[Mapping[str, Any]],
                        searches: Iterable[Mapping[str, Any]]
                        ) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(part, key, role it was found on, the finding) of each diff or hunt finding one
    build met and the other did not that the answer would call a regression or a fix:
    not a harness error, and not a known bug both builds met some other way."""
    searches = list(searches)
    a = answer(cells, searches, {"old": "old", "new": "new"})
    out = []
    for (part, key), roles in sorted(_finding_keys(searches, Answer()).items()):
        if len(roles) != 1:
            continue
        [(found_on, f)] = roles.items()
        if f.get("cls") != HARNESS_ERROR and not _met_on_both(a.known_bugs, f):
            out.append((part, key, found_on, f))
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
    top = [f"Kafka {new} against {old}:",
            f"REGRESSIONS ({len(a.regressions)}): {listed(a.regressions)}",
            f"FIXES ({len(a.fixes)}): {listed(a.fixes)}",
            f"KNOWN BUGS STILL PRESENT ({len(still)}): {listed(still)}",
            f"NEW FINDINGS ({len(a.new_findings)}): {listed(a.new_findings)}",
            f"CITED DEVIATIONS: {listed(deviations, 10)}",
            f"COVERAGE: {listed(a.coverage)}",
            f"COULD NOT JUDGE ({len(a.unjudged)}): {listed(a.unjudged)}"]
    if a.gone:  # recorded findings today's code replayed without their class
        top.append(f"RE-JUDGED WITH TODAY'S CODE, NOT REPRODUCED ({len(a.gone)}): "
                   f"{listed(a.gone)}")
    if a.checked:  # the one-build findings run again on both builds (module doc)
        n = sum(len(v) for v in a.checked.values())
        top.append(f"ONE-BUILD FINDINGS CHECKED ON BOTH BUILDS ({n}): " + "; ".join(
            f"{how} ({len(a.checked[how])}): {', '.join(a.checked[how])}"
            for how in (CONFIRMED, BOTH, FLAKY, CANNOT) if a.checked.get(how)))
    return top
