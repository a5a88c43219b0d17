"""The event table: each driver event's handler (``EVENTS``), what the model does not
predict (``UNMODELLED_WHY``), one event applied under a profile (``apply``), and a cluster
following a build that accepted what the model refuses (``configured``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reference.model.controller import Ctx
from reference.model.controller_events.brokers import (
    _controlled_shutdown,
    _fence,
    _register,
    _unfence,
    _unregister,
)
from reference.model.controller_events.changes import _accepted, ctx_for
from reference.model.controller_events.cluster import Cluster, Prediction, TopicConf
from reference.model.controller_events.configs import _alter_config, _topic_conf
from reference.model.controller_events.elections import _elect_leaders, _tick
from reference.model.controller_events.features import _update_feature
from reference.model.controller_events.partitions import _alter_partition, _cancel, _reassign
from reference.model.controller_events.topics import (
    _create_partitions,
    _create_topic,
    _delete_topic,
)
from reference.model.state import evolve
from reference.releases.profiles import Profile

EVENTS: dict[str, Callable[[Cluster, Ctx, Mapping[str, Any]], Prediction | None]] = {
    "register": _register,
    "unfence": _unfence,
    "fence": _fence,
    "controlledShutdown": _controlled_shutdown,
    "unregister": _unregister,
    "createTopic": _create_topic,
    "createPartitions": _create_partitions,
    "deleteTopic": _delete_topic,
    "updateFeature": _update_feature,
    "alterPartition": _alter_partition,
    "completeReassignment": _alter_partition,
    "reassign": _reassign,
    "cancelReassignment": _cancel,
    "electLeaders": _elect_leaders,
    "alterConfig": _alter_config,
    "tick": _tick,
    "state": lambda c, ctx, e: _accepted([c]),
    # A snapshot point writes no record and changes nothing: the controller's snapshot
    # (QuorumController's SnapshotGenerator, 3.6+ the MetadataLoader's SnapshotEmitter,
    # MetadataImage.write) is of committed records; KIP-966 (seed 003) adds no state that
    # a snapshot leaves out.
    "snapshot": lambda c, ctx, e: _accepted([c]),
}

#: Events (and forms) the model does not predict: compared never, counted as UNMODELLED.
UNMODELLED_WHY = {
    "heartbeat": "a heartbeat's state machine (wantFence, wantShutDown, caughtUp) is not "
                 "modelled; unfence / controlledShutdown are",
    "createTopic": "a topic created by partitions and replication factor (the replica "
                   "placer) is not modelled; give an assignment",
    "createPartitions": "partitions added without an assignment (the replica placer) are "
                        "not modelled; give an assignment",
    "alterConfig": "broker-level configs are not modelled",
    "updateFeature": "features other than eligible.leader.replicas.version are not modelled",
    "assignDirs": "log directories (KIP-858 AssignReplicasToDirs) are not modelled",
    "listReassignments": "a query: the controller writes nothing",
    "findTopics": "a query: the controller writes nothing",
}


def _unmodelled_form(event: Mapping[str, Any]) -> str | None:
    """Forms of modelled events the model does not predict (issue 44 item 2's additions):
    a registration with no log directory (refused on a metadata.version with directory
    assignment, ClusterControlManager.registerBroker), a heartbeat's directories, an
    election of every partition (ElectLeaders with no topics: every lane's), a
    reassignment that may not change the replica count (KIP-860), CreateTopics with
    explicit partition indexes or validateOnly, DeleteTopics by an unknown id,
    AlterPartition by an unknown topic id or with ISR broker epochs."""
    op = event.get("op")
    if op == "register" and event.get("logDirs") == 0:
        return "a registration without log directories is not modelled"
    if op == "electLeaders" and event.get("topic") is None:
        return "an election of every partition (no topic) is not modelled"
    if op == "reassign" and event.get("allowRfChange") is False:
        return "a reassignment with AllowReplicationFactorChange false is not modelled"
    if op == "createTopic" and ("indexes" in event or event.get("validateOnly")):
        return "CreateTopics with explicit partition indexes or validateOnly is not modelled"
    if op == "deleteTopic" and "byId" in event:
        return "DeleteTopics by a topic id that is no topic's is not modelled"
    if op == "alterPartition" and ("topicId" in event or "isrBrokerEpochs" in event):
        return ("AlterPartition naming an unknown topic id or giving ISR broker epochs is "
                "not modelled")
    return None


def apply(c: Cluster, profile: Profile, event: Mapping[str, Any]) -> Prediction:
    """The allowed outcomes of one driver event under ``profile`` (or UNMODELLED)."""
    op = str(event.get("op"))
    fn = EVENTS.get(op)
    form = _unmodelled_form(event)
    if form is None and op == "reassign":
        # A new target while a reassignment runs (ReplicationControlManager.
        # changePartitionReassignment from the partition's current replicas, adding and
        # removing): the model starts reassignments from a settled partition only.
        part = c.partitions.get(f"{event.get('topic')}-{int(event.get('partition', 0))}")
        if part is not None and (part.adding or part.removing):
            form = "a reassignment while another is in progress is not modelled"
    if form is not None:
        return Prediction(unmodelled=form)
    if fn is None:
        return Prediction(unmodelled=UNMODELLED_WHY.get(op, f"event {op} is not modelled"))
    pred = fn(c, ctx_for(profile, c), event)
    if pred is None:
        return Prediction(unmodelled=UNMODELLED_WHY.get(op, f"this form of {op} is not "
                                                            "modelled"))
    return pred


def configured(c: Cluster, event: Mapping[str, Any]) -> Cluster:
    """``c`` with the configs an accepted ``createTopic`` or ``alterConfig`` sets (or a
    ``deleteTopic`` removes), and no other change (to follow a build that accepted what the
    model would have refused)."""
    op = event.get("op")
    if op == "deleteTopic":
        return evolve(c, topics={t: v for t, v in c.topics.items() if t != event["topic"]})
    if op == "createTopic":
        conf = _topic_conf(TopicConf(), event.get("configs") or {})
        return evolve(c, topics={**c.topics, str(event["topic"]): conf or TopicConf()})
    if op == "alterConfig" and event.get("broker") is None:
        topic = event.get("topic")
        if topic is not None:
            conf = _topic_conf(c.topics.get(str(topic), TopicConf()), event["configs"])
            return evolve(c, topics={**c.topics, str(topic): conf or TopicConf()})
        whole = _topic_conf(TopicConf(min_isr=c.min_isr, unclean=c.unclean), event["configs"])
        if whole is not None:
            return evolve(c, min_isr=whole.min_isr or c.min_isr, unclean=bool(whole.unclean))
    return c
