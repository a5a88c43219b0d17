"""A declared failure says what it is (issue 46 item 3): an `expect` entry names a known bug
(`known_bug:`) or a cited deviation (`deviation:`), checked against the catalogs, and every
surface (the headline, the report's matrix, `matrix`'s table) shows that name instead of a
bare CONFORMS above a red axis."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.judge.axes import declared
from harness.judge.headline import headline
from harness.report.html import _cell
from harness.report.matrix import _cell as matrix_cell
from harness.scenario.loader import ScenarioError, parse_scenario

BASE = """version: 1
name: x
cluster: {brokers: 3}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - produce: {count: 1}
expect:
"""


def _axis(verdict: str, expected: dict[str, str] | None = None) -> dict[str, Any]:
    return {"verdict": verdict, "reason": "why", "expected": expected}


def test_a_named_declaration_is_carried_to_the_axis() -> None:
    sc = parse_scenario(BASE + """  - axis: safety
    verdict: UNSAFE
    known_bug: elr-keeps-removed-replica
    reason: the removed replica is elected
""")
    assert declared(sc, "safety", (4, 3, 1)) == {
        "verdict": "UNSAFE", "reason": "the removed replica is elected",
        "known_bug": "elr-keeps-removed-replica"}


@pytest.mark.parametrize("entry, message", [
    ("  - {axis: safety, verdict: UNSAFE, reason: r, known_bug: no-such-bug}",
     "unknown known bug 'no-such-bug'"),
    ("  - {axis: safety, verdict: UNSAFE, reason: r, deviation: no-such}",
     "unknown deviation 'no-such'"),
    ("  - {axis: safety, verdict: UNSAFE, reason: r, deviation: no-elr, known_bug: KAFKA-19522}",
     "not both"),
    ("  - {axis: safety, verdict: SAFE, reason: r, deviation: no-elr}", "SAFE is clean"),
])
def test_bad_names_are_refused_with_file_and_line(entry: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenario(BASE + entry + "\n", "s.yaml")
    assert str(err.value).startswith("s.yaml:8:")


def test_the_headline_says_known_bug_not_conforms() -> None:
    axes = {"release": _axis("CONFORMS"), "kip": _axis("DEVIATES"),
            "safety": _axis("UNSAFE", {"verdict": "UNSAFE", "reason": "r",
                                       "known_bug": "elr-keeps-removed-replica"})}
    h = headline(axes)
    assert (h.verdict, h.passed, h.label) == ("CONFORMS", True, "KNOWN BUG")
    assert h.text == "KNOWN BUG elr-keeps-removed-replica (as declared: safety UNSAFE)"
    assert "CONFORMS" not in h.text
    axes["safety"]["expected"] = {"verdict": "UNSAFE", "reason": "r", "deviation": "no-elr"}
    assert headline(axes).text == "DEVIATION no-elr (as declared: safety UNSAFE)"
    axes["safety"]["expected"] = {"verdict": "UNSAFE", "reason": "r"}
    assert headline(axes).text == "AS DECLARED: safety UNSAFE"
    # a clean run still reads CONFORMS, and a failure not declared keeps its verdict
    assert headline({a: _axis(v) for a, v in
                     (("release", "CONFORMS"), ("kip", "CONFORMS"), ("safety", "SAFE"))}
                    ).text == "CONFORMS"
    axes["safety"]["expected"] = None
    assert headline(axes).verdict == "UNSAFE"


def test_report_cells_show_the_name_in_the_failures_colour() -> None:
    axes = {"release": _axis("DIVERGES", {"verdict": "DIVERGES", "reason": "r",
                                          "known_bug": "KAFKA-19522"}),
            "kip": _axis("DEVIATES"), "safety": _axis("SAFE")}
    for a in axes.values():
        a["as_expected"] = True
    h = headline(axes)
    html = _cell({"verdict": h.verdict, "label": h.shown, "what": h.what, "headline": h.text,
                  "anchor": "run-1", "axes": axes})
    assert ">KNOWN BUG</span> KAFKA-19522</a>" in html and ">CONFORMS<" not in html
    assert "#b71c1c" in html  # the known bug's red, not the CONFORMS green
    views = {a: SimpleNamespace(verdict=v["verdict"], as_expected=True) for a, v in axes.items()}
    row = matrix_cell(SimpleNamespace(axes=views, headline=h))
    assert row.startswith("**KNOWN BUG KAFKA-19522**: DIVERGES / DEVIATES / SAFE")
