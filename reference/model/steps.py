"""Steps at the level the harness injects (fixtures/scenarios/FORMAT.md), one class per
step kind. Each holds its parameters, its FORMAT.md mapping (``params``) and its model
transition: what the step does to the world (``transition``), which the model then settles
by running the protocol actions it causes (fencing by session timeout, ISR shrink by lag,
elections, ...). A transition returns the changed world, or settled outcomes when the
step runs the protocol itself (a produce waits for acks, an election, a controlled
shutdown)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from reference.model.controller import (
    Assignment,
    Ctx,
    active_controller,
    broker_rules,
    elr_on,
    partition_change,
    reassignment_of,
)
from reference.model.elr import after_min_isr_change
from reference.model.protocol import (
    Outcome,
    all_nodes,
    cut_links,
    elect_step,
    hwm_inputs,
    produce_step,
    rebalanced,
    set_config,
    settle,
)
from reference.model.protocol import (
    Step as Step,  # re-exported: the type every step kind implements
)
from reference.model.state import World, evolve

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: A step kind (every one is a dataclass).
_Step = TypeVar("_Step", bound="DataclassInstance")


@dataclass(frozen=True, slots=True)
class Produce:
    kind: ClassVar[str] = "produce"
    count: int = 1
    acks: str = "all"  # "0" | "1" | "all"
    #: Unique record ids, assigned by the runner (dataclasses.replace); when
    #: empty the model names them itself.
    record_ids: tuple[str, ...] = ()

    def params(self) -> dict[str, Any]:
        return {"count": self.count, "acks": self.acks if self.acks == "all" else int(self.acks)}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        leader = w.partition.leader  # the leader's build parks its followers' fetches
        if (ctx.profile if leader is None else broker_rules(w, ctx, leader)).leader_hwm_lag:
            w = evolve(w, hwm_before_produce=w.partition_hwm(),
                       leader_at_produce=w.partition.leader)
        return produce_step(w, ctx, self.count, self.acks, self.record_ids)


@dataclass(frozen=True, slots=True)
class Consume:
    kind: ClassVar[str] = "consume"

    def params(self) -> dict[str, Any]:
        return {}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        return time_passes(w, ctx)


def time_passes(w: World, ctx: Ctx) -> list[Outcome]:
    """A step that changes nothing itself (an await, a read) still takes time, in which the
    active controller's periodic preferred election may move a leadership back: it runs
    every leader.imbalance.check.interval.seconds, whatever clients do
    (QuorumController.maybeScheduleNextBalancePartitionLeaders ->
    ReplicationControlManager.maybeBalancePartitionLeaders, apache/kafka 1eb7644)."""
    out = [Outcome(w)]
    if ctx.rebalance:
        out.extend(Outcome(z) for z in rebalanced(w, ctx))
    return out


#: A controller named by its role when the step runs (FORMAT.md "Controller quorums"):
#: ``active`` is the quorum leader at the step (the harness reads it from DescribeQuorum,
#: the model from the branch), ``last_active`` the controller the latest step naming
#: ``active`` resolved to (e.g. to restart the controller an earlier step killed),
#: ``follower`` the lowest id of the other controllers.
ACTIVE = "active"
LAST_ACTIVE = "last_active"
#: The lowest-id controller that is not the active one (a follower of the quorum).
FOLLOWER = "follower"
ROLES = (ACTIVE, LAST_ACTIVE, FOLLOWER)
#: A node id, or a controller role (ROLES).
NodeRef = int | str


def resolve_ref(w: World, ref: NodeRef) -> tuple[World, int | None]:
    """The node ``ref`` names in branch ``w`` (None: no such controller: no active one, or
    no earlier ``active``), with ``last_active`` set when ``ref`` is ``active``."""
    if isinstance(ref, int):
        return w, ref
    if ref == ACTIVE:
        c = active_controller(w)
        return (w if c is None or w.last_active == c else evolve(w, last_active=c)), c
    if ref == FOLLOWER:
        c = active_controller(w)
        return w, min((d for d in w.controllers if d != c), default=None)
    return w, w.last_active


def silence_or_rejoin(w: World, ref: NodeRef, silenced: bool) -> World:
    """Node ``ref`` silenced (it reaches nobody and nobody reaches it) or given back. To
    the model a paused node (SIGSTOP) and a controller that is down are one thing: a node
    nobody reaches, its log unchanged. Resuming or restarting it gives back the node, not
    the network: cuts an ``isolate``, ``cut`` or ``partition`` made stay until ``heal``,
    as the harness's resume only sends SIGCONT and its restart starts a process behind
    the same proxies (a restarted controller stayed cut from a broker isolated while it
    was down: 3.8.1, hunt seed 39, fuzz-s39-24)."""
    w, n = resolve_ref(w, ref)
    if n is None:
        return w
    return evolve(w, silenced=(w.silenced | {n}) if silenced else (w.silenced - {n}))


def down_or_up(w: World, ref: NodeRef, down: bool) -> World:
    """Controller ``ref``'s process stopped (``down``) or started again: silenced or given
    back as ``silence_or_rejoin``, and marked in ``World.down`` (a single controller that
    is down decides nothing: controller.active_controller)."""
    w, n = resolve_ref(w, ref)
    if n is None:
        return w
    w = silence_or_rejoin(w, n, down)
    return evolve(w, down=(w.down | {n}) if down else (w.down - {n}))


@dataclass(frozen=True, slots=True)
class OnNode:
    """A step that silences node ``node`` (pause; kill or stop of a controller) or gives
    it back (resume, restart)."""

    node: NodeRef
    silences: ClassVar[bool] = True
    #: What the scenario file calls the node.
    param: ClassVar[str] = "node"

    def params(self) -> dict[str, Any]:
        return {self.param: self.node}

    def transition(self, w: World, ctx: Ctx) -> World:
        return silence_or_rejoin(w, self.node, self.silences)


def with_resolved(step: _Step, resolved: Mapping[str, int]) -> _Step:
    """``step`` with the controller roles a run resolved to ids, ``resolved`` naming them
    as the scenario file does (``params``: a controller step's ``controller`` is its
    ``node``)."""
    names = {step.param: "node"} if isinstance(step, OnNode) else {}
    return replace(step, **{names.get(k, k): int(v) for k, v in resolved.items()})


@dataclass(frozen=True, slots=True)
class Isolate(OnNode):
    """Every link to and from the node cut (its process keeps running): it reaches
    nobody and nobody reaches it until ``heal``."""

    kind: ClassVar[str] = "isolate"

    def transition(self, w: World, ctx: Ctx) -> World:
        w, n = resolve_ref(w, self.node)
        return w if n is None else isolate(w, n)


@dataclass(frozen=True, slots=True)
class Pause(OnNode):
    """SIGSTOP: silent on every link, log kept."""

    kind: ClassVar[str] = "pause"


@dataclass(frozen=True, slots=True)
class Resume(OnNode):
    """SIGCONT of a paused node: it answers again; cut links stay cut."""

    kind: ClassVar[str] = "resume"
    silences: ClassVar[bool] = False


def isolate(w: World, n: int) -> World:
    """Node ``n`` neither reaches nor is reached by anyone."""
    others = [x for x in all_nodes(w) if x != n]
    return cut_links(w, [(n, x) for x in others] + [(x, n) for x in others])


@dataclass(frozen=True, slots=True)
class Partition:
    kind: ClassVar[str] = "partition"
    groups: tuple[tuple[int, ...], ...]

    def params(self) -> dict[str, Any]:
        return {"groups": [list(x) for x in self.groups]}

    def pairs(self) -> frozenset[tuple[int, int]]:
        """Every directed link from one group to another."""
        return frozenset((a, b) for i, g in enumerate(self.groups)
                         for j, h in enumerate(self.groups) if i != j for a in g for b in h)

    def transition(self, w: World, ctx: Ctx) -> World:
        return cut_links(w, self.pairs())


@dataclass(frozen=True, slots=True)
class Cut:
    kind: ClassVar[str] = "cut"
    src: NodeRef
    dst: NodeRef
    direction: str = "both"  # "both" | "oneway"

    def params(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "direction": self.direction}

    def transition(self, w: World, ctx: Ctx) -> World:
        w, src = resolve_ref(w, self.src)
        w, dst = resolve_ref(w, self.dst)
        if src is None or dst is None or src == dst:
            return w
        back = [(dst, src)] if self.direction == "both" else []
        return cut_links(w, [(src, dst)] + back)


@dataclass(frozen=True, slots=True)
class Heal:
    """Every cut link restored; paused nodes and controllers that are down stay so."""

    kind: ClassVar[str] = "heal"

    def params(self) -> dict[str, Any]:
        return {}

    def transition(self, w: World, ctx: Ctx) -> World:
        return evolve(w, cuts=frozenset())


@dataclass(frozen=True, slots=True)
class OnBroker:
    """A step on one broker's process (kill, stop, restart)."""

    broker: int

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker}


@dataclass(frozen=True, slots=True)
class Kill(OnBroker):
    kind: ClassVar[str] = "kill"

    def transition(self, w: World, ctx: Ctx) -> World:
        br = w.broker(self.broker)
        if not br.alive:
            return w
        # SIGKILL ends a paused process too: the broker a restart brings back is not paused.
        w = evolve(w, silenced=w.silenced - {self.broker})
        return w.with_broker(evolve(br, alive=False, clean_shutdown_epoch=None,
                                    heard_from=None))


@dataclass(frozen=True, slots=True)
class LoseUnflushed:
    kind: ClassVar[str] = "lose_unflushed"
    broker: int
    offset: int

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker, "offset": self.offset}

    def transition(self, w: World, ctx: Ctx) -> World:
        br, o = w.broker(self.broker), self.offset
        if br.alive or not 0 <= o < br.leo:
            return w
        w = w.with_broker(evolve(br, log=br.log[:o], hwm=min(br.hwm, o)))
        return evolve(w, lost_data=w.lost_data | {self.broker})


@dataclass(frozen=True, slots=True)
class Stop(OnBroker):
    kind: ClassVar[str] = "stop"

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        b = self.broker
        br = w.broker(b)
        if not br.alive:
            return w
        # Controlled shutdown: the controller moves leadership and removes the broker
        # from the ISR (it may enter the ELR); then the log is flushed and the
        # CleanShutdownFile holds the broker epoch (-1 if never registered).
        epoch = -1 if br.pending_registration else br.epoch
        w = w.with_broker(evolve(br, alive=False, fenced=True, clean_shutdown_epoch=epoch,
                                 heard_from=None))
        p = w.partition
        if br.pending_registration or not (b in p.isr or p.leader == b):
            return w
        branches = partition_change(w, ctx, proposed_isr=p.isr - {b})
        return [Outcome(x) for y in branches for x in settle(y, ctx)]


@dataclass(frozen=True, slots=True)
class Restart(OnBroker):
    """``wait`` is the harness's: with ``wait: false`` the runner goes on as soon as the
    process is launched (FORMAT.md "Semantics"); the model's prediction is the same."""

    kind: ClassVar[str] = "restart"
    wait: bool = True

    def params(self) -> dict[str, Any]:
        return {"broker": self.broker} if self.wait else {"broker": self.broker, "wait": False}

    def transition(self, w: World, ctx: Ctx) -> World:
        br = w.broker(self.broker)
        if br.alive:
            return w
        # A restart repairs a failed log directory (harness: remounted before the start).
        return w.with_broker(evolve(br, alive=True, pending_registration=True, fenced=True,
                                    known_leader_epoch=-1, unregistered=False,
                                    dir_offline=False))


@dataclass(frozen=True, slots=True)
class Unregister(OnBroker):
    """UnregisterBroker (KIP-631) of a broker that is down: the controller drops its
    registration and changes each partition as at a fencing, with the broker out of the
    target ISR and no unclean-shutdown broker named (ReplicationControlManager
    .handleBrokerUnregistered -> generateLeaderAndIsrUpdates). So a member of the ELR
    stays in it: seen on 4.3.1, an UnregisterBrokerRecord and no PartitionChangeRecord,
    ELR [3] kept (fixtures/scenarios/unregister-keeps-elr-member.yaml). KIP-966 says
    nothing of unregistration. A restart registers the broker anew. A running broker
    would register again at its next heartbeat, so the loader lets this step follow only
    a kill or a stop."""

    kind: ClassVar[str] = "unregister"

    def transition(self, w: World, ctx: Ctx) -> World | list[Outcome]:
        b = self.broker
        br = w.broker(b)
        if br.alive:
            return w
        w = w.with_broker(evolve(br, fenced=True, unregistered=True))
        p = w.partition
        if b not in p.isr and p.leader != b:
            return w
        # An operator's change of the cluster, as a reassignment is: the KIP's guarantee
        # of min ISR electable replicas no longer holds (invariants: reconfigured).
        branches = partition_change(evolve(w, reconfigured=True), ctx, proposed_isr=p.isr - {b})
        return [Outcome(x) for y in branches for x in settle(y, ctx)]


@dataclass(frozen=True, slots=True)
class OnController(OnNode):
    """A step on one controller's process (``kill``/``stop``/``restart`` with
    ``controller:``). To the model a controller that is down is one nobody reaches, as a
    paused node (a stopped leader resigns, a killed one is replaced once the others'
    fetch timeout passes: the same settled quorum), and ``restart`` gives it back as
    ``resume`` does, behind the links the network faults left."""

    param: ClassVar[str] = "controller"

    @property
    def controller(self) -> NodeRef:
        return self.node

    def transition(self, w: World, ctx: Ctx) -> World:
        return down_or_up(w, self.node, self.silences)


@dataclass(frozen=True, slots=True)
class KillController(OnController):
    """SIGKILL of a controller process: it does not resign; if it led the quorum, the
    others elect a new leader once their fetch timeout passes."""

    kind: ClassVar[str] = "kill"


@dataclass(frozen=True, slots=True)
class StopController(OnController):
    """SIGTERM of a controller process: an active controller resigns on its way down."""

    kind: ClassVar[str] = "stop"


@dataclass(frozen=True, slots=True)
class RestartController(OnController):
    """A controller started again from its log: it rejoins the quorum as a follower."""

    kind: ClassVar[str] = "restart"
    silences: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ReportLocalLog:
    """KIP-1303: the replica's local log as it reports it (Fetch to the leader, which
    forwards it in AlterPartition): localLogStartTimestamp ``age_ms`` before now and
    localLogSizeBytes. None leaves a field unreported. A follower bootstrapped from
    the last tiered offset (KIP-1023) reports a young, small local log."""

    kind: ClassVar[str] = "local_log"
    broker: int
    age_ms: int | None = None
    size_bytes: int | None = None

    def params(self) -> dict[str, Any]:
        log: dict[str, Any] = {"broker": self.broker}
        if self.age_ms is not None:
            log["age_ms"] = self.age_ms
        if self.size_bytes is not None:
            log["size_bytes"] = self.size_bytes
        return log

    def transition(self, w: World, ctx: Ctx) -> World:
        start = None if self.age_ms is None else w.now_ms - self.age_ms
        br = evolve(w.broker(self.broker), local_log_start_ms=start,
                    local_log_bytes=self.size_bytes)
        return w.with_broker(br)


@dataclass(frozen=True, slots=True)
class AlterConfig:
    kind: ClassVar[str] = "alter_config"
    scope: str  # "topic" | "cluster"
    config: Mapping[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        return {"scope": self.scope, "config": dict(self.config)}

    def transition(self, w: World, ctx: Ctx) -> World:
        before = w.min_isr
        new_cfg = w.config
        for k, v in self.config.items():
            new_cfg = set_config(new_cfg, self.scope, k, str(v))
        w = evolve(w, config=new_cfg)
        touches_min_isr = "min.insync.replicas" in self.config and (
            self.scope == "topic" or w.config.topic_min_isr is None
            or ctx.profile.min_isr_change_clears == "always")
        if touches_min_isr and elr_on(w, ctx):
            p = w.partition
            upd = after_min_isr_change(ctx.profile, isr=p.isr, elr=p.elr,
                                       last_known_elr=p.last_known_elr, new_min_isr=w.min_isr)
            np = evolve(p, elr=upd.elr, last_known_elr=upd.last_known_elr)
            if np != p:
                np = evolve(np, partition_epoch=p.partition_epoch + 1)
            w = evolve(w, partition=np)
        if touches_min_isr and w.min_isr != before:
            w = evolve(w, reconfigured=True, hwm_computed_from=hwm_inputs(w))
        return w


ELECTION_TYPES = ("preferred", "unclean", "longest_log_aggressive", "longest_log_balanced",
                  "designated")


@dataclass(frozen=True, slots=True)
class Elect:
    kind: ClassVar[str] = "elect"
    #: preferred | unclean | longest_log_aggressive | longest_log_balanced | designated
    type: str = "preferred"
    broker: int | None = None

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.broker is not None:
            out["broker"] = self.broker
        return out

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        return elect_step(w, ctx, self.type, self.broker)


@dataclass(frozen=True, slots=True)
class Reassign:
    """AlterPartitionReassignments (KIP-455) for the partition: a target replica list,
    or ``cancel`` (replicas null on the wire) to revert an ongoing reassignment.

    As ReplicationControlManager.changePartitionReassignment (apache/kafka 4.3.1): the
    new replicas are the target followed by the removing ones, adding = target -
    current, removing = current - target, where ``current`` is the partition's replicas
    (the union while a reassignment is in progress); the request's own partition change
    completes it at once when it can (PartitionChangeBuilder.build, see
    controller.complete_reassignment), else an AlterPartition (an adding replica joined
    the ISR) or a fencing completes it later. The election is ONLINE even when unclean
    election is enabled (the reassignment path never sets Election.UNCLEAN)."""

    kind: ClassVar[str] = "reassign"
    replicas: tuple[int, ...] = ()
    cancel: bool = False

    def params(self) -> dict[str, Any]:
        if self.cancel:
            return {"cancel": True}
        return {"replicas": list(self.replicas)}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        changed = self._change(w, ctx)
        if changed is None:  # rejected by the controller: nothing changes
            return [Outcome(x) for x in settle(w, ctx)]
        return [Outcome(x) for y in changed for x in settle(evolve(y, reconfigured=True), ctx)]

    def _change(self, w: World, ctx: Ctx) -> list[World] | None:
        p = w.partition
        if self.cancel:
            return cancel_reassignment(w, ctx)
        a = reassignment_of(p.replicas, self.replicas)
        # The builder sets adding / removing only when non-empty: otherwise the
        # partition's own (an ongoing reassignment's) stay.
        a = Assignment(a.replicas, a.adding or p.adding, a.removing or p.removing)
        return partition_change(w, ctx, assignment=a)


def cancel_reassignment(w: World, ctx: Ctx) -> list[World] | None:
    """ReplicationControlManager.cancelPartitionReassignment + PartitionReassignmentRevert
    (4.3.1): NO_REASSIGNMENT_IN_PROGRESS when none is; else replicas := the original ones
    (the current list without the adding ones), ISR := ISR - adding; an ISR left empty
    becomes [first original replica], which counts as unclean and is refused
    (INVALID_REPLICA_ASSIGNMENT) unless unclean.leader.election.enable is on for the
    topic. The revert is not held to min ISR in the code; the KIP ("Other behaviors"
    4.2: "This min ISR requirement is also enforced when the reassignment is
    canceled") is read here as: a revert that would leave the ISR below min ISR is
    refused (profile reassignment_needs_min_isr)."""
    p = w.partition
    if not p.reassigning:
        return None
    replicas = tuple(r for r in p.replicas if r not in p.adding)
    isr = p.isr - frozenset(p.adding)
    if not isr:
        if not w.config.unclean_leader_election:
            return None
        isr = frozenset(replicas[:1])
    if ctx.profile.reassignment_needs_min_isr and len(isr) < w.config.min_isr(len(replicas)):
        return None
    return partition_change(w, ctx, proposed_isr=isr, assignment=Assignment(replicas))


#: Await fields left unset are not checked.
UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Await:
    """Explicit expectation; ``leader`` None means leaderless (FORMAT.md)."""

    kind: ClassVar[str] = "await"
    expect: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 30.0

    def params(self) -> dict[str, Any]:
        return {**dict(self.expect), "timeout_s": self.timeout_s}

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        return time_passes(w, ctx)


#: The step kinds the model itself knows (the explorer's moves, the model's tests).
BUILTIN: tuple[type[Step], ...] = (
    Produce, Consume, Isolate, Partition, Cut, Heal, Kill, LoseUnflushed, Stop, Restart,
    ReportLocalLog, AlterConfig, Elect, Reassign, Await)
STEP_KINDS: dict[str, type[Step]] = {k.kind: k for k in BUILTIN}


def step_to_dict(step: Step) -> dict[str, Any]:
    """The FORMAT.md mapping of a step (one key)."""
    return {step.kind: step.params()}
