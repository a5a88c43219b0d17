"""Controller roles with one controller: `active` and `last_active` name it (the runner
resolves them without asking a quorum), `follower` is refused with file:line."""

from __future__ import annotations

import pytest

from harness.scenario.loader import ScenarioError, parse_scenario

ONE = """version: 1
name: x
cluster: {brokers: 3, controllers: 1}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
  - kill: {controller: active}
  - restart: {controller: last_active}
"""


def test_active_and_last_active_load_with_one_controller() -> None:
    sc = parse_scenario(ONE)
    assert [s.kind for s in sc.steps] == ["kill", "restart"]


def test_follower_is_refused_with_one_controller() -> None:
    with pytest.raises(ScenarioError, match="this cluster has one controller") as err:
        parse_scenario(ONE + "  - stop: {controller: follower}\n", "s.yaml")
    assert str(err.value).startswith("s.yaml:8:")
    parse_scenario(ONE.replace("controllers: 1", "controllers: 3")
                   + "  - stop: {controller: follower}\n")
