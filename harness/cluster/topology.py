"""Who is in a cluster and which links join them. Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

CONTROLLER_BASE = 100
CLIENT = 250  # pseudo node id for the harness's own producers and consumers
#: What a backend can wire: node j of a block is <net>.A.0.j and node i's proxy towards j
#: is <net>.A.i.j, so every id must stay below CLIENT (250) and the Toxiproxy API (254);
#: brokers 1..9 and an odd controller quorum are what the harness is built and tested for.
MAX_BROKERS = 9
CONTROLLER_COUNTS = (1, 3, 5)
#: Log directories per broker: each directory after the first is a loop-mounted
#: filesystem of its own (harness.cluster.logdirs), a few per run on 2 cores.
MAX_LOG_DIRS = 4


@dataclass(frozen=True)
class ClusterShape:
    brokers: int = 3
    controllers: int = 1
    elr: bool | None = None  # None: the build's default
    broker_config: dict[str, str] = field(default_factory=dict)
    #: The cluster's birth (FORMAT.md "The cluster's birth"): the metadata.version it is
    #: formatted at ("3.9-IV0"; None: the birth builds' rule), feature levels given to the
    #: storage tool, whether non-production levels are allowed (the build's unstable switch),
    #: nodes born on another build than the run's ((node, "X.Y.Z"), sorted).
    metadata_version: str | None = None
    features: tuple[tuple[str, int], ...] = ()
    unstable_features: bool = False
    builds: tuple[tuple[int, str], ...] = ()
    #: Log directories per broker (KIP-858 JBOD, KRaft 3.7+): directory 0 holds the
    #: metadata log too; directories 1.. are filesystems of their own that a
    #: ``fail_log_dir`` step can fail (docs/LOG-DIRS.md).
    log_dirs: int = 1
    #: Tiered storage (KIP-405) on every broker: Kafka's LocalTieredStorage keeps the
    #: remote tier in the run directory (harness/cluster/tiered.py, FORMAT.md "Tiered
    #: storage").
    tiered_storage: bool = False
    #: Where the scenario declared each birth key (key -> line), for errors found once the
    #: builds are resolved.
    lines: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise ValueError(f"brokers={self.brokers}: choose 1..{MAX_BROKERS}")
        if self.controllers not in CONTROLLER_COUNTS:
            raise ValueError(f"controllers={self.controllers}: choose 1, 3 or 5")
        if not 1 <= self.log_dirs <= MAX_LOG_DIRS:
            raise ValueError(f"log_dirs={self.log_dirs}: choose 1..{MAX_LOG_DIRS}")

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> tuple[int, ...]:
        return tuple(range(CONTROLLER_BASE, CONTROLLER_BASE + self.controllers))

    @property
    def nodes(self) -> tuple[int, ...]:
        return self.broker_ids + self.controller_ids

    def line(self, key: str) -> int:
        """The line the scenario declared ``key`` of the cluster on (0: not known)."""
        return dict(self.lines).get(key, 0)

    def build_version(self, node: int) -> str | None:
        """The version node is born on (None: the run's build)."""
        return dict(self.builds).get(node)

    def is_controller(self, node: int) -> bool:
        return node >= CONTROLLER_BASE and node != CLIENT

    def links(self) -> list[tuple[int, int]]:
        """Directed links a connection can be opened on: (initiator, acceptor).

        Brokers fetch from brokers and controllers; controllers talk to controllers;
        the harness's clients talk to brokers. Controllers never dial brokers.
        """
        out = [(src, dst) for src in self.nodes for dst in self.nodes
               if src != dst and not (self.is_controller(src) and not self.is_controller(dst))]
        out += [(CLIENT, broker) for broker in self.broker_ids]
        return out


def node_name(node: int) -> str:
    if node == CLIENT:
        return "client"
    return f"controller-{node}" if node >= CONTROLLER_BASE else f"broker-{node}"


def host_alias(node: int) -> str:
    """The name a node advertises; each node resolves it to its own proxy."""
    return f"node-{node}"
