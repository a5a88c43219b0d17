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

After ``length`` such steps the schedule ends with a recovery tail (Jepsen's final heal
and read): ``heal`` if a link is cut, ``restart`` of every broker down, and ``consume``
if the partition then has a leader the client reaches.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from reference.model import steps as S
from reference.model.controller import link
from reference.model.predict import Model, durable
from reference.model.protocol import leader_broker
from reference.model.state import CLIENT, World

#: The step kinds the generator knows, with their default weights.
DEFAULT_WEIGHTS: Mapping[str, int] = {
    "produce": 6, "consume": 1, "isolate": 2, "cut": 2, "heal": 2, "kill": 3,
    "lose_unflushed": 4, "stop": 1, "restart": 3,
}
KINDS: tuple[str, ...] = tuple(DEFAULT_WEIGHTS)
#: acks levels of a generated produce, with their weights.
ACKS: tuple[tuple[str, int], ...] = (("all", 2), ("1", 1), ("0", 1))


@dataclass(frozen=True)
class GenConfig:
    length: int = 10
    weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    max_count: int = 5
    #: Distinct brokers that may be killed (unclean shutdowns), and so lose unflushed
    #: data (None: min ISR - 1, the KIP's fault budget).
    max_killed: int | None = None
    tail: bool = True
    #: Chance that a kill goes to the partition's leader when it may (Jepsen's "kill the
    #: primary"); otherwise a kill goes to any running broker alike.
    kill_leader: float = 0.6


@dataclass
class Track:
    """What the steps so far did that the model's world does not say: which brokers are
    down by a kill (lose_unflushed may follow), which lost data already."""

    killed: set[int] = field(default_factory=set)
    ever_killed: set[int] = field(default_factory=set)
    lost_since_kill: set[int] = field(default_factory=set)
    lost: set[int] = field(default_factory=set)

    def after(self, step: S.Step) -> None:
        match step:
            case S.Kill(broker=b):
                self.killed.add(b)
                self.ever_killed.add(b)
                self.lost_since_kill.discard(b)
            case S.Stop(broker=b) | S.Restart(broker=b):
                self.killed.discard(b)
                self.lost_since_kill.discard(b)
            case S.LoseUnflushed(broker=b):
                self.lost_since_kill.add(b)
                self.lost.add(b)
            case _:
                pass


def _every(model: Model, ok: Callable[[World], bool]) -> bool:
    return bool(model.branches) and all(ok(w) for w in model.branches)


def _leader_reachable(w: World) -> bool:
    leader = leader_broker(w)
    return leader is not None and link(w, CLIENT, leader.id)


def _leader(model: Model) -> int | None:
    """The partition's leader if every branch has the same one."""
    leaders = {w.partition.leader for w in model.branches}
    return leaders.pop() if len(leaders) == 1 else None


def _reaches_quorum(w: World, b: int) -> bool:
    return all(link(w, b, c) and link(w, c, b) for c in w.controllers)


def _isolated(w: World, n: int) -> bool:
    others = [b.id for b in w.brokers if b.id != n] + list(w.controllers)
    return all((n, x) in w.cuts and (x, n) in w.cuts for x in others)


def _max_killed(model: Model, cfg: GenConfig) -> int:
    if cfg.max_killed is not None:
        return cfg.max_killed
    return max(model.branches[0].min_isr - 1, 0) if model.branches else 0


def why_invalid(step: S.Step, model: Model, track: Track, cfg: GenConfig) -> str | None:
    """Why ``step`` may not come next (the rules above), or None when it may."""
    brokers = [b.id for b in model.branches[0].brokers] if model.branches else []

    def alive(b: int) -> bool:
        return _every(model, lambda w: w.broker(b).alive)

    def down(b: int) -> bool:
        return _every(model, lambda w: not w.broker(b).alive)

    running = [b for b in brokers if alive(b)]
    match step:
        case S.Produce() | S.Consume():
            if not _every(model, _leader_reachable):
                return "no leader the client reaches in every branch"
            if isinstance(step, S.Produce) and not 1 <= step.count <= cfg.max_count:
                return f"count {step.count} outside 1..{cfg.max_count}"
        case S.Isolate(node=n):
            if n not in brokers or not alive(n):
                return f"broker {n} is not running"
            if _every(model, lambda w: _isolated(w, n)):
                return f"broker {n} is isolated already"
        case S.Cut(src=a, dst=b, direction=d):
            if a == b or a not in brokers or b not in brokers or d != "both":
                return "a generated cut joins two brokers, both ways"
            if _every(model, lambda w: (a, b) in w.cuts and (b, a) in w.cuts):
                return f"link {a}-{b} is cut already"
        case S.Heal():
            if _every(model, lambda w: not w.cuts):
                return "nothing to heal"
        case S.Kill(broker=int() as victim) | S.Stop(broker=int() as victim):
            if victim not in brokers or not alive(victim):
                return f"broker {victim} is not running"
            if len(running) < 2:
                return "the last running broker stays up (the observer needs one)"
            if isinstance(step, S.Kill) and victim not in track.ever_killed \
                    and len(track.ever_killed) >= _max_killed(model, cfg):
                return (f"at most {_max_killed(model, cfg)} broker(s) killed (the fault "
                        "budget: an unclean shutdown may lose unflushed data)")
            if isinstance(step, S.Stop) and not _every(model, lambda w: _reaches_quorum(w, victim)):
                return f"broker {victim} is cut from the controller (no controlled shutdown)"
        case S.LoseUnflushed(broker=lost, offset=o):
            if lost not in track.killed:
                return f"broker {lost} was not killed (or restarted since)"
            if lost in track.lost_since_kill:
                return f"broker {lost} lost its unflushed data already since its kill"
            if not _every(model, lambda w: 0 <= o < w.broker(lost).leo):
                return f"offset {o} is not below broker {lost}'s log end in every branch"
        case S.Restart(broker=int() as back):
            if back not in brokers or not down(back):
                return f"broker {back} is not down"
            if not _every(model, lambda w: _reaches_quorum(w, back)):
                return f"broker {back} is cut from the controller (it could not register)"
        case _:
            return f"the generator does not make {step.kind} steps"
    return None


def candidates(kind: str, model: Model, track: Track, cfg: GenConfig,
               rng: random.Random) -> list[S.Step]:
    """Every valid step of ``kind`` now (counts and offsets drawn from ``rng``)."""
    w0 = model.branches[0]
    brokers = [b.id for b in w0.brokers]
    out: list[S.Step]
    match kind:
        case "produce":
            acks = rng.choices([a for a, _ in ACKS], [n for _, n in ACKS])[0]
            out = [S.Produce(rng.randint(1, cfg.max_count), acks)]
        case "consume":
            out = [S.Consume()]
        case "isolate":
            out = [S.Isolate(b) for b in brokers]
        case "cut":
            out = [S.Cut(a, b) for a in brokers for b in brokers if a < b]
        case "heal":
            out = [S.Heal()]
        case "kill":
            out = [S.Kill(b) for b in brokers]
        case "stop":
            out = [S.Stop(b) for b in brokers]
        case "restart":
            out = [S.Restart(b) for b in brokers]
        case "lose_unflushed":
            out = []
            for b in sorted(track.killed - track.lost_since_kill):
                leo = min(w.broker(b).leo for w in model.branches)
                if leo > 0:
                    out.append(S.LoseUnflushed(b, rng.randrange(leo)))
        case _:
            raise ValueError(f"unknown step kind {kind!r} (one of {', '.join(KINDS)})")
    return [s for s in out if why_invalid(s, model, track, cfg) is None]


def _tail(model: Model, track: Track, cfg: GenConfig) -> list[S.Step]:
    out: list[S.Step] = []

    def add(step: S.Step) -> None:
        if why_invalid(step, model, track, cfg) is None:
            model.apply(step)
            track.after(step)
            out.append(step)
    add(S.Heal())
    for b in sorted(b.id for b in model.branches[0].brokers):
        add(S.Restart(b))
    add(S.Consume())
    return out


def generate(new_model: Callable[[], Model], seed: int | str, cfg: GenConfig = GenConfig()
             ) -> tuple[S.Step, ...]:
    """A schedule of ``cfg.length`` generated steps (plus the recovery tail)."""
    weights = {k: int(v) for k, v in cfg.weights.items() if int(v) > 0}
    unknown = sorted(set(weights) - set(KINDS))
    if unknown:
        raise ValueError(f"unknown step kind(s) {', '.join(unknown)} (one of "
                         f"{', '.join(KINDS)})")
    rng = random.Random(f"kafka-chaos-fuzz:{seed}")
    model, track = new_model(), Track()
    out: list[S.Step] = []
    while len(out) < cfg.length:
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
        model.apply(step)
        track.after(step)
        out.append(step)
    if cfg.tail:
        out.extend(_tail(model, track, cfg))
    return tuple(out)


def validate(new_model: Callable[[], Model], steps: Sequence[S.Step],
             cfg: GenConfig = GenConfig()) -> tuple[int, str] | None:
    """The first step (index, reason) that breaks the generator's rules, or None. The
    shrinker keeps only schedules that pass (a shrunk schedule is one the generator
    could have made, with any length)."""
    model, track = new_model(), Track()
    for i, step in enumerate(steps):
        why = why_invalid(step, model, track, cfg)
        if why is not None:
            return i, why
        model.apply(step)
        track.after(step)
    return None


def predicts_acked_loss(new_model: Callable[[], Model], steps: Sequence[S.Step]) -> bool:
    """Whether the model loses acks=all records in every branch at the end of ``steps``
    (``kafka-chaos fuzz --guided``: run only the schedules the build's model predicts
    lose data, for the cluster to confirm)."""
    model = new_model()
    for step in steps:
        model.apply(step)
    return bool(model.branches) and all(w.acked_all() - durable(w) for w in model.branches)
