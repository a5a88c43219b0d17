"""Steps at the level the harness injects (fixtures/scenarios/FORMAT.md), one
dataclass per step kind. The model expands each into the protocol actions it
causes (fencing by session timeout, ISR shrink by lag, elections, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Produce:
    count: int = 1
    acks: str = "all"  # "0" | "1" | "all"
    #: Unique record ids, assigned by the runner (dataclasses.replace); when
    #: empty the model names them itself.
    record_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Consume:
    pass


@dataclass(frozen=True, slots=True)
class Isolate:
    node: int


@dataclass(frozen=True, slots=True)
class Partition:
    groups: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class Cut:
    src: int
    dst: int
    direction: str = "both"  # "both" | "oneway"


@dataclass(frozen=True, slots=True)
class Heal:
    pass


@dataclass(frozen=True, slots=True)
class Kill:
    broker: int


@dataclass(frozen=True, slots=True)
class LoseUnflushed:
    broker: int
    offset: int


@dataclass(frozen=True, slots=True)
class Stop:
    broker: int


@dataclass(frozen=True, slots=True)
class Restart:
    broker: int


@dataclass(frozen=True, slots=True)
class ReportLocalLog:
    """KIP-1303: the replica's local log as it reports it (Fetch to the leader, which
    forwards it in AlterPartition): localLogStartTimestamp ``age_ms`` before now and
    localLogSizeBytes. None leaves a field unreported. A follower bootstrapped from
    the last tiered offset (KIP-1023) reports a young, small local log."""

    broker: int
    age_ms: int | None = None
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class AlterConfig:
    scope: str  # "topic" | "cluster"
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Elect:
    #: preferred | unclean | longest_log_aggressive | longest_log_balanced | designated
    type: str = "preferred"
    broker: int | None = None


@dataclass(frozen=True, slots=True)
class Reassign:
    replicas: tuple[int, ...]


#: Await fields left unset are not checked.
UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class Await:
    """Explicit expectation; ``leader`` None means leaderless (FORMAT.md)."""

    expect: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 30.0


Step = (Produce | Consume | Isolate | Partition | Cut | Heal | Kill | LoseUnflushed | Stop
        | Restart | ReportLocalLog | AlterConfig | Elect | Reassign | Await)

STEP_KINDS: dict[str, type] = {
    "produce": Produce, "consume": Consume, "isolate": Isolate, "partition": Partition,
    "cut": Cut, "heal": Heal, "kill": Kill, "lose_unflushed": LoseUnflushed, "stop": Stop,
    "restart": Restart, "local_log": ReportLocalLog, "alter_config": AlterConfig,
    "elect": Elect, "reassign": Reassign, "await": Await,
}

ELECTION_TYPES = ("preferred", "unclean", "longest_log_aggressive", "longest_log_balanced",
                  "designated")


def step_to_dict(step: Step) -> dict[str, Any]:
    """The FORMAT.md mapping of a step (one key)."""
    match step:
        case Produce(count=c, acks=a):
            return {"produce": {"count": c, "acks": a if a == "all" else int(a)}}
        case Consume():
            return {"consume": {}}
        case Isolate(node=n):
            return {"isolate": {"node": n}}
        case Partition(groups=g):
            return {"partition": {"groups": [list(x) for x in g]}}
        case Cut(src=s, dst=d, direction=dr):
            return {"cut": {"src": s, "dst": d, "direction": dr}}
        case Heal():
            return {"heal": {}}
        case Kill(broker=b):
            return {"kill": {"broker": b}}
        case LoseUnflushed(broker=b, offset=o):
            return {"lose_unflushed": {"broker": b, "offset": o}}
        case Stop(broker=b):
            return {"stop": {"broker": b}}
        case Restart(broker=b):
            return {"restart": {"broker": b}}
        case ReportLocalLog(broker=b, age_ms=age, size_bytes=size):
            log: dict[str, Any] = {"broker": b}
            if age is not None:
                log["age_ms"] = age
            if size is not None:
                log["size_bytes"] = size
            return {"local_log": log}
        case AlterConfig(scope=s, config=c):
            return {"alter_config": {"scope": s, "config": dict(c)}}
        case Elect(type=t, broker=b):
            params: dict[str, Any] = {"type": t}
            if b is not None:
                params["broker"] = b
            return {"elect": params}
        case Reassign(replicas=r):
            return {"reassign": {"replicas": list(r)}}
        case Await(expect=e, timeout_s=t):
            return {"await": {**dict(e), "timeout_s": t}}
    raise TypeError(f"not a step: {step!r}")
