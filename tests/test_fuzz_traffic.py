"""kafka-chaos fuzz --traffic (issue 34 item 5): a schedule's traffic block drawn from its
seed and written into its scenario file (the same seed, the same file), the generator
under traffic (no step the loader refuses there, lose_unflushed at offset 0 only, the
model ticks as the runner's lockstep does), shrinking keeps the block, and a failure's
signature and reason carry the traffic's findings. No cluster: runs are faked."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from harness.cli import app
from harness.cluster.builds import Build, Features
from harness.judge.axes import AxisVerdict
from harness.scenario import steps as step_kinds
from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario
from harness.search import fuzz
from reference.model import steps as S
from reference.model import timing as T
from reference.search import fuzzgen

CFG = fuzz.gen_config(length=12, traffic=True)


def build(version: str) -> Build:
    v = tuple(int(x) for x in version.split("."))
    features = Features(elr=v >= (4, 0, 0), elr_default_on=v >= (4, 1, 0),
                        describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                        kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), features)


def campaign(version: str = "4.3.1", seed: int = 7, runs: int = 40
             ) -> list[tuple[int, fuzzgen.Cluster, tuple[Any, ...], str]]:
    """The first schedules of a traffic campaign: (scenario seed, cluster, steps, file)."""
    nm = fuzz.model_factory(build(version))
    out = []
    for index in range(runs):
        steps = fuzz.schedule(nm, seed, index, CFG)
        sseed = fuzz.schedule_seed(seed, index)
        cluster = fuzz.CLUSTERS.of(sseed)
        assert cluster is not None and cluster.traffic is not None
        out.append((sseed, cluster, steps, fuzz.scenario_yaml(f"fuzz-s{seed}-{index}", sseed,
                                                              steps)))
    return out


@functools.cache
def shared(version: str = "4.3.1", runs: int = 40
           ) -> list[tuple[int, fuzzgen.Cluster, tuple[Any, ...], str]]:
    """``campaign``, generated once for the tests that only read it."""
    return campaign(version, runs=runs)


# --- the traffic block ---------------------------------------------------------------------

def test_the_same_seed_gives_the_same_file_with_its_traffic_block() -> None:
    first = [text for *_, text in campaign(runs=8)]
    assert first == [text for *_, text in campaign(runs=8)]
    assert all("\ntraffic:\n" in text for text in first)
    assert len({text.split("steps:")[0] for text in first}) > 5  # the blocks differ by seed
    # Another campaign seed, other schedules and other traffic.
    assert first != [text for *_, text in campaign(seed=8, runs=8)]


def test_the_drawn_traffic_is_within_its_bounds_and_loads_as_drawn() -> None:
    acks, modes, commits, counts = set(), set(), set(), set()
    for sseed, cluster, _, text in shared():
        plan = cluster.traffic
        assert plan is not None and plan == fuzzgen.draw_traffic(sseed, cluster.partitions)
        sc = parse_scenario(text, "<fuzz>")
        assert sc.traffic is not None
        assert 1 <= len(sc.traffic.producers) <= 3 and 1 <= len(sc.traffic.consumers) <= 2
        counts.add((len(sc.traffic.producers), len(sc.traffic.consumers)))
        for p, drawn in zip(sc.traffic.producers, plan.producers, strict=True):
            assert (p.acks, p.idempotent, p.rate, p.keys) == (drawn.acks, drawn.idempotent,
                                                              drawn.rate, drawn.keys)
            assert p.topic == "t" and p.count == 1 and p.records is None
            assert p.acks in ("all", "1") and (not p.idempotent or p.acks == "all")
            assert p.rate is not None
            assert fuzzgen.TRAFFIC_RATES[0] <= p.rate <= fuzzgen.TRAFFIC_RATES[1]
            # The keys reach every partition of the topic (CRC32 mod partitions).
            reached = {zlib.crc32(f"key{i}".encode()) % cluster.partitions
                       for i in range(p.keys)}
            assert reached == set(range(cluster.partitions))
            acks.add((p.acks, p.idempotent))
        for c in sc.traffic.consumers:
            assert c.topic == "t" and (not c.commit or c.mode == "group")
            modes.add(c.mode)
            commits.add(c.commit)
    assert acks == {("all", True), ("all", False), ("1", False)}
    assert modes == {"assign", "group"} and commits == {True, False}
    assert {n for n, _ in counts} == {1, 2, 3} and {n for _, n in counts} == {1, 2}


def test_traffic_leaves_the_drawn_cluster_as_it_is_without() -> None:
    for seed in range(30):
        with_traffic = fuzzgen.draw_cluster(seed, (True, False), traffic=True)
        assert dataclasses.replace(with_traffic, traffic=None) == \
            fuzzgen.draw_cluster(seed, (True, False))
    nm = fuzz.model_factory(build("4.3.1"))
    steps = fuzz.schedule(nm, 3, 0, fuzz.gen_config())
    assert "traffic" not in fuzz.scenario_yaml("x", fuzz.schedule_seed(3, 0), steps)


def test_keys_are_raised_until_they_cover_every_partition() -> None:
    assert fuzzgen.covering_keys(1, 1) == 1
    n = fuzzgen.covering_keys(1, 3)
    assert {zlib.crc32(f"key{i}".encode()) % 3 for i in range(n)} == {0, 1, 2}
    assert {zlib.crc32(f"key{i}".encode()) % 3 for i in range(n - 1)} != {0, 1, 2}
    assert fuzzgen.covering_keys(1000, 3) == 1000


# --- the generator under traffic -------------------------------------------------------------

def test_no_step_the_format_refuses_under_traffic_is_generated() -> None:
    """The kinds the loader refuses under traffic are declared so by their generator (the
    registry's): consume and add_partitions (the clients take a topic's partitions when they
    start; delete_topic no longer: the traffic checks judge each incarnation of a topic
    apart, harness/traffic/incarnations.py); every generated schedule loads, and
    lose_unflushed cuts at offset 0 (the one batch boundary known in advance under
    traffic)."""
    refused = {k for k, g in step_kinds.generators().items() if not g.under_traffic}
    assert refused == {"consume", "add_partitions"}
    kinds: set[str] = set()
    for version in ("3.9.1", "4.3.1"):
        for _, _, steps, text in shared(version, 25 if version == "3.9.1" else 40):
            parse_scenario(text, "<fuzz>")  # the loader takes it as it is
            kinds |= {s.kind for s in steps}
            assert not any(isinstance(s, S.Consume) for s in steps)
            assert all(s.offset == 0 for s in steps if isinstance(s, S.LoseUnflushed))
    assert "consume" not in kinds and {"lose_unflushed", "produce", "kill"} <= kinds
    # ... and the loader does refuse what the generator leaves out.
    _, cluster, steps, _ = shared()[0]
    with pytest.raises(ScenarioError, match="consume: under traffic"):
        parse_scenario(fuzz.scenario_yaml("x", 1, (*steps, S.Consume()), cluster=cluster),
                       "<x>")


def test_guards_under_traffic_refuse_consume_and_cuts_off_a_batch_boundary() -> None:
    plan = fuzzgen.draw_traffic(1)
    nm = fuzz.model_factory(build("4.3.1"))
    cluster = dataclasses.replace(fuzzgen.BASE_CLUSTER, traffic=plan)
    model = nm.for_cluster(cluster)
    assert isinstance(model, fuzzgen.UnderTraffic)
    track = fuzzgen.new_track(model)
    cfg = fuzz.gen_config()
    assert "under traffic" in (fuzzgen.why_invalid(S.Consume(), model, track, cfg) or "")
    for step in (S.Produce(3, "all"), S.Kill(1)):
        assert fuzzgen.why_invalid(step, model, track, cfg) is None
        model.apply(step)
        fuzzgen.after(step, track, cfg)
    assert "offset 0" in (fuzzgen.why_invalid(S.LoseUnflushed(1, 1), model, track, cfg) or "")
    assert fuzzgen.why_invalid(S.LoseUnflushed(1, 0), model, track, cfg) is None
    rng = random.Random(0)
    assert fuzzgen.candidates("lose_unflushed", model, track, cfg, rng) == \
        [S.LoseUnflushed(1, 0)]
    assert fuzzgen.candidates("consume", model, track, cfg, rng) == []
    # Without traffic both are valid: the rule is the traffic's.
    plain = nm.for_cluster(fuzzgen.BASE_CLUSTER)
    track = fuzzgen.new_track(plain)
    assert fuzzgen.why_invalid(S.Consume(), plain, track, cfg) is None
    for step in (S.Produce(3, "all"), S.Kill(1)):
        plain.apply(step)
        fuzzgen.after(step, track, cfg)
    assert fuzzgen.why_invalid(S.LoseUnflushed(1, 1), plain, track, cfg) is None


def test_the_model_under_traffic_ticks_after_every_step_as_the_lockstep_does() -> None:
    """After each step one more record with the weakest acks of the producers, on every
    partition (harness/judge/traffic.py tick_step): a follower cut from its leader falls
    behind under traffic."""
    nm = fuzz.model_factory(build("4.3.1"))
    weak = fuzzgen.TrafficPlan((fuzzgen.TrafficProducer("all"),
                                fuzzgen.TrafficProducer("1", idempotent=False)),
                               (fuzzgen.TrafficConsumer(),))
    assert weak.tick_acks == "1"
    cluster = dataclasses.replace(fuzzgen.BASE_CLUSTER, partitions=2, traffic=weak)
    model = nm.for_cluster(cluster)
    plain = nm.for_cluster(dataclasses.replace(cluster, traffic=None))
    for step in (S.Produce(2, "all"), T.Sleep(1)):
        model.apply(step)
        plain.apply(step)

    def leos(m: Any) -> set[int]:
        return {w.broker(b).leo for w in m.branches for b in w.partition.replicas}
    assert leos(model) == {4}  # 2 produced + a tick after each of the 2 steps
    assert leos(plain) == {2}
    assert len(model.model.models) == 2  # both partitions tick


# --- the campaign: shrinking keeps the block; signatures and reasons -------------------------

class FakeRuns:
    """Every run loads its scenario file as `kafka-chaos run` would and keeps its text."""

    def __init__(self, decide: Any) -> None:
        self.decide = decide
        self.texts: dict[str, str] = {}

    def __call__(self, name: str, seed: int, steps: tuple[Any, ...]) -> fuzz.Outcome:
        text = fuzz.scenario_yaml(name, seed, steps)
        parse_scenario(text, f"<{name}>")
        self.texts[name] = text
        sig, reason = self.decide(name, steps)
        return fuzz.Outcome(sig, reason=reason)


LOST = (("safety", "UNSAFE", ("traffic-lost_writes",)),)
WHY = ("safety: traffic: 3 acknowledged acks=all record(s) lost beyond the fault budget (no "
       "fault may lose an acknowledged acks=all record): p0.1-7, p0.1-8, p1.1-2")


def _block(text: str) -> str:
    return text.split("traffic:", 1)[1].split("steps:", 1)[0]


def _specs(spec: Any) -> list[Any]:
    """The producers and consumers without their line in the file."""
    return [dataclasses.replace(x, line=0) for x in (*spec.producers, *spec.consumers)]


def test_shrinking_keeps_the_traffic_block(tmp_path: Path) -> None:
    def decide(name: str, steps: tuple[Any, ...]) -> Any:
        fails = any(s.kind == "kill" for s in steps)
        return (LOST, WHY) if fails else (None, "")
    nm = fuzz.model_factory(build("4.3.1"))
    # The first schedule with a kill fails and is shrunk (the others are known failures).
    cfg = fuzz.CampaignConfig(seed=7, runs=4, gen=CFG, shrink_attempts=6)
    fake = FakeRuns(decide)
    res = fuzz.Campaign(cfg, nm, fake, tmp_path).run()
    (fail,) = res.failures
    assert any(s.kind == "kill" for s in fail.steps)
    first = _block(fake.texts[fail.name])
    shrunk = [n for n in fake.texts if n.startswith(fail.name + "-")]
    assert shrunk and all(_block(fake.texts[n]) == first for n in shrunk)
    assert fail.minimal is not None
    minimal = load_scenario(fail.minimal)
    original = parse_scenario(fake.texts[fail.name], "<x>")
    assert minimal.traffic is not None and original.traffic is not None
    assert _specs(minimal.traffic) == _specs(original.traffic)
    assert len(minimal.steps) < len(original.steps)
    assert not any(loaded.kind == "consume" for loaded in minimal.steps)
    # The summary carries the signature and why: the lost ids.
    summary = fail.to_json()
    assert summary["signature"] == "safety UNSAFE [traffic-lost_writes]"
    assert "p0.1-7, p0.1-8, p1.1-2" in summary["reason"]


def test_a_traffic_finding_is_in_the_signature_and_its_lost_ids_in_the_reason() -> None:
    from harness.judge.traffic import _judge_safety
    from harness.traffic.checks import LossBudget, Summary, TrafficVerdict
    safety = AxisVerdict("safety", "SAFE", "")
    lost = Summary("lost_writes", False,
                   {"acked": 10, "unjudged": 0, "lost": 2, "excused": 0, "counted": 2},
                   [{"id": "p0.1-4", "topic": "t", "partition": 0, "offset": 4,
                     "producer": "p0.1", "excused": False},
                    {"id": "p0.1-5", "topic": "t", "partition": 0, "offset": 5,
                     "producer": "p0.1", "excused": False}])
    dup = Summary("duplicates", False, {"ids": 10, "failures": 1, "allowed_by_retries": 0},
                  [{"id": "p0.1-1", "positions": [[0, 1], [0, 2]]}])
    _judge_safety(safety, TrafficVerdict("in-process", 30, 0, [lost, dup]),
                  LossBudget.for_lost_replicas(0, 2))
    axes = {"release": AxisVerdict("release", "CONFORMS", ""),
            "kip": AxisVerdict("kip", "CONFORMS", ""), "safety": safety}
    sig = fuzz.signature(axes)
    assert sig == (("safety", "UNSAFE", ("traffic-duplicates", "traffic-lost_writes")),)
    why = fuzz.reasons(axes)
    assert why.startswith("safety: traffic: 2 acknowledged acks=all record(s) lost")
    assert "p0.1-4, p0.1-5" in why and "duplicates" in why
    # A clean run has no reason; a run that is not judged clean on traffic alone keeps the
    # other axes' reasons too.
    assert fuzz.reasons({"safety": AxisVerdict("safety", "SAFE", "ok")}) == ""


# --- the command line --------------------------------------------------------------------------

def test_fuzz_and_hunt_take_traffic() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    from harness.cli import fuzz as fuzz_cli
    from harness.cli import hunt as hunt_cli
    fuzz_cli.add_subcommands(sub)
    hunt_cli.add_subcommands(sub)
    args = parser.parse_args(["fuzz", "--runs", "1", "--seed", "3", "--traffic"])
    cfg, _ = fuzz_cli.parse_args(args)
    assert cfg.gen.traffic and not fuzz_cli.parse_args(
        parser.parse_args(["fuzz", "--runs", "1", "--seed", "3"]))[0].gen.traffic
    hcfg, _, _ = hunt_cli.parse_args(parser.parse_args(
        ["hunt", "--kafka-version", "4.3.1", "--budget", "1m", "--seed", "3", "--traffic"]))
    assert hcfg.traffic and hcfg.gen().traffic and hcfg.schedule_settings()["traffic"]


def test_print_shows_the_traffic_block(monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    from harness.cluster import builds
    monkeypatch.setattr(builds, "resolve", lambda *a, **k: build("4.3.1"))
    assert app.main(["fuzz", "--kafka-version", "4.3.1", "--runs", "2", "--seed", "7",
                     "--traffic", "--print", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("\ntraffic:\n") == 2 and "- consume:" not in out
