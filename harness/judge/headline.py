"""A run's headline verdict: one rule over its three axes and the scenario's declarations.

Every surface that shows or stores a run's overall verdict takes it from ``headline``: the
`kafka-chaos run` VERDICT line and exit code, `run --repeat`'s summary, `matrix`'s progress
lines, `audit`, fuzz's harness errors, the scenario suite's assertion (pytest's JUnit
message), and the report (its matrix, "Repeated runs", "Trends per build", each run's
section, junit.xml, summary.json). Offline readers derive it from the axes as re-judged or
stored (``verdict`` and ``expected`` of each), never from a stored headline.

The rule, first match wins:

1. INCOMPLETE: the history was cut short (no run_end), or an axis says so.
2. ERROR: the run or an axis errored (a harness failure, never blamed on the build).
3. The worst verdict among the axes that are neither clean nor as the scenario declares for
   the build (``judges.axis_as_expected``): UNSAFE, then DIVERGES (release), then
   KIP-DIVERGES, then NOT-AS-DECLARED (the scenario declares a verdict the axis did not give,
   e.g. declared UNSAFE and the run was SAFE).
4. UNSUPPORTED: the build cannot run the scenario (or the model cannot follow a step).
5. CONFORMS: every axis clean or as declared. A run with a declared failure that held
   passes (verdict CONFORMS) but never shows as a bare CONFORMS: its label says what it is,
   from the declaration's name (harness/scenario/declared_names.py): ``KNOWN BUG`` (a known
   bug of the build), else ``DEVIATION`` (a cited deviation), else ``AS DECLARED``, e.g.
   ``KNOWN BUG elr-keeps-removed-replica (as declared: safety UNSAFE)``, or unnamed
   ``AS DECLARED: safety UNSAFE``.

A run without axes (a schema 1.0/1.1 history the audit cannot re-judge, a pytest-plugin
run whose verdict is its test's outcome) has only its recorded verdict.

The step-wise lockstep verdict (run.json ``verdict``: each step's settled state against the
model) is not the headline: it feeds the release axis, and is shown as ``lockstep_label``.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.judge.axes import (
    AXES,
    CLEAN,
    CONFORMS,
    DIVERGES,
    ERROR,
    INCOMPLETE,
    KIP_DIVERGES,
    UNSAFE,
    UNSUPPORTED,
    axis_as_expected,
)

#: An axis that gave another verdict than the one its scenario declares for the build.
NOT_AS_DECLARED = "NOT-AS-DECLARED"
#: The label of a passing run whose declared failure is not named (known_bug/deviation).
AS_DECLARED = "AS DECLARED"
#: Which failing axis names the headline (highest first); a verdict this module does not
#: know ranks with DIVERGES, so an odd history can never pass.
_RANK = {UNSAFE: 4, DIVERGES: 3, KIP_DIVERGES: 2, NOT_AS_DECLARED: 1}
_UNKNOWN_RANK = 3
PASSING = (CONFORMS, UNSUPPORTED)


@dataclass(frozen=True)
class Headline:
    verdict: str
    #: One line: the verdict and the axes behind it (the CLI's VERDICT line, report cells).
    text: str
    #: The text and each failing axis's reason (junit.xml, the suite's assertion).
    message: str
    #: What a surface shows as the verdict: the verdict, or for a declared failure that held
    #: what it is (KNOWN BUG, DEVIATION, AS DECLARED).
    label: str = ""
    #: What the label stands for: the declared failures' names ("elr-keeps-removed-replica"),
    #: or, unnamed, the axes that failed as declared ("safety UNSAFE").
    what: str = ""

    @property
    def short(self) -> str:
        """The label and what it stands for, as the text starts (no axes list)."""
        if not self.label:
            return self.verdict
        return self.text.split(" (as declared", 1)[0]

    @property
    def shown(self) -> str:
        return self.label or self.verdict

    @property
    def passed(self) -> bool:
        """CONFORMS or UNSUPPORTED: a test passes (or skips), the exit code is 0."""
        return self.verdict in PASSING

    @property
    def exit_code(self) -> int:
        """`kafka-chaos run`/`matrix`: 0 passed, 1 an axis neither clean nor as declared,
        2 the harness could not judge the run (ERROR, INCOMPLETE)."""
        if self.verdict in (ERROR, INCOMPLETE):
            return 2
        return 0 if self.passed else 1

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "label": self.shown, "text": self.text,
                "passed": self.passed}


def headline(axes: Mapping[str, Any] | None, lockstep: str | None = None,
             lockstep_reason: str = "", ended: bool = True) -> Headline:
    """The run's headline from its axes (``judges.AxisVerdict`` objects or their JSON:
    ``verdict``, ``reason``, ``expected``), its lockstep verdict (run.json ``verdict``) and
    whether its history is complete."""
    if not ended:
        return _plain(INCOMPLETE, lockstep_reason, "the history was cut short: no run_end")
    views = _views(axes)
    if views is None:  # no axes: the recorded verdict is all there is
        verdict = lockstep or "NONE"
        return _plain(verdict, lockstep_reason, "no axes recorded")
    for stop in (INCOMPLETE, ERROR):
        hit = [(a, r) for a, v, r, _ in views if v == stop]
        if stop == ERROR and lockstep == ERROR and not hit:
            hit = [("run", lockstep_reason)]
        if hit:
            if len({r for _, r in hit}) == 1 and len(hit) > 1:  # one cause, said once
                return _plain(stop, hit[0][1])
            return _plain(stop, "; ".join(f"{a}: {r}" if r else a for a, r in hit))
    failing, declared = [], []
    names: list[tuple[str, str]] = []
    for axis, verdict, reason, expected in views:
        if not axis_as_expected(axis, verdict, expected, reason):
            clean = verdict in CLEAN.get(axis, ())
            failing.append((_RANK.get(NOT_AS_DECLARED if clean else verdict, _UNKNOWN_RANK),
                            NOT_AS_DECLARED if clean else verdict, axis, verdict, reason,
                            expected))
        elif expected is not None and verdict != UNSUPPORTED and verdict not in CLEAN[axis]:
            declared.append(f"{axis} {verdict}")
            names += [(key, str(expected[key])) for key in ("known_bug", "deviation")
                      if expected.get(key)]
    if failing:
        failing.sort(key=lambda f: -f[0])  # stable: ties keep the axes' order
        undeclared = [f"{a} {v}" for _, _, a, v, _, e in failing if e is None]
        other = [f"{a} {v}, declared {e.get('verdict')}" for _, _, a, v, _, e in failing
                 if e is not None]
        parts = ([f"undeclared: {', '.join(undeclared)}"] if undeclared else []) + other \
            + ([f"as declared: {', '.join(declared)}{_named(names)}"] if declared else [])
        text = f"{failing[0][1]} ({'; '.join(parts)})"
        why = [f"{a} {v}: {r or 'see run'}" + ("" if e is None else
                                                 f" (declared {e.get('verdict')}: "
                                                 f"{e.get('reason')})")
               for _, _, a, v, r, e in failing]
        return Headline(failing[0][1], text, "; ".join([text, *why]))
    unsupported = [r for a, v, r, _ in views if v == UNSUPPORTED]
    if unsupported:
        return _plain(UNSUPPORTED, unsupported[0])
    if not declared:
        return Headline(CONFORMS, CONFORMS, CONFORMS)
    label, named = _declared_label(names), _named(names, " ").strip()
    text = (f"{label} {named} (as declared: {', '.join(declared)})" if names
            else f"{label}: {', '.join(declared)}")
    return Headline(CONFORMS, text, text, label, named or ", ".join(declared))


def _declared_label(names: list[tuple[str, str]]) -> str:
    kinds = {k for k, _ in names}
    return ("KNOWN BUG" if "known_bug" in kinds else "DEVIATION" if "deviation" in kinds
            else AS_DECLARED)


def _named(names: list[tuple[str, str]], lead: str = "; ") -> str:
    """The declared failures' names, each once, known bugs first."""
    ordered = sorted(dict.fromkeys(names), key=lambda n: n[0] != "known_bug")
    if not ordered:
        return ""
    if lead != " ":
        return lead + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in ordered)
    return lead + ", ".join(v for _, v in ordered)


def lockstep_label(verdict: str | None, reason: str = "") -> str:
    """The step-wise lockstep result under its own name, so it is never read as the run's
    verdict: each step's settled state compared with the model."""
    return (f"lockstep {verdict or 'NONE'} (settled states, step by step)"
            + (f": {reason}" if reason else ""))


def _plain(verdict: str, reason: str, note: str = "") -> Headline:
    text = verdict + (f" ({note})" if note else "") + (f": {reason}" if reason else "")
    return Headline(verdict, text, text)


def _views(axes: Mapping[str, Any] | None
           ) -> list[tuple[str, str, str, Mapping[str, Any] | None]] | None:
    """(axis, verdict, reason, expected) of the three axes, in order; None unless all three
    are there."""
    if not axes or not all(a in axes and axes[a] is not None for a in AXES):
        return None
    out = []
    for axis in AXES:
        v = axes[axis]
        if isinstance(v, Mapping):
            expected = v.get("expected")
            out.append((axis, str(v.get("verdict")), str(v.get("reason") or ""),
                        expected if isinstance(expected, Mapping) else None))
        else:
            out.append((axis, str(v.verdict), str(v.reason or ""), v.expected))
    return out
