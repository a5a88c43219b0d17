"""`kafka-chaos hunt`: a coverage-guided campaign over several builds (issue 35; the logic:
harness/search/hunt/, the classification rule in its classification.py; docs/HUNT.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli import options
from harness.cluster.backends import BACKENDS
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("hunt", help="coverage-guided campaign over several builds: failures "
                                      "de-duplicated, confirmed, shrunk and classified; "
                                      "resumable (--campaign-dir)")
    cmd.add_argument("--kafka-version", help="builds, comma-separated (e.g. 4.0.2,4.3.1), "
                                             "each one of the catalog's builds")
    cmd.add_argument("--builds", help="`all`: every build of the catalog, newest patch of each "
                                      "release line")
    cmd.add_argument("--budget", help="time PER BUILD: no new generated run starts after it "
                                      "(30m, 90s, 1h30m); a shrink started before may finish "
                                      "after it")
    cmd.add_argument("--seed", required=True, help="campaign seed (0..2^63-1)")
    cmd.add_argument("--campaign-dir", type=Path,
                     help="campaign state, corpus and summary (hunt.json, hunt.md); the same "
                          "directory resumes the campaign (default runs/hunt-s<SEED>)")
    cmd.add_argument("--runs-dir", type=Path,
                     help="run histories (default CAMPAIGN_DIR/runs; with --master a path "
                          "every executor shares)")
    cmd.add_argument("--backend", default="local", choices=BACKENDS)
    options.add_generation_options(cmd, shrink_attempts=12, shrink_budget="5m")
    cmd.add_argument("--direct-share", default="0.25",
                     help="chance that an index not mutating runs a directed schedule: while "
                          "a KIP-966 transition is not reached on the build, the first of "
                          "the index's candidates whose model shows it for sure (0 turns "
                          "it off; default 0.25)")
    cmd.add_argument("--jobs", type=options.jobs_count, default=1,
                     help="generated runs side by side, one cluster each (default 1)")
    options.add_master_option(cmd)
    cmd.set_defaults(func=_hunt)


def _int(text: str, flag: str, lo: int, hi: int) -> int:
    return options.whole_number("hunt", flag, text, lo, hi)


def _share(text: str, flag: str) -> float:
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise UsageError(f"hunt: {flag} {text!r}: give a chance between 0 and 1 (e.g. 0.25)")
    return share


def parse_args(args: argparse.Namespace) -> tuple[Any, float, tuple[str, ...]]:
    """Every flag checked before a build is resolved or a cluster starts."""
    from harness.search import fuzz, hunt
    versions = hunt.parse_builds(args.kafka_version, args.builds)
    budget = hunt.parse_budget(args.budget)
    seed = _int(args.seed, "--seed", 0, 2**63 - 1)
    try:
        weights = fuzz.parse_weights(args.weights) if args.weights else None
        shrink_budget = fuzz.parse_duration(args.shrink_budget)
    except ValueError as exc:
        flag = "--weights" if "weight" in str(exc) or "kind" in str(exc) else "--shrink-budget"
        raise UsageError(f"hunt: {flag}: {exc}") from None
    step_timeout = options.step_timeout("hunt", args.step_timeout)
    cfg = hunt.HuntConfig(seed=seed, budget_s=budget, length=_int(args.steps, "--steps", 1, 100),
                          weights=weights, confirm=_int(args.confirm, "--confirm", 0, 20),
                          shrink_attempts=_int(args.shrink_attempts, "--shrink-attempts", 1,
                                               1000),
                          shrink_budget_s=shrink_budget, traffic=args.traffic,
                          upgrades=options.upgrade_chance("hunt", args.upgrades),
                          births=args.births or "",
                          log_dirs=options.upgrade_chance("hunt", args.log_dirs,
                                                          "--log-dirs"),
                          tiered=options.tiered_chance("hunt", args.tiered, args.traffic),
                          direct_share=_share(args.direct_share, "--direct-share"),
                          resume_defaults=frozenset(
                              key for key, given in (("upgrades", args.upgrades),
                                                     ("births", args.births),
                                                     ("log_dirs", args.log_dirs),
                                                     ("tiered", args.tiered))
                              if given is None))
    return cfg, step_timeout, versions


def _hunt(args: argparse.Namespace) -> int:
    from harness.cluster import builds
    from harness.infra import progress
    from harness.search import fuzz, hunt
    cfg, step_timeout, versions = parse_args(args)
    campaign_dir: Path = args.campaign_dir or Path("runs") / f"hunt-s{cfg.seed}"
    cfg = hunt.resume_config(campaign_dir, cfg)  # flags not given: the campaign's own
    state = hunt.load_state(campaign_dir, cfg)  # another seed or settings: refused now
    runs_dir: Path = args.runs_dir or campaign_dir / "runs"
    options.check_runs_dir(runs_dir)
    options.check_master(args.master)
    resolved = [builds.resolve(v) for v in versions]
    births: dict[str, dict[str, Any]] = {}
    for build in resolved:
        try:
            wanted = fuzz.parse_births(build.version, cfg.births)
        except ValueError as exc:
            raise UsageError(f"hunt: {exc}") from None
        births[build.version] = fuzz.resolve_births(build, wanted, cfg.upgrades)
    progress.say(f"hunt: builds {', '.join(versions)}, seed {cfg.seed}, budget "
                 f"{cfg.budget_s:.0f} s per build, campaign {campaign_dir}, runs in {runs_dir}")
    spark = options.spark_runs(args.master)
    try:
        plans = []
        for build in resolved:
            schedules = campaign_dir / build.version / "schedules"
            schedules.mkdir(parents=True, exist_ok=True)
            born = births[build.version]
            models = fuzz.model_factory(build, born, (build.version, *born))
            if spark is not None:
                run = fuzz.spark_runner(spark, build, args.backend, runs_dir.resolve(),
                                        schedules, step_timeout, births=born)
                plan = hunt.BuildPlan(build.version, models, run,
                                      width=spark.slots, on_interrupt=spark.cancel)
            else:
                run = fuzz.real_runner(build, args.backend, runs_dir, schedules, step_timeout,
                                       births=born)
                plan = hunt.BuildPlan(build.version, models, run, width=args.jobs)
            plans.append(plan)
        state = hunt.hunt(cfg, plans, campaign_dir, say=progress.say, state=state)
    finally:
        if spark:
            spark.stop()
    print(hunt.summary_table([state.builds[v] for v in versions if v in state.builds]))
    print(f"summary: {campaign_dir / 'hunt.md'}, {campaign_dir / 'hunt.json'}; state: "
          f"{campaign_dir / hunt.STATE_FILE}")
    write_report(campaign_dir, runs_dir, progress.say)
    known = [k for v in versions if v in state.builds for k in state.builds[v].known]
    return 1 if any(k.cls != "harness-error" for k in known) else 2 if known else 0


def write_report(campaign_dir: Path, runs_dir: Path, say: Any) -> bool:
    """The campaign report (report.html, .md, .json in the campaign dir, on a local Spark
    session stopped after it). Its failure is said and loses nothing: the state and the summary
    are written before it."""
    from harness.search.hunt import STATE_FILE
    try:
        from harness.report.campaign import make_campaign_report
        make_campaign_report(campaign_dir, runs_dir=runs_dir)
    except Exception as exc:  # noqa: BLE001 - the campaign's results are already safe
        say(f"hunt: the campaign report could not be built ({type(exc).__name__}: {exc}); the "
            f"campaign's results are kept in {campaign_dir / STATE_FILE}, hunt.json and "
            f"hunt.md; build the report again with: kafka-chaos report --campaign {campaign_dir}")
        return False
    say(f"hunt: campaign report {campaign_dir / 'report.html'} (report.md, report.json)")
    return True
