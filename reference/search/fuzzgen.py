"""Schedule generator for `kafka-chaos fuzz` (issue 13): random schedules of harness steps
in which every step is valid in the model's current state.

Pure: the only randomness is a ``random.Random`` seeded by the caller; a seed gives the
same schedule every time. The model is the caller's (``new_model``: the runner's model of
the run, so the generator sees the same branches the run will be judged against).

Rules (fixtures/scenarios/FORMAT.md "Generated schedules"): a step is generated only where
it holds in every branch of the model's current prediction:

- ``produce`` (acks 0, 1 or all, 1..max_count records) and ``consume``: only while the
  partition has a leader the client reaches (a produce to no leader waits out the
  delivery timeout and proves nothing; a consume reads nothing);
- ``isolate``: a running broker not already cut from every node;
- ``cut``: a link between two brokers, both ways, not already cut;
- ``heal``: only while some link is cut;
- ``kill`` / ``stop``: a running broker, and only while another broker runs (the
  observer needs one); a stop only of a broker that reaches the controller (a controlled
  shutdown needs it); a kill goes to the leader with chance ``kill_leader``; at most
  ``max_killed`` distinct brokers are ever killed (default min ISR - 1: KIP-966 treats
  every unclean shutdown as one that may have lost unflushed data, and guarantees
  acks=all records only while at most min ISR - 1 replicas did);
- ``lose_unflushed``: only after a kill of that broker (not a stop), before its restart,
  once per kill, at an offset below the log end of its replica in every branch;
- ``restart``: a killed or stopped broker that reaches the controller (waited for: it
  must register).

- ``kill`` / ``stop`` / ``restart`` of a controller (by id, quorums of 3): a majority of
  the quorum always runs; a controller that is down is restarted before any ``heal``;
- ``unregister``: a broker that is down, once until its restart;
- ``alter_config``: the topic's min ISR (1..replication factor; never below the brokers
  killed so far + 1: the fault budget is the run's lowest min ISR - 1) or unclean
  election, to a value it does not have;
- ``elect``: preferred where the preferred replica does not lead, unclean where the
  partition is leaderless (in some branch);
- ``reassign``: add a broker, remove a replica (never below min ISR), replace one, one
  reassignment at a time; ``cancel`` while one is in progress;
- ``latency`` / ``bandwidth`` on a broker's replication links or one broker link (never
  near request.timeout.ms, never below the loader's kbps floor), one toxic until a
  ``heal``; ``sleep`` of 1-5 s;
- no step after which a branch loses acks=all records by an unclean election (the
  operator's choice, which the KIP's guarantee, and so the safety axis, does not cover).

Each schedule may get a cluster of its own (``draw_cluster``: brokers, controllers,
replicas, partitions, min ISR, unclean election, ELR); several partitions are stepped
together (``PartitionModels``): a guard holds on every partition.

Under client traffic (``draw_traffic``: the schedule's ``traffic`` block, drawn from its
seed; ``GenConfig.traffic``) the caller's model ticks after every step as the run's
lockstep does (``UnderTraffic``), no kind the format refuses there is generated
(``Generator.under_traffic``: consume) and ``lose_unflushed`` cuts at offset 0 only.

After ``length`` such steps the schedule ends with a recovery tail (Jepsen's final heal
and read): unclean election off, ``resume`` of every paused broker, ``restart`` of every
controller down, ``heal`` if a link is cut or shaped, ``restart`` of every broker down,
``upgrade`` of every node not on the run's build (controllers first), and ``consume`` if
the partition then has a leader the client reaches.

With ``GenConfig.builds`` (the run's builds, as data) a schedule's cluster may be born on
an older build (``Cluster.birth``, drawn by the caller with ``draw_birth``) and its nodes
upgraded during the schedule (``upgrade``, generators/upgrade.py), and ``feature`` steps
(ELR on/off, a metadata.version raise) are made where every node's build takes them
(generators/features.py).
"""

from __future__ import annotations

import copy
import random
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reference.model import steps as S
from reference.model.predict import Model, Prediction, durable
from reference.model.state import ClusterSpec, World
from reference.model.topics import CreateTopic
from reference.search.generators import (
    ALL,
    UNCLEAN,
    Builds,
    Config,
    Gen,
    Generator,
    Lanes,
    Limits,
    Track,
    UnderTraffic,
    upgrade_tail,
)
from reference.search.tiered import TieredTopic
from reference.search.transitions import carry_hwm, certain_transitions

__all__ = ["ALL", "DEFAULT_WEIGHTS", "KINDS", "Cluster", "GenConfig", "Generator", "Lanes",
           "PartitionModels", "Track", "TrafficConsumer", "TrafficPlan", "TrafficProducer",
           "UnderTraffic", "candidates", "draw_cluster", "draw_traffic", "finish_upgrades",
           "generate",
           "lane_models", "predicted_transitions", "predicts_acked_loss", "under_traffic",
           "validate", "why_invalid"]

#: The step kinds this package's generators make, with their default weights (the
#: campaign's kinds are the registry's: harness/search/fuzz/ passes them in GenConfig).
DEFAULT_WEIGHTS: Mapping[str, int] = {k: g.weight for k, g in ALL.items()}
KINDS: tuple[str, ...] = tuple(ALL)


@dataclass(frozen=True)
class GenConfig:
    length: int = 10
    #: Weights by kind (None: each generator's default weight).
    weights: Mapping[str, int] | None = None
    max_count: int = 5
    #: Distinct brokers that may be killed (unclean shutdowns), and so lose unflushed
    #: data (None: min ISR - 1, the KIP's fault budget).
    max_killed: int | None = None
    tail: bool = True
    #: Chance that a kill goes to the partition's leader when it may (Jepsen's "kill the
    #: primary"); otherwise a kill goes to any running broker alike.
    kill_leader: float = 0.6
    #: The kinds to generate, each with its guard: the step registry's generators.
    generators: Mapping[str, Generator] = field(default_factory=lambda: dict(ALL))
    #: Whether each schedule gets a cluster of its own (``draw_cluster``; the caller
    #: builds the model of it: harness/search/fuzz/schedules.py) instead of the fixed base cluster.
    clusters: bool = False
    #: Whether each schedule runs under client traffic drawn from its seed
    #: (``draw_traffic``; the caller's model of it ticks: ``under_traffic``).
    traffic: bool = False
    #: The run's builds (``Builds``: the run's, the schedule's birth, the catalog an
    #: upgrade may name); None: not known, no ``upgrade`` or ``feature`` step is made.
    #: The caller sets the birth per schedule (harness/search/fuzz/schedules.py).
    builds: Builds | None = None
    #: The chance that a schedule's cluster is born on one of ``births`` (older builds
    #: of the catalog) and upgraded to the run's build during the schedule.
    upgrades: float = 0.0
    births: tuple[str, ...] = ()
    #: The chance that a schedule's cluster has several log directories per broker
    #: (``--log-dirs``; drawn only on 3.7+: generators/logdirs.py ``draw_log_dirs``), and
    #: the directories of the schedule's cluster (set per schedule, as ``builds``).
    log_dirs_chance: float = 0.0
    log_dirs: int = 1
    #: The chance that a schedule's cluster (under traffic, not born on an older build)
    #: is tiered where its build has tiered storage (reference/search/tiered.py).
    tiered: float = 0.0

    def weight_of(self) -> dict[str, int]:
        given = self.weights if self.weights is not None else {
            k: g.weight for k, g in self.generators.items()}
        return {k: int(v) for k, v in given.items() if int(v) > 0}


# -- the cluster's settings -------------------------------------------------------------

#: A generated producer's rate, records/s (bounded: a few producers on a small machine,
#: through the proxies; bench/RESULTS-traffic.md).
TRAFFIC_RATES = (50, 400)
#: Key counts a generated producer draws from (then raised until the keys cover every
#: partition of the topic).
TRAFFIC_KEYS = (1, 4, 16, 100, 1000)


@dataclass(frozen=True)
class TrafficProducer:
    """One generated producer (FORMAT.md "Traffic", ``producers``): acks all or 1,
    idempotent only with acks all."""

    acks: str = "all"
    idempotent: bool = True
    rate: int = 100
    keys: int = 1000

    def to_dict(self) -> dict[str, object]:
        return {"rate": self.rate, "acks": self.acks if self.acks == "all" else int(self.acks),
                "idempotent": self.idempotent, "keys": self.keys}


@dataclass(frozen=True)
class TrafficConsumer:
    """One generated consumer (``consumers``): assign (every partition from offset 0) or
    group (subscribed), committing or not (only in a group)."""

    mode: str = "assign"
    commit: bool = False

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"mode": self.mode}
        if self.commit:
            out["commit"] = True
        return out


@dataclass(frozen=True)
class TrafficPlan:
    """A generated schedule's ``traffic:`` block: producers and consumers for the whole
    schedule, on the schedule's one topic."""

    producers: tuple[TrafficProducer, ...]
    consumers: tuple[TrafficConsumer, ...]

    @property
    def tick_acks(self) -> str:
        """What the model sees of the traffic after each step: a record with the weakest
        acks of the producers (harness/judge/traffic.py ``tick_step``)."""
        return min((p.acks for p in self.producers), key=("0", "1", "all").index)

    def to_dict(self) -> dict[str, object]:
        """The scenario file's ``traffic`` block."""
        return {"producers": [p.to_dict() for p in self.producers],
                "consumers": [c.to_dict() for c in self.consumers]}


def _partition_of(key: str, partitions: int) -> int:
    """The client's partitioner for a keyed traffic record: CRC32 of the key modulo the
    partitions (harness/client/traffic.py)."""
    return zlib.crc32(key.encode()) % partitions


def covering_keys(least: int, partitions: int) -> int:
    """The smallest key count >= ``least`` whose keys ``key0..`` reach every partition."""
    seen: set[int] = set()
    n = 0
    while n < least or len(seen) < partitions:
        seen.add(_partition_of(f"key{n}", partitions))
        n += 1
    return n


def draw_traffic(seed: int | str, partitions: int = 1) -> TrafficPlan:
    """The traffic of the schedule with this (scenario) seed: 1-3 producers (acks all or 1,
    idempotence on or off with acks all; 50-400 records/s each; keys over every one of
    the topic's ``partitions``), 1-2 consumers (assign, or a group committing or not).
    Deterministic for a seed; a random stream of its own, so the cluster drawn for the
    same seed is the one drawn without traffic."""
    rng = random.Random(f"kafka-chaos-traffic:{seed}")
    producers = []
    for _ in range(rng.choice((1, 2, 2, 3))):
        acks = rng.choice(("all", "all", "1"))
        producers.append(TrafficProducer(
            acks=acks, idempotent=acks == "all" and rng.random() < 0.75,
            rate=rng.randrange(TRAFFIC_RATES[0], TRAFFIC_RATES[1] + 1, 10),
            keys=covering_keys(rng.choice(TRAFFIC_KEYS), partitions)))
    consumers = []
    for _ in range(rng.choice((1, 1, 2))):
        mode = rng.choice(("assign", "group"))
        consumers.append(TrafficConsumer(mode, commit=mode == "group" and rng.random() < 0.5))
    return TrafficPlan(tuple(producers), tuple(consumers))


def under_traffic(new_model: Callable[[], Lanes], plan: TrafficPlan | None
                  ) -> Callable[[], Lanes]:
    """The model factory of a schedule under ``plan``'s traffic (``UnderTraffic``: the
    traffic ticks after every step, as in the run's lockstep); ``new_model`` without."""
    if plan is None:
        return new_model
    acks = plan.tick_acks
    return lambda: UnderTraffic(new_model(), acks)


@dataclass(frozen=True)
class Cluster:
    """A generated schedule's cluster (FORMAT.md ``cluster`` and ``topic``): brokers 1..N,
    controllers (1 or 3), the topic's replicas (partition 0's, the first its preferred
    leader), partitions, min ISR, unclean election, ELR (None: the build's default)."""

    brokers: int = 3
    controllers: int = 1
    replicas: tuple[int, ...] = (1, 2, 3)
    partitions: int = 1
    min_isr: int = 2
    unclean: bool = False
    elr: bool | None = None
    #: The schedule's client traffic (None: none; ``draw_traffic``).
    traffic: TrafficPlan | None = None
    #: The build the cluster is born on when it is not the run's (None: the run's);
    #: its nodes are upgraded to the run's build during the schedule.
    birth: str | None = None
    #: Log directories per broker (``cluster.log_dirs``; 1: the build's one). Storage
    #: settings drawn per seed live here: tiered topics go next to it (issue 45;
    #: generators/logdirs.py "Hook for tiered storage").
    log_dirs: int = 1
    #: Tiered storage on every broker and these topic configs (None: not tiered;
    #: reference/search/tiered.py ``draw_tiered``).
    tiered: TieredTopic | None = None


#: Draws in a row refused by the unclean-loss rule before a schedule ends early.
MAX_REFUSED = 50
#: The fixed cluster of a schedule without generated settings (the KIP's examples).
BASE_CLUSTER = Cluster()
#: JVMs a generated cluster may start (brokers + controllers): the machines are small.
MAX_NODES = 6


def draw_cluster(seed: int | str, elr_choices: Sequence[bool | None] = (None,),
                 traffic: bool = False, birth: str | None = None, log_dirs: int = 1
                 ) -> Cluster:
    """The cluster of the schedule with this (scenario) seed: 3-5 brokers with one
    controller or 3 brokers with a quorum of 3, replication factor 2-4 (mostly 3),
    1-3 partitions (mostly 1), min ISR 1..RF (mostly 2), unclean election off three times
    in four, ELR one of ``elr_choices`` (what the build allows: both where it can be
    formatted either way), and with ``traffic`` the traffic of ``draw_traffic`` for the
    same seed. Deterministic for a seed. Born on an older build (``birth``, its ELR one
    of ``elr_choices`` as that build allows): three controllers (generators/upgrade.py).
    ``log_dirs``: the directories per broker (the caller's ``draw_log_dirs``)."""
    rng = random.Random(f"kafka-chaos-cluster:{seed}")
    controllers = rng.choice((1, 1, 3))
    if birth is not None:
        controllers = 3
    brokers = rng.choice((3, 3, 4, 5)) if controllers == 1 else 3
    brokers = min(brokers, MAX_NODES - controllers)
    rf = min(brokers, rng.choice((2, 3, 3, 3, 4)))
    replicas = tuple(rng.sample(range(1, brokers + 1), rf))
    min_isr = min(rf, rng.choice((1, 2, 2, 2, 3)))
    partitions = rng.choice((1, 1, 1, 2, 3))
    return Cluster(brokers=brokers, controllers=controllers, replicas=replicas,
                   partitions=partitions, min_isr=min_isr,
                   unclean=rng.random() < 0.25, elr=rng.choice(tuple(elr_choices)),
                   traffic=draw_traffic(seed, partitions) if traffic else None,
                   birth=birth, log_dirs=log_dirs)


class PartitionModels:
    """The models of several partitions (one per lane, harness/judge/lanes.py) stepped
    together: a generated step names no partition, so it acts on every one. Its
    ``branches`` are every lane's: a guard that holds in every branch holds on every
    partition."""

    def __init__(self, models: Sequence[Model]) -> None:
        assert models, "at least one partition"
        self.models = list(models)

    @property
    def branches(self) -> list[World]:
        return [w for m in self.models for w in m.branches]

    @property
    def cluster(self) -> ClusterSpec:
        return self.models[0].cluster

    def apply(self, step: S.Step, *, continues_step: bool = False) -> Prediction:
        """Each lane's prediction; the first one that is unsupported, else partition 0's."""
        preds = [m.apply(step, continues_step=continues_step) for m in self.models]
        return next((p for p in preds if p.unsupported), preds[0])


# -- guards -------------------------------------------------------------------------------

def _gen(model: Lanes, track: Track, cfg: GenConfig) -> Gen:
    return Gen(model, track, Limits(cfg.max_count, cfg.max_killed, cfg.builds,
                                      cfg.log_dirs))


def new_track(model: Lanes) -> Track:
    """A schedule's track, its min ISR floor the topic's own (the fault budget is the
    lowest min ISR the run has, as the safety axis judges it)."""
    return Track(min_isr_floor=min((w.min_isr for w in model.branches), default=None))


def _leader(model: Lanes) -> int | None:
    """The partition's leader if every branch has the same one."""
    leaders = {w.partition.leader for w in model.branches}
    return leaders.pop() if len(leaders) == 1 else None


def _lost(branches: Sequence[World], unclean_only: bool) -> frozenset[str]:
    return frozenset().union(*(w.acked_all() - durable(w) for w in branches
                               if not unclean_only or w.unclean_elections))


def _unclean_risk(step: S.Step, model: Lanes) -> bool:
    return isinstance(step, S.AlterConfig | S.Elect) or any(
        w.config.unclean_leader_election for w in model.branches)


def unclean_loss(step: S.Step, model: Lanes, track: Track | None = None,
                 cfg: GenConfig | None = None) -> str | None:
    """Whether ``step`` makes a branch lose acks=all records by an unclean election, or
    (given the track) leaves unclean election on in a state the recovery tail cannot
    leave without one. With unclean election the operator accepts losing them (KIP-966
    "Unclean recovery"; the safety axis judges the KIP's guarantee, which it waives), so
    such a step proves nothing: it is never generated. (Only steps that may elect
    uncleanly are tried, on a copy of the model: with unclean election on, and
    alter_config and elect.)"""
    if not _unclean_risk(step, model):
        return None
    before = _lost(model.branches, unclean_only=False)
    trial = copy.deepcopy(model)
    trial.apply(step)
    lost = _lost(trial.branches, unclean_only=True) - before
    if lost:
        return (f"an unclean election would lose {len(lost)} acks=all record(s) (the "
                "operator's choice, not a finding)")
    if track is not None and cfg is not None and cfg.tail and any(
            w.config.unclean_leader_election for w in trial.branches):
        rest = copy.deepcopy(track)
        after(step, rest, cfg)
        recovery_tail(trial, rest, cfg, lookahead=False)
        if not _recovered(trial, rest):
            return ("with unclean election on, the recovery tail could not follow it "
                    "without an unclean election that loses acks=all records")
    return None


def _recovered(model: Lanes, track: Track) -> bool:
    """Whether the recovery tail left every node up and every link whole, with unclean
    election off."""
    return not (track.paused or track.controllers_down or track.shaped) and all(
        not w.cuts and not w.config.unclean_leader_election
        and all(b.alive for b in w.brokers) for w in model.branches)


def why_invalid(step: S.Step, model: Lanes, track: Track, cfg: GenConfig,
                lookahead: bool = True) -> str | None:
    """Why ``step`` may not come next (its kind's guard, then the unclean-loss rule, with
    the recovery tail tried after it unless ``lookahead`` is off), or None when it may."""
    generator = cfg.generators.get(step.kind)
    if generator is None or not isinstance(step, generator.makes):
        return f"the generator does not make {step.kind} steps"
    g = _gen(model, track, cfg)
    return generator.refused(g) or generator.why_invalid(step, g) or (
        unclean_loss(step, model, track, cfg) if lookahead else unclean_loss(step, model))


def after(step: S.Step, track: Track, cfg: GenConfig) -> None:
    generator = cfg.generators.get(step.kind)
    if generator is not None:
        generator.after(step, track)


def candidates(kind: str, model: Lanes, track: Track, cfg: GenConfig,
               rng: random.Random) -> list[S.Step]:
    """Every valid step of ``kind`` now (counts and offsets drawn from ``rng``)."""
    generator = cfg.generators.get(kind)
    if generator is None:
        raise ValueError(f"unknown step kind {kind!r} (one of {', '.join(cfg.generators)})")
    g = _gen(model, track, cfg)
    if generator.refused(g) is not None:
        return []
    return [s for s in generator.steps(g, rng) if generator.why_invalid(s, g) is None]


def recovery_tail(model: Lanes, track: Track, cfg: GenConfig, lookahead: bool = True
                  ) -> list[S.Step]:
    """The recovery tail (module doc) after ``model``'s state, applied to it and ``track``."""
    out: list[S.Step] = []

    def add(step: S.Step) -> None:
        if step.kind in cfg.generators and why_invalid(step, model, track, cfg,
                                                       lookahead) is None:
            model.apply(step)
            after(step, track, cfg)
            out.append(step)
    if any(w.config.unclean_leader_election for w in model.branches):
        # The operator's opt-in to losing records ends with the faults: recovering with it
        # on could elect a replica without them (the unclean-loss rule would refuse it).
        add(S.AlterConfig("topic", Config({UNCLEAN: "false"})))
    for b in sorted(track.paused):
        add(S.Resume(b))
    for c in sorted(track.controllers_down):
        add(S.RestartController(c))
    add(S.Heal())
    for b in sorted(b.id for b in model.branches[0].brokers):
        add(S.Restart(b))
    for b in sorted(track.failed_dirs):
        # A failed log directory stays failed until its broker restarts (the repair):
        # stopped (killed if it cannot be) once the others are back, and restarted.
        if S.Stop(b).kind in cfg.generators and why_invalid(S.Stop(b), model, track, cfg,
                                                            lookahead) is None:
            add(S.Stop(b))
        else:
            add(S.Kill(b))
        add(S.Restart(b))
    for up in upgrade_tail(_gen(model, track, cfg)):
        add(up)  # every node on the run's build: the run tests that one
    add(CreateTopic())  # a deleted topic back, to be read
    add(S.Consume())
    return out


def generate(new_model: Callable[[], Lanes], seed: int | str, cfg: GenConfig = GenConfig()
             ) -> tuple[S.Step, ...]:
    """A schedule of ``cfg.length`` generated steps (plus the recovery tail)."""
    weights = cfg.weight_of()
    unknown = sorted(set(weights) - set(cfg.generators))
    if unknown:
        raise ValueError(f"unknown step kind(s) {', '.join(unknown)} (one of "
                         f"{', '.join(cfg.generators)})")
    rng = random.Random(f"kafka-chaos-fuzz:{seed}")
    model = new_model()
    track = new_track(model)
    out: list[S.Step] = []
    refused = 0
    while len(out) < cfg.length and refused < MAX_REFUSED:
        # A kind with no valid step now is left out of this draw; some kind always has
        # one unless the weights allow only impossible kinds.
        choices = {k: candidates(k, model, track, cfg, rng) for k in sorted(weights)}
        kinds = [k for k in sorted(weights) if choices[k]]
        if not kinds:
            break
        kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
        step = rng.choice(choices[kind])
        leader = _leader(model)
        if kind == "kill" and leader is not None and rng.random() < cfg.kill_leader \
                and S.Kill(leader) in choices[kind]:
            step = S.Kill(leader)
        if unclean_loss(step, model, track, cfg) is not None:
            refused += 1
            continue  # drawn again (the rng has moved on)
        refused = 0
        model.apply(step)
        after(step, track, cfg)
        out.append(step)
    if cfg.tail:
        out.extend(recovery_tail(model, track, cfg))
    return tuple(out)


def validate(new_model: Callable[[], Lanes], steps: Sequence[S.Step],
             cfg: GenConfig = GenConfig()) -> tuple[int, str] | None:
    """The first step (index, reason) that breaks the generator's rules, or None. The
    shrinker keeps only schedules that pass (a shrunk schedule is one the generator
    could have made, with any length)."""
    model = new_model()
    track = new_track(model)
    for i, step in enumerate(steps):
        why = why_invalid(step, model, track, cfg)
        if why is not None:
            return i, why
        model.apply(step)
        after(step, track, cfg)
    return None


def finish_upgrades(new_model: Callable[[], Lanes], steps: Sequence[S.Step],
                    cfg: GenConfig) -> tuple[S.Step, ...]:
    """``steps`` with the upgrades that bring every node still on another build to the
    run's (``upgrade_tail``), before a final ``consume``: what a shrunk or mutated schedule
    needs when an edit dropped some (the run is a test of the run's build)."""
    body = list(steps)
    if cfg.builds is None or not any(
            s.kind == "upgrade" for s in body) and cfg.builds.birth == cfg.builds.target:
        return tuple(body)
    last = body.pop() if body and body[-1].kind == "consume" else None
    model = new_model()
    track = new_track(model)
    for step in body:
        model.apply(step)
        after(step, track, cfg)
    for up in upgrade_tail(_gen(model, track, cfg)):
        if why_invalid(up, model, track, cfg) is None:
            model.apply(up)
            after(up, track, cfg)
            body.append(up)
    return tuple(body + ([last] if last is not None else []))


def predicts_acked_loss(new_model: Callable[[], Lanes], steps: Sequence[S.Step]) -> bool:
    """Whether the model loses acks=all records in every branch at the end of ``steps``
    (``kafka-chaos fuzz --guided``: run only the schedules the build's model predicts
    lose data, for the cluster to confirm)."""
    model = new_model()
    for step in steps:
        model.apply(step)
    return bool(model.branches) and all(w.acked_all() - durable(w) for w in model.branches)


def lane_models(model: Lanes) -> list[Model]:
    """The one-partition models inside ``model`` (a Model, PartitionModels, or either
    under traffic)."""
    if isinstance(model, UnderTraffic):
        return lane_models(model.model)
    if isinstance(model, PartitionModels):
        return list(model.models)
    assert isinstance(model, Model), type(model)
    return [model]


def predicted_transitions(new_model: Callable[[], Lanes], steps: Sequence[S.Step]
                          ) -> frozenset[str]:
    """The named transitions (reference/search/transitions.py) a run of ``steps`` shows
    for sure as far as the model knows: on some partition, a step whose every allowed
    outcome makes them from every state allowed before it. What the hunt's directed
    schedules aim at (a transition no run of the build has shown yet)."""
    model = new_model()
    lanes = lane_models(model)
    before = [m.allowed() for m in lanes]
    out: set[str] = set()
    for step in steps:
        floors = [min(w.min_isr for w in m.branches) for m in lanes]
        model.apply(step)
        for i, m in enumerate(lanes):
            after = m.allowed()
            out |= certain_transitions(before[i], after, floors[i], isinstance(step, S.Produce))
            before[i] = carry_hwm(before[i], after)
    return frozenset(out)
