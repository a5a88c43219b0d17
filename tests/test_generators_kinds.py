"""The generator speaks the whole vocabulary (issue 35 item 1): every step kind with a
generator, controller faults in quorums of 3, and the cluster's settings. For each: it is
generated over some seeds, its guard refuses what it must, and every generated schedule
loads through the real scenario loader and the model (each partition's) accepts it. No
cluster."""

from __future__ import annotations

import functools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.builds import Build, Features
from harness.judge.lanes import lanes
from harness.run.runner import Runner, choose_profile, elr_enabled
from harness.scenario import steps as step_kinds
from harness.scenario.loader import parse_scenario
from harness.search import fuzz
from reference.model import steps as S
from reference.model import timing as T
from reference.search import fuzzgen
from reference.search.generators import Config

UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"


def build(version: str) -> Build:
    v = tuple(int(x) for x in version.split("."))
    elr = v >= (4, 0, 0)
    features = Features(elr=elr, elr_default_on=v >= (4, 1, 0), describe_topic_partitions=True,
                        hwm_rule=True, unclean_recovery=False, kip1303=False,
                        previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), features)


BUILDS = ("3.9.1", "4.0.2", "4.3.1")
SEEDS = 60


@functools.cache
def campaign(version: str, seed: int = 11, length: int = 12
             ) -> list[tuple[fuzzgen.Cluster, tuple[Any, ...]]]:
    """The first SEEDS schedules of a campaign on the build, with their clusters."""
    nm = fuzz.model_factory(build(version))
    cfg = fuzz.gen_config(length=length)
    out = []
    for index in range(SEEDS):
        steps = fuzz.schedule(nm, seed, index, cfg)
        cluster = fuzz.CLUSTERS.of(fuzz.schedule_seed(seed, index))
        assert cluster is not None
        out.append((cluster, steps))
    return out


def model(cluster: fuzzgen.Cluster, version: str = "4.3.1") -> Any:
    return fuzz.model_factory(build(version)).for_cluster(cluster)


def stepped(nm: Any, *steps: Any, track: fuzzgen.Track | None = None
            ) -> tuple[Any, fuzzgen.Track]:
    """The model and track after ``steps``, each checked valid on the way."""
    cfg = fuzz.gen_config()
    track = track if track is not None else fuzzgen.new_track(nm)
    for step in steps:
        assert fuzzgen.why_invalid(step, nm, track, cfg) is None, step
        nm.apply(step)
        fuzzgen.after(step, track, cfg)
    return nm, track


def why(step: Any, nm: Any, track: fuzzgen.Track) -> str:
    return fuzzgen.why_invalid(step, nm, track, fuzz.gen_config()) or ""


# --- generated -----------------------------------------------------------------------------

def test_every_registered_kind_is_generated_on_generated_clusters() -> None:
    kinds: Counter[str] = Counter()
    for version in BUILDS:
        kinds.update(s.kind for _, steps in campaign(version) for s in steps)
    # upgrade and feature need the run's builds as data, which this campaign does not pass
    # (`fuzz`/`hunt` do): tests/test_fuzz_upgrades.py generates them. The log-directory
    # kinds need a cluster with several (--log-dirs): tests/test_fuzz_logdirs.py.
    assert set(kinds) == set(step_kinds.generators()) - {"upgrade", "feature",
                                                         "move_replica_dir", "fail_log_dir"}
    assert {"alter_config", "elect", "reassign", "latency", "bandwidth", "sleep",
            "unregister"} <= set(step_kinds.generators())


def test_each_new_kind_is_generated_in_each_of_its_forms() -> None:
    seen: set[str] = set()
    # An unclean election needs a leaderless partition whose brokers all still reach the
    # controller (so: down, not cut off): rarer, so one campaign leans on elect and stop.
    leaning = fuzz.gen_config(length=12, weights=fuzz.parse_weights("elect=10,stop=4"))
    for version in BUILDS:
        nm = fuzz.model_factory(build(version))
        more = [(fuzz.schedule(nm, 11, i, leaning), fuzz.CLUSTERS.of(fuzz.schedule_seed(11, i)))
                for i in range(40)]
        more_ = [(c, st) for st, c in more if c is not None]
        for cluster, steps in campaign(version) + more_:
            for s in steps:
                if isinstance(s, S.AlterConfig):
                    seen.add(f"alter_config {next(iter(s.config))}")
                elif isinstance(s, S.Elect):
                    seen.add(f"elect {s.type}")
                elif isinstance(s, S.Reassign):
                    seen.add("reassign " + _reassign_form(s, cluster, steps))
                elif isinstance(s, T.Latency):
                    seen.add("latency " + ("cut" if s.round_trip_ms() >= s.request_timeout_ms
                                           else "delay"))
                    seen.add("latency " + ("node" if s.node is not None else "link"))
                elif isinstance(s, S.OnController):
                    seen.add(f"{s.kind} controller")
                else:
                    seen.add(s.kind)
    assert {f"alter_config {MIN_ISR}", f"alter_config {UNCLEAN}", "elect preferred",
            "elect unclean", "reassign add", "reassign remove", "reassign replace",
            "reassign cancel", "latency cut", "latency delay", "latency node", "latency link",
            "bandwidth", "sleep", "unregister", "kill controller", "stop controller",
            "restart controller"} <= seen


def _reassign_form(s: S.Reassign, cluster: fuzzgen.Cluster, steps: tuple[Any, ...]) -> str:
    if s.cancel:
        return "cancel"
    # The replicas before it: the last completed target before it, else the cluster's.
    before = cluster.replicas
    for x in steps:
        if x is s:
            break
        if isinstance(x, S.Reassign) and not x.cancel:
            before = x.replicas
    if len(s.replicas) > len(before):
        return "add"
    return "remove" if len(s.replicas) < len(before) else "replace"


def test_cluster_settings_are_generated_within_what_the_build_allows() -> None:
    for version in BUILDS:
        clusters = [c for c, _ in campaign(version)]
        assert {c.brokers for c in clusters} == {3, 4, 5}
        assert {c.controllers for c in clusters} == {1, 3}
        assert {c.partitions for c in clusters} == {1, 2, 3}
        assert {len(c.replicas) for c in clusters} >= {2, 3, 4}
        assert {c.min_isr for c in clusters} == {1, 2, 3}
        assert {c.unclean for c in clusters} == {False, True}
        # ELR both ways where the build can be formatted either way (4.0+), else its
        # default: `elr: true` on a build without the feature is refused by the harness.
        assert {c.elr for c in clusters} == ({True, False} if version != "3.9.1" else {None})
        for c in clusters:
            assert c.brokers + c.controllers <= fuzzgen.MAX_NODES
            assert 1 <= c.min_isr <= len(c.replicas) <= c.brokers
            assert len(set(c.replicas)) == len(c.replicas)
            assert set(c.replicas) <= set(range(1, c.brokers + 1))


def test_a_seed_draws_the_same_cluster_and_schedule() -> None:
    assert fuzzgen.draw_cluster(5, (True, False)) == fuzzgen.draw_cluster(5, (True, False))
    nm = fuzz.model_factory(build("4.0.2"))
    cfg = fuzz.gen_config()
    first = [fuzz.schedule(nm, 3, i, cfg) for i in range(8)]
    assert first == [fuzz.schedule(nm, 3, i, cfg) for i in range(8)]
    assert len({fuzz.CLUSTERS.of(fuzz.schedule_seed(3, i)) for i in range(8)}) > 3
    # Without generated settings a schedule runs on the fixed base cluster.
    fixed = fuzz.schedule(nm, 3, 0, fuzz.gen_config(clusters=False))
    assert fuzz.CLUSTERS.of(fuzz.schedule_seed(3, 0)) is None
    assert "controllers: 1" in fuzz.scenario_yaml("x", fuzz.schedule_seed(3, 0), fixed)


# --- loaded and accepted -------------------------------------------------------------------

@pytest.mark.parametrize("version", BUILDS)
def test_every_generated_schedule_loads_and_the_model_accepts_it(version: str) -> None:
    b = build(version)
    factory = fuzz.model_factory(b)
    for index, (cluster, steps) in enumerate(campaign(version)):
        seed = fuzz.schedule_seed(11, index)
        text = fuzz.scenario_yaml(f"fuzz-s11-{index}", seed, steps, cluster=cluster)
        sc = parse_scenario(text, f"<fuzz-s11-{index}>")
        # The file holds the generated cluster: it reproduces the run.
        assert (sc.cluster.brokers, sc.cluster.controllers, sc.cluster.elr) == (
            cluster.brokers, cluster.controllers, cluster.elr)
        assert sc.topic.replicas == cluster.replicas
        assert sc.topic.initial_partitions() == cluster.partitions  # add_partitions adds
        assert sc.topic.min_insync_replicas == cluster.min_isr
        assert sc.topic.config[UNCLEAN] == ("true" if cluster.unclean else "false")
        assert tuple(loaded.step for loaded in sc.steps) == steps
        # The generator's rules hold against the cluster's model ...
        assert fuzzgen.validate(functools.partial(factory.for_cluster, cluster), steps,
                                fuzz.gen_config()) is None
        # ... and each partition's model, as the runner builds it, takes every step.
        profile, elr = choose_profile(sc, b, None), elr_enabled(sc, b)
        for lane in lanes(sc):
            m = Runner.model_for(lane.scenario, profile, elr)
            for loaded in lane.scenario.steps:
                pred = m.apply(loaded.step)
                assert not pred.unsupported, (index, loaded.step)
                assert pred.allowed, (index, loaded.step)


def test_several_partitions_are_one_model_per_partition() -> None:
    cluster = fuzzgen.Cluster(brokers=4, replicas=(1, 2, 3), partitions=3)
    nm = model(cluster)
    assert isinstance(nm, fuzzgen.PartitionModels) and len(nm.models) == 3
    leaders = {w.partition.leader for w in nm.branches}
    assert leaders == {1, 2, 3}  # partition p's replicas start p places along
    # A kill is the leader of some partition but no schedule-wide leader to prefer.
    nm, track = stepped(nm, S.Produce(2, "all"), S.Kill(1))
    assert all(len(w.acked) == 2 for w in nm.branches)


# --- guards refuse -------------------------------------------------------------------------

QUORUM3 = fuzzgen.Cluster(brokers=3, controllers=3)


def test_controller_faults_keep_a_quorum_and_a_single_controller_is_never_down() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER))
    assert "stays up" in why(S.KillController(100), nm, track)
    nm, track = stepped(model(QUORUM3), S.KillController(100))
    assert "down already" in why(S.KillController(100), nm, track)
    assert "majority" in why(S.StopController(101), nm, track)
    assert "majority" in why(S.KillController(102), nm, track)
    assert "not down" in why(S.RestartController(101), nm, track)
    assert "is not a controller" in why(S.KillController("active"), nm, track)
    # A heal gives back the links, not a controller that is down: it stays down to the model.
    nm, track = stepped(nm, S.Cut(1, 2), track=track)
    assert why(S.Heal(), nm, track) == ""
    nm, track = stepped(nm, S.Heal(), track=track)
    assert all(100 in w.silenced for w in nm.branches)
    nm, track = stepped(nm, S.RestartController(100), S.StopController(102), track=track)
    assert track.controllers_down == {102}


def test_every_schedule_ends_recovered() -> None:
    """The recovery tail leaves every node up, every link whole and unclean election off
    (a step after which it could not, with unclean election on, is not generated)."""
    for version in BUILDS:
        for cluster, steps in campaign(version):
            nm, track = stepped(model(cluster, version), *steps)
            assert fuzzgen._recovered(nm, track), (cluster, steps)


def test_the_tail_restarts_controllers_and_removes_timing_toxics() -> None:
    for _, steps in campaign("4.3.1"):
        down: set[Any] = set()
        shaped = False
        for s in steps:
            if isinstance(s, S.KillController | S.StopController):
                down.add(s.controller)
            elif isinstance(s, S.RestartController):
                down.discard(s.controller)
            elif isinstance(s, T.Latency | T.Bandwidth):
                shaped = True
            elif isinstance(s, S.Heal):
                shaped = False
        assert not down and not shaped, steps


def test_partition_keeps_the_quorum_whole_and_sends_two_brokers_or_more_away() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER))  # 3 brokers, controller 100
    made = fuzzgen.candidates("partition", nm, track, fuzz.gen_config(), random.Random(0))
    assert sorted(made, key=repr) == sorted(
        [S.Partition(((100, 3), (1, 2))), S.Partition(((100, 2), (1, 3))),
         S.Partition(((100, 1), (2, 3)))], key=repr)
    # The controller alone, a broker alone, the controller split off its brokers' side:
    for groups in (((100,), (1, 2, 3)), ((100, 1, 2), (3,)), ((1, 100), (2, 3))):
        assert "keeps the controllers" in why(S.Partition(groups), nm, track), groups
    nm, track = stepped(nm, S.Partition(((100, 1), (2, 3))), track=track)
    assert "cut already" in why(S.Partition(((100, 1), (2, 3))), nm, track)
    assert why(S.Heal(), nm, track) == ""
    nm, track = stepped(nm, S.Heal(), S.Partition(((100, 1), (2, 3))), track=track)


def test_unregister_only_a_broker_that_is_down_and_once() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER))
    assert "not down" in why(S.Unregister(2), nm, track)
    nm, track = stepped(nm, S.Stop(2), S.Unregister(2), track=track)
    assert "unregistered already" in why(S.Unregister(2), nm, track)
    # The controller refuses a reassignment to an unregistered broker.
    assert "unregistered broker" in why(S.Reassign((1, 2, 3)), nm, track)
    nm, track = stepped(nm, S.Restart(2), track=track)
    assert track.unregistered == set()


def test_alter_config_guards() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER))
    assert "already" in why(S.AlterConfig("topic", Config({MIN_ISR: "2"})), nm, track)
    assert "already" in why(S.AlterConfig("topic", Config({UNCLEAN: "false"})), nm, track)
    assert "replication factor" in why(S.AlterConfig("topic", Config({MIN_ISR: "4"})), nm,
                                       track)
    assert "one topic config" in why(S.AlterConfig("cluster", Config({MIN_ISR: "1"})), nm,
                                     track)
    assert "one topic config" in why(S.AlterConfig("topic", Config({"retention.ms": "1"})), nm,
                                     track)
    # The fault budget: with one broker killed, min ISR may not drop to 1 (budget 0).
    nm, track = stepped(nm, S.Kill(3), track=track)
    assert "fault budget" in why(S.AlterConfig("topic", Config({MIN_ISR: "1"})), nm, track)
    nm, track = stepped(nm, S.AlterConfig("topic", Config({MIN_ISR: "3"})), track=track)
    # Raised to 3, the budget stays the run's lowest min ISR - 1 = 1 (as the safety axis).
    assert "at most 1 broker(s) killed" in why(S.Kill(2), nm, track)


def test_lowered_min_isr_lowers_the_fault_budget() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER),
                        S.AlterConfig("topic", Config({MIN_ISR: "1"})))
    assert "at most 0 broker(s) killed" in why(S.Kill(1), nm, track)


def test_elect_guards() -> None:
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER))
    assert "leads already" in why(S.Elect("preferred"), nm, track)
    assert "has a leader" in why(S.Elect("unclean"), nm, track)
    assert "one of" in why(S.Elect("designated", 2), nm, track)
    assert "one of" in why(S.Elect("longest_log_aggressive"), nm, track)
    nm, track = stepped(nm, S.Stop(1), track=track)
    assert why(S.Elect("preferred"), nm, track) == ""


def test_reassign_guards() -> None:
    nm, track = stepped(model(fuzzgen.Cluster(brokers=4)))
    assert "nothing to cancel" in why(S.Reassign(cancel=True), nm, track)
    assert "already" in why(S.Reassign((1, 2, 3)), nm, track)
    assert "distinct brokers" in why(S.Reassign((1, 1, 2)), nm, track)
    assert "distinct brokers" in why(S.Reassign((1, 2, 7)), nm, track)
    assert "shorter than min ISR" in why(S.Reassign((1,)), nm, track)
    # A target on a dead broker stays in progress: one at a time, and it may be cancelled.
    nm, track = stepped(nm, S.Kill(4), S.Reassign((1, 2, 3, 4)), track=track)
    assert all(w.partition.reassigning for w in nm.branches)
    assert "in progress" in why(S.Reassign((1, 2)), nm, track)
    nm, track = stepped(nm, S.Reassign(cancel=True), track=track)
    assert all(not w.partition.reassigning for w in nm.branches)


def test_timing_guards_follow_the_loaders_rules() -> None:
    nm, track = stepped(model(QUORUM3))
    assert "too close" in why(T.Latency(15_000, node=1), nm, track)
    assert "broker link" in why(T.Latency(100, src=1, dst=100), nm, track)
    assert "broker link" in why(T.Latency(100, src=1, dst=2, direction="oneway"), nm, track)
    assert "below" in why(T.Bandwidth(10, node=2), nm, track)
    assert "one of" in why(T.Sleep(7), nm, track)
    assert "nothing to heal" in why(S.Heal(), nm, track)
    nm, track = stepped(nm, T.Bandwidth(100, src=1, dst=3), track=track)
    assert "heal first" in why(T.Latency(100, node=2), nm, track)
    # heal removes a toxic: it is valid with no cut at all.
    nm, track = stepped(nm, S.Heal(), T.Latency(16_000, node=3), track=track)
    assert not track.shaped or why(T.Sleep(1), nm, track) == ""
    # A round trip past request.timeout.ms cuts broker 3's replication links.
    assert all((3, 1) in w.cuts and (1, 3) in w.cuts for w in nm.branches)
    assert all((3, 100) not in w.cuts for w in nm.branches)


def test_generated_timing_steps_load_with_the_brokers_request_timeout() -> None:
    nm = model(fuzzgen.BASE_CLUSTER)
    timeout = int(nm.cluster.broker_config.get("request.timeout.ms", 30_000))
    for _, steps in campaign("4.3.1"):
        for s in steps:
            if isinstance(s, T.Latency):
                assert s.request_timeout_ms == timeout


def test_an_unclean_election_that_loses_acked_records_is_never_generated() -> None:
    """With unclean election the operator accepts losing acks=all records: a step that
    loses them that way proves nothing (the safety axis would call it UNSAFE)."""
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER, "3.9.1"),
                        S.Produce(1, "all"), S.Stop(3), S.Produce(2, "all"), S.Stop(2),
                        S.Cut(1, 3), S.Restart(3), S.Kill(1))
    assert all(w.partition.leader is None for w in nm.branches)
    assert "lose 2 acks=all" in why(S.Elect("unclean"), nm, track)
    assert "lose 2 acks=all" in why(S.AlterConfig("topic", Config({UNCLEAN: "true"})), nm,
                                    track)
    for version in BUILDS:
        for cluster, steps in campaign(version):
            m = model(cluster, version)
            for s in steps:
                m.apply(s)
                assert not any(w.unclean_elections and w.acked_all() - fuzzgen.durable(w)
                               for w in m.branches), (cluster, steps)


# --- a campaign on generated clusters ------------------------------------------------------

def test_a_campaign_runs_and_shrinks_each_schedule_on_its_own_cluster(tmp_path: Path) -> None:
    """Every file the campaign writes for a schedule (its run, re-run, shrink attempts, the
    minimal scenario) holds the cluster generated for it, and the shrinker's repair keeps
    the rules of that cluster's model."""
    nm = fuzz.model_factory(build("4.0.2"))
    written: list[tuple[int, Any]] = []
    failing = 2

    def run(name: str, seed: int, steps: tuple[Any, ...]) -> fuzz.Outcome:
        sc = parse_scenario(fuzz.scenario_yaml(name, seed, steps), f"<{name}>")
        written.append((seed, sc))
        fails = name.startswith(f"fuzz-s4-{failing}") and any(
            isinstance(s, S.Produce) for s in steps)
        return fuzz.Outcome((("safety", "UNSAFE", ("acked-record-durable",)),) if fails
                            else None)
    cfg = fuzz.CampaignConfig(seed=4, runs=4, shrink_attempts=6)
    res = fuzz.Campaign(cfg, nm, run, tmp_path).run()
    assert res.generated == 4 and len(res.failures) == 1
    for seed, sc in written:
        cluster = fuzz.CLUSTERS.of(seed)
        assert cluster is not None
        assert (sc.cluster.brokers, sc.cluster.controllers, sc.topic.replicas,
                sc.topic.min_insync_replicas) == (cluster.brokers, cluster.controllers,
                                                  cluster.replicas, cluster.min_isr)
        steps = tuple(loaded.step for loaded in sc.steps)
        assert fuzzgen.validate(fuzz.models_of(nm, seed), steps,
                                fuzz.gen_config(max_count=10_000)) is None
    fail = res.failures[0]
    assert fail.minimal is not None
    minimal = parse_scenario(fail.minimal.read_text(), str(fail.minimal))
    cluster = fuzz.CLUSTERS.of(fuzz.schedule_seed(4, failing))
    assert cluster is not None and minimal.cluster.brokers == cluster.brokers
    assert minimal.topic.replicas == cluster.replicas


def test_requests_to_the_controller_need_a_broker_that_reaches_it() -> None:
    """alter_config, elect, reassign and unregister go through a broker that reaches the
    active controller (admin.to_controller); with none the request times out (seen on
    4.3.1: fuzz-s431-6, a reassign with every broker isolated, a harness ERROR). One broker
    cut off no longer blocks them: the harness asks another."""
    requests = (S.AlterConfig("topic", Config({MIN_ISR: "1"})), S.Elect("preferred"),
                S.Reassign((2, 3)), S.Unregister(3))
    nm, track = stepped(model(QUORUM3), S.Stop(3), S.Isolate(1))
    for step in requests:
        assert why(step, nm, track) == "", step
    nm, track = stepped(nm, S.Isolate(2), track=track)
    for step in requests:
        assert "no running broker reaches the active controller" in why(step, nm, track), step
    nm, track = stepped(nm, S.Heal(), track=track)
    assert why(S.Unregister(3), nm, track) == ""


def test_pause_and_unregister_avoid_what_the_harness_does_not_do() -> None:
    """Seen on 4.3.1: a resume restores a paused node's links in the model (FORMAT.md) but
    the harness only sends SIGCONT (fuzz-s4310-4: isolate, pause, resume of broker 3 was
    leaderless for 30 s, the model had it elected); an unregister goes through the first
    running broker, which may be paused (fuzz-s4310-1: ClusterTool timed out)."""
    nm, track = stepped(model(fuzzgen.Cluster(brokers=4)), S.Isolate(3))
    # The model's resume now gives back the node only, as the harness's SIGCONT does: the
    # pause of an isolated broker is allowed and it stays isolated after the resume.
    assert why(S.Pause(3), nm, track) == ""
    nm, track = stepped(nm, S.Pause(3), S.Resume(3), track=track)
    assert all((3, 1) in w.cuts and 3 not in w.silenced for w in nm.branches)
    nm, track = stepped(nm, S.Heal(), S.Cut(1, 2), track=track)
    nm, track = stepped(nm, S.Pause(4), S.Kill(3), track=track)
    assert "paused" in why(S.Unregister(3), nm, track)
    nm, track = stepped(nm, S.Resume(4), track=track)
    assert why(S.Unregister(3), nm, track) == ""


def test_a_timing_toxic_on_a_paused_brokers_links_outlives_its_resume() -> None:
    """Seen on 4.3.1 (fuzz-s4311-1): pause 1, a latency past request.timeout.ms on 1-2 (a
    cut to the model), resume 1: the old model gave 1 its links back while the toxic
    stayed, so the generator refused toxics on a paused broker. The model's resume now
    gives back the node only: the toxic's cut stays until heal, and the guard is gone."""
    nm, track = stepped(model(fuzzgen.BASE_CLUSTER), S.Pause(1))
    slow = T.Latency(15_600, src=1, dst=2)
    assert why(slow, nm, track) == ""
    assert why(T.Bandwidth(100, node=1), nm, track) == ""
    nm, track = stepped(nm, slow, S.Resume(1), track=track)
    assert all((1, 2) in w.cuts and 1 not in w.silenced for w in nm.branches)
