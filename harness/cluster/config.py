"""server.properties for each node. Pure: backends pass in the addresses to use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.cluster.topology import ClusterShape, host_alias
from harness.infra.errors import UsageError

INTERNAL_PORT = 9092
CONTROLLER_PORT = 9093
CLIENT_PORT = 9094
OBSERVER_PORT = 9095
TOXIPROXY_API_PORT = 8474
#: Small heaps and a fast-starting JIT: a test cluster runs 4+ JVMs on 2 cores.
JVM_OPTS = ("-Xms192m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData", "-Xss512k", "-Djava.awt.headless=true")

# Timeouts short enough that a fence or ISR shrink happens within seconds. These are the
# waits a scenario pays for (a fence costs broker.session.timeout.ms, an ISR shrink
# replica.lag.time.max.ms); each is as short as it can be without firing on a healthy
# cluster on 2 shared cores (issue 15 kept them: see bench/RESULTS-speed.md):
TEST_FRIENDLY_BROKER = {
    # 6 heartbeats per session: a JVM stalled by start-up of 4 JVMs on 2 cores or a
    # SerialGC pause still makes one in time (a spurious fence changes a verdict).
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    # > 2 x (replica.fetch.wait.max.ms 500 + a fetch round trip): an idle in-sync
    # follower is never dropped; timing-follower-latency's 2 s round trip stays inside.
    "replica.lag.time.max.ms": "3000",
    # A fetch to a leader that went silent is given up after this; above the lag time,
    # so the leader drops a silent follower by lag before the follower gives up.
    "replica.socket.timeout.ms": "5000",
    "replica.fetch.backoff.ms": "200",
    # A broker's request to a lost controller fails after this and it retries; above a
    # few heartbeats, below the session timeout of the next try.
    "controller.quorum.request.timeout.ms": "2000",
    "controller.socket.timeout.ms": "5000",
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    # How often the controller looks for unclean elections to make (default 5 min).
    "unclean.leader.election.interval.ms": "1000",
    "log.flush.interval.messages": str(2**63 - 1),
}
#: Internal state no scenario judges, kept small because every run pays for it in CPU (on
#: 2 cores the suite is CPU-bound: bench/RESULTS-speed.md). Kafka's own test brokers do the
#: same (core/src/test/scala/unit/kafka/utils/TestUtils.scala, createBrokerConfig:
#: offsets.topic.num.partitions 5, log.cleaner.dedupe.buffer.size 2097152).
LEAN_INTERNALS = {
    # The read's consumer needs a group.id (confluent-kafka refuses one without), so its
    # coordinator lookup creates __consumer_offsets: 50 partitions x RF 3 by default, 150
    # replicas to create, elect, fetch and recover after each kill, for a group that never
    # commits. With one partition (and the buffer below) the suite costs ~10% less CPU
    # (4.3.1, 3 clusters: 476 -> 431 CPU-s, median of 2 interleaved repetitions each).
    "offsets.topic.num.partitions": "1",
    # The log cleaner allocates and zeroes this buffer at every broker start (128 MiB by
    # default: ~3% of a broker JVM's CPU); only the offsets topic is compacted, and it is
    # empty.
    "log.cleaner.dedupe.buffer.size": "2097152",
}
TEST_FRIENDLY_CONTROLLER = {
    "auto.leader.rebalance.enable": "false",  # the controller rebalances; as the brokers say
    "broker.session.timeout.ms": "3000",  # the controller fences: same values as above
    "broker.heartbeat.interval.ms": "500",
    # With several controllers, a lost quorum leader is replaced after about this.
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "unclean.leader.election.interval.ms": "1000",
}


@dataclass(frozen=True)
class NodeAddresses:
    bind_host: str  # where the node's listeners bind
    client_advertised: str  # host:port of the clients' (proxied) path to this broker
    observer_advertised: str  # host:port of the observer's untouched path


def voters(shape: ClusterShape) -> str:
    return ",".join(f"{c}@{host_alias(c)}:{CONTROLLER_PORT}" for c in shape.controller_ids)


#: Keys the harness writes to wire a node (roles, ids, listeners, quorum, data dirs) and
#: keys that would fight those: a scenario's or a marker's broker_config may not set them.
HARNESS_OWNED = frozenset({
    "process.roles", "node.id", "broker.id", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "controller.listener.names", "listeners",
    "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
    "security.inter.broker.protocol", "control.plane.listener.name", "early.start.listeners",
    "log.dirs", "log.dir", "metadata.log.dir", "zookeeper.connect",
})

#: broker_config keys a KRaft controller reads as well (cluster-wide defaults it applies
#: in elections, fencing, ELR and topic creation, and its own quorum/metadata settings):
#: these reach the controllers too; every other broker_config key stays on the brokers.
CONTROLLER_SHARED = frozenset({
    "auto.leader.rebalance.enable", "broker.heartbeat.interval.ms",
    "broker.session.timeout.ms", "default.replication.factor", "min.insync.replicas",
    "num.partitions", "unclean.leader.election.enable", "unclean.leader.election.interval.ms",
})
CONTROLLER_SHARED_PREFIXES = ("controller.quorum.", "metadata.", "unclean.recovery.",
                              "leader.imbalance.", "leader.election.",
                              "eligible.leader.replicas.")


def reaches_controllers(key: str) -> bool:
    """Whether a broker_config key is also written into the controllers' properties."""
    return key in CONTROLLER_SHARED or key.startswith(CONTROLLER_SHARED_PREFIXES)


def render(node: int, shape: ClusterShape, addr: NodeAddresses, data_dir: str,
           overrides: Mapping[str, str] | None = None,
           controller_leader_endpoints: bool = False) -> str:
    """server.properties of one node; ``overrides`` is the cluster's broker_config;
    ``controller_leader_endpoints``: the build sends the quorum leader's own endpoints to
    its followers (KIP-853, 3.9+), see controller_props."""
    overrides = dict(overrides or {})
    owned = sorted(set(overrides) & HARNESS_OWNED)
    if owned:
        raise UsageError(f"broker_config sets {', '.join(owned)}: the harness owns these "
                         "(it wires listeners, node ids, the quorum and data dirs); drop them")
    if shape.is_controller(node):
        props = controller_props(node, shape, addr, controller_leader_endpoints)
        overrides = {k: v for k, v in overrides.items() if reaches_controllers(k)}
    else:
        props = broker_props(node, shape, addr)
    props["log.dirs"] = data_dir
    props.update(overrides)
    return "".join(f"{escape(key, key=True)}={escape(str(value))}\n"
                   for key, value in props.items())


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
_KEY_ESCAPES = {"=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!", " ": "\\ "}


def escape(text: str, key: bool = False) -> str:
    """``text`` as java.util.Properties.load reads it back (ISO-8859-1, \\uXXXX escapes):
    backslashes and line breaks escaped, a leading space kept, non-ASCII as UTF-16 units;
    in a key also the separators ``=``, ``:``, space and the comment marks."""
    out = []
    for i, ch in enumerate(text):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif (key or i == 0) and ch in _KEY_ESCAPES:
            out.append(_KEY_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[j]:02x}{units[j + 1]:02x}" for j in range(0, len(units), 2)]
    return "".join(out)


def controller_props(node: int, shape: ClusterShape, addr: NodeAddresses,
                     leader_endpoints: bool = False) -> dict[str, str]:
    props = {
        "process.roles": "controller",
        "node.id": str(node),
        "controller.quorum.voters": voters(shape),
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://{addr.bind_host}:{CONTROLLER_PORT}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        **TEST_FRIENDLY_CONTROLLER,
    }
    if leader_endpoints:
        # Since KIP-853 (3.9) the quorum leader sends its own endpoints (BeginQuorumEpoch,
        # Fetch responses) and followers connect to those, not to controller.quorum.voters.
        # Unadvertised, that is the bind address: a path around the proxies that no
        # partition cuts (seen: a follower kept fetching from an active controller it was
        # partitioned from). Advertised by name, each peer resolves it to its own proxy.
        # Before 3.9 a controller-only node refuses advertised.listeners.
        props["advertised.listeners"] = f"CONTROLLER://{host_alias(node)}:{CONTROLLER_PORT}"
    return props


def broker_props(node: int, shape: ClusterShape, addr: NodeAddresses) -> dict[str, str]:
    internal_rf = str(min(3, shape.brokers))
    return {
        "process.roles": "broker",
        "node.id": str(node),
        "controller.quorum.voters": voters(shape),
        "controller.listener.names": "CONTROLLER",
        "listeners": (f"INTERNAL://{addr.bind_host}:{INTERNAL_PORT},"
                      f"CLIENT://{addr.bind_host}:{CLIENT_PORT},"
                      f"OBSERVER://{addr.bind_host}:{OBSERVER_PORT}"),
        "advertised.listeners": (f"INTERNAL://{host_alias(node)}:{INTERNAL_PORT},"
                                 f"CLIENT://{addr.client_advertised},"
                                 f"OBSERVER://{addr.observer_advertised}"),
        "listener.security.protocol.map": (
            "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT,OBSERVER:PLAINTEXT,CONTROLLER:PLAINTEXT"),
        "inter.broker.listener.name": "INTERNAL",
        "offsets.topic.replication.factor": internal_rf,
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": "1",
        **LEAN_INTERNALS,
        **TEST_FRIENDLY_BROKER,
    }


def log_configs() -> dict[str, str]:
    """File name -> content of logging configs every JVM gets (reload4j on 3.x, log4j2)."""
    log4j1 = ("log4j.rootLogger=INFO, stdout\n"
              "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
              "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
              "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
    log4j2 = ("rootLogger.level=INFO\nrootLogger.appenderRef.stdout.ref=STDOUT\n"
              "appender.stdout.type=Console\nappender.stdout.name=STDOUT\n"
              "appender.stdout.layout.type=PatternLayout\n"
              "appender.stdout.layout.pattern=[%d] %p %m (%c)%n\n")
    return {"log4j.properties": log4j1, "log4j2.properties": log4j2}
