"""Mutation score (`kafka-chaos mutate`): mutants, kills, the score, the CLI's errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.app import main
from harness.judge.audit import audit
from harness.search.mutate import (
    Judgement,
    MutationReport,
    RunResult,
    coverage_markdown,
    judge,
    load_run,
    mutate,
    mutate_run,
    score,
)
from reference.releases.catalog import PROFILES
from reference.releases.mutants import BY_NAME, MUTANTS, Mutant, get_mutant
from reference.releases.profiles import KIP966

HISTORIES = Path(__file__).resolve().parent.parent / "fixtures" / "histories"
#: 4.3.1, kafka-4.1: three brokers lost one by one, ELR [2, 3], the last ISR member
#: restarted uncleanly; the partition waits for an ELR member.
LRS = HISTORIES / "last-replica-standing-20261123T164155-f65c94"
#: 4.3.1: unclean.leader.election.enable=true elects an out-of-sync replica.
UNCLEAN = HISTORIES / "unclean-election-enabled-20261123T164222-8ca0aa"
RUNS = sorted(p for p in HISTORIES.iterdir() if (p / "run.json").is_file())


# --- the mutants -----------------------------------------------------------------------

def test_each_mutant_changes_one_rule_that_no_release_profile_or_kip_lacks_everywhere() -> None:
    assert len(MUTANTS) >= 12 and len(BY_NAME) == len(MUTANTS)
    for m in MUTANTS:
        assert m.changes and m.description and m.breaks.strip()
        mutated = m.apply(KIP966)
        assert mutated != KIP966, m.name  # the KIP itself has the rule
        assert m.apply(mutated) == mutated  # idempotent
        for field, value in m.changes.items():
            assert getattr(mutated, field) == value


def test_equivalent_on_names_the_profiles_that_already_lack_the_rule() -> None:
    m = get_mutant("reassignment-ignores-min-isr")
    assert m.equivalent_on(PROFILES["kafka-4.1"]) and not m.equivalent_on(KIP966)
    assert not get_mutant("hwm-rule-off").equivalent_on(PROFILES["kafka-4.1"])
    assert get_mutant("hwm-rule-off").equivalent_on(PROFILES["pre-3.7"])
    with pytest.raises(ValueError, match="unknown mutant"):
        get_mutant("no-such-mutant")


# --- kills -----------------------------------------------------------------------------------

@pytest.mark.parametrize("run_dir", RUNS, ids=lambda p: p.name)
def test_the_unmutated_judgement_is_the_audit(run_dir: Path) -> None:
    """judge() mirrors run/audit._judge: under no mutant it gives audit's verdicts."""
    axes = judge(load_run(run_dir))
    assert {a: v.verdict for a, v in axes.items()} == \
        {a: v.verdict for a, v in audit(run_dir).axes.items()}


def test_a_history_kills_the_mutant_its_scenario_checks() -> None:
    """last-replica-standing elects from the ELR: a model whose ELR members are never
    electable predicts a leaderless partition the broker did not show."""
    r = mutate_run(load_run(LRS), [get_mutant("elr-not-electable")])
    assert r.skipped is None
    assert "elr-not-electable" in r.kills
    assert any("release CONFORMS -> DIVERGES" in d for d in r.kills["elr-not-electable"])


def test_a_history_does_not_kill_a_mutant_of_a_rule_it_never_exercises() -> None:
    """last-replica-standing leaves unclean.leader.election.enable false and never
    reassigns: ignoring a true setting, or the reassignment rules, changes nothing."""
    run = load_run(LRS)
    names = ["unclean-config-never", "reassignment-skips-target-isr",
             "reassignment-ignores-min-isr"]
    r = mutate_run(run, [get_mutant(n) for n in names])
    assert r.kills == {}
    # ... while the run that sets it true kills "never"
    assert "unclean-config-never" in mutate_run(load_run(UNCLEAN),
                                                [get_mutant("unclean-config-never")]).kills


def test_a_mutant_that_changes_nothing_survives_every_history() -> None:
    noop = Mutant("noop", "changes no rule", "none")
    rep = mutate(RUNS, [noop])
    assert rep.judged and rep.survivors == [noop] and rep.score == 0.0


def test_an_incomplete_history_is_skipped_and_counted(tmp_path: Path) -> None:
    cut = tmp_path / LRS.name
    shutil.copytree(LRS, cut)
    lines = (cut / "events.jsonl").read_text().splitlines()
    (cut / "events.jsonl").write_text("\n".join(
        line for line in lines if '"run_end"' not in line) + "\n")
    rep = mutate([cut, LRS], [get_mutant("elr-not-electable")])
    assert [r.skipped for r in rep.runs] == ["INCOMPLETE", None]
    assert len(rep.skipped) == 1 and len(rep.judged) == 1 and rep.score == 1.0


def test_judgement_differences_name_what_changed() -> None:
    base = Judgement(("CONFORMS", "DEVIATES", "SAFE"), ("a",), ("R1",), "", "")
    assert base.differences(base) == []
    other = Judgement(("CONFORMS", "DEVIATES", "SAFE"), ("a", "b"), ("R2",), "", "")
    diff = base.differences(other)
    assert "kip deviations [a] -> [a, b]" in diff
    assert "trace rules newly violated: R2" in diff
    assert "trace rules no longer violated: R1" in diff
    moved = Judgement(("DIVERGES", "KIP-DIVERGES", "SAFE"), ("a",), ("R1",), "3", "3")
    assert base.differences(moved)[:2] == ["release CONFORMS -> DIVERGES",
                                           "kip DEVIATES -> KIP-DIVERGES"]


# --- the score ---------------------------------------------------------------------------------

def test_score_arithmetic() -> None:
    assert score(12, 16) == 0.75 and score(0, 0) == 0.0 and score(3, 3) == 1.0
    a, b, c = (Mutant(n, n, n, {"hwm_rule": False}) for n in "abc")
    run = RunResult(Path("r1"), "s", "4.3.1", "kafka-4.1", ("CONFORMS",) * 3,
                    kills={"a": ["x"], "b": ["y"]})
    run2 = RunResult(Path("r2"), "s2", "4.3.1", "kafka-4.1", ("CONFORMS",) * 3,
                     kills={"a": ["x"]})
    skipped = RunResult(Path("r3"), "s3", "4.3.1", "kafka-4.1", ("INCOMPLETE",) * 3,
                        skipped="INCOMPLETE", kills={"c": ["z"]})
    rep = MutationReport((a, b, c), [run, run2, skipped])
    assert [m.name for m in rep.killed] == ["a", "b"] and rep.survivors == [c]
    assert rep.score == pytest.approx(2 / 3)
    assert [r.run_dir.name for r in rep.killers(a)] == ["r1", "r2"]
    js = rep.to_json()
    assert (js["killed"], js["mutants"], js["runs_judged"], js["runs_skipped"]) == (2, 3, 2, 1)


def test_rule_coverage_is_counted_per_build() -> None:
    a = Mutant("a", "a", "a", {"hwm_rule": False})
    b = Mutant("b", "b", "b", {"elr": False})
    runs = [RunResult(Path("r1"), "s", "4.3.1", "kafka-4.3", ("CONFORMS",) * 3,
                      kills={"a": ["x"]}),
            RunResult(Path("r2"), "s", "3.9.1", "kafka-3.8", ("CONFORMS",) * 3,
                      kills={"a": ["x"], "b": ["y"]}),
            RunResult(Path("r3"), "s", "3.9.1", "kafka-3.8", ("CONFORMS",) * 3)]
    rep = MutationReport((a, b), runs)
    cov = rep.coverage()
    assert cov["a"] == {"3.9.1": "1", "4.3.1": "1"}
    # kafka-3.8 ships with ELR off: only the kip axis can tell the rule from its flip.
    assert cov["b"]["3.9.1"] == "1 (kip axis only)" and cov["b"]["4.3.1"] == "0"
    lines = "\n".join(coverage_markdown(rep))
    assert "| mutant | 3.9.1 | 4.3.1 |" in lines and "| `a` | 1 | 1 |" in lines


# --- the CLI -------------------------------------------------------------------------------------

def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["mutate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_score_and_writes_json_and_markdown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, str(LRS), "--mutant", "elr-not-electable", "--mutant",
                          "unclean-config-never", "--json", str(tmp_path / "m.json"),
                          "--out", str(tmp_path / "m.md"))
    assert code == 0
    assert "elr-not-electable: killed by 1 run(s): last-replica-standing" in out
    assert "unclean-config-never: SURVIVED" in out
    assert "mutation score 1/2 = 50%" in out
    assert "[1/1] " + LRS.name in err  # a progress line per run
    js = json.loads((tmp_path / "m.json").read_text())
    assert js["score"] == 0.5 and js["builds"] == ["4.3.1"]
    assert "**SURVIVED**" in (tmp_path / "m.md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["/no/such/dir"], "/no/such/dir does not exist"),
    (["{empty}"], "is not a run directory (no run.json) and holds no run directories"),
    (["{file}"], "is not a directory"),
    ([str(LRS), "--scenarios", "/no/such/dir"], "--scenarios /no/such/dir is not a directory"),
    ([str(LRS), "--mutant", "nope"], "unknown mutant 'nope'"),
    ([str(LRS), "--suggest", "{file}"], "--suggest"),
    ([str(LRS), "--out", "{empty}"], "is a directory; give a file name"),
    ([str(LRS), "--json", "/no/such/dir/m.json"], "directory /no/such/dir does not exist"),
])
def test_cli_refuses_bad_input_before_judging(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    argv = [a.format(empty=tmp_path / "empty", file=tmp_path / "file") for a in argv]
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and message in err
    assert "mutate: " in err and "[1/" not in err  # nothing judged


def test_cli_refuses_an_unreadable_run_before_judging_any(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad-run"
    bad.mkdir()
    (bad / "run.json").write_text("{not json")
    code, _, err = _cli(capsys, str(LRS), str(bad))
    assert code == 2 and "unreadable run.json" in err and "[1/" not in err


# --- which scenario would kill a survivor -------------------------------------------------------

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"


def test_predicted_kill_finds_the_step_a_scenario_parts_the_models() -> None:
    from harness.scenario.loader import load_scenario
    from harness.search.mutate import predicted_kill

    lrs = load_scenario(SCENARIOS / "last-replica-standing.yaml")
    where = predicted_kill(lrs, PROFILES["kafka-4.1"], get_mutant("elr-not-electable"))
    assert where is not None and where.startswith("step ")
    # the scenario never enables unclean election: ignoring a true setting changes nothing
    assert predicted_kill(lrs, PROFILES["kafka-4.1"], get_mutant("unclean-config-never")) is None
    assert predicted_kill(lrs, PROFILES["kafka-4.1"], Mutant("noop", "", "")) is None


def test_cli_suggest_lists_a_scenario_for_a_survivor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "scenarios"
    scen.mkdir()
    shutil.copy(SCENARIOS / "unclean-election-enabled.yaml", scen)
    shutil.copy(SCENARIOS / "last-replica-standing.yaml", scen)
    (scen / "broken.yaml").write_text("version: 1\nname: [\n")  # skipped, not fatal
    code, out, _ = _cli(capsys, str(LRS), "--mutant", "unclean-config-never",
                        "--suggest", str(scen), "--out", str(tmp_path / "m.md"))
    assert code == 0 and "unclean-config-never: SURVIVED" in out
    assert "unclean-config-never: would be killed by unclean-election-enabled (" in out
    assert "last-replica-standing (" not in out.split("would be killed by")[1]
    assert "| `unclean-config-never` | `unclean-election-enabled`" in \
        (tmp_path / "m.md").read_text()


def test_a_run_the_judge_cannot_replay_is_skipped_as_error(tmp_path: Path) -> None:
    broken = tmp_path / LRS.name
    shutil.copytree(LRS, broken)
    lines = (broken / "events.jsonl").read_text().splitlines()
    (broken / "events.jsonl").write_text("\n".join(
        line.replace('"step": {"', '"step": {"no_such_kind_', 1) for line in lines) + "\n")
    rep = mutate([broken], [get_mutant("elr-not-electable")])
    assert rep.runs[0].skipped is not None and rep.runs[0].skipped.startswith("ERROR")
    assert len(rep.skipped) == 1 and not rep.judged


def test_a_run_that_ended_in_error_is_skipped(tmp_path: Path) -> None:
    err = tmp_path / LRS.name
    shutil.copytree(LRS, err)
    lines = (err / "events.jsonl").read_text().splitlines()
    (err / "events.jsonl").write_text("\n".join(
        line.replace('"verdict": "CONFORMS"}', '"verdict": "ERROR"}')
        if '"run_end"' in line else line for line in lines) + "\n")
    rep = mutate([err, LRS], [get_mutant("elr-not-electable")])
    assert [r.skipped for r in rep.runs] == ["ERROR", None]
