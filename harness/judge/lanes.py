"""A topic of several partitions, judged as that many single-partition runs sharing one
cluster: one lane per partition.

Partitions are independent in the replication protocol except through the brokers they
share: a kill, a fence or an unclean registration acts on every partition a broker hosts,
and each lane's model sees the same broker steps. So a lane is the scenario as a
single-partition one: the topic's replicas are that partition's, steps on brokers and the
network are kept, a step on partitions (produce, consume, await, elect, ...) is kept where it
names the lane's partition or none, and elsewhere becomes an empty await (the lane's state
must hold). The runner drives one model per lane; the offline judges (audit, mutate,
transitions) take a lane's scenario and its events (``lane_events``) and judge them exactly as
they judge a single-partition run. A one-partition scenario has one lane: itself, with its
events unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.judge.axes import AxisVerdict
from harness.scenario.loader import Scenario
from harness.scenario.steps.topics import for_lane
from reference.model import steps as S

#: What a step on partitions is to a lane it does not name: nothing happens to the lane's
#: partition, whose settled state must hold.
UNTOUCHED = S.Await()


@dataclass(frozen=True)
class Lane:
    """One partition of one of the scenario's topics, and the scenario as seen from it."""

    partition: int
    scenario: Scenario

    @property
    def topic(self) -> str:
        return str(self.scenario.topic.name)

    @property
    def label(self) -> str:
        """Kafka's name for the partition (TopicPartition.toString)."""
        return f"{self.topic}-{self.partition}"


def lanes(scenario: Scenario) -> list[Lane]:
    """One lane per partition of every topic, in the topics' order, partition 0 first."""
    if single(scenario):
        return [Lane(0, scenario)]
    return [Lane(p, lane_scenario(scenario, t.name, p))
            for t in scenario.every_topic() for p in range(t.partitions)]


def single(scenario: Scenario) -> bool:
    """Whether the scenario has one partition (its lane is the scenario itself)."""
    topics = scenario.every_topic()
    return len(topics) == 1 and topics[0].partitions == 1


def lane_scenario(scenario: Scenario, topic: str, partition: int) -> Scenario:
    """The scenario as a single-partition one on ``partition`` of ``topic``."""
    (named,) = [t for t in scenario.every_topic() if t.name == topic]
    own = replace(named, replicas=named.replicas_of(partition), assignment=(),
                  born=(named.born_at(partition),),
                  placed=frozenset({0}) if partition in named.placed else frozenset())
    return replace(scenario, topic=own, topics=(),
                   steps=tuple(lane_step(s, topic, partition) for s in scenario.steps))


def lane_step(loaded: Any, topic: str, partition: int) -> Any:
    """One scenario step as the lane of ``partition`` of ``topic`` runs it."""
    named = not loaded.names_lanes() or loaded.targets(partition, topic)
    own = for_lane(loaded.step, partition) if named else None  # add_partitions: the new
    if not loaded.names_lanes() and own is loaded.step:          # partitions' own
        return loaded
    if own is None:
        return replace(loaded, step=UNTOUCHED, kind="await", mapping={"await": {}},
                       partition=None, topic=None, exists=None)
    return replace(loaded, step=own, mapping=_without_target(loaded.mapping), partition=None,
                   topic=None, exists=None)


def _without_target(mapping: Mapping[str, Any]) -> dict[str, Any]:
    ((name, params),) = dict(mapping).items()
    return {name: {k: v for k, v in dict(params or {}).items()
                   if k not in ("partition", "topic")}}


def lane_events(events: Iterable[Mapping[str, Any]], scenario: Scenario, lane: Lane
                ) -> list[dict[str, Any]]:
    """The run's events as the lane's single-partition run would have written them: events
    of other partitions left out, step events as the lane's steps (an untouched lane's
    produce is an empty await; a produce's record ids are the lane's own)."""
    copies = [dict(e) for e in events]
    if single(scenario):
        return copies
    mine = {e["record_id"] for e in copies
            if e.get("kind") == "produce" and _of(e, lane)}
    out: list[dict[str, Any]] = []
    for e in copies:
        if "partition" in e and not _of(e, lane):
            continue
        if e.get("kind") == "step" and e.get("index") is not None:
            loaded = scenario.steps[int(e["index"])]
            e = {**e, "step": _lane_step_params(e["step"], loaded, lane, mine)}
        out.append(e)
    return out


def _of(event: Mapping[str, Any], lane: Lane) -> bool:
    """Whether an event about a partition is about the lane's."""
    return (event.get("partition") == lane.partition
            and event.get("topic", lane.topic) == lane.topic)


def _lane_step_params(mapping: Mapping[str, Any], loaded: Any, lane: Lane, mine: set[str]
                      ) -> dict[str, Any]:
    """A recorded step's mapping as the lane ran it (``loaded``: the scenario's step)."""
    if lane_step(loaded, lane.topic, lane.partition).step is UNTOUCHED:
        return {"await": {}}  # a step on another partition: an empty await here
    ((name, params),) = _without_target(mapping).items()
    if "record_ids" in params:
        params["record_ids"] = [r for r in params["record_ids"] if r in mine]
    return {name: params}


#: How bad an axis verdict is, to pick a run's verdict from its lanes'.
_RANK = {"CONFORMS": 0, "SAFE": 0, "DEVIATES": 1, "UNSUPPORTED": 2, "DIVERGES": 3,
         "KIP-DIVERGES": 3, "UNSAFE": 3, "ERROR": 4, "INCOMPLETE": 4}


def merge_axes(per_lane: Sequence[tuple[Lane, Mapping[str, AxisVerdict]]]
               ) -> dict[str, AxisVerdict]:
    """The run's axis verdicts from its lanes': on each axis the worst lane's, its reason
    naming the partition unless every lane says the same, with every lane's details (each
    naming its partition, but for those every lane has: the trace's)."""
    if len(per_lane) == 1:
        return dict(per_lane[0][1])
    out: dict[str, AxisVerdict] = {}
    for axis in per_lane[0][1]:
        lane, worst = max(((ln, axes[axis]) for ln, axes in per_lane),
                          key=lambda pair: _RANK.get(pair[1].verdict, 4))
        shared = _shared(per_lane, axis)
        details = list(shared) + [{**d, "partition": ln.partition} for ln, axes in per_lane
                                  for d in axes[axis].details if d not in shared]
        alike = all((axes[axis].verdict, axes[axis].reason) == (worst.verdict, worst.reason)
                    for _, axes in per_lane)
        reason = worst.reason if alike or not worst.reason else f"{lane.label}: {worst.reason}"
        out[axis] = replace(worst, reason=reason, details=details,
                            fields=_merged_fields([axes[axis].fields for _, axes in per_lane]))
    return out


def _shared(per_lane: Sequence[tuple[Lane, Mapping[str, AxisVerdict]]], axis: str
            ) -> list[dict[str, Any]]:
    """Details every lane has alike (the trace's: it judges the whole metadata log)."""
    first = per_lane[0][1][axis].details
    return [d for d in first if all(d in axes[axis].details for _, axes in per_lane[1:])]


def _merged_fields(fields: Sequence[dict[str, list[str]] | None]) -> dict[str, list[str]] | None:
    known = [f for f in fields if f is not None]
    if not known:
        return None
    judged = sorted({x for f in known for x in f.get("judged", [])})
    unobservable = sorted(set.intersection(*(set(f.get("unobservable", [])) for f in known)))
    return {"judged": judged, "unobservable": unobservable}


def merge_checks(per_lane: Sequence[tuple[Lane, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The run's data checks from its lanes': a check fails if it fails on any partition;
    its details name their partition."""
    if len(per_lane) == 1:
        return per_lane[0][1]
    merged: dict[str, dict[str, Any]] = {}
    for ln, checks in per_lane:
        for c in checks:
            m = merged.setdefault(c["name"], {"name": c["name"], "ok": True, "details": []})
            m["ok"] = m["ok"] and c["ok"]
            m["details"] += [{**d, "partition": ln.partition} if isinstance(d, dict) else d
                             for d in c["details"]]
            if "predicted_by_model" in c:
                m.setdefault("predicted_by_model", []).extend(c["predicted_by_model"])
    return list(merged.values())
