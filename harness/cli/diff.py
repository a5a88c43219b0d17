"""`kafka-chaos diff`: the build's own controller code against the model, event by event
(issue 33: harness/differential/README.md, campaign.py). Exit 0: no finding; 1: findings
(each printed, shrunk, written under the run directory); 2: an error."""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from harness.cli import options
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("diff", help="random controller events on the build's own controller "
                                      "code, each compared with the model (release profile "
                                      "and kip966); findings shrunk and written")
    options.add_build_options(cmd)
    cmd.add_argument("--budget", default="60s", help="search time (30m, 90s, 1h30m; default 60s)")
    cmd.add_argument("--seed", default="1", help="campaign seed (0..2^63-1; default 1)")
    cmd.add_argument("--elr", choices=("auto", "on", "off", "default", "both"), default="auto",
                     help="ELR feature of the sessions (auto, the default: both where the "
                          "build can run either, 4.0+, else the build's; both: sessions "
                          "alternate on and off, each compared with its own profile; "
                          "default: the build's, on from 4.1)")
    cmd.add_argument("--min-isr", default="2", help="cluster min.insync.replicas (1..5)")
    cmd.add_argument("--lanes", default="8", help="independent 5-broker clusters per driver "
                                                  "session (1..50, default 8)")
    cmd.add_argument("--lane-events", default=None,
                     help="events per lane before a new session (10..100000; default 500, "
                          "with --coverage 150: a lane's session is the unit the coverage "
                          "feedback admits to its corpus, so sessions come more often)")
    cmd.add_argument("--workers", default="auto",
                     help="driver and model pairs searching at once, one process and JVM "
                          "each (auto, the default: one per core; 1 with --coverage); worker "
                          "0 runs the seed's events, the others seeds of their own")
    cmd.add_argument("--events", default=None,
                     help="stop the search after this many events (checked between "
                          "batches), or at the budget, whichever comes first: the same seed "
                          "and count meet the same events on any machine")
    cmd.add_argument("--no-shrink", action="store_true", help="report findings unshrunk")
    cmd.add_argument("--coverage", action="store_true",
                     help="run the search under the JaCoCo agent and report line and branch "
                          "coverage of the build's PartitionChangeBuilder, "
                          "PartitionReassignmentReplicas and ReplicationControlManager's "
                          "partition-changing methods (slower; coverage/ in the run dir); "
                          "coverage feeds the generator: a lane whose events set new probes "
                          "joins a corpus (corpus/ in the run dir), later lanes mutate it")
    cmd.add_argument("--mutate-share", default="50",
                     help="with --coverage: percent of lanes that run a mutation of corpus "
                          "entries (0..100, default 50)")
    cmd.add_argument("--feature-weight", default=None,
                     help="weight of a live ELR toggle (updateFeature "
                          "eligible.leader.replicas.version 0 or 1) per lane event, where the "
                          "build has the feature (other events weigh 0.2-3; default 0.05, "
                          "workload.FEATURE_WEIGHT; 0: no toggles)")
    cmd.add_argument("--base-vocabulary", action="store_true",
                     help="the generator without issue 44's wider vocabulary (log "
                          "directories, heartbeats, unregistration, cluster configs, "
                          "requests naming what is not there, queries): as before it")
    cmd.add_argument("--snapshot-rate", default="3",
                     help="percent of event batches (one event per lane) followed by a "
                          "snapshot point: the build's own snapshot loaded into fresh "
                          "managers that answer the next --snapshot-shadow events beside the "
                          "original; a difference is a 'snapshot:' finding (0..100, default 3; "
                          "0: none)")
    cmd.add_argument("--snapshot-shadow", default="96",
                     help="events the fresh managers of a snapshot point answer beside the "
                          "original, at most (1..100000, default 96; a difference or the next "
                          "snapshot point ends them sooner)")
    cmd.add_argument("--shrink-budget", default="90s", help="time per finding's shrink")
    cmd.add_argument("--shrink-attempts", default="400",
                     help="candidate sequences replayed per shrink (default 400)")
    cmd.add_argument("--replay", type=Path, metavar="FINDING",
                     help="instead of a campaign: replay one finding a campaign wrote "
                          "(RUN_DIR/findings/NN-<signature>.json): its events in one fresh "
                          "session of the build (--kafka-version, default the finding's "
                          "own) with the finding's settings and ELR, each answer compared "
                          "with the model and printed; exit 1 when its signature comes "
                          "again, 0 when not")
    cmd.set_defaults(func=_diff)


def _int(text: str, flag: str, lo: int, hi: int) -> int:
    return options.whole_number("diff", flag, text, lo, hi)


def _weight(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        weight = float(text)
    except ValueError:
        weight = -1.0
    if not 0 <= weight <= 100:
        raise UsageError(f"diff: --feature-weight must be a number from 0 to 100, not {text!r}")
    return weight


def parse_config(args: argparse.Namespace) -> object:
    """Every flag checked before a build is resolved or a JVM starts."""
    from harness.differential.campaign import Config
    from harness.search.fuzz import parse_duration
    try:
        budget = parse_duration(args.budget)
        shrink_budget = parse_duration(args.shrink_budget)
    except ValueError as exc:
        raise UsageError(f"diff: {exc}") from None
    lane_events = args.lane_events or ("150" if args.coverage else "500")
    return Config(seed=_int(args.seed, "--seed", 0, 2**63 - 1), budget_s=budget,
                  lanes=_int(args.lanes, "--lanes", 1, 50),
                  lane_events=_int(lane_events, "--lane-events", 10, 100_000),
                  mutate_share=_int(args.mutate_share, "--mutate-share", 0, 100) / 100,
                  min_isr=_int(args.min_isr, "--min-isr", 1, 5),
                  elr={"on": True, "off": False}.get(args.elr), elr_both=args.elr == "both",
                  shrink=not args.no_shrink,
                  shrink_attempts=_int(args.shrink_attempts, "--shrink-attempts", 1, 10_000),
                  shrink_budget_s=shrink_budget, coverage=args.coverage,
                  feature_weight=_weight(args.feature_weight),
                  max_events=None if args.events is None else
                  _int(args.events, "--events", 1, 10**9),
                  workers=_workers(args.workers, args.coverage),
                  wide=not args.base_vocabulary,
                  snapshot_rate=_int(args.snapshot_rate, "--snapshot-rate", 0, 100) / 100,
                  snapshot_shadow=_int(args.snapshot_shadow, "--snapshot-shadow", 1, 100_000))


def _workers(text: str, coverage: bool) -> int:
    """``--workers``: auto is one per core (os.cpu_count), 1 with coverage."""
    if text == "auto":
        return 1 if coverage else max(1, os.cpu_count() or 1)
    n = _int(text, "--workers", 1, 64)
    if coverage and n > 1:
        raise UsageError("diff: --coverage runs one worker (its corpus and JaCoCo data are "
                         "the campaign's): leave --workers out or give 1")
    return n


def for_build(cfg: Any, elr_flag: str, build_runs_either: bool) -> Any:
    """``--elr auto``: sessions alternate ELR on and off on a build a cluster can run
    either way (4.0+: ``Build.features.elr``), so a bug behind ELR on (4.0's KAFKA-19522)
    is in a default campaign's reach; else the build's default."""
    if elr_flag == "auto" and build_runs_either:
        return dataclasses.replace(cfg, elr_both=True)
    return cfg


def _diff(args: argparse.Namespace) -> int:
    from harness.cluster import builds
    from harness.differential.campaign import Campaign, Config, summary_lines
    from harness.differential.protocol import SessionUnsupported
    from harness.infra import progress
    if args.replay is not None:
        return _replay(args)
    cfg = parse_config(args)
    assert isinstance(cfg, Config)
    options.check_runs_dir(args.runs_dir)
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    cfg = for_build(cfg, args.elr, build.features.elr)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out_dir = Path(args.runs_dir) / f"diff-{build.version}-s{cfg.seed}-{stamp}"
    progress.say(f"diff: Kafka {build.version}, seed {cfg.seed}, budget {cfg.budget_s:.0f} s, "
                 f"{cfg.lanes} lanes of {cfg.lane_events} events, {cfg.workers} worker(s); "
                 f"findings to {out_dir}")
    campaign = Campaign(build, cfg, out_dir, say=progress.say)
    try:
        campaign.run()
    except SessionUnsupported as exc:
        raise UsageError(f"diff: Kafka {build.version} cannot run this session: "
                         f"{exc.reason}") from None
    for line in summary_lines(campaign):
        print(line)
    print(f"run directory: {out_dir}")
    return 1 if campaign.found else 0


def _replay(args: argparse.Namespace) -> int:
    """``--replay FINDING``: harness/differential/campaign/replay.py."""
    from harness.cluster import builds
    from harness.differential.campaign.replay import read_finding, replay
    from harness.differential.protocol import SessionUnsupported
    try:
        doc = read_finding(args.replay)
    except UsageError as exc:
        raise UsageError(f"diff --replay: {exc}") from None
    version = args.kafka_version or (None if args.kafka_dist else str(doc.get("kafka")))
    build = builds.resolve(version, args.kafka_dist)
    print(f"replay: {args.replay} ({len(doc['events'])} events, ELR {doc.get('elr')}) on "
          f"Kafka {build.version}; looking for {doc['finding']['signature']}")
    try:
        r = replay(build, doc)
    except SessionUnsupported as exc:
        raise UsageError(f"diff --replay: Kafka {build.version} cannot run this session: "
                         f"{exc.reason}") from None
    if r.again is not None:
        print(f"replay: REPRODUCED {r.again} at event {r.seen[r.again]}")
        return 1
    others = ", ".join(r.seen) or "none"
    print(f"replay: NOT REPRODUCED {r.signature} on Kafka {build.version} (other findings: "
          f"{others})")
    return 0
