"""Steps through the controller and the replicas' reports: alter_config, elect, reassign,
local_log (KIP-1303)."""

from __future__ import annotations

from yaml.nodes import Node

from harness.client import admin
from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.scenario.nodes import (
    MAX_LONG,
    Items,
    Reader,
    broker_list,
    check_broker,
    check_not_owned,
)
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from harness.scenario.steps.processes import parse_broker
from harness.scenario.topic_spec import refuse_tiered
from reference.model import steps as S
from reference.search import generators as G

SUPPORTED_ELECTIONS = ("preferred", "unclean")


def _parse_alter(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.AlterConfig:
    c.unknown(it, ("scope", "config"), w)
    snode = c.required(it, "scope", n, w)
    scope = c.str_(snode, f"{w}.scope")
    if scope not in ("topic", "cluster"):
        raise c.fail(snode, f"{w}.scope", f"scope must be topic or cluster, got {scope!r}")
    cnode = c.required(it, "config", n, w)
    cfg = c.props(cnode, f"{w}.config")
    if not cfg:
        raise c.fail(cnode, f"{w}.config", "no config to alter")
    if scope == "cluster":
        check_not_owned(c, cnode, f"{w}.config", cfg)
    refuse_tiered(c, cnode, f"{w}.config", scope, cfg, cl)
    return S.AlterConfig(scope, cfg)


def _alter(s: Session, at: Target, step: S.AlterConfig, out: StepOutcome) -> None:
    admin.alter_config(s.observer, step.scope, at.topic, step.config)


def _parse_elect(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Elect:
    c.unknown(it, ("type", "broker"), w)
    tnode = c.required(it, "type", n, w)
    kind = c.str_(tnode, f"{w}.type")
    if kind not in S.ELECTION_TYPES:
        raise c.fail(tnode, f"{w}.type",
                     f"unknown election type {kind!r} (one of {', '.join(S.ELECTION_TYPES)})")
    broker = None
    if kind == "designated":
        node = c.required(it, "broker", n, w)
        broker = c.int_(node, f"{w}.broker")
        check_broker(c, node, f"{w}.broker", broker, cl)
    elif "broker" in it:
        raise c.fail(it["broker"][0], f"{w}.broker", "broker is only for type designated")
    return S.Elect(kind, broker)


def _elect(s: Session, at: Target, step: S.Elect, out: StepOutcome) -> None:
    if step.type not in SUPPORTED_ELECTIONS:
        out.unsupported = (f"election type {step.type} (KIP-966 part 2 / "
                           "kafka-leader-election.sh LONGEST_LOG_* / DESIGNATION) is not in "
                           "any Apache Kafka release")
        return
    out.note = admin.elect_leaders(s.observer, step.type, at.topic, at.partition)


def _parse_reassign(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> S.Reassign:
    """``{replicas: [...]}`` (a target) or ``{cancel: true}`` (revert), not both."""
    c.unknown(it, ("replicas", "cancel"), w)
    if "cancel" in it:
        cnode = it["cancel"][1]
        if c.scalar(cnode, f"{w}.cancel") is not True:
            raise c.fail(cnode, f"{w}.cancel", "cancel must be true (leave it out to reassign)")
        if "replicas" in it:
            raise c.fail(it["replicas"][0], f"{w}.replicas",
                         "replicas and cancel exclude each other")
        return S.Reassign(cancel=True)
    if "replicas" not in it:
        raise c.fail(n, w, "reassign needs replicas: [...] or cancel: true")
    return S.Reassign(broker_list(c, it["replicas"][1], f"{w}.replicas", cl))


def _reassign(s: Session, at: Target, step: S.Reassign, out: StepOutcome) -> None:
    out.note = admin.reassign(s.observer, at.topic, None if step.cancel else list(step.replicas),
                              at.partition)


def _parse_local_log(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape
                     ) -> S.ReportLocalLog:
    b = parse_broker(c, it, n, w, cl, ("age_ms", "size_bytes"))
    age = c.int_(it["age_ms"][1], f"{w}.age_ms", 0, MAX_LONG) if "age_ms" in it else None
    size = c.int_(it["size_bytes"][1], f"{w}.size_bytes", 0, MAX_LONG) \
        if "size_bytes" in it else None
    if age is None and size is None:
        raise c.fail(n, w, "local_log needs age_ms, size_bytes or both")
    return S.ReportLocalLog(b, age, size)


def _local_log(s: Session, at: Target, step: S.ReportLocalLog, out: StepOutcome) -> None:
    out.unsupported = ("local_log (KIP-1303 local-log facts) needs a follower bootstrapped "
                       "from the last tiered offset (tiered storage, KIP-1023) on a build that "
                       "reports localLogStartTimestamp/localLogSizeBytes; the harness cannot "
                       "produce one yet")


KINDS = (
    StepKind("local_log", "local_log: {broker: N, age_ms: A, size_bytes: S}: KIP-1303 facts "
             "the replica reports", _parse_local_log, _local_log, on_partitions=True),
    StepKind("alter_config", "alter_config: {scope: topic|cluster, config: {...}}: "
             "IncrementalAlterConfigs (scope topic with several topics: topic: NAME)",
             _parse_alter, _alter, on_topic=True, generator=G.ALTER_CONFIG),
    StepKind("elect", "elect: {type: preferred|unclean|..., broker: N}: ElectLeaders",
             _parse_elect, _elect, on_partitions=True, generator=G.ELECT),
    StepKind("reassign", "reassign: {replicas: [...]} | {cancel: true}: "
             "AlterPartitionReassignments (cancel: revert the ongoing one)",
             _parse_reassign, _reassign, on_partitions=True, generator=G.REASSIGN),
)
