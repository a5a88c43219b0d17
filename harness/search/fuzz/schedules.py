"""The schedules a campaign generates: run ``index``'s schedule on its own generated
cluster (``schedule``, ``schedule_seed``), the model it is generated and shrunk against
(``CampaignModels``, ``models_of``, ``repairer``), and the model-guided choice of which
to run (``target_predicate``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

from harness.search.fuzz.config import gen_config
from harness.search.fuzz.scenario import CLUSTERS, base_scenario, scenario_yaml
from harness.search.shrink import Steps
from reference.search import fuzzgen


def schedule_seed(seed: int, index: int) -> int:
    """The scenario seed of run ``index`` of a campaign (record ids derive from it)."""
    return (seed * 1_000_003 + index) % (2**63)


def schedule(new_model: Callable[[], Any], seed: int, index: int,
             cfg: fuzzgen.GenConfig, variant: int = 0) -> Steps:
    """Run ``index``'s schedule: the same for the same (seed, index, config, build). With
    ``cfg.clusters`` and a campaign's model factory (``CampaignModels``), the schedule gets
    a cluster of its own, drawn from its scenario seed among what the build allows, and
    is generated against that cluster's model; the cluster is kept for the scenario
    file (``scenario_yaml``). With ``cfg.traffic`` the schedule runs under traffic drawn
    from the same seed (kept with its cluster, on BASE without ``cfg.clusters``), and is
    generated against the model under it (``fuzzgen.under_traffic``). ``variant`` > 0: one
    of the index's other candidates (its cluster, traffic and steps drawn from streams of
    their own), for the same run (the hunt's directed schedules)."""
    sseed = schedule_seed(seed, index)
    drawn: int | str = sseed if variant == 0 else f"{sseed}:{variant}"
    cluster = None
    if cfg.clusters and isinstance(new_model, CampaignModels):
        cluster = fuzzgen.draw_cluster(drawn, new_model.elr_choices, traffic=cfg.traffic)
    elif cfg.traffic:
        cluster = dataclasses.replace(fuzzgen.BASE_CLUSTER, traffic=fuzzgen.draw_traffic(
            drawn, fuzzgen.BASE_CLUSTER.partitions))
    stream = f"{seed}:{index}" if variant == 0 else f"{seed}:{index}:{variant}"
    if cluster is None:
        CLUSTERS.by_seed.pop(sseed, None)
        CLUSTERS.current = None
        return fuzzgen.generate(new_model, stream, cfg)
    CLUSTERS.by_seed[sseed] = CLUSTERS.current = cluster
    return fuzzgen.generate(models_of(new_model, sseed), stream, cfg)


def models_of(new_model: Callable[[], Any], seed: int | None) -> Callable[[], Any]:
    """The model factory of the schedule with scenario seed ``seed`` (its generated
    cluster's, when ``schedule`` drew one for it, under its traffic if it has some);
    without a seed, ``new_model`` (a campaign's: the schedule it works on now)."""
    cluster = CLUSTERS.of(seed) if seed is not None else None
    if cluster is None:
        return new_model
    if not isinstance(new_model, CampaignModels):
        return fuzzgen.under_traffic(new_model, cluster.traffic)
    return functools.partial(new_model.for_cluster, cluster)


def repairer(new_model: Callable[[], Any], seed: int | None = None
             ) -> Callable[[Steps], Steps | None]:
    """Drop the steps a shrink candidate made invalid, until the generator's rules hold
    (no count bound: merged produces may exceed the generator's counts). ``seed``: the
    schedule's scenario seed (its cluster's model; see ``models_of``)."""
    cfg = gen_config(max_count=10_000)
    new_model = models_of(new_model, seed)

    def repair(steps: Steps) -> Steps | None:
        cur = tuple(steps)
        while cur:
            bad = fuzzgen.validate(new_model, cur, cfg)
            if bad is None:
                return cur
            cur = cur[:bad[0]] + cur[bad[0] + 1:]
        return None
    return repair


def target_predicate(build: Any, names: Sequence[str]) -> Callable[[Steps], bool]:
    """Whether a schedule's model, under the build's profile or kip966, parts from one of
    the named mutants' (mutate.predicted_kill): a run of it would exercise that rule."""
    from harness.run.runner import choose_profile
    from harness.scenario.loader import parse_scenario
    from harness.search.mutate import predicted_kill
    from reference.releases.catalog import get_profile
    from reference.releases.mutants import get_mutant
    mutants = [get_mutant(n) for n in names]

    def wanted(steps: Steps) -> bool:
        sc = parse_scenario(scenario_yaml("fuzz-target", 0, steps, cluster=CLUSTERS.current
                                          or fuzzgen.BASE_CLUSTER), "<fuzz-target>")
        profiles = [get_profile(choose_profile(sc, build, None)), get_profile("kip966")]
        return any(predicted_kill(sc, p, m) is not None for m in mutants for p in profiles)
    return wanted


class CampaignModels:
    """A campaign's models on one build: the runner's model of a generated cluster (its
    profile and ELR as a run of it would have them; one model per partition,
    harness/judge/lanes.py). Called without a cluster: the model of the schedule the
    campaign works on now (``CLUSTERS.current``; BASE before any)."""

    def __init__(self, build: Any) -> None:
        self.build = build
        self._scenarios: dict[fuzzgen.Cluster, tuple[Any, str, bool]] = {}

    @property
    def elr_choices(self) -> tuple[bool | None, ...]:
        """ELR on and off where the build can be formatted either way (4.0+), else its
        default (the build decides: `cluster.elr` on a build without it is refused)."""
        return (True, False) if self.build.features.elr else (None,)

    def _scenario(self, cluster: fuzzgen.Cluster) -> tuple[Any, str, bool]:
        from harness.run.runner import choose_profile, elr_enabled
        if cluster not in self._scenarios:
            sc = base_scenario("fuzz-model", cluster)
            self._scenarios[cluster] = (sc, choose_profile(sc, self.build, None),
                                        elr_enabled(sc, self.build))
        return self._scenarios[cluster]

    def for_cluster(self, cluster: fuzzgen.Cluster) -> Any:
        """The model of ``cluster``, under its traffic when it has some (the traffic goes
        on after every step: ``fuzzgen.UnderTraffic``)."""
        from harness.judge.lanes import lanes, single
        from harness.run.runner import Runner
        sc, profile, elr = self._scenario(dataclasses.replace(cluster, traffic=None))
        if single(sc):
            model = Runner.model_for(sc, profile, elr)
        else:
            model = fuzzgen.PartitionModels([Runner.model_for(ln.scenario, profile, elr)
                                             for ln in lanes(sc)])
        return fuzzgen.under_traffic(lambda: model, cluster.traffic)()

    def __call__(self) -> Any:
        return self.for_cluster(CLUSTERS.current or fuzzgen.BASE_CLUSTER)


def model_factory(build: Any) -> CampaignModels:
    """The runner's model of the base scenario on this build (profile and ELR as a run
    of it would have them), and of each generated cluster (``CampaignModels``)."""
    return CampaignModels(build)
