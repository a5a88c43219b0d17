"""The generator of ``feature`` steps (reference/model/features.py): UpdateFeatures of
``eligible.leader.replicas.version`` (on, off) and a ``metadata.version`` raise, sent as
``kafka-features.sh`` sends them through a broker that reaches the active controller.

Made only where the model predicts the build's answer:

- ELR, level 0 or 1 (the other one than every branch has): only while every node runs a
  build with the feature (4.0 and newer: EligibleLeaderReplicasVersion; a 3.x node does
  not list it, and the controller refuses a level some registered node does not support,
  FeatureControlManager.updateFeature -> ClusterFeatureSupportDescriber
  .reasonNotSupported) and the metadata.version is at least 4.0-IV1 (23), ELRV_1's
  dependency (``EligibleLeaderReplicasVersion.ELRV_1.dependencies()``, measured on the
  4.0.2-4.4.0 jars: {metadata.version=23}). The model then predicts acceptance; it does
  not model those two refusals, so they are never generated.
- metadata.version, level L above the cluster's (``Track.mv``, from the birth build's:
  generators/upgrade.py ``MV_LEVELS``), L one of the catalog's release lines' levels up
  to the run's build's: accepted when every node's build supports L; declared
  ``refused: true`` when some node's build does not (the model predicts a
  metadata.version's answer from the declaration). Only while every node runs and none
  is paused or unregistered: the controller checks the registered nodes' supported
  ranges, and a node down or gone is one whose range the guard would have to guess. No
  downgrade is generated (the controller refuses an unsafe one; a safe one changes
  nothing the model knows).
"""

from __future__ import annotations

import random

from reference.model import features as F
from reference.model import steps as S
from reference.search.generators.generator import Gen, Generator, Track
from reference.search.generators.upgrade import MV_LEVELS, line_of, mv_level

#: ELRV_1's dependency: metadata.version 4.0-IV1.
ELR_MIN_MV = 23
#: The first release line with the eligible.leader.replicas.version feature.
ELR_LINE = (4, 0)


def _born_elr(model: object) -> bool:
    """The ELR the model's cluster was born with (its ``elr_on``), through the wrappers
    (under traffic, several partitions)."""
    m = model
    while hasattr(m, "model"):
        m = m.model
    models = getattr(m, "models", None)
    if models:
        m = models[0]
    return bool(getattr(m, "elr_on", False))


def _mv_now(g: Gen) -> int:
    b = g.limits.builds
    born = mv_level(b.birth) if b is not None else None
    return g.track.mv if g.track.mv is not None else (born or 0)


def _node_levels(g: Gen) -> list[int | None]:
    return [mv_level(g.build_of(n) or "") for n in (*g.controllers, *g.brokers)]


def _steps(g: Gen, rng: random.Random) -> list[S.Step]:
    b = g.limits.builds
    if b is None:
        return []
    out: list[S.Step] = [F.Feature(F.ELR, 0), F.Feature(F.ELR, 1)]
    target = line_of(b.target)
    levels = sorted({lv for line, lv in MV_LEVELS.items() if target and line <= target})
    out += [F.Feature(F.METADATA_VERSION, lv) for lv in levels]
    return out + [F.Feature(F.METADATA_VERSION, lv, refused=True) for lv in levels]


def _guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, F.Feature)
    b = g.limits.builds
    if b is None:
        return "the run's builds are not known (no feature step is generated)"
    why = g.controller_request("UpdateFeatures")
    if why is not None:
        return why
    if step.name == F.ELR:
        return _elr_guard(step, g)
    if step.name != F.METADATA_VERSION:
        return f"the generator makes no {step.name} step"
    if step.level <= _mv_now(g):
        return f"metadata.version is {_mv_now(g)} already (only a raise is generated)"
    if step.refused is False:
        return "a generated metadata.version raise declares refused: true or nothing"
    if any(g.down(n) for n in g.brokers) or g.track.controllers_down or g.track.paused \
            or g.track.unregistered:
        return "a node is down, paused or unregistered (its supported range is not known)"
    levels = _node_levels(g)
    if any(lv is None for lv in levels):
        return "a node runs a build whose metadata.version levels are not known"
    least = min(lv for lv in levels if lv is not None)
    if step.refused is None and step.level > least:
        return (f"a node's build supports metadata.version up to {least} (Kafka refuses "
                f"{step.level}: declare refused: true)")
    if step.refused and step.level <= least:
        return f"every node's build supports metadata.version {step.level} (accepted)"
    top = mv_level(b.target)
    if top is None or step.level > top:
        return f"metadata.version {step.level} is above the run's build {b.target}'s"
    return None


def _elr_guard(step: F.Feature, g: Gen) -> str | None:
    if step.refused is not None:
        return "a generated ELR step declares nothing (the model predicts its answer)"
    for n in (*g.controllers, *g.brokers):
        line = line_of(g.build_of(n) or "")
        if line is None or line < ELR_LINE:
            return f"node {n} runs {g.build_of(n)}, which has no ELR feature (refused)"
    if _mv_now(g) < ELR_MIN_MV:
        return (f"metadata.version {_mv_now(g)} is below ELR's dependency {ELR_MIN_MV} "
                "(4.0-IV1; refused)")
    on = step.level >= 1
    born = _born_elr(g.model)
    if not g.every(lambda w: (born if w.elr_live is None else w.elr_live) != on):
        return f"ELR is {'on' if on else 'off'} already in some branch"
    return None


def _after(step: S.Step, track: Track) -> None:
    assert isinstance(step, F.Feature)
    if step.name == F.METADATA_VERSION and not step.refused:
        track.mv = step.level if track.mv is None else max(track.mv, step.level)


FEATURE = Generator("feature", F.Feature, 1, _steps, _guard, _after)
