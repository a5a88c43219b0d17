"""Trace validation of a run: every committed record of the controllers' metadata logs
(archived under RUN_DIR/metadata/<node>/) replayed through reference.trace.replay.

The history supplies what the log cannot show: the cluster's brokers, which restarts
followed a hard kill (an unclean shutdown the controller should detect), whether an
unclean election was requested, and the static configs. State invariants that hold under
every profile feed the safety axis; every violation under a profile feeds that profile's
axis (release, or kip with its adopted deviations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.client import metadata_records
from harness.scenario.loader import Scenario
from reference.model.features import ELR
from reference.releases.profiles import Profile
from reference.trace.records import CommittedState, TraceContext, Violation
from reference.trace.replay import committed_prefix_agrees, validate

#: Invariants of KIP-966 that no release profile relaxes: a break is unsafe on any build.
SAFETY_RULES = ("LeaderInIsr", "LeaderIsLive", "IsrElrWithinReplicas", "ElrIsrDisjoint",
                "ElrEmptyAtMinIsr", "UncleanShutdownReplicaNotInElr", "EpochsNeverGoBack",
                "MetadataLogMatching")


@dataclass
class TraceLogs:
    """The decoded committed records of each controller that left a metadata log."""

    by_controller: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    #: KRaft epoch -> (leader id, append time ms of its LeaderChange record), from every
    #: controller's log (metadata_records.leader_changes).
    leaders: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def longest(self) -> tuple[int, list[dict[str, Any]]] | None:
        if not self.by_controller:
            return None
        return max(self.by_controller.items(), key=lambda kv: len(kv[1]))


def read_logs(run_dir: Path) -> TraceLogs:
    logs = TraceLogs()
    root = run_dir / "metadata"
    if root.is_dir():
        for node_dir in sorted(p for p in root.iterdir() if p.name.isdigit()):
            logs.by_controller[int(node_dir.name)] = metadata_records.read_log_dir(node_dir)
            for epoch, led in metadata_records.leader_changes(node_dir).items():
                logs.leaders.setdefault(epoch, led)
    return logs


def writer_builds(leaders: Mapping[int, tuple[int, int]], events: Iterable[Mapping[str, Any]],
                  birth: str) -> dict[int, str]:
    """KRaft epoch -> the build its leader ran: the version of that node's last ``upgrade``
    fault before the epoch's LeaderChange record (a node leads an epoch in one process, and
    the fault is recorded before the node stops: harness/nemesis/faults.py upgrade), else
    the birth build."""
    upgrades = sorted((float(e.get("t_wall", 0.0)), int(e["params"]["node"]),
                       str(e["params"]["version"])) for e in events
                      if e.get("kind") == "fault" and e.get("action") == "upgrade"
                      and "node" in (e.get("params") or {}))
    out: dict[int, str] = {}
    for epoch, (leader, t_ms) in leaders.items():
        version = birth
        for t, node, v in upgrades:
            if node == leader and t * 1000.0 <= t_ms:
                version = v
        out[epoch] = version
    return out


def writer_profiles(leaders: Mapping[int, tuple[int, int]], events: Iterable[Mapping[str, Any]],
                    birth: str, elr: bool) -> tuple[tuple[int, str], ...]:
    """TraceContext.writer_profiles: the epochs whose leader ran another build than the
    birth build, each with that build's profile (as reference Model.ctx_of chooses the
    model's rules from the active controller's build)."""
    from reference.model.upgrade import version_tuple
    from reference.releases.catalog import profile_for_build
    return tuple(sorted((epoch, profile_for_build(version_tuple(v), elr))
                        for epoch, v in writer_builds(leaders, events, birth).items()
                        if v != birth))


def unclean_registrations(events: Iterable[Mapping[str, Any]]) -> frozenset[tuple[int, int]]:
    """(broker, incarnation) of every restart that followed a hard kill; incarnation 2 is a
    broker's first restart (reference.trace.replay.TraceContext)."""
    last_down: dict[int, str] = {}
    incarnation: dict[int, int] = {}
    out: set[tuple[int, int]] = set()
    for e in events:
        if e.get("kind") != "fault" or "node" not in (e.get("params") or {}):
            continue
        node, action = int(e["params"]["node"]), e.get("action")
        if action in ("kill", "stop"):
            last_down[node] = str(action)
        elif action in ("restart", "upgrade"):
            if action == "upgrade":  # a clean stop first, unless the node was down already
                last_down.setdefault(node, "stop")
            incarnation[node] = incarnation.get(node, 1) + 1
            if last_down.pop(node, None) == "kill":
                out.add((node, incarnation[node]))
    return frozenset(out)


def context(scenario: Scenario, events: list[dict[str, Any]], profile: str | Profile,
            elr: bool) -> TraceContext:
    cfg = dict(scenario.cluster.broker_config)
    unclean_asked = any(getattr(s.step, "type", None) == "unclean" for s in scenario.steps)
    return TraceContext(
        profile=profile,
        min_isr_default=int(cfg.get("min.insync.replicas", "1")),
        unclean_leader_election_default=cfg.get(
            "unclean.leader.election.enable", "false").lower() == "true",
        brokers=tuple(range(1, scenario.cluster.brokers + 1)),
        unclean_election_requested=unclean_asked,
        elr_enabled=elr,
        elr_follows_level=any(getattr(s.step, "kind", None) == "feature"
                              and getattr(s.step, "name", None) == ELR for s in scenario.steps),
        unclean_registrations=unclean_registrations(events))


def memo(logs: TraceLogs, scenario: Scenario, events: list[dict[str, Any]],
         elr: bool, birth: str | None = None) -> Callable[[str | Profile], list[dict[str, Any]]]:
    """Violations under a profile, each profile judged once. ``birth``: the build the
    cluster was born on, when the run's rules follow the builds (runner
    ``follow_builds``): under the birth build's own profile (the release axis) each
    record is judged by its writer's build (``writer_profiles``); any other profile (the
    kip axis, a mutant) judges every record."""
    cache: dict[str | Profile, list[dict[str, Any]]] = {}
    own: str | None = None
    writers: tuple[tuple[int, str], ...] = ()
    if birth is not None:
        from reference.model.upgrade import version_tuple
        from reference.releases.catalog import profile_for_build
        own = profile_for_build(version_tuple(birth), elr)
        writers = writer_profiles(logs.leaders, events, birth, elr)

    def under(profile: str | Profile) -> list[dict[str, Any]]:
        if profile not in cache:
            ctx = context(scenario, events, profile, elr)
            name = profile.name if isinstance(profile, Profile) else profile
            if writers and name == own:
                ctx = replace(ctx, writer_profiles=writers)
            cache[profile] = judge(logs, ctx)
        return cache[profile]
    return under


def judge(logs: TraceLogs, ctx: TraceContext) -> list[dict[str, Any]]:
    """Violations of the longest controller log under ``ctx.profile``, plus disagreement
    between the controllers' logs on their committed prefix (every controller's log is
    archived and read), as JSON-able findings."""
    longest = logs.longest
    if longest is None:
        return []
    node, records = longest
    found = [finding(node, v) for v in validate(records, ctx).violations]
    if len(logs.by_controller) > 1:
        bad = committed_prefix_agrees(list(logs.by_controller.values()))
        if bad is not None:
            found.append(finding(None, bad))
    return found


def finding(controller: int | None, v: Violation) -> dict[str, Any]:
    record = v.record or {}
    t_ms = record.get("append_time_ms")
    return {"controller": controller, "offset": v.offset, "rule": v.rule,
            "citation": v.citation, "detail": v.detail,
            "record": {k: record.get(k) for k in ("type", "version", "data")},
            # not "partition": in the history that field is an int on every event kind
            "topic_partition": list(v.partition) if v.partition else None,
            "broker": v.broker,
            "t_wall": None if t_ms is None else t_ms / 1000.0,
            "before": _summary(v.before, v), "after": _summary(v.after, v)}


def safety_findings(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in found if f["rule"] in SAFETY_RULES]


def describe(found: list[dict[str, Any]], logs: TraceLogs) -> str:
    n = sum(len(r) for r in logs.by_controller.values())
    if not logs.by_controller:
        return "trace: no metadata log"
    head = f"trace: {n} records from controller(s) {sorted(logs.by_controller)}"
    if not found:
        return head + ", 0 violations"
    first = found[0]
    return (f"{head}, {len(found)} violation(s), first {first['rule']} at offset "
            f"{first['offset']}: {first['detail']}")


def _summary(state: CommittedState | None, v: Violation) -> dict[str, Any] | None:
    """The part of a committed state the violation is about."""
    if state is None:
        return None
    if v.partition is not None:
        for (tid, pid), p in state.partitions.items():
            if state.topic_name(tid) == v.partition[0] and pid == v.partition[1]:
                return {"leader": p.leader, "leader_epoch": p.leader_epoch,
                        "partition_epoch": p.partition_epoch, "replicas": list(p.replicas),
                        "isr": list(p.isr), "elr": list(p.elr),
                        "last_known_elr": list(p.last_known_elr),
                        "leader_recovery_state": p.leader_recovery_state}
    if v.broker is not None and v.broker in state.brokers:
        b = state.brokers[v.broker]
        return {"broker": b.id, "registered": b.registered, "epoch": b.epoch,
                "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown}
    return None
