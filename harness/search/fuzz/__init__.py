"""`kafka-chaos fuzz`: generated schedules run through the normal Runner (issue 13).

A generated schedule (reference/search/fuzzgen.py) becomes a scenario file (YAML) on the
cluster generated for it (``schedule``: brokers, controllers, replicas, partitions, min
ISR, unclean election, ELR where the build allows both; ``gen_config(clusters=False)``:
the fixed BASE below), loaded by the same loader as `kafka-chaos run`, so it IS a
scenario: the run is a normal history judged on every axis, and the file can be handed
to `kafka-chaos run`. A run whose axes are not all as expected (no declaration: clean)
is a failure with a signature (``signature``); the campaign de-duplicates failures by
signature, re-runs a new one to tell a reproducible failure from a flaky one, and
shrinks a reproducible one (harness/search/shrink.py) to a minimal scenario written beside
the failing run's history (``minimal.yaml``).

The campaign logic takes the function that runs a schedule as a parameter (``RunFn``);
the command gives it the real one (``real_runner``).

The package, by job (the names below are re-exported here, the path callers import):

- scenario.py: the fixed BASE cluster, the clusters drawn in this process (``CLUSTERS``)
  and the scenario file of a schedule (``scenario_yaml``);
- config.py: the generator's and the campaign's settings, and the command line's
  durations and weights;
- schedules.py: the schedule of a run and its cluster, the models it is generated and
  shrunk against (``CampaignModels``), the --target choice;
- outcome.py: what one run found (``Outcome``, its ``signature``) and the real runners;
- result.py: a campaign's ``Failure``s and ``CampaignResult``;
- campaign.py: the campaign loop (``Campaign``: run, confirm, shrink).
"""

from __future__ import annotations

# No import-time registration here: the order of these imports changes nothing.
from harness.search.fuzz.campaign import Campaign
from harness.search.fuzz.config import (
    CampaignConfig,
    gen_config,
    parse_births,
    parse_duration,
    parse_weights,
    resolve_births,
)
from harness.search.fuzz.outcome import (
    Outcome,
    RunFn,
    axis_names,
    born_on,
    prefer_for,
    real_runner,
    reasons,
    signature,
    signature_text,
    spark_runner,
)
from harness.search.fuzz.result import CampaignResult, Failure
from harness.search.fuzz.scenario import (
    BASE,
    CLUSTERS,
    Clusters,
    base_scenario,
    cluster_doc,
    scenario_yaml,
)
from harness.search.fuzz.schedules import (
    CampaignModels,
    config_of,
    model_factory,
    models_of,
    repairer,
    schedule,
    schedule_seed,
    target_predicate,
)

__all__ = [
    "BASE", "CLUSTERS", "Campaign", "CampaignConfig", "CampaignModels", "CampaignResult",
    "Clusters", "Failure", "Outcome", "RunFn", "axis_names", "base_scenario", "born_on",
    "cluster_doc", "config_of", "gen_config", "model_factory", "models_of", "parse_births",
    "parse_duration", "parse_weights", "resolve_births",
    "prefer_for", "real_runner", "reasons", "repairer", "scenario_yaml", "schedule",
    "schedule_seed", "signature", "signature_text", "spark_runner", "target_predicate",
]
