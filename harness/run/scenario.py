"""Load and validate a scenario file (fixtures/scenarios/FORMAT.md).

A bad file raises ``ScenarioError`` whose message names the file, the line and the
reason, e.g. ``bad.yaml:14: steps[2].kill.broker: 7 is not a broker (brokers are 1..3)``.
Validation is the single gate: a file that loads is one ``predict`` and ``run`` take
(within the bounds below, which FORMAT.md lists); any other input is a ScenarioError,
never another exception. Nothing here touches a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    Event,
    MappingStartEvent,
    ScalarEvent,
)
from yaml.nodes import CollectionNode, MappingNode, Node, ScalarNode, SequenceNode

from harness.cluster.config import HARNESS_OWNED
from harness.cluster.topology import (
    CONTROLLER_BASE,
    CONTROLLER_COUNTS,
    MAX_BROKERS,
    ClusterShape,
)
from harness.infra.errors import HarnessError
from reference import PROFILES, ClusterSpec, TopicSpec
from reference import steps as S

FEATURES = ("elr", "describe_topic_partitions", "unclean_recovery", "kip1303")
NAME_RE = re.compile(r"[a-z0-9-]+")
VERSION_RE = re.compile(r"[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}")
TOPIC_RE = re.compile(r"[A-Za-z0-9._-]+")
CONFIG_KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
FIRST_CONTROLLER = CONTROLLER_BASE

# Bounds (FORMAT.md "Limits"): what the runner can do and the model can hold.
MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 16  # lists and mappings inside each other, aliases expanded
MAX_YAML_EVENTS = 20_000  # YAML values as written
MAX_YAML_NODES = 50_000  # YAML values once aliases are expanded
MAX_NAME = 100
MAX_TOPIC_NAME = 249  # Kafka's limit
MAX_STEPS = 500
MAX_RECORDS = 10_000  # per produce step and per scenario
MAX_TIMEOUT_S = 600
MAX_OFFSET = 10**9
MAX_INT = 2**31 - 1  # a Kafka int config
MAX_LONG = 2**63 - 1  # a Kafka long config
MAX_CONFIG_VALUE = 4096
MAX_NUMBER_CHARS = 64


class ScenarioError(HarnessError):
    """A scenario file is invalid: the message names the file, the line and the reason."""


@dataclass(frozen=True)
class Requires:
    min_version: tuple[int, int, int] | None = None
    max_version: tuple[int, int, int] | None = None
    features: tuple[str, ...] = ()


@dataclass(frozen=True)
class Topic:
    name: str
    replicas: tuple[int, ...]
    min_insync_replicas: int
    config: Mapping[str, str] = field(default_factory=dict)


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

    def covers(self, version: tuple[int, int, int]) -> bool:
        return ((self.min_version is None or version >= self.min_version)
                and (self.max_version is None or version <= self.max_version))


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
    cluster: ClusterShape
    topic: Topic
    steps: tuple[ScenarioStep, ...]
    path: str = ""
    expectations: tuple[Expectation, ...] = ()

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
                         config=dict(self.topic.config))


# --- YAML to nodes: bounded, non-recursive ------------------------------------------------

_TAG = "tag:yaml.org,2002:"
_MAP, _SEQ, _MERGE, _NULL = _TAG + "map", _TAG + "seq", _TAG + "merge", _TAG + "null"
_SCALAR_TAGS = frozenset(_TAG + t for t in ("null", "bool", "int", "float", "str"))
#: libyaml when PyYAML has it: the pure-Python parser takes ~10 s for a dense 1 MB file.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
#: YAML 1.1 line breaks that editors do not show as such: line numbers would disagree.
_ODD_BREAKS = re.compile("[\x85\u2028\u2029]")
Mark = Any  # yaml.error.Mark, or libyaml's own Mark class


def _line(mark: Mark | None) -> int:
    return mark.line + 1 if mark is not None else 1


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_TAG):] if tag.startswith(_TAG) else tag


class _Composer:
    """Nodes from the parser's events, as yaml.compose builds them, but without recursion
    and within bounds: nesting depth, number of values (aliases expanded, so an alias bomb
    is rejected before anything walks it), one document, no alias to its own ancestor."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.resolver: Any = yaml.resolver.Resolver()
        self.anchors: dict[str, Node] = {}
        self.extent: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height)
        self.open: list[tuple[CollectionNode, list[Node]]] = []
        self.root: Node | None = None
        self.documents = 0

    def fail(self, mark: Mark | None, reason: str) -> ScenarioError:
        return ScenarioError(f"{self.path}:{_line(mark)}: {reason}")

    def compose(self, text: str) -> Node | None:
        for count, event in enumerate(_events(text, self.path)):
            if count > MAX_YAML_EVENTS:
                raise self.fail(event.start_mark, f"more than {MAX_YAML_EVENTS} YAML values; "
                                "a scenario is far smaller (split it)")
            self.event(event)
        return self.root

    def event(self, event: Event) -> None:
        if isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.fail(event.start_mark, "a scenario file holds one YAML document "
                                "(remove the second '---')")
        elif isinstance(event, AliasEvent):
            self.attach(self.alias(event))
        elif isinstance(event, ScalarEvent):
            self.attach(self.scalar(event))
        elif isinstance(event, CollectionStartEvent):
            self.start(event)
        elif isinstance(event, CollectionEndEvent):
            self.end(event)

    def scalar(self, event: ScalarEvent) -> Node:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(ScalarNode, event.value, event.implicit)
        start: Mark = event.start_mark
        end: Mark = event.end_mark
        node = ScalarNode(tag, event.value, start, end, event.style)
        self.extent[id(node)] = (1, 1)
        self.name(event, node)
        return node

    def alias(self, event: AliasEvent) -> Node:
        node = self.anchors.get(str(event.anchor))
        if node is None:
            raise self.fail(event.start_mark, f"undefined alias *{event.anchor} (define "
                            f"&{event.anchor} before using it)")
        if any(node is parent for parent, _ in self.open):
            raise self.fail(event.start_mark, f"alias *{event.anchor} refers to the list or "
                            "mapping that contains it")
        if len(self.open) + self.extent[id(node)][1] > MAX_DEPTH:
            raise self.fail(event.start_mark, f"nested deeper than {MAX_DEPTH} levels "
                            "(aliases expanded)")
        return node

    def start(self, event: CollectionStartEvent) -> None:
        if len(self.open) >= MAX_DEPTH:
            raise self.fail(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
        kind: type[CollectionNode] = (MappingNode if isinstance(event, MappingStartEvent)
                                      else SequenceNode)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(kind, None, event.implicit)
        start: Mark = event.start_mark
        node = kind(tag, [], start, None, event.flow_style)
        self.name(event, node)
        self.open.append((node, []))

    def end(self, event: CollectionEndEvent) -> None:
        node, children = self.open.pop()
        node.end_mark = event.end_mark
        node.value = (list(zip(children[::2], children[1::2], strict=True))
                      if isinstance(node, MappingNode) else children)
        extents = [self.extent[id(c)] for c in children]
        values = 1 + sum(v for v, _ in extents)
        if values > MAX_YAML_NODES:
            raise self.fail(node.start_mark, f"more than {MAX_YAML_NODES} values once aliases "
                            "are expanded; a scenario is far smaller")
        self.extent[id(node)] = (values, 1 + max((h for _, h in extents), default=0))
        self.attach(node)

    def name(self, event: ScalarEvent | CollectionStartEvent, node: Node) -> None:
        if event.anchor is not None:
            self.anchors[str(event.anchor)] = node

    def attach(self, node: Node) -> None:
        if self.open:
            self.open[-1][1].append(node)
        else:
            self.root = node


def _check_characters(text: str, path: str) -> None:
    for pattern, what in ((_NON_PRINTABLE, "is not allowed in YAML (a control character or "
                           "a lone surrogate); remove it"),
                          (_ODD_BREAKS, "is a line break to YAML but not to most editors; "
                           "replace it with a newline or remove it")):
        bad = pattern.search(text)
        if bad is not None:
            line = _lines(text[:bad.start()])
            raise ScenarioError(f"{path}:{line}: character U+{ord(bad.group()):04X} {what}")


def _lines(text: str) -> int:
    """The line the end of ``text`` is on, counting \n, \r\n and \r as an editor does."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + 1


def _events(text: str, path: str) -> Iterator[Event]:
    _check_characters(text, path)
    try:
        yield from yaml.parse(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as e:
        # libyaml may place the mark of an error at the end of the stream one line past it
        line = min(_line(e.problem_mark or e.context_mark), _lines(text))
        raise ScenarioError(f"{path}:{line}: invalid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise ScenarioError(f"{path}:1: invalid YAML: {e}") from None


# --- node helpers -----------------------------------------------------------------

Items = dict[str, tuple[Node, Node]]


class _Ctx:
    """Reads validated values off the nodes; its constructor lives as long as one load."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: Node | None, where: str, reason: str) -> ScenarioError:
        line = node.start_mark.line + 1 if node is not None else 1
        prefix = f"{where}: " if where else ""
        return ScenarioError(f"{self.path}:{line}: {prefix}{reason}")

    def mapping(self, node: Node, where: str) -> Items:
        """Keys to (key node, value node); ``<<`` merge keys resolved (own keys win, then
        earlier merged mappings), as YAML's merge key type says."""
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return {}
        self.collection_tag(node, where)
        if not isinstance(node, MappingNode):
            raise self.fail(node, where, "expected a mapping")
        own: Items = {}
        merged: Items = {}
        for k, v in node.value:
            if isinstance(k, ScalarNode) and k.tag == _MERGE:
                for source in self.merge_sources(v, where):
                    for key, pair in self.mapping(source, where).items():
                        merged.setdefault(key, pair)
                continue
            key = self.scalar(k, where)
            if not isinstance(key, str):
                raise self.fail(k, where, f"key {key!r} must be a string")
            if key in own:
                raise self.fail(k, where, f"duplicate key {key!r}")
            own[key] = (k, v)
        return {**merged, **own}

    def merge_sources(self, node: Node, where: str) -> list[Node]:
        sources = node.value if isinstance(node, SequenceNode) else [node]
        for s in sources:
            if not isinstance(s, MappingNode):
                raise self.fail(s, where, "a merge key << takes a mapping or a list of "
                                "mappings (e.g. <<: *base)")
        return list(sources)

    def collection_tag(self, node: Node, where: str) -> None:
        if isinstance(node, CollectionNode) and node.tag not in (_MAP, _SEQ):
            raise self.fail(node, where, f"YAML tag {_tag_name(node.tag)} is not supported "
                            "here (drop the tag)")

    def scalar(self, node: Node, where: str) -> Any:
        if not isinstance(node, ScalarNode):
            raise self.fail(node, where, "expected a single value")
        if node.tag not in _SCALAR_TAGS:
            raise self.fail(node, where, f"YAML tag {_tag_name(node.tag)} is not supported: a "
                            "scenario holds null, true/false, numbers and strings (quote "
                            f"{node.value!r} to make it a string)")
        if node.tag != _TAG + "str" and len(node.value) > MAX_NUMBER_CHARS:
            raise self.fail(node, where, f"a {_tag_name(node.tag)} of more than "
                            f"{MAX_NUMBER_CHARS} characters")
        try:
            return self.constructor.construct_object(node, deep=True)
        except (ValueError, KeyError, TypeError, ArithmeticError, yaml.YAMLError):
            raise self.fail(node, where, f"{node.value!r} is not a valid "
                            f"{_tag_name(node.tag)}") from None

    def plain(self, node: Node) -> Any:
        """A validated node as plain Python data (merge keys resolved)."""
        if isinstance(node, SequenceNode):
            return [self.plain(n) for n in node.value]
        if isinstance(node, MappingNode):
            return {k: self.plain(v) for k, (_, v) in self.mapping(node, "").items()}
        return self.scalar(node, "")

    def sequence(self, node: Node, where: str, at_most: int | None = None) -> list[Node]:
        self.collection_tag(node, where)
        if not isinstance(node, SequenceNode):
            raise self.fail(node, where, "expected a list")
        if at_most is not None and len(node.value) > at_most:
            raise self.fail(node, where, f"{len(node.value)} entries, at most {at_most}")
        return list(node.value)

    def unknown(self, items: Items, allowed: tuple[str, ...], where: str) -> None:
        for key, (k, _) in items.items():
            if key not in allowed:
                raise self.fail(k, where, f"unknown key {key!r} (allowed: {', '.join(allowed)})")

    def required(self, items: Items, key: str, parent: Node, where: str) -> Node:
        if key not in items:
            raise self.fail(parent, where, f"missing required key {key!r}")
        return items[key][1]

    def int_(self, node: Node, where: str, minimum: int | None = None,
             maximum: int | None = None) -> int:
        v = self.scalar(node, where)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(node, where, f"expected an integer, got {v!r}")
        if minimum is not None and v < minimum:
            raise self.fail(node, where, f"must be >= {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise self.fail(node, where, f"must be <= {maximum}, got {v}")
        return v

    def seconds(self, node: Node, where: str) -> float:
        t = self.scalar(node, where)
        # NaN fails every comparison, infinity the upper bound.
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= MAX_TIMEOUT_S:
            raise self.fail(node, where, f"expected seconds, a number > 0 and <= "
                            f"{MAX_TIMEOUT_S}, got {t!r}")
        return float(t)

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
        """A properties mapping: string keys, scalar values rendered as strings, each fit
        for a .properties file and, where the model reads it, of the right type."""
        out: dict[str, str] = {}
        for key, (k, v) in self.mapping(node, where).items():
            if not CONFIG_KEY_RE.fullmatch(key):
                raise self.fail(k, where, f"config key {key!r}: use letters, digits, '.', '_' "
                                "and '-' (at most 255 characters)")
            val = self.scalar(v, f"{where}.{key}")
            if val is None:
                raise self.fail(v, f"{where}.{key}", "expected a value")
            text = ("true" if val else "false") if isinstance(val, bool) else str(val)
            _check_config_value(self, v, f"{where}.{key}", key, text)
            out[key] = text
        return out

    def version(self, node: Node, where: str) -> tuple[int, int, int]:
        v = self.scalar(node, where)
        if not isinstance(v, str) or not VERSION_RE.fullmatch(v):
            raise self.fail(node, where, f"expected a quoted version like \"4.0.0\", got {v!r}")
        a, b, c = (int(x) for x in v.split("."))
        return (a, b, c)


# --- config values ------------------------------------------------------------------

#: Configs the model reads (reference.model.config_from, protocol._set_config), typed as
#: Kafka types them: a value Kafka would refuse or the model cannot read is refused here.
INT_CONFIGS: dict[str, tuple[int, int]] = {
    "min.insync.replicas": (1, MAX_INT),
    "unclean.recovery.timeout.ms": (0, MAX_LONG),
    "leader.election.eligible.local.log.ms": (-MAX_LONG - 1, MAX_LONG),
    "leader.election.eligible.local.log.bytes": (-MAX_LONG - 1, MAX_LONG),
}
BOOL_CONFIGS = ("unclean.leader.election.enable", "unclean.recovery.manager.enabled",
                "auto.leader.rebalance.enable")
STRATEGIES = ("Aggressive", "Balanced", "None")
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _check_config_value(c: _Ctx, node: Node, where: str, key: str, text: str) -> None:
    if any(ch in _LINE_BREAKS for ch in text):
        raise c.fail(node, where, "a line break cannot go into a .properties value")
    if not text.isprintable():
        raise c.fail(node, where, "control characters cannot go into a .properties value")
    if len(text) > MAX_CONFIG_VALUE:
        raise c.fail(node, where, f"longer than {MAX_CONFIG_VALUE} characters")
    if key in INT_CONFIGS:
        lo, hi = INT_CONFIGS[key]
        if not re.fullmatch(r"-?[0-9]{1,19}", text) or not lo <= int(text) <= hi:
            raise c.fail(node, where, f"{key} must be an integer {lo}..{hi}, got {text!r}")
    elif key in BOOL_CONFIGS and text.lower() not in ("true", "false"):
        raise c.fail(node, where, f"{key} must be true or false, got {text!r}")
    elif key == "unclean.recovery.strategy" and text.lower() not in (
            s.lower() for s in STRATEGIES):
        raise c.fail(node, where, f"{key} must be one of {', '.join(STRATEGIES)}, got {text!r}")


def _check_not_owned(c: _Ctx, node: Node, where: str, cfg: Mapping[str, str]) -> None:
    owned = sorted(set(cfg) & HARNESS_OWNED)
    if owned:
        raise c.fail(node, where, f"{', '.join(owned)} is owned by the harness (it wires "
                     "listeners, node ids, the quorum and data dirs): drop it")


# --- loader ----------------------------------------------------------------------

TOP_KEYS = ("version", "name", "description", "seed", "profile", "requires", "cluster", "topic",
            "steps", "expect")


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
    root = _Composer(path).compose(text)
    if root is None:
        raise ScenarioError(f"{path}:1: empty file")
    ctx = _Ctx(path)
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
    topic = _topic(ctx, ctx.required(top, "topic", root, ""), cluster)
    steps = _steps(ctx, ctx.required(top, "steps", root, ""), cluster)
    expectations = _expectations(ctx, top["expect"][1]) if "expect" in top else ()
    return Scenario(version=version, name=name, description=description, seed=seed,
                    profile=profile, requires=requires, cluster=cluster, topic=topic,
                    steps=tuple(steps), path=path, expectations=expectations)


def _name(ctx: _Ctx, node: Node) -> str:
    name = ctx.str_(node, "name")
    if not NAME_RE.fullmatch(name):
        raise ctx.fail(node, "name", f"{name!r} must match [a-z0-9-]+")
    if len(name) > MAX_NAME:
        raise ctx.fail(node, "name", f"{len(name)} characters, at most {MAX_NAME} (it names "
                       "the run directories)")
    return name


def _profile(ctx: _Ctx, node: Node) -> str:
    profile = ctx.str_(node, "profile")
    if profile != "auto" and profile not in PROFILES:
        raise ctx.fail(node, "profile", f"unknown profile {profile!r} (auto or one of: "
                       f"{', '.join(sorted(PROFILES))})")
    return profile


def _expectations(ctx: _Ctx, node: Node) -> tuple[Expectation, ...]:
    return tuple(_expectation(ctx, item, f"expect[{i}]")
                 for i, item in enumerate(ctx.sequence(node, "expect")))


def _expectation(ctx: _Ctx, item: Node, where: str) -> Expectation:
    it = ctx.mapping(item, where)
    ctx.unknown(it, ("axis", "verdict", "versions", "reason"), where)
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
    return Expectation(axis, verdict, lo, hi, reason)


def _version_range(ctx: _Ctx, node: Node, where: str
                   ) -> tuple[tuple[int, int, int] | None, tuple[int, int, int] | None]:
    items = ctx.mapping(node, where)
    ctx.unknown(items, ("min", "max"), where)
    lo = ctx.version(items["min"][1], f"{where}.min") if "min" in items else None
    hi = ctx.version(items["max"][1], f"{where}.max") if "max" in items else None
    if lo is not None and hi is not None and lo > hi:
        raise ctx.fail(node, where, "max is lower than min")
    return lo, hi


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
            if v not in feats:
                feats.append(v)
    return Requires(lo, hi, tuple(feats))


def _cluster(ctx: _Ctx, node: Node) -> ClusterShape:
    items = ctx.mapping(node, "cluster")
    ctx.unknown(items, ("brokers", "controllers", "elr", "broker_config"), "cluster")
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
        _check_not_owned(ctx, items["broker_config"][1], "cluster.broker_config", cfg)
    return ClusterShape(brokers, controllers, elr, cfg)


def _broker_list(ctx: _Ctx, node: Node, where: str, cluster: ClusterShape) -> tuple[int, ...]:
    """A non-empty list of distinct brokers (a topic's or a reassignment's replicas)."""
    out = _broker_ids(ctx, node, where, cluster)
    if not out:
        raise ctx.fail(node, where, "must list at least one broker")
    return tuple(out)


def _check_broker(ctx: _Ctx, node: Node, where: str, b: int, cluster: ClusterShape) -> None:
    if b not in cluster.broker_ids:
        raise ctx.fail(node, where, f"{b} is not a broker (brokers are 1..{cluster.brokers})")


def _check_node(ctx: _Ctx, node: Node, where: str, n: int, cluster: ClusterShape) -> None:
    if n not in cluster.broker_ids and n not in cluster.controller_ids:
        raise ctx.fail(node, where, f"{n} is not a node (brokers 1..{cluster.brokers}, "
                       f"controllers {FIRST_CONTROLLER}..{cluster.controller_ids[-1]})")


def _topic(ctx: _Ctx, node: Node, cluster: ClusterShape) -> Topic:
    items = ctx.mapping(node, "topic")
    ctx.unknown(items, ("name", "replicas", "min_insync_replicas", "config"), "topic")
    name = _topic_name(ctx, ctx.required(items, "name", node, "topic"))
    replicas = _broker_list(ctx, ctx.required(items, "replicas", node, "topic"),
                            "topic.replicas", cluster)
    mir = ctx.int_(ctx.required(items, "min_insync_replicas", node, "topic"),
                   "topic.min_insync_replicas", 1, MAX_INT)
    cfg = ctx.props(items["config"][1], "topic.config") if "config" in items else {}
    if "min.insync.replicas" in cfg:
        raise ctx.fail(items["config"][1], "topic.config",
                       "set min.insync.replicas with topic.min_insync_replicas")
    return Topic(name, replicas, mir, cfg)


def _topic_name(ctx: _Ctx, node: Node) -> str:
    """Kafka's rule: 1..249 of [a-zA-Z0-9._-], and not '.' or '..'."""
    name = ctx.str_(node, "topic.name")
    if not TOPIC_RE.fullmatch(name) or name in (".", "..") or len(name) > MAX_TOPIC_NAME:
        raise ctx.fail(node, "topic.name", f"invalid topic name {name[:MAX_TOPIC_NAME + 1]!r}: "
                       f"Kafka takes 1..{MAX_TOPIC_NAME} of letters, digits, '.', '_' and '-', "
                       "not '.' or '..'")
    return name


# --- steps -----------------------------------------------------------------------

StepParser = Callable[[_Ctx, dict[str, tuple[Node, Node]], Node, str, ClusterShape], S.Step]


def _produce(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
             ) -> S.Step:
    c.unknown(it, ("count", "acks"), w)
    count = c.int_(it["count"][1], f"{w}.count", 1, MAX_RECORDS) if "count" in it else 1
    acks = "all"
    if "acks" in it:
        v = c.scalar(it["acks"][1], f"{w}.acks")
        if isinstance(v, bool) or str(v) not in ("0", "1", "all"):
            raise c.fail(it["acks"][1], f"{w}.acks", f"acks must be 0, 1 or all, got {v!r}")
        acks = str(v)
    return S.Produce(count=count, acks=acks)


def _empty(kind: type) -> StepParser:
    def parse(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
              ) -> S.Step:
        c.unknown(it, (), w)
        step: S.Step = kind()
        return step
    return parse


def _isolate(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
             ) -> S.Step:
    c.unknown(it, ("node",), w)
    node = c.required(it, "node", n, w)
    v = c.int_(node, f"{w}.node")
    _check_node(c, node, f"{w}.node", v, cl)
    return S.Isolate(v)


def _partition(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
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


def _cut(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape) -> S.Step:
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
    def parse(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
              ) -> S.Step:
        c.unknown(it, ("broker",), w)
        node = c.required(it, "broker", n, w)
        b = c.int_(node, f"{w}.broker")
        _check_broker(c, node, f"{w}.broker", b, cl)
        step: S.Step = kind(b)
        return step
    return parse


def _lose(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape) -> S.Step:
    c.unknown(it, ("broker", "offset"), w)
    node = c.required(it, "broker", n, w)
    b = c.int_(node, f"{w}.broker")
    _check_broker(c, node, f"{w}.broker", b, cl)
    off = c.int_(c.required(it, "offset", n, w), f"{w}.offset", 0, MAX_OFFSET)
    return S.LoseUnflushed(b, off)


def _local_log(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
               ) -> S.Step:
    c.unknown(it, ("broker", "age_ms", "size_bytes"), w)
    node = c.required(it, "broker", n, w)
    b = c.int_(node, f"{w}.broker")
    _check_broker(c, node, f"{w}.broker", b, cl)
    age = c.int_(it["age_ms"][1], f"{w}.age_ms", 0, MAX_LONG) if "age_ms" in it else None
    size = c.int_(it["size_bytes"][1], f"{w}.size_bytes", 0, MAX_LONG) \
        if "size_bytes" in it else None
    if age is None and size is None:
        raise c.fail(n, w, "local_log needs age_ms, size_bytes or both")
    return S.ReportLocalLog(b, age, size)


def _alter(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape) -> S.Step:
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
        _check_not_owned(c, cnode, f"{w}.config", cfg)
    return S.AlterConfig(scope, cfg)


def _elect(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape) -> S.Step:
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


def _reassign(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape
              ) -> S.Step:
    c.unknown(it, ("replicas",), w)
    return S.Reassign(_broker_list(c, c.required(it, "replicas", n, w), f"{w}.replicas", cl))


AWAIT_KEYS = ("leader", "leader_epoch", "replicas", "isr", "elr", "last_known_elr", "hwm",
              "fenced", "timeout_s")


def _await(c: _Ctx, it: dict[str, tuple[Node, Node]], n: Node, w: str, cl: ClusterShape) -> S.Step:
    c.unknown(it, AWAIT_KEYS, w)
    expect: dict[str, Any] = {}
    timeout = 30.0
    for key, (_, v) in it.items():
        where = f"{w}.{key}"
        if key == "timeout_s":
            timeout = c.seconds(v, where)
        elif key == "leader":
            val = c.scalar(v, where)
            if val is not None:
                val = c.int_(v, where)
                _check_broker(c, v, where, val, cl)
            expect[key] = val
        elif key in ("leader_epoch", "hwm"):
            expect[key] = c.int_(v, where, 0, MAX_OFFSET)
        else:
            expect[key] = _broker_ids(c, v, where, cl)
    return S.Await(expect, timeout)


def _broker_ids(c: _Ctx, node: Node, where: str, cl: ClusterShape) -> list[int]:
    """A set of brokers, possibly empty (an await's isr, elr, ...)."""
    ids: list[int] = []
    for i, x in enumerate(c.sequence(node, where)):
        b = c.int_(x, f"{where}[{i}]")
        _check_broker(c, x, f"{where}[{i}]", b, cl)
        if b in ids:
            raise c.fail(x, f"{where}[{i}]", f"broker {b} listed twice")
        ids.append(b)
    return ids


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


def _steps(ctx: _Ctx, node: Node, cluster: ClusterShape) -> list[ScenarioStep]:
    out: list[ScenarioStep] = []
    killed: set[int] = set()
    records = 0
    for i, item in enumerate(ctx.sequence(node, "steps", MAX_STEPS)):
        where = f"steps[{i}]"
        kind, step = _step(ctx, item, where, cluster)
        if isinstance(step, S.Kill | S.Stop):
            killed.add(step.broker)
        elif isinstance(step, S.Restart):
            killed.discard(step.broker)
        elif isinstance(step, S.LoseUnflushed) and step.broker not in killed:
            raise ctx.fail(item, where, f"lose_unflushed of broker {step.broker} must follow a "
                           "kill of that broker (before its restart)")
        elif isinstance(step, S.Produce):
            records += step.count
            if records > MAX_RECORDS:
                raise ctx.fail(item, where, f"{records} records in all; a scenario produces at "
                               f"most {MAX_RECORDS}")
        out.append(ScenarioStep(step, kind, ctx.plain(item), item.start_mark.line + 1))
    if not out:
        raise ctx.fail(node, "steps", "no steps")
    return out


def _step(ctx: _Ctx, item: Node, where: str, cluster: ClusterShape) -> tuple[str, S.Step]:
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
    return kind, parser(ctx, params, item, f"{where}.{kind}", cluster)
