"""ELR members kept across a min ISR change made while ELR was off (the cited deviation
elr-disable-keeps-fields), and the ``ElrEmptyAtMinIsr`` violations they alone explain.

With ELR on, every accepted change of ``min.insync.replicas`` (a topic's, or the cluster's)
is followed by a ClearElrRecord that empties the ELR of the topic's partitions, or of every
partition (ConfigurationControlManager.createClearElrRecordsAsNeeded, 4.0.2 and 4.3.1
sources; 4.4.0 bytecode the same; replayed by ReplicationControlManager.replay
(ClearElrRecord)). The method returns no records while ``featureControl
.isElrFeatureEnabled()`` is false, and 4.x keeps a partition's ELR while ELR is off until
its next change (deviation elr-disable-keeps-fields, docs/KNOWN-DEVIATIONS.md). So a min ISR
change made while ELR is off leaves the ELR members that ELR on would have removed: here
*stale*. They can outnumber what the new min ISR allows: with min ISR 1 and ELR on since the
ELR was last empty, the ELR holds at most the last ISR member (PartitionChangeBuilder
.maybePopulateTargetElr adds ``ISR - target ISR`` only while the target ISR is below min
ISR, and the controller removes one broker at a time), while a stale member plus the last
ISR member make two. ``tryElection`` then elects one of them with the ISR empty (KIP-966
'Controller behaviors' 3: "added to ISR, and removed from ELR"), after
``maybePopulateTargetElr`` computed the ELR from the empty ISR, and leaves the other in the
ELR beside an ISR at min ISR: ``ElrEmptyAtMinIsr`` (KIP-966 "If ELR is not empty, the ISR
is under min ISR"), a state ELR on throughout never reaches (bench/RESULTS-diff.md "Triage,
sixth session (h/telr)": 8 events, and the control without the ELR-off window).

Exact, not a pattern: the members are tracked from the event that kept them (an accepted
min ISR change with ELR off, a topic's or the cluster's value, each of which ELR on accepts
and clears for), and a member stops being stale when it leaves the ELR. A violation is
named the deviation only when the release axis agreed at the event (the model made the
build's state from the same prior) and the same model, from the prior without the stale
members (the ELR that ELR on throughout would hold: members added later are computed from
the ISR alone), makes no ``ElrEmptyAtMinIsr`` for that partition. Any other cause (e.g.
docs/findings/elr-keeps-removed-replica.md at a reassignment) still makes the violation
without the stale members and stays a finding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from reference.model.controller_events import Cluster, Prediction
from reference.model.controller_events.changes import min_isr_of
from reference.model.state import evolve

MIN_ISR = "min.insync.replicas"
DEVIATION = "elr-disable-keeps-fields"
RULE = "ElrEmptyAtMinIsr"


def _clears_with_elr_on(event: Mapping[str, Any]) -> str | None:
    """The topic whose partitions (``""``: every partition) an accepted ``event`` would
    have had their ELR cleared with ELR on; None if it changes no min ISR, or is one ELR on
    refuses (a broker's own value, or the cluster's removed:
    ConfigurationControlManager.isDisallowedBrokerMinIsrTransition and
    isDisallowedClusterMinIsrTransition)."""
    if event.get("op") != "alterConfig" or event.get("broker") is not None:
        return None
    configs = event.get("configs") or {}
    if MIN_ISR not in configs:
        return None
    topic = event.get("topic")
    if topic is None:
        return "" if configs[MIN_ISR] is not None else None
    return str(topic)


class StaleElr:
    """Per partition, its ELR members a min ISR change with ELR off kept (see above)."""

    def __init__(self) -> None:
        self.members: dict[str, frozenset[int]] = {}

    def update(self, event: Mapping[str, Any], accepted: bool, before: Cluster,
               after: Cluster, reported: AbstractSet[str] = frozenset()) -> None:
        """After an event: the members it kept, and those still in the ELR. A tracked
        partition the event left with an ELR beside an ISR at min ISR (whether the event
        made that or kept it) has every ELR member stale: ELR on throughout empties the ELR
        whenever the ISR reaches min ISR (maybePopulateTargetElr), so that state and each
        member in it follow from the kept ones (an election of a stale member leaves the
        other members so: the second and third ``unfence`` of the campaign's lane). One
        ``reported`` (a finding at this event, not the deviation's) is no longer tracked."""
        if self.members:
            kept: dict[str, frozenset[int]] = {}
            for key, stale in self.members.items():
                q = after.partitions.get(key)
                if q is None or key in reported:
                    continue
                left = stale & q.elr
                if q.elr and len(q.isr) >= min_isr_of(after, key):
                    left = q.elr
                if left:
                    kept[key] = left
            self.members = kept
        topic = _clears_with_elr_on(event) if accepted and not before.elr_now else None
        if topic is None:
            return
        for key, q in after.partitions.items():
            if q.elr and (topic == "" or after.topic_of(key) == topic):
                self.members[key] = self.members.get(key, frozenset()) | q.elr

    def explains(self, key: str, prior: Cluster, event: Mapping[str, Any],
                 predict: Callable[[Cluster], Prediction],
                 violated: Callable[[Cluster, str], bool]) -> bool:
        """Whether partition ``key``'s ``ElrEmptyAtMinIsr`` at ``event`` (from ``prior``,
        the release axis agreeing) is the stale members' alone: ``predict`` (the release
        model) from ``prior`` without them leaves no outcome that breaks it (``violated``)."""
        stale = self.members.get(key)
        q = prior.partitions.get(key)
        if not stale or q is None or not stale & q.elr:
            return False
        without = evolve(prior, partitions={**prior.partitions,
                                            key: evolve(q, elr=q.elr - stale)})
        pred = predict(without)
        if pred.unmodelled is not None or not pred.outcomes:
            return False
        return not any(key in o.cluster.partitions and violated(o.cluster, key)
                       for o in pred.outcomes)
