"""What every step kind's generator is made of, and what its guards read: the
``Generator`` of a kind (default weight, candidate steps, guard, what it leaves for later
guards, whether the format takes it under traffic) and its ``Exploration`` in the
exhaustive explorer; the state a guard reads (``Gen``: the model's branches as ``Lanes``,
under traffic or not, the ``Track`` of what the steps so far did, the ``Limits``); and the
guard helpers several step families share (a broker running; a broker and the active
controller reaching each other, KIP-595's quorum leader with several controllers).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from reference.model import steps as S
from reference.model.controller import active_controller, link
from reference.model.state import World

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
    #: Partitions add_partitions added to the topic (the model knows only its first ones).
    added_partitions: int = 0
    #: create_topic made a topic the scenario does not declare (once per schedule).
    new_topic: bool = False
    #: The cluster's finalized metadata.version feature level once a ``feature`` step
    #: raised it (None: the level its birth build formatted it at).
    mv: int | None = None
    #: Log directories failed per broker since its last restart (fail_log_dir; the
    #: restart repairs them: harness/cluster/logdirs.py).
    failed_dirs: dict[int, set[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Builds:
    """The builds a schedule's nodes may run, as data (the harness resolves the versions:
    harness/search/fuzz/): ``target`` is the run's build, the one every node ends on;
    ``birth`` the one its cluster was born on (``target`` when it is not upgraded);
    ``catalog`` every version an ``upgrade`` step may name (the target and birth too)."""

    target: str
    birth: str
    catalog: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limits:
    """The generator's bounds that guards read (GenConfig's)."""

    max_count: int
    max_killed: int | None
    #: The run's builds (None: not known; no ``upgrade`` or ``feature`` step is made).
    builds: Builds | None = None
    #: Log directories per broker of the schedule's cluster (``cluster.log_dirs``; 1: no
    #: move_replica_dir or fail_log_dir step is made). Tiered storage's cluster setting
    #: goes next to it (generators/logdirs.py "Hook for tiered storage").
    log_dirs: int = 1


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

    def build_of(self, node: int) -> str | None:
        """The version ``node`` runs (the same in every branch: only steps change it), its
        cluster's birth build until an ``upgrade`` moved it; None: the builds are not
        known (``Limits.builds``)."""
        b = self.limits.builds
        if b is None:
            return None
        for n, v in self.model.branches[0].builds if self.model.branches else ():
            if n == node:
                return v
        return b.birth

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
    #: Whether the step acts on the topic's partitions (records, configs, elections): none
    #: may come while the topic is deleted (the loader refuses it too).
    on_partition: bool = False

    def refused(self, g: Gen) -> str | None:
        """Why no step of the kind may come now whatever its parameters, or None."""
        if g.traffic and not self.under_traffic:
            return (f"no {self.kind} step under traffic (the format refuses it: "
                    "FORMAT.md \"Traffic\")")
        if self.on_partition and any(w.deleted for w in g.model.branches):
            return f"the topic is deleted: no {self.kind} step until it is created again"
        return None


def _reaches_quorum(w: World, b: int) -> bool:
    """Broker ``b`` and the active controller reach each other (with one controller: that
    one; with several, the quorum's leader, which holds a majority)."""
    c = active_controller(w)
    return c is not None and link(w, b, c) and link(w, c, b)


def _not_running(g: Gen, n: object) -> str | None:
    if not isinstance(n, int) or n not in g.brokers or not g.alive(n):
        return f"broker {n} is not running"
    return None
