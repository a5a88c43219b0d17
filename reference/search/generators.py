"""How the schedule generator makes each step kind: its default weight, every step of the
kind that could come next, the guard that says why one may not (it must hold in every
branch of the model's current prediction), and what the step leaves for later guards.

Each kind's generator is named by its step kind's definition (the ``generator`` of its
``StepKind`` in harness/scenario/steps/); the fuzz generator makes exactly the kinds the
registry gives a generator (harness/search/fuzz.py), so a kind is generated where it is
defined. The rules are FORMAT.md's "Generated schedules". Pure: parameters are drawn from
the caller's seeded ``random.Random``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Protocol

from reference.model import steps as S
from reference.model import timing as T
from reference.model.controller import active_controller, link
from reference.model.protocol import leader_broker
from reference.model.state import CLIENT, World

if TYPE_CHECKING:
    from reference.model.predict import Prediction
    from reference.model.state import ClusterSpec


class Lanes(Protocol):
    """What a guard reads of the model: a reference ``Model`` (one partition) or several
    partitions' models stepped together (fuzzgen.PartitionModels), whose ``branches`` are
    every lane's: a guard that holds in every branch holds on every partition."""

    @property
    def branches(self) -> Sequence[World]: ...

    @property
    def cluster(self) -> ClusterSpec: ...

    def apply(self, step: S.Step, *, continues_step: bool = False) -> Prediction: ...


class UnderTraffic:
    """A model under client traffic (FORMAT.md "Traffic"): after every step the traffic
    goes on, as the runner's lockstep sees it (harness/judge/traffic.py ``tick_step``): one
    record written with ``acks`` (the weakest of the producers) on every partition, during
    the step (a follower cut from its leader falls behind and leaves the ISR). The step's
    own prediction is returned. Guards read ``Gen.traffic`` off it: under traffic the
    format refuses some kinds (``Generator.under_traffic``) and cuts logs only at offsets
    known in advance (``lose_unflushed``: 0)."""

    def __init__(self, model: Lanes, acks: str) -> None:
        self.model, self.acks = model, acks

    @property
    def branches(self) -> Sequence[World]:
        return self.model.branches

    @property
    def cluster(self) -> ClusterSpec:
        return self.model.cluster

    def apply(self, step: S.Step, *, continues_step: bool = False) -> Prediction:
        pred = self.model.apply(step, continues_step=continues_step)
        self.model.apply(S.Produce(1, self.acks), continues_step=True)
        return pred


#: acks levels of a generated produce, with their weights.
ACKS: tuple[tuple[str, int], ...] = (("all", 2), ("1", 1), ("0", 1))


@dataclass
class Track:
    """What the steps so far did that the model's world does not say: which brokers are
    down by a kill (lose_unflushed may follow), which lost data already, which are
    paused (alive to the model, but silent and unable to shut down cleanly)."""

    killed: set[int] = field(default_factory=set)
    ever_killed: set[int] = field(default_factory=set)
    lost_since_kill: set[int] = field(default_factory=set)
    lost: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    #: Controllers killed or stopped (to the model: silenced until restarted).
    controllers_down: set[int] = field(default_factory=set)
    #: Brokers unregistered since they went down (a restart registers them anew).
    unregistered: set[int] = field(default_factory=set)
    #: A latency or bandwidth toxic is on some link (heal removes it).
    shaped: bool = False
    #: The lowest min ISR the schedule has had (alter_config may lower it): the fault
    #: budget is the lowest min ISR - 1 (the safety axis judges with the run's lowest).
    min_isr_floor: int | None = None


@dataclass(frozen=True)
class Limits:
    """The generator's bounds that guards read (GenConfig's)."""

    max_count: int
    max_killed: int | None


@dataclass
class Gen:
    """The state a guard reads: the model's branches, the track, the bounds."""

    model: Lanes
    track: Track
    limits: Limits

    @property
    def traffic(self) -> bool:
        """Whether the schedule runs under client traffic (``UnderTraffic``)."""
        return isinstance(self.model, UnderTraffic)

    @property
    def brokers(self) -> list[int]:
        return [b.id for b in self.model.branches[0].brokers] if self.model.branches else []

    @property
    def controllers(self) -> list[int]:
        return list(self.model.branches[0].controllers) if self.model.branches else []

    def broker_config(self, key: str, default: int) -> int:
        """A broker config as the brokers run with it (the model's cluster: the harness's
        presets, then the scenario's), as the loader reads it for timing steps."""
        try:
            return int(self.model.cluster.broker_config.get(key, default))
        except ValueError:
            return default

    def every(self, ok: Callable[[World], bool]) -> bool:
        return bool(self.model.branches) and all(ok(w) for w in self.model.branches)

    def alive(self, b: int) -> bool:
        return self.every(lambda w: w.broker(b).alive)

    def down(self, b: int) -> bool:
        return self.every(lambda w: not w.broker(b).alive)

    @property
    def current(self) -> list[int]:
        """Brokers running and not paused: the ones the observer can ask."""
        return [b for b in self.brokers if self.alive(b) and b not in self.track.paused]

    def min_isr(self) -> int:
        """The lowest min ISR of any branch and of the schedule so far."""
        now = min((w.min_isr for w in self.model.branches), default=1)
        floor = self.track.min_isr_floor
        return now if floor is None else min(now, floor)

    def max_killed(self) -> int:
        if self.limits.max_killed is not None:
            return self.limits.max_killed
        return max(self.min_isr() - 1, 0) if self.model.branches else 0

    def controller_request(self, what: str) -> str | None:
        """Why a request to the controller (``what``) would not be answered, or None. The
        harness sends it to a broker that reaches the active controller, which forwards it
        (harness/client/admin.py ``to_controller``): in every branch there is an active
        controller, and some broker the observer may ask (running, not paused) reaches it
        in every branch."""
        if not self.every(lambda w: active_controller(w) is not None):
            return f"no active controller in some branch ({what} needs one)"
        if not any(all(_reaches_quorum(w, b) for w in self.model.branches)
                   for b in self.current):
            return (f"no running broker reaches the active controller in every branch ({what} "
                    "is forwarded to it by a broker)")
        return None


Steps = Callable[[Gen, random.Random], list[S.Step]]
Guard = Callable[[S.Step, Gen], "str | None"]
After = Callable[[S.Step, Track], None]
#: A move of the exhaustive explorer: one or more steps applied together (kill +
#: lose_unflushed is one unclean shutdown).
Move = tuple[S.Step, ...]


def _nothing_after(step: S.Step, track: Track) -> None:
    return None


def _can_change(w: World, step: S.Step) -> bool:
    return True


@dataclass(frozen=True)
class Exploration:
    """One step kind in the exhaustive explorer's alphabet (reference/search/explorer.py):
    its moves on the whole cluster or on each broker, and when a move starting with the
    kind's step can change anything (the explorer skips the rest: kill a dead broker, heal
    nothing)."""

    on_cluster: tuple[Move, ...] = ()
    on_broker: Callable[[int], list[Move]] | None = None
    can_change: Callable[[World, S.Step], bool] = _can_change

    def moves(self, brokers: Sequence[int]) -> list[Move]:
        per_broker = self.on_broker
        return [*self.on_cluster, *(m for b in brokers for m in per_broker(b))] \
            if per_broker is not None else list(self.on_cluster)


@dataclass(frozen=True)
class Generator:
    """One step kind as the generator makes it."""

    kind: str
    #: The model step class(es) it makes (a kill makes Kill and KillController).
    makes: type | tuple[type, ...]
    #: Default weight in a campaign's draw (``--weights`` overrides).
    weight: int
    #: Every step of the kind that could come next (parameters drawn from the rng).
    steps: Steps
    #: Why ``step`` may not come next, or None.
    why_invalid: Guard
    #: What the step leaves in the track for later guards.
    after: After = _nothing_after
    #: Whether the format takes the kind in a scenario with traffic (the loader refuses
    #: ``consume`` there: the traffic's consumers and its final read do the reading).
    under_traffic: bool = True
    #: Its moves in the exhaustive explorer, None where the explorer leaves it out.
    explore: Exploration | None = None

    def refused(self, g: Gen) -> str | None:
        """Why no step of the kind may come now whatever its parameters, or None."""
        if g.traffic and not self.under_traffic:
            return (f"no {self.kind} step under traffic (the format refuses it: "
                    "FORMAT.md \"Traffic\")")
        return None


def _leader_reachable(w: World) -> bool:
    leader = leader_broker(w)
    return leader is not None and link(w, CLIENT, leader.id)


def _reaches_quorum(w: World, b: int) -> bool:
    """Broker ``b`` and the active controller reach each other (with one controller: that
    one; with several, the quorum's leader, which holds a majority)."""
    c = active_controller(w)
    return c is not None and link(w, b, c) and link(w, c, b)


def _isolated(w: World, n: int) -> bool:
    others = [b.id for b in w.brokers if b.id != n] + list(w.controllers)
    return all((n, x) in w.cuts and (x, n) in w.cuts for x in others)


# -- records ------------------------------------------------------------------------------

def _client_step_guard(step: S.Step, g: Gen) -> str | None:
    if not g.every(_leader_reachable):
        return "no leader the client reaches in every branch"
    if isinstance(step, S.Produce) and not 1 <= step.count <= g.limits.max_count:
        return f"count {step.count} outside 1..{g.limits.max_count}"
    return None


def _produce_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    acks = rng.choices([a for a, _ in ACKS], [n for _, n in ACKS])[0]
    return [S.Produce(rng.randint(1, g.limits.max_count), acks)]


PRODUCE = Generator("produce", S.Produce, 6, _produce_steps, _client_step_guard,
                    explore=Exploration(on_cluster=((S.Produce(1, "all"),),)))
CONSUME = Generator("consume", S.Consume, 1, lambda g, rng: [S.Consume()], _client_step_guard,
                    under_traffic=False)


# -- network ------------------------------------------------------------------------------

def _not_running(g: Gen, n: object) -> str | None:
    if not isinstance(n, int) or n not in g.brokers or not g.alive(n):
        return f"broker {n} is not running"
    return None


def _isolate_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Isolate)
    n = step.node
    why = _not_running(g, n)
    if why is None and isinstance(n, int) and g.every(lambda w: _isolated(w, n)):
        why = f"broker {n} is isolated already"
    return why


def _cut_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Cut)
    a, b = step.src, step.dst
    if a == b or a not in g.brokers or b not in g.brokers or step.direction != "both":
        return "a generated cut joins two brokers, both ways"
    if g.every(lambda w: (a, b) in w.cuts and (b, a) in w.cuts):
        return f"link {a}-{b} is cut already"
    return None


def _partition_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    """Two sides: the controllers with some brokers, and the other brokers (two or more:
    one alone is an ``isolate``). The quorum is never split, as no generated network fault
    splits it; the brokers cut off still reach each other, so a leader among them keeps
    its followers there while the controller elects on its side."""
    brokers = g.brokers
    out: list[S.Step] = []
    for size in range(2, len(brokers)):
        for away in combinations(brokers, size):
            near = tuple(g.controllers) + tuple(b for b in brokers if b not in away)
            out.append(S.Partition((near, away)))
    return out


def _partition_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Partition)
    if step not in _partition_steps(g, random.Random(0)):
        return ("a generated partition keeps the controllers with at least one broker and "
                "puts two or more brokers on the other side")
    if g.every(lambda w: step.pairs() <= w.cuts):
        return "every link between the two sides is cut already"
    return None


def _heal_guard(step: S.Step, g: Gen) -> str | None:
    if g.every(lambda w: not w.cuts) and not g.track.shaped:
        return "nothing to heal"
    return None


def _heal_after(step: S.Step, track: Track) -> None:
    track.shaped = False


def _not_isolated_yet(w: World, step: S.Step) -> bool:
    assert isinstance(step, S.Isolate)
    return (step.node, w.controllers[0]) not in w.cuts


ISOLATE = Generator("isolate", S.Isolate, 2, lambda g, rng: [S.Isolate(b) for b in g.brokers],
                    _isolate_guard,
                    explore=Exploration(on_broker=lambda b: [(S.Isolate(b),)],
                                        can_change=_not_isolated_yet))
CUT = Generator("cut", S.Cut, 2,
                lambda g, rng: [S.Cut(a, b) for a in g.brokers for b in g.brokers if a < b],
                _cut_guard)
PARTITION = Generator("partition", S.Partition, 1, _partition_steps, _partition_guard)
HEAL = Generator("heal", S.Heal, 2, lambda g, rng: [S.Heal()], _heal_guard, _heal_after,
                 explore=Exploration(on_cluster=((S.Heal(),),),
                                     can_change=lambda w, step: bool(w.cuts)))


def _pause_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Pause)
    n = step.node
    why = _not_running(g, n)
    if why is not None:
        return why
    if n in g.track.paused:
        return f"broker {n} is paused already"
    if len(g.current) < 2:
        return "the last running broker stays up (the observer needs one)"
    return None


def _resume_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Resume)
    return None if step.node in g.track.paused else f"broker {step.node} is not paused"


def _pause_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.Pause | S.Resume)
    node = int(step.node)
    (track.paused.add if isinstance(step, S.Pause) else track.paused.discard)(node)


PAUSE = Generator("pause", S.Pause, 1, lambda g, rng: [S.Pause(b) for b in g.brokers],
                  _pause_guard, _pause_after)
RESUME = Generator("resume", S.Resume, 2,
                   lambda g, rng: [S.Resume(b) for b in sorted(g.track.paused)],
                   _resume_guard, _pause_after)


# -- processes ----------------------------------------------------------------------------

def _down_guard(step: S.Step, g: Gen, also: Callable[[int], str | None]) -> str | None:
    """kill and stop: of a controller, one the quorum can spare; of a broker, a running one,
    never the last current one, and what the kind itself needs of it (``also``)."""
    if isinstance(step, S.OnController):
        return _controller_down_guard(step, g)
    assert isinstance(step, S.Kill | S.Stop)
    victim = step.broker
    why = _not_running(g, victim)
    if why is not None:
        return why
    if len([b for b in g.current if b != victim]) < 1:
        return "the last running broker stays up (the observer needs one)"
    return also(victim)


def _controller_down_guard(step: S.OnController, g: Gen) -> str | None:
    """kill and stop of a controller (by id): one that runs, and a majority of the quorum
    keeps running (KIP-595: with no majority nothing is committed, and neither a
    restarted broker nor an admin request gets an answer)."""
    c = step.controller
    if not isinstance(c, int) or c not in g.controllers:
        return f"{c} is not a controller (a generated controller step names one by id)"
    if c in g.track.controllers_down:
        return f"controller {c} is down already"
    up = len(g.controllers) - len(g.track.controllers_down) - 1
    if 2 * up <= len(g.controllers):
        return (f"a majority of the {len(g.controllers)} controllers stays up (the quorum): "
                f"{sorted(g.track.controllers_down)} down already")
    return None


def _kill_guard(step: S.Step, g: Gen) -> str | None:
    def within_fault_budget(b: int) -> str | None:
        if b in g.track.ever_killed or len(g.track.ever_killed) < g.max_killed():
            return None
        return (f"at most {g.max_killed()} broker(s) killed (the fault budget: an unclean "
                "shutdown may lose unflushed data)")
    return _down_guard(step, g, within_fault_budget)


def _stop_guard(step: S.Step, g: Gen) -> str | None:
    def can_shut_down_cleanly(b: int) -> str | None:
        if b in g.track.paused:
            return f"broker {b} is paused (no clean shutdown)"
        if not g.every(lambda w: _reaches_quorum(w, b)):
            return f"broker {b} is cut from the controller (no controlled shutdown)"
        return None
    return _down_guard(step, g, can_shut_down_cleanly)


def _restart_guard(step: S.Step, g: Gen) -> str | None:
    if isinstance(step, S.RestartController):
        c = step.controller
        return None if c in g.track.controllers_down else f"controller {c} is not down"
    assert isinstance(step, S.Restart)
    back = step.broker
    if back not in g.brokers or not g.down(back):
        return f"broker {back} is not down"
    if not g.every(lambda w: _reaches_quorum(w, back)):
        return f"broker {back} is cut from the controller (it could not register)"
    return None


def _lose_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.LoseUnflushed)
    lost, o = step.broker, step.offset
    if lost not in g.track.killed:
        return f"broker {lost} was not killed (or restarted since)"
    if lost in g.track.lost_since_kill:
        return f"broker {lost} lost its unflushed data already since its kill"
    if g.traffic and o != 0:
        return (f"offset {o}: under traffic only offset 0 is a batch boundary known in "
                "advance (the log is cut at a batch boundary)")
    if not g.every(lambda w: 0 <= o < w.broker(lost).leo):
        return f"offset {o} is not below broker {lost}'s log end in every branch"
    return None


def _lose_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    out: list[S.Step] = []
    for b in sorted(g.track.killed - g.track.lost_since_kill):
        leo = min(w.broker(b).leo for w in g.model.branches)
        if leo > 0:
            out.append(S.LoseUnflushed(b, 0 if g.traffic else rng.randrange(leo)))
    return out


def _controller_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.OnController) and isinstance(step.controller, int)
    (track.controllers_down.discard if isinstance(step, S.RestartController)
     else track.controllers_down.add)(step.controller)


def _kill_after(step: S.Step, track: Track) -> None:
    if isinstance(step, S.OnController):
        return _controller_after(step, track)
    assert isinstance(step, S.Kill)
    track.killed.add(step.broker)
    track.ever_killed.add(step.broker)
    track.lost_since_kill.discard(step.broker)
    track.paused.discard(step.broker)
    track.unregistered.discard(step.broker)


def _back_after(step: S.Step, track: Track) -> None:
    if isinstance(step, S.OnController):
        return _controller_after(step, track)
    assert isinstance(step, S.Stop | S.Restart)
    track.killed.discard(step.broker)
    track.lost_since_kill.discard(step.broker)
    track.unregistered.discard(step.broker)


def _lose_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.LoseUnflushed)
    track.lost_since_kill.add(step.broker)
    track.lost.add(step.broker)


def _with_controllers(brokers: Callable[[Gen], list[S.Step]],
                      controller: Callable[[int], S.Step]) -> Steps:
    """The broker steps, and with several controllers the same step on each controller."""
    def steps(g: Gen, rng: random.Random) -> list[S.Step]:
        on = g.controllers if len(g.controllers) > 1 else []
        return brokers(g) + [controller(c) for c in on]
    return steps


def _running(w: World, step: S.Step) -> bool:
    assert isinstance(step, S.OnBroker)
    return w.broker(step.broker).alive


def _stopped(w: World, step: S.Step) -> bool:
    return not _running(w, step)


KILL = Generator("kill", (S.Kill, S.KillController), 3,
                 _with_controllers(lambda g: [S.Kill(b) for b in g.brokers], S.KillController),
                 _kill_guard, _kill_after,
                 explore=Exploration(on_broker=lambda b: [(S.Kill(b),)], can_change=_running))
STOP = Generator("stop", (S.Stop, S.StopController), 1,
                 _with_controllers(lambda g: [S.Stop(b) for b in g.brokers], S.StopController),
                 _stop_guard, _back_after,
                 explore=Exploration(on_broker=lambda b: [(S.Stop(b),)], can_change=_running))
RESTART = Generator("restart", (S.Restart, S.RestartController), 3,
                    _with_controllers(lambda g: [S.Restart(b) for b in g.brokers],
                                      S.RestartController),
                    _restart_guard, _back_after,
                    explore=Exploration(on_broker=lambda b: [(S.Restart(b),)],
                                        can_change=_stopped))
#: In the explorer an unclean shutdown is one move: the kill and the loss of the whole
#: unflushed log (offset 0) together, so a lost log costs no extra depth.
LOSE_UNFLUSHED = Generator("lose_unflushed", S.LoseUnflushed, 4, _lose_steps, _lose_guard,
                           _lose_after,
                           explore=Exploration(
                               on_broker=lambda b: [(S.Kill(b), S.LoseUnflushed(b, 0))],
                               can_change=_running))


def _unregister_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Unregister)
    b = step.broker
    if b not in g.brokers or not g.down(b):
        return f"broker {b} is not down (a running broker registers again at its heartbeat)"
    if b in g.track.unregistered:
        return f"broker {b} is unregistered already"
    if g.track.paused:
        # The step sends UnregisterBroker through the first running broker, paused or not
        # (harness/scenario/steps/unregister.py): seen on 4.3.1, fuzz-s4310-1 (a timeout).
        return f"broker(s) {sorted(g.track.paused)} paused (the request could go to one)"
    why = g.controller_request("UnregisterBroker")
    if why is not None:
        return why
    return None


def _unregister_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.Unregister)
    track.unregistered.add(step.broker)


UNREGISTER = Generator("unregister", S.Unregister, 1,
                       lambda g, rng: [S.Unregister(b) for b in g.brokers],
                       _unregister_guard, _unregister_after)


# -- through the controller: alter_config, elect, reassign ------------------------------

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"


class Config(dict[str, str]):
    """An alter_config's configs, hashable as every generated step is (a campaign and its
    tests keep schedules in sets); equal to the loader's plain mapping."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


def _replication_factor(w: World) -> int:
    """The partition's replicas once an ongoing reassignment is done (its target)."""
    p = w.partition
    return len(p.target_replicas or p.replicas)


def _alter_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    if not g.model.branches:
        return []
    rf = max(_replication_factor(w) for w in g.model.branches)
    out: list[S.Step] = [S.AlterConfig("topic", Config({MIN_ISR: str(m)}))
                         for m in range(1, rf + 1)]
    return out + [S.AlterConfig("topic", Config({UNCLEAN: v})) for v in ("true", "false")]


def _alter_guard(step: S.Step, g: Gen) -> str | None:
    """A topic's min ISR (1..its replication factor) or unclean election, changed: the
    value differs from the current one in every branch, and a lower min ISR keeps the
    brokers killed so far within the fault budget (min ISR - 1)."""
    assert isinstance(step, S.AlterConfig)
    if step.scope != "topic" or len(step.config) != 1 or \
            not set(step.config) <= {MIN_ISR, UNCLEAN}:
        return f"a generated alter_config sets one topic config: {MIN_ISR} or {UNCLEAN}"
    why = g.controller_request("IncrementalAlterConfigs")
    if why is not None:
        return why
    ((key, value),) = step.config.items()
    if key == UNCLEAN:
        if value not in ("true", "false"):
            return f"{UNCLEAN} is true or false, not {value!r}"
        on = value == "true"
        if not g.every(lambda w: w.config.unclean_leader_election != on):
            return f"{UNCLEAN} is {value} already in some branch"
        return None
    if not value.isdigit() or not 1 <= int(value) <= min(
            _replication_factor(w) for w in g.model.branches):
        return f"{MIN_ISR} {value} is not 1..the replication factor"
    m = int(value)
    if not g.every(lambda w: w.config.topic_min_isr != m):
        return f"{MIN_ISR} is {m} already in some branch"
    if len(g.track.ever_killed) > m - 1:
        return (f"{MIN_ISR} {m} would leave {len(g.track.ever_killed)} killed broker(s) "
                f"beyond the fault budget (min ISR - 1 = {m - 1})")
    return None


def _alter_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.AlterConfig)
    value = step.config.get(MIN_ISR)
    if value is not None:
        m = int(value)
        track.min_isr_floor = m if track.min_isr_floor is None else min(track.min_isr_floor, m)


ALTER_CONFIG = Generator("alter_config", S.AlterConfig, 1, _alter_steps, _alter_guard,
                         _alter_after)

#: The election types a release runs (ElectLeaders; the others are KIP-966 part 2).
ELECTIONS = ("preferred", "unclean")


def _elect_guard(step: S.Step, g: Gen) -> str | None:
    """ElectLeaders: preferred where the preferred replica does not lead in some branch,
    unclean where the partition is leaderless in some branch (else the controller
    answers ELECTION_NOT_NEEDED and nothing is tried)."""
    assert isinstance(step, S.Elect)
    if step.type not in ELECTIONS or step.broker is not None:
        return f"a generated election is one of {', '.join(ELECTIONS)}"
    why = g.controller_request("ElectLeaders")
    if why is not None:
        return why
    if step.type == "preferred":
        if g.every(lambda w: w.partition.leader == w.partition.replicas[0]):
            return "the preferred replica leads already in every branch"
        return None
    if g.every(lambda w: w.partition.leader is not None):
        return "the partition has a leader in every branch (nothing to elect uncleanly)"
    return None


ELECT = Generator("elect", S.Elect, 2, lambda g, rng: [S.Elect(t) for t in ELECTIONS],
                  _elect_guard)


def _reassign_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    """Add a broker, remove a replica, replace one by another broker (KIP-455 targets
    from the current replicas), or cancel the ongoing reassignment."""
    if not g.model.branches:
        return []
    cur = g.model.branches[0].partition.replicas
    others = [b for b in g.brokers if b not in cur]
    targets = [cur + (b,) for b in others]
    targets += [tuple(r for r in cur if r != x) for x in cur]
    targets += [tuple(b if r == x else r for r in cur) for x in cur for b in others]
    out: list[S.Step] = [S.Reassign(t) for t in targets]
    return out + [S.Reassign(cancel=True)]


def _reassign_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Reassign)
    why = g.controller_request("AlterPartitionReassignments")
    if why is not None:
        return why
    if step.cancel:
        if not g.every(lambda w: w.partition.reassigning):
            return "no reassignment in progress in some branch (nothing to cancel)"
        return None
    t = step.replicas
    if not t or len(set(t)) != len(t) or not set(t) <= set(g.brokers):
        return f"target {list(t)} is not a list of distinct brokers"
    if set(t) & g.track.unregistered:
        return f"target {list(t)} names an unregistered broker (the controller refuses it)"
    if not g.every(lambda w: not w.partition.reassigning):
        return "a reassignment is in progress in some branch (one at a time: cancel it or " \
               "let it complete)"
    if g.every(lambda w: w.partition.replicas == t):
        return f"the replicas are {list(t)} already"
    if not g.every(lambda w: len(t) >= w.min_isr):
        return (f"target {list(t)} is shorter than min ISR (the effective min ISR, and with "
                "it the fault budget, would drop)")
    return None


REASSIGN = Generator("reassign", S.Reassign, 2, _reassign_steps, _reassign_guard)


# -- timing: latency, bandwidth, sleep ---------------------------------------------------

#: Kafka's defaults for the configs the loader's timing rules read (timing.KAFKA_DEFAULTS).
REQUEST_TIMEOUT_MS = 30_000
FETCH_WAIT_MAX_MS = 500
FETCH_MAX_BYTES = 1_048_576
#: The loader's margin around a request timeout (harness/scenario/steps/timing.MARGIN_MS).
MARGIN_MS = 1_000
#: Seconds a generated sleep lasts (short: time as an input, not a wait).
SLEEPS = (1, 2, 3, 5)


def _links(g: Gen) -> list[tuple[int | None, int | None, int | None]]:
    """Where a generated timing toxic goes (src, dst, node): every replication link of a
    broker (node), or one link between two brokers, both ways."""
    return [(None, None, b) for b in g.brokers] + [
        (a, b, None) for a in g.brokers for b in g.brokers if a < b]


def _latency_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    """A short delay (nothing settled changes) or, one time in four, one whose round trip
    passes request.timeout.ms (every fetch over it times out: as good as cut)."""
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    out: list[S.Step] = []
    for src, dst, node in _links(g):
        if rng.random() < 0.25:
            ms = -(-(timeout + MARGIN_MS) // 2) + rng.randint(0, 500)
            jitter = 0
        else:
            ms = rng.randint(20, 400)
            jitter = rng.randint(0, ms // 4)
        out.append(T.Latency(ms, jitter, src=src, dst=dst, node=node,
                             request_timeout_ms=timeout))
    return out


def _shaping_guard(g: Gen, src: int | None, dst: int | None, node: int | None,
                   direction: str) -> str | None:
    ends = [node] if node is not None else [src, dst]
    if not all(isinstance(n, int) and n in g.brokers for n in ends) or \
            (node is None and (src == dst or direction != "both")):
        return "a generated timing toxic is on a broker's links or a broker link, both ways"
    if g.track.shaped:
        return "a link is shaped already (one toxic at a time: heal first)"
    return None


def _latency_guard(step: S.Step, g: Gen) -> str | None:
    """As the loader's rule (timing.py): a round trip near request.timeout.ms is refused
    (whether a fetch makes it then depends on scheduling)."""
    assert isinstance(step, T.Latency)
    why = _shaping_guard(g, step.src, step.dst, step.node, step.direction)
    if why is not None:
        return why
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    if step.request_timeout_ms != timeout:
        return f"request_timeout_ms {step.request_timeout_ms} is not the brokers' {timeout}"
    rtt = step.round_trip_ms()
    low = timeout - MARGIN_MS - g.broker_config("replica.fetch.wait.max.ms", FETCH_WAIT_MAX_MS)
    if not 0 <= step.jitter_ms <= step.ms <= 60_000 or low <= rtt < timeout + MARGIN_MS:
        return (f"a round trip of {rtt} ms is too close to request.timeout.ms = {timeout} ms "
                "(or out of bounds)")
    return None


def _shaped_after(step: S.Step, track: Track) -> None:
    track.shaped = True


LATENCY = Generator("latency", T.Latency, 1, _latency_steps, _latency_guard, _shaped_after)


def _min_kbps(g: Gen) -> int:
    """The loader's floor: a full fetch response within request.timeout.ms."""
    timeout = g.broker_config("request.timeout.ms", REQUEST_TIMEOUT_MS)
    fetch_max = g.broker_config("replica.fetch.max.bytes", FETCH_MAX_BYTES)
    return -(-fetch_max * 1000 // (1024 * timeout))


def _bandwidth_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    low = _min_kbps(g)
    return [T.Bandwidth(rng.randint(2 * low, 20 * low), src=src, dst=dst, node=node)
            for src, dst, node in _links(g)]


def _bandwidth_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, T.Bandwidth)
    why = _shaping_guard(g, step.src, step.dst, step.node, step.direction)
    if why is None and not _min_kbps(g) <= step.kbps <= 1_000_000:
        why = (f"{step.kbps} KB/s is below {_min_kbps(g)} KB/s (a full fetch response within "
               "request.timeout.ms)")
    return why


BANDWIDTH = Generator("bandwidth", T.Bandwidth, 1, _bandwidth_steps, _bandwidth_guard,
                      _shaped_after)


def _sleep_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, T.Sleep)
    return None if step.seconds in SLEEPS else f"a generated sleep is one of {SLEEPS} s"


SLEEP = Generator("sleep", T.Sleep, 1, lambda g, rng: [T.Sleep(rng.choice(SLEEPS))],
                  _sleep_guard)

#: Every generator defined here, by kind: what harness/scenario/steps/ names (a test
#: checks that the registry names exactly these) and the pure default for this package.
ALL: Mapping[str, Generator] = {g.kind: g for g in (
    PRODUCE, CONSUME, ISOLATE, CUT, PARTITION, HEAL, PAUSE, RESUME, KILL, STOP, RESTART,
    LOSE_UNFLUSHED, UNREGISTER, ALTER_CONFIG, ELECT, REASSIGN, LATENCY, BANDWIDTH, SLEEP)}
