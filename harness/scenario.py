"""Load and validate a scenario file (fixtures/scenarios/FORMAT.md).

A bad file raises ``ScenarioError`` whose message names the file, the line and the
reason, e.g. ``bad.yaml:14: steps[2].kill.broker: 7 is not a broker (brokers are 1..3)``.
Nothing here touches a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from reference import PROFILES, ClusterSpec, TopicSpec
from reference import steps as S

from .errors import HarnessError

FEATURES = ("elr", "describe_topic_partitions", "unclean_recovery", "kip1303")
NAME_RE = re.compile(r"^[a-z0-9-]+$")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
FIRST_CONTROLLER = 100


class ScenarioError(HarnessError):
    """A scenario file is invalid: the message names the file, the line and the reason."""


@dataclass(frozen=True)
class Requires:
    min_version: tuple[int, int, int] | None = None
    max_version: tuple[int, int, int] | None = None
    features: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cluster:
    brokers: int
    controllers: int = 1
    elr: bool | None = None  # None: the build's default
    broker_config: Mapping[str, str] = field(default_factory=dict)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> tuple[int, ...]:
        return tuple(range(FIRST_CONTROLLER, FIRST_CONTROLLER + self.controllers))


@dataclass(frozen=True)
class Topic:
    name: str
    replicas: tuple[int, ...]
    min_insync_replicas: int
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ScenarioStep:
    """One step: the reference step object, its kind, the original mapping and line."""

    step: S.Step
    kind: str
    mapping: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class Scenario:
    version: int
    name: str
    description: str
    seed: int
    profile: str
    requires: Requires
    cluster: Cluster
    topic: Topic
    steps: tuple[ScenarioStep, ...]
    path: str = ""

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(brokers=self.cluster.broker_ids,
                           controllers=self.cluster.controller_ids,
                           broker_config=dict(self.cluster.broker_config))

    def topic_spec(self) -> TopicSpec:
        return TopicSpec(name=self.topic.name, replicas=self.topic.replicas,
                         min_insync_replicas=self.topic.min_insync_replicas,
                         config=dict(self.topic.config))


# --- node helpers -----------------------------------------------------------------

_constructor = yaml.constructor.SafeConstructor()


class _Ctx:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: Node | None, where: str, reason: str) -> ScenarioError:
        line = node.start_mark.line + 1 if node is not None else 1
        prefix = f"{where}: " if where else ""
        return ScenarioError(f"{self.path}:{line}: {prefix}{reason}")

    def mapping(self, node: Node, where: str) -> dict[str, tuple[Node, Node]]:
        if isinstance(node, ScalarNode) and node.tag.endswith(":null"):
            return {}
        if not isinstance(node, MappingNode):
            raise self.fail(node, where, "expected a mapping")
        out: dict[str, tuple[Node, Node]] = {}
        for k, v in node.value:
            key = self.scalar(k, where)
            if not isinstance(key, str):
                raise self.fail(k, where, f"key {key!r} must be a string")
            if key in out:
                raise self.fail(k, where, f"duplicate key {key!r}")
            out[key] = (k, v)
        return out

    def scalar(self, node: Node, where: str) -> Any:
        if not isinstance(node, ScalarNode):
            raise self.fail(node, where, "expected a single value")
        return _constructor.construct_object(node, deep=True)

    def sequence(self, node: Node, where: str) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.fail(node, where, "expected a list")
        return list(node.value)

    def unknown(self, items: dict[str, tuple[Node, Node]], allowed: tuple[str, ...],
                where: str) -> None:
        for key, (k, _) in items.items():
            if key not in allowed:
                raise self.fail(k, where, f"unknown key {key!r} (allowed: {', '.join(allowed)})")

    def required(self, items: dict[str, tuple[Node, Node]], key: str, parent: Node,
                 where: str) -> Node:
        if key not in items:
            raise self.fail(parent, where, f"missing required key {key!r}")
        return items[key][1]

    def int_(self, node: Node, where: str, minimum: int | None = None) -> int:
        v = self.scalar(node, where)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(node, where, f"expected an integer, got {v!r}")
        if minimum is not None and v < minimum:
            raise self.fail(node, where, f"must be >= {minimum}, got {v}")
        return v

    def str_(self, node: Node, where: str) -> str:
        v = self.scalar(node, where)
        if not isinstance(v, str):
            raise self.fail(node, where, f"expected a string, got {v!r}")
        return v

    def bool_(self, node: Node, where: str) -> bool:
        v = self.scalar(node, where)
        if not isinstance(v, bool):
            raise self.fail(node, where, f"expected true or false, got {v!r}")
        return v

    def props(self, node: Node, where: str) -> dict[str, str]:
        """A properties mapping: string keys, scalar values rendered as strings."""
        out: dict[str, str] = {}
        for key, (_, v) in self.mapping(node, where).items():
            val = self.scalar(v, f"{where}.{key}")
            if val is None or isinstance(val, list | dict):
                raise self.fail(v, f"{where}.{key}", "expected a scalar value")
            out[key] = ("true" if val else "false") if isinstance(val, bool) else str(val)
        return out

    def version(self, node: Node, where: str) -> tuple[int, int, int]:
        v = self.scalar(node, where)
        if not isinstance(v, str) or not VERSION_RE.match(v):
            raise self.fail(node, where, f"expected a quoted version like \"4.0.0\", got {v!r}")
        a, b, c = (int(x) for x in v.split("."))
        return (a, b, c)


# --- loader ----------------------------------------------------------------------

TOP_KEYS = ("version", "name", "description", "seed", "profile", "requires", "cluster", "topic",
            "steps")


def load_scenario(path: str | Path) -> Scenario:
    """Parse and validate a scenario file; raise ScenarioError on any problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"{p}:1: cannot read: {e.strerror or e}") from None
    return parse_scenario(text, str(p))


def parse_scenario(text: str, path: str = "<scenario>") -> Scenario:
    ctx = _Ctx(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ScenarioError(f"{path}:{line}: invalid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise ScenarioError(f"{path}:1: invalid YAML: {e}") from None
    if root is None:
        raise ScenarioError(f"{path}:1: empty file")
    top = ctx.mapping(root, "")
    ctx.unknown(top, TOP_KEYS, "")

    version = ctx.int_(ctx.required(top, "version", root, ""), "version")
    if version != 1:
        raise ctx.fail(top["version"][1], "version", f"unsupported format version {version} "
                       "(this harness reads version 1)")
    name_node = ctx.required(top, "name", root, "")
    name = ctx.str_(name_node, "name")
    if not NAME_RE.match(name):
        raise ctx.fail(name_node, "name", f"{name!r} must match [a-z0-9-]+")
    description = ctx.str_(top["description"][1], "description") if "description" in top else ""
    seed = ctx.int_(top["seed"][1], "seed", 0) if "seed" in top else 0
    profile = "auto"
    if "profile" in top:
        node = top["profile"][1]
        profile = ctx.str_(node, "profile")
        if profile != "auto" and profile not in PROFILES:
            raise ctx.fail(node, "profile", f"unknown profile {profile!r} (auto or one of: "
                           f"{', '.join(sorted(PROFILES))})")
    requires = _requires(ctx, top["requires"][1]) if "requires" in top else Requires()
    cluster = _cluster(ctx, ctx.required(top, "cluster", root, ""))
    topic = _topic(ctx, ctx.required(top, "topic", root, ""), cluster)
    steps_node = ctx.required(top, "steps", root, "")
    steps = _steps(ctx, steps_node, cluster)
    return Scenario(version=version, name=name, description=description, seed=seed,
                    profile=profile, requires=requires, cluster=cluster, topic=topic,
                    steps=tuple(steps), path=path)


def _requires(ctx: _Ctx, node: Node) -> Requires:
    items = ctx.mapping(node, "requires")
    ctx.unknown(items, ("min_version", "max_version", "features"), "requires")
    lo = ctx.version(items["min_version"][1], "requires.min_version") \
        if "min_version" in items else None
    hi = ctx.version(items["max_version"][1], "requires.max_version") \
        if "max_version" in items else None
    if lo is not None and hi is not None and lo > hi:
        raise ctx.fail(items["max_version"][1], "requires.max_version",
                       "max_version is lower than min_version")
    feats: list[str] = []
    if "features" in items:
        for i, f in enumerate(ctx.sequence(items["features"][1], "requires.features")):
            v = ctx.str_(f, f"requires.features[{i}]")
            if v not in FEATURES:
                raise ctx.fail(f, f"requires.features[{i}]",
                               f"unknown feature {v!r} (known: {', '.join(FEATURES)})")
            feats.append(v)
    return Requires(lo, hi, tuple(feats))


def _cluster(ctx: _Ctx, node: Node) -> Cluster:
    items = ctx.mapping(node, "cluster")
    ctx.unknown(items, ("brokers", "controllers", "elr", "broker_config"), "cluster")
    brokers = ctx.int_(ctx.required(items, "brokers", node, "cluster"), "cluster.brokers", 1)
    if brokers >= FIRST_CONTROLLER:
        raise ctx.fail(items["brokers"][1], "cluster.brokers",
                       f"at most {FIRST_CONTROLLER - 1} brokers")
    controllers = ctx.int_(items["controllers"][1], "cluster.controllers", 1) \
        if "controllers" in items else 1
    elr = ctx.bool_(items["elr"][1], "cluster.elr") if "elr" in items else None
    cfg = ctx.props(items["broker_config"][1], "cluster.broker_config") \
        if "broker_config" in items else {}
    return Cluster(brokers, controllers, elr, cfg)


def _broker_list(ctx: _Ctx, node: Node, where: str, cluster: Cluster) -> tuple[int, ...]:
    out: list[int] = []
    for i, n in enumerate(ctx.sequence(node, where)):
        b = ctx.int_(n, f"{where}[{i}]")
        _check_broker(ctx, n, f"{where}[{i}]", b, cluster)
        if b in out:
            raise ctx.fail(n, f"{where}[{i}]", f"broker {b} listed twice")
        out.append(b)
    if not out:
        raise ctx.fail(node, where, "must list at least one broker")
    return tuple(out)


def _check_broker(ctx: _Ctx, node: Node, where: str, b: int, cluster: Cluster) -> None:
    if b not in cluster.broker_ids:
        raise ctx.fail(node, where, f"{b} is not a broker (brokers are 1..{cluster.brokers})")


def _check_node(ctx: _Ctx, node: Node, where: str, n: int, cluster: Cluster) -> None:
    if n not in cluster.broker_ids and n not in cluster.controller_ids:
        raise ctx.fail(node, where, f"{n} is not a node (brokers 1..{cluster.brokers}, "
                       f"controllers {FIRST_CONTROLLER}..{cluster.controller_ids[-1]})")


def _topic(ctx: _Ctx, node: Node, cluster: Cluster) -> Topic:
    items = ctx.mapping(node, "topic")
    ctx.unknown(items, ("name", "replicas", "min_insync_replicas", "config"), "topic")
    name = ctx.str_(ctx.required(items, "name", node, "topic"), "topic.name")
    if not name or not re.match(r"^[A-Za-z0-9._-]+$", name):
        raise ctx.fail(items["name"][1], "topic.name", f"invalid topic name {name!r}")
    replicas = _broker_list(ctx, ctx.required(items, "replicas", node, "topic"),
                            "topic.replicas", cluster)
    mir = ctx.int_(ctx.required(items, "min_insync_replicas", node, "topic"),
                   "topic.min_insync_replicas", 1)
    cfg = ctx.props(items["config"][1], "topic.config") if "config" in items else {}
    if "min.insync.replicas" in cfg:
        raise ctx.fail(items["config"][1], "topic.config",
                       "set min.insync.replicas with topic.min_insync_replicas")
    return Topic(name, replicas, mir, cfg)


# --- steps -----------------------------------------------------------------------

StepParser = Callable[[_Ctx, dict[str, tuple[Node, Node]], Node, str, Cluster], S.Step]


def _produce(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
             ) -> S.Step:
    c.unknown(it, ("count", "acks"), w)
    count = c.int_(it["count"][1], f"{w}.count", 1) if "count" in it else 1
    acks = "all"
    if "acks" in it:
        v = c.scalar(it["acks"][1], f"{w}.acks")
        if isinstance(v, bool) or str(v) not in ("0", "1", "all"):
            raise c.fail(it["acks"][1], f"{w}.acks", f"acks must be 0, 1 or all, got {v!r}")
        acks = str(v)
    return S.Produce(count=count, acks=acks)


def _empty(kind: type) -> StepParser:
    def parse(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
              ) -> S.Step:
        c.unknown(it, (), w)
        step: S.Step = kind()
        return step
    return parse


def _isolate(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
             ) -> S.Step:
    c.unknown(it, ("node",), w)
    node = c.required(it, "node", n, w)
    v = c.int_(node, f"{w}.node")
    _check_node(c, node, f"{w}.node", v, cl)
    return S.Isolate(v)


def _partition(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
               ) -> S.Step:
    c.unknown(it, ("groups",), w)
    gnode = c.required(it, "groups", n, w)
    groups: list[tuple[int, ...]] = []
    seen: set[int] = set()
    for i, g in enumerate(c.sequence(gnode, f"{w}.groups")):
        members: list[int] = []
        for j, x in enumerate(c.sequence(g, f"{w}.groups[{i}]")):
            v = c.int_(x, f"{w}.groups[{i}][{j}]")
            _check_node(c, x, f"{w}.groups[{i}][{j}]", v, cl)
            if v in seen:
                raise c.fail(x, f"{w}.groups[{i}][{j}]", f"node {v} is in two groups")
            seen.add(v)
            members.append(v)
        if not members:
            raise c.fail(g, f"{w}.groups[{i}]", "empty group")
        groups.append(tuple(members))
    if len(groups) < 2:
        raise c.fail(gnode, f"{w}.groups", "need at least two groups")
    return S.Partition(tuple(groups))


def _cut(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster) -> S.Step:
    c.unknown(it, ("src", "dst", "direction"), w)
    vals = []
    for key in ("src", "dst"):
        node = c.required(it, key, n, w)
        v = c.int_(node, f"{w}.{key}")
        _check_node(c, node, f"{w}.{key}", v, cl)
        vals.append(v)
    if vals[0] == vals[1]:
        raise c.fail(it["dst"][1], f"{w}.dst", "src and dst are the same node")
    direction = "both"
    if "direction" in it:
        direction = c.str_(it["direction"][1], f"{w}.direction")
        if direction not in ("both", "oneway"):
            raise c.fail(it["direction"][1], f"{w}.direction",
                         f"direction must be both or oneway, got {direction!r}")
    return S.Cut(vals[0], vals[1], direction)


def _broker_step(kind: type) -> StepParser:
    def parse(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
              ) -> S.Step:
        c.unknown(it, ("broker",), w)
        node = c.required(it, "broker", n, w)
        b = c.int_(node, f"{w}.broker")
        _check_broker(c, node, f"{w}.broker", b, cl)
        step: S.Step = kind(b)
        return step
    return parse


def _lose(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster) -> S.Step:
    c.unknown(it, ("broker", "offset"), w)
    node = c.required(it, "broker", n, w)
    b = c.int_(node, f"{w}.broker")
    _check_broker(c, node, f"{w}.broker", b, cl)
    off = c.int_(c.required(it, "offset", n, w), f"{w}.offset", 0)
    return S.LoseUnflushed(b, off)


def _local_log(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
               ) -> S.Step:
    c.unknown(it, ("broker", "age_ms", "size_bytes"), w)
    node = c.required(it, "broker", n, w)
    b = c.int_(node, f"{w}.broker")
    _check_broker(c, node, f"{w}.broker", b, cl)
    age = c.int_(it["age_ms"][1], f"{w}.age_ms", 0) if "age_ms" in it else None
    size = c.int_(it["size_bytes"][1], f"{w}.size_bytes", 0) if "size_bytes" in it else None
    if age is None and size is None:
        raise c.fail(n, w, "local_log needs age_ms, size_bytes or both")
    return S.ReportLocalLog(b, age, size)


def _alter(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster) -> S.Step:
    c.unknown(it, ("scope", "config"), w)
    snode = c.required(it, "scope", n, w)
    scope = c.str_(snode, f"{w}.scope")
    if scope not in ("topic", "cluster"):
        raise c.fail(snode, f"{w}.scope", f"scope must be topic or cluster, got {scope!r}")
    cnode = c.required(it, "config", n, w)
    cfg = c.props(cnode, f"{w}.config")
    if not cfg:
        raise c.fail(cnode, f"{w}.config", "no config to alter")
    if "min.insync.replicas" in cfg:
        v = cfg["min.insync.replicas"]
        if not v.isdigit() or int(v) < 1:
            raise c.fail(cnode, f"{w}.config.min.insync.replicas",
                         f"must be a positive integer, got {v!r}")
    return S.AlterConfig(scope, cfg)


def _elect(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster) -> S.Step:
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
        _check_broker(c, node, f"{w}.broker", broker, cl)
    elif "broker" in it:
        raise c.fail(it["broker"][0], f"{w}.broker", "broker is only for type designated")
    return S.Elect(kind, broker)


def _reassign(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster
              ) -> S.Step:
    c.unknown(it, ("replicas",), w)
    return S.Reassign(_broker_list(c, c.required(it, "replicas", n, w), f"{w}.replicas", cl))


AWAIT_KEYS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
              "fenced", "timeout_s")


def _await(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: Cluster) -> S.Step:
    c.unknown(it, AWAIT_KEYS, w)
    expect: dict[str, Any] = {}
    timeout = 30.0
    for key, (_, v) in it.items():
        where = f"{w}.{key}"
        if key == "timeout_s":
            t = c.scalar(v, where)
            if isinstance(t, bool) or not isinstance(t, int | float) or t <= 0:
                raise c.fail(v, where, f"expected a positive number of seconds, got {t!r}")
            timeout = float(t)
        elif key == "leader":
            val = c.scalar(v, where)
            if val is not None:
                val = c.int_(v, where)
                _check_broker(c, v, where, val, cl)
            expect[key] = val
        elif key in ("leader_epoch", "hwm"):
            expect[key] = c.int_(v, where, 0)
        else:
            ids: list[int] = []
            for i, x in enumerate(c.sequence(v, where)):
                b = c.int_(x, f"{where}[{i}]")
                _check_broker(c, x, f"{where}[{i}]", b, cl)
                ids.append(b)
            expect[key] = ids
    return S.Await(expect, timeout)


STEP_PARSERS: dict[str, StepParser] = {
    "produce": _produce,
    "consume": _empty(S.Consume),
    "isolate": _isolate,
    "partition": _partition,
    "cut": _cut,
    "heal": _empty(S.Heal),
    "kill": _broker_step(S.Kill),
    "lose_unflushed": _lose,
    "stop": _broker_step(S.Stop),
    "restart": _broker_step(S.Restart),
    "local_log": _local_log,
    "alter_config": _alter,
    "elect": _elect,
    "reassign": _reassign,
    "await": _await,
}


def _plain(node: Node) -> Any:
    """The original mapping of a step as plain Python data."""
    return _constructor.construct_object(node, deep=True)


def _steps(ctx: _Ctx, node: Node, cluster: Cluster) -> list[ScenarioStep]:
    out: list[ScenarioStep] = []
    killed: set[int] = set()
    for i, item in enumerate(ctx.sequence(node, "steps")):
        where = f"steps[{i}]"
        items = ctx.mapping(item, where)
        if len(items) != 1:
            raise ctx.fail(item, where, "a step is a mapping with exactly one key, got "
                           f"{len(items)} ({', '.join(items) or 'none'})")
        ((kind, (knode, vnode)),) = items.items()
        parser = STEP_PARSERS.get(kind)
        if parser is None:
            raise ctx.fail(knode, where, f"unknown step {kind!r} (one of "
                           f"{', '.join(STEP_PARSERS)})")
        params = ctx.mapping(vnode, f"{where}.{kind}")
        step = parser(ctx, params, item, f"{where}.{kind}", cluster)
        if isinstance(step, S.Kill | S.Stop):
            killed.add(step.broker)
        elif isinstance(step, S.Restart):
            killed.discard(step.broker)
        elif isinstance(step, S.LoseUnflushed) and step.broker not in killed:
            raise ctx.fail(item, where, f"lose_unflushed of broker {step.broker} must follow a "
                           "kill of that broker (before its restart)")
        mapping = _plain(item)
        out.append(ScenarioStep(step, kind, mapping, item.start_mark.line + 1))
    if not out:
        raise ctx.fail(node, "steps", "no steps")
    return out
