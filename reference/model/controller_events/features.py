"""Feature events: ``updateFeature`` of ``eligible.leader.replicas.version`` (KIP-966's ELR
on at level 1, off at 0), as UpdateFeatures (KIP-584) with one feature.

seeds/003 "Compatibility, Deprecation, and Migration Plan": turned on, "when it loads the
partition states, it will populate the ELR as empty ... In the next partition update, the
controller will record the current ELR"; turned off, "all the ELR related fields will be
removed on the next partition change". So the change itself changes no partition; the
level is read by every later change (``Cluster.elr_live``, ``changes.ctx_for``).

Shipped Kafka agrees on the change itself (kafka-metadata 4.0.2 and 4.3.1 sources):
QuorumController.updateFeatures calls ConfigurationControlManager.updateFeatures
(4.3.1 lines 752-772), which writes FeatureControlManager.updateFeature's FeatureLevelRecord
(lines 227-318) and, when the ELR level goes above 0, maybeGenerateElrSafetyRecords (a
cluster-level min.insync.replicas equal to the static one when none is set, broker-level
ones removed: no partition change); no ClearElrRecord on the way down
(createClearElrRecordsAsNeeded runs for config changes only). What a later change does with
an ELR left from before is the profile's (deviation elr-disable-keeps-fields).

Refusals (INVALID_UPDATE_VERSION, updateFeature in that order): a level below 0 or above
what the controller supports (reasonNotSupported: 0-1 on 4.0.2-4.4.0); a level below the
current one with upgrade type ``upgrade``, or above it with a downgrade type. A build
without the feature (3.x, deviation no-elr-feature) refuses level 1 ("Local controller ...
does not support this feature"); level 0 of a feature the controller does not know is
refused by 3.6.2 (its brokers do not list it: "Broker 1 does not support this feature")
and accepted by 3.9.2 (an unknown feature's range is 0-0, a FeatureLevelRecord at level 0
changes nothing): both are allowed there, neither changes anything. Other features are
not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Ctx
from reference.model.controller_events.changes import _accepted, _refused
from reference.model.controller_events.cluster import Cluster, Outcome, Prediction
from reference.model.features import ELR, LEVELS
from reference.model.state import evolve

#: The error every refusal of updateFeature carries (FeatureControlManager
#: .invalidUpdateVersion).
REFUSED = "INVALID_UPDATE_VERSION"


def _update_feature(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    if e["name"] != ELR:
        return None
    level = int(e["level"])
    if not ctx.profile.elr_feature:
        if level == 0:
            return Prediction((Outcome(False, c, REFUSED), Outcome(True, c)))
        return _refused(c, REFUSED)
    low, high = LEVELS[ELR]
    if not low <= level <= high:
        return _refused(c, REFUSED)
    current = 1 if c.elr_now else 0
    kind = str(e.get("upgradeType") or ("upgrade" if level >= current else "safeDowngrade"))
    if (level < current and kind == "upgrade") or (level > current and kind != "upgrade"):
        return _refused(c, REFUSED)
    on = level >= 1
    if on == c.elr_now and c.elr_live is None:
        return _accepted([c])
    return _accepted([evolve(c, elr_live=on)])
