"""The driver's wire protocol, on the Python side: settings, events, answers (no process).

One JSON object per line each way (harness/differential/README.md has the whole protocol).
The first line sent is the session's :class:`Settings`; the driver answers it with a
:class:`Ready` (or ``{"unsupported": reason}``: :class:`SessionUnsupported`). Then one event
per line, each answered by one :class:`Answer` in order.

Events are plain dicts ``{"op": ..., ...}``; :func:`check_event` rejects an unknown op, a
missing or unknown field before anything is sent, and the helpers below build them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from harness.infra.errors import HarnessError, UsageError

PROTOCOL = 1

#: op -> (required fields, optional fields). Keep in step with ControllerDriver.dispatch.
OPS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "register": (frozenset({"broker"}), frozenset({"clean", "logDirs"})),
    "unfence": (frozenset({"broker"}), frozenset()),
    "heartbeat": (frozenset({"broker"}), frozenset({"wantFence", "wantShutDown", "caughtUp",
                                                    "offlineDirs", "cordonedDirs"})),
    "fence": (frozenset({"broker"}), frozenset()),
    "controlledShutdown": (frozenset({"broker"}), frozenset({"maxRounds"})),
    "unregister": (frozenset({"broker"}), frozenset()),
    "createTopic": (frozenset({"topic"}),
                    frozenset({"assignment", "partitions", "replicationFactor", "configs",
                               "indexes", "validateOnly"})),
    "createPartitions": (frozenset({"topic", "count"}), frozenset({"assignment"})),
    "deleteTopic": (frozenset({"topic"}), frozenset({"byId"})),
    "updateFeature": (frozenset({"name", "level"}), frozenset({"upgradeType"})),
    "alterPartition": (frozenset({"topic", "isr"}),
                       frozenset({"partition", "leader", "leaderEpoch", "partitionEpoch",
                                  "leaderRecoveryState", "brokerEpoch", "isrBrokerEpochs",
                                  "topicId"})),
    "completeReassignment": (frozenset({"topic"}),
                             frozenset({"partition", "isr", "leader", "leaderEpoch",
                                        "partitionEpoch", "brokerEpoch"})),
    "reassign": (frozenset({"topic", "replicas"}), frozenset({"partition", "allowRfChange"})),
    "cancelReassignment": (frozenset({"topic"}), frozenset({"partition"})),
    "electLeaders": (frozenset(), frozenset({"topic", "partition", "partitions", "type"})),
    "alterConfig": (frozenset({"configs"}), frozenset({"topic", "broker"})),
    "tick": (frozenset({"task"}), frozenset()),
    "assignDirs": (frozenset({"broker", "topic"}),
                   frozenset({"partition", "dir", "brokerEpoch", "back", "elect"})),
    "listReassignments": (frozenset(), frozenset({"topics", "partitions"})),
    "findTopics": (frozenset({"topics"}), frozenset()),
    "state": (frozenset(), frozenset()),
    #: A snapshot point: the build's snapshot loaded into fresh managers that answer the
    #: next ``shadow`` events beside the original (java/DriverSnapshot.java).
    #: ``omit``: a record type left out of the snapshot (a crafted broken one, for tests);
    #: ``dump``: the answer lists the snapshot's records (``snapshot.written``), for triage.
    "snapshot": (frozenset(), frozenset({"shadow", "omit", "dump"})),
}
TICK_TASKS = ("electPreferred", "electUnclean", "fenceStale")
ELECTION_TYPES = ("preferred", "unclean")
UPGRADE_TYPES = ("upgrade", "safeDowngrade", "unsafeDowngrade")
#: The feature that turns KIP-966's ELR on (level 1) and off (0) on 4.0+.
ELR_FEATURE = "eligible.leader.replicas.version"


class DriverError(HarnessError):
    """The driver process died, hung, or answered out of protocol."""


class DriverProtocolError(DriverError):
    """The driver could not read what it was sent (a harness bug, not the build's)."""


class SessionUnsupported(Exception):
    """This build cannot run a session with these settings (e.g. ELR on 3.6): the reason."""

    def __init__(self, reason: str, kafka: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kafka = kafka


@dataclass(frozen=True)
class Settings:
    """The session: what the controller is configured with before the first event.

    elr None: the build's default for a new cluster (on from 4.1, off before).
    metadata_version None: the build's latest production metadata.version.
    brokers: registered and unfenced, in order, before the first event.
    report "changed": each answer's partitions hold only those its records touched.
    coverage_classes: classes of org.apache.kafka.controller whose JaCoCo probes each answer
    reports when newly set (``Answer.new_probes``; needs the driver under the JaCoCo agent:
    coverage.py)."""

    brokers: tuple[int, ...] = ()
    elr: bool | None = None
    min_isr: int = 1
    unclean_election: bool = False
    metadata_version: str | None = None
    session_timeout_ms: int = 9000
    report: Literal["all", "changed"] = "all"
    static_config: Mapping[str, str] = field(default_factory=dict)
    coverage_classes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"protocol": PROTOCOL, "brokers": list(self.brokers),
                               "minIsr": self.min_isr, "uncleanElection": self.unclean_election,
                               "sessionTimeoutMs": self.session_timeout_ms,
                               "report": self.report}
        if self.elr is not None:
            out["elr"] = self.elr
        if self.metadata_version is not None:
            out["metadataVersion"] = self.metadata_version
        if self.static_config:
            out["staticConfig"] = dict(self.static_config)
        if self.coverage_classes:
            out["coverageClasses"] = list(self.coverage_classes)
        return out


def check_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event as a dict, or a UsageError naming what is wrong with it."""
    if not isinstance(event, Mapping):
        raise UsageError(f"an event is a mapping with an 'op', not {event!r}")
    op = event.get("op")
    if op not in OPS:
        raise UsageError(f"unknown event op {op!r}; known: {', '.join(sorted(OPS))}")
    required, optional = OPS[op]
    missing = sorted(required - event.keys())
    if missing:
        raise UsageError(f"event {op} needs {', '.join(missing)}: {dict(event)}")
    unknown = sorted(event.keys() - required - optional - {"op"})
    if unknown:
        raise UsageError(f"event {op} has no field {', '.join(unknown)}; it takes "
                         f"{', '.join(sorted(required | optional))}")
    if op == "tick" and event["task"] not in TICK_TASKS:
        raise UsageError(f"tick task must be one of {', '.join(TICK_TASKS)}, not "
                         f"{event['task']!r}")
    if op == "updateFeature" and event.get("upgradeType", "upgrade") not in UPGRADE_TYPES:
        raise UsageError(f"updateFeature upgradeType must be one of {', '.join(UPGRADE_TYPES)}, "
                         f"not {event['upgradeType']!r}")
    if op == "updateFeature" and (not isinstance(event["level"], int)
                                  or isinstance(event["level"], bool)):
        raise UsageError(f"updateFeature level must be an integer, not {event['level']!r}")
    if op == "electLeaders" and event.get("type", "preferred") not in ELECTION_TYPES:
        raise UsageError(f"electLeaders type must be one of {', '.join(ELECTION_TYPES)}, not "
                         f"{event['type']!r}")
    return dict(event)


def encode(obj: Mapping[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


# ---- event helpers ----

def register(broker: int, clean: bool = True) -> dict[str, Any]:
    """A new incarnation of the broker registers; clean: it remembers its last broker epoch
    (PreviousBrokerEpoch), as after a clean shutdown; else -1, as after a crash."""
    return {"op": "register", "broker": broker, "clean": clean}


def unfence(broker: int) -> dict[str, Any]:
    """A heartbeat from a caught-up broker that does not want to be fenced."""
    return {"op": "unfence", "broker": broker}


def fence(broker: int) -> dict[str, Any]:
    """The broker stops heartbeating: its session expires, the controller fences it."""
    return {"op": "fence", "broker": broker}


def controlled_shutdown(broker: int) -> dict[str, Any]:
    return {"op": "controlledShutdown", "broker": broker}


def unregister(broker: int) -> dict[str, Any]:
    return {"op": "unregister", "broker": broker}


def create_topic(topic: str, assignment: Sequence[Sequence[int]],
                 configs: Mapping[str, str] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"op": "createTopic", "topic": topic,
                             "assignment": [list(r) for r in assignment]}
    if configs:
        event["configs"] = dict(configs)
    return event


def create_partitions(topic: str, count: int,
                      assignment: Sequence[Sequence[int]] | None = None) -> dict[str, Any]:
    """CreatePartitions: the topic grows to ``count`` partitions, the new ones on the
    replica lists given (one per new partition), else where the controller places them."""
    event: dict[str, Any] = {"op": "createPartitions", "topic": topic, "count": count}
    if assignment is not None:
        event["assignment"] = [list(r) for r in assignment]
    return event


def delete_topic(topic: str) -> dict[str, Any]:
    """DeleteTopics of one topic by name: its partitions and configs go; the name may be
    created again (``create_topic``), with a new topic id."""
    return {"op": "deleteTopic", "topic": topic}


def update_feature(name: str, level: int, upgrade_type: str | None = None) -> dict[str, Any]:
    """UpdateFeatures of one feature to ``level`` (e.g. ``ELR_FEATURE`` 1 on, 0 off);
    ``upgrade_type`` default: upgrade, or safeDowngrade below the current level (as
    kafka-features.sh upgrade / downgrade)."""
    event: dict[str, Any] = {"op": "updateFeature", "name": name, "level": level}
    if upgrade_type is not None:
        event["upgradeType"] = upgrade_type
    return check_event(event)


def alter_partition(topic: str, isr: Sequence[int], partition: int = 0,
                    **fields: int) -> dict[str, Any]:
    """AlterPartition from the leader; fields: leader, leaderEpoch, partitionEpoch,
    brokerEpoch, leaderRecoveryState (default: what the controller holds)."""
    return check_event({"op": "alterPartition", "topic": topic, "partition": partition,
                        "isr": list(isr), **fields})


def complete_reassignment(topic: str, partition: int = 0,
                          isr: Sequence[int] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"op": "completeReassignment", "topic": topic,
                             "partition": partition}
    if isr is not None:
        event["isr"] = list(isr)
    return event


def reassign(topic: str, replicas: Sequence[int], partition: int = 0) -> dict[str, Any]:
    return {"op": "reassign", "topic": topic, "partition": partition, "replicas": list(replicas)}


def cancel_reassignment(topic: str, partition: int = 0) -> dict[str, Any]:
    return {"op": "cancelReassignment", "topic": topic, "partition": partition}


def elect_leaders(topic: str, election: str = "preferred", partition: int = 0) -> dict[str, Any]:
    return check_event({"op": "electLeaders", "topic": topic, "partition": partition,
                        "type": election})


def alter_config(configs: Mapping[str, str | None], topic: str | None = None) -> dict[str, Any]:
    """Set (or, for None, delete) configs of a topic, or the cluster's default (no topic)."""
    event: dict[str, Any] = {"op": "alterConfig", "configs": dict(configs)}
    if topic is not None:
        event["topic"] = topic
    return event


def tick(task: str) -> dict[str, Any]:
    return check_event({"op": "tick", "task": task})


def snapshot(shadow: int | None = None) -> dict[str, Any]:
    """A snapshot point: the controller's state written as the build's snapshot, loaded
    into fresh managers, which answer the next ``shadow`` events (the driver's default
    without it) beside the original; a difference is the answer's ``snapshotDiff``."""
    return check_event({"op": "snapshot"} if shadow is None else
                       {"op": "snapshot", "shadow": shadow})


# ---- answers ----

@dataclass(frozen=True)
class Answer:
    """One event's answer. ok: the controller accepted it; unsupported: this build cannot
    run it (the reason); error: the controller refused it ("NAME: message"). records: what
    the controller wrote, replayed in order; partitions and brokers: the state after."""

    seq: int
    op: str
    ok: bool
    unsupported: str | None
    error: str | None
    error_name: str | None
    exception: str | None
    records: tuple[dict[str, Any], ...]
    partitions: dict[str, dict[str, Any]]
    brokers: dict[str, dict[str, Any]]
    notes: tuple[str, ...]
    raw: dict[str, Any]
    #: JaCoCo probes of the settings' coverage classes first set by this event in this
    #: driver's JVM: {class: probe indexes} (empty without coverage).
    new_probes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: Partitions ("topic-index") the event's records removed (a deleted topic's).
    removed: tuple[str, ...] = ()
    #: Snapshot equivalence: how the fresh managers of the last snapshot point answered
    #: this event otherwise (name, detail, path, original, fresh, snapshotAt), or None.
    snapshot_diff: dict[str, Any] | None = None

    def partition(self, topic: str, index: int = 0) -> dict[str, Any]:
        key = f"{topic}-{index}"
        if key not in self.partitions:
            raise KeyError(f"no partition {key} in the answer to event {self.seq} ({self.op}); "
                           f"it has {sorted(self.partitions)}")
        return self.partitions[key]


@dataclass(frozen=True)
class Ready:
    """The answer to the settings: the session runs."""

    kafka: str
    metadata_version: str
    metadata_version_production: bool
    elr: bool
    elr_mode: str
    unsupported_events: dict[str, str]
    notes: tuple[str, ...]
    records: tuple[dict[str, Any], ...]
    partitions: dict[str, dict[str, Any]]
    brokers: dict[str, dict[str, Any]]
    raw: dict[str, Any]
    #: {class: probe count} of the coverage classes that run instrumented.
    coverage_probes: dict[str, int] = field(default_factory=dict)
    #: Probes set while the session started (before the first event).
    new_probes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: {feature: (min, max)} levels this build's controller supports (QuorumFeatures).
    supported_features: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def elr_feature(self) -> bool:
        """The build has eligible.leader.replicas.version (4.0+): ELR can be turned on and
        off live (``update_feature``)."""
        return ELR_FEATURE in self.supported_features


def _probes(d: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    raw = d.get("newProbes")
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
            isinstance(v, list) and all(isinstance(i, int) for i in v) for v in raw.values()):
        raise DriverError(f"newProbes is not {{class: [probe index, ...]}}: {raw!r:.300}")
    return {str(k): tuple(v) for k, v in raw.items()}


def _decode(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise DriverError(f"the driver answered a line that is not JSON ({exc}): "
                          f"{line[:300]!r}") from exc
    if not isinstance(value, dict):
        raise DriverError(f"the driver answered {line[:300]!r}, not a JSON object")
    return value


def _fail_on_driver_faults(d: dict[str, Any]) -> None:
    if "protocolError" in d:
        raise DriverProtocolError(f"the driver could not read what it was sent: "
                                  f"{d['protocolError']}")
    if "fatal" in d:
        raise DriverError(f"the driver stopped: replaying the controller's records failed: "
                          f"{d['fatal']}")


def parse_ready(line: bytes) -> Ready:
    d = _decode(line)
    if "unsupported" in d:
        raise SessionUnsupported(str(d["unsupported"]), d.get("kafka"))
    _fail_on_driver_faults(d)
    if d.get("ok") is not True or d.get("ready") is not True:
        raise DriverError(f"the driver's first answer is not ready: {line[:300]!r}")
    if d.get("protocol") != PROTOCOL:
        raise DriverError(f"the driver speaks protocol {d.get('protocol')}, this harness "
                          f"{PROTOCOL}: the Java source and harness/differential disagree")
    return Ready(kafka=str(d["kafka"]), metadata_version=str(d["metadataVersion"]),
                 metadata_version_production=bool(d["metadataVersionProduction"]),
                 elr=bool(d["elr"]), elr_mode=str(d["elrMode"]),
                 unsupported_events=dict(d.get("unsupportedEvents", {})),
                 notes=tuple(d.get("notes", ())), records=tuple(d.get("records", ())),
                 partitions=dict(d.get("partitions", {})), brokers=dict(d.get("brokers", {})),
                 raw=d, coverage_probes={str(k): int(v) for k, v in
                                         dict(d.get("coverageProbes", {})).items()},
                 new_probes=_probes(d),
                 supported_features={str(k): (int(v[0]), int(v[1])) for k, v in
                                     dict(d.get("supportedFeatures", {})).items()})


def parse_answer(line: bytes, seq: int,
                 brokers_before: Mapping[str, dict[str, Any]] | None = None) -> Answer:
    """brokers_before: the brokers as the answers before said them (report "changed"
    sends only the brokers that changed, ``brokersChanged`` and ``brokersGone``): the
    answer's ``brokers`` is then the whole map again."""
    d = _decode(line)
    _fail_on_driver_faults(d)
    if d.get("seq") != seq:
        raise DriverError(f"the driver answered event {d.get('seq')} where {seq} was due: "
                          f"{line[:300]!r}")
    unsupported = d.get("unsupported")
    if unsupported is None and not isinstance(d.get("ok"), bool):
        raise DriverError(f"answer {seq} has neither ok nor unsupported: {line[:300]!r}")
    brokers = dict(d.get("brokers", {}))
    changed, gone = d.get("brokersChanged"), d.get("brokersGone")
    if changed is not None or gone is not None:
        if brokers_before is None:
            raise DriverError(f"answer {seq} says which brokers changed, not them all, and "
                              f"no brokers are known before it: {line[:300]!r}")
        brokers = dict(brokers_before)
        brokers.update(changed or {})
        for b in gone or ():
            brokers.pop(str(b), None)
        if len(brokers) != len(brokers_before) or gone:
            # in the order a whole map comes in (by id), as the campaign reads it
            brokers = {k: brokers[k] for k in sorted(brokers, key=int)}
    return Answer(seq=seq, op=str(d.get("op", "")), ok=d.get("ok") is True,
                  unsupported=None if unsupported is None else str(unsupported),
                  error=d.get("error"), error_name=d.get("errorName"),
                  exception=d.get("exception"), records=tuple(d.get("records", ())),
                  partitions=dict(d.get("partitions", {})), brokers=brokers,
                  notes=tuple(d.get("notes", ())), raw=d, new_probes=_probes(d),
                                    removed=tuple(str(k) for k in d.get("removed", ())),
                  snapshot_diff=d.get("snapshotDiff"))


def heartbeat(broker: int, **fields: Any) -> dict[str, Any]:
    """Any heartbeat; fields: wantFence, wantShutDown, caughtUp, offlineDirs and
    cordonedDirs (indexes into the broker's registered log directories; one past them is a
    directory it never registered)."""
    return check_event({"op": "heartbeat", "broker": broker, **fields})


def assign_dirs(broker: int, topic: str, partition: int = 0, directory: int = 0
                ) -> dict[str, Any]:
    """AssignReplicasToDirs (KIP-858, 3.7+): the broker's replica of the partition is in
    its directory number ``directory``."""
    return check_event({"op": "assignDirs", "broker": broker, "topic": topic,
                        "partition": partition, "dir": directory})


def list_reassignments(topics: Sequence[str] | None = None) -> dict[str, Any]:
    """ListPartitionReassignments of the topics (None: every reassigning partition)."""
    event: dict[str, Any] = {"op": "listReassignments"}
    if topics is not None:
        event["topics"] = list(topics)
    return event


def find_topics(topics: Sequence[str]) -> dict[str, Any]:
    """The controller's topic lookups by name, by id and of every topic (no records)."""
    return {"op": "findTopics", "topics": list(topics)}
