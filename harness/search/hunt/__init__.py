"""`kafka-chaos hunt`: a coverage-guided campaign over several builds (issue 35, items 2-3;
docs/HUNT.md).

Per build, the fuzz campaign (harness/search/fuzz/ ``Campaign``) runs as `kafka-chaos fuzz`
runs it: schedules from the generator, failures de-duplicated by signature, each new one
re-run (``confirm``) and shrunk once. The hunt adds, through the Campaign's hooks (``source``,
``first_index``, ``after_generated``), one module per job:

- state.py: the command's input, the settings (``HuntConfig``) and the campaign state with
  its file DIR/hunt-state.json (``load_state``: resume, or refuse another seed or settings);
- reach.py: coverage, what a run reached (KIP-966 transitions, trace rules, cited
  deviations: ``Reach``, ``reach_of_run``);
- classification.py: the class of each de-duplicated failure (``classify``, rules 1-7) and
  the reader of a run's kip axis;
- campaign.py: the campaign loop (``hunt``, ``BuildHunt``, ``BuildPlan``): the corpus and its
  mutations, directed schedules, coverage and failures absorbed into the state;
- summary.py: DIR/hunt.json, DIR/hunt.md and the table the command prints.

This package re-exports their public names, so ``harness.search.hunt.X`` works as it did
when the hunt was one module.
"""

from harness.search.hunt.campaign import (
    DIRECT_PROBES,
    MUTATIONS,
    BuildHunt,
    BuildPlan,
    hunt,
    mutate_schedule,
)
from harness.search.hunt.classification import (
    CLASSES,
    HWM_LAG,
    Classification,
    build_deviation_ids,
    classify,
    error_key,
    hwm_lag_outlived,
    kip_of_meta,
    kip_of_run,
    known_bugs_of,
    replication_race,
)
from harness.search.hunt.reach import (
    RULE_NAMES,
    TRANSITION_NAMES,
    Reach,
    reach_of_outcome,
    reach_of_run,
    rules_reached,
)
from harness.search.hunt.state import (
    DIRECT_SHARE,
    MUTATE_SHARE,
    STATE_FILE,
    STATE_VERSION,
    BuildState,
    CorpusEntry,
    HuntConfig,
    HuntState,
    Known,
    catalog_builds,
    load_state,
    parse_budget,
    parse_builds,
    read_state,
    resume_config,
    save_state,
)
from harness.search.hunt.summary import (
    build_summary,
    deviations_text,
    summary_table,
    write_summary,
)

__all__ = [
    # state.py
    "STATE_FILE", "STATE_VERSION", "MUTATE_SHARE", "DIRECT_SHARE", "catalog_builds",
    "parse_builds", "parse_budget", "HuntConfig", "CorpusEntry", "Known", "BuildState",
    "HuntState", "read_state", "load_state", "resume_config", "save_state",
    # reach.py
    "RULE_NAMES", "TRANSITION_NAMES", "Reach", "rules_reached", "reach_of_outcome",
    "reach_of_run",
    # classification.py
    "CLASSES", "HWM_LAG", "Classification", "build_deviation_ids", "classify", "known_bugs_of",
    "kip_of_run", "kip_of_meta", "error_key", "replication_race",
    "hwm_lag_outlived",
    # campaign.py
    "DIRECT_PROBES", "MUTATIONS", "mutate_schedule", "BuildPlan", "BuildHunt", "hunt",
    # summary.py
    "build_summary", "write_summary", "deviations_text", "summary_table",
]
