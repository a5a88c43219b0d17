"""The step registry: one definition per kind, documented, and what the loader parses
serialises back to the same step."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.run import steps
from harness.run.scenario import parse_scenario
from reference.steps import BUILTIN, step_to_dict

FORMAT = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios" / "FORMAT.md"
HEAD = """version: 1
name: kinds
cluster: {brokers: 3, controllers: 1}
topic: {name: t, replicas: [1, 2, 3], min_insync_replicas: 2}
steps:
"""


def test_the_model_kinds_all_have_a_scenario_step() -> None:
    assert {k.kind for k in BUILTIN} <= set(steps.KINDS)


@pytest.mark.parametrize("name", sorted(steps.KINDS))
def test_every_kind_is_documented(name: str) -> None:
    kind = steps.KINDS[name]
    assert kind.doc.startswith(f"{name}: ")
    assert f"  - {name}: {{" in FORMAT.read_text(), f"{name} is missing from FORMAT.md"


def test_a_loaded_step_serialises_to_what_was_written() -> None:
    written = ["produce: {count: 2, acks: 1}", "isolate: {node: 100}", "heal: {}",
               "cut: {src: 1, dst: 2, direction: oneway}", "kill: {broker: 3}",
               "lose_unflushed: {broker: 3, offset: 1}", "restart: {broker: 3}",
               "elect: {type: unclean}", "reassign: {replicas: [2, 1]}",
               "alter_config: {scope: topic, config: {min.insync.replicas: '1'}}",
               "await: {leader: 2, timeout_s: 5.0}", "consume: {}"]
    sc = parse_scenario(HEAD + "".join(f"  - {w}\n" for w in written))
    for loaded, text in zip(sc.steps, written, strict=True):
        assert step_to_dict(loaded.step) == yaml.safe_load(text)
        assert loaded.kind == next(iter(yaml.safe_load(text)))
