"""The schedules a campaign generates: run ``index``'s schedule on its own generated
cluster (``schedule``, ``schedule_seed``), the model it is generated and shrunk against
(``CampaignModels``, ``models_of``, ``repairer``), and the model-guided choice of which
to run (``target_predicate``)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.search.fuzz.config import gen_config
from harness.search.fuzz.scenario import CLUSTERS, base_scenario, scenario_yaml
from harness.search.shrink import Steps
from reference.search import fuzzgen
from reference.search.generators import Builds, draw_birth, draw_log_dirs
from reference.search.recovery import with_tail
from reference.search.tiered import draw_tiered, tiered_weights


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
        birth = new_model.draw_birth(drawn, cfg)
        cluster = fuzzgen.draw_cluster(drawn, new_model.elr_choices_of(birth),
                                       traffic=cfg.traffic, birth=birth,
                                       log_dirs=new_model.draw_log_dirs(drawn, cfg, birth))
        if cluster.traffic is not None and birth is None:  # uploads need records
            cluster = dataclasses.replace(cluster, tiered=draw_tiered(
                drawn, cfg.tiered, new_model.build.version))
    elif cfg.traffic:
        cluster = dataclasses.replace(fuzzgen.BASE_CLUSTER, traffic=fuzzgen.draw_traffic(
            drawn, fuzzgen.BASE_CLUSTER.partitions))
    stream = f"{seed}:{index}" if variant == 0 else f"{seed}:{index}:{variant}"
    if cluster is None:
        CLUSTERS.by_seed.pop(sseed, None)
        CLUSTERS.current = None
        return fuzzgen.generate(new_model, stream, cfg)
    CLUSTERS.by_seed[sseed] = CLUSTERS.current = cluster
    return fuzzgen.generate(models_of(new_model, sseed), stream, config_of(new_model, cfg,
                                                                           cluster))


def config_of(new_model: Callable[[], Any], cfg: fuzzgen.GenConfig,
              cluster: fuzzgen.Cluster | None) -> fuzzgen.GenConfig:
    """``cfg`` for a schedule on ``cluster``: its log directories (move_replica_dir and
    fail_log_dir only with several), and with the run's builds (``cfg.builds``, the
    campaign's: `fuzz` and `hunt` pass them), their birth the cluster's (born on an older
    build, or on the run's), as a campaign's model factory knows them; on a tiered
    cluster, with the tiered weights (reference/search/tiered.py ``tiered_weights``)."""
    cfg = dataclasses.replace(cfg, log_dirs=cluster.log_dirs if cluster is not None else 1)
    if cluster is not None and cluster.tiered is not None:
        cfg = dataclasses.replace(cfg, weights=tiered_weights(cfg.weight_of()))
    if not isinstance(new_model, CampaignModels) or cfg.builds is None:
        return cfg
    return dataclasses.replace(cfg, builds=new_model.builds_of(cluster))


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


def repairer(new_model: Callable[[], Any], seed: int | None = None, tail: bool = False
             ) -> Callable[[Steps], Steps | None]:
    """Drop the steps a shrink candidate made invalid, until the generator's rules hold
    (no count bound: merged produces may exceed the generator's counts). ``seed``: the
    schedule's scenario seed (its cluster's model; see ``models_of``). With ``tail``
    (the hunt's mutations: a schedule's body, edited), the valid steps end with the
    recovery tail computed on the model after them (reference/search/recovery.py
    ``with_tail``), as a generated schedule does."""
    factory = models_of(new_model, seed)

    def repair(steps: Steps) -> Steps | None:
        cluster = CLUSTERS.of(seed) if seed is not None else CLUSTERS.current
        base = gen_config(max_count=10_000)
        if isinstance(new_model, CampaignModels):  # upgrade and feature steps are kept
            base = dataclasses.replace(base, builds=new_model.builds_of(None))
        cfg = config_of(new_model, base, cluster)
        cur = tuple(steps)
        while cur:
            bad = fuzzgen.validate(factory, cur, cfg)
            if bad is None and tail:
                done = with_tail(factory, cur, cfg)
                return done if fuzzgen.validate(factory, done, cfg) is None else None
            if bad is None:
                # The nodes an edit left on an older build brought to the run's again.
                done = fuzzgen.finish_upgrades(factory, cur, cfg)
                return done if fuzzgen.validate(factory, done, cfg) is None else cur
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

    def __init__(self, build: Any, births: Mapping[str, Any] | None = None,
                 catalog: Sequence[str] = ()) -> None:
        self.build = build
        #: The older builds a cluster may be born on (resolved: version -> Build), and
        #: every version an upgrade may name (the run's and the births at least).
        self.births: dict[str, Any] = dict(births or {})
        self.catalog = tuple(dict.fromkeys((*catalog, build.version, *self.births)))
        self._scenarios: dict[fuzzgen.Cluster, tuple[Any, str, bool]] = {}

    def builds_of(self, cluster: fuzzgen.Cluster | None) -> Builds:
        """The builds of a schedule on ``cluster`` (born on its birth build or the run's)."""
        birth = cluster.birth if cluster is not None and cluster.birth else self.build.version
        return Builds(self.build.version, birth, self.catalog)

    def draw_birth(self, drawn: int | str, cfg: fuzzgen.GenConfig) -> str | None:
        """The older build the schedule ``drawn`` is born on (None: the run's)."""
        births = [v for v in cfg.births if v in self.births]
        return draw_birth(drawn, births, cfg.upgrades)

    def draw_log_dirs(self, drawn: int | str, cfg: fuzzgen.GenConfig,
                      birth: str | None) -> int:
        """The log directories per broker of the schedule ``drawn`` (1 on a build before
        3.7, whose loader refuses several: generators/logdirs.py)."""
        return draw_log_dirs(drawn, self.build_of(birth).version, cfg.log_dirs_chance)

    def build_of(self, birth: str | None) -> Any:
        return self.births[birth] if birth else self.build

    @property
    def elr_choices(self) -> tuple[bool | None, ...]:
        """ELR on and off where the build can be formatted either way (4.0+), else its
        default (the build decides: `cluster.elr` on a build without it is refused)."""
        return self.elr_choices_of(None)

    def elr_choices_of(self, birth: str | None) -> tuple[bool | None, ...]:
        """``elr_choices`` of the build the cluster is born on."""
        return (True, False) if self.build_of(birth).features.elr else (None,)

    def _scenario(self, cluster: fuzzgen.Cluster) -> tuple[Any, str, bool]:
        from harness.run.runner import choose_profile, elr_enabled
        if cluster not in self._scenarios:
            sc = base_scenario("fuzz-model", cluster)
            born = self.build_of(cluster.birth)
            self._scenarios[cluster] = (sc, choose_profile(sc, born, None),
                                        elr_enabled(sc, born))
        return self._scenarios[cluster]

    def for_cluster(self, cluster: fuzzgen.Cluster) -> Any:
        """The model of ``cluster``, under its traffic when it has some (the traffic goes
        on after every step: ``fuzzgen.UnderTraffic``)."""
        from harness.judge.lanes import lanes, single
        from harness.run.runner import Runner
        sc, profile, elr = self._scenario(dataclasses.replace(cluster, traffic=None))
        # Born on an older build: the rules follow the active controller's build, as the
        # run's model does once its steps upgrade nodes (runner.follows_builds).
        follow = cluster.birth is not None
        if single(sc):
            model = Runner.model_for(sc, profile, elr, follow_builds=follow)
        else:
            model = fuzzgen.PartitionModels([Runner.model_for(ln.scenario, profile, elr,
                                                              follow_builds=follow)
                                             for ln in lanes(sc)])
        return fuzzgen.under_traffic(lambda: model, cluster.traffic)()

    def __call__(self) -> Any:
        return self.for_cluster(CLUSTERS.current or fuzzgen.BASE_CLUSTER)


def model_factory(build: Any, births: Mapping[str, Any] | None = None,
                  catalog: Sequence[str] = ()) -> CampaignModels:
    """The runner's model of the base scenario on this build (profile and ELR as a run
    of it would have them), and of each generated cluster (``CampaignModels``), born on
    the build or one of ``births`` (resolved older builds)."""
    return CampaignModels(build, births, catalog)
