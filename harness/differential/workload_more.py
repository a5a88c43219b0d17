"""The wider vocabulary of the random generator (issue 44 item 2): what a cluster sends the
controller beyond the base events of workload.RandomEvents, each form only where the build
has it (``workload.Capabilities``, read from the session's ready answer):

- registration with 1-3 log directories, and now and then none (refused on a
  metadata.version with directory assignment: ClusterControlManager.registerBroker,
  KIP-858, 3.7+); a broker that was unregistered registering again;
- heartbeats: wanting to be fenced, not caught up (a fenced broker behind its registration
  stays fenced: BrokerHeartbeatManager.calculateNextBrokerState), with an offline log
  directory (ReplicationControlManager.handleDirectoriesOffline), cordoning or uncordoning
  a directory (4.3+, handleDirectoriesCordoned); the stale-broker task run alone;
- unregistration of a stopped broker (and rarely of a running one);
- AssignReplicasToDirs (3.7+) of a partition's replica (or of a broker that is not one);
- configs: ``unclean.leader.election.enable`` of a topic, ``min.insync.replicas`` and
  ``unclean.leader.election.enable`` of the cluster (set and deleted), a broker's config;
- a deleted topic's name created again by partition count and replication factor, never
  placed (a factor above the registered brokers, or invalid counts: the replica placer
  would put a lane's topic on other lanes' brokers), and CreateTopics of a name that
  exists;
- ElectLeaders of every partition (no topics; the whole controller's, as a tick);
  a reassignment while one is in progress; AllowReplicationFactorChange false (4.1+);
- the queries: ListPartitionReassignments, the topic lookups;
- UpdateFeatures of ``metadata.version`` to a level the controller supports, by every
  upgrade type (mostly refused: a downgrade that would lose metadata, a level the
  registered brokers do not support).

Weights are per lane event, small beside the base events (0.3-3), so the base search
keeps its pace. A refusal is an answer too. The model knows no log directories, so a state
it cannot follow is undone: an offline directory (only of a broker holding none of the
lane's replicas) by the lane's next events (``RandomEvents.heal``: the broker's stop and
new registration, all its directories online again), a cordoned one by a heartbeat that
uncordons it, a replica assigned to another directory (perhaps one the broker never
registered, which is offline) by its assignment back to the first in the same event
(``back``). The corpus's repair drops the first two (a mutation could separate them from
their undoing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.differential import protocol as p

State = Mapping[str, Mapping[str, Any]]
UPGRADE_TYPES = ("upgrade", "safeDowngrade", "unsafeDowngrade")


def more_choices(gen: Any, caps: Any, partitions: State, brokers: State, life: str,
                 have: int) -> list[tuple[float, Any]]:
    """(weight, make-event) pairs of the wider vocabulary for one lane event; ``gen`` is the
    lane's RandomEvents (its rng, brokers, topics), ``life`` its life-cycle topic this
    event, ``have`` that topic's partition count."""
    rng = gen.rng
    lane = list(gen.brokers)
    alive_unfenced = [int(b) for b, s in brokers.items() if s["alive"] and not s["fenced"]]
    alive = [int(b) for b, s in brokers.items() if s["alive"]]
    alive_fenced = [int(b) for b, s in brokers.items() if s["alive"] and s["fenced"]]
    down = [int(b) for b, s in brokers.items() if not s["alive"]]
    gone = [b for b in lane if str(b) not in brokers]  # unregistered
    out: list[tuple[float, Any]] = []
    if gone:
        out.append((1.5, lambda: p.register(rng.choice(gone), clean=rng.random() < 0.5)))
    if caps.log_dirs and (down or gone):
        def with_dirs() -> dict[str, Any]:
            # Never fewer directories than before (a partition on a directory the broker
            # no longer registers is on an offline one, which the model does not know);
            # now and then none (refused).
            b = rng.choice(down + gone)
            e = p.register(b, clean=rng.random() < 0.5)
            if rng.random() < 0.1:
                e["logDirs"] = 0
            else:
                e["logDirs"] = gen.dir_count[b] = rng.randint(gen.dir_count.get(b, 1), 3)
            return e
        out.append((0.5, with_dirs))
    if alive_unfenced:
        out.append((0.15, lambda: p.heartbeat(rng.choice(alive_unfenced), wantFence=True)))
    if alive_fenced:
        out.append((0.3, lambda: p.heartbeat(rng.choice(alive_fenced), caughtUp=False)))
    # A directory offline: only of a broker that holds no replica of the lane's partitions
    # (so that no election, also one another lane's unfencing runs before the undoing,
    # meets a replica on an offline directory, which the model does not know); what it
    # still holds is what a deleted topic left in the controller's directory index.
    # Undone at once: the broker stops and a new incarnation registers with its
    # directories, all online again.
    holders = {b for part in partitions.values() for b in part["replicas"]}
    spare = [b for b in alive if b not in holders]
    if spare and caps.log_dirs:
        def offline() -> dict[str, Any]:
            b = rng.choice(spare)
            gen.heal += [p.fence(b), p.register(b, clean=rng.random() < 0.5)]
            return p.heartbeat(b, offlineDirs=[rng.choice((0, 0, 1, 3))])
        out.append((0.3, offline))
    if alive and caps.cordoned_dirs:
        def cordon() -> dict[str, Any]:
            b = rng.choice(alive)
            gen.heal.append(p.heartbeat(b, cordonedDirs=[]))
            return p.heartbeat(b, cordonedDirs=[rng.choice((0, 0, 1))])
        out.append((0.15, cordon))
    if down:
        out.append((0.3, lambda: p.unregister(rng.choice(down))))
    if alive:
        out.append((0.03, lambda: p.unregister(rng.choice(alive))))
    out.append((0.05, lambda: p.tick("fenceStale")))
    keys = sorted(partitions)
    if keys and caps.log_dirs:
        def assign() -> dict[str, Any]:
            topic, _, index = rng.choice(keys).rpartition("-")
            replicas = list(partitions[f"{topic}-{index}"]["replicas"])
            b = rng.choice(replicas) if rng.random() < 0.85 else rng.choice(lane)
            part, d = int(index) + (1 if rng.random() < 0.05 else 0), rng.choice((0, 0, 1, 2))
            e = p.assign_dirs(b, topic, part, d)
            if d:  # perhaps a directory the broker never registered (offline): back to 0
                e["back"] = True  # in the same event (DriverDirectoryEvents.assignDirs)
            return e
        out.append((0.4, assign))
    # configs
    if have:
        out.append((0.2, lambda t=life: p.alter_config(
            {"unclean.leader.election.enable": rng.choice(("true", "false", None))}, t)))
        out.append((0.05, lambda t=life: p.alter_config({"min.insync.replicas": None}, t)))
        out.append((0.03, lambda t=life: p.create_topic(t, [rng.sample(lane, 2)])))
    # (not deleted at cluster level: the model knows no static value beneath it)
    out.append((0.04, lambda: p.alter_config(
        {"min.insync.replicas": rng.choice(("1", "2", "3"))})))
    out.append((0.04, lambda: p.alter_config(
        {"unclean.leader.election.enable": rng.choice(("true", "false", None))})))
    out.append((0.03, lambda: {"op": "alterConfig", "broker": rng.choice(lane),
                               "configs": {"log.retention.ms": rng.choice(("60000", None))}}))
    if not have:
        # By count: never placed (a replication factor above the registered brokers, or
        # invalid), since the placer would put a lane's topic on other lanes' brokers.
        out.append((0.3, lambda t=life: {
            "op": "createTopic", "topic": t, "partitions": rng.choice((-1, 1, 2)),
            "replicationFactor": rng.choice((100, -2, 0))}))
    # elections, reassignments
    out.append((0.03, lambda: {"op": "electLeaders",
                               "type": rng.choice(("preferred", "unclean"))}))
    if keys:
        key = rng.choice(keys)
        topic, _, index = key.rpartition("-")
        part = partitions[key]
        if part["adding"] or part["removing"]:
            def again() -> dict[str, Any]:
                # A new target while one is in progress: random, or drawn from the replicas
                # the partition has now (a change of only the adding or removing replicas,
                # PartitionChangeBuilder.changeRecordIsNoOp's last tests).
                pool = list(part["replicas"]) if rng.random() < 0.5 else lane
                k = rng.randint(min(2, len(pool)), len(pool))
                return p.reassign(topic, rng.sample(pool, k), int(index))
            out.append((0.3, again))
        if caps.allow_rf_change:
            def no_rf() -> dict[str, Any]:
                rf = len(part["replicas"]) + rng.choice((-1, 0, 1))
                e = p.reassign(topic, rng.sample(lane, max(1, min(rf, len(lane)))), int(index))
                e["allowRfChange"] = rng.random() < 0.3
                return e
            out.append((0.3, no_rf))
    # requests that name what is not there, or that the controller refuses as malformed
    # (the request-level branches: validateNewTopicNames, createTopic's checks,
    # validateTotalNumberOfPartitions, the unknown-topic paths of every request)
    out += _refusals(gen, caps, partitions, life, have, gone)
    # queries
    out.append((0.1, lambda: p.list_reassignments(
        rng.choice((None, [life], list(gen.topics))))))
    out.append((0.1, lambda: p.find_topics([life, f"{life}x"])))
    if caps.mv_levels is not None:
        lo, hi = caps.mv_levels
        out.append((0.02, lambda: p.update_feature("metadata.version", rng.randint(lo, hi),
                                                   rng.choice(UPGRADE_TYPES))))
    return out


def _refusals(gen: Any, caps: Any, partitions: State, life: str, have: int,
              gone: list[int]) -> list[tuple[float, Any]]:
    rng = gen.rng
    lane = list(gen.brokers)
    out: list[tuple[float, Any]] = []
    keys = sorted(partitions)
    if not have:  # the life-cycle topic is deleted: every request naming it
        out += [(0.03, lambda: p.elect_leaders(life, rng.choice(("preferred", "unclean")))),
                (0.03, lambda: p.reassign(life, rng.sample(lane, 3))),
                (0.03, lambda: p.create_partitions(life, 2, [rng.sample(lane, 2)])),
                (0.03, lambda: p.assign_dirs(rng.choice(lane), life)),
                (0.03, lambda: {**p.create_topic(life, [rng.sample(lane, 2)]),
                                "validateOnly": True}),
                (0.03, lambda: {**p.create_topic(life, [rng.sample(lane, 2)] * 2),
                                "indexes": rng.choice(([0, 0], [1, 2], [0, 2]))}),
                (0.05, lambda: {"op": "createTopic", "topic": life,
                                "partitions": rng.choice((-2, 0, 10_001)),
                                "replicationFactor": rng.choice((-1, 2, 100))})]
    else:
        out += [(0.02, lambda: p.elect_leaders(life, "preferred", have)),
                (0.02, lambda: p.reassign(life, rng.sample(lane, 3), have)),
                (0.03, lambda: {"op": "createPartitions", "topic": life,
                                "count": rng.choice((have - 1, -1) + (
                                    (have + 10_001,) if caps.partitions_batch_limit else ()))}),
                (0.02, lambda: p.create_partitions(life, have + 2, [rng.sample(lane, 2)])),
                (0.03, lambda: {"op": "deleteTopic", "topic": life,
                                "byId": rng.choice(("unknown", "zero"))})]
    if keys:
        key = rng.choice(keys)
        topic, _, index = key.rpartition("-")
        part = partitions[key]
        isr = list(part["isr"])
        if not (part["adding"] or part["removing"]):
            out.append((0.05, lambda: p.cancel_reassignment(topic, int(index))))
        if part["leader"] >= 0:
            out.append((0.03, lambda: {**p.alter_partition(topic, isr, int(index)),
                                       "topicId": rng.choice(("unknown", "zero"))}))
            out.append((0.05, lambda: {**p.alter_partition(topic, isr, int(index)),
                                       "isrBrokerEpochs": [rng.choice((-1, 0, 1, 999))
                                                           for _ in isr]}))
            if gone:
                out.append((0.1, lambda: p.alter_partition(topic, isr + [rng.choice(gone)],
                                                           int(index))))
    if gone:
        out.append((0.05, lambda: p.unregister(rng.choice(gone))))
    return out
