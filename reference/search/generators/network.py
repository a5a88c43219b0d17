"""The generators of the network faults, and of pauses: ``isolate``, ``cut``,
``partition`` (the quorum never split), ``heal`` (which also removes a timing toxic), and
``pause``/``resume`` (a broker alive to the model but silent)."""

from __future__ import annotations

import random
from itertools import combinations

from reference.model import steps as S
from reference.model.state import World
from reference.search.generators.generator import (
    Exploration,
    Gen,
    Generator,
    Track,
    _not_running,
)


def _isolated(w: World, n: int) -> bool:
    others = [b.id for b in w.brokers if b.id != n] + list(w.controllers)
    return all((n, x) in w.cuts and (x, n) in w.cuts for x in others)


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
