"""`kafka-chaos predict` / `explore` through argparse, without a cluster."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from harness import model_cli
from harness.errors import UsageError
from harness.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def parse(*argv: str) -> argparse.Namespace:
    top = argparse.ArgumentParser(prog="kafka-chaos")
    sub = top.add_subparsers(dest="command", required=True)
    model_cli.add_subcommands(sub)
    return top.parse_args(list(argv))


def test_predict_prints_timeline_per_profile() -> None:
    f = str(SCENARIOS / "kip966-last-replica-standing.yaml")
    out = io.StringIO()
    args = parse("predict", f, "--profile", "pre-elr")
    assert args.func(args, out) == 0
    text = out.getvalue()
    assert "under profile pre-elr" in text
    assert "#8 line" in text and "leader=3" in text
    assert "NoAckedRecordLost" in text and "records at risk" in text
    out = io.StringIO()
    args = parse("predict", f, "--profile", "kip966")
    assert args.func(args, out) == 0
    assert "invariant violations: 0" in out.getvalue()
    assert "ELR={2, 3}" in out.getvalue()


def test_predict_json_and_unknown_profile() -> None:
    f = str(SCENARIOS / "kip966-maximal-isr.yaml")
    out = io.StringIO()
    args = parse("predict", f, "--json")
    assert args.func(args, out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == len(load_scenario(f).steps)
    assert '"hwm": 3' in lines[5]
    args = parse("predict", f, "--profile", "nope")
    with pytest.raises(UsageError, match="unknown profile"):
        args.func(args, io.StringIO())


def test_explore_writes_counterexamples(tmp_path: Path) -> None:
    out = io.StringIO()
    args = parse("explore", "--profile", "pre-elr", "--brokers", "3", "--depth", "5",
                 "--out", str(tmp_path))
    assert args.func(args, out) == 1  # counterexamples found
    text = out.getvalue()
    assert "states explored:" in text and "time:" in text
    assert "LeaderCompleteness after 5 moves" in text
    written = sorted(p.name for p in tmp_path.glob("*.yaml"))
    assert "explore-pre-elr-leader-completeness.yaml" in written
    sc = load_scenario(tmp_path / "explore-pre-elr-leader-completeness.yaml")
    assert sc.profile == "pre-elr" and sc.steps[-1].kind == "consume"


def test_explore_clean_profile_exits_zero() -> None:
    out = io.StringIO()
    args = parse("explore", "--profile", "kip966", "--depth", "4")
    assert args.func(args, out) == 0
    assert "counterexamples: 0" in out.getvalue()
