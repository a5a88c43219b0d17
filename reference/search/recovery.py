"""The recovery tail of an edited schedule (the hunt's mutations, harness/search/hunt/).

A generated schedule ends with a recovery tail (fuzzgen's module doc, ``recovery_tail``:
Jepsen's final heal and read): every paused broker resumed, every controller and broker
down restarted, every link healed, every node on the run's build, then the final
``consume``. An edit of a schedule (an insert, delete, replace or swap anywhere in it) can
break that: a kill inserted after the tail, or the tail's restart deleted, leaves a broker
down at the final read, where a leader whose HWM stays under min ISR hides acknowledged
records from the read (not a loss, a false positive of the harness).

So an edited schedule is its parent's body (``body_of``: the tail cut off), edited, then
ended with the tail computed on the model's state after the edited steps (``with_tail``),
as ``fuzzgen.generate`` ends a schedule.

Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reference.model import steps as S
from reference.search.fuzzgen import GenConfig, after, new_track, recovery_tail
from reference.search.generators import UNCLEAN, Lanes

#: The step kinds the recovery tail is made of (``recovery_tail``), with the topic's
#: unclean election turned off (``unclean_off``). Its stop or kill of a broker with a
#: failed log directory is not cut (a generated fault looks the same); the new tail
#: restarts that broker anyway.
TAIL_KINDS = frozenset({"resume", "restart", "heal", "upgrade", "create_topic", "consume"})


def unclean_off(step: S.Step) -> bool:
    """Whether ``step`` is the tail's first: unclean election turned off on the topic."""
    return isinstance(step, S.AlterConfig) and step.scope == "topic" and dict(
        step.config) == {UNCLEAN: "false"}


def body_of(steps: Sequence[S.Step]) -> tuple[S.Step, ...]:
    """``steps`` without their trailing recovery-tail steps (``TAIL_KINDS``, and unclean
    election turned off). A generated step of those kinds at the end of the body goes too;
    the tail that ``with_tail`` adds does what it did (it restarts, heals and resumes
    whatever is still down, cut or paused)."""
    end = len(steps)
    while end and (steps[end - 1].kind in TAIL_KINDS or unclean_off(steps[end - 1])):
        end -= 1
    return tuple(steps[:end])


def with_tail(new_model: Callable[[], Lanes], steps: Sequence[S.Step], cfg: GenConfig
              ) -> tuple[S.Step, ...]:
    """``steps`` (valid under the generator's rules: ``fuzzgen.validate``) followed by the
    recovery tail computed on the model after them: every node up, every link whole,
    unclean election off, every node on the run's build, then the final consume (when the
    partition then has a leader the client reaches), as a generated schedule ends."""
    model = new_model()
    track = new_track(model)
    for step in steps:
        model.apply(step)
        after(step, track, cfg)
    return (*steps, *recovery_tail(model, track, cfg))
