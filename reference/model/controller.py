"""The controller: partition changes (ISR/ELR/LastKnownELR updates plus leader
election), as PartitionChangeBuilder applies them, under a profile."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reference.model.election import (
    Decision,
    LocalLog,
    LogInfo,
    decide,
    eligible,
    kip1303_order,
    longest_log,
    pick,
    recovery_ready,
)
from reference.model.elr import update_elr
from reference.model.metadata_version import elr_supported
from reference.model.state import Broker, Partition, World, evolve
from reference.releases.profiles import Profile


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a transition needs besides the state: the profile, whether ELR is on,
    and whether timing-dependent auto leader rebalance adds alternatives."""

    profile: Profile
    #: ELR at the start of the run; a ``feature`` step changes it in the world
    #: (``World.elr_live``): read it with ``elr_on(w, ctx)``.
    elr_on: bool
    rebalance: bool = True
    #: A build's version -> its release profile, when the rules follow the builds (a
    #: rolling upgrade, reference Model ``follow_builds``): ``profile`` is then the active
    #: controller's, and ``broker_rules`` gives each broker its own build's. None: one
    #: profile for every node (a KIP, a pin, a mutant).
    build_rules: Callable[[str], Profile] | None = None
    #: The profile of the build the cluster was born on (the nodes no ``upgrade`` moved).
    birth_profile: Profile | None = None


def broker_rules(w: World, ctx: Ctx, broker: int) -> Profile:
    """The rules broker ``broker`` decides by: its own build's (issue 43: "each broker's
    for its own"), as each build ships its own ReplicaManager and Partition (the leader's
    HWM advance, Partition.maybeIncrementLeaderHW; its acks=all answer,
    Partition.checkEnoughReplicasReachOffset; its follower fetches, DelayedFetch), whatever
    the active controller runs; without ``build_rules``, or on the birth build, the
    step's profile."""
    if ctx.build_rules is None:
        return ctx.profile
    for node, version in w.builds:
        if node == broker:
            return ctx.build_rules(version)
    return ctx.birth_profile if ctx.birth_profile is not None else ctx.profile


def elr_on(w: World, ctx: Ctx) -> bool:
    """ELR is on in branch ``w``: as the latest accepted ``feature`` step left it, else as
    the run began. The controller asks FeatureControlManager.isElrFeatureEnabled()
    (eligible.leader.replicas.version >= 1) at every PartitionChangeBuilder it makes
    (ReplicationControlManager, apache/kafka 4.0.2 and 4.3.1), so a change of the feature
    acts from the next partition change on (reference/model/features.py). Below
    metadata.version 4.0-IV1 ELR is off whatever the feature: the KIP guards it by that MV
    ("Once the MV version is downgraded ... The controller will also ignore the ELR fields")
    and EligibleLeaderReplicasVersion.ELRV_1 depends on it (metadata_version.py)."""
    if not elr_supported(w.metadata_level):
        return False
    return ctx.elr_on if w.elr_live is None else w.elr_live


@dataclass(frozen=True, slots=True)
class Choice:
    leader: int | None
    #: ISR := [leader], leader recovery state RECOVERING.
    unclean: bool = False
    #: The operator opted into possible data loss (unclean election enabled,
    #: Aggressive recovery, ElectLeaders unclean / designated).
    deliberate: bool = False


def link(w: World, src: int, dst: int) -> bool:
    """src can open connections to dst (FORMAT.md: cut src->dst blackholes them; a
    silenced node neither opens nor answers any)."""
    return (src, dst) not in w.cuts and src not in w.silenced and dst not in w.silenced


def reaches_majority(w: World, c: int) -> bool:
    """Controller ``c`` and a majority of the voters (itself included) reach each other
    both ways: it can be elected (a majority of votes) and, as leader, commit (a majority
    fetches from it; KRaft's CheckQuorum resigns a leader without one, KAFKA-15489)."""
    cs = w.controllers
    group = [d for d in cs if d == c or (link(w, c, d) and link(w, d, c))]
    return len(group) * 2 > len(cs)


def active_controller(w: World) -> int | None:
    """The KRaft quorum leader, the active controller: with one controller that one unless
    its process is down (``World.down``); else the elected leader while it reaches a
    majority (None: none elected, or it lost its majority and resigned). Elections happen
    in protocol/quorum.py (_quorum).

    A single controller that is down writes nothing: no broker is fenced while it is down
    (the committed metadata keeps every broker unfenced and the partition as it was). When
    it starts again and claims leadership it builds a new heartbeat manager in which every
    registered broker's session starts now (apache/kafka ClusterControlManager.activate:
    ``heartbeatManager = new BrokerHeartbeatManager(...)``, then
    ``heartbeatManager.register(id, registration.fenced())``, whose ``touch`` sets
    lastContactNs to the current time; 3.9 source, and the same bytecode in 4.3.1's
    kafka-metadata jar; QuorumController.claim calls it on becoming active). So the
    brokers that heartbeat again keep their sessions however long it was down, and only a
    broker that does not (down, cut off) is fenced, one session timeout after the restart
    (BrokerHeartbeatManager.findOneStaleBroker): the model's usual fencing once the
    controller is back. Measured on 3.9.2, 4.3.1 and 4.4.0 (fixtures/scenarios/
    single-controller-restart.yaml). A paused single controller is not ``down`` and keeps
    the older rule (every broker fenced while it is silent; not measured)."""
    cs = w.controllers
    if len(cs) == 1:
        return None if cs[0] in w.down else cs[0]
    c = w.quorum_leader
    return c if c is not None and reaches_majority(w, c) else None


def session_ok(w: World, b: Broker) -> bool:
    """The broker heartbeats the active controller (broker -> controller connection)."""
    c = active_controller(w)
    return b.alive and c is not None and link(w, b.id, c)


def acceptable(b: Broker) -> bool:
    """isAcceptableLeader: registered, unfenced, running, and its replica's directory
    online (KIP-858: ReplicationControlManager.LeaderAcceptor.test, clusterControl
    .hasOnlineDir(brokerId, partition.directory(brokerId)), apache/kafka 3.7+)."""
    return b.alive and not b.fenced and not b.pending_registration and not b.dir_offline


def candidate_order(w: World, ctx: Ctx, replicas: Sequence[int]) -> list[int]:
    """Assignment order, stably sorted by KIP-1303 local-log eligibility when on."""
    cfg = w.config
    if not ctx.profile.kip1303:
        return list(replicas)

    def ok(r: int) -> bool:
        b = w.broker(r)
        return eligible(LocalLog(b.local_log_start_ms, b.local_log_bytes), now_ms=w.now_ms,
                        threshold_ms=cfg.eligible_local_log_ms,
                        threshold_bytes=cfg.eligible_local_log_bytes)

    return kip1303_order(replicas, ok)


def unclean_recovery(w: World, ctx: Ctx, strategy: str, last_known_elr: frozenset[int]
                     ) -> list[Choice]:
    """KIP-966 unclean recovery: GetReplicaLogInfo to the unfenced replicas the
    controller reaches; elect the highest (leader epoch, log end offset)."""
    c = active_controller(w)
    replies: dict[int, LogInfo] = {}
    for r in w.partition.replicas:
        b = w.broker(r)
        if acceptable(b) and c is not None and link(w, c, r):
            replies[r] = LogInfo(b.last_epoch(), b.leo)
    if not recovery_ready(strategy, replies, last_known_elr):
        return [Choice(None)]
    best = longest_log(replies)
    order = [r for r in candidate_order(w, ctx, w.partition.replicas) if r in best]
    wins = pick(ctx.profile, order, lambda r: True)
    return [Choice(x, unclean=True, deliberate=strategy == "Aggressive") for x in wins]


def random_unclean(w: World, ctx: Ctx, deliberate: bool = True) -> list[Choice]:
    """"The unclean leader election will be randomly choosing an unfenced replica"
    (KIP) / the first live replica in assignment order (shipped)."""
    order = candidate_order(w, ctx, w.partition.replicas)
    wins = pick(ctx.profile, order, lambda r: acceptable(w.broker(r)))
    return [Choice(x, unclean=True, deliberate=deliberate) for x in wins] or [Choice(None)]


def choose_leader(w: World, ctx: Ctx, isr: frozenset[int], elr: frozenset[int],
                  election: str) -> list[Choice]:
    """Election alternatives for a partition with proposed ``isr``/``elr``.

    ``election``: "online" (keep a valid leader, else elect), "preferred",
    "unclean" (ElectLeaders UNCLEAN).
    """
    p = w.partition
    prof = ctx.profile
    cfg = w.config
    on = elr_on(w, ctx)
    # ELR turned off live, shipped: the builder's targetElr starts as the partition's own
    # ELR and isValidNewLeader reads it before maybeUpdateRecordElr clears it, so the
    # members of an ELR left from before stay electable while the ISR is empty
    # (PartitionChangeBuilder constructor, isValidNewLeader, tryElection; 4.0.2, 4.3.1).
    stale = not on and prof.elr_disable_keeps_fields

    def valid(r: int) -> bool:
        b = w.broker(r)
        if not (acceptable(b) or (not prof.leader_must_be_unfenced
                                  and not b.pending_registration)):
            return False
        return r in isr or (not isr and (on or stale) and prof.elr_electable and r in elr)

    unclean_config = (cfg.unclean_leader_election if prof.unclean_election_config == "config"
                      else prof.unclean_election_config == "always")

    order = candidate_order(w, ctx, p.replicas)
    if election == "preferred" and order and valid(order[0]):
        return [Choice(order[0])]
    if p.leader is not None and valid(p.leader):
        return [Choice(p.leader)]
    wins = pick(prof, order, valid)
    if wins:
        return [Choice(x) for x in wins]
    if election == "preferred":
        # electPreferredLeader tries canElectLastKnownLeader too, after the replicas
        # (PartitionChangeBuilder 4.0.2 line 251, 4.3.1 line 246): met when the last known
        # leader was unfenced while ELR was off and ELR is on again.
        return _last_leader(w, ctx, isr, elr) or [Choice(None)]
    if not isr and on and prof.unclean_recovery:
        if cfg.unclean_recovery_manager:
            strategy = cfg.unclean_recovery_strategy
            d = decide(strategy, isr_available=False, unfenced_elr=False, fenced_elr=bool(elr),
                       last_known_elr_all_unfenced=all(
                           acceptable(w.broker(r)) for r in p.last_known_elr))
            if d is Decision.UNCLEAN_RECOVERY:
                return unclean_recovery(w, ctx, strategy, p.last_known_elr)
            if election == "unclean":
                return random_unclean(w, ctx)
            return [Choice(None)]
        # Delivery plan, unclean recovery not shipped or disabled.
        if elr:
            if unclean_config or election == "unclean":
                return random_unclean(w, ctx)
            return [Choice(None)]
        if unclean_config or election == "unclean":
            return random_unclean(w, ctx)
        lkl = p.last_known_leader
        if lkl is not None and acceptable(w.broker(lkl)):
            # "elect the LastKnownLeader once it is unfenced": ISR := [it].
            return [Choice(lkl, unclean=True)]
        return [Choice(None)]
    last = _last_leader(w, ctx, isr, elr)
    if last:
        return last
    if unclean_config or election == "unclean":
        return random_unclean(w, ctx)
    return [Choice(None)]


def _last_leader(w: World, ctx: Ctx, isr: frozenset[int], elr: frozenset[int]) -> list[Choice]:
    """PartitionChangeBuilder.canElectLastKnownLeader (4.0.2, 4.3.1): with ELR on, the
    ISR and ELR empty and LastKnownELR one acceptable replica, it is elected uncleanly."""
    p = w.partition
    if (elr_on(w, ctx) and ctx.profile.last_known_elr == "last-leader" and not isr and not elr
            and len(p.last_known_elr) == 1):
        (last,) = tuple(p.last_known_elr)
        if last in p.replicas and acceptable(w.broker(last)):
            return [Choice(last, unclean=True)]
    return []


def last_known_leader(p: Partition, leader: int | None, written: bool) -> frozenset[int]:
    """LastKnownELR after a change with ELR on, as 4.1+ keeps it
    (PartitionChangeBuilder.maybeUpdateLastKnownLeader, 4.3.1 lines 491-500; apache/kafka
    PR 20629 'MINOR: simplify last known elr update', in 4.1.2): it changes only when the
    record writes the leader field (``written``: a new leader, or the same one for the epoch
    bump of a reassignment that drops a replica): written as none while LastKnownELR is
    empty, the leader it had is recorded; written as a replica while it is not empty, it is
    cleared. Any other change keeps it (maybeUpdateRecordElr never writes it while
    useLastKnownLeaderInBalancedRecovery), e.g. one left from before ELR was turned off
    and on again (deviation elr-disable-keeps-fields). A partition that had no leader
    either keeps an empty one here; 4.1+ records the leader it had, -1, there (a Kafka
    defect, known_bugs ``last-known-elr-minus-one``, that no profile adopts)."""
    if written and leader is None and not p.last_known_elr and p.leader is not None:
        return frozenset((p.leader,))
    if written and leader is not None and p.last_known_elr:
        return frozenset()
    return p.last_known_elr


def _another(replicas: Sequence[int], x: int) -> int:
    """The first replica other than ``x`` in assignment order (a wrong LastKnownELR member,
    for a mutant)."""
    return next((r for r in replicas if r != x), x)


@dataclass(frozen=True, slots=True)
class Assignment:
    """The replica assignment a PartitionChangeRecord proposes (PartitionChangeBuilder
    setTargetReplicas / setTargetAdding / setTargetRemoving): ``replicas`` in order,
    then the reassignment's adding and removing replicas (sorted)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def reassignment_of(current: Sequence[int], target: Sequence[int]) -> Assignment:
    """PartitionReassignmentReplicas(currentAssignment, targetAssignment) (apache/kafka
    metadata/.../controller/PartitionReassignmentReplicas.java, 4.3.1): removing =
    current - target, adding = target - current (TreeSets: sorted), replicas = target
    followed by removing. During an ongoing reassignment ``current`` is the partition's
    replicas, i.e. the union (ReplicationControlManager.changePartitionReassignment)."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return Assignment(tuple(target) + removing, adding, removing)


def complete_reassignment(ctx: Ctx, a: Assignment, isr: frozenset[int], min_isr: int
                          ) -> tuple[Assignment, frozenset[int]] | None:
    """PartitionReassignmentReplicas.maybeCompleteReassignment(targetIsr), which
    PartitionChangeBuilder.build() runs first on every partition change (the
    reassignment request, AlterPartition, fencing, elections): the final replicas and
    ISR, or None while the reassignment has to wait.

    - the ISR without the removing replicas must not be empty, nor the replicas;
    - "Wait for all adding sync replicas to join the ISR" (only the ADDING ones: a
      target replica that was already assigned need not be in the ISR; 3.8-4.2, rule
      "all-target": every target replica instead, the adding ones not asked for);
    - when the replication factor shrinks (fewer adding than removing), every target
      replica must be in the ISR;
    - KIP-966 "Other behaviors" 4 (profile ``reassignment_needs_min_isr``): "the
      reassignment can only be completed if the ISR size is larger or equal to min
      ISR". Not in the code (deviation reassignment-ignores-min-isr).
    """
    if not (a.adding or a.removing):
        return None
    new_isr = isr - frozenset(a.removing)
    replicas = tuple(r for r in a.replicas if r not in a.removing)
    if not new_isr or not replicas:
        return None
    waits = ctx.profile.reassignment_waits_for_target_isr  # False only in a mutant
    rule = ctx.profile.reassignment_completion if waits else "adding"
    # 3.8-4.2 ask for every target replica instead of the adding ones
    # (PartitionReassignmentReplicas.maybeCompleteReassignment 3.9, 4.0.2: no adding check):
    # they differ for an adding replica that a later reassignment also removes (adding [5],
    # removing [1, 5]: 4.0.2 completes once the ISR holds the target; 3.7, 4.3 wait for 5).
    if not set(a.adding) <= new_isr and waits and rule != "all-target":
        return None
    if rule == "all-target" and not set(replicas) <= new_isr:
        return None  # KAFKA-15665 (3.8.0-4.2): newTargetIsr.containsAll(newTargetReplicas)
    if (rule == "adding-unless-shrinking" and len(a.adding) < len(a.removing)
            and not set(replicas) <= new_isr):
        return None  # KAFKA-19975 (4.3.0): adding.size() < removing.size()
    if ctx.profile.reassignment_needs_min_isr and len(new_isr) < min_isr:
        return None
    return Assignment(replicas), new_isr


def partition_change(
    w: World,
    ctx: Ctx,
    *,
    proposed_isr: frozenset[int] | None = None,
    unclean_shutdown: frozenset[int] = frozenset(),
    election: str = "online",
    choices: list[Choice] | None = None,
    assignment: Assignment | None = None,
) -> list[World]:
    """Apply one PartitionChangeRecord (PartitionChangeBuilder.build): complete a
    reassignment if it can, new ISR, ELR update, election, leader epoch bump. Returns
    one world per allowed election outcome."""
    p = w.partition
    prof = ctx.profile
    # getTopicEffectiveMinIsr: min(min.insync.replicas, the current replica count,
    # which during a reassignment includes the adding and removing replicas).
    min_isr = w.min_isr
    target = p.isr if proposed_isr is None else proposed_isr
    current = Assignment(p.replicas, p.adding, p.removing)
    a = assignment or current
    done = complete_reassignment(ctx, a, target, w.config.min_isr(len(
        tuple(r for r in a.replicas if r not in a.removing))))
    completed = done is not None
    if done is not None:
        a, target = done
    if a != current:
        # The election iterates the new targetReplicas (electAnyLeader).
        w = evolve(w, partition=evolve(p, replicas=a.replicas, adding=a.adding,
                                       removing=a.removing))
    on = elr_on(w, ctx)
    stale = not on and prof.elr_disable_keeps_fields
    # The ISR the election sees: the proposed one (targetIsr), even when ELR is off and the
    # record then keeps the last member (build(): the ISR is written only when it is not
    # empty or ELR is on). Only a stale ELR tells the two apart.
    election_isr = target if stale and p.elr else None
    if not on and not target:
        # ELR off: "prevent ISR drops to empty which keeps the last replica".
        target = p.isr
    if on:
        upd = update_elr(prof, isr=p.isr, elr=p.elr, last_known_elr=p.last_known_elr,
                         proposed_isr=target, min_isr=min_isr, unclean_shutdown=unclean_shutdown)
        elr, lk = upd.elr, upd.last_known_elr
    elif stale:
        # ELR off with fields left from when it was on (a live disable): the election sees
        # the partition's ELR (choose_leader), the record then clears it, and LastKnownELR
        # is never written (maybeUpdateRecordElr returns before it when
        # useLastKnownLeaderInBalancedRecovery, maybeUpdateLastKnownLeader returns when ELR
        # is off; PartitionChangeBuilder 4.0.2, 4.3.1).
        elr, lk = p.elr, p.last_known_elr
    else:
        # KIP-966 "Compatibility": "all the ELR related fields will be removed on the next
        # partition change. The controller will also ignore the ELR fields."
        elr, lk = frozenset(), frozenset()
    if choices is None:
        choices = choose_leader(w, ctx, target if election_isr is None else election_isr,
                                elr, election)
    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: a replica list that does
    # not contain every old replica bumps the leader epoch even if the leader stays.
    shrunk = not set(p.replicas) <= set(a.replicas)
    out: list[World] = []
    for ch in choices:
        isr2, elr2, lk2 = target, elr, lk
        recovering = p.recovering
        leader = ch.leader
        if leader is not None and leader != p.leader and not ch.unclean and leader in elr2 \
                and leader not in isr2:
            # "this replica will be elected as leader, added to ISR, and removed from ELR"
            isr2 = frozenset((leader,))
            elr2 = elr2 - {leader}
        if ch.unclean and leader is not None:
            isr2 = frozenset((leader,))
            recovering = True
            elr2 = frozenset()
            if prof.last_known_elr != "kip":
                lk2 = frozenset()
        lkl = p.last_known_leader
        if on and prof.last_known_elr == "last-leader" and prof.last_known_leader_rewritten:
            # 4.0.2 maybeUpdateLastKnownLeader: the leader recorded at every change that
            # empties the ISR, cleared at every change that leaves a leader.
            if not ch.unclean and leader is None and len(p.last_known_elr) == 1:
                lk2 = p.last_known_elr
            if isr2 != p.isr and not isr2 and p.leader is not None \
                    and p.last_known_elr != frozenset((p.leader,)):
                lk2 = frozenset((p.leader,))
        elif on and prof.last_known_elr == "last-leader":
            lk2 = last_known_leader(p, leader, leader != p.leader or shrunk)
        if on and prof.last_known_elr == "kip":
            # "The controller will record the last ISR member (the leader) when it is
            # fenced. It will be cleaned when a new leader is elected."
            if leader is not None and leader != p.leader:
                lkl = None
            elif not isr2 and p.isr and p.leader is not None:
                lkl = p.leader
        if not prof.last_known_elr_right_member and lk2 - p.last_known_elr:
            lk2 = (lk2 & p.last_known_elr) | frozenset(_another(p.replicas, x)
                                                       for x in lk2 - p.last_known_elr)
        if not on:
            elr2, lk2 = frozenset(), (p.last_known_elr if stale else frozenset())
        if completed and prof.reassignment_needs_min_isr:
            # KIP-966 "Other behaviors" 4: "The controller will make sure than upon
            # completion, the ELR only contains replicas in the final replica set". The
            # shipped builder computes the ELR from the old ISR (maybePopulateTargetElr),
            # so a removed replica can stay in it when the ISR ends below min ISR: a
            # consequence of reassignment-ignores-min-isr.
            elr2 = elr2 & frozenset(a.replicas)
            lk2 = lk2 & frozenset(a.replicas)
        leader_epoch = p.leader_epoch + (1 if leader != p.leader or shrunk else 0)
        np = evolve(p, leader=leader, leader_epoch=leader_epoch, isr=isr2, elr=elr2,
                     last_known_elr=lk2, last_known_leader=lkl, recovering=recovering,
                     replicas=a.replicas, adding=a.adding, removing=a.removing)
        if np != p:
            np = evolve(np, partition_epoch=p.partition_epoch + 1)
        w2 = evolve(w, partition=np)
        for r in set(p.replicas) - set(a.replicas):
            # A broker deletes its replica once it is no longer assigned (StopReplica
            # with delete): re-added later, it starts from an empty log.
            b = w2.broker(r)
            w2 = w2.with_broker(evolve(b, log=(), hwm=0))
        if ch.deliberate and leader is not None:
            w2 = evolve(w2, unclean_elections=w2.unclean_elections + 1)
        out.append(w2)
    return out
