"""`kafka-chaos certify`: the scenario matrix, the upgrade path, a controller differential and
a hunt on a new build and its previous release, in one resumable campaign directory, and one
report of what changed (issue 46 items 1 and 3: harness/certify/, docs/CERTIFY.md).
Exit 0: no regression and no new finding; 1: some; 2: an error."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from harness.cli import options
from harness.infra.errors import UsageError

SCENARIOS = Path(__file__).resolve().parents[2] / "fixtures" / "scenarios"


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("certify", help="a new build against its previous release: matrix, "
                                         "upgrade path, diff and hunt in one resumable "
                                         "campaign; certify.md/.html/.json, junit.xml")
    cmd.add_argument("--kafka-version", help="the new build (a release); or --kafka-dist")
    cmd.add_argument("--kafka-dist", type=Path, help="the new build: a directory with libs/*.jar")
    cmd.add_argument("--previous", required=True, help="the previous release, e.g. 4.2.2")
    cmd.add_argument("--budget", default="2h", help="the whole campaign (default 2h), split by "
                                                    "the rule printed at the start")
    cmd.add_argument("--part-budget", help="override parts: matrix=10m,upgrade=5m,diff=2m,"
                                           "hunt=0 (the others share the rest)")
    cmd.add_argument("--campaign", type=Path, help="the campaign directory; the same one "
                                                   "resumes (default runs/certify-NEW-vs-OLD)")
    cmd.add_argument("--scenarios", type=Path, default=SCENARIOS,
                     help="the matrix's scenario files (default fixtures/scenarios)")
    cmd.add_argument("--seed", default="1", help="diff and hunt seed (default 1)")
    cmd.add_argument("--backend", default="local")
    cmd.add_argument("--step-timeout", default="30", help="seconds a step may take (default 30)")
    cmd.add_argument("--master", help="spread the campaign over a Spark cluster "
                                      "(spark://HOST:PORT): every cell, each build's diff and "
                                      "every hunt run a task, as many per worker as its --cores "
                                      "(python -m harness.certify.slots there); results shipped "
                                      "back into the campaign directory (docs/CERTIFY.md)")
    cmd.set_defaults(func=_certify)


def _certify(args: argparse.Namespace) -> int:
    from harness.certify import plan, render, state
    from harness.cluster import builds
    from harness.infra import procs, progress
    from harness.search.fuzz import parse_duration
    options.check_master(args.master)  # answers, before any build resolves
    if (args.kafka_version is None) == (args.kafka_dist is None):
        raise UsageError("certify: give the new build as --kafka-version V or --kafka-dist DIR")
    try:
        budget = parse_duration(args.budget)
        overrides = plan.parse_part_budget(args.part_budget, parse_duration)
        split = plan.split_budget(budget, overrides)
    except ValueError as exc:
        raise UsageError(f"certify: {exc}") from None
    seed = options.whole_number("certify", "--seed", args.seed, 0, 2**63 - 1)
    step_timeout = options.step_timeout("certify", args.step_timeout)
    scenario_files = sorted(args.scenarios.glob("*.yaml"))
    if not scenario_files:
        raise UsageError(f"certify: no scenario files (*.yaml) in {args.scenarios}")
    from harness.scenario.loader import load_scenario
    scenarios = [load_scenario(p) for p in scenario_files]  # a bad file fails first
    new = builds.resolve(args.kafka_version, args.kafka_dist)
    old = builds.resolve(args.previous)
    directory: Path = args.campaign or Path("runs") / f"certify-{new.version}-vs-{old.version}"
    settings = {"new": new.version, "old": old.version, "seed": seed,
                "kafka_dist": str(args.kafka_dist.resolve()) if args.kafka_dist else None}
    try:
        st = state.load(directory, settings)
    except state.SettingsMismatch as exc:
        raise UsageError(f"certify: {exc}") from None
    procs.install_exit_hooks()  # SIGTERM unwinds as Ctrl-C does, from the first line on
    runs = _spark_runs(args.master, directory)
    try:
        camp = _prepared(args, st, directory, scenarios, {"old": old, "new": new}, split,
                         budget, overrides, runs, step_timeout)
    except BaseException:
        if runs is not None:
            runs.stop()
        raise
    try:
        for part in plan.PARTS:
            camp.run_part(part)
    except KeyboardInterrupt:
        render.write(directory, st)
        progress.say(f"certify: interrupted; the partial report is in {directory}; the same "
                     "command resumes")
        raise
    finally:
        if runs is not None:
            runs.stop()
    m = render.write(directory, st)
    for line in m["top"]:
        print(line)
    print(f"report: {directory / 'certify.html'} (certify.md, certify.json, junit.xml)")
    a = m["answer"]
    return 1 if a["regressions"] or a["new_findings"] else 0


def _spark_runs(master: str | None, directory: Path) -> Any:
    """With --master, the Spark session (certify/spark.py: every item a task, retried
    elsewhere when its executor is lost, shipped back here); None on one machine."""
    if not master:
        return None
    from harness.certify.spark import MAX_ATTEMPTS
    from harness.infra import progress
    from harness.run.fanout import SparkRuns
    runs = SparkRuns(master, progress.say, max_failures=MAX_ATTEMPTS, ship=True,
                     app="kafka-chaos-certify")
    progress.say(f"certify: on {master}: {runs.slots} slot(s), items shipped back to "
                 f"{directory}; a task whose executor is lost runs again elsewhere "
                 f"(up to {MAX_ATTEMPTS} attempts)")
    return runs


def _prepared(args: argparse.Namespace, st: Any, directory: Path, scenarios: list[Any],
              blds: dict[str, Any], split: dict[str, float], budget: float,
              overrides: dict[str, float], runs: Any, step_timeout: float) -> Any:
    """The plan (made once, for the slots of the first call: one machine runs one cluster
    at a time, a Spark cluster as many as its executors' slots) and the campaign."""
    from harness.certify import state
    from harness.infra import progress
    if not st.plan:
        slots = runs.slots if runs is not None else 1
        st.plan = make_plan(scenarios, blds, directory, split, budget, overrides,
                            dist=args.kafka_dist is not None, slots=slots)
        progress.say(f"certify: a new campaign in {directory}")
    else:
        progress.say(f"certify: resuming {directory} (session {st.sessions + 1}; the plan and "
                     "budgets of its first call are kept)")
    st.sessions += 1
    # where each call ran, for the report's "Where:" line (render.where)
    st.plan.setdefault("where", []).append(args.master or "one machine")
    state.save(directory, st)
    for line in st.plan["rule"]:
        progress.say(f"certify: {line}")
    left = st.plan["left_out"]
    progress.say(f"certify: matrix {len(st.plan['matrix'])} scenarios planned "
                 f"({len(left['matrix'])} left out by the budget); upgrade "
                 f"{len(st.plan['upgrade'])} ({'; '.join(left['upgrade'].values()) or '-'})")
    if runs is None:
        from harness.certify.parts import Campaign
        return Campaign(directory, st, blds, progress.say, args.backend, step_timeout)
    from harness.certify.spark import SparkCampaign
    return SparkCampaign(directory, st, blds, progress.say, args.backend, step_timeout,
                         runs=runs)


def make_plan(scenarios: list[Any], blds: dict[str, Any], directory: Path,
              split: dict[str, float], budget: float,
              overrides: dict[str, float], dist: bool = False, slots: int = 1) -> dict[str, Any]:
    """The campaign's plan, made once (harness/certify/plan.py's rule): a part's scenarios
    fill its budget times ``slots``, the clusters that run at once."""
    from harness.certify import plan
    from harness.certify.upgrade import write_scenarios
    from harness.run.runner.requirements import requirement_gap
    from harness.scenario.loader import load_scenario
    versions = {r: b.version_tuple for r, b in blds.items()}
    gaps = {sc.path: {r: requirement_gap(sc, b) for r, b in blds.items()} for sc in scenarios}
    matrix, left = plan.plan_scenarios(scenarios, gaps, versions, split["matrix"] * slots)
    ups = [load_scenario(p) for p, _ in write_scenarios(directory / "upgrade" / "scenarios",
                                                        blds["old"].version,
                                                        blds["new"].version)]
    # each upgrade scenario runs on its birth build only (its requirements pin it)
    up_gaps = {sc.path: {r: requirement_gap(sc, b) for r, b in blds.items()} for sc in ups}
    upgrade, up_left = plan.plan_scenarios(ups, up_gaps, versions, split["upgrade"] * slots)
    not_possible = {sc.name: "not run: " + "; ".join(
        str(g) for g in up_gaps[sc.path].values() if g)
        for sc in ups if all(up_gaps[sc.path].values())}
    if dist:  # an `upgrade` step names a release the harness resolves, not a directory
        not_possible.update({p.name: "not run: the new build is a --kafka-dist directory; "
                             "an upgrade step names a release" for p in upgrade})
        upgrade = []
    return {"split": split, "slots": slots,
            "rule": plan.rule_lines(budget, split, overrides, slots),
            "overridden": sorted(overrides),
            "matrix": [p.to_json() for p in matrix], "upgrade": [p.to_json() for p in upgrade],
            "left_out": {"matrix": {p.name: "the budget" for p in left},
                         "upgrade": {**{p.name: "the budget" for p in up_left},
                                     **not_possible}}}
