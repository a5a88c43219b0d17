"""Protocol actions and harness steps.

``settle`` runs the protocol actions a step causes until none applies (the state a
real cluster reaches once session timeouts fenced, lagging replicas left the ISR,
elections ran, followers caught up): registration (with unclean-shutdown detection),
fencing, unfencing, elections, metadata propagation, replication and truncation,
AlterPartition shrink/expand from the leader, HWM advancement (a reassignment
completes inside the partition change that makes it complete). ``apply_step`` expands
one harness step and settles.

Connectivity: a cut link (src, dst) blackholes connections src opens to dst.
Heartbeats and AlterPartition go broker -> controller, fetches follower -> leader,
produce client -> leader, GetReplicaLogInfo controller -> broker.

One module per job, each importing only those listed before it:

- ``replication``: who leads and who fetches; followers catching up; the leader's
  AlterPartition ISR shrink and expand (KIP-966 'ELR update' applies to them).
- ``hwm``: HWM advancement (KIP-966 'Additional High Watermark advancement requirement')
  and a newly elected leader's lagging HWM.
- ``brokers``: registration with unclean-shutdown detection (KIP-966 'Detection of an
  unclean shutdown'), fencing, unfencing and their elections, metadata propagation.
- ``quorum``: the KRaft metadata quorum (KIP-595; KIP-996 Pre-Vote).
- ``settling``: the actions in their priority (``ACTIONS``), ``settle``, auto leader
  rebalance, pending quorum disruptions.
- ``apply``: ``Step``, ``Outcome``, the world edits steps share, ElectLeaders
  (``elect_step``), ``apply_step``, ``initial_world``.
- ``produce``: a Produce and its acks (``produce_step``), the leader's stale ISR and
  min ISR views.
"""

from reference.model.protocol.apply import (
    Outcome,
    Step,
    all_nodes,
    apply_step,
    cut_links,
    elect_step,
    initial_world,
    set_config,
)
from reference.model.protocol.hwm import hwm_inputs
from reference.model.protocol.produce import (
    produce_step,
    with_leader_isr_view,
    with_leader_min_isr_view,
)
from reference.model.protocol.replication import (
    can_alter_partition,
    fetch_floors,
    fetching,
    followers,
    knows_current,
    leader_broker,
    same_log,
    unfetched,
)
from reference.model.protocol.settling import (
    ACTIONS,
    MAX_SETTLE,
    pending_disruptions,
    rebalanced,
    settle,
)

__all__ = [
    "ACTIONS",
    "MAX_SETTLE",
    "Outcome",
    "Step",
    "all_nodes",
    "apply_step",
    "can_alter_partition",
    "cut_links",
    "elect_step",
    "fetch_floors",
    "fetching",
    "followers",
    "hwm_inputs",
    "initial_world",
    "knows_current",
    "leader_broker",
    "pending_disruptions",
    "produce_step",
    "rebalanced",
    "same_log",
    "set_config",
    "settle",
    "unfetched",
    "with_leader_isr_view",
    "with_leader_min_isr_view",
]
