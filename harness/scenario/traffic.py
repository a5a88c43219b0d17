"""The scenario's ``traffic`` block (fixtures/scenarios/FORMAT.md "Traffic"): producers
and consumers running for the whole schedule or between named steps (``from``/``until``),
parsed into harness.client.traffic specs with file:line errors like the rest of the
loader."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from yaml.nodes import Node

from harness.client.traffic import (
    ACKS,
    ISOLATION,
    MAX_CONSUMERS,
    MAX_PRODUCERS,
    MAX_RATE,
    MAX_RECORDS,
    ConsumerSpec,
    ProducerSpec,
    TrafficSpec,
)
from harness.scenario.nodes import TOPIC_RE, Items, Reader

MAX_KEYS = 100_000
MAX_GROUP = 249
PRODUCER_KEYS = ("count", "rate", "acks", "idempotent", "keys", "records", "topic", "from",
                 "until")
CONSUMER_KEYS = ("count", "mode", "group", "commit", "isolation", "topic", "from", "until")
MODES = ("assign", "group")


def parse_traffic(ctx: Reader, node: Node, topics: Sequence[Any],
                  steps: Sequence[Any] = ()) -> TrafficSpec:
    """``topics``: the scenario's topics (``name`` attributes); the first is the default.
    ``steps``: the scenario's loaded steps (``name`` attributes), which ``from`` and
    ``until`` name."""
    items = ctx.mapping(node, "traffic")
    ctx.unknown(items, ("producers", "consumers"), "traffic")
    producers = tuple(
        _producer(ctx, n, f"traffic.producers[{i}]", topics, steps)
        for i, n in enumerate(ctx.sequence(items["producers"][1], "traffic.producers",
                                           MAX_PRODUCERS)
                              if "producers" in items else ()))
    consumers = tuple(
        _consumer(ctx, n, f"traffic.consumers[{i}]", topics, i, steps)
        for i, n in enumerate(ctx.sequence(items["consumers"][1], "traffic.consumers",
                                           MAX_CONSUMERS)
                              if "consumers" in items else ()))
    if not producers and not consumers:
        raise ctx.fail(node, "traffic", "lists no producer and no consumer (leave the "
                       "block out for a scenario without traffic)")
    for what, specs, most in (("producers", producers, MAX_PRODUCERS),
                              ("consumers", consumers, MAX_CONSUMERS)):
        total = sum(s.count for s in specs)
        if total > most:
            raise ctx.fail(items[what][1], f"traffic.{what}", f"{total} {what} in all; at "
                           f"most {most} (each is a thread on the harness's machine)")
    return TrafficSpec(producers, consumers)


def _topic(ctx: Reader, items: Items, where: str, topics: Sequence[Any]) -> str:
    if "topic" not in items:
        return str(topics[0].name)
    tnode = items["topic"][1]
    name = ctx.str_(tnode, f"{where}.topic")
    if name not in [t.name for t in topics]:
        raise ctx.fail(tnode, f"{where}.topic", f"no topic {name!r} (topics: "
                       f"{', '.join(t.name for t in topics)})")
    return name


def _window(ctx: Reader, items: Items, where: str, steps: Sequence[Any]
            ) -> tuple[int | None, int | None]:
    """``from`` and ``until`` as step indices: the client starts right after the step
    ``from`` names has run and stops right after the one ``until`` names has run."""
    found: dict[str, int | None] = {"from": None, "until": None}
    for key in found:
        if key not in items:
            continue
        knode = items[key][1]
        name = ctx.str_(knode, f"{where}.{key}")
        index = next((i for i, s in enumerate(steps) if s.name == name), None)
        if index is None:
            names = [str(s.name) for s in steps if s.name is not None]
            raise ctx.fail(knode, f"{where}.{key}", f"no step named {name!r} ("
                           + (f"named steps: {', '.join(names)}" if names else
                              "no step is named") + "; name one with name: beside its kind, "
                           "e.g. - {kill: {broker: 2}, name: leader-dies})")
        found[key] = index
    start, stop = found["from"], found["until"]
    if start is not None and start == len(steps) - 1:
        raise ctx.fail(items["from"][1], f"{where}.from", f"{steps[start].name!r} is the "
                       "last step: the client would run during no step (name an earlier "
                       "step, or leave the entry out)")
    if start is not None and stop is not None and stop <= start:
        raise ctx.fail(items["until"][1], f"{where}.until", f"until {steps[stop].name!r} "
                       f"(steps[{stop}]) must come after from {steps[start].name!r} "
                       f"(steps[{start}]): the client runs from right after from's step "
                       "until right after until's")
    return start, stop


def _count(ctx: Reader, items: Items, where: str, most: int) -> int:
    return ctx.int_(items["count"][1], f"{where}.count", 1, most) if "count" in items else 1


def _producer(ctx: Reader, node: Node, where: str, topics: Sequence[Any],
              steps: Sequence[Any]) -> ProducerSpec:
    it = ctx.mapping(node, where)
    ctx.unknown(it, PRODUCER_KEYS, where)
    acks = ctx.choice(it, "acks", where, ACKS, "all", "0, 1 or all")
    idempotent = acks == "all"
    if "idempotent" in it:
        idempotent = ctx.bool_(it["idempotent"][1], f"{where}.idempotent")
        if idempotent and acks != "all":
            raise ctx.fail(it["idempotent"][1], f"{where}.idempotent", "idempotence needs "
                           f"acks all (the client refuses it with acks {acks})")
    rate: int | None = 1000
    if "rate" in it:
        rnode = it["rate"][1]
        if ctx.scalar(rnode, f"{where}.rate") is None:
            rate = None
        else:
            rate = ctx.int_(rnode, f"{where}.rate", 1, MAX_RATE)
    keys = ctx.int_(it["keys"][1], f"{where}.keys", 1, MAX_KEYS) if "keys" in it else 1000
    records = ctx.int_(it["records"][1], f"{where}.records", 1, MAX_RECORDS) \
        if "records" in it else None
    start, stop = _window(ctx, it, where, steps)
    return ProducerSpec(topic=_topic(ctx, it, where, topics),
                        count=_count(ctx, it, where, MAX_PRODUCERS), rate=rate, acks=acks,
                        idempotent=idempotent, keys=keys, records=records,
                        line=node.start_mark.line + 1, from_step=start, until_step=stop)


def _consumer(ctx: Reader, node: Node, where: str, topics: Sequence[Any], index: int,
              steps: Sequence[Any]) -> ConsumerSpec:
    it = ctx.mapping(node, where)
    ctx.unknown(it, CONSUMER_KEYS, where)
    mode = ctx.choice(it, "mode", where, MODES, "assign", "assign (every partition from its "
                      "start) or group (subscribe)")
    group: str | None = None
    if "group" in it:
        gnode = it["group"][1]
        group = ctx.str_(gnode, f"{where}.group")
        if not TOPIC_RE.fullmatch(group) or len(group) > MAX_GROUP:
            raise ctx.fail(gnode, f"{where}.group", f"invalid group id {group[:MAX_GROUP]!r}: "
                           f"1..{MAX_GROUP} of letters, digits, '.', '_' and '-'")
    elif mode == "group":
        group = f"traffic-g{index}"  # the entry's consumers share one group
    commit = ctx.bool_(it["commit"][1], f"{where}.commit") if "commit" in it else False
    isolation = ctx.choice(it, "isolation", where, ISOLATION, "read_uncommitted",
                           "read_uncommitted or read_committed")
    start, stop = _window(ctx, it, where, steps)
    return ConsumerSpec(topic=_topic(ctx, it, where, topics),
                        count=_count(ctx, it, where, MAX_CONSUMERS), mode=mode, group=group,
                        commit=commit, isolation=isolation, line=node.start_mark.line + 1,
                        from_step=start, until_step=stop)
