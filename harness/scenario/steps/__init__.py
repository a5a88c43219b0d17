"""Scenario step kinds: one definition per kind (``StepKind``: parser, model step,
execution, documentation), registered by the modules of this package. The loader, the
runner and the audit iterate ``KINDS`` and never branch on a step's name: a new kind is a
new module here (and its line in fixtures/scenarios/FORMAT.md).

May import: harness.scenario.nodes (the loader's readers), harness.client, harness.nemesis
(through the session), reference.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.search.generators import Generator


def _discover() -> dict[str, StepKind]:
    """Every ``KINDS`` tuple of this package's modules, in module order."""
    found: dict[str, StepKind] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for kind in getattr(module, "KINDS", ()):
            if kind.name in found:
                raise RuntimeError(f"step kind {kind.name!r} is defined twice")
            found[kind.name] = kind
    return found


KINDS: dict[str, StepKind] = _discover()


def generators() -> dict[str, Generator]:
    """The kinds ``kafka-chaos fuzz`` makes: every kind whose definition names a
    generator."""
    return {name: kind.generator for name, kind in KINDS.items() if kind.generator}


def execute(session: Any, at: Target, name: str, step: Any) -> StepOutcome:
    """Run one step on the cluster; what it produced besides cluster state."""
    out = StepOutcome()
    KINDS[name].execute(session, at, step, out)
    return out


__all__ = ["KINDS", "StepKind", "StepOutcome", "Target", "execute", "generators"]
