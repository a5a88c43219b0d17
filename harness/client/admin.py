"""Cluster administration over the observer's untouched path (kafka-python)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import kafka.errors as kafka_errors
from kafka.admin import ConfigResourceType, NewTopic
from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    ElectionType,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
)
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
)

from harness.infra import procs
from harness.infra.errors import HarnessError


class Observer(Protocol):
    """What an administrative call needs of the observer (harness.client.observe): its
    admin client, a request to one broker, the brokers that are running, and those of them
    that reach the active controller."""

    def admin(self) -> Any: ...

    def _send(self, node: int, request: Any) -> Any: ...

    def _running_brokers(self) -> list[int]: ...

    def current_brokers(self) -> list[int]: ...

_REQUEST_TIMEOUT_MS = 4000
ELECTION_TYPES = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}


class AdminError(HarnessError):
    """The cluster rejected an administrative request."""


#: Topic creation retries while the admin client does not yet know a broker of the
#: assignment: at most this many attempts, this long in all, this far apart.
CREATE_ATTEMPTS, CREATE_WITHIN_S, CREATE_INTERVAL_S = 20, 30.0, 0.5


def create_topic(observer: Observer, name: str, replicas: list[int],
                 config: Mapping[str, str], more: Sequence[Sequence[int]] = ()) -> None:
    """``replicas``: partition 0's; ``more``: partitions 1, 2, ...'s.

    kafka-python sends CreateTopics to a broker its metadata names and raises
    UnknownBrokerIdError when that metadata does not list it yet: a client that
    bootstrapped while brokers were still registering (seen on 3.8.1 with 5 controllers
    under load). That, and only that, is retried, bounded; any other error fails at once."""
    assignment = {p: list(r) for p, r in enumerate([replicas, *more])}
    brokers = {b for r in assignment.values() for b in r}
    topic = NewTopic(name, replica_assignments=assignment,
                     topic_configs={k: str(v) for k, v in config.items()})
    try:
        for attempt in Retrying(
                stop=stop_after_attempt(CREATE_ATTEMPTS) | stop_after_delay(CREATE_WITHIN_S),
                wait=wait_fixed(CREATE_INTERVAL_S), reraise=True,
                retry=retry_if_exception(lambda e: _client_lacks_broker(observer, e, brokers)),
                before_sleep=lambda _: _refresh_metadata(observer)):
            with attempt:
                procs.check_interrupted()
                observer.admin().create_topics([topic], timeout_ms=30000)
    except Exception as exc:
        raise AdminError(f"creating topic {name} with replicas {replicas} failed: "
                         f"{type(exc).__name__}: {exc}") from exc


def _client_lacks_broker(observer: Observer, exc: BaseException, brokers: set[int]) -> bool:
    """The admin client refused to send because its metadata lacks a broker, and a broker
    of the assignment is that one or is still missing from it."""
    if not isinstance(exc, kafka_errors.UnknownBrokerIdError):
        return False
    unknown = exc.args[0] if exc.args else None
    return unknown in brokers or bool(_unknown_brokers(observer, brokers))


def _client_metadata(observer: Observer) -> Any:
    """The admin client's cluster metadata (kafka-python keeps it on its client manager)."""
    client = observer.admin()
    manager = getattr(client, "_manager", None) or getattr(client, "_client", None)
    return getattr(manager, "cluster", None)


def _unknown_brokers(observer: Observer, brokers: set[int]) -> set[int]:
    cluster = _client_metadata(observer)
    if cluster is None:
        return set()
    return {b for b in brokers if cluster.broker_metadata(b) is None}


def _refresh_metadata(observer: Observer) -> None:
    cluster = _client_metadata(observer)
    if cluster is not None:
        cluster.request_update()


def alter_config(observer: Observer, scope: str, name: str, config: Mapping[str, str]) -> None:
    """scope 'topic' (name = topic) or 'cluster' (the default broker resource, name '').
    IncrementalAlterConfigs (SET) sent to a running broker, which forwards it to the
    controller: kafka-python's own alter_configs refuses the cluster default resource ''."""
    rtype = ConfigResourceType.TOPIC if scope == "topic" else ConfigResourceType.BROKER
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[R(
        resource_type=int(rtype), resource_name=name if scope == "topic" else "",
        configs=[R.AlterableConfig(name=k, config_operation=0, value=str(v))
                 for k, v in config.items()])], validate_only=False)
    what = f"altering {scope} config {dict(config)}"
    resp = to_controller(observer, req, what)
    for r in resp.responses:
        if r.error_code:
            raise AdminError(f"{what}: error {r.error_code} {r.error_message}")


def to_controller(observer: Observer, request: object, what: str) -> Any:
    """Send a request that a broker forwards to the active controller, through a broker
    that reaches it (kafka-python's 'controller' in KRaft is a random broker, possibly a
    dead or cut-off one). A broker cut from the controller keeps the request queued and
    forwards it once its link heals: the controller then applies it late, after later
    steps, and again if the harness had sent it elsewhere meanwhile (seen on 4.3.1, hunt
    fuzz-s36-4: a reassignment re-applied after the cancel that followed it). So only
    such brokers are asked, and a request that timed out, which may yet be applied, is not
    sent again."""
    brokers = observer.current_brokers()
    if not brokers:
        raise AdminError(f"{what}: no running broker reaches the active controller to "
                         "forward it")
    last: Exception | None = None
    for node in brokers:
        try:
            return observer._send(node, request)
        except (kafka_errors.RequestTimedOutError, kafka_errors.KafkaTimeoutError) as exc:
            raise AdminError(f"{what}: broker {node} did not answer in time; not sent again, "
                             f"since the controller may still apply it ({exc})") from exc
        except Exception as exc:  # noqa: BLE001 - not delivered: try the next broker
            last = exc
    raise AdminError(f"{what} failed: {last}")


#: How long the controller may take to commit a topic's creation or deletion.
TOPIC_CHANGE_TIMEOUT_MS = 30_000


def delete_topic(observer: Observer, name: str) -> str | None:
    """DeleteTopics of ``name`` through a broker that reaches the active controller
    (``to_controller``: kafka-python's admin would send it to a random, maybe dead,
    broker); the error's name when the controller refused it, else None."""
    D = DeleteTopicsRequest
    request = D(topics=[D.DeleteTopicState(name=name)], topic_names=[name],
                timeout_ms=TOPIC_CHANGE_TIMEOUT_MS)
    response = to_controller(observer, request, f"deleting topic {name}")
    codes = [r.error_code for r in response.responses if r.error_code]
    return " ".join(kafka_errors.for_code(c).__name__ for c in codes) or None


def create_topic_at_controller(observer: Observer, name: str,
                               assignment: Sequence[Sequence[int]],
                               config: Mapping[str, str], partitions: int = -1,
                               replication_factor: int = -1) -> str | None:
    """CreateTopics of ``name`` with every partition's replicas (or, with no
    ``assignment``, ``partitions`` placed ``replication_factor`` times by the controller's
    placer), through a broker that reaches the active controller (as ``delete_topic``);
    the error (name and message) when the controller refused it, else None."""
    C = CreateTopicsRequest.CreatableTopic
    placed = not assignment
    topic = C(name=name, num_partitions=partitions if placed else -1,
              replication_factor=replication_factor if placed else -1,
              assignments=[C.CreatableReplicaAssignment(partition_index=p, broker_ids=list(r))
                           for p, r in enumerate(assignment)],
              configs=[C.CreatableTopicConfig(name=k, value=str(v)) for k, v in config.items()])
    request = CreateTopicsRequest(topics=[topic], timeout_ms=TOPIC_CHANGE_TIMEOUT_MS,
                                  validate_only=False)
    response = to_controller(observer, request, f"creating topic {name}")
    refused = [f"{kafka_errors.for_code(t.error_code).__name__}: "
               f"{getattr(t, 'error_message', None) or ''}".rstrip(": ")
               for t in response.topics if t.error_code]
    return "; ".join(refused) or None


def create_partitions(observer: Observer, name: str, count: int,
                      assignment: Sequence[Sequence[int]]) -> str | None:
    """CreatePartitions: ``name`` grows to ``count`` partitions, the new ones on
    ``assignment`` (empty: where the controller's placer puts them), through a broker that
    reaches the active controller (as ``delete_topic``); the error when refused."""
    T = CreatePartitionsRequest.CreatePartitionsTopic
    rows = [T.CreatePartitionsAssignment(broker_ids=list(r)) for r in assignment] or None
    request = CreatePartitionsRequest(topics=[T(name=name, count=count, assignments=rows)],
                                      timeout_ms=TOPIC_CHANGE_TIMEOUT_MS, validate_only=False)
    response = to_controller(observer, request, f"adding partitions to {name}")
    refused = [f"{kafka_errors.for_code(r.error_code).__name__}: "
               f"{getattr(r, 'error_message', None) or ''}".rstrip(": ")
               for r in response.results if r.error_code]
    return "; ".join(refused) or None


def _partition_errors(response: Any) -> str:
    """The error names of an ElectLeaders response, top level and per partition."""
    codes = [getattr(response, "error_code", 0)] + [
        p.error_code for r in response.replica_election_results for p in r.partition_result]
    return " ".join(kafka_errors.for_code(c).__name__ for c in codes if c)


def elect_leaders(observer: Observer, election: str, topic: str, partition: int = 0) -> str | None:
    """Run ElectLeaders; returns the broker's error name for the partition, or None."""
    request = ElectLeadersRequest(election_type=ELECTION_TYPES[election],
                                  topic_partitions=[(topic, [partition])], timeout_ms=30000)
    try:
        result = to_controller(observer, request, f"electing ({election}) {topic}-{partition}")
    except Exception as exc:  # noqa: BLE001 - the outcome is evidence, not a harness fault
        return type(exc).__name__
    return _partition_error(_partition_errors(result))


def reassign(observer: Observer, topic: str, replicas: list[int] | None,
             partition: int = 0) -> str | None:
    """AlterPartitionReassignments (KIP-455) to ``replicas``, or, with None, cancel the
    ongoing reassignment. Returns the controller's error for the partition (e.g.
    NoReassignmentInProgressError, InvalidReplicaAssignmentError): a refusal the model
    predicts as "nothing changes", evidence rather than a harness fault. A request that
    fails as a whole raises AdminError."""
    what = "cancelling the reassignment of" if replicas is None else "reassigning"
    T = AlterPartitionReassignmentsRequest.ReassignableTopic
    req = AlterPartitionReassignmentsRequest(timeout_ms=30000, topics=[T(
        name=topic, partitions=[T.ReassignablePartition(
            partition_index=partition,
            replicas=None if replicas is None else list(replicas))])])
    resp = to_controller(observer, req, f"{what} {topic}-{partition} {replicas or ''}")
    if resp.error_code:
        raise AdminError(f"{what} {topic}-{partition}: error {resp.error_code}")
    for t in resp.responses:
        for p in t.partitions:
            if p.partition_index == partition and p.error_code:
                return type(kafka_errors.for_code(p.error_code)()).__name__
    return None


def _partition_error(result: object) -> str | None:
    text = repr(result)
    for marker in ("ElectionNotNeeded", "EligibleLeadersNotAvailable",
                   "PreferredLeaderNotAvailable", "NotController", "UnknownTopicOrPartition",
                   "InvalidReplicationFactor"):
        if marker in text:
            return marker
    return None


def _raise_on_errors(result: object, what: str) -> None:
    text = repr(result)
    if "error_code=0" not in text and "error_code" in text:
        raise AdminError(f"{what}: {text[:500]}")
