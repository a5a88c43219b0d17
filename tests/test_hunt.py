"""kafka-chaos hunt (issue 35): coverage feedback and the corpus, resuming from the campaign
dir, de-duplication per build, the classification rule (each class chosen and not chosen),
and bad input refused before any cluster starts. No cluster: a fake run function returns
synthetic outcomes, and a fake reader says what each run reached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import app
from harness.infra.errors import UsageError
from harness.run.runner import Runner
from harness.scenario.loader import load_scenario
from harness.search import fuzz, hunt
from harness.search.hunt import Reach, classify
from reference import profile_for_build
from reference.search import fuzzgen

BASE = fuzz.base_scenario()


def new_model(version: tuple[int, int, int] = (4, 3, 1), elr: bool = True) -> Any:
    prof = profile_for_build(version, elr)
    return lambda: Runner.model_for(BASE, prof, elr)


MODELS = {"4.3.1": new_model(), "3.9.2": new_model((3, 9, 2), False)}
SIG_SAFETY: Any = (("safety", "UNSAFE", ("acked-record-durable",)),)
SIG_RELEASE: Any = (("kip", "KIP-DIVERGES", ("isr",)), ("release", "DIVERGES", ("isr",)))


class Fake:
    """Outcomes and reach by schedule index (the run's name ends in it); re-runs and shrink
    attempts answer as their schedule's index does. Every call is recorded."""

    def __init__(self, sigs: dict[int, Any] | None = None, reach: dict[int, Reach] | None = None,
                 boom: set[int] | None = None) -> None:
        self.sigs, self.reach_by, self.boom = sigs or {}, reach or {}, boom or set()
        self.calls: list[str] = []
        self.steps: dict[str, Any] = {}

    @staticmethod
    def index(name: str) -> int:
        return int(name.split("-")[2])

    def run(self, name: str, seed: int, steps: Any) -> fuzz.Outcome:
        self.calls.append(name)
        self.steps[name] = steps
        i = self.index(name)
        if i in self.boom:
            raise RuntimeError(f"toxiproxy went away in run {i}")
        return fuzz.Outcome(self.sigs.get(i), None, Path(name))

    def reach(self, out: fuzz.Outcome) -> Reach:
        assert out.run_dir is not None
        return self.reach_by.get(self.index(out.run_dir.name), Reach())


def plan(fake: Fake, version: str = "4.3.1", kip: Any = None) -> hunt.BuildPlan:
    return hunt.BuildPlan(version, MODELS[version], fake.run, fake.reach,
                          kip or (lambda run_dir: ("CONFORMS", ())))


def cfg(runs: int = 6, seed: int = 1, **kw: Any) -> hunt.HuntConfig:
    kw.setdefault("direct_share", 0.0)  # directed schedules have tests of their own
    return hunt.HuntConfig(seed=seed, budget_s=3600, runs=runs, shrink_attempts=3, **kw)


def generated(fake: Fake) -> list[str]:
    return [c for c in fake.calls if c.count("-") == 2]


# --- coverage and the corpus ---------------------------------------------------------------

def test_corpus_grows_on_new_coverage_and_not_otherwise(tmp_path: Path) -> None:
    a, b = Reach(frozenset({"isr-expand"})), Reach(frozenset({"isr-expand"}),
                                                   frozenset({"LeaderInIsr"}))
    fake = Fake(reach={0: a, 1: a, 2: b, 3: Reach(), 4: b, 5: a})
    lines: list[str] = []
    state = hunt.hunt(cfg(), [plan(fake)], tmp_path, say=lines.append)
    st = state.builds["4.3.1"]
    assert [e.name for e in st.corpus] == ["fuzz-s1-0", "fuzz-s1-2"]
    assert st.corpus[0].new == ["transition:isr-expand"]
    assert st.corpus[1].new == ["rule:LeaderInIsr"]
    assert st.coverage == {"transition:isr-expand": "fuzz-s1-0", "rule:LeaderInIsr": "fuzz-s1-2"}
    # Each corpus entry is a scenario file `kafka-chaos run` takes, with the run's steps.
    entry = load_scenario(tmp_path / st.corpus[1].file)
    assert tuple(s.step for s in entry.steps) == fake.steps["fuzz-s1-2"]
    assert any(f"coverage transitions 1/{len(hunt.TRANSITION_NAMES)}, rules "
               f"1/{len(hunt.RULE_NAMES)}" in line for line in lines)
    assert (tmp_path / "hunt.json").is_file() and (tmp_path / "hunt.md").is_file()
    # coverage over time: one point per generated run, within the campaign's time
    assert [p[1:] for p in st.timeline] == [[1, 1, 0, 0], [2, 1, 0, 0], [3, 1, 1, 0],
                                            [4, 1, 1, 0], [5, 1, 1, 0], [6, 1, 1, 0]]
    assert all(0 <= p[0] <= st.seconds + 0.1 for p in st.timeline)


def test_later_schedules_are_repaired_mutations_of_the_corpus(tmp_path: Path) -> None:
    fake = Fake(reach={0: Reach(frozenset({"fenced"}))})
    state = hunt.hunt(cfg(runs=16), [plan(fake)], tmp_path)
    st = state.builds["4.3.1"]
    gen = fuzz.gen_config(max_count=10_000)
    fresh = {n: fuzz.schedule(MODELS["4.3.1"], 1, Fake.index(n), cfg().gen())
             for n in generated(fake)}
    mutated = [n for n in generated(fake) if fake.steps[n] != fresh[n]]
    assert st.mutated == len(mutated) >= 3
    assert "fuzz-s1-0" not in mutated  # an empty corpus: the generator's schedule
    for n in mutated:  # repaired: the generator's guards hold, and it ends with a consume
        assert fuzzgen.validate(MODELS["4.3.1"], fake.steps[n], gen) is None
        assert fake.steps[n][-1].kind == "consume"
        end = MODELS["4.3.1"]()  # after the recovery tail: every broker up, no link cut
        for step in fake.steps[n]:
            end.apply(step)
        assert all(b.alive and not w.cuts for w in end.branches for b in w.brokers)


def test_coverage_reader_failure_is_said_and_the_run_still_counts(tmp_path: Path) -> None:
    fake = Fake()

    def broken(out: fuzz.Outcome) -> Reach:
        raise ValueError("events.jsonl truncated")
    p = hunt.BuildPlan("4.3.1", MODELS["4.3.1"], fake.run, broken)
    lines: list[str] = []
    st = hunt.hunt(cfg(runs=2), [p], tmp_path, say=lines.append).builds["4.3.1"]
    assert st.generated == 2 and not st.corpus
    assert any("coverage unreadable (ValueError: events.jsonl truncated)" in x for x in lines)


# --- resume ------------------------------------------------------------------------------------

def test_a_hunt_on_the_same_dir_resumes(tmp_path: Path) -> None:
    first = Fake(sigs={1: SIG_SAFETY}, reach={0: Reach(frozenset({"fenced"}))})
    hunt.hunt(cfg(runs=3), [plan(first)], tmp_path)
    assert "fuzz-s1-1-again" in first.calls
    saved = json.loads((tmp_path / hunt.STATE_FILE).read_text())["builds"]["4.3.1"]
    assert saved["next_index"] == 3 and len(saved["known"]) == 1
    # The second session: the next indices, the same signature is known (no re-run, no
    # shrink), the corpus and coverage carry over and the counters add up.
    second = Fake(sigs={4: SIG_SAFETY}, reach={3: Reach(frozenset({"fenced"}))})
    st = hunt.hunt(cfg(runs=3), [plan(second)], tmp_path).builds["4.3.1"]
    assert generated(second) == ["fuzz-s1-3", "fuzz-s1-4", "fuzz-s1-5"]
    assert not [c for c in second.calls if "again" in c or "shrink" in c]
    assert [e.name for e in st.corpus] == ["fuzz-s1-0"] and st.corpus[0].steps
    assert len(st.known) == 1 and st.known[0].occurrences == 2
    assert st.generated == 6 and st.next_index == 6


def test_resume_refuses_another_seed_or_other_settings(tmp_path: Path) -> None:
    hunt.hunt(cfg(runs=1), [plan(Fake())], tmp_path)
    with pytest.raises(UsageError, match=r"--seed 1, not 2: give --seed 1 to resume"):
        hunt.load_state(tmp_path, cfg(seed=2))
    with pytest.raises(UsageError, match="--steps 10, not 12"):
        hunt.load_state(tmp_path, cfg(length=12))
    with pytest.raises(UsageError, match="--direct-share 0.0, not 0.5"):
        hunt.load_state(tmp_path, cfg(direct_share=0.5))
    # A campaign from before directed schedules had none: it resumes with a share of 0.
    path = tmp_path / hunt.STATE_FILE
    raw = json.loads(path.read_text())
    del raw["settings"]["direct_share"]
    path.write_text(json.dumps(raw))
    assert hunt.load_state(tmp_path, cfg()).settings["direct_share"] == 0.0
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("")
    with pytest.raises(UsageError, match="holds no hunt-state.json"):
        hunt.load_state(tmp_path / "other", cfg())


# --- de-duplication per build --------------------------------------------------------------

def test_failures_are_deduplicated_per_build(tmp_path: Path) -> None:
    fakes = {v: Fake(sigs={1: SIG_SAFETY, 3: SIG_SAFETY, 4: SIG_RELEASE}) for v in MODELS}
    state = hunt.hunt(cfg(), [plan(fakes[v], v) for v in MODELS], tmp_path)
    for v in MODELS:
        known = {k.key: k for k in state.builds[v].known}
        assert set(known) == {fuzz.signature_text(SIG_SAFETY), fuzz.signature_text(SIG_RELEASE)}
        assert known[fuzz.signature_text(SIG_SAFETY)].occurrences == 2
        # Confirmed once per build: the same signature on another build is its own.
        assert fakes[v].calls.count("fuzz-s1-1-again") == 1
        assert "fuzz-s1-3-again" not in fakes[v].calls
    summary = json.loads((tmp_path / "hunt.json").read_text())
    assert [b["build"] for b in summary["builds"]] == list(MODELS)
    assert len(summary["signatures"]) == 4


def test_a_harness_exception_is_a_harness_error_and_the_hunt_goes_on(tmp_path: Path) -> None:
    fake = Fake(boom={1, 2})
    st = hunt.hunt(cfg(runs=4), [plan(fake)], tmp_path).builds["4.3.1"]
    (err,) = st.known
    assert err.cls == "harness-error" and err.occurrences == 2
    assert err.key == "ERROR: harness exception: RuntimeError: toxiproxy went away in run N"
    assert st.generated == 4 and st.errors == 2


# --- classification ------------------------------------------------------------------------------

DEVS = ("no-elr", "no-last-known-elr", "election-in-assignment-order")


@pytest.mark.parametrize("sig,error,kip,devs,expected", [
    # harness-error: chosen for an ERROR run or an unjudged axis; not for a judged failure
    (None, "NodeNotReady: broker 2", None, (), "harness-error"),
    ((("safety", "ERROR", ("other",)),), None, "CONFORMS", (), "harness-error"),
    (SIG_SAFETY, None, "CONFORMS", (), "model-gap"),
    # kafka-candidate: release DIVERGES with UNSAFE, or matching no deviation
    ((("release", "DIVERGES", ("x",)), ("safety", "UNSAFE", ("trace-invariants",))), None,
     "DEVIATES", ("no-elr",), "kafka-candidate"),
    (SIG_RELEASE, None, None, (), "kafka-candidate"),
    ((("release", "DIVERGES", ("x",)),), None, "DEVIATES", ("no-elr",), "model-gap"),
    # cited-deviation: the build's profile predicted the unsafe outcome, a cited deviation
    # of the build explains it; not with a deviation outside the build's catalog entry
    (SIG_SAFETY, None, "DEVIATES", ("no-elr",), "cited-deviation"),
    (SIG_SAFETY, None, "DEVIATES", ("no-hwm-rule",), "undecided"),
    (SIG_SAFETY, None, "DEVIATES", (), "undecided"),
    # model-gap: the KIP's model predicts what safety forbids; the KIP explains what the
    # build's profile does not
    ((("release", "DIVERGES", ("x",)),), None, "CONFORMS", (), "model-gap"),
    ((("release", "DIVERGES", ("x",)), ("safety", "UNSAFE", ("x",))), None, "CONFORMS", (),
     "kafka-candidate"),
    # undecided: the judges disagree, or the first run's kip axis is unreadable
    ((("kip", "KIP-DIVERGES", ("x",)),), None, None, (), "undecided"),
    (SIG_SAFETY, None, None, (), "undecided"),
    ((("kip", "KIP-DIVERGES", ("x",)), ("safety", "UNSAFE", ("x",))), None, None, (),
     "undecided"),
])
def test_classification(sig: Any, error: str | None, kip: str | None, devs: tuple[str, ...],
                        expected: str) -> None:
    c = classify(sig, error, kip, devs, DEVS)
    assert c.cls == expected, c.why
    assert c.why


#: The hunt's 4.3.1 signature fuzz-s36-18 as re-judged: the ELR holds the removed leader.
SIG_ELR_REMOVED: Any = (
    ("kip", "KIP-DIVERGES", ("trace:IsrElrWithinReplicas",)),
    ("release", "DIVERGES", ("trace:IsrElrWithinReplicas",)),
    ("safety", "UNSAFE", ("sampled-state-invariants", "trace-invariants")))


def test_a_known_bug_of_the_build_is_named_and_only_on_the_builds_it_affects() -> None:
    on_431 = classify(SIG_ELR_REMOVED, None, "KIP-DIVERGES", (), DEVS, hunt.known_bugs_of("4.3.1"))
    assert on_431.cls == "known-bug"
    assert "elr-keeps-removed-replica" in on_431.why
    assert "also named: sampled-state-invariants, trace-invariants" in on_431.why
    # 3.9.2 keeps no ELR in production: not a known bug there, so a candidate.
    assert classify(SIG_ELR_REMOVED, None, "KIP-DIVERGES", (), DEVS,
                    hunt.known_bugs_of("3.9.2")).cls == "kafka-candidate"
    # KAFKA-19522 is 4.0.x only (fixed in 4.1.0 by PR 20200).
    fenced: Any = (("release", "DIVERGES", ("trace:NewLeaderIsLive",)),)
    assert classify(fenced, None, "KIP-DIVERGES", (), DEVS,
                    hunt.known_bugs_of("4.0.2")).cls == "known-bug"
    assert classify(fenced, None, "KIP-DIVERGES", (), DEVS,
                    hunt.known_bugs_of("4.1.2")).cls == "kafka-candidate"
    # A rule no known bug names, or a safety-only failure, is not a known bug.
    assert classify(SIG_RELEASE, None, None, (), DEVS,
                    hunt.known_bugs_of("4.3.1")).cls == "kafka-candidate"
    assert classify(SIG_SAFETY, None, "CONFORMS", (), DEVS,
                    hunt.known_bugs_of("4.3.1")).cls == "model-gap"


#: The hunt's 4.3.1 signature fuzz-s42-9 as a run with the recovery read judges it: the
#: acked record the final read missed was readable once the cluster was healed.
SIG_HIDDEN: Any = (("kip", "KIP-DIVERGES", ("records",)), ("release", "DIVERGES", ("records",)),
                   ("safety", "UNSAFE", ("acked-record-hidden",)))


def test_acked_records_hidden_not_lost_are_the_hwm_lag_model_gap_where_the_build_has_it() -> None:
    with_lag = (*DEVS, hunt.HWM_LAG)
    hidden = classify(SIG_HIDDEN, None, "KIP-DIVERGES", (), with_lag)
    assert hidden.cls == "model-gap" and "new-leader-hwm-lag" in hidden.why
    # Lost, or hidden and lost together, or a build without the deviation: a candidate.
    lost = tuple((a, v, ("acked-record-durable",) if a == "safety" else n)
                 for a, v, n in SIG_HIDDEN)
    assert classify(lost, None, "KIP-DIVERGES", (), with_lag).cls == "kafka-candidate"
    both = tuple((a, v, ("acked-record-durable", "acked-record-hidden") if a == "safety" else n)
                 for a, v, n in SIG_HIDDEN)
    assert classify(both, None, "KIP-DIVERGES", (), with_lag).cls == "kafka-candidate"
    assert classify(SIG_HIDDEN, None, "KIP-DIVERGES", (), DEVS).cls == "kafka-candidate"


def test_every_class_is_chosen_by_some_case() -> None:
    chosen = {classify(s, e, k, d, DEVS, hunt.known_bugs_of("4.3.1")).cls for s, e, k, d in [
        (None, "x", None, ()), (SIG_RELEASE, None, None, ()),
        (SIG_SAFETY, None, "DEVIATES", ("no-elr",)), (SIG_SAFETY, None, "CONFORMS", ()),
        ((("kip", "KIP-DIVERGES", ("x",)),), None, None, ()),
        (SIG_ELR_REMOVED, None, "KIP-DIVERGES", ())]}
    assert chosen == set(hunt.CLASSES)


def test_a_hunt_classifies_with_the_first_runs_kip_axis(tmp_path: Path) -> None:
    fake = Fake(sigs={0: SIG_SAFETY, 2: SIG_RELEASE})
    kip = {"fuzz-s1-0": ("DEVIATES", ("no-elr",)), "fuzz-s1-2": ("KIP-DIVERGES", ())}
    p = plan(fake, "3.9.2", kip=lambda run_dir: kip[run_dir.name])
    st = hunt.hunt(cfg(runs=3), [p], tmp_path).builds["3.9.2"]
    assert {k.key: k.cls for k in st.known} == {
        fuzz.signature_text(SIG_SAFETY): "cited-deviation",
        fuzz.signature_text(SIG_RELEASE): "kafka-candidate"}
    assert "cited-deviation 1" in (tmp_path / "hunt.md").read_text()


def test_build_deviations_come_from_the_catalog() -> None:
    assert "no-elr" in hunt.build_deviation_ids("3.9.2")
    assert "unclean-election-config-ignored" in hunt.build_deviation_ids("3.8.1")
    assert "unclean-election-config-ignored" not in hunt.build_deviation_ids("4.3.1")


# --- trace rules reached --------------------------------------------------------------------------

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "histories"


def test_rules_and_transitions_reached_by_a_recorded_run() -> None:
    r = hunt.reach_of_run(FIXTURE / "unclean-election-enabled-20261123T164222-8ca0aa")
    assert {"elected-unclean", "fenced"} <= r.transitions <= set(hunt.TRANSITION_NAMES)
    assert {"UncleanElectionOnlyWhenAllowed", "UncleanElectionMarksRecovering",
            "LeaderIsLive"} <= r.rules <= set(hunt.RULE_NAMES)
    # topic creation's ClearElrRecord and configs are no min ISR change to decide
    assert "ClearElrOnlyOnMinIsrChange" not in r.rules
    assert "MetadataLogMatching" not in r.rules  # one controller


# --- bad input: refused before any build resolves or cluster starts ---------------------------

@pytest.mark.parametrize("argv,message", [
    (["--kafka-version", "4.0.1"], "--kafka-version '4.0.1' is not one of the catalog's builds"),
    (["--kafka-version", "4.3.1,4.3.1"], "--kafka-version 4.3.1 is named twice"),
    (["--kafka-version", "4.3.1", "--builds", "all"], "give exactly one of --kafka-version"),
    (["--builds", "most"], "--builds 'most': the only value is `all`"),
    (["--kafka-version", "4.3.1", "--budget", "soon"], "--budget: 'soon' is not a duration"),
    (["--kafka-version", "4.3.1", "--budget", "0"], "--budget: '0': give a duration > 0"),
    (["--kafka-version", "4.3.1", "--seed", "x"], "--seed 'x' is not a whole number"),
    (["--kafka-version", "4.3.1", "--weights", "warp=3"], "--weights: unknown step kind"),
    (["--kafka-version", "4.3.1", "--direct-share", "2"],
     "--direct-share '2': give a chance between 0 and 1"),
])
def test_bad_input_is_refused_before_anything_runs(
        argv: list[str], message: str, tmp_path: Path, capsys: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster import builds

    def no(*a: Any, **k: Any) -> Any:
        raise AssertionError("a build was resolved")
    monkeypatch.setattr(builds, "resolve", no)
    base = {"--budget": "1m", "--seed": "1", "--campaign-dir": str(tmp_path / "c")}
    for flag, value in base.items():
        if flag not in argv:
            argv = [*argv, flag, value]
    assert app.main(["hunt", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_campaign_dir_of_another_seed_is_refused_before_anything_runs(
        tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.cluster import builds
    hunt.hunt(cfg(runs=1, seed=7), [plan(Fake())], tmp_path)

    def no(*a: Any, **k: Any) -> Any:
        raise AssertionError("a build was resolved")
    monkeypatch.setattr(builds, "resolve", no)
    assert app.main(["hunt", "--kafka-version", "4.3.1", "--budget", "1m", "--seed", "8",
                     "--campaign-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--campaign-dir" in err and "give --seed 7 to resume it, or a new --campaign-dir" in err


def test_a_corpus_entry_is_the_scenario_the_run_ran(tmp_path: Path) -> None:
    """The run directory's scenario.yaml (its cluster included) is what the corpus keeps."""
    run_dir = tmp_path / "runs" / "fuzz-s1-0"
    run_dir.mkdir(parents=True)

    class Ran(Fake):
        def run(self, name: str, seed: int, steps: Any) -> fuzz.Outcome:
            out = super().run(name, seed, steps)
            text = fuzz.scenario_yaml(name, seed, steps, "as the run ran it")
            (run_dir / "scenario.yaml").write_text(text)
            return fuzz.Outcome(out.signature, None, run_dir)
    fake = Ran(reach={0: Reach(frozenset({"fenced"}))})
    fake.reach = lambda out: Reach(frozenset({"fenced"}))  # type: ignore[method-assign]
    st = hunt.hunt(cfg(runs=1), [plan(fake)], tmp_path / "c").builds["4.3.1"]
    (entry,) = st.corpus
    assert "as the run ran it" in (tmp_path / "c" / entry.file).read_text()


def test_time_to_first_hit_is_when_the_failing_run_ended(tmp_path: Path) -> None:
    now = [0.0]

    class Slow(Fake):
        def run(self, name: str, seed: int, steps: Any) -> fuzz.Outcome:
            now[0] += 100.0
            return super().run(name, seed, steps)
    fake = Slow(sigs={1: SIG_SAFETY})
    st = hunt.hunt(cfg(runs=3), [plan(fake)], tmp_path, clock=lambda: now[0]).builds["4.3.1"]
    (k,) = st.known
    assert (k.found_at_run, k.found_after_s) == (2, 200.0)  # not after its re-run and shrink
    assert st.seconds == now[0] > 300


def test_every_run_is_logged_with_when_it_ended(tmp_path: Path) -> None:
    """The run log (the campaign report's coverage over time): generated runs, the re-run
    and the shrink attempts, each with the build's campaign seconds when it ended."""
    now = [0.0]

    class Slow(Fake):
        def run(self, name: str, seed: int, steps: Any) -> fuzz.Outcome:
            now[0] += 10.0
            return super().run(name, seed, steps)
    fake = Slow(sigs={1: SIG_SAFETY}, boom={2})
    st = hunt.hunt(cfg(runs=3), [plan(fake)], tmp_path, clock=lambda: now[0]).builds["4.3.1"]
    log = st.run_log
    assert [e["run"] for e in log] == fake.calls
    assert [e["ended_s"] for e in log] == [10.0 * (i + 1) for i in range(len(log))]
    assert [e["run"] for e in log if e["error"]] == ["fuzz-s1-2"]
    assert {"fuzz-s1-1-again", "fuzz-s1-1-shrink1"} <= {e["run"] for e in log}
    saved = json.loads((tmp_path / hunt.STATE_FILE).read_text())["builds"]["4.3.1"]
    assert saved["run_log"] == log


# --- cited deviations met (a behaviour a later release fixed: KAFKA-12670, KAFKA-19975) ------

def test_a_deviation_the_kip_axis_needed_is_coverage_with_its_first_run_and_time(
        tmp_path: Path) -> None:
    now = [0.0]

    class Slow(Fake):
        def run(self, name: str, seed: int, steps: Any) -> fuzz.Outcome:
            now[0] += 60.0
            return super().run(name, seed, steps)
    ignored = Reach(deviations=frozenset({"unclean-election-config-ignored"}))
    fake = Slow(reach={1: ignored, 2: ignored})
    state = hunt.hunt(cfg(runs=3), [plan(fake)], tmp_path, clock=lambda: now[0])
    st = state.builds["4.3.1"]
    assert st.coverage == {"deviation:unclean-election-config-ignored": "fuzz-s1-1"}
    assert [e.name for e in st.corpus] == ["fuzz-s1-1"]  # a new behaviour joins the corpus
    assert st.deviations_met() == {"unclean-election-config-ignored":
                                   {"run": "fuzz-s1-1", "minutes": 2.0}}
    md = (tmp_path / "hunt.md").read_text()
    assert "- **4.3.1**: unclean-election-config-ignored (fuzz-s1-1, 2.0 min)" in md
    assert json.loads((tmp_path / "hunt.json").read_text())["builds"][0]["deviations_met"] == {
        "unclean-election-config-ignored": {"run": "fuzz-s1-1", "minutes": 2.0}}


def test_no_deviation_met_says_none(tmp_path: Path) -> None:
    hunt.hunt(cfg(runs=2), [plan(Fake())], tmp_path)
    assert "- **4.3.1**: none" in (tmp_path / "hunt.md").read_text().split(
        "## Cited deviations met")[1]


def test_a_recorded_runs_kip_deviations_are_what_it_reached() -> None:
    r = hunt.reach_of_run(
        FIXTURE / "last-known-leader-elected-after-unclean-restart-20261123T164125-7d77b6")
    assert r.deviations == {"last-known-elr-is-last-leader", "no-unclean-recovery"}
    assert "deviation:no-unclean-recovery" in r.features()


# --- directed schedules ----------------------------------------------------------------------

def test_directed_schedules_aim_at_a_transition_the_build_has_not_reached(
        tmp_path: Path) -> None:
    # Run 0 reaches every transition but `leaderless`: every later index (all directed, none
    # mutated) runs a candidate whose model shows a leaderless partition for sure.
    fake = Fake(reach={0: Reach(frozenset(hunt.TRANSITION_NAMES) - {"leaderless"})})
    config = cfg(runs=6, direct_share=1.0, mutate_share=0.0)
    st = hunt.hunt(config, [plan(fake)], tmp_path / "a").builds["4.3.1"]
    later = generated(fake)[1:]
    assert st.directed == 6 and st.mutated == 0  # run 0 too: nothing was reached before it
    for n in later:
        assert "leaderless" in fuzzgen.predicted_transitions(MODELS["4.3.1"], fake.steps[n]), n
        assert fake.steps[n] != fuzz.schedule(MODELS["4.3.1"], 1, Fake.index(n), config.gen())
    # The same campaign again picks the same candidates.
    again = Fake(reach={0: Reach(frozenset(hunt.TRANSITION_NAMES) - {"leaderless"})})
    hunt.hunt(config, [plan(again)], tmp_path / "b")
    assert [again.steps[n] for n in later] == [fake.steps[n] for n in later]


def test_no_directed_schedule_once_every_transition_is_reached(tmp_path: Path) -> None:
    fake = Fake(reach={0: Reach(frozenset(hunt.TRANSITION_NAMES))})
    config = cfg(runs=4, direct_share=1.0, mutate_share=0.0)
    st = hunt.hunt(config, [plan(fake)], tmp_path).builds["4.3.1"]
    assert st.directed == 1  # run 0 only
    for n in generated(fake)[1:]:
        assert fake.steps[n] == fuzz.schedule(MODELS["4.3.1"], 1, Fake.index(n), config.gen())


def test_resume_keeps_the_campaigns_own_settings_for_flags_not_given(tmp_path: Path) -> None:
    """A campaign started before --log-dirs had a default (none recorded: 0) resumes with
    none when the flag is left out, instead of the new default changing its schedules;
    a flag given with another value than the campaign's is refused, naming it."""
    from dataclasses import replace

    from harness.cli import hunt as hunt_cli

    hunt.hunt(cfg(runs=1), [plan(Fake())], tmp_path)  # log_dirs 0: not recorded
    args = app.parser().parse_args(["hunt", "--kafka-version", "4.3.1", "--budget", "1m",
                                    "--seed", "1",
                                    "--campaign-dir", str(tmp_path)])
    given, _, _ = hunt_cli.parse_args(args)
    assert given.log_dirs > 0 and "log_dirs" in given.resume_defaults  # the new default
    kept = hunt.resume_config(tmp_path, replace(cfg(), log_dirs=given.log_dirs,
                                                resume_defaults=given.resume_defaults))
    assert kept.log_dirs == 0.0 and kept.upgrades == 0.0 and kept.tiered == 0.0
    assert hunt.load_state(tmp_path, kept).settings.get("log_dirs", 0.0) == 0.0
    with pytest.raises(UsageError, match=r"--log-dirs 0.0, not 0.3: leave --log-dirs out"):
        hunt.load_state(tmp_path, replace(cfg(), log_dirs=0.3))
    assert hunt.resume_config(tmp_path / "new", replace(cfg(), log_dirs=0.1, resume_defaults=
                                                        frozenset({"log_dirs"}))).log_dirs == 0.1


def test_a_mutation_the_loader_refuses_is_not_run() -> None:
    """A mutated schedule `run`'s loader refuses (certify's hunt on 4.4.0 met a create_topic
    placed by Kafka on a cluster with too many placements: a harness error) is replaced by
    the index's own schedule: ``_loads`` says which."""
    from types import SimpleNamespace

    from harness.search.hunt.campaign import BuildHunt
    from reference.model import steps as S
    from reference.model.topics import AddPartitions

    me = SimpleNamespace(cfg=SimpleNamespace(seed=1))
    assert BuildHunt._loads(me, 3, (S.Consume(),))  # type: ignore[arg-type]
    assert not BuildHunt._loads(me, 3, (AddPartitions(1), S.Consume()))  # type: ignore[arg-type]
