"""The generators of the process steps: ``kill``, ``stop``, ``restart`` (of brokers, and
with several controllers of each controller, a majority of the quorum kept up: KIP-595),
``lose_unflushed`` after a kill (within the fault budget, min ISR - 1), and
``unregister`` of a broker that is down."""

from __future__ import annotations

import random
from collections.abc import Callable

from reference.model import steps as S
from reference.model.state import World
from reference.search.generators.generator import (
    Exploration,
    Gen,
    Generator,
    Steps,
    Track,
    _not_running,
    _reaches_quorum,
)


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
    if g.track.failed_dirs.get(lost):
        return (f"broker {lost} has a failed log directory (its files answer EIO until the "
                "restart's repair: docs/LOG-DIRS.md)")
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
    if isinstance(step, S.Restart):  # the restart repairs a failed log directory first
        track.failed_dirs.pop(step.broker, None)


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
                               can_change=_running),
                           on_partition=True)


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
