"""Generated clusters born on an older build and upgraded during the schedule, and the
generated ``feature`` steps (issue 43 item 3; reference/search/generators/upgrade.py and
features.py): determinism for a seed, every schedule loads through the scenario loader
(over many seeds, no cluster), upgrades only to the catalog's builds and never below the
cluster's metadata.version, every node on the run's build at the end, no feature step a
node's build cannot take."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.cli import fuzz as fuzz_cli
from harness.cli import options
from harness.cluster.builds import Build, Features
from harness.infra.errors import UsageError
from harness.scenario.loader import parse_scenario
from harness.search import fuzz
from reference.model import features as F
from reference.model import steps as S
from reference.model.upgrade import UpgradeBroker, UpgradeController
from reference.search import fuzzgen
from reference.search.generators import Builds, Limits, Track, default_births, draw_birth
from reference.search.generators.features import ELR_MIN_MV
from reference.search.generators.upgrade import line_of, mv_level


def _build(version: str) -> Build:
    elr = line_of(version) >= (4, 0)  # type: ignore[operator]
    features = Features(elr=elr, elr_default_on=line_of(version) >= (4, 1),  # type: ignore[operator]
                        describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                        kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), features)


def _models(target: str, births: tuple[str, ...]) -> fuzz.CampaignModels:
    resolved = {v: _build(v) for v in births}
    return fuzz.model_factory(_build(target), resolved, (target, *resolved))


def _cfg(models: fuzz.CampaignModels, upgrades: float = 1.0, length: int = 10) -> Any:
    return fuzz.gen_config(length=length, upgrades=upgrades, births=tuple(models.births),
                           builds=Builds(models.build.version, models.build.version,
                                         models.catalog))


def _replay(models: fuzz.CampaignModels, seed: int, steps: Any, cfg: Any) -> None:
    """Every rule the generated schedule of scenario seed ``seed`` must keep."""
    cluster = fuzz.CLUSTERS.of(seed)
    assert cluster is not None
    target = models.build.version
    birth = cluster.birth or target
    builds = {n: birth for n in (*range(1, cluster.brokers + 1),
                                 *range(100, 100 + cluster.controllers))}
    mv = mv_level(birth)
    assert mv is not None
    for step in steps:
        if isinstance(step, UpgradeBroker | UpgradeController):
            node = step.broker if isinstance(step, UpgradeBroker) else step.controller
            assert isinstance(node, int)
            assert step.version in models.catalog, step
            assert line_of(step.version) <= line_of(target)  # type: ignore[operator]
            level = mv_level(step.version)
            assert level is not None and level >= mv, (step, mv)  # never below the MV
            assert builds[node] != step.version
            builds[node] = step.version
        if isinstance(step, F.Feature):
            levels = [mv_level(v) or 0 for v in builds.values()]
            if step.name == F.ELR:
                assert step.refused is None
                assert all(line_of(v) >= (4, 0) for v in builds.values())  # type: ignore[operator]
                assert mv >= ELR_MIN_MV
            else:
                assert step.level > mv
                if step.refused:
                    assert step.level > min(levels)
                else:
                    assert step.level <= min(levels)
                    mv = step.level
    assert set(builds.values()) == {target}, (birth, builds)  # the run tests the target
    assert steps[-1].kind == "consume"


@pytest.mark.parametrize(("target", "births"), [("4.3.1", ("3.9.2", "4.0.2")),
                                                ("4.4.0", ("3.9.2", "4.0.2", "4.2.2"))])
def test_born_old_schedules_load_keep_the_rules_and_end_on_the_run_build(
        target: str, births: tuple[str, ...]) -> None:
    models = _models(target, births)
    cfg = _cfg(models)
    born: set[str] = set()
    kinds: set[str] = set()
    for index in range(24):
        steps = fuzz.schedule(models, 11, index, cfg)
        seed = fuzz.schedule_seed(11, index)
        cluster = fuzz.CLUSTERS.of(seed)
        assert cluster is not None and cluster.birth in births
        assert cluster.controllers == 3
        born.add(cluster.birth)
        kinds |= {s.kind for s in steps}
        text = fuzz.scenario_yaml(f"u-{index}", seed, steps)
        sc = parse_scenario(text, f"<u-{index}>")  # the loader takes every one
        assert [x.step for x in sc.steps] == list(steps)
        assert sc.requires.min_version == sc.requires.max_version == \
            tuple(int(x) for x in cluster.birth.split("."))
        assert "--kafka-version " + cluster.birth in sc.description
        assert fuzzgen.validate(fuzz.models_of(models, seed), steps,
                                fuzz.config_of(models, cfg, cluster)) is None
        _replay(models, seed, steps, cfg)
    assert born == set(births)
    assert {"upgrade", "feature"} <= kinds


def test_a_seed_gives_the_same_birth_cluster_and_schedule() -> None:
    models = _models("4.3.1", ("3.9.2", "4.0.2"))
    cfg = _cfg(models, upgrades=0.5)
    first = [(fuzz.schedule(models, 5, i, cfg), fuzz.CLUSTERS.of(fuzz.schedule_seed(5, i)))
             for i in range(8)]
    again = [(fuzz.schedule(_models("4.3.1", ("3.9.2", "4.0.2")), 5, i, cfg),
              fuzz.CLUSTERS.of(fuzz.schedule_seed(5, i))) for i in range(8)]
    assert first == again
    assert len({c.birth for _, c in first if c is not None}) >= 2


def test_the_default_chance_is_modest_and_zero_turns_births_off() -> None:
    born = [draw_birth(s, ("3.9.2", "4.0.2"), 0.1) for s in range(2000)]
    share = sum(b is not None for b in born) / len(born)
    assert 0.05 < share < 0.15
    assert all(draw_birth(s, ("3.9.2",), 0.0) is None for s in range(200))
    models = _models("4.3.1", ("3.9.2", "4.0.2"))
    cfg = _cfg(models, upgrades=0.0)
    for i in range(10):
        steps = fuzz.schedule(models, 9, i, cfg)
        assert fuzz.CLUSTERS.of(fuzz.schedule_seed(9, i)).birth is None  # type: ignore[union-attr]
        assert not any(s.kind == "upgrade" for s in steps)


def test_without_births_the_schedules_are_the_ones_before() -> None:
    """A campaign with upgrades off draws the same clusters it drew before births
    existed (their stream is one of its own)."""
    models = _models("4.3.1", ())
    plain = fuzz.model_factory(_build("4.3.1"))
    off = _cfg(models, upgrades=0.0)
    for i in range(5):
        fuzz.schedule(models, 3, i, off)
        ca = fuzz.CLUSTERS.of(fuzz.schedule_seed(3, i))
        fuzz.schedule(plain, 3, i, dataclasses.replace(off, builds=None))
        assert ca == fuzz.CLUSTERS.of(fuzz.schedule_seed(3, i))


def _gen(models: fuzz.CampaignModels, birth: str, steps: list[S.Step]) -> Any:
    cluster = fuzzgen.Cluster(brokers=3, controllers=3, birth=birth,
                              elr=None if birth.startswith("3.") else True)
    model = models.for_cluster(cluster)
    cfg = fuzz.config_of(models, _cfg(models), cluster)
    track = fuzzgen.new_track(model)
    for s in steps:
        assert fuzzgen.why_invalid(s, model, track, cfg) is None, s
        model.apply(s)
        fuzzgen.after(s, track, cfg)
    return model, track, cfg


def test_guards_refuse_a_downgrade_below_the_mv_and_features_a_build_cannot_take() -> None:
    models = _models("4.3.1", ("3.9.2", "4.0.2"))
    # Born on 3.9.2: ELR is refused while any node runs 3.9.2 (no such feature) and while
    # the metadata.version is 3.9-IV0 (21 < 23, ELRV_1's dependency).
    model, track, cfg = _gen(models, "3.9.2", [])
    why = fuzzgen.why_invalid(F.Feature(F.ELR, 1), model, track, cfg)
    assert why is not None and "no ELR feature" in why
    # A metadata.version raise some node cannot take is generated only declared refused.
    assert fuzzgen.why_invalid(F.Feature(F.METADATA_VERSION, 30), model, track, cfg)
    assert fuzzgen.why_invalid(F.Feature(F.METADATA_VERSION, 30, refused=True), model,
                               track, cfg) is None
    ups: list[S.Step] = [UpgradeController(c, "4.3.1") for c in (100, 101, 102)]
    ups += [UpgradeBroker(b, "4.3.1") for b in (1, 2, 3)]
    model, track, cfg = _gen(models, "3.9.2", ups)
    why = fuzzgen.why_invalid(F.Feature(F.ELR, 1), model, track, cfg)
    assert why is not None and "below ELR's dependency" in why
    # Every node on 4.3.1: the raise is accepted; then no node may go back to 4.0.2.
    model, track, cfg = _gen(models, "3.9.2", [*ups, UpgradeBroker(1, "3.9.2"),
                                               UpgradeBroker(1, "4.3.1"),
                                               F.Feature(F.METADATA_VERSION, 25)])
    assert track.mv == 25
    assert fuzzgen.why_invalid(F.Feature(F.ELR, 1), model, track, cfg) is None
    assert fuzzgen.why_invalid(UpgradeBroker(2, "3.9.2"), model, track, cfg)
    assert fuzzgen.why_invalid(UpgradeBroker(2, "4.0.2"), model, track, cfg) is None
    model, track, cfg = _gen(models, "3.9.2", [*ups, F.Feature(F.METADATA_VERSION, 30)])
    why = fuzzgen.why_invalid(UpgradeBroker(2, "4.0.2"), model, track, cfg)
    assert why is not None and "no downgrade below it" in why
    # Born on 4.0.2: never below its release line; never newer than the run's build.
    model, track, cfg = _gen(models, "4.0.2", [])
    assert fuzzgen.why_invalid(UpgradeBroker(1, "3.9.2"), model, track, cfg)
    assert "not a build of the run's catalog" in (
        fuzzgen.why_invalid(UpgradeBroker(1, "4.4.0"), model, track, cfg) or "")
    # Without the run's builds (a campaign that does not pass them) neither kind is made.
    plain = fuzzgen.GenConfig()
    g = fuzzgen._gen(model, Track(), plain)
    assert g.limits == Limits(plain.max_count, plain.max_killed, None)
    assert fuzzgen.why_invalid(UpgradeBroker(1, "4.3.1"), model, Track(), plain)


def test_a_repaired_schedule_still_ends_on_the_run_build() -> None:
    models = _models("4.3.1", ("3.9.2",))
    cfg = _cfg(models)
    steps = fuzz.schedule(models, 21, 0, cfg)
    seed = fuzz.schedule_seed(21, 0)
    cut = tuple(s for s in steps if s.kind != "upgrade")  # a shrink that dropped them all
    fixed = fuzz.repairer(models, seed)(cut)
    assert fixed is not None
    assert [s for s in fixed if s.kind == "upgrade"]
    _replay(models, seed, fixed, cfg)


def test_births_default_and_bad_flags() -> None:
    catalog = ("3.6.2", "3.7.2", "3.8.1", "3.9.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2",
               "4.3.1", "4.4.0")
    assert default_births("4.3.1", catalog) == ("3.9.2", "4.0.2", "4.1.2", "4.2.2")
    assert default_births("4.0.2", catalog) == ("3.9.2",)
    assert fuzz.parse_births("4.3.1", "3.9.2, 4.0.2") == ("3.9.2", "4.0.2")
    for bad in ("4.3.0", "4.4.0", "x", "2.8.0"):
        with pytest.raises(ValueError):
            fuzz.parse_births("4.3.1", bad)
    with pytest.raises(UsageError):
        options.upgrade_chance("fuzz", "1.5")
    assert options.upgrade_chance("fuzz", "0.25") == 0.25
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    fuzz_cli.add_subcommands(sub)
    args = parser.parse_args(["fuzz", "--seed", "1", "--runs", "1", "--upgrades", "2"])
    with pytest.raises(UsageError, match="--upgrades"):
        fuzz_cli.parse_args(args)
