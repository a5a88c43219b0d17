"""The rules trace validation judges a metadata log by (reference.trace.replay replays it).

Each rule has a name and a citation: the KIP-966 section (seeds/003), the TLA+
property or action of Vanlightly/kafka-tlaplus kip-966 (cited by name), or, for what
shipped Kafka does differently and a profile allows, research/kafka-facts.md and the
controller code (PartitionChangeBuilder, ReplicationControlManager,
ClusterControlManager in apache/kafka's metadata module).

Invariants hold in every committed state (judged at batch ends). Change rules judge one
record against the state before it, knowing the controller operation the record belongs
to: a controller operation writes its records in one batch, and computes them all from
the state before the batch, so a broker being fenced, shut down or re-registered by the
operation is not an acceptable leader for its partition changes even though its own
broker record comes last (ReplicationControlManager.generateLeaderAndIsrUpdates:
brokerToRemove, brokerWithUncleanShutdown).

The modules, by family (each cites its KIP-966 clause):

- registry: every rule's name, kind and citation, in reported order; PERSISTENT
- step: Step, Finding, Operation, elr_on and operations (records to controller operations)
- election: the kind of election a change shows (analyse, Change) and the election rules
  ('Unclean recovery', 'Delivery plan')
- reassignment: reassignment cases of the election rules ('Other behaviors' 4)
- last_known_elr: LastKnownELR updates ('Other behaviors' 6)
- epochs: the leader epoch bump ('Other behaviors' 1)
- min_isr: ClearElrRecord and min.insync.replicas changes ('Other behaviors' 2)
- changes: the per-change rules in reported order (check_change, partition_change)
- invariants: the per-state rules at batch ends (check_batch; 'ISR invariants',
  'ELR invariants')
"""

from __future__ import annotations

from reference.trace.rules.changes import check_change, partition_change
from reference.trace.rules.election import MV_LEADER_RECOVERY, Change, analyse
from reference.trace.rules.epochs import MV_NO_EPOCH_BUMP_ON_SHRINK
from reference.trace.rules.invariants import check_batch
from reference.trace.rules.registry import CODE, PERSISTENT, RULES, TLA, Rule
from reference.trace.rules.step import Finding, Operation, Step, elr_on, operations

__all__ = [
    "CODE",
    "MV_LEADER_RECOVERY",
    "MV_NO_EPOCH_BUMP_ON_SHRINK",
    "PERSISTENT",
    "RULES",
    "TLA",
    "Change",
    "Finding",
    "Operation",
    "Rule",
    "Step",
    "analyse",
    "check_batch",
    "check_change",
    "elr_on",
    "operations",
    "partition_change",
]
