"""Event streams for the driver: random ones that follow the state (for a long run and the
benchmark) and a fixed cycle that needs no state (for pipelined runs).

A random event is chosen from the state the last answer reported (partitions, brokers),
as a cluster could produce it: a live broker fenced (its session expires) or shut down, a
fenced one unfenced or re-registered (clean or not), the leader shrinking or expanding
the ISR, leader elections, reassignments started (to as many replicas, one more or one
fewer), completed (with every adding replica or only some) and cancelled, min ISR changed,
partitions added to a topic (CreatePartitions, up to ``MAX_PARTITIONS``), a topic deleted
and its name created again (a new topic id, new replicas, now and then its own min ISR),
ELR turned on and off live (``eligible.leader.replicas.version``, where the build has the
feature: ``elr_feature``), the controller's
periodic elections, and AlterPartition requests a leader's stale view sends (an old leader
or partition epoch, a sender no longer leader, an ISR without the sender or with a fenced or
shutting-down replica, a recovery state that does not fit). Many are refused by the
controller: a refusal is an answer too. Same seed and same answers: same events.

:func:`repair` is the same validity for an event chosen elsewhere (a corpus entry's
mutation, corpus.py): the event as this generator could have sent it from the state at
hand, or None.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.differential import protocol as p
from harness.differential.workload_more import more_choices
from harness.differential.workload_paths import path_choices

State = Mapping[str, Mapping[str, Any]]
#: Partitions per topic CreatePartitions grows a topic to, at most.
MAX_PARTITIONS = 4
MIN_RF, MAX_RF = 2, 5
#: Weights of the topic life-cycle events, per event of a lane (the others weigh 0.3-3):
#: an existing topic deleted; a deleted one created again (soon: the lane's topics are
#: few); the ELR level set (0 or 1, the same as now too: a FeatureLevelRecord that changes
#: nothing). A feature change reaches every lane (its log holds it: lanes.lane_of_event).
#: ELR toggles were off (0) until the 21 signatures they showed on 4.3.1 were triaged; now
#: each is a cited model rule or named by a known bug (bench/RESULTS-diff.md, "The 21
#: signatures of live ELR toggles, triaged"), and they reach what no other event does (an
#: ELR left from before, a LastKnownELR outliving its replica), so they are on.
#: ``kafka-chaos diff --feature-weight W`` overrides it (0: none).
DELETE_WEIGHT, RECREATE_WEIGHT, FEATURE_WEIGHT = 0.2, 2.0, 0.05


@dataclass(frozen=True)
class Capabilities:
    """What the build's controller can be asked beyond the base vocabulary (issue 44 item 2),
    read from the session's ready answer: log directories (KIP-858, 3.7+), cordoned ones
    (4.3+), AllowReplicationFactorChange (KIP-860, 4.1+), the metadata.version levels its
    controller supports. A build without one answers UNSUPPORTED (the driver checks too)."""

    log_dirs: bool = False
    cordoned_dirs: bool = False
    allow_rf_change: bool = False
    mv_levels: tuple[int, int] | None = None
    #: CreatePartitions refuses more than 10,000 new partitions in one request (4.4+,
    #: ReplicationControlManager.validateTotalNumberOfPartitions); before, the placer would
    #: place them all.
    partitions_batch_limit: bool = False

    @staticmethod
    def of(kafka: str, supported_features: Mapping[str, tuple[int, int]]) -> Capabilities:
        v = tuple(int(x) for x in re.findall(r"\d+", kafka)[:2])
        mv = supported_features.get("metadata.version")
        return Capabilities(log_dirs=v >= (3, 7), cordoned_dirs=v >= (4, 3),
                            allow_rf_change=v >= (4, 1), partitions_batch_limit=v >= (4, 4),
                            mv_levels=(int(mv[0]), int(mv[1])) if mv else None)


class RandomEvents:
    def __init__(self, rng: random.Random, brokers: Sequence[int], topics: Sequence[str],
                 max_min_isr: int = 3, elr_feature: bool = False,
                 feature_weight: float | None = None,
                 caps: Capabilities | None = None) -> None:
        self.rng = rng
        #: The wider vocabulary of issue 44 item 2 (workload_more.py), for a build with
        #: these capabilities; None: the base vocabulary only (same events as before).
        self.caps = caps
        #: Events this lane sends next, before any random one: what undoes a state the
        #: model does not follow (an offline or cordoned log directory, a replica assigned
        #: to an unknown directory), queued with the event that made it.
        self.heal: list[dict[str, Any]] = []
        #: The rest of a sequence that leads to a rarer builder path (workload_paths.py),
        #: sent next, before any random event.
        self.plan: list[dict[str, Any]] = []
        #: Log directories each broker last registered with (workload_more.py).
        self.dir_count: dict[int, int] = {}
        self.brokers = list(brokers)
        self.topics = list(topics)
        self.max_min_isr = max_min_isr
        self.elr_feature = elr_feature
        #: The ELR toggle's weight (``kafka-chaos diff --feature-weight``); None: the
        #: module's ``FEATURE_WEIGHT``.
        self.feature_weight = feature_weight

    def setup(self, replication: int = 3) -> list[dict[str, Any]]:
        """The topics, each with one partition on `replication` brokers, striped."""
        n = len(self.brokers)
        return [p.create_topic(t, [[self.brokers[(i + k) % n] for k in range(replication)]])
                for i, t in enumerate(self.topics)]

    def next(self, partitions: State, brokers: State) -> dict[str, Any]:
        if self.heal:
            # The events that undo what the model cannot follow (workload_more.py).
            return self.heal.pop(0)
        if self.plan:
            return self.plan.pop(0)
        rng = self.rng
        alive_unfenced = [int(b) for b, s in brokers.items() if s["alive"] and not s["fenced"]]
        alive_fenced = [int(b) for b, s in brokers.items() if s["alive"] and s["fenced"]]
        down = [int(b) for b, s in brokers.items() if not s["alive"]]
        choices: list[tuple[float, Any]] = []
        if alive_unfenced:
            choices += [(2.0, lambda: p.fence(rng.choice(alive_unfenced))),
                        (0.7, lambda: p.controlled_shutdown(rng.choice(alive_unfenced)))]
        if alive_fenced:
            choices.append((3.0, lambda: p.unfence(rng.choice(alive_fenced))))
        if down:
            choices += [(1.5, lambda: p.register(rng.choice(down), clean=rng.random() < 0.5)),
                        (0.5, lambda: p.fence(rng.choice(down)))]
        keys = sorted(partitions)
        # The topic life cycle: one of the lane's topics, deleted, created again or grown
        # (bound now: ``topic`` is reused below for the partition's).
        life = rng.choice(self.topics)
        have = sum(1 for k in keys if k.rpartition("-")[0] == life)
        if 0 < have < MAX_PARTITIONS:
            choices.append((0.3, lambda t=life, n=have: self._grow(t, n, partitions)))
        if have:
            choices.append((DELETE_WEIGHT, lambda t=life: p.delete_topic(t)))
        else:
            choices.append((RECREATE_WEIGHT, lambda t=life: self._recreate(t)))
        toggle = FEATURE_WEIGHT if self.feature_weight is None else self.feature_weight
        if self.elr_feature and toggle > 0:
            choices.append((toggle,
                            lambda: p.update_feature(p.ELR_FEATURE, rng.choice((0, 1)))))
        if keys:
            key = rng.choice(keys)
            topic, _, index = key.rpartition("-")
            part = partitions[key]
            choices += self._partition_choices(topic, int(index), part, brokers)
        if self.caps is not None:
            choices += more_choices(self, self.caps, partitions, brokers, life, have)
            choices += path_choices(self, self.caps, partitions, brokers)
        total = sum(w for w, _ in choices)
        pick = rng.random() * total
        for weight, make in choices:
            pick -= weight
            if pick <= 0:
                event: dict[str, Any] = make()
                return event
        return {"op": "state"}

    def _partition_choices(self, topic: str, index: int, part: Mapping[str, Any],
                           brokers: State) -> list[tuple[float, Any]]:
        rng = self.rng
        isr = list(part["isr"])
        leader = part["leader"]
        out: list[tuple[float, Any]] = []
        if leader >= 0:
            others = [b for b in isr if b != leader]
            if others:
                def shrink() -> dict[str, Any]:
                    gone = rng.choice(others)
                    return p.alter_partition(topic, [b for b in isr if b != gone], index)
                out.append((3.0, shrink))
            candidates = [b for b in part["replicas"] if b not in isr
                          and brokers.get(str(b), {}).get("alive")
                          and not brokers.get(str(b), {}).get("fenced", True)]
            if candidates:
                out.append((3.0, lambda: p.alter_partition(
                    topic, isr + [rng.choice(candidates)], index)))
        out += [(1.0, lambda: p.elect_leaders(topic, "preferred", index)),
                (0.4, lambda: p.elect_leaders(topic, "unclean", index)),
                (0.4, lambda: p.alter_config(
                    {"min.insync.replicas": str(rng.randint(1, self.max_min_isr))}, topic)),
                (0.3, lambda: p.tick(rng.choice(("electPreferred", "electUnclean"))))]
        if leader >= 0:
            out.append((1.2, lambda: self._stale_alter(topic, index, part, brokers)))
        if part["adding"] or part["removing"]:
            out.append((0.4, lambda: p.cancel_reassignment(topic, index)))
            if leader >= 0:
                out.append((0.8, lambda: p.complete_reassignment(topic, index)))
                adding = [b for b in part["adding"] if b not in isr]

                def partial() -> dict[str, Any]:
                    some = rng.sample(adding, rng.randrange(len(adding))) if adding else []
                    return p.complete_reassignment(topic, index, isr + sorted(some))
                out.append((0.4, partial))
        else:
            def move() -> dict[str, Any]:
                rf = len(part["replicas"]) + rng.choice((-1, 0, 0, 1))
                rf = max(MIN_RF, min(MAX_RF, rf, len(self.brokers)))
                return p.reassign(topic, rng.sample(self.brokers, rf), index)
            out.append((0.5, move))
        return out

    def _stale_alter(self, topic: str, index: int, part: Mapping[str, Any],
                     brokers: State) -> dict[str, Any]:
        """An AlterPartition from a leader's stale or wrong view of the partition."""
        rng = self.rng
        isr, leader = list(part["isr"]), int(part["leader"])
        le, pe = int(part.get("leaderEpoch", 0)), int(part.get("partitionEpoch", 0))
        inactive = [b for b in part["replicas"] if b not in isr
                    and (brokers.get(str(b), {}).get("fenced", True)
                         or brokers.get(str(b), {}).get("inControlledShutdown"))]
        others = [b for b in part["replicas"] if b != leader]
        forms: list[Any] = [
            lambda: p.alter_partition(topic, isr, index, leaderEpoch=le - 1 if le else le + 1),
            lambda: p.alter_partition(topic, isr, index, partitionEpoch=pe - 1 if pe else pe + 1),
            lambda: p.alter_partition(topic, isr, index, leaderRecoveryState=1),
            lambda: p.alter_partition(topic, [leader], index, leaderRecoveryState=1)]
        if inactive:
            forms.append(lambda: p.alter_partition(topic, isr + [rng.choice(inactive)], index))
        if others:
            forms.append(lambda: p.alter_partition(topic, isr, index,
                                                   leader=rng.choice(others)))
        if len(isr) > 1:
            forms.append(lambda: p.alter_partition(topic, [b for b in isr if b != leader],
                                                   index))
        event: dict[str, Any] = rng.choice(forms)()
        return event

    def _recreate(self, topic: str) -> dict[str, Any]:
        """CreateTopics of a deleted topic's name: one or two partitions on 2-3 of the lane's
        brokers (any of them, running or not), now and then with its own min ISR."""
        rng = self.rng
        rf = rng.randint(MIN_RF, min(3, len(self.brokers)))
        assignment = [rng.sample(self.brokers, rf) for _ in range(rng.choice((1, 1, 2)))]
        configs = ({"min.insync.replicas": str(rng.randint(1, self.max_min_isr))}
                   if rng.random() < 0.3 else None)
        return p.create_topic(topic, assignment, configs)

    def _grow(self, topic: str, have: int, partitions: State) -> dict[str, Any]:
        """CreatePartitions: one or two more partitions, on as many replicas as the topic's
        first partition (now and then a count or a replica list the controller refuses)."""
        rng = self.rng
        rf = len(partitions[f"{topic}-0"]["replicas"]) if f"{topic}-0" in partitions else 3
        count = min(MAX_PARTITIONS, have + rng.choice((1, 1, 2)))
        if rng.random() < 0.1:
            count = have
        if rng.random() < 0.1:
            rf = max(1, min(len(self.brokers), rf + rng.choice((-1, 1))))
        rf = min(rf, len(self.brokers))
        return p.create_partitions(topic, count, [rng.sample(self.brokers, rf)
                                                  for _ in range(max(count - have, 1))])


def _known(broker: Any, brokers: State) -> bool:
    return isinstance(broker, int) and str(broker) in brokers


def repair(event: Mapping[str, Any], partitions: State, brokers: State,
           lane_brokers: Sequence[int], clock: int | None = None) -> dict[str, Any] | None:
    """``event`` as RandomEvents could have sent it in this state, mended where it can be
    (an ISR kept to the partition's replicas with the leader in it, in the current ISR's
    order),
    or None where it cannot: a broker event for a broker in the wrong state (fencing a
    fenced running broker, unfencing a running one, registering a running one), a partition
    event for a partition that is not there, a reassignment completed or cancelled with none
    in progress or started during one, names outside the lane. The stale-view forms of
    AlterPartition (an explicit epoch, sender or recovery state) are kept as they are: the
    controller's refusal is what they are for. ``clock``: the lane's clock broker, whose
    ``fence`` (the clock moving) is always valid."""
    e = dict(event)
    op = e.get("op")
    allowed = set(lane_brokers)
    if op == "heartbeat" and ({"offlineDirs", "cordonedDirs"} & e.keys()):
        return None  # a state the model cannot follow, undone only by the generator
    if op in ("fence", "unfence", "register", "controlledShutdown", "unregister", "heartbeat"):
        b = e.get("broker")
        if op == "fence" and b == clock and clock is not None:
            return e
        if op == "register" and b in allowed and not _known(b, brokers):
            return e  # an unregistered broker registers again
        if b not in allowed or not _known(b, brokers):
            return None
        s = brokers[str(b)]
        alive, fenced = bool(s["alive"]), bool(s["fenced"])
        ok = {"fence": not (alive and fenced), "unfence": alive and fenced,
              "register": not alive, "controlledShutdown": alive and not fenced,
              "unregister": True, "heartbeat": alive}[str(op)]
        return e if ok else None
    if op in ("tick", "state", "updateFeature", "listReassignments", "findTopics", "snapshot") or (
            op == "electLeaders" and e.get("topic") is None):
        return e
    if op == "assignDirs":  # another directory than the first only undone in the event
        return e if e.get("broker") in allowed and (not e.get("dir") or e.get("back")) \
            else None
    topic = e.get("topic")
    have = sum(1 for k in partitions if k.rpartition("-")[0] == topic)
    if op == "deleteTopic":
        return e if have else None
    if op == "createTopic":
        reps = [list(r) for r in e.get("assignment", [])]
        ok = not have and bool(reps) and all(b in allowed for r in reps for b in r)
        return e if ok and len(reps) <= MAX_PARTITIONS else None
    if op == "alterConfig":
        return e if topic is None or any(k.rpartition("-")[0] == topic for k in partitions) \
            else None
    if op == "createPartitions":
        if not have:
            return None
        reps = [list(r) for r in e.get("assignment", [])]
        if any(b not in allowed for r in reps for b in r):
            return None
        return e if int(e["count"]) <= MAX_PARTITIONS else None
    key = f"{topic}-{int(e.get('partition', 0))}"
    part = partitions.get(key)
    if part is None:
        return None
    reassigning = bool(part["adding"] or part["removing"])
    leader = int(part["leader"])
    if op == "reassign":
        target = list(e["replicas"])
        ok = (not reassigning and all(b in allowed for b in target)
              and MIN_RF <= len(target) == len(set(target)) <= MAX_RF)
        return e if ok else None
    if op == "cancelReassignment":
        return e if reassigning else None
    if op == "electLeaders":
        return e
    if op in ("alterPartition", "completeReassignment"):
        if leader < 0 or (op == "completeReassignment" and not reassigning):
            return None
        stale = any(f in e for f in ("leader", "leaderEpoch", "partitionEpoch",
                                     "leaderRecoveryState", "brokerEpoch", "isrBrokerEpochs"))
        if stale or (op == "completeReassignment" and "isr" not in e):
            return e
        # Members of the current ISR keep its order (a reordered ISR is a change to the
        # controller, which compares lists, and not to the model, which holds a set), the
        # leader stays, new members follow in the event's order.
        replicas, current = list(part["replicas"]), list(part["isr"])
        wanted = {b for b in e["isr"] if b in replicas} | {leader}
        e["isr"] = [b for b in current if b in wanted] + [
            b for b in dict.fromkeys(e["isr"]) if b in wanted and b not in current]
        return e
    return None


def cycle(topic: str, replicas: Sequence[int]) -> Iterator[dict[str, Any]]:
    """Events that need no state, forever: the last replica leaves the ISR and comes back,
    is fenced and unfenced, the leader moves away and back. Epochs are the controller's
    current ones (the driver fills them), so the leader's requests stay valid."""
    first, last = replicas[0], replicas[-1]
    full = list(replicas)
    while True:
        yield p.alter_partition(topic, full[:-1])
        yield p.alter_partition(topic, full)
        yield p.fence(last)
        yield p.unfence(last)
        yield p.alter_partition(topic, full)
        yield p.fence(first)
        yield p.unfence(first)
        yield p.alter_partition(topic, full, leader=full[1])
        yield p.elect_leaders(topic, "preferred")
