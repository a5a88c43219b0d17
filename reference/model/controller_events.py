"""The controller's view of a whole cluster, event by event: the model side of the
differential driver (harness/differential/README.md, issue 33 part 2).

A :class:`Cluster` holds every broker's registration (fenced, in controlled shutdown, the
driver's view of whether its process runs), every partition (``reference.model.state
.Partition``, keyed ``topic-index``) and the configs the rules read (min ISR and unclean
election per topic and for the cluster). :func:`apply` is one transition per driver event
(``register``, ``unfence``, ``fence``, ``controlledShutdown``, ``unregister``,
``createTopic``, ``createPartitions``, ``alterPartition``, ``completeReassignment``, ``reassign``,
``cancelReassignment``, ``electLeaders``, ``alterConfig``, ``tick``, ``state``), built from
the same rules the scenario model uses: ``controller.partition_change`` (ELR update,
reassignment completion, election, epochs), ``steps.cancel_reassignment`` and
``elr.after_min_isr_change``; each partition the event touches is changed in a one-partition
``World`` made from the cluster. An event or form the model does not cover (``heartbeat``,
a broker-level config, a topic created by replication factor, partitions added without
an assignment) is UNMODELLED, never a
prediction of "no change".

Pure: no I/O, clocks or randomness. Several outcomes are allowed where the profile leaves
the election open (kip966: any valid candidate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from reference.model.controller import Assignment, Ctx, partition_change, reassignment_of
from reference.model.elr import after_min_isr_change
from reference.model.state import Broker, Config, Partition, World, evolve
from reference.model.steps import cancel_reassignment
from reference.releases.profiles import Profile

#: The single controller of the one-partition worlds (no quorum at this level).
CONTROLLER = 100
#: At most this many alternative outcomes per event (kip966 leaves elections open).
MAX_BRANCHES = 64


@dataclass(frozen=True, slots=True)
class Reg:
    """A broker's registration as the controller holds it, and whether its process runs
    (the driver's ``alive``: registered or heartbeating since its last fence, controlled
    shutdown or unregistration)."""

    fenced: bool = False
    shutting_down: bool = False
    alive: bool = True
    #: Its session expired: the clock moved (a ``fence``) while its process was not
    #: running. Until then a new incarnation's registration is refused
    #: (DUPLICATE_BROKER_REGISTRATION), even after a controlled shutdown, unless the
    #: profile ends a session when the broker is fenced (3.x: :func:`_has_session`).
    expired: bool = False

    @property
    def active(self) -> bool:
        """ClusterControlManager.isActive: unfenced and not in controlled shutdown."""
        return not self.fenced and not self.shutting_down


@dataclass(frozen=True, slots=True)
class TopicConf:
    """Topic-level configs the rules read (None: the cluster's)."""

    min_isr: int | None = None
    unclean: bool | None = None


@dataclass(frozen=True, slots=True)
class Cluster:
    """The controller's state. Treated as immutable: transitions build new mappings."""

    brokers: Mapping[int, Reg]
    partitions: Mapping[str, Partition]
    topics: Mapping[str, TopicConf] = field(default_factory=dict)
    min_isr: int = 1
    unclean: bool = False
    #: ELR on for this session (the build's feature level).
    elr_enabled: bool = True

    def topic_of(self, key: str) -> str:
        return key.rpartition("-")[0]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One allowed result: accepted or refused (``error``: the model's reason), the state."""

    accepted: bool
    cluster: Cluster
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    outcomes: tuple[Outcome, ...] = ()
    #: Why the model does not predict this event (then ``outcomes`` is empty).
    unmodelled: str | None = None


def ctx_for(profile: Profile, c: Cluster) -> Ctx:
    return Ctx(profile=profile, elr_on=profile.elr_on(c.elr_enabled), rebalance=False)


def world_of(c: Cluster, key: str, p: Partition | None = None,
             extra: frozenset[int] = frozenset()) -> World:
    """The one-partition world of ``key``: the brokers its rules can look at (replicas,
    ISR, ELR, LastKnownELR, last known leader); an unregistered one is a stopped, fenced
    broker, never acceptable."""
    part = c.partitions[key] if p is None else p
    ids = set(part.replicas) | part.elr | part.isr | part.last_known_elr | extra
    if part.last_known_leader is not None:
        ids.add(part.last_known_leader)
    regs = c.brokers
    brokers = tuple(Broker(id=i, alive=i in regs, fenced=i not in regs or not regs[i].active)
                    for i in sorted(ids))
    t = c.topics.get(c.topic_of(key), TopicConf())
    cfg = Config(topic_min_isr=t.min_isr, cluster_min_isr=c.min_isr,
                 unclean_leader_election=c.unclean if t.unclean is None else t.unclean)
    return World(brokers=brokers, controllers=(CONTROLLER,), partition=part, config=cfg)


def _bump(before: Partition, after: Partition) -> Partition:
    """One record: partition epoch + 1 when anything changed (PartitionRegistration.merge)."""
    same_epoch = evolve(after, partition_epoch=before.partition_epoch)
    if same_epoch == before:
        return before
    return evolve(after, partition_epoch=before.partition_epoch + 1)


Change = Callable[[World], list[World] | None]


def _each(c: Cluster, keys: Sequence[str], change: Change, prior: Cluster | None = None,
          extra: frozenset[int] = frozenset()) -> list[Cluster]:
    """``change`` applied to each partition of ``keys`` (independently: a partition change
    touches one partition); one cluster per combination of the partitions' alternatives."""
    base = c if prior is None else prior
    alts: list[list[Partition]] = []
    for key in keys:
        outs = change(world_of(c, key, extra=extra))
        if outs is None or not outs:
            alts.append([c.partitions[key]])
            continue
        seen: list[Partition] = []
        for w in outs:
            np = _bump(base.partitions[key], w.partition) if prior is not None else w.partition
            if np not in seen:
                seen.append(np)
        alts.append(seen)
    result: list[Cluster] = []
    for combo in product(*alts):
        parts = dict(c.partitions)
        parts.update(zip(keys, combo, strict=True))
        result.append(evolve(c, partitions=parts))
        if len(result) >= MAX_BRANCHES:
            break
    return result


def _with_broker(c: Cluster, b: int, reg: Reg | None) -> Cluster:
    brokers = dict(c.brokers)
    if reg is None:
        brokers.pop(b, None)
    else:
        brokers[b] = reg
    return evolve(c, brokers=brokers)


def _keys_with(c: Cluster, b: int, elr_too: bool = False) -> list[str]:
    return [k for k, p in c.partitions.items()
            if b in p.isr or p.leader == b or (elr_too and b in p.elr)]


def _refused(c: Cluster, error: str) -> Prediction:
    return Prediction((Outcome(False, c, error),))


def _accepted(clusters: Sequence[Cluster]) -> Prediction:
    out: list[Outcome] = []
    for x in clusters:
        o = Outcome(True, x)
        if o not in out:
            out.append(o)
    return Prediction(tuple(out))


def _remove_broker(c: Cluster, ctx: Ctx, b: int, elr_too: bool) -> list[Cluster]:
    """generateLeaderAndIsrUpdates with ``b`` as the broker to remove: out of every ISR, a
    new leader where it led (fencing, controlled shutdown, unregistration)."""
    def change(w: World) -> list[World]:
        p = w.partition
        return partition_change(w, ctx, proposed_isr=p.isr - {b})
    return _each(c, _keys_with(c, b, elr_too), change)


def _fence_one(c: Cluster, ctx: Ctx, b: int) -> list[Cluster]:
    reg = c.brokers.get(b)
    if reg is None or reg.fenced:
        return [c]
    c = _with_broker(c, b, evolve(reg, fenced=True))
    # Only the partitions with the broker in the ISR (handleBrokerFenced:
    # brokersToIsrs.partitionsWithBrokerInIsr in 3.6.2-4.4.0, sources or bytecode): a
    # fenced ELR member stays in the ELR and its partitions get no change.
    return _remove_broker(c, ctx, b, elr_too=False)


# --- events ----------------------------------------------------------------------


def _has_session(reg: Reg | None, profile: Profile) -> bool:
    """Whether ``reg`` still holds a session, so a new incarnation's registration is refused.
    4.0+ asks hasValidSession(brokerId, existing.epoch()) (ClusterControlManager.java:356 in
    4.0.2, :370 in 4.3.1): a contact time per (id, epoch), blind to fencing, that lives until
    it times out (BrokerHeartbeatTracker.java:141-145; KAFKA-17793). 3.x asks
    hasValidSession(brokerId) (ClusterControlManager.java:329/345/361/377 in
    3.6.2/3.7.2/3.8.1/3.9.2), false for a fenced broker (BrokerHeartbeatManager.java:349-354,
    :350-355 in 3.9.2), as one whose controlled shutdown completed is (SHUTDOWN_NOW is fenced,
    BrokerControlState.java:25)."""
    if reg is None or reg.expired:
        return False
    return profile.session_outlives_fencing or not reg.fenced


def _register(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    old = c.brokers.get(b)
    if _has_session(old, ctx.profile):
        return _refused(c, "DUPLICATE_BROKER_REGISTRATION")
    c2 = _with_broker(c, b, Reg(fenced=True, shutting_down=False, alive=True))
    clean = bool(e.get("clean", True)) or not ctx.profile.unclean_shutdown_detection
    if clean or old is None or not ctx.elr_on:
        return _accepted([c2])

    # "During the broker registration, if the broker had an unclean shutdown, the
    # controller will remove the broker from ISR and ELR."
    def change(w: World) -> list[World]:
        p = w.partition
        return partition_change(w, ctx, proposed_isr=p.isr - {b},
                                unclean_shutdown=frozenset((b,)))
    return _accepted(_each(c2, _keys_with(c2, b, elr_too=True), change))


def _unfence(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    reg = c.brokers.get(b)
    if reg is None:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    if not reg.fenced or reg.shutting_down:
        return _accepted([_with_broker(c, b, evolve(reg, alive=True, expired=False))])
    c2 = _with_broker(c, b, evolve(reg, fenced=False, alive=True, expired=False))
    # handleBrokerUnfenced: leaderless partitions, and those with the broker in the ELR,
    # get an election.
    keys = [k for k, p in c2.partitions.items()
            if p.leader is None or (ctx.elr_on and b in p.elr)]

    def change(w: World) -> list[World]:
        return partition_change(w, ctx)
    return _accepted(_each(c2, keys, change))


def _fence(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    """The broker's session expires; the stale-broker task fences it and every other
    registered broker whose process is not running (their sessions expired too)."""
    b = int(e["broker"])
    order = [b] + sorted(x for x, r in c.brokers.items()
                         if x != b and not r.alive and not r.fenced)
    states = [c]
    for x in order:
        states = [y for s in states for y in _fence_one(s, ctx, x)][:MAX_BRANCHES]
    out: list[Cluster] = []
    for s in states:
        regs = {x: (evolve(r, alive=False, expired=True) if x == b or not r.alive else r)
                for x, r in s.brokers.items()}
        out.append(evolve(s, brokers=regs))
    return _accepted(out)


def _controlled_shutdown(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    reg = c.brokers.get(b)
    if reg is None:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    c2 = _with_broker(c, b, evolve(reg, shutting_down=True))
    # As fencing: handleBrokerInControlledShutdown re-runs only the partitions with the
    # broker in the ISR (3.6.2-4.4.0).
    outs = _remove_broker(c2, ctx, b, elr_too=False)
    return _accepted([_with_broker(x, b, Reg(fenced=True, shutting_down=True, alive=False))
                      for x in outs])


def _unregister(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    b = int(e["broker"])
    if b not in c.brokers:
        return _refused(c, "BROKER_ID_NOT_REGISTERED")
    c2 = _with_broker(c, b, None)
    return _accepted(_remove_broker(c2, ctx, b, elr_too=False))


def _create_topic(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    topic = str(e["topic"])
    if "assignment" not in e:
        return None
    if any(c.topic_of(k) == topic for k in c.partitions):
        return _refused(c, "TOPIC_ALREADY_EXISTS")
    conf = _topic_conf(TopicConf(), e.get("configs") or {})
    if conf is None:
        return _refused(c, "INVALID_CONFIG")
    parts = dict(c.partitions)
    for i, replicas in enumerate(e["assignment"]):
        reps = tuple(int(r) for r in replicas)
        if not reps or len(set(reps)) != len(reps) or any(r not in c.brokers for r in reps):
            return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
        isr = [r for r in reps if c.brokers[r].active]
        if not isr:
            return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
        parts[f"{topic}-{i}"] = Partition(replicas=reps, leader=isr[0], isr=frozenset(isr))
    topics = dict(c.topics)
    topics[topic] = conf
    return _accepted([evolve(c, partitions=parts, topics=topics)])


def _create_partitions(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    """CreatePartitions with a manual assignment, as Kafka 4.3.1's
    ReplicationControlManager.createPartitions (lines 1906-2000) and
    validateManualPartitionAssignment (2002-2033): an unknown topic is
    UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one INVALID_PARTITIONS; as
    many replica lists as new partitions, each non-empty, of registered brokers, none twice,
    of the topic's replication factor, with an active (unfenced, not shutting down)
    replica, else INVALID_REPLICA_ASSIGNMENT; each new partition leads with its first active
    replica, ISR its active replicas, epochs 0 (buildPartitionRegistration, 860-873).
    The replication factor is the replica count of the first partition the controller's
    hash map yields (line 1942): where the topic's partitions differ (one mid-reassignment)
    each count is allowed."""
    if "assignment" not in e:
        return None
    topic = str(e["topic"])
    keys = sorted((k for k in c.partitions if c.topic_of(k) == topic),
                  key=lambda k: int(k.rpartition("-")[2]))
    if not keys:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    count, have = int(e["count"]), len(keys)
    if count <= have:
        return _refused(c, "INVALID_PARTITIONS")
    assignment = [tuple(int(r) for r in replicas) for replicas in e["assignment"]]
    if len(assignment) != count - have:
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    outcomes: list[Outcome] = []
    for rf in sorted({len(c.partitions[k].replicas) for k in keys}):
        parts = dict(c.partitions)
        error: str | None = None
        for i, reps in enumerate(assignment, start=have):
            if (not reps or len(set(reps)) != len(reps) or any(r not in c.brokers for r in reps)
                    or len(reps) != rf):
                error = "INVALID_REPLICA_ASSIGNMENT"
                break
            isr = [r for r in reps if c.brokers[r].active]
            if not isr:
                error = "INVALID_REPLICA_ASSIGNMENT"
                break
            parts[f"{topic}-{i}"] = Partition(replicas=reps, leader=isr[0], isr=frozenset(isr))
        o = (Outcome(False, c, error) if error is not None
             else Outcome(True, evolve(c, partitions=parts)))
        if o not in outcomes:
            outcomes.append(o)
    return Prediction(tuple(outcomes))


def _topic_conf(conf: TopicConf, configs: Mapping[str, Any]) -> TopicConf | None:
    for k, v in configs.items():
        if k == "min.insync.replicas":
            if v is None:
                conf = evolve(conf, min_isr=None)
                continue
            try:
                n = int(str(v).strip())
            except ValueError:
                return None
            if n < 1:
                return None
            conf = evolve(conf, min_isr=n)
        elif k == "unclean.leader.election.enable":
            if v is None:
                conf = evolve(conf, unclean=None)
                continue
            text = str(v).strip().lower()
            if text not in ("true", "false"):
                return None
            conf = evolve(conf, unclean=text == "true")
    return conf


def _key(c: Cluster, e: Mapping[str, Any]) -> str | None:
    key = f"{e['topic']}-{int(e.get('partition', 0))}"
    return key if key in c.partitions else None


def _alter_partition(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    p = c.partitions[key]
    if e.get("op") == "completeReassignment" and e.get("isr") is None:
        isr = frozenset(p.isr) | frozenset(p.adding)
    else:
        isr = frozenset(int(r) for r in e["isr"])
    leader = int(e.get("leader", -1 if p.leader is None else p.leader))
    # The order and names of 4.3.1's validateAlterPartitionData (ReplicationControlManager
    # lines 1255-1305): an epoch above the controller's is NOT_CONTROLLER, a leader epoch
    # below it FENCED_LEADER_EPOCH, a sender that is not the leader INVALID_REQUEST, a
    # partition epoch below it INVALID_UPDATE_VERSION. (The driver compares acceptance and
    # state, not the error's name.)
    le = int(e.get("leaderEpoch", p.leader_epoch))
    pe = int(e.get("partitionEpoch", p.partition_epoch))
    if le > p.leader_epoch or pe > p.partition_epoch:
        return _refused(c, "NOT_CONTROLLER")
    if le < p.leader_epoch:
        return _refused(c, "FENCED_LEADER_EPOCH")
    if p.leader is None or leader != p.leader:
        return _refused(c, "INVALID_REQUEST")
    if pe < p.partition_epoch:
        return _refused(c, "INVALID_UPDATE_VERSION")
    lrs = int(e.get("leaderRecoveryState", 0))
    if (lrs == 1 and len(isr) > 1) or (lrs == 1 and not p.recovering):
        return _refused(c, "INVALID_REQUEST")
    if not isr <= frozenset(p.replicas) or leader not in isr:
        # An ISR without the leader that sends it: INVALID_REQUEST (4.3.1).
        return _refused(c, "INVALID_REQUEST")
    if any(r not in c.brokers or not c.brokers[r].active for r in isr):
        return _refused(c, "INELIGIBLE_REPLICA")
    start = evolve(p, recovering=p.recovering and lrs == 1)

    def change(w: World) -> list[World]:
        return partition_change(w, ctx, proposed_isr=isr)
    c_start = evolve(c, partitions={**c.partitions, key: start})
    outs = _each(c_start, [key], change, prior=c)
    result: list[Outcome] = []
    for x in outs:
        moved = x.partitions[key].leader != p.leader
        o = Outcome(True, x, "NEW_LEADER_ELECTED" if moved else None)
        if o not in result:
            result.append(o)
    return Prediction(tuple(result))


def _reassign(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    target = tuple(int(r) for r in e["replicas"])
    if not target or len(set(target)) != len(target) or any(r not in c.brokers for r in target):
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    p = c.partitions[key]
    a = reassignment_of(p.replicas, target)
    # The builder sets adding / removing only when non-empty (steps.Reassign).
    a = Assignment(a.replicas, a.adding or p.adding, a.removing or p.removing)

    def change(w: World) -> list[World]:
        return partition_change(w, ctx, assignment=a)
    return _accepted(_each(c, [key], change, extra=frozenset(target)))


def _cancel(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    key = _key(c, e)
    if key is None:
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    if not c.partitions[key].reassigning:
        return _refused(c, "NO_REASSIGNMENT_IN_PROGRESS")
    outs = cancel_reassignment(world_of(c, key), ctx)
    if outs is None:
        return _refused(c, "INVALID_REPLICA_ASSIGNMENT")
    return _accepted(_each(c, [key], lambda w: outs))


def _elect(c: Cluster, ctx: Ctx, key: str, kind: str) -> tuple[list[Cluster], str | None]:
    p = c.partitions[key]
    if kind == "preferred" and p.leader == p.replicas[0]:
        return [c], "ELECTION_NOT_NEEDED"
    if kind == "unclean" and p.leader is not None:
        return [c], "ELECTION_NOT_NEEDED"

    def change(w: World) -> list[World]:
        return partition_change(w, ctx, election=kind)
    outs = [x for x in _each(c, [key], change) if x.partitions[key] != p]
    if not outs:
        return [c], ("PREFERRED_LEADER_NOT_AVAILABLE" if kind == "preferred"
                     else "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    return outs, None


def _elect_leaders(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    kind = str(e.get("type", "preferred"))
    given = e.get("partitions")
    indexes: list[Any] = list(given) if given is not None else [e.get("partition", 0)]
    keys = [f"{e['topic']}-{int(i)}" for i in indexes]
    if any(k not in c.partitions for k in keys):
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    states = [c]
    error: str | None = None
    for key in keys:
        nxt: list[Cluster] = []
        for s in states:
            outs, err = _elect(s, ctx, key, kind)
            nxt.extend(outs)
            error = error or err
        states = nxt[:MAX_BRANCHES]
    if error is not None:
        return Prediction(tuple(Outcome(False, s, error) for s in states))
    return _accepted(states)


def _alter_config(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    if e.get("broker") is not None:
        return None
    configs: Mapping[str, Any] = e["configs"]
    topic = e.get("topic")
    if topic is not None:
        keys = [k for k in c.partitions if c.topic_of(k) == topic]
        if not keys:
            return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
        old = c.topics.get(str(topic), TopicConf())
        conf = _topic_conf(old, configs)
        if conf is None:
            return _refused(c, "INVALID_CONFIG")
        c2 = evolve(c, topics={**c.topics, str(topic): conf})
        if conf.min_isr == old.min_isr:
            # The same value again is no config change: no ClearElrRecord (4.3.1).
            return _accepted([c2])
    else:
        cluster_conf = _topic_conf(TopicConf(min_isr=c.min_isr, unclean=c.unclean), configs)
        if cluster_conf is None or cluster_conf.min_isr is None:
            return _refused(c, "INVALID_CONFIG")
        c2 = evolve(c, min_isr=cluster_conf.min_isr,
                    unclean=bool(cluster_conf.unclean))
        keys = [k for k in c.partitions
                if c.topics.get(c.topic_of(k), TopicConf()).min_isr is None
                or ctx.profile.min_isr_change_clears == "always"]
    if "min.insync.replicas" not in configs or not ctx.elr_on:
        return _accepted([c2])
    parts = dict(c2.partitions)
    for key in keys:
        p = parts[key]
        upd = after_min_isr_change(ctx.profile, isr=p.isr, elr=p.elr,
                                   last_known_elr=p.last_known_elr,
                                   new_min_isr=world_of(c2, key).min_isr)
        parts[key] = _bump(p, evolve(p, elr=upd.elr, last_known_elr=upd.last_known_elr))
    return _accepted([evolve(c2, partitions=parts)])


def _tick(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    task = e["task"]
    if task == "electPreferred":
        keys = [k for k, p in c.partitions.items() if p.leader != p.replicas[0]]

        def preferred(w: World) -> list[World]:
            return partition_change(w, ctx, election="preferred")
        return _accepted(_each(c, keys, preferred))
    if task == "electUnclean":
        keys = [k for k, p in c.partitions.items() if p.leader is None
                and world_of(c, k).config.unclean_leader_election]

        def unclean(w: World) -> list[World]:
            return partition_change(w, ctx, election="unclean")
        return _accepted(_each(c, keys, unclean))
    # fenceStale: the clock does not move; every session that expired was fenced by the
    # `fence` that moved it.
    return _accepted([c])


EVENTS: dict[str, Callable[[Cluster, Ctx, Mapping[str, Any]], Prediction | None]] = {
    "register": _register,
    "unfence": _unfence,
    "fence": _fence,
    "controlledShutdown": _controlled_shutdown,
    "unregister": _unregister,
    "createTopic": _create_topic,
    "createPartitions": _create_partitions,
    "alterPartition": _alter_partition,
    "completeReassignment": _alter_partition,
    "reassign": _reassign,
    "cancelReassignment": _cancel,
    "electLeaders": _elect_leaders,
    "alterConfig": _alter_config,
    "tick": _tick,
    "state": lambda c, ctx, e: _accepted([c]),
}

#: Events (and forms) the model does not predict: compared never, counted as UNMODELLED.
UNMODELLED_WHY = {
    "heartbeat": "a heartbeat's state machine (wantFence, wantShutDown, caughtUp) is not "
                 "modelled; unfence / controlledShutdown are",
    "createTopic": "a topic created by partitions and replication factor (the replica "
                   "placer) is not modelled; give an assignment",
    "createPartitions": "partitions added without an assignment (the replica placer) are "
                        "not modelled; give an assignment",
    "alterConfig": "broker-level configs are not modelled",
}


def apply(c: Cluster, profile: Profile, event: Mapping[str, Any]) -> Prediction:
    """The allowed outcomes of one driver event under ``profile`` (or UNMODELLED)."""
    op = str(event.get("op"))
    fn = EVENTS.get(op)
    if fn is None:
        return Prediction(unmodelled=UNMODELLED_WHY.get(op, f"event {op} is not modelled"))
    pred = fn(c, ctx_for(profile, c), event)
    if pred is None:
        return Prediction(unmodelled=UNMODELLED_WHY.get(op, f"this form of {op} is not "
                                                            "modelled"))
    return pred


def configured(c: Cluster, event: Mapping[str, Any]) -> Cluster:
    """``c`` with the configs an accepted ``createTopic`` or ``alterConfig`` sets, and no
    other change (to follow a build that accepted what the model would have refused)."""
    op = event.get("op")
    if op == "createTopic":
        conf = _topic_conf(TopicConf(), event.get("configs") or {})
        return evolve(c, topics={**c.topics, str(event["topic"]): conf or TopicConf()})
    if op == "alterConfig" and event.get("broker") is None:
        topic = event.get("topic")
        if topic is not None:
            conf = _topic_conf(c.topics.get(str(topic), TopicConf()), event["configs"])
            return evolve(c, topics={**c.topics, str(topic): conf or TopicConf()})
        whole = _topic_conf(TopicConf(min_isr=c.min_isr, unclean=c.unclean), event["configs"])
        if whole is not None:
            return evolve(c, min_isr=whole.min_isr or c.min_isr, unclean=bool(whole.unclean))
    return c
