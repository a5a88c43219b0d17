"""Load and validate a scenario file (fixtures/scenarios/FORMAT.md).

A bad file raises ``ScenarioError`` whose message names the file, the line and the
reason, e.g. ``bad.yaml:14: steps[2].kill.broker: 7 is not a broker (brokers are 1..3)``.
Validation is the single gate: a file that loads is one ``predict`` and ``run`` take
(within the bounds below, which FORMAT.md lists); any other input is a ScenarioError,
never another exception. Nothing here touches a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from yaml.nodes import Node

from harness.client.traffic import TrafficSpec
from harness.cluster.topology import CONTROLLER_COUNTS, MAX_BROKERS, ClusterShape
from harness.scenario import steps as step_kinds
from harness.scenario.birth import KEYS as BIRTH_KEYS
from harness.scenario.birth import parse_birth
from harness.scenario.declared_names import NAME_KEYS, declared_names
from harness.scenario.nodes import (
    FEATURES,
    MAX_FILE_BYTES,
    MAX_LONG,
    MAX_NAME,
    MAX_RECORDS,
    MAX_STEPS,
    NAME_RE,
    Composer,
    Items,
    Reader,
    ScenarioError,
    check_not_owned,
)
from harness.scenario.steps.topics import as_declared, grow, topic_life, with_topic
from harness.scenario.topic_spec import (
    MAX_LANES,
    MAX_PARTITIONS,
    MAX_TOPICS,
    Topic,
    TopicPlan,
    refuse_tiered,
    spread_assignment,
)
from harness.scenario.topic_spec import topic as _topic
from harness.scenario.traffic import parse_traffic
from reference import PROFILES, ClusterSpec, TopicSpec
from reference.model import steps as S
from reference.model import topics as T

__all__ = ["MAX_FILE_BYTES", "MAX_LANES", "MAX_PARTITIONS", "MAX_TOPICS", "Expectation",
           "Scenario", "ScenarioError", "ScenarioStep", "Topic", "load_scenario",
           "parse_scenario", "spread_assignment"]

@dataclass(frozen=True)
class Requires:
    min_version: tuple[int, int, int] | None = None
    max_version: tuple[int, int, int] | None = None
    features: tuple[str, ...] = ()


AXIS_VERDICTS = {"release": ("CONFORMS", "DIVERGES"),
                 "kip": ("CONFORMS", "DEVIATES", "KIP-DIVERGES"),
                 "safety": ("SAFE", "UNSAFE")}


@dataclass(frozen=True)
class Expectation:
    """What one judging axis gives on a version range, declared with its reason."""

    axis: str
    verdict: str
    min_version: tuple[int, int, int] | None
    max_version: tuple[int, int, int] | None
    reason: str
    #: Text the axis's own reason must contain (the divergence declared, not any other):
    #: e.g. ``"fenced: predicted one of [{}], observed {3}"``; None: any reason.
    matching: str | None = None
    #: What the declared failure is (harness/scenario/declared_names.py): a known bug's id
    #: or a cited deviation's; None: not named.
    known_bug: str | None = None
    deviation: str | None = None

    def covers(self, version: tuple[int, int, int]) -> bool:
        return ((self.min_version is None or version >= self.min_version)
                and (self.max_version is None or version <= self.max_version))


@dataclass(frozen=True)
class ScenarioStep:
    """One step: the reference step object, its kind, the original mapping and line, and
    for a step on partitions (produce, consume, await, ...) the one it names (None: every
    partition of the topic)."""

    step: S.Step
    kind: str
    mapping: Mapping[str, Any]
    line: int
    partition: int | None = None
    #: The topic a step on partitions names (None: every topic).
    topic: str | None = None
    #: The step's ``name`` (None: unnamed): what a traffic entry's ``from``/``until``
    #: names (FORMAT.md "Traffic").
    name: str | None = None
    #: Each topic's partition count once the step is done (None: every partition of
    #: every topic exists from step 0): a step on partitions that names none acts on those.
    exists: Mapping[str, int] | None = None

    def names_lanes(self) -> bool:
        """Whether the step acts on some partitions only (a step on partitions, or a step
        on one topic that names it): the lanes it does not name see an empty await."""
        kind = step_kinds.KINDS[self.kind]
        return kind.on_partitions or (kind.on_topic and self.topic is not None)

    def targets(self, partition: int, topic: str | None = None) -> bool:
        """Whether the step acts on (or, an await, expects something of) ``partition`` of
        ``topic`` (None: the scenario's only topic)."""
        if (self.exists is not None and topic is not None
                and partition >= self.exists.get(topic, 0)):
            return False  # not created yet (create_topic, add_partitions)
        return ((self.partition is None or self.partition == partition)
                and (self.topic is None or topic is None or self.topic == topic))


@dataclass(frozen=True)
class Scenario:
    version: int
    name: str
    description: str
    seed: int
    profile: str
    requires: Requires
    cluster: ClusterShape
    topic: Topic
    steps: tuple[ScenarioStep, ...]
    path: str = ""
    expectations: tuple[Expectation, ...] = ()
    #: Every topic, the first being ``topic`` (empty: ``topic`` is the only one).
    topics: tuple[Topic, ...] = ()
    #: Producers and consumers running for the whole schedule (None: no traffic).
    traffic: TrafficSpec | None = None

    def every_topic(self) -> tuple[Topic, ...]:
        return self.topics or (self.topic,)

    def expected(self, axis: str, version: tuple[int, int, int]) -> Expectation | None:
        """The first declared expectation of ``axis`` covering ``version``."""
        return next((e for e in self.expectations if e.axis == axis and e.covers(version)),
                    None)

    def cluster_spec(self) -> ClusterSpec:
        return ClusterSpec(brokers=self.cluster.broker_ids,
                           controllers=self.cluster.controller_ids,
                           broker_config=dict(self.cluster.broker_config))

    def topic_spec(self) -> TopicSpec:
        return TopicSpec(name=self.topic.name, replicas=self.topic.replicas,
                         min_insync_replicas=self.topic.min_insync_replicas,
                         config=dict(self.topic.config),
                         absent=self.topic.born_at(0) is not None)


# --- loader ----------------------------------------------------------------------

TOP_KEYS = ("version", "name", "description", "seed", "profile", "requires", "cluster", "topic",
            "topics",
            "steps", "expect", "traffic")


def load_scenario(path: str | Path) -> Scenario:
    """Parse and validate a scenario file; raise ScenarioError on any problem."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)  # /dev/zero or a huge file: read no more
    except (OSError, ValueError) as e:
        raise ScenarioError(f"{p}:1: cannot read: {getattr(e, 'strerror', None) or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{p}:1: larger than 1 MB ({MAX_FILE_BYTES} bytes); a scenario "
                            "file is a few kB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ScenarioError(f"{p}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x}); save "
                            "the file as UTF-8") from None
    return parse_scenario(text, str(p))


def parse_scenario(text: str, path: str = "<scenario>") -> Scenario:
    if len(text) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}:1: larger than 1 MB ({MAX_FILE_BYTES} characters)")
    root = Composer(path).compose(text)
    if root is None:
        raise ScenarioError(f"{path}:1: empty file")
    ctx = Reader(path)
    top = ctx.mapping(root, "")
    ctx.unknown(top, TOP_KEYS, "")
    version = ctx.int_(ctx.required(top, "version", root, ""), "version")
    if version != 1:
        raise ctx.fail(top["version"][1], "version", f"unsupported format version {version} "
                       "(this harness reads version 1)")
    name = _name(ctx, ctx.required(top, "name", root, ""))
    description = ctx.str_(top["description"][1], "description") if "description" in top else ""
    seed = ctx.int_(top["seed"][1], "seed", 0, MAX_LONG) if "seed" in top else 0
    profile = _profile(ctx, top["profile"][1]) if "profile" in top else "auto"
    requires = _requires(ctx, top["requires"][1]) if "requires" in top else Requires()
    cluster = _cluster(ctx, ctx.required(top, "cluster", root, ""))
    topics = _topics(ctx, top, root, cluster)
    steps, topics = _steps(ctx, ctx.required(top, "steps", root, ""), cluster, topics)
    cluster = _with_kinds_config(cluster, steps)
    expectations = _expectations(ctx, top["expect"][1]) if "expect" in top else ()
    traffic = None
    if "traffic" in top:
        traffic = parse_traffic(ctx, top["traffic"][1], topics, steps)
        _check_under_traffic(ctx, steps, traffic)
        _no_traffic_on_grown(ctx, steps)
    return Scenario(version=version, name=name, description=description, seed=seed,
                    profile=profile, requires=requires, cluster=cluster, topic=topics[0],
                    topics=topics if len(topics) > 1 else (),
                    steps=tuple(steps), path=path, expectations=expectations,
                    traffic=traffic)


def _no_traffic_on_grown(ctx: Reader, steps: list[ScenarioStep]) -> None:
    """Traffic's clients take a topic's partitions when they start: a scenario with
    traffic creates no topic and adds no partition (yet)."""
    for i, loaded in enumerate(steps):
        params = dict(loaded.mapping[loaded.kind] or {})
        if isinstance(loaded.step, T.AddPartitions) or (
                isinstance(loaded.step, T.CreateTopic) and set(params) - {"topic"}):
            raise ScenarioError(f"{ctx.path}:{loaded.line}: steps[{i}].{loaded.kind}: a "
                                "scenario with traffic cannot create a topic or add "
                                "partitions yet (traffic's clients take a topic's partitions "
                                "when they start): leave traffic out or the step")


def _with_kinds_config(cluster: ClusterShape, steps: list[ScenarioStep]) -> ClusterShape:
    """The cluster with the properties its steps' kinds need (``StepKind.cluster_config``)
    under the scenario's own ``broker_config``."""
    needed: dict[str, str] = {}
    for loaded in steps:
        needed.update(step_kinds.KINDS[loaded.kind].cluster_config)
    if not set(needed) - set(cluster.broker_config):
        return cluster
    return replace(cluster, broker_config={**needed, **cluster.broker_config})


def _check_under_traffic(ctx: Reader, steps: list[ScenarioStep], traffic: TrafficSpec
                         ) -> None:
    """Once a producer of the traffic writes a topic the model cannot know its records one
    by one: an await of its HWM cannot be predicted (the HWM is judged by bounds) and a
    consume step's records cannot be (FORMAT.md "Traffic"). Before the topic's producers
    start (their ``from``) both are judged as without traffic."""
    for i, loaded in enumerate(steps):
        started = [f"traffic.producers[{k}]" for k, p in enumerate(traffic.producers)
                   if p.started_by(i) and loaded.topic in (None, p.topic)]
        if not started:
            continue
        since = f"{started[0]} has started by this step"
        if loaded.kind == "consume":
            raise ScenarioError(f"{ctx.path}:{loaded.line}: steps[{i}].consume: under traffic "
                                "records are read by the traffic's consumers and its final "
                                f"read ({since}): add a consumer to traffic.consumers, or "
                                "move the step before the producers' from")
        if loaded.kind != "await":
            continue
        params = dict(next(iter(loaded.mapping.values())) or {})
        if "hwm" in params:
            raise ScenarioError(f"{ctx.path}:{loaded.line}: steps[{i}].await.hwm: under "
                                f"traffic the HWM is judged by bounds, not awaited ({since}): "
                                "leave hwm out, or move the step before the producers' from "
                                "(FORMAT.md \"Traffic\")")


def _name(ctx: Reader, node: Node) -> str:
    name = ctx.str_(node, "name")
    if not NAME_RE.fullmatch(name):
        raise ctx.fail(node, "name", f"{name!r} must match [a-z0-9-]+")
    if len(name) > MAX_NAME:
        raise ctx.fail(node, "name", f"{len(name)} characters, at most {MAX_NAME} (it names "
                       "the run directories)")
    return name


def _profile(ctx: Reader, node: Node) -> str:
    profile = ctx.str_(node, "profile")
    if profile != "auto" and profile not in PROFILES:
        raise ctx.fail(node, "profile", f"unknown profile {profile!r} (auto or one of: "
                       f"{', '.join(sorted(PROFILES))})")
    return profile


def _expectations(ctx: Reader, node: Node) -> tuple[Expectation, ...]:
    return tuple(_expectation(ctx, item, f"expect[{i}]")
                 for i, item in enumerate(ctx.sequence(node, "expect")))


def _expectation(ctx: Reader, item: Node, where: str) -> Expectation:
    it = ctx.mapping(item, where)
    ctx.unknown(it, ("axis", "verdict", "versions", "reason", "matching", *NAME_KEYS), where)
    anode = ctx.required(it, "axis", item, where)
    axis = ctx.str_(anode, f"{where}.axis")
    if axis not in AXIS_VERDICTS:
        raise ctx.fail(anode, f"{where}.axis", f"unknown axis {axis!r} (one of "
                       f"{', '.join(AXIS_VERDICTS)})")
    vnode = ctx.required(it, "verdict", item, where)
    verdict = ctx.str_(vnode, f"{where}.verdict")
    if verdict not in AXIS_VERDICTS[axis]:
        raise ctx.fail(vnode, f"{where}.verdict", f"{axis} verdicts are "
                       f"{', '.join(AXIS_VERDICTS[axis])}, got {verdict!r}")
    rnode = ctx.required(it, "reason", item, where)
    reason = ctx.str_(rnode, f"{where}.reason").strip()
    if not reason:
        raise ctx.fail(rnode, f"{where}.reason", "say why this axis gives this verdict")
    lo, hi = _version_range(ctx, it["versions"][1], f"{where}.versions") \
        if "versions" in it else (None, None)
    matching = None
    if "matching" in it:
        mnode = it["matching"][1]
        matching = ctx.str_(mnode, f"{where}.matching")
        if not matching.strip() or verdict in ("CONFORMS", "SAFE"):
            raise ctx.fail(mnode, f"{where}.matching", "matching names text of a failing "
                           "verdict's reason (not empty; not for CONFORMS or SAFE)")
    known_bug, deviation = declared_names(ctx, it, where, verdict)
    return Expectation(axis, verdict, lo, hi, reason, matching, known_bug, deviation)


def _version_range(ctx: Reader, node: Node, where: str
                   ) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]:
    items = ctx.mapping(node, where)
    ctx.unknown(items, ("min", "max"), where)
    lo = ctx.version(items["min"][1], f"{where}.min") if "min" in items else None
    hi = ctx.version(items["max"][1], f"{where}.max") if "max" in items else None
    if lo is not None and hi is not None and lo > hi:
        raise ctx.fail(node, where, "max is lower than min")
    return lo, hi


def _requires(ctx: Reader, node: Node) -> Requires:
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
            if v not in feats:
                feats.append(v)
    return Requires(lo, hi, tuple(feats))


def _cluster(ctx: Reader, node: Node) -> ClusterShape:
    items = ctx.mapping(node, "cluster")
    ctx.unknown(items, ("brokers", "controllers", "elr", "broker_config", "tiered_storage",
                        *BIRTH_KEYS), "cluster")
    brokers = ctx.int_(ctx.required(items, "brokers", node, "cluster"), "cluster.brokers")
    if not 1 <= brokers <= MAX_BROKERS:
        raise ctx.fail(items["brokers"][1], "cluster.brokers",
                       f"{brokers} brokers: choose 1..{MAX_BROKERS}")
    controllers = ctx.int_(items["controllers"][1], "cluster.controllers") \
        if "controllers" in items else 1
    if controllers not in CONTROLLER_COUNTS:
        raise ctx.fail(items["controllers"][1], "cluster.controllers",
                       f"{controllers} controllers: choose 1, 3 or 5 (a KRaft quorum)")
    elr = ctx.bool_(items["elr"][1], "cluster.elr") if "elr" in items else None
    cfg: dict[str, str] = {}
    if "broker_config" in items:
        cfg = ctx.props(items["broker_config"][1], "cluster.broker_config")
        check_not_owned(ctx, items["broker_config"][1], "cluster.broker_config", cfg)
    ids = tuple(range(1, brokers + 1)) + tuple(range(100, 100 + controllers))
    birth = parse_birth(ctx, items, ids, elr)
    if "tiered_storage" in items:
        tnode = items["tiered_storage"][1]
        if ctx.bool_(tnode, "cluster.tiered_storage"):
            birth["tiered_storage"] = True
            birth["lines"] = (*birth["lines"], ("tiered_storage", tnode.start_mark.line + 1))
    shape = ClusterShape(brokers, controllers, elr, cfg, **birth)
    if cfg:
        refuse_tiered(ctx, items["broker_config"][1], "cluster.broker_config", "cluster", cfg,
                      shape)
    return shape


def _topics(ctx: Reader, top: Items, root: Node, cluster: ClusterShape) -> tuple[Topic, ...]:
    """``topic`` (one) or ``topics`` (a list of the same mappings, names distinct)."""
    if "topic" in top and "topics" in top:
        raise ctx.fail(top["topics"][1], "topics", "give topic (one) or topics (a list), "
                       "not both")
    if "topics" not in top:
        return (_topic(ctx, ctx.required(top, "topic", root, ""), cluster, "topic"),)
    tnode = top["topics"][1]
    nodes = ctx.sequence(tnode, "topics", MAX_TOPICS)
    if not nodes:
        raise ctx.fail(tnode, "topics", "lists no topic")
    out: list[Topic] = []
    for i, n in enumerate(nodes):
        t = _topic(ctx, n, cluster, f"topics[{i}]")
        if any(o.name == t.name for o in out):
            raise ctx.fail(n, f"topics[{i}].name", f"topic {t.name!r} is listed twice")
        out.append(t)
    lanes = sum(t.partitions for t in out)
    if lanes > MAX_LANES:
        raise ctx.fail(tnode, "topics", f"{lanes} partitions in all; at most {MAX_LANES}")
    return tuple(out)


#: Kinds whose step without ``topic:`` acts on the scenario's declared topic only.
_OWN_TOPIC_KINDS = frozenset({"delete_topic", "create_topic", "add_partitions"})


def _steps(ctx: Reader, node: Node, cluster: ClusterShape, declared: tuple[Topic, ...]
           ) -> tuple[list[ScenarioStep], tuple[Topic, ...]]:
    """The steps, and every topic with the partitions steps create (``TopicPlan``)."""
    out: list[ScenarioStep] = []
    down: set[int] = set()
    deleted: dict[str, int] = {}  # topic -> the step that deleted it
    plan = TopicPlan(declared)
    records = 0
    named: dict[str, int] = {}
    for i, item in enumerate(ctx.sequence(node, "steps", MAX_STEPS)):
        where = f"steps[{i}]"
        step_name = _step_name(ctx, item, where, named)
        topics = plan.now()
        kind, step, topic, partition = _step(ctx, item, where, cluster, topics)
        step = with_topic(step, topic, plan, cluster.broker_ids)
        wrong = (kind.follows(down, step) or _config_target(step, topic, topics)
                 or grow(step, topic, plan, i)
                 or topic_life(kind, step, topic, plan.now(), deleted, i))
        if wrong:
            raise ctx.fail(item, where, wrong)
        topics = plan.now()
        if isinstance(step, T.CreateTopic) and step.config and topic is not None:
            step = replace(step, topic=topic)  # a new topic: its params say it all
        step = as_declared(step, topic, topics, cluster.broker_ids)
        hit = [t for t in topics if topic in (None, t.name)]
        records += kind.records(step) * (1 if partition is not None else
                                         sum(t.partitions for t in hit))
        if records > MAX_RECORDS:
            raise ctx.fail(item, where, f"{records} records in all; a scenario produces at "
                           f"most {MAX_RECORDS}")
        mapping = {k: v for k, v in ctx.plain(item).items() if k != STEP_NAME_KEY}
        if topic is None and kind.name in _OWN_TOPIC_KINDS and len(declared) == 1:
            # `delete_topic: {}` / `create_topic: {}` act on the declared topic alone: the
            # lanes of topics other steps create must not see them (judge/lanes.py).
            topic = declared[0].name
        out.append(ScenarioStep(step, kind.name, mapping, item.start_mark.line + 1,
                                partition, topic, step_name,
                                {t.name: t.partitions for t in topics}))
    if not out:
        raise ctx.fail(node, "steps", "no steps")
    final = plan.now()
    if final == declared:  # nothing created: every partition exists throughout
        out = [replace(s, exists=None) for s in out]
    return out, final


def _config_target(step: S.Step, topic: str | None, topics: tuple[Topic, ...]
                   ) -> str | None:
    """A topic-scope config change names its topic when there are several; a cluster-scope
    one changes every topic and names none."""
    if not isinstance(step, S.AlterConfig):
        return None
    if step.scope == "cluster" and topic is not None:
        return "alter_config with scope cluster changes every topic: leave topic out"
    if step.scope == "topic" and topic is None and len(topics) > 1:
        return ("alter_config with scope topic changes one topic: with several topics, "
                "name it (topic: NAME)")
    return None


#: The key beside a step's kind that names the step (``- {kill: {broker: 2}, name: x}``).
STEP_NAME_KEY = "name"


def _step_name(ctx: Reader, item: Node, where: str, named: dict[str, int]) -> str | None:
    """The step's optional ``name`` ([a-z0-9-]+, at most 100 characters, unique in the
    file); ``named`` maps the names so far to their step's index and gains this one."""
    items = ctx.mapping(item, where)
    if STEP_NAME_KEY not in items:
        return None
    nnode = items[STEP_NAME_KEY][1]
    name = ctx.str_(nnode, f"{where}.name")
    if not NAME_RE.fullmatch(name) or len(name) > MAX_NAME:
        raise ctx.fail(nnode, f"{where}.name", f"step name {name[:MAX_NAME + 1]!r} must be "
                       f"1..{MAX_NAME} of [a-z0-9-]")
    if name in named:
        raise ctx.fail(nnode, f"{where}.name", f"{name!r} already names steps[{named[name]}]: "
                       "step names are unique")
    named[name] = int(where[len("steps["):-1])
    return name


def _step(ctx: Reader, item: Node, where: str, cluster: ClusterShape, topics: tuple[Topic, ...]
          ) -> tuple[step_kinds.StepKind, S.Step, str | None, int | None]:
    items = ctx.mapping(item, where)
    items.pop(STEP_NAME_KEY, None)  # the step's name (_step_name): not its kind
    if len(items) != 1:
        raise ctx.fail(item, where, "a step is a mapping with exactly one key, its kind (and "
                       f"optionally name: beside it), got {len(items)} "
                       f"({', '.join(items) or 'none'})")
    ((name, (knode, vnode)),) = items.items()
    kind = step_kinds.KINDS.get(name)
    if kind is None:
        raise ctx.fail(knode, where, f"unknown step {name!r} (one of "
                       f"{', '.join(step_kinds.KINDS)})")
    params = ctx.mapping(vnode, f"{where}.{name}")
    topic, partition = _target(ctx, params, f"{where}.{name}", kind, topics)
    return kind, kind.parse(ctx, params, item, f"{where}.{name}", cluster), topic, partition


def _target(ctx: Reader, params: Items, where: str, kind: step_kinds.StepKind,
            topics: tuple[Topic, ...]) -> tuple[str | None, int | None]:
    """The topic and partition a step on partitions names (taken out of ``params``; None:
    every one)."""
    for key in ("topic", "partition"):
        allowed = kind.on_partitions or (key == "topic" and kind.on_topic)
        if key in params and not allowed:
            acts_on = "a topic or the cluster" if kind.on_topic else "brokers or the cluster"
            raise ctx.fail(params[key][1], f"{where}.{key}", f"{kind.name} acts on {acts_on}, "
                           f"not on a partition: leave {key} out")
    topic = topics[0]
    name: str | None = None
    if "topic" in params:
        tnode = params.pop("topic")[1]
        name = ctx.str_(tnode, f"{where}.topic")
        found = [t for t in topics if t.name == name]
        if not found and kind.name == "create_topic":
            return name, None  # a topic the scenario does not declare (steps.topics.grow)
        if not found:
            raise ctx.fail(tnode, f"{where}.topic", f"no topic {name!r} (topics: "
                           f"{', '.join(t.name for t in topics)}): a topic create_topic "
                           "makes is named only after that step")
        topic = found[0]
    if "partition" not in params:
        return name, None
    pnode = params.pop("partition")[1]
    if name is None and len(topics) > 1:
        raise ctx.fail(pnode, f"{where}.partition", "several topics: name the partition's "
                       "topic too (topic: NAME)")
    p = ctx.int_(pnode, f"{where}.partition")
    if not 0 <= p < topic.partitions:
        raise ctx.fail(pnode, f"{where}.partition", f"{p} is not a partition of "
                       f"{topic.name} (it has {topic.partitions}: 0..{topic.partitions - 1})")
    return name, p
