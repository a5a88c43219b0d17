"""The reference model the runner drives: ``Model.apply(step)`` returns a
``Prediction`` (the settled states the cluster may show), ``explain`` compares an
observation, ``resolve`` narrows the model to the observed branch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from reference.model import steps as S
from reference.model.controller import Ctx, active_controller, elr_on
from reference.model.invariants import check
from reference.model.protocol import (
    Outcome,
    apply_step,
    fetch_floors,
    initial_world,
    pending_disruptions,
    settle,
    unfetched,
    with_leader_isr_view,
    with_leader_min_isr_view,
)
from reference.model.state import (
    NO_LEADER,
    ClusterSpec,
    Config,
    PartitionState,
    TopicSpec,
    World,
    fmt_value,
)
from reference.model.upgrade import build_of, version_tuple
from reference.releases.catalog import get_profile, profile_for_build
from reference.releases.profiles import Profile

MAX_BRANCHES = 256


@dataclass(frozen=True, slots=True)
class Prediction:
    """The settled outcome of one step."""

    #: Any one is acceptable once the cluster settles.
    allowed: tuple[PartitionState, ...]
    #: Acked record ids that must still be readable.
    must_survive: frozenset[str]
    hwm_may_move: bool
    unsupported: str | None = None
    #: For Produce: "acked" | "rejected" | "either".
    expected_acks: str | None = None
    #: Records a consumer may see (below the HWM in some branch) / must see (in all).
    may_see: frozenset[str] = frozenset()
    must_see: frozenset[str] = frozenset()
    #: Acked records that are not guaranteed to survive (on the leader only, acks=1, ...).
    at_risk: frozenset[str] = frozenset()
    #: Per branch, the durable acked records a read must show and those it may not
    #: (``must_read``); ``unread`` judges a read with them.
    must_read: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: For a step the build may refuse (``feature``): True refused, False accepted.
    expected_refusal: bool | None = None


def config_from(cluster: ClusterSpec, topic: TopicSpec, profile: Profile) -> Config:
    """Read the configs the protocol uses from broker and topic properties (topic wins)."""
    props: dict[str, str] = {**dict(cluster.broker_config), **dict(topic.config)}
    cfg = Config(topic_min_isr=topic.min_insync_replicas,
                 cluster_min_isr=int(cluster.broker_config.get("min.insync.replicas", "1")))
    unclean = props.get("unclean.leader.election.enable", "false").lower() == "true"
    strategy = props.get("unclean.recovery.strategy")
    if strategy is None:
        # "unclean.leader.election.enable.true -> Aggressive, false -> Balanced"
        strategy = "Aggressive" if unclean else "Balanced"
    strategy = "None" if strategy.lower() == "none" else strategy.capitalize()
    return replace(
        cfg,
        unclean_leader_election=unclean,
        unclean_recovery_strategy=strategy,
        unclean_recovery_manager=props.get("unclean.recovery.manager.enabled", "true").lower()
        == "true",
        unclean_recovery_timeout_ms=int(props.get("unclean.recovery.timeout.ms", "300000")),
        eligible_local_log_ms=int(props.get("leader.election.eligible.local.log.ms", "-1")),
        eligible_local_log_bytes=int(props.get("leader.election.eligible.local.log.bytes", "-1")),
        auto_leader_rebalance=props.get("auto.leader.rebalance.enable", "true").lower() == "true",
    )


def _instant(step: S.Step, outcomes: Sequence[tuple[World, Outcome]], ctx: Ctx) -> bool:
    """A network step (no wait, no read, no process) after which every branch's partition
    state is what it was before: it settles at its first observation."""
    return isinstance(step, (S.Isolate, S.Partition, S.Cut, S.Heal)) and all(
        project(parent, shows_elr(parent, ctx)) == project(o.world, shows_elr(o.world, ctx))
        for parent, o in outcomes)


def shows_elr(w: World, ctx: Ctx) -> bool:
    """Whether branch ``w``'s ELR and LastKnownELR are what an observer sees: while ELR is
    on, and after a ``feature`` step changed it (the fields a live disable leaves stay in
    the partition until its next change clears them: reference/model/features.py); with
    ELR off from the start they are empty (or unobservable, 3.x)."""
    return elr_on(w, ctx) or w.elr_live is not None


def project(w: World, show_elr: bool) -> PartitionState:
    """The observable partition state of one branch."""
    p = w.partition
    leader_hwm = w.partition_hwm()
    return PartitionState(
        leader=NO_LEADER if p.leader is None else p.leader,
        leader_epoch=p.leader_epoch,
        replicas=p.replicas,
        isr=p.isr,
        elr=p.elr if show_elr else frozenset(),
        last_known_elr=p.last_known_elr if show_elr else frozenset(),
        hwm=leader_hwm,
        fenced=frozenset(b.id for b in w.brokers if b.fenced or not b.alive
                         and not _single_controller_down(w)),
        adding=frozenset(p.adding),
        removing=frozenset(p.removing),
        controller=None if len(w.controllers) == 1 else _or_none(active_controller(w)),
        quorum_elected=None if len(w.controllers) == 1 else w.quorum_elections > 0,
    )


def _single_controller_down(w: World) -> bool:
    """The cluster's one controller is down: nobody fences a broker that dies meanwhile,
    and the metadata every broker serves (DescribeCluster) still shows it unfenced
    (controller.active_controller)."""
    return len(w.controllers) == 1 and w.controllers[0] in w.down


def _or_none(c: int | None) -> int:
    return NO_LEADER if c is None else c


def durable(w: World) -> frozenset[str]:
    """Acked (acks=all) records the branch keeps: on the leader, or, while leaderless,
    on some replica."""
    acked = w.acked_all()
    p = w.partition
    if p.leader is not None:
        return acked & frozenset(r for _, r in w.broker(p.leader).log)
    return acked & frozenset(r for b in w.brokers for _, r in b.log)


def must_read(w: World) -> tuple[frozenset[str], frozenset[str]]:
    """The durable acked records of a branch split in two: those a read must show, and
    those the leader holds above its HWM (hidden). Only a new leader that has not yet
    learned the HWM hides acked records (Profile.leader_hwm_lag): they are not lost, a
    read misses them until the HWM catches up."""
    keep = durable(w)
    p = w.partition
    if p.leader is None:
        return keep, frozenset()
    b = w.broker(p.leader)
    hidden = keep & frozenset(r for _, r in b.log[b.hwm:])
    return keep - hidden, hidden


def unread(lost: frozenset[str], must_survive: frozenset[str],
           branches: Sequence[tuple[frozenset[str], frozenset[str]]]) -> frozenset[str]:
    """The acked records a read missed (``lost``: acked, not read) that no branch
    explains: empty if one branch explains them all, else the fewest any branch leaves.
    A branch explains a missed record it hides only if the read showed none of the
    records it hides (a read shows a prefix of the log: up to the HWM)."""
    def left(shown: frozenset[str], hidden: frozenset[str]) -> frozenset[str]:
        need = shown if hidden <= lost else shown | hidden
        return lost & must_survive & need
    if not branches:
        return lost & must_survive
    return min((left(*b) for b in branches), key=lambda s: (len(s), sorted(s)))


def _explains(w: World, read: frozenset[str]) -> bool:
    """Whether a read of ``read`` is the one this branch predicts: every acked record it
    must show and none it hides."""
    shown, hidden = must_read(w)
    return shown <= read and not hidden & read


def visible(w: World) -> frozenset[str]:
    p = w.partition
    if p.leader is None:
        return frozenset()
    b = w.broker(p.leader)
    return frozenset(r for _, r in b.log[: b.hwm])


class Model:
    """Reference model of one partition under a profile. Deterministic for a seed."""

    def __init__(self, profile: str | Profile, cluster: ClusterSpec, topic: TopicSpec,
                 elr_enabled: bool = True, seed: int = 0, follow_builds: bool = False) -> None:
        self.profile = profile if isinstance(profile, Profile) else get_profile(profile)
        self.cluster = cluster
        self.topic = topic
        self.seed = seed
        self.elr_on = self.profile.elr_on(elr_enabled)
        self.ctx = Ctx(self.profile, self.elr_on, rebalance=True)
        #: ``profile`` is the birth build's (chosen from it): a branch whose active
        #: controller runs another build (an ``upgrade`` step) steps under that build's
        #: profile (``ctx_of``). False: ``profile`` throughout (a KIP, a mutant, a pin).
        self.follow_builds = follow_builds
        self._elr_enabled = elr_enabled
        self._ctxs: dict[str, Ctx] = {}
        if follow_builds:  # the brokers decide by their own builds (controller.broker_rules)
            self.ctx = Ctx(self.profile, self.elr_on, rebalance=True,
                           build_rules=self._rules_of, birth_profile=self.profile)
        cfg = config_from(cluster, topic, self.profile)
        start = initial_world(tuple(cluster.brokers), tuple(cluster.controllers),
                              tuple(topic.replicas), cfg)
        if cluster.metadata_level is not None or cluster.builds:
            # Born at a metadata.version, or with nodes on other builds (cluster.builds).
            start = replace(start, metadata_level=cluster.metadata_level,
                            builds=tuple(sorted(cluster.builds)))
        if topic.absent:  # created by a step: not there before it
            from reference.model.topics import unborn
            start = unborn(start)
        # A quorum of several controllers has elected one of them by the time the topic
        # exists; which one is the observation's to say (Model.resolve).
        self.branches: list[World] = [start] if len(cluster.controllers) == 1 else [
            replace(start, quorum_leader=c) for c in cluster.controllers]
        self.steps_applied = 0
        self._record_acks: dict[str, str] = {}
        self._next_record = 0
        self._after_produce = False  # the previous step was a produce (World.hwm_before_produce)
        self._violations: list[str] = []
        self.last: Prediction | None = None

    # -- stepping -----------------------------------------------------------------

    def _record_ids(self, step: S.Produce) -> tuple[str, ...]:
        if step.record_ids:
            return step.record_ids
        ids = []
        for _ in range(step.count):
            self._next_record += 1
            ids.append(f"s{self.seed}-r{self._next_record}")
        return tuple(ids)

    def apply(self, step: S.Step, *, continues_step: bool = False) -> Prediction:
        """Advance every branch by ``step`` and predict the settled state.
        ``continues_step``: ``step`` happens during the previous step (client traffic going
        on while it settles), so what is counted per step (quorum elections) goes on."""
        if isinstance(step, S.Produce):
            step = replace(step, record_ids=self._record_ids(step))
            for r in step.record_ids:
                self._record_acks[r] = step.acks
        # Quorum elections are counted per step (PartitionState.quorum_elected).
        if not continues_step:
            self.branches = [w if w.quorum_elections == 0 else replace(w, quorum_elections=0)
                             for w in self.branches]
        self.branches = _dedupe([d for w in self.branches
                                 for d in pending_disruptions(w, self.ctx_of(w))])
        if not self._after_produce:  # the followers have learned the HWM by now
            self.branches = _dedupe([w if w.hwm_before_produce is None else
                                     replace(w, hwm_before_produce=None, leader_at_produce=None)
                                     for w in self.branches])
        # Followers' fetches after the last produce that no observation confirmed: made or
        # not by the time this step's fault comes (World.fetch_floor); every world whole
        # first, so the branches kept under MAX_BRANCHES are the ones the model had.
        opened = [unfetched(w) for w in self.branches]
        unsure = {x for o in opened for x in o[1:]}
        #: What a follower surely held before the last produce, for a produce right after.
        held = {x: dict(w.fetch_floor) for w, o in zip(self.branches, opened, strict=True)
                for x in o if w.fetch_floor}
        self.branches = _dedupe([o[0] for o in opened] + [x for o in opened for x in o[1:]])
        lag_open = self._after_produce
        self._after_produce = isinstance(step, S.Produce)
        before = {id(w): w.partition_hwm() for w in self.branches}
        outcomes: list[tuple[World, Outcome]] = []
        for w in self.branches:
            for o in _fetched_after(apply_step(w, self.ctx_of(w), step), w in unsure,
                                    self.ctx_of(w)):
                x = with_leader_min_isr_view(w, with_leader_isr_view(w, o.world))
                if x.stale_unfetched:  # for this step only: a fetch not made yet may come
                    x = replace(x, stale_unfetched=frozenset())
                if isinstance(step, S.Produce):
                    floors = fetch_floors(w, x, held.get(w, {}))
                    x = x if x.fetch_floor == floors else replace(x, fetch_floor=floors)
                outcomes.append((w, replace(o, world=x)))
        new: list[World] = []
        for _, o in outcomes:
            if o.world not in new:
                new.append(o.world)
        if len(new) > MAX_BRANCHES:
            new = new[:MAX_BRANCHES]
        self.branches = new
        self.steps_applied += 1
        if lag_open and not self._after_produce and _instant(step, outcomes, self.ctx):
            # A step that changes no partition state settles at its first observation, in
            # far less than a follower's fetch round: the HWM the last produce reached may
            # still be unknown to the followers (fuzz-s1128-23 on 4.3.1: produce, a cut of a
            # stopped broker, then the leader killed; the new leader lagged).
            self._after_produce = True
        for w in new:
            for name, msg in check(w, elr_on(w, self.ctx)):
                line = f"step {self.steps_applied}: {name}: {msg}"
                if line not in self._violations:
                    self._violations.append(line)
        allowed: list[PartitionState] = []
        for w in new:
            s = project(w, shows_elr(w, self.ctx))
            if s not in allowed:
                allowed.append(s)
        must = frozenset.intersection(*(durable(w) for w in new)) if new else frozenset()
        acked_any = frozenset().union(*(frozenset(r for r, _ in w.acked) for w in new))
        hwm_moves = any(before[id(parent)] != o.world.partition_hwm() for parent, o in outcomes)
        unsupported = next((o.unsupported for _, o in outcomes if o.unsupported), None)
        expected = None
        if isinstance(step, S.Produce):
            kinds = {k for _, o in outcomes for _, k in o.acks}
            expected = kinds.pop() if len(kinds) == 1 else ("either" if kinds else None)
        refusals = {o.refused for _, o in outcomes if o.refused is not None}
        expected_refusal = refusals.pop() if len(refusals) == 1 else None
        vis = [visible(w) for w in new]
        notes: list[str] = []
        if isinstance(step, S.Await):
            want = await_state(step, allowed[0] if allowed else None)
            if want is not None and not any(want.matches(a) for a in allowed):
                notes.append(f"await expects {want.to_json()} but the model predicts otherwise")
        pred = Prediction(
            allowed=tuple(allowed),
            must_survive=must,
            hwm_may_move=hwm_moves,
            unsupported=unsupported,
            expected_acks=expected,
            may_see=frozenset().union(*vis) if vis else frozenset(),
            must_see=frozenset.intersection(*vis) if vis else frozenset(),
            at_risk=acked_any - must,
            notes=tuple(notes),
            must_read=tuple(must_read(w) for w in new),
            expected_refusal=expected_refusal,
        )
        self.last = pred
        return pred

    def ctx_of(self, w: World) -> Ctx:
        """The rules branch ``w`` steps under: the profile of the build its active
        controller runs (its decisions are that build's: each build ships its own
        QuorumController, apache/kafka metadata/src/main/java/org/apache/kafka/controller),
        with ``follow_builds``; ELR stays as the cluster was born (a build change alone
        finalizes no feature: the eligible.leader.replicas.version feature level is
        cluster state, FeatureControlManager). Without an active controller: the quorum's
        last leader's build, else the first controller's."""
        if not self.follow_builds or not w.builds:
            return self.ctx
        c = active_controller(w)
        if c is None:
            c = w.quorum_leader if w.quorum_leader is not None else w.controllers[0]
        version = build_of(w, c)
        if version is None:
            return self.ctx
        ctx = self._ctxs.get(version)
        if ctx is None:
            ctx = self._ctxs[version] = Ctx(self._rules_of(version), self.elr_on,
                                            rebalance=True, build_rules=self._rules_of,
                                            birth_profile=self.profile)
        return ctx

    def _rules_of(self, version: str) -> Profile:
        """The release profile of build ``version`` (profile_for_build)."""
        return get_profile(profile_for_build(version_tuple(version), self._elr_enabled))

    # -- observations -------------------------------------------------------------

    def allowed(self) -> tuple[PartitionState, ...]:
        out: list[PartitionState] = []
        for w in self.branches:
            s = project(w, shows_elr(w, self.ctx))
            if s not in out:
                out.append(s)
        return tuple(out)

    def explain(self, observed: PartitionState) -> str | None:
        """None if ``observed`` is allowed, else the first differing field with the
        predicted values and the observed one."""
        allowed = self.allowed()
        if any(a.matches(observed) for a in allowed):
            return None
        candidates = list(allowed)
        for name in PartitionState.FIELDS:
            ov = getattr(observed, name)
            if ov is None:
                continue
            if name == "replicas" and not ov:
                continue
            same = [a for a in candidates
                    if getattr(a, name) is None or getattr(a, name) == ov]
            if not same:
                vals: list[str] = []
                for a in candidates:
                    v = fmt_value(getattr(a, name))
                    if v not in vals:
                        vals.append(v)
                return f"{name}: predicted one of [{', '.join(vals)}], observed {fmt_value(ov)}"
            candidates = same
        return "observed state matches no single predicted state"

    def resolve(self, observed: PartitionState, acks: Mapping[str, int | None] = {},
                read: frozenset[str] | None = None) -> None:
        """Narrow to the branches matching ``observed`` and the records a consume read, and
        record real ack outcomes (record id -> offset, None = not acked)."""
        keep = [w for w in self.branches if project(w, shows_elr(w, self.ctx)).matches(observed)]
        if keep:
            self.branches = keep
        if read is not None:
            self.branches = [w for w in self.branches if _explains(w, read)] or self.branches
        if acks:
            new = []
            for w in self.branches:
                acked = {r: a for r, a in w.acked}
                for rid, off in acks.items():
                    if off is None:
                        acked.pop(rid, None)
                    else:
                        acked[rid] = self._record_acks.get(rid, "all")
                nw = replace(w, acked=tuple(sorted(acked.items())))
                if nw not in new:
                    new.append(nw)
            self.branches = new

    def must_survive(self) -> frozenset[str]:
        """Acked (acks=all) record ids that every current branch keeps readable."""
        if not self.branches:
            return frozenset()
        return frozenset.intersection(*(durable(w) for w in self.branches))

    def unread(self, lost: frozenset[str]) -> frozenset[str]:
        """Of the acked records a read missed (``lost``), those no current branch
        explains (``unread``)."""
        return unread(lost, self.must_survive(), [must_read(w) for w in self.branches])

    def violations(self) -> list[str]:
        return list(self._violations)

    def topic_deleted(self) -> bool:
        """Whether the partition's topic is deleted in every branch (nothing to read)."""
        return all(w.deleted for w in self.branches)

    def describe(self) -> str:
        """Human-readable state of every branch."""
        lines = []
        for i, w in enumerate(self.branches):
            p = w.partition
            s = project(w, shows_elr(w, self.ctx))
            head = f"[{i}] " if len(self.branches) > 1 else ""
            lines.append(
                f"{head}leader={fmt_value(p.leader)} epoch={p.leader_epoch} "
                f"ISR={fmt_value(p.isr)} ELR={fmt_value(s.elr)} "
                f"LastKnownELR={fmt_value(s.last_known_elr)} HWM={fmt_value(s.hwm)} "
                f"fenced={fmt_value(s.fenced)}")
            for b in w.brokers:
                state = ("down" if not b.alive else "fenced" if b.fenced else "up")
                lines.append(f"    broker {b.id}: {state} LEO={b.leo} HWM={b.hwm} "
                             f"log={[r for _, r in b.log]}")
        return "\n".join(lines)


def await_state(step: S.Await, base: PartitionState | None) -> PartitionState | None:
    """The expectation of an Await step as a PartitionState (unset fields: don't care)."""
    e = step.expect
    if not e:
        return None

    def ids(key: str) -> frozenset[int] | None:
        v = e.get(key)
        return None if v is None else frozenset(int(x) for x in v)

    leader: int | None = None
    if "leader" in e:
        leader = NO_LEADER if e["leader"] is None else int(e["leader"])
    return PartitionState(
        leader=leader,
        leader_epoch=None if e.get("leader_epoch") is None else int(e["leader_epoch"]),
        replicas=tuple(int(x) for x in e.get("replicas") or ()),
        isr=frozenset(int(x) for x in e["isr"]) if "isr" in e else (
            base.isr if base is not None else frozenset()),
        elr=ids("elr"),
        last_known_elr=ids("last_known_elr"),
        hwm=None if e.get("hwm") is None else int(e["hwm"]),
        fenced=ids("fenced"),
    )


def _fetched_after(outs: list[Outcome], unsure: bool, ctx: Ctx) -> list[Outcome]:
    """The outcomes of a step from a branch in which a follower had not fetched yet
    (``unsure``, World.fetch_floor), with the fetches a follower that can still reach its
    leader after the step has made: a step takes at least one observation, and a
    follower's fetch parked at the leader completes as soon as bytes are there
    (DelayedFetch.tryComplete), so only a step whose fault stopped the fetch keeps the
    branch apart. Steps that do not settle (a read, an await) settle such a branch here."""
    if not unsure:
        return outs
    calm = replace(ctx, rebalance=False)
    res: list[Outcome] = []
    for o in outs:
        for y in settle(o.world, calm):
            z = replace(o, world=y)
            if z not in res:
                res.append(z)
    return res


def _dedupe(worlds: list[World]) -> list[World]:
    out: list[World] = []
    for w in worlds:
        if w not in out:
            out.append(w)
    return out
