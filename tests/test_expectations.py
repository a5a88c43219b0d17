"""Scenario `expect:` declarations: parsing, version ranges, errors with file:line."""

from __future__ import annotations

import pytest

from harness.judge.axes import AxisVerdict, declared
from harness.scenario.loader import ScenarioError, parse_scenario

BASE = """version: 1
name: x
cluster: {brokers: 3}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - produce: {count: 1}
"""


def test_declarations_apply_to_their_version_range_only() -> None:
    sc = parse_scenario(BASE + """expect:
  - axis: safety
    verdict: UNSAFE
    versions: {max: "4.0.99"}
    reason: no ELR
""")
    assert declared(sc, "safety", (3, 9, 1)) == {"verdict": "UNSAFE", "reason": "no ELR"}
    assert declared(sc, "safety", (4, 1, 0)) is None
    assert declared(sc, "kip", (3, 9, 1)) is None
    on_391 = AxisVerdict("safety", "SAFE", expected=declared(sc, "safety", (3, 9, 1)))
    assert not on_391.as_expected  # a declared verdict that does not happen fails too


@pytest.mark.parametrize("entry, message", [
    ("  - {axis: safety, verdict: UNSAFE}", "missing required key 'reason'"),
    ("  - {axis: safety, verdict: UNSAFE, reason: ''}", "say why"),
    ("  - {axis: speed, verdict: FAST, reason: r}", "unknown axis 'speed'"),
    ("  - {axis: kip, verdict: UNSAFE, reason: r}", "kip verdicts are"),
    ("  - {axis: release, verdict: DIVERGES, reason: r, versions: {max: 4}}",
     "expected a quoted version"),
    ("  - {axis: release, verdict: DIVERGES, reason: r, "
     "versions: {min: \"4.1.0\", max: \"4.0.0\"}}", "max is lower than min"),
])
def test_bad_declarations_name_file_and_line(entry: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as err:
        parse_scenario(BASE + "expect:\n" + entry + "\n", "s.yaml")
    assert str(err.value).startswith("s.yaml:8:")
