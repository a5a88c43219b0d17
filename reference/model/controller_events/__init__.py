"""The controller's view of a whole cluster, event by event: the model side of the
differential driver (harness/differential/README.md, issue 33 part 2).

A :class:`Cluster` holds every broker's registration (fenced, in controlled shutdown, the
driver's view of whether its process runs), every partition (``reference.model.state
.Partition``, keyed ``topic-index``) and the configs the rules read (min ISR and unclean
election per topic and for the cluster). :func:`apply` is one transition per driver event
(``register``, ``unfence``, ``fence``, ``controlledShutdown``, ``unregister``,
``createTopic``, ``createPartitions``, ``deleteTopic``, ``updateFeature``, ``alterPartition``,
``completeReassignment``, ``reassign``, ``cancelReassignment``, ``electLeaders``,
``alterConfig``, ``tick``, ``state``), built from
the same rules the scenario model uses: ``controller.partition_change`` (ELR update,
reassignment completion, election, epochs), ``steps.cancel_reassignment`` and
``elr.after_min_isr_change``; each partition the event touches is changed in a one-partition
``World`` made from the cluster. An event or form the model does not cover (``heartbeat``,
a broker-level config, a topic created by replication factor, partitions added without
an assignment) is UNMODELLED, never a
prediction of "no change".

Pure: no I/O, clocks or randomness. Several outcomes are allowed where the profile leaves
the election open (kip966: any valid candidate).

One module per job, each importing only those listed before it:

- ``cluster``: the state (``Cluster``, ``Reg``, ``TopicConf``) and a prediction's parts
  (``Outcome``, ``Prediction``).
- ``changes``: the one-partition worlds (``world_of``) and combining their alternatives.
- ``brokers``: register (KIP-966 unclean-shutdown removal from ISR and ELR), unfence,
  fence, controlledShutdown, unregister.
- ``configs``: alterConfig (KIP-966 'Other behaviors' 2: a min ISR change and the ELR).
- ``topics``: createTopic, createPartitions, deleteTopic (a name may be created again).
- ``partitions``: alterPartition, completeReassignment, reassign, cancelReassignment.
- ``elections``: electLeaders, tick.
- ``features``: updateFeature (eligible.leader.replicas.version on and off live).
- ``events``: the table of handlers (``EVENTS``), ``apply``, ``configured``.
"""

from reference.model.controller_events.changes import Change, ctx_for, world_of
from reference.model.controller_events.cluster import (
    CONTROLLER,
    MAX_BRANCHES,
    Cluster,
    Outcome,
    Prediction,
    Reg,
    TopicConf,
)
from reference.model.controller_events.events import (
    EVENTS,
    UNMODELLED_WHY,
    apply,
    configured,
)

__all__ = [
    "CONTROLLER",
    "EVENTS",
    "MAX_BRANCHES",
    "UNMODELLED_WHY",
    "Change",
    "Cluster",
    "Outcome",
    "Prediction",
    "Reg",
    "TopicConf",
    "apply",
    "configured",
    "ctx_for",
    "world_of",
]
