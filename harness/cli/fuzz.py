"""`kafka-chaos fuzz`: generated schedules on a real cluster, failures shrunk (issue 13)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness.cli import options
from harness.infra.errors import UsageError

if TYPE_CHECKING:
    from harness.search.fuzz import CampaignConfig

MAX_RUNS = 100_000


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("fuzz", help="random schedules valid in the model's state, run and "
                                      "judged on every axis; failures shrunk to a scenario")
    options.add_build_options(cmd)
    cmd.add_argument("--runs", help="generated runs (no new run starts after them)")
    cmd.add_argument("--budget", help="campaign time: no new generated run starts after it "
                                      "(30m, 90s, 1h30m)")
    cmd.add_argument("--seed", required=True, help="campaign seed (0..2^63-1): the same seed "
                                                   "gives the same schedules")
    options.add_generation_options(cmd, shrink_attempts=30, shrink_budget="20m")
    cmd.add_argument("--no-shrink", action="store_true", help="report failures unshrunk")
    cmd.add_argument("--guided", action="store_true",
                     help="model-guided: run only schedules the build's model predicts lose "
                          "acks=all records (the rest are skipped, not run)")
    cmd.add_argument("--target", default="",
                     help="run only schedules the model predicts exercise these rules: "
                          "mutant names, comma-separated (kafka-chaos mutate lists them; "
                          "a rule no run of the build covers is the one to target)")
    cmd.add_argument("--jobs", type=options.jobs_count, default=1,
                     help="generated runs side by side, one cluster each (default 1; `auto`: "
                          "2 per core as memory allows); re-runs and shrinking go one at a time")
    options.add_master_option(cmd)
    cmd.add_argument("--print", dest="print_only", action="store_true",
                     help="print the first schedules as scenario files and start nothing")
    cmd.set_defaults(func=_fuzz)


def _int(text: str, flag: str, lo: int, hi: int) -> int:
    return options.whole_number("fuzz", flag, text, lo, hi)


def parse_args(args: argparse.Namespace) -> tuple[CampaignConfig, float]:
    """Every flag checked before a build is resolved or a cluster starts."""
    from harness.search import fuzz
    if (args.runs is None) == (args.budget is None):
        raise UsageError("fuzz: give exactly one of --runs N or --budget DURATION")
    runs = _int(args.runs, "--runs", 1, MAX_RUNS) if args.runs is not None else None
    try:
        budget = fuzz.parse_duration(args.budget) if args.budget is not None else None
        shrink_budget = fuzz.parse_duration(args.shrink_budget)
        weights = fuzz.parse_weights(args.weights)
    except ValueError as exc:
        raise UsageError(f"fuzz: {exc}") from None
    seed = _int(args.seed, "--seed", 0, 2**63 - 1)
    step_timeout = options.step_timeout("fuzz", args.step_timeout)
    return fuzz.CampaignConfig(
        seed=seed, runs=runs, budget_s=budget,
        gen=fuzz.gen_config(length=_int(args.steps, "--steps", 1, 100), weights=weights,
                            traffic=args.traffic,
                            upgrades=options.upgrade_chance("fuzz", args.upgrades),
                            log_dirs_chance=options.upgrade_chance("fuzz", args.log_dirs,
                                                                   "--log-dirs"),
                            tiered=options.tiered_chance("fuzz", args.tiered, args.traffic)),
        confirm=_int(args.confirm, "--confirm", 0, 20), shrink=not args.no_shrink,
        shrink_attempts=_int(args.shrink_attempts, "--shrink-attempts", 1, 1000),
        shrink_budget_s=shrink_budget, guided=args.guided,
        targets=_targets(args.target)), step_timeout


def with_births(cfg: CampaignConfig, build: Any, births_text: str, command: str
                ) -> tuple[CampaignConfig, Any]:
    """The campaign's generator settings with the run's builds (``Builds``: the build,
    the births --births names or the default ones, resolved) and its model factory."""
    import dataclasses

    from harness.search import fuzz
    from reference.search.generators import Builds
    try:
        births = fuzz.parse_births(build.version, births_text)
    except ValueError as exc:
        raise UsageError(f"{command}: {exc}") from None
    resolved = fuzz.resolve_births(build, births, cfg.gen.upgrades)
    new_model = fuzz.model_factory(build, resolved, (build.version, *resolved))
    gen = dataclasses.replace(cfg.gen, builds=Builds(build.version, build.version,
                                                     new_model.catalog),
                              births=tuple(resolved))
    return dataclasses.replace(cfg, gen=gen), new_model


def _targets(text: str) -> tuple[str, ...]:
    from reference.releases.mutants import MUTANTS
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    known = [m.name for m in MUTANTS]
    for n in names:
        if n not in known:
            raise UsageError(f"fuzz: --target {n!r} is not a rule's mutant; choose from "
                             + ", ".join(known))
    return names


def _fuzz(args: argparse.Namespace) -> int:
    from harness.cluster import builds
    from harness.infra import progress
    from harness.search import fuzz
    cfg, step_timeout = parse_args(args)
    options.check_runs_dir(args.runs_dir)
    options.check_master(args.master)
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    cfg, new_model = with_births(cfg, build, args.births or "", "fuzz")
    if args.print_only:
        import itertools
        printer = fuzz.Campaign(cfg, new_model, _no_run, args.runs_dir)
        if cfg.targets:
            printer.target = fuzz.target_predicate(build, cfg.targets)
        gen = printer.schedules()
        for index, steps in itertools.islice(gen, cfg.runs or 1):
            print(f"# run {index}\n" + fuzz.scenario_yaml(
                f"fuzz-s{cfg.seed}-{index}", fuzz.schedule_seed(cfg.seed, index), steps))
        if printer.result.stopped and not printer.result.stopped.endswith("runs done"):
            progress.say(f"fuzz: {printer.result.stopped}")
        return 0
    out_dir = args.runs_dir / f"fuzz-{build.version}-s{cfg.seed}"
    schedules = out_dir / "schedules"
    schedules.mkdir(parents=True, exist_ok=True)
    progress.say(f"fuzz: Kafka {build.version}, seed {cfg.seed}, "
                 + (f"{cfg.runs} runs" if cfg.runs else f"budget {cfg.budget_s:.0f} s")
                 + f", {cfg.gen.length} steps + tail"
                 + (", under client traffic" if cfg.gen.traffic else "")
                 + (f", born on {','.join(cfg.gen.births)} with chance {cfg.gen.upgrades}"
                    if cfg.gen.upgrades and cfg.gen.births else "")
                 + (f", several log dirs with chance {cfg.gen.log_dirs_chance}"
                    if cfg.gen.log_dirs_chance else "") + ", weights "
                 + ",".join(f"{k}={v}" for k, v in cfg.gen.weight_of().items()))
    spark = options.spark_runs(args.master)
    try:
        result = _campaign(args, cfg, build, new_model, out_dir, step_timeout, spark).run()
    finally:
        if spark:
            spark.stop()
    summary = result.to_json()
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}, indent=1))
    for f in result.failures:
        print(f"FAILURE {fuzz.signature_text(f.signature)}: {f.status} "
              f"({f.hits}/{f.tries} runs of {f.name}), {len(f.runs)} occurrence(s); "
              f"minimal: {f.minimal or '-'}"
              + (f" ({len(f.minimal_steps)} steps)" if f.minimal_steps is not None else "")
              + (f", signature in {f.minimal_hits}/{f.minimal_tries} re-runs of it"
                 if f.minimal_tries else ""))
        if f.reason:
            print(f"  why: {_short(f.reason)}")
    print(f"summary: {out_dir / 'fuzz-summary.json'}")
    return 1 if result.failures else 2 if result.errors else 0


def _campaign(args: argparse.Namespace, cfg: CampaignConfig, build: Any, new_model: Any,
              out_dir: Path, step_timeout: float, spark: Any) -> Any:
    """The campaign on this machine (--jobs clusters side by side) or on Spark executors,
    limited to the --target rules' schedules when given."""
    from harness.search import fuzz
    campaign = _make_campaign(args, cfg, build, new_model, out_dir, step_timeout, spark)
    if cfg.targets:
        campaign.target = fuzz.target_predicate(build, cfg.targets)
    return campaign


def _make_campaign(args: argparse.Namespace, cfg: CampaignConfig, build: Any, new_model: Any,
                   out_dir: Path, step_timeout: float, spark: Any) -> Any:
    from harness.infra import progress
    from harness.search import fuzz
    schedules = out_dir / "schedules"
    if spark is not None:
        run = fuzz.spark_runner(spark, build, args.backend, args.runs_dir.resolve(), schedules,
                                step_timeout, births=new_model.births)
        campaign = fuzz.Campaign(cfg, new_model, run, out_dir, say=progress.say,
                                 width=spark.slots)
        campaign.on_interrupt = spark.cancel
        return campaign
    steps_said = (lambda st: progress.say(f"  -> {st.verdict}"
                                          + (f": {st.reason}" if st.reason else ""))
                  ) if args.jobs == 1 else (lambda st: None)
    run = fuzz.real_runner(build, args.backend, args.runs_dir, schedules, step_timeout,
                           on_step=steps_said, births=new_model.births)
    return fuzz.Campaign(cfg, new_model, run, out_dir, say=progress.say, width=args.jobs)


def _short(text: str, most: int = 600) -> str:
    return text if len(text) <= most else text[:most] + " ..."


def _no_run(name: str, seed: int, steps: tuple[Any, ...]) -> NoReturn:
    raise AssertionError("--print runs nothing")
