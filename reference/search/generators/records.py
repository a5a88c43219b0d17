"""The generators of the record steps: ``produce`` (acks drawn by weight) and ``consume``
(refused under traffic), both only while the client reaches a leader in every branch."""

from __future__ import annotations

import random

from reference.model import steps as S
from reference.model.controller import link
from reference.model.protocol import leader_broker
from reference.model.state import CLIENT, World
from reference.search.generators.generator import Exploration, Gen, Generator

#: acks levels of a generated produce, with their weights.
ACKS: tuple[tuple[str, int], ...] = (("all", 2), ("1", 1), ("0", 1))


def _leader_reachable(w: World) -> bool:
    leader = leader_broker(w)
    return leader is not None and link(w, CLIENT, leader.id)


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
                    explore=Exploration(on_cluster=((S.Produce(1, "all"),),)),
                    on_partition=True)
CONSUME = Generator("consume", S.Consume, 1, lambda g, rng: [S.Consume()], _client_step_guard,
                    under_traffic=False, on_partition=True)
