"""Issue 44 item 3: the kip axis's deviation search reuses a run for every deviation set
whose profile the run's reads cannot tell apart (reference/model/controller_events/reads.py,
harness/differential/compare.py ``_explain``), and the elections kept across profiles
(changes._elections). Both must answer exactly as running every set in turn with a plain
profile: the same set (or none) and the same outcome, on random clusters and events, for
the deviations of 3.9, 4.3 and 4.4 with ELR on and off."""

from __future__ import annotations

import random
from typing import Any

import pytest

from harness.differential.compare import Comparator, best
from reference.model.controller_events import Cluster, Outcome, Reg, TopicConf, apply
from reference.model.controller_events.changes import _KEPT
from reference.model.controller_events.reads import Reads, same_reads
from reference.model.state import Partition, evolve
from reference.releases.deviations import Deviation, apply_deviations, candidate_sets
from reference.releases.profiles import KIP966


def _cluster(rng: random.Random) -> Cluster:
    brokers = {b: Reg(fenced=rng.random() < 0.4, shutting_down=rng.random() < 0.1,
                      alive=rng.random() < 0.7, expired=rng.random() < 0.2)
               for b in range(1, 7) if rng.random() < 0.9}
    parts: dict[str, Partition] = {}
    for t in range(3):
        for i in range(rng.randint(1, 2)):
            replicas = tuple(rng.sample(range(1, 7), rng.randint(2, 4)))
            isr = frozenset(r for r in replicas if rng.random() < 0.45)
            elr = frozenset(r for r in replicas if r not in isr and rng.random() < 0.4)
            leader = rng.choice(sorted(isr)) if isr and rng.random() < 0.6 else None
            parts[f"t{t}-{i}"] = Partition(
                replicas=replicas, leader=leader, isr=isr, elr=elr,
                last_known_elr=frozenset(r for r in replicas if rng.random() < 0.15),
                leader_epoch=rng.randint(0, 5), partition_epoch=rng.randint(0, 9),
                last_known_leader=rng.choice([None, *replicas]))
    topics = {f"t{t}": TopicConf(min_isr=rng.choice([None, 1, 2, 3]),
                                 unclean=rng.choice([None, True, False])) for t in range(3)}
    return Cluster(brokers=brokers, partitions=parts, topics=topics,
                   min_isr=rng.choice([1, 2, 3]), unclean=rng.random() < 0.3,
                   elr_enabled=rng.random() < 0.7, elr_live=rng.choice([None, None, True]))


def _event(rng: random.Random, c: Cluster) -> dict[str, Any]:
    b = rng.randint(1, 6)
    topic = f"t{rng.randrange(3)}"
    return rng.choice([
        {"op": "unfence", "broker": b}, {"op": "fence", "broker": b},
        {"op": "register", "broker": b, "clean": rng.random() < 0.5},
        {"op": "controlledShutdown", "broker": b},
        {"op": "electLeaders", "topic": topic, "partition": 0,
         "type": rng.choice(["preferred", "unclean"])},
        {"op": "tick", "task": rng.choice(["electPreferred", "electUnclean"])},
        {"op": "alterConfig", "topic": topic,
         "configs": {"min.insync.replicas": str(rng.randint(1, 3))}},
    ])


def _every_set(cmp: Comparator, recent: list[tuple[Deviation, ...]], prior: Cluster,
               event: dict[str, Any], obs: Cluster, ok: bool
               ) -> tuple[tuple[Deviation, ...], Outcome] | None:
    """The search as it was: every set in turn, each run with its plain profile."""
    tried: set[tuple[Deviation, ...]] = set()
    for devs in [*recent, *candidate_sets(cmp.available, ())]:
        if devs in tried:
            continue
        tried.add(devs)
        pred = apply(prior, apply_deviations(cmp.kip, devs), event)
        if pred.unmodelled is not None:
            return None
        chosen, ds = best(pred.outcomes, obs, ok, prior)
        if not ds:
            return devs, chosen
    return None


@pytest.mark.parametrize("version", [(3, 9, 2), (4, 3, 1), (4, 4, 0)])
def test_the_search_answers_as_running_every_set(version: tuple[int, int, int]) -> None:
    rng = random.Random(sum(version))
    explained = failed = 0
    for n in range(120):
        elr = n % 2 == 0
        prior = _cluster(rng)
        cmp = Comparator(version, elr, prior)
        cmp._recent = [s for s in candidate_sets(cmp.available, ()) if rng.random() < 0.02][:8]
        if n % 3 == 0:
            _KEPT.clear()  # cold and warm kept elections both
        for _ in range(4):
            event = _event(rng, prior)
            # the build's answer: what some deviation set allows (explained), or that
            # answer changed (mostly not)
            devs = tuple(d for d in cmp.available if rng.random() < 0.3)
            pred = apply(prior, apply_deviations(cmp.kip, devs), event)
            if pred.unmodelled is not None:
                continue
            out = rng.choice(pred.outcomes)
            obs = out.cluster
            if rng.random() < 0.4 and obs.partitions:
                key = rng.choice(sorted(obs.partitions))
                p = obs.partitions[key]
                obs = evolve(obs, partitions={**obs.partitions, key: evolve(
                    p, partition_epoch=p.partition_epoch + rng.choice([1, 2]))})
            recent = list(cmp._recent)
            want = _every_set(cmp, recent, prior, event, obs, out.accepted)
            got = cmp._explain(prior, event, obs, out.accepted)
            assert got == want, (event, devs)
            explained += want is not None
            failed += want is None
            prior = obs
    assert explained > 50 and failed > 20


def test_a_wrapped_profile_keeps_its_reads_and_refuses_hashing() -> None:
    track = Reads(KIP966)
    assert track.as_profile().elr_on(False) is True  # the method reads elr through it
    assert track.reads() == (("elr", True),)
    assert same_reads(KIP966, track.reads())
    assert not same_reads(evolve(KIP966, elr=None), track.reads())
    with pytest.raises(TypeError):
        hash(track)
    with pytest.raises(TypeError):
        _ = track == KIP966


def test_the_wrapper_hides_no_profile_member() -> None:
    """Reads' own attributes are looked up before ``__getattr__``: none may be a name the
    model reads of a profile."""
    import dataclasses

    from reference.releases.profiles import Profile
    members = {f.name for f in dataclasses.fields(Profile)} | set(dir(Profile))
    assert not members & {"profile", "read", "reads", "as_profile"}
