"""kafka-chaos fuzz (issue 13): generator validity against the model, seed
reproducibility, YAML round trip through the loader, the shrinker, signature dedupe and
flaky classification. No cluster: the shrinker and the campaign get a fake "run and
judge" function here (and only here)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from harness.judge.axes import AxisVerdict
from harness.run.runner import Runner
from harness.scenario import steps as step_kinds
from harness.scenario.loader import load_scenario, parse_scenario
from harness.search import fuzz
from harness.search.fuzz import campaign as fuzz_campaign
from harness.search.shrink import shrink
from reference import profile_for_build
from reference.model import steps as S
from reference.search import fuzzgen

BASE = fuzz.base_scenario()


def new_model(version: tuple[int, int, int] = (4, 3, 1), elr: bool = True) -> Any:
    prof = profile_for_build(version, elr)
    return lambda: Runner.model_for(BASE, prof, elr)


MODELS = {"4.3.1": new_model(), "3.9.1": new_model((3, 9, 1), False)}


# --- generator ---------------------------------------------------------------------------

@pytest.mark.parametrize("build", sorted(MODELS))
def test_generated_steps_are_valid_in_the_models_state(build: str) -> None:
    nm = MODELS[build]
    kinds: set[str] = set()
    acks: set[str] = set()
    for index in range(60):
        steps = fuzz.schedule(nm, 3, index, fuzz.gen_config(length=12))
        assert fuzzgen.validate(nm, steps, fuzz.gen_config()) is None
        model, track = nm(), fuzzgen.Track()
        for step in steps:
            assert fuzzgen.why_invalid(step, model, track, fuzz.gen_config()) is None
            if isinstance(step, S.Restart):  # restart only a stopped/killed node
                assert all(not w.broker(step.broker).alive for w in model.branches)
            if isinstance(step, S.Heal):  # heal only an existing cut or timing toxic
                assert all(w.cuts for w in model.branches) or track.shaped
            pred = model.apply(step)
            assert not pred.unsupported
            fuzzgen.after(step, track, fuzz.gen_config())
            kinds.add(step.kind)
            if isinstance(step, S.Produce):
                acks.add(step.acks)
        assert len(track.ever_killed) <= 1  # min ISR 2: one broker may shut down uncleanly
    # every kind whose definition names a generator, pause and resume included
    # upgrade and feature need the run's builds (tests/test_fuzz_upgrades.py), the
    # log-directory kinds a cluster with several (tests/test_fuzz_logdirs.py).
    assert kinds == set(step_kinds.generators()) - {"upgrade", "feature",
                                                    "move_replica_dir", "fail_log_dir"}
    assert {"pause", "resume"} <= kinds
    assert acks == {"0", "1", "all"}


def test_rules_refuse_invalid_steps() -> None:
    nm = MODELS["4.3.1"]
    cfg = fuzzgen.GenConfig()
    model, track = nm(), fuzzgen.Track()
    assert "not down" in (fuzzgen.why_invalid(S.Restart(1), model, track, cfg) or "")
    assert "not killed" in (fuzzgen.why_invalid(S.LoseUnflushed(1, 0), model, track, cfg) or "")
    assert "nothing to heal" in (fuzzgen.why_invalid(S.Heal(), model, track, cfg) or "")
    for step in (S.Produce(2, "all"), S.Kill(1)):
        model.apply(step)
        fuzzgen.after(step, track, fuzz.gen_config())
    assert fuzzgen.why_invalid(S.LoseUnflushed(1, 1), model, track, cfg) is None
    assert "log end" in (fuzzgen.why_invalid(S.LoseUnflushed(1, 2), model, track, cfg) or "")
    model.apply(S.LoseUnflushed(1, 1))
    fuzzgen.after(S.LoseUnflushed(1, 1), track, fuzz.gen_config())
    assert "already" in (fuzzgen.why_invalid(S.LoseUnflushed(1, 0), model, track, cfg) or "")
    # A stop is not a kill: no lose_unflushed after it; and the fault budget holds.
    model.apply(S.Stop(2))
    fuzzgen.after(S.Stop(2), track, fuzz.gen_config())
    assert fuzzgen.why_invalid(S.LoseUnflushed(2, 0), model, track, cfg) is not None
    assert "last running broker" in (fuzzgen.why_invalid(S.Kill(3), model, track, cfg) or "")
    assert fuzzgen.validate(nm, (S.Restart(1),)) == (0, "broker 1 is not down")
    # Fault budget (min ISR - 1 = 1): a second broker is never killed, the first may be
    # killed again.
    model.apply(S.Restart(1))
    fuzzgen.after(S.Restart(1), track, fuzz.gen_config())
    assert "at most 1 broker(s) killed" in (fuzzgen.why_invalid(S.Kill(3), model, track, cfg)
                                            or "")
    assert fuzzgen.why_invalid(S.Kill(1), model, track, cfg) is None


def test_guided_campaign_runs_only_schedules_the_model_says_lose_data(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_campaign, "MAX_GUIDED_SKIPS", 100)
    seen: list[tuple[Any, ...]] = []

    def run(name: str, seed: int, steps: tuple[Any, ...]) -> fuzz.Outcome:
        seen.append(steps)
        return fuzz.Outcome(None)
    # The kinds the last replica standing needs (the others, at their default weights,
    # would leave fewer schedules that lose data within the 100 looked at).
    # Seed 3: two of its first 100 schedules lose data in the model (indexes 20 and 43).
    cfg = fuzz.CampaignConfig(seed=3, runs=2, guided=True,
                              gen=fuzzgen.GenConfig(weights=fuzz.parse_weights(
                                  "isolate=5,cut=3,kill=4,lose_unflushed=10,consume=0,"
                                  "alter_config=0,elect=0,reassign=0,latency=0,bandwidth=0,"
                                  "sleep=0,unregister=0")))
    res = fuzz.Campaign(cfg, MODELS["3.9.1"], run, tmp_path).run()
    assert res.runs == 2 and res.skipped_by_model > 0
    assert all(fuzzgen.predicts_acked_loss(MODELS["3.9.1"], s) for s in seen)
    # 4.3.1's model (ELR) loses nothing within the budget: the search gives up, bounded.
    res = fuzz.Campaign(fuzz.CampaignConfig(seed=1, runs=1, guided=True), MODELS["4.3.1"],
                        run, tmp_path).run()
    assert res.runs == 0 and res.stopped.startswith("--guided: none")


def test_a_seed_reproduces_a_schedule_exactly() -> None:
    nm = MODELS["3.9.1"]
    cfg = fuzzgen.GenConfig(length=10)
    first = [fuzz.schedule(nm, 42, i, cfg) for i in range(10)]
    again = [fuzz.schedule(nm, 42, i, cfg) for i in range(10)]
    assert first == again
    other = [fuzz.schedule(nm, 43, i, cfg) for i in range(10)]
    assert first != other
    assert len(set(first)) > 5  # the runs of one campaign differ from each other
    assert fuzz.scenario_yaml("x", 1, first[0]) == fuzz.scenario_yaml("x", 1, again[0])


def test_weights_turn_kinds_off_and_bad_weights_are_refused() -> None:
    w = fuzz.parse_weights("isolate=0,cut=0,heal=0,stop=0")
    for i in range(20):
        steps = fuzz.schedule(MODELS["4.3.1"], 1, i, fuzzgen.GenConfig(weights=w))
        assert not {s.kind for s in steps} & {"isolate", "cut", "stop"}
    for bad in ("nope=1", "kill", "kill=x", "kill=-1", "produce=0"):
        with pytest.raises(ValueError):
            fuzz.parse_weights(bad)


def test_generated_schedule_round_trips_through_the_loader(tmp_path: Path) -> None:
    for index in range(30):
        steps = fuzz.schedule(MODELS["4.3.1"], 5, index, fuzzgen.GenConfig(length=12))
        text = fuzz.scenario_yaml(f"fuzz-s5-{index}", fuzz.schedule_seed(5, index), steps)
        path = tmp_path / f"s{index}.yaml"
        path.write_text(text)
        sc = load_scenario(path)
        assert sc.name == f"fuzz-s5-{index}" and sc.seed == fuzz.schedule_seed(5, index)
        assert tuple(loaded.step for loaded in sc.steps) == steps
        assert sc.cluster.brokers == 3 and sc.topic.min_insync_replicas == 2


# --- signatures --------------------------------------------------------------------------

def _axes(release: str = "CONFORMS", kip: str = "CONFORMS", safety: str = "SAFE",
          rules: tuple[str, ...] = (), reason: str = "") -> dict[str, AxisVerdict]:
    return {"release": AxisVerdict("release", release, reason),
            "kip": AxisVerdict("kip", kip, "step 9: acked records lost: ['r1']"
                               if kip != "CONFORMS" else ""),
            "safety": AxisVerdict("safety", safety, "x", [{"rule": r} for r in rules])}


def test_signature_names_axis_verdict_and_rules() -> None:
    assert fuzz.signature(_axes()) is None
    assert fuzz.signature(_axes(kip="DEVIATES")) is None  # clean on the kip axis
    sig = fuzz.signature(_axes(safety="UNSAFE", rules=("acked-record-durable",)))
    assert sig == (("safety", "UNSAFE", ("acked-record-durable",)),)
    sig2 = fuzz.signature(_axes(release="DIVERGES", reason="isr: predicted one of [[1]], "
                                "observed [1,2]", kip="KIP-DIVERGES"))
    assert sig2 == (("kip", "KIP-DIVERGES", ("acked records lost",)),
                    ("release", "DIVERGES", ("isr",)))


def test_a_divergence_has_one_signature_whichever_partition_shows_it() -> None:
    # Multi-partition reasons name the partition first; one divergence on two partitions
    # was two signatures (seen in a hunt on 4.3.1: [t-1] beside [replicas]).
    one = fuzz.signature(_axes(release="DIVERGES",
                               reason="step 4: t-1: replicas: predicted [[3, 2]], "
                                      "observed [3, 2, 1]"))
    other = fuzz.signature(_axes(release="DIVERGES",
                                 reason="step 6: t-{0,2}: replicas: predicted [[3, 1, 2]]"))
    plain = fuzz.signature(_axes(release="DIVERGES", reason="replicas: predicted [[3, 1, 2]]"))
    assert one == other == plain == (("release", "DIVERGES", ("replicas",)),)


# --- shrinker (fake run-and-judge: tests of the shrinker only) ---------------------------

TARGET = (("safety", "UNSAFE", ("acked-record-durable",)),)


def loses(steps: tuple[Any, ...]) -> bool:
    """The fake oracle: an acks=all produce, later a kill of broker 1 and a
    lose_unflushed of broker 1 at an offset below what was produced."""
    produced = 0
    killed = False
    for s in steps:
        if isinstance(s, S.Produce) and s.acks == "all" and not killed:
            produced += s.count
        if isinstance(s, S.Kill) and s.broker == 1 and produced:
            killed = True
        if isinstance(s, S.LoseUnflushed) and s.broker == 1 and killed and s.offset < produced:
            return True
    return False


LONG = (S.Produce(3, "all"), S.Isolate(2), S.Produce(2, "1"), S.Cut(1, 3), S.Heal(),
        S.Produce(4, "all"), S.Stop(3), S.Restart(3), S.Kill(1), S.LoseUnflushed(1, 4),
        S.Produce(1, "0"), S.Restart(1), S.Consume())


def test_shrinker_reduces_to_the_steps_the_failure_needs() -> None:
    assert fuzzgen.validate(MODELS["3.9.1"], LONG) is None
    runs: list[tuple[Any, ...]] = []

    def attempt(steps: tuple[Any, ...]) -> Any:
        runs.append(steps)
        return TARGET if loses(steps) else None
    res = shrink(LONG, TARGET, attempt, fuzz.repairer(MODELS["3.9.1"]), max_attempts=200)
    assert res.stopped == "no smaller schedule keeps the signature"
    assert res.steps == (S.Produce(1, "all"), S.Kill(1), S.LoseUnflushed(1, 0), S.Consume())
    assert len(res.attempts) == len(runs) and all(a.kept == loses(a.steps)
                                                     for a in res.attempts)
    assert fuzzgen.validate(MODELS["3.9.1"], res.steps, fuzzgen.GenConfig(max_count=10_000)) \
        is None


def test_shrinker_is_bounded_in_attempts_and_time() -> None:
    res = shrink(LONG, TARGET, lambda s: TARGET if loses(s) else None,
                 fuzz.repairer(MODELS["3.9.1"]), max_attempts=10)
    assert len(res.attempts) == 10 and res.stopped.startswith("attempts exhausted")
    assert loses(res.steps) and len(res.steps) < len(LONG)
    ticks = itertools.count()
    res = shrink(LONG, TARGET, lambda s: TARGET if loses(s) else None,
                 fuzz.repairer(MODELS["3.9.1"]), budget_s=5, clock=lambda: float(next(ticks)))
    assert res.stopped.startswith("time exhausted") and len(res.attempts) <= 3


def test_shrinker_keeps_only_the_same_signature() -> None:
    other = (("release", "DIVERGES", ("isr",)),)
    # Every smaller schedule fails differently: nothing is kept.
    res = shrink(LONG, TARGET, lambda s: other, fuzz.repairer(MODELS["3.9.1"]),
                 max_attempts=500)
    assert res.steps == LONG and not any(a.kept for a in res.attempts)


def test_shrinker_merges_produces_and_lowers_counts() -> None:
    steps = (S.Produce(2, "all"), S.Produce(3, "all"), S.Kill(1), S.LoseUnflushed(1, 4))

    def attempt(s: tuple[Any, ...]) -> Any:
        return TARGET if sum(x.count for x in s if isinstance(x, S.Produce)) >= 5 \
            and loses(s) else None
    res = shrink(steps, TARGET, attempt, fuzz.repairer(MODELS["3.9.1"]), max_attempts=100)
    assert res.steps[0] == S.Produce(5, "all") and len(res.steps) == 3
    assert isinstance(res.steps[2], S.LoseUnflushed) and res.steps[2].offset == 0


# --- campaign: dedupe and flaky classification (fake runs) -------------------------------

class FakeRuns:
    """Outcomes by schedule name; the schedule's own text is what a real run would take."""

    def __init__(self, decide: Any) -> None:
        self.decide, self.calls = decide, []  # type: list[str]

    def __call__(self, name: str, seed: int, steps: tuple[Any, ...]) -> fuzz.Outcome:
        self.calls.append(name)
        parse_scenario(fuzz.scenario_yaml(name, seed, steps))  # what `run` would load
        return fuzz.Outcome(self.decide(name, steps, len(self.calls)))


def campaign(tmp_path: Path, decide: Any, runs: int = 6, **kw: Any) -> Any:
    cfg = fuzz.CampaignConfig(seed=1, runs=runs, shrink_attempts=kw.pop("attempts", 5), **kw)
    fake = FakeRuns(decide)
    lines: list[str] = []
    res = fuzz.Campaign(cfg, MODELS["3.9.1"], fake, tmp_path, say=lines.append).run()
    return res, fake, lines


def test_failures_are_deduplicated_by_signature(tmp_path: Path) -> None:
    def decide(name: str, steps: Any, n: int) -> Any:
        index = int(name.split("-")[2])
        return TARGET if index in (1, 3, 4) else None
    res, fake, lines = campaign(tmp_path, decide)
    assert len(res.failures) == 1
    f = res.failures[0]
    assert f.signature == TARGET and len(f.runs) == 3 and f.status == "reproducible"
    assert f.minimal is not None and f.minimal.is_file()
    assert load_scenario(f.minimal).steps  # the minimal file is a scenario `run` takes
    shrinks = [c for c in fake.calls if "shrink" in c]
    assert 0 < len(shrinks) <= 5 and all(c.startswith("fuzz-s1-1-") for c in shrinks)
    assert any(line.startswith("fuzz: runs done 6/6 (+") and "failures found 1" in line
               for line in lines)
    # The minimal schedule is re-run (--confirm times) and its rate recorded.
    assert [c for c in fake.calls if "-min" in c] == ["fuzz-s1-1-min1"]
    assert (f.minimal_hits, f.minimal_tries) == (1, 1) and f.to_json()["minimal_rate"] == "1/1"
    assert (tmp_path / "fuzz-summary.json").is_file()


def test_a_failure_that_does_not_reproduce_is_flaky_with_its_rate(tmp_path: Path) -> None:
    def decide(name: str, steps: Any, n: int) -> Any:
        return TARGET if name == "fuzz-s1-2" else None
    res, fake, _ = campaign(tmp_path, decide, confirm=3)
    (f,) = res.failures
    assert f.status == "flaky" and (f.hits, f.tries) == (1, 4)
    assert f.to_json()["rate"] == "1/4" and f.shrink is None
    assert not any("shrink" in c for c in fake.calls)


def test_campaign_stops_at_the_budget(tmp_path: Path) -> None:
    ticks = itertools.count(0, 10)
    cfg = fuzz.CampaignConfig(seed=1, budget_s=35)
    res = fuzz.Campaign(cfg, MODELS["4.3.1"], FakeRuns(lambda *a: None), tmp_path,
                        clock=lambda: float(next(ticks))).run()
    assert res.stopped == "budget spent" and 1 <= res.runs <= 4


@pytest.mark.parametrize("argv,message", [
    (["--runs", "3", "--budget", "1m"], "exactly one of"),
    (["--seed", "1"], "exactly one of"),
    (["--runs", "0"], "--runs 0"),
    (["--budget", "soon"], "not a duration"),
    (["--runs", "2", "--weights", "kill=lots"], "whole number"),
    (["--runs", "2", "--steps", "0"], "--steps 0"),
    (["--runs", "2", "--seed", "-1"], "--seed -1"),
    (["--runs", "2", "--master", "yarn"], "spark://HOST:PORT"),
    (["--runs", "2", "--target", "hwm-rule-off,no-such-rule"], "not a rule's mutant"),
    (["--runs", "2", "--master", "spark://127.0.0.1:9"], "cannot reach it"),
])
def test_bad_flags_fail_before_any_build_or_cluster(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str],
                                                    argv: list[str], message: str) -> None:
    from harness.cli import app
    from harness.cluster import builds

    def no_build(*a: Any, **k: Any) -> Any:
        raise AssertionError("a build was resolved")
    monkeypatch.setattr(builds, "resolve", no_build)
    if "--seed" not in argv:
        argv = [*argv, "--seed", "1"]
    assert app.main(["fuzz", "--kafka-version", "4.3.1", *argv]) == 2
    assert message in capsys.readouterr().err


def test_side_by_side_runs_give_the_campaign_one_at_a_time_gives(tmp_path: Path) -> None:
    """--jobs / Spark executors: a wave of generated runs at once, then their outcomes in
    schedule order, so dedupe, confirmation and shrinking see what a serial campaign sees."""
    def decide(name: str, steps: Any, n: int) -> Any:
        return TARGET if name.split("-")[2] in ("1", "4") else None
    results = []
    for width in (1, 3):
        cfg = fuzz.CampaignConfig(seed=1, runs=7, shrink_attempts=3)
        fake = FakeRuns(decide)
        res = fuzz.Campaign(cfg, MODELS["3.9.1"], fake, tmp_path / str(width),
                            width=width).run()
        results.append((res.generated, res.runs, [f.to_json()["runs"] for f in res.failures],
                        sorted(fake.calls)))
    assert results[0] == results[1]
    assert results[0][0] == 7 and len(results[0][2][0]) == 2


def test_shrinker_runs_preferred_candidates_first() -> None:
    def attempt(s: tuple[Any, ...]) -> Any:
        return TARGET if loses(s) else None
    plain = shrink(LONG, TARGET, attempt, fuzz.repairer(MODELS["3.9.1"]), max_attempts=200)
    hinted = shrink(LONG, TARGET, attempt, fuzz.repairer(MODELS["3.9.1"]), max_attempts=200,
                    prefer=loses)
    assert hinted.steps == plain.steps
    assert len(hinted.attempts) < len(plain.attempts)
    kept = [a.kept for a in hinted.attempts]
    assert kept == sorted(kept, reverse=True)  # every kept run before the first refused one
    # The hint for a loss the release model predicts; none when the release diverges.
    assert fuzz.prefer_for(TARGET, MODELS["3.9.1"]) is not None
    assert fuzz.prefer_for((("release", "DIVERGES", ("isr",)),) + TARGET,
                           MODELS["3.9.1"]) is None


def test_model_any_electable_broker_may_unfence_first() -> None:
    """Found by the 4.3.1 campaign (fuzz-s431-19): ELR [1, 2], both unfenced by one heal;
    the controller elects whichever heartbeat comes first (2 on the cluster, twice); the
    model unfenced brokers in id order and allowed only 1."""
    model = MODELS["4.3.1"]()
    for step in (S.Produce(3, "all"), S.Stop(3), S.Isolate(1), S.Isolate(2)):
        pred = model.apply(step)
    assert {s.leader for s in pred.allowed} == {-1}
    assert pred.allowed[0].elr == frozenset({1, 2})
    pred = model.apply(S.Heal())
    assert {s.leader for s in pred.allowed} == {1, 2}


def test_model_brokers_cut_off_together_may_be_fenced_in_either_order() -> None:
    """Found by the 4.3.1 campaign with partitions (fuzz-s44-1): replicas [2, 1, 3] led by
    1; a partition sends 1 and 2 away from the controller. The controller fences one stale
    broker at a time, the oldest heartbeat first (maybeFenceOneStaleBroker): 2 first kept 1
    leading, then 3 took over (epoch + 1, seen on the cluster); 1 first elects 2, then 3
    (epoch + 2). The model fenced in id order and allowed only the second."""
    scenario = parse_scenario(
        "version: 1\nname: fenced-together\ncluster: {brokers: 3, elr: false}\n"
        "topic: {name: t, replicas: [2, 1, 3], min_insync_replicas: 1}\nsteps:\n"
        "- consume: {}\n")
    model = Runner.model_for(scenario, profile_for_build((4, 3, 1), False), False)
    model.apply(S.Isolate(2))
    pred = model.apply(S.Heal())
    assert {(s.leader, s.leader_epoch) for s in pred.allowed} == {(1, 1)}
    pred = model.apply(S.Partition(((100, 3), (1, 2))))
    assert {(s.leader, s.leader_epoch) for s in pred.allowed} == {(3, 2), (3, 3)}


def test_model_acks_1_records_may_go_to_a_deposed_leader_that_does_not_know_it() -> None:
    """Found by the 4.3.1 campaign with partitions (fuzz-s44-11, its re-run): a partition
    sends leader 2 and follower 1 away from the controller, which elects 3. A fresh
    producer learned its metadata on 2's side: 2 acked both acks=1 records and 3's HWM
    stayed 0. The model sent them to 3 only (HWM 2). acks=all goes to the real leader."""
    scenario = parse_scenario(
        "version: 1\nname: deposed-leader\ncluster: {brokers: 3, elr: false}\n"
        "topic: {name: t, replicas: [2, 1, 3], min_insync_replicas: 1}\nsteps:\n"
        "- consume: {}\n")
    model = Runner.model_for(scenario, profile_for_build((4, 3, 1), False), False)
    pred = model.apply(S.Partition(((100, 3), (1, 2))))
    assert {s.leader for s in pred.allowed} == {3}
    pred = model.apply(S.Produce(2, "1"))
    assert {s.hwm for s in pred.allowed} == {0, 2}
    pred = model.apply(S.Heal())
    assert {s.hwm for s in pred.allowed} == {0, 2}  # the deposed leader's records are gone
    pred = model.apply(S.Produce(1, "all"))
    assert {s.hwm for s in pred.allowed} == {1, 3}


def test_model_a_min_isr_change_alone_does_not_move_the_hwm() -> None:
    """Found by the 4.3.1 campaign (fuzz-s44-16, shrunk to 4 steps): follower 2 cut, an
    acks=all record appended and held below min ISR 2 (ISR [3]); min ISR lowered to 1.
    The leader recomputes its HWM only on an append, a follower's fetch moving its log
    end, or a partition change, and applies the partition changes of a metadata batch
    before its configs: the HWM stayed until the next trigger. The model advanced it at
    the config change."""
    scenario = parse_scenario(
        "version: 1\nname: min-isr-no-trigger\ncluster: {brokers: 3, elr: true}\n"
        "topic: {name: t, replicas: [3, 2], min_insync_replicas: 2}\nsteps:\n"
        "- consume: {}\n")
    model = Runner.model_for(scenario, profile_for_build((4, 3, 1), True), True)
    model.apply(S.Cut(2, 3))
    pred = model.apply(S.Produce(1, "all"))
    assert {(tuple(s.isr), s.hwm) for s in pred.allowed} == {((3,), 0)}
    pred = model.apply(S.AlterConfig("topic", fuzzgen.Config({"min.insync.replicas": "1"})))
    assert {s.hwm for s in pred.allowed} == {0}
    pred = model.apply(S.Consume())
    assert {s.hwm for s in pred.allowed} == {0}  # still no trigger
    pred = model.apply(S.Produce(1, "1"))  # the leader's append recomputes it
    assert {s.hwm for s in pred.allowed} == {2}


def test_model_an_unclean_election_may_pick_whichever_replica_is_back_first() -> None:
    """Found by the 4.1.2 campaign (fuzz-s42-33): replicas [2, 1], ISR and ELR emptied (the
    min ISR change clears the ELR), unclean election on; one heal unfences both and the
    controller elected 1, the first back (generateLeaderAndIsrUpdates elects uncleanly at
    an unfencing). The model allowed only 2, the first in assignment order."""
    scenario = parse_scenario(
        "version: 1\nname: unclean-first-back\ncluster: {brokers: 3, elr: true}\n"
        "topic: {name: t, replicas: [2, 1], min_insync_replicas: 2,\n"
        "        config: {unclean.leader.election.enable: 'true'}}\nsteps:\n- consume: {}\n")
    model = Runner.model_for(scenario, profile_for_build((4, 1, 2), True), True)
    for step in (S.Produce(5, "all"), S.Isolate(1), S.Isolate(2),
                 S.AlterConfig("topic", fuzzgen.Config({"min.insync.replicas": "1"}))):
        pred = model.apply(step)
    assert {s.leader for s in pred.allowed} == {-1}
    assert not pred.allowed[0].elr and not pred.allowed[0].last_known_elr
    pred = model.apply(S.Heal())
    assert {s.leader for s in pred.allowed} == {1, 2}


def test_model_an_acks_all_record_passed_by_the_hwm_below_min_isr_is_not_acked() -> None:
    """Found by the 3.6.2 campaign (fuzz-s42-1): follower 3 cut, two acks=all records.
    Before 3.7 the HWM advances with the ISR alone, so the first record is committed as
    the ISR shrinks to [2]; the leader answers it NOT_ENOUGH_REPLICAS_AFTER_APPEND (ISR
    below min ISR), its retries and the second record are refused before the append: HWM
    1, nothing acked. The model acked the first and appended the second (HWM 2)."""
    scenario = parse_scenario(
        "version: 1\nname: below-min-isr-at-completion\ncluster: {brokers: 3}\n"
        "topic: {name: t, replicas: [2, 3], min_insync_replicas: 2}\nsteps:\n- consume: {}\n")
    model = Runner.model_for(scenario, profile_for_build((3, 6, 2), False), False)
    model.apply(S.Cut(2, 3))
    pred = model.apply(S.Produce(2, "all"))
    assert {(s.isr, s.hwm) for s in pred.allowed} == {(frozenset({2}), 1)}
    assert pred.expected_acks == "rejected"  # neither acked
    assert len(pred.must_see) == 1  # the first is committed all the same: a read shows it


def test_model_a_leader_may_take_a_record_with_the_min_isr_it_had_before_a_change() -> None:
    """Found by the 3.8.1 campaign (fuzz-s42-34): ISR [2], min ISR raised 1 -> 2, then an
    acks=all record: acked with HWM 1, because leader 2 (behind a latency toxic) applied the
    new min ISR 0.14 s after it took the record. In the step right after the change the
    model lets the leader use the old value; a step later, not."""
    scenario = parse_scenario(
        "version: 1\nname: min-isr-applied-late\ncluster: {brokers: 3}\n"
        "topic: {name: t, replicas: [2, 1], min_insync_replicas: 1}\nsteps:\n- consume: {}\n")
    raise_min_isr = S.AlterConfig("topic", fuzzgen.Config({"min.insync.replicas": "2"}))

    def after_change(*between: S.Step) -> Any:
        model = Runner.model_for(scenario, profile_for_build((3, 8, 1), False), False)
        for step in (S.Stop(1), raise_min_isr, *between):
            model.apply(step)
        return model.apply(S.Produce(1, "all"))

    pred = after_change()
    assert {s.hwm for s in pred.allowed} == {0, 1} and pred.expected_acks == "either"
    pred = after_change(S.Heal())  # a step later the leader has applied it
    assert {s.hwm for s in pred.allowed} == {0} and pred.expected_acks == "rejected"


def test_shrinker_keeps_a_final_consume() -> None:
    from harness.search.shrink import candidates
    cands = candidates(LONG)
    assert cands and all(c[-1] == S.Consume() for c, _ in cands)
    assert any(c[-1] != S.Consume() for c, _ in candidates(LONG[:-1]))  # else drops any


def test_a_targeted_campaign_runs_only_schedules_that_exercise_the_rule(tmp_path: Path) -> None:
    """--target: the model of each schedule is compared with the target mutant's; only the
    schedules where they part (a run could tell the rule) are run, the rest skipped."""
    from harness.cluster.builds import Build, Features
    features = Features(elr=True, elr_default_on=True, describe_topic_partitions=True,
                        hwm_rule=True, unclean_recovery=False, kip1303=False,
                        previous_broker_epoch=True)
    build = Build("4.3.1", "maven:4.3.1", tmp_path, features)
    wanted = fuzz.target_predicate(build, ["unclean-shutdown-undetected"])
    cfg = fuzz.CampaignConfig(seed=5, runs=2, targets=("unclean-shutdown-undetected",))
    fake = FakeRuns(lambda *a: None)
    camp = fuzz.Campaign(cfg, MODELS["4.3.1"], fake, tmp_path)
    camp.target = wanted
    res = camp.run()
    assert res.generated == 2 and res.skipped_by_model > 0
    ran = [int(c.split("-")[2]) for c in fake.calls]
    for index in range(max(ran) + 1):
        steps = fuzz.schedule(MODELS["4.3.1"], 5, index, cfg.gen)
        assert wanted(steps) == (index in ran), index
    assert any(isinstance(x, S.Kill) for x in fuzz.schedule(MODELS["4.3.1"], 5, ran[0], cfg.gen))


def test_pause_rules_keep_a_paused_broker_out_of_heal_stop_and_the_observers_need() -> None:
    nm = MODELS["4.3.1"]
    cfg = fuzz.gen_config()
    model, track = nm(), fuzzgen.Track()
    assert "not paused" in (fuzzgen.why_invalid(S.Resume(1), model, track, cfg) or "")
    for step in (S.Cut(2, 3), S.Pause(1)):
        assert fuzzgen.why_invalid(step, model, track, cfg) is None
        model.apply(step)
        fuzzgen.after(step, track, cfg)
    assert "paused already" in (fuzzgen.why_invalid(S.Pause(1), model, track, cfg) or "")
    # A heal gives back the links, not the paused node (hunt seed 39, fuzz-s39-24).
    assert fuzzgen.why_invalid(S.Heal(), model, track, cfg) is None
    model.apply(S.Heal())
    assert all(1 in w.silenced for w in model.branches)
    assert "no clean shutdown" in (fuzzgen.why_invalid(S.Stop(1), model, track, cfg) or "")
    model.apply(S.Pause(2))
    fuzzgen.after(S.Pause(2), track, cfg)
    assert "observer needs one" in (fuzzgen.why_invalid(S.Pause(3), model, track, cfg) or "")
    assert "observer needs one" in (fuzzgen.why_invalid(S.Kill(3), model, track, cfg) or "")
