"""`kafka-chaos predict` and `kafka-chaos explore`: the reference model without a
cluster. harness/cli/app.py calls ``add_subcommands(subparsers)``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import yaml

from harness.infra.errors import UsageError
from harness.judge.lanes import lanes
from harness.run.runner import Runner
from harness.scenario import steps as step_kinds
from harness.scenario.loader import Scenario, load_scenario
from reference import PROFILES
from reference.model.state import fmt_value
from reference.search.explorer import explore, to_scenario


def add_subcommands(sub: Any) -> None:
    """Add ``predict`` and ``explore`` to an argparse subparsers object."""
    names = ", ".join(sorted(PROFILES))
    p = sub.add_parser("predict", help="print the model's predicted timeline of a scenario "
                                       "(no cluster)")
    p.add_argument("scenario", type=Path, help="scenario YAML file")
    p.add_argument("--profile", help=f"model profile ({names}); default: the scenario's, "
                                     "kafka-4.3 for 'auto'")
    p.add_argument("--elr", choices=("on", "off"), help="ELR switch for profiles that follow "
                                                        "the build (default: cluster.elr)")
    p.add_argument("--json", action="store_true", help="one JSON object per step")
    p.set_defaults(func=predict_command)

    e = sub.add_parser("explore", help="exhaustively explore step schedules on a small "
                                       "cluster and report invariant violations")
    e.add_argument("--profile", required=True, help=f"model profile ({names})")
    e.add_argument("--brokers", type=int, default=3)
    e.add_argument("--min-isr", type=int, default=2, help="1..--brokers (default 2)")
    e.add_argument("--depth", type=int, default=6, help="schedule length (moves)")
    e.add_argument("--elr", choices=("on", "off"), default="on")
    e.add_argument("--max-states", type=int, help="stop after this many states")
    e.add_argument("--no-symmetry", action="store_true", help="disable symmetry reduction")
    e.add_argument("--out", type=Path, help="write each counterexample as a scenario file here")
    e.set_defaults(func=explore_command)


def _profile(name: str | None, scenario: Scenario | None = None) -> str:
    chosen = name or (scenario.profile if scenario is not None else None) or "auto"
    if chosen == "auto":
        chosen = "kafka-4.3"  # the newest release line
    if chosen not in PROFILES:
        raise UsageError(f"unknown profile {chosen!r}; known: {', '.join(sorted(PROFILES))}")
    return chosen


def predict_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    sc = load_scenario(args.scenario)
    profile = _profile(args.profile, sc)
    elr = (sc.cluster.elr is not False) if args.elr is None else args.elr == "on"
    # The run's own model: the brokers' effective configuration (the harness's presets,
    # then broker_config), not the file's broker_config alone.
    models = [(ln, Runner.model_for(ln.scenario, profile, elr)) for ln in lanes(sc)]
    multi = len(models) > 1
    if not args.json:
        print(f"scenario {sc.name} ({args.scenario}) under profile {profile}, "
              f"ELR {'on' if models[0][1].elr_on else 'off'}", file=out)
        for ln, model in models:
            where = f" {ln.label}" if multi else ""
            print(f"initial{where}: {model.describe().splitlines()[0]}", file=out)
    for i, st in enumerate(sc.steps):
        if not args.json:
            text = yaml.safe_dump(st.mapping, default_flow_style=True).strip()
            print(f"\n#{i} line {st.line}: {text}", file=out)
        for ln, model in models:
            lane_step = ln.scenario.steps[i]
            pred = model.apply(lane_step.step)
            if args.json:
                _print_json(out, i, st, pred, ln.partition if multi else None)
            else:
                _print_prediction(out, lane_step, pred, f"{ln.label} " if multi else "")
    if not args.json:
        for ln, model in models:
            v = model.violations()
            where = f" ({ln.label})" if multi else ""
            print(f"\ninvariant violations{where}: {len(v)}", file=out)
            for line in v:
                print(f"  {line}", file=out)
    return 0


def _print_json(out: TextIO, index: int, st: Any, pred: Any, partition: int | None) -> None:
    import json
    print(json.dumps({
        "index": index, "line": st.line, "step": st.mapping,
        **({} if partition is None else {"partition": partition}),
        "allowed": [a.to_json() for a in pred.allowed],
        "must_survive": sorted(pred.must_survive), "at_risk": sorted(pred.at_risk),
        "hwm_may_move": pred.hwm_may_move, "expected_acks": pred.expected_acks,
        "unsupported": pred.unsupported,
    }, default=str), file=out)


def _print_prediction(out: TextIO, st: Any, pred: Any, where: str) -> None:
    if pred.unsupported:
        print(f"  {where}UNSUPPORTED: {pred.unsupported}", file=out)
    label = "state" if len(pred.allowed) == 1 else f"one of {len(pred.allowed)} states"
    print(f"  {where}{label}:", file=out)
    for a in pred.allowed:
        print(f"    leader={fmt_value(a.leader)} epoch={a.leader_epoch} "
              f"ISR={fmt_value(a.isr)} ELR={fmt_value(a.elr)} "
              f"LastKnownELR={fmt_value(a.last_known_elr)} HWM={fmt_value(a.hwm)} "
              f"fenced={fmt_value(a.fenced)}" + _quorum_text(a), file=out)
    if pred.expected_acks:
        print(f"  acks: {pred.expected_acks}", file=out)
    print(f"  HWM may move: {'yes' if pred.hwm_may_move else 'no'}; acked records that "
          f"must survive: {len(pred.must_survive)}", file=out)
    if pred.at_risk:
        print(f"  records at risk: {', '.join(sorted(pred.at_risk))}", file=out)
    if step_kinds.KINDS[st.kind].reads:
        print(f"  consumer sees: {', '.join(sorted(pred.must_see)) or 'nothing'}", file=out)
    for n in pred.notes:
        print(f"  note: {n}", file=out)


def explore_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    profile = _profile(args.profile)
    _check_explore_args(args)
    started = time.monotonic()
    res = explore(profile, brokers=args.brokers, min_isr=args.min_isr, depth=args.depth,
                  elr_enabled=args.elr == "on", symmetry=not args.no_symmetry,
                  max_states=args.max_states)
    secs = time.monotonic() - started
    rate = res.states / secs if secs > 0 else float("inf")
    print(f"profile {profile}: {args.brokers} brokers, min ISR {args.min_isr}, depth "
          f"{args.depth}{' (truncated)' if res.truncated else ''}", file=out)
    print(f"states explored: {res.states}  transitions: {res.transitions}  "
          f"time: {secs:.2f} s  ({rate:.0f} states/s)", file=out)
    print(f"new states per level: {res.levels}", file=out)
    print(f"counterexamples: {len(res.counterexamples)}", file=out)
    for cx in res.counterexamples:
        print(f"\n{cx.invariant} after {len(cx.moves)} moves: {cx.detail}", file=out)
        for s in cx.steps:
            d = to_scenario_step(s)
            print(f"  - {d}", file=out)
        if args.out is not None:
            path = _write_counterexample(args, profile, cx)
            print(f"  written to {path}", file=out)
    return 1 if res.counterexamples else 0


def _check_explore_args(args: argparse.Namespace) -> None:
    """Every flag is checked before the search starts."""
    if not 1 <= args.brokers <= 5:
        raise UsageError(f"--brokers {args.brokers}: choose 1..5")
    if not 1 <= args.min_isr <= args.brokers:
        raise UsageError(f"--min-isr {args.min_isr}: choose 1..{args.brokers} (--brokers)")
    if args.depth < 0:
        raise UsageError(f"--depth {args.depth}: give 0 or more moves")
    if args.max_states is not None and args.max_states < 1:
        raise UsageError(f"--max-states {args.max_states}: give 1 or more")
    if args.out is not None:
        if args.out.exists() and not args.out.is_dir():
            raise UsageError(f"--out {args.out} is a file; give a directory for the scenarios")
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"--out {args.out}: cannot create it ({e.strerror or e})") from None


def _write_counterexample(args: argparse.Namespace, profile: str, cx: Any) -> Path:
    """The counterexample as a scenario file that runs on the builds ``profile`` models."""
    doc = to_scenario(cx, profile=profile, brokers=args.brokers, min_isr=args.min_isr,
                      elr_enabled=args.elr == "on")
    path = Path(args.out) / f"{doc['name']}.yaml"
    try:
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--out: cannot write {path} ({e.strerror or e})") from None
    return path


def to_scenario_step(step: Any) -> str:
    from reference.model.steps import step_to_dict
    return yaml.safe_dump(step_to_dict(step), default_flow_style=True).strip()


def _quorum_text(a: Any) -> str:
    """The active controller and whether the quorum elected during the step (several
    controllers only)."""
    if a.controller is None:
        return ""
    return (f" controller={a.controller}"
            f"{' (elected)' if a.quorum_elected else ''}")
