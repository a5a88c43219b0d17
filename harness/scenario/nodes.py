"""Scenario YAML as bounded nodes, and the checked readers of their values: every
failure is a ScenarioError naming the file, the line and the key (FORMAT.md "Limits").
The scenario loader (scenario.py) and every step kind's parser (steps/) read through
``Reader``. Nothing here touches a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
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
    ClusterShape,
)
from harness.infra.errors import HarnessError

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


class Composer:
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
        _check_characters(text, self.path)
        try:
            return self.compose_events(_events(text, _LOADER))
        except _ParserStopped as stopped:
            self.check_limits_before(text, stopped)
            raise stopped.error(self.path, text) from None

    def compose_events(self, events: Iterator[Event]) -> Node | None:
        for count, event in enumerate(events):
            if count > MAX_YAML_EVENTS:
                raise self.fail(event.start_mark, f"more than {MAX_YAML_EVENTS} YAML values; "
                                "a scenario is far smaller (split it)")
            self.event(event)
        return self.root

    def check_limits_before(self, text: str, stopped: _ParserStopped) -> None:
        """The project's limits come first, whichever layer notices a breach first.
        libyaml has limits of its own (1,000 nesting levels in the one PyYAML 6.0.4
        bundles) and looks ahead, so it may stop before this composer has seen the value
        that breaks ours (nesting 16). The pure-Python parser has no such limit: it
        re-reads what libyaml had read, and a breach of ours there is the error."""
        if _LOADER is yaml.SafeLoader:
            return
        try:
            Composer(self.path).compose_events(_events(text[:stopped.index], yaml.SafeLoader))
        except _ParserStopped:
            pass  # the prefix ends mid-value: nothing of ours was broken before it

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


class _ParserStopped(Exception):
    """The YAML parser refused the text; ``error`` words it as the scenario's error."""

    def __init__(self, cause: yaml.YAMLError) -> None:
        super().__init__(str(cause))
        self.cause = cause
        mark = getattr(cause, "problem_mark", None) or getattr(cause, "context_mark", None)
        self.mark: Mark | None = mark
        self.index: int = mark.index if mark is not None else 0

    def error(self, path: str, text: str) -> ScenarioError:
        if not isinstance(self.cause, yaml.MarkedYAMLError):
            return ScenarioError(f"{path}:1: invalid YAML: {self.cause}")
        # libyaml may place the mark of an error at the end of the stream one line past it
        line = min(_line(self.mark), _lines(text))
        return ScenarioError(f"{path}:{line}: invalid YAML: {self.cause.problem or self.cause}")


def _events(text: str, loader: Any) -> Iterator[Event]:
    try:
        yield from yaml.parse(text, Loader=loader)
    except yaml.YAMLError as e:
        raise _ParserStopped(e) from None


# --- node helpers -----------------------------------------------------------------

Items = dict[str, tuple[Node, Node]]


class Reader:
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

    def choice(self, items: Items, key: str, where: str, allowed: Sequence[str], default: str,
               must: str) -> str:
        """``items[key]`` as one of the strings ``allowed`` (a number such as acks' 0 is read
        as its text), ``default`` when the key is absent; ``must`` names what is allowed."""
        if key not in items:
            return default
        node = items[key][1]
        v = self.scalar(node, f"{where}.{key}")
        if isinstance(v, bool) or str(v) not in allowed:
            raise self.fail(node, f"{where}.{key}", f"{key} must be {must}, got {v!r}")
        return str(v)

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
            check_config_value(self, v, f"{where}.{key}", key, text)
            out[key] = text
        return out

    def version(self, node: Node, where: str) -> tuple[int, int, int]:
        v = self.scalar(node, where)
        if not isinstance(v, str) or not VERSION_RE.fullmatch(v):
            raise self.fail(node, where, f"expected a quoted version like \"4.0.0\", got {v!r}")
        a, b, c = (int(x) for x in v.split("."))
        return (a, b, c)


# --- config values ------------------------------------------------------------------

#: Configs the model reads (reference.model.predict.config_from, protocol._set_config), typed as
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


def check_config_value(c: Reader, node: Node, where: str, key: str, text: str) -> None:
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


def check_not_owned(c: Reader, node: Node, where: str, cfg: Mapping[str, str]) -> None:
    owned = sorted(set(cfg) & HARNESS_OWNED)
    if owned:
        raise c.fail(node, where, f"{', '.join(owned)} is owned by the harness (it wires "
                     "listeners, node ids, the quorum and data dirs): drop it")


# --- brokers and nodes of the cluster ------------------------------------------------

def broker_list(ctx: Reader, node: Node, where: str, cluster: ClusterShape) -> tuple[int, ...]:
    """A non-empty list of distinct brokers (a topic's or a reassignment's replicas)."""
    out = broker_ids(ctx, node, where, cluster)
    if not out:
        raise ctx.fail(node, where, "must list at least one broker")
    return tuple(out)


def check_broker(ctx: Reader, node: Node, where: str, b: int, cluster: ClusterShape) -> None:
    if b not in cluster.broker_ids:
        raise ctx.fail(node, where, f"{b} is not a broker (brokers are 1..{cluster.brokers})")


def check_node(ctx: Reader, node: Node, where: str, n: int, cluster: ClusterShape) -> None:
    if n not in cluster.broker_ids and n not in cluster.controller_ids:
        raise ctx.fail(node, where, f"{n} is not a node (brokers 1..{cluster.brokers}, "
                       f"controllers {FIRST_CONTROLLER}..{cluster.controller_ids[-1]})")


def broker_ids(c: Reader, node: Node, where: str, cl: ClusterShape) -> list[int]:
    """A set of brokers, possibly empty (an await's isr, elr, ...)."""
    ids: list[int] = []
    for i, x in enumerate(c.sequence(node, where)):
        b = c.int_(x, f"{where}[{i}]")
        check_broker(c, x, f"{where}[{i}]", b, cl)
        if b in ids:
            raise c.fail(x, f"{where}[{i}]", f"broker {b} listed twice")
        ids.append(b)
    return ids
