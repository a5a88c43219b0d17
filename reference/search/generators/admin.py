"""The generators of the requests the active controller answers (forwarded by a broker):
``alter_config`` (a topic's min.insync.replicas or unclean.leader.election.enable,
IncrementalAlterConfigs), ``elect`` (ElectLeaders, preferred or unclean) and ``reassign``
(AlterPartitionReassignments, KIP-455: a target or a cancel)."""

from __future__ import annotations

import random

from reference.model import steps as S
from reference.model.state import World
from reference.search.generators.generator import Gen, Generator, Track

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"


class Config(dict[str, str]):
    """An alter_config's configs, hashable as every generated step is (a campaign and its
    tests keep schedules in sets); equal to the loader's plain mapping."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


def _replication_factor(w: World) -> int:
    """The partition's replicas once an ongoing reassignment is done (its target)."""
    p = w.partition
    return len(p.target_replicas or p.replicas)


def _alter_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    if not g.model.branches:
        return []
    rf = max(_replication_factor(w) for w in g.model.branches)
    out: list[S.Step] = [S.AlterConfig("topic", Config({MIN_ISR: str(m)}))
                         for m in range(1, rf + 1)]
    return out + [S.AlterConfig("topic", Config({UNCLEAN: v})) for v in ("true", "false")]


def _alter_guard(step: S.Step, g: Gen) -> str | None:
    """A topic's min ISR (1..its replication factor) or unclean election, changed: the
    value differs from the current one in every branch, and a lower min ISR keeps the
    brokers killed so far within the fault budget (min ISR - 1)."""
    assert isinstance(step, S.AlterConfig)
    if g.track.new_topic:  # the file would have to name the topic (several topics)
        return "a topic was created by a step: a topic's config change would name it"
    if g.track.added_partitions and step.config.get(UNCLEAN) == "true":
        return "partitions were added: the model cannot rule out an unclean loss on them"
    if step.scope != "topic" or len(step.config) != 1 or \
            not set(step.config) <= {MIN_ISR, UNCLEAN}:
        return f"a generated alter_config sets one topic config: {MIN_ISR} or {UNCLEAN}"
    why = g.controller_request("IncrementalAlterConfigs")
    if why is not None:
        return why
    ((key, value),) = step.config.items()
    if key == UNCLEAN:
        if value not in ("true", "false"):
            return f"{UNCLEAN} is true or false, not {value!r}"
        on = value == "true"
        if not g.every(lambda w: w.config.unclean_leader_election != on):
            return f"{UNCLEAN} is {value} already in some branch"
        return None
    if not value.isdigit() or not 1 <= int(value) <= min(
            _replication_factor(w) for w in g.model.branches):
        return f"{MIN_ISR} {value} is not 1..the replication factor"
    m = int(value)
    if not g.every(lambda w: w.config.topic_min_isr != m):
        return f"{MIN_ISR} is {m} already in some branch"
    if len(g.track.ever_killed) > m - 1:
        return (f"{MIN_ISR} {m} would leave {len(g.track.ever_killed)} killed broker(s) "
                f"beyond the fault budget (min ISR - 1 = {m - 1})")
    return None


def _alter_after(step: S.Step, track: Track) -> None:
    assert isinstance(step, S.AlterConfig)
    value = step.config.get(MIN_ISR)
    if value is not None:
        m = int(value)
        track.min_isr_floor = m if track.min_isr_floor is None else min(track.min_isr_floor, m)


ALTER_CONFIG = Generator("alter_config", S.AlterConfig, 1, _alter_steps, _alter_guard,
                         _alter_after, on_partition=True)

#: The election types a release runs (ElectLeaders; the others are KIP-966 part 2).
ELECTIONS = ("preferred", "unclean")


def _elect_guard(step: S.Step, g: Gen) -> str | None:
    """ElectLeaders: preferred where the preferred replica does not lead in some branch,
    unclean where the partition is leaderless in some branch (else the controller
    answers ELECTION_NOT_NEEDED and nothing is tried)."""
    assert isinstance(step, S.Elect)
    if step.type not in ELECTIONS or step.broker is not None:
        return f"a generated election is one of {', '.join(ELECTIONS)}"
    why = g.controller_request("ElectLeaders")
    if why is not None:
        return why
    if step.type == "preferred":
        if g.every(lambda w: w.partition.leader == w.partition.replicas[0]):
            return "the preferred replica leads already in every branch"
        return None
    if g.track.added_partitions or g.track.new_topic:
        # The unclean-loss rule sees only the declared topic's first partitions.
        return ("partitions were created by steps: the model cannot rule out an unclean "
                "loss on them")
    if g.every(lambda w: w.partition.leader is not None):
        return "the partition has a leader in every branch (nothing to elect uncleanly)"
    return None


ELECT = Generator("elect", S.Elect, 2, lambda g, rng: [S.Elect(t) for t in ELECTIONS],
                  _elect_guard, on_partition=True)


def _reassign_steps(g: Gen, rng: random.Random) -> list[S.Step]:
    """Add a broker, remove a replica, replace one by another broker (KIP-455 targets
    from the current replicas), or cancel the ongoing reassignment."""
    if not g.model.branches:
        return []
    cur = g.model.branches[0].partition.replicas
    others = [b for b in g.brokers if b not in cur]
    targets = [cur + (b,) for b in others]
    targets += [tuple(r for r in cur if r != x) for x in cur]
    targets += [tuple(b if r == x else r for r in cur) for x in cur for b in others]
    out: list[S.Step] = [S.Reassign(t) for t in targets]
    return out + [S.Reassign(cancel=True)]


def _reassign_guard(step: S.Step, g: Gen) -> str | None:
    assert isinstance(step, S.Reassign)
    why = g.controller_request("AlterPartitionReassignments")
    if why is not None:
        return why
    if step.cancel:
        if not g.every(lambda w: w.partition.reassigning):
            return "no reassignment in progress in some branch (nothing to cancel)"
        return None
    t = step.replicas
    if not t or len(set(t)) != len(t) or not set(t) <= set(g.brokers):
        return f"target {list(t)} is not a list of distinct brokers"
    if set(t) & g.track.unregistered:
        return f"target {list(t)} names an unregistered broker (the controller refuses it)"
    if not g.every(lambda w: not w.partition.reassigning):
        return "a reassignment is in progress in some branch (one at a time: cancel it or " \
               "let it complete)"
    if g.every(lambda w: w.partition.replicas == t):
        return f"the replicas are {list(t)} already"
    if not g.every(lambda w: len(t) >= w.min_isr):
        return (f"target {list(t)} is shorter than min ISR (the effective min ISR, and with "
                "it the fault budget, would drop)")
    return None


REASSIGN = Generator("reassign", S.Reassign, 2, _reassign_steps, _reassign_guard,
                     on_partition=True)
