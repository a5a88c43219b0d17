"""`kafka-chaos mutate RUNS_DIR...`: which model mutants the recorded runs kill (offline)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.options import run_dirs
from harness.infra.errors import UsageError


def add_subcommands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmd = sub.add_parser("mutate", help="mutation score: re-judge recorded runs offline under "
                                        "model mutants (one KIP rule broken each)")
    cmd.add_argument("paths", nargs="+", type=Path, metavar="RUNS_DIR",
                     help="a run directory, or a directory of run directories")
    cmd.add_argument("--scenarios", type=Path, metavar="DIR",
                     help="judge with the scenario files of the same name in DIR instead of "
                          "the copy each run kept")
    cmd.add_argument("--mutant", action="append", metavar="NAME",
                     help="only this mutant (repeatable; default: all)")
    cmd.add_argument("--suggest", type=Path, metavar="DIR",
                     help="for each surviving mutant, the scenario files in DIR the model "
                          "predicts would kill it (no run: the model of each judged build's "
                          "profile and kip966 against the mutant's)")
    cmd.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    cmd.add_argument("--out", type=Path, metavar="FILE.md",
                     help="also write the result as markdown tables")
    cmd.set_defaults(func=_mutate)


def _writable(path: Path | None, flag: str) -> None:
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"mutate: {flag} {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise UsageError(f"mutate: {flag} {path}: directory {path.parent} does not exist")


def _mutate(args: argparse.Namespace) -> int:
    from harness.infra.progress import say
    from harness.search.mutate import markdown, mutate, suggest, summary
    from reference.releases.mutants import MUTANTS, get_mutant

    if args.scenarios is not None and not args.scenarios.is_dir():
        raise UsageError(f"mutate: --scenarios {args.scenarios} is not a directory")
    if args.suggest is not None and not args.suggest.is_dir():
        raise UsageError(f"mutate: --suggest {args.suggest} is not a directory")
    _writable(args.json, "--json")
    _writable(args.out, "--out")
    try:
        mutants = tuple(get_mutant(n) for n in args.mutant) if args.mutant else MUTANTS
    except ValueError as exc:
        raise UsageError(f"mutate: {exc}") from None
    dirs = run_dirs(args.paths, "mutate")
    say(f"mutate: {len(dirs)} run(s) x {len(mutants)} mutant(s)")
    rep = mutate(dirs, mutants, args.scenarios, progress=say)
    print(summary(rep))
    suggestions = None
    if args.suggest is not None:
        suggestions = suggest(rep, sorted(args.suggest.glob("*.yaml")))
        for name, found in suggestions.items():
            print(f"{name}: would be killed by "
                  + ("; ".join(f"{sc} ({prof}: {where})" for sc, prof, where in found)
                     if found else f"no scenario in {args.suggest} (the model predicts)"))
    if args.json:
        data = rep.to_json()
        if suggestions is not None:
            data["suggestions"] = {k: [{"scenario": sc, "profile": p, "where": w}
                                       for sc, p, w in v] for k, v in suggestions.items()}
        args.json.write_text(json.dumps(data, indent=1))
    if args.out:
        args.out.write_text(markdown(rep, suggestions))
    return 0
