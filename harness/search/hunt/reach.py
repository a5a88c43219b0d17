"""Coverage: what the real broker reached in one run (docs/HUNT.md "Coverage").

**Coverage** (per build). After every run that did not end in ERROR (generated, re-run or
shrink attempt), what the real broker reached is read from its history (``reach_of_run``):

- transitions: the named KIP-966 transitions of reference/search/transitions.py between
  consecutive step-end observations, partition by partition (harness/judge/transitions.py,
  read as `kafka-chaos mutate` reads them, but from every judged run, not only conforming
  ones);
- trace rules: the rules of reference/trace/rules.py for which the run's committed metadata
  log (the longest controller log, replayed as harness/judge/trace_check.py replays it) holds
  a case to decide (``rules_reached``: e.g. ElrElectionOnlyWithEmptyIsr needs an election
  from the ELR, ClearElrOnlyOnMinIsrChange a ClearElrRecord, MetadataLogMatching two
  controller logs). Reached is not "told from its flip": `kafka-chaos mutate` measures that.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.search import fuzz
from harness.search.hunt.classification import kip_of_meta
from reference.model.state import NO_LEADER
from reference.search.transitions import TRANSITIONS
from reference.trace import rules as trace_rules
from reference.trace.records import Record, TraceContext, batch_of, data, initial_state
from reference.trace.replay import profile_of, replay

RULE_NAMES: tuple[str, ...] = tuple(trace_rules.RULES)
TRANSITION_NAMES: tuple[str, ...] = tuple(TRANSITIONS)


@dataclass(frozen=True)
class Reach:
    transitions: frozenset[str] = frozenset()
    rules: frozenset[str] = frozenset()
    #: Cited deviations the kip axis adopted to explain the run: behaviours of the build
    #: that differ from the KIP, several of them bugs a later release fixed (KAFKA-12670's
    #: ignored unclean.leader.election.enable, the reassignment KAFKA-19975 unblocked).
    deviations: frozenset[str] = frozenset()

    def features(self) -> frozenset[str]:
        return frozenset({f"transition:{t}" for t in self.transitions}
                         | {f"rule:{r}" for r in self.rules}
                         | {f"deviation:{d}" for d in self.deviations})


def rules_reached(records: Sequence[Record], ctx: TraceContext) -> frozenset[str]:
    """The trace rules for which ``records`` (one controller's committed log) hold a case to
    decide: the change, state or record each rule judges. Pure."""
    if not records:
        return frozenset()
    profile = profile_of(ctx)
    states = replay(records, ctx)
    start = initial_state(ctx)
    ops = trace_rules.operations(records, states, start)
    out = {"ReplayConsistency"}
    # A topic's creation writes its configs and a ClearElrRecord: no change to decide.
    creating = {batch_of(r) for r in records if r.get("type") == "TOPIC_RECORD"}
    for i, rec in enumerate(records):
        before = states[i - 1] if i else start
        after = states[i]
        elr = trace_rules.elr_on(before, profile, ctx)
        kind = rec.get("type")
        snapshot = rec.get("source") == "snapshot"
        if kind == "PARTITION_CHANGE_RECORD" and not snapshot:
            key = (str(data(rec).get("topicId")), int(data(rec).get("partitionId", -1)))
            p, q = before.partitions.get(key), after.partitions.get(key)
            if p is not None and q is not None:
                step = trace_rules.Step(records, i, before, after, ops[i], profile, ctx, elr)
                out |= _change_rules(p, q, trace_rules.analyse(step, key, p, q).kind, elr)
        elif kind == "CLEAR_ELR_RECORD" and batch_of(rec) not in creating:
            out.add("ClearElrOnlyOnMinIsrChange")
        elif kind == "CONFIG_RECORD" and data(rec).get("name") == "min.insync.replicas" \
                and elr and batch_of(rec) not in creating:
            out.add("MinIsrChangeClearsElr")
        elif kind == "REGISTER_BROKER_RECORD" and elr:
            b = after.brokers.get(int(data(rec).get("brokerId", -1)))
            if b is not None and (b.unclean_shutdown or (b.id, b.incarnations)
                                  in ctx.unclean_registrations):
                out.add("UncleanShutdownReplicaNotInElr")
        for q in after.partitions.values():
            if q.elr:
                out |= {"ElrIsrDisjoint", "ElrEmptyAtMinIsr", "IsrElrWithinReplicas"}
            if q.last_known_elr:
                out.add("LastKnownElrShape")
            inactive = [r for r in q.replicas if r in after.brokers and not after.brokers[r].active]
            if inactive:
                out.add("FencedReplicaNotInIsr")
            # A replica's broker stops being active: who may lead is decided again.
            if any(before.brokers[r].active and not after.brokers[r].active for r in q.replicas
                   if r in before.brokers and r in after.brokers):
                out.add("LeaderIsLive")
    return frozenset(out)


def _change_rules(p: Any, q: Any, kind: str, elr: bool) -> set[str]:
    """The change rules one partition change (p -> q, election ``kind`` as the validator
    reads it) gives something to decide."""
    out = {"EpochsNeverGoBack", "LeaderEpochBump"}
    if set(q.isr) - set(p.isr):
        out.add("IsrJoinOnlyLive")
    if set(p.isr) - set(q.isr) or set(q.elr) - set(p.elr):
        out.add("ElrJoinOnlyFromIsrUnderMinIsr" if elr else "NoElrWhenDisabled")
    if set(p.elr) - set(q.elr):
        out.add("ElrMembersRetained")
    if q.leader != p.leader and q.leader >= 0:
        out |= {"NewLeaderIsLive", "LeaderInIsr", "ElectionFollowsAssignmentOrder"}
    if kind == "elr":
        out.add("ElrElectionOnlyWithEmptyIsr")
    if kind == "unclean":
        out |= {"UncleanElectionOnlyWhenAllowed", "UncleanElectionMarksRecovering"}
    if q.leader == NO_LEADER != p.leader:
        out.add("LeaderlessOnlyWithoutCandidate")
        if not elr:
            out.add("IsrNotEmptyWhenElrDisabled")
    if p.leader_recovery_state != q.leader_recovery_state:
        out.add("LeaderRecoveryStateChange")
    if p.last_known_elr != q.last_known_elr or (elr and q.leader == NO_LEADER != p.leader):
        out.add("LastKnownElrUpdate")
    if set(q.replicas) != set(p.replicas):
        out.add("IsrElrWithinReplicas")
    return out


def reach_of_outcome(out: fuzz.Outcome) -> Reach:
    return reach_of_run(out.run_dir) if out.run_dir is not None else Reach()


def reach_of_run(run_dir: Path) -> Reach:
    """What a recorded run reached: transitions per partition and trace rules (I/O)."""
    from harness.infra.history import read_events
    from harness.judge import trace_check
    from harness.judge.lanes import lane_events, lanes
    from harness.judge.transitions import observed_transitions
    from harness.scenario.loader import load_scenario
    meta = json.loads((run_dir / "run.json").read_text())
    events = list(read_events(run_dir))
    scenario = load_scenario(run_dir / "scenario.yaml")
    seen: set[str] = set()
    for ln in lanes(scenario):
        seen |= observed_transitions(lane_events(events, scenario, ln),
                                     ln.scenario.topic.min_insync_replicas)
    logs = trace_check.read_logs(run_dir)
    rules: set[str] = set()
    longest = logs.longest
    if longest is not None:
        ctx = replace(trace_check.context(scenario, events, str(meta.get("profile") or "kip966"),
                                          False), elr_enabled=None)
        rules |= rules_reached(longest[1], ctx)
        if len(logs.by_controller) > 1:
            rules.add("MetadataLogMatching")
    return Reach(frozenset(seen), frozenset(rules), frozenset(kip_of_meta(meta)[1]))
