"""The hunt's mutations end with the recovery tail a generated schedule gets
(reference/search/recovery.py, harness/search/hunt/campaign.py ``mutate_schedule``): an edit
after the parent's tail no longer leaves a broker down at the final read (the false "acked
records lost" of bench/RESULTS-storage.md's tiered hunt on 4.3.1). No cluster."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from harness.run.runner import Runner
from harness.search import fuzz, hunt
from reference import profile_for_build
from reference.model import steps as S
from reference.search import fuzzgen
from reference.search.recovery import TAIL_KINDS, body_of, unclean_off, with_tail

BASE = fuzz.base_scenario()
PROFILE = profile_for_build((4, 3, 1), True)


def model() -> Any:
    return Runner.model_for(BASE, PROFILE, True)


GEN = fuzz.gen_config(clusters=False)


@pytest.fixture(autouse=True)
def no_current_cluster() -> Any:
    """The repair reads the campaign's current cluster: none (BASE) here."""
    kept = fuzz.CLUSTERS.current
    fuzz.CLUSTERS.current = None
    yield
    fuzz.CLUSTERS.current = kept


def end_state(steps: Sequence[S.Step]) -> Any:
    m = model()
    for step in steps:
        m.apply(step)
    return m


def recovered(steps: Sequence[S.Step]) -> bool:
    return all(all(b.alive for b in w.brokers) and not w.cuts
               for w in end_state(steps).branches)


class InsertAtEnd:
    """An rng that makes one edit: ``step`` inserted after the last step."""

    def __init__(self, step: S.Step) -> None:
        self.step = step

    def randint(self, a: int, b: int) -> int:
        return a if (a, b) == (1, 3) else b

    def choice(self, seq: Sequence[Any]) -> Any:
        return "insert" if seq is hunt.MUTATIONS else self.step


@pytest.mark.parametrize("seed", [1, 3])
def test_a_kill_inserted_at_the_end_is_restarted_before_the_final_consume(seed: int) -> None:
    parent = fuzzgen.generate(model, f"tail-{seed}", GEN)
    assert parent[-1].kind == "consume" and recovered(parent)
    # A broker the generator may kill after the whole parent (where the edit landed
    # before: a broker down at the final read) and after its body (where it lands now).
    kill = next(S.Kill(b) for b in (1, 2, 3)
                if fuzzgen.validate(model, (*parent, S.Kill(b)), GEN) is None
                and fuzzgen.validate(model, (*body_of(parent), S.Kill(b)), GEN) is None)
    got = hunt.mutate_schedule(parent, (kill,), InsertAtEnd(kill),  # type: ignore[arg-type]
                               fuzz.repairer(model, tail=True), 2 * len(parent))
    assert got is not None and got[1] == "insert"
    steps = got[0]
    assert kill in steps
    last_kill = max(i for i, s in enumerate(steps) if s == kill)
    restarts = [i for i, s in enumerate(steps)
                if s == S.Restart(kill.broker) and i > last_kill]
    assert restarts and restarts[0] < len(steps) - 1
    assert steps[-1].kind == "consume" and recovered(steps)
    assert fuzzgen.validate(model, steps, GEN) is None


def test_body_of_cuts_the_tail_and_with_tail_puts_one_back() -> None:
    for seed in range(12):
        steps = fuzzgen.generate(model, f"body-{seed}", GEN)
        body = body_of(steps)
        assert steps[:len(body)] == body
        assert all(s.kind in TAIL_KINDS or unclean_off(s) for s in steps[len(body):])
        assert not body or body[-1].kind not in TAIL_KINDS
        again = with_tail(model, body, GEN)
        assert again[-1].kind == "consume" and recovered(again)
        assert fuzzgen.validate(model, again, GEN) is None


def test_every_mutation_ends_recovered() -> None:
    repair = fuzz.repairer(model, tail=True)
    made = 0
    for seed in range(30):
        parent = fuzzgen.generate(model, f"parent-{seed}", GEN)
        donor = fuzzgen.generate(model, f"donor-{seed}", GEN)
        got = hunt.mutate_schedule(parent, donor, random.Random(seed), repair,
                                   2 * len(parent))
        if got is None:
            continue
        made += 1
        assert got[0][-1].kind == "consume" and recovered(got[0]), (seed, got)
    assert made >= 20
