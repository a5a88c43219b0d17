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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reference.model import steps as S
from reference.model.controller import link
from reference.model.protocol import leader_broker
from reference.model.state import CLIENT, World

if TYPE_CHECKING:
    from reference.model.predict import Model

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


@dataclass(frozen=True)
class Limits:
    """The generator's bounds that guards read (GenConfig's)."""

    max_count: int
    max_killed: int | None


@dataclass
class Gen:
    """The state a guard reads: the model's branches, the track, the bounds."""

    model: Model
    track: Track
    limits: Limits

    @property
    def brokers(self) -> list[int]:
        return [b.id for b in self.model.branches[0].brokers] if self.model.branches else []

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

    def max_killed(self) -> int:
        if self.limits.max_killed is not None:
            return self.limits.max_killed
        w = self.model.branches[0] if self.model.branches else None
        return max(w.min_isr - 1, 0) if w is not None else 0


Steps = Callable[[Gen, random.Random], list[S.Step]]
Guard = Callable[[S.Step, Gen], "str | None"]
After = Callable[[S.Step, Track], None]


def _nothing_after(step: S.Step, track: Track) -> None:
    return None


@dataclass(frozen=True)
class Generator:
    """One step kind as the generator makes it."""

    kind: str
    #: The model step class it makes (a kill of a controller is not a generated kill).
    makes: type
    #: Default weight in a campaign's draw (``--weights`` overrides).
    weight: int
    #: Every step of the kind that could come next (parameters drawn from the rng).
    steps: Steps
    #: Why ``step`` may not come next, or None.
    why_invalid: Guard
    #: What the step leaves in the track for later guards.
    after: After = _nothing_after


def _leader_reachable(w: World) -> bool:
    leader = leader_broker(w)
    return leader is not None and link(w, CLIENT, leader.id)


def _reaches_quorum(w: World, b: int) -> bool:
    return all(link(w, b, c) and link(w, c, b) for c in w.controllers)


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


PRODUCE = Generator("produce", S.Produce, 6, _produce_steps, _client_step_guard)
CONSUME = Generator("consume", S.Consume, 1, lambda g, rng: [S.Consume()], _client_step_guard)


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


def _heal_guard(step: S.Step, g: Gen) -> str | None:
    if g.every(lambda w: not w.cuts):
        return "nothing to heal"
    if g.track.paused:
        # To the model a paused node is a cut-off one: a heal would give it its links back
        # while its process is still stopped.
        return f"broker(s) {sorted(g.track.paused)} paused: resume them first"
    return None


ISOLATE = Generator("isolate", S.Isolate, 2, lambda g, rng: [S.Isolate(b) for b in g.brokers],
                    _isolate_guard)
CUT = Generator("cut", S.Cut, 2,
                lambda g, rng: [S.Cut(a, b) for a in g.brokers for b in g.brokers if a < b],
                _cut_guard)
HEAL = Generator("heal", S.Heal, 2, lambda g, rng: [S.Heal()], _heal_guard)


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

def _down_guard(step: S.Step, g: Gen) -> str | None:
    """kill and stop: a running broker, never the last current one."""
    assert isinstance(step, S.Kill | S.Stop)
    victim = step.broker
    why = _not_running(g, victim)
    if why is not None:
        return why
    if len([b for b in g.current if b != victim]) < 1:
        return "the last running broker stays up (the observer needs one)"
    return None


def _kill_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Kill)
    why = _down_guard(step, g)
    if why is None and step.broker not in g.track.ever_killed \
            and len(g.track.ever_killed) >= g.max_killed():
        why = (f"at most {g.max_killed()} broker(s) killed (the fault budget: an unclean "
               "shutdown may lose unflushed data)")
    return why


def _stop_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Stop)
    why = _down_guard(step, g)
    if why is None and step.broker in g.track.paused:
        why = f"broker {step.broker} is paused (no clean shutdown)"
    if why is None and not g.every(lambda w: _reaches_quorum(w, step.broker)):
        why = f"broker {step.broker} is cut from the controller (no controlled shutdown)"
    return why


def _restart_guard(step: S.Step, g: Gen) -> str | None:
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
    if not g.every(lambda w: 0 <= o < w.broker(lost).leo):
        return f"offset {o} is not below broker {lost}'s log end in every branch"
    return None


def _lose_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    out: list[S.Step] = []
    for b in sorted(g.track.killed - g.track.lost_since_kill):
        leo = min(w.broker(b).leo for w in g.model.branches)
        if leo > 0:
            out.append(S.LoseUnflushed(b, rng.randrange(leo)))
    return out


def _kill_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.Kill)
    track.killed.add(step.broker)
    track.ever_killed.add(step.broker)
    track.lost_since_kill.discard(step.broker)
    track.paused.discard(step.broker)


def _back_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.Stop | S.Restart)
    track.killed.discard(step.broker)
    track.lost_since_kill.discard(step.broker)


def _lose_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.LoseUnflushed)
    track.lost_since_kill.add(step.broker)
    track.lost.add(step.broker)


KILL = Generator("kill", S.Kill, 3, lambda g, rng: [S.Kill(b) for b in g.brokers], _kill_guard,
                 _kill_after)
STOP = Generator("stop", S.Stop, 1, lambda g, rng: [S.Stop(b) for b in g.brokers], _stop_guard,
                 _back_after)
RESTART = Generator("restart", S.Restart, 3, lambda g, rng: [S.Restart(b) for b in g.brokers],
                    _restart_guard, _back_after)
LOSE_UNFLUSHED = Generator("lose_unflushed", S.LoseUnflushed, 4, _lose_steps, _lose_guard,
                           _lose_after)

#: Every generator defined here, by kind: what harness/scenario/steps/ names (a test
#: checks that the registry names exactly these) and the pure default for this package.
ALL: Mapping[str, Generator] = {g.kind: g for g in (
    PRODUCE, CONSUME, ISOLATE, CUT, HEAL, PAUSE, RESUME, KILL, STOP, RESTART, LOSE_UNFLUSHED)}
