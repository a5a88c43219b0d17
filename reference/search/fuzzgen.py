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
from reference.model.predict import Model, durable
from reference.search.generators import ALL, Gen, Generator, Limits, Track

__all__ = ["ALL", "DEFAULT_WEIGHTS", "KINDS", "GenConfig", "Generator", "Track", "candidates",
           "generate", "predicts_acked_loss", "validate", "why_invalid"]

#: The step kinds this package's generators make, with their default weights (the
#: campaign's kinds are the registry's: harness/search/fuzz.py passes them in GenConfig).
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

    def weight_of(self) -> dict[str, int]:
        given = self.weights if self.weights is not None else {
            k: g.weight for k, g in self.generators.items()}
        return {k: int(v) for k, v in given.items() if int(v) > 0}


def _gen(model: Model, track: Track, cfg: GenConfig) -> Gen:
    return Gen(model, track, Limits(cfg.max_count, cfg.max_killed))


def _leader(model: Model) -> int | None:
    """The partition's leader if every branch has the same one."""
    leaders = {w.partition.leader for w in model.branches}
    return leaders.pop() if len(leaders) == 1 else None


def why_invalid(step: S.Step, model: Model, track: Track, cfg: GenConfig) -> str | None:
    """Why ``step`` may not come next (its kind's guard), or None when it may."""
    generator = cfg.generators.get(step.kind)
    if generator is None or not isinstance(step, generator.makes):
        return f"the generator does not make {step.kind} steps"
    return generator.why_invalid(step, _gen(model, track, cfg))


def after(step: S.Step, track: Track, cfg: GenConfig) -> None:
    generator = cfg.generators.get(step.kind)
    if generator is not None:
        generator.after(step, track)


def candidates(kind: str, model: Model, track: Track, cfg: GenConfig,
               rng: random.Random) -> list[S.Step]:
    """Every valid step of ``kind`` now (counts and offsets drawn from ``rng``)."""
    generator = cfg.generators.get(kind)
    if generator is None:
        raise ValueError(f"unknown step kind {kind!r} (one of {', '.join(cfg.generators)})")
    g = _gen(model, track, cfg)
    return [s for s in generator.steps(g, rng) if generator.why_invalid(s, g) is None]


def _tail(model: Model, track: Track, cfg: GenConfig) -> list[S.Step]:
    out: list[S.Step] = []

    def add(step: S.Step) -> None:
        if step.kind in cfg.generators and why_invalid(step, model, track, cfg) is None:
            model.apply(step)
            after(step, track, cfg)
            out.append(step)
    for b in sorted(track.paused):
        add(S.Resume(b))
    add(S.Heal())
    for b in sorted(b.id for b in model.branches[0].brokers):
        add(S.Restart(b))
    add(S.Consume())
    return out


def generate(new_model: Callable[[], Model], seed: int | str, cfg: GenConfig = GenConfig()
             ) -> tuple[S.Step, ...]:
    """A schedule of ``cfg.length`` generated steps (plus the recovery tail)."""
    weights = cfg.weight_of()
    unknown = sorted(set(weights) - set(cfg.generators))
    if unknown:
        raise ValueError(f"unknown step kind(s) {', '.join(unknown)} (one of "
                         f"{', '.join(cfg.generators)})")
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
        after(step, track, cfg)
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
        after(step, track, cfg)
    return None


def predicts_acked_loss(new_model: Callable[[], Model], steps: Sequence[S.Step]) -> bool:
    """Whether the model loses acks=all records in every branch at the end of ``steps``
    (``kafka-chaos fuzz --guided``: run only the schedules the build's model predicts
    lose data, for the cluster to confirm)."""
    model = new_model()
    for step in steps:
        model.apply(step)
    return bool(model.branches) and all(w.acked_all() - durable(w) for w in model.branches)
