"""The ``feature`` step: UpdateFeatures (KIP-584, API key 57) of one finalized feature, as
``kafka-features.sh upgrade|downgrade --feature NAME=LEVEL`` sends it. The model knows two
features:

- ``eligible.leader.replicas.version`` (ELR, KIP-966): level 1 on, 0 off. KIP-966
  "Compatibility, Deprecation, and Migration Plan" (seeds/003): ELR "will be guarded by a
  new metadata version and the eligible.leader.replicas.enabled"; "After the controller
  picked up the new MV and eligible.leader.replicas.enabled is true, when it loads the
  partition states, it will populate the ELR as empty ... In the next partition update,
  the controller will record the current ELR"; "Once the MV version is downgraded, all
  the ELR related fields will be removed on the next partition change. The controller
  will also ignore the ELR fields."

  Shipped Kafka (apache/kafka 4.0.2 and 4.3.1, kafka-metadata sources): the controller
  reads the level at every partition change (``FeatureControlManager.isElrFeatureEnabled``
  passed to each ``PartitionChangeBuilder`` by ``ReplicationControlManager``), and the
  feature change itself changes no partition: ``ConfigurationControlManager.updateFeatures``
  adds to the FeatureLevelRecord, when the level goes above 0, only
  ``maybeGenerateElrSafetyRecords`` (a cluster-level min.insync.replicas equal to the static
  one when none is set, broker-level ones removed), and no ClearElrRecord on the way down.
  So turning ELR on leaves a partition under min ISR with an empty ELR: its next change
  fills the ELR from the ISR it had then (``maybePopulateTargetElr``: old ELR + old ISR -
  new ISR); replicas that left the ISR while ELR was off are never ELR members, so the
  KIP's "min ISR electable replicas" guarantee holds only for what happens after (the
  world is marked ``reconfigured``, as at an operator's reassignment). Turning it off
  leaves the fields in place until the next change (controller.partition_change,
  deviation elr-disable-keeps-fields).

  The level is ``World.elr_live`` (controller.elr_on reads it). Refused, nothing changes:
  where the build has no such feature (3.x: profile ``elr_feature`` False, deviation
  no-elr-feature; ``FeatureControlManager.updateFeature`` -> ``reasonNotSupported``:
  "Invalid update version 1 for feature eligible.leader.replicas.version ..."). Level 1
  also needs metadata.version >= 4.0-IV1 (``EligibleLeaderReplicasVersion.ELRV_1``
  dependencies), which every 4.x cluster the harness formats has (it formats at the
  build's latest production metadata.version, and no safe downgrade crosses 4.0-IV1,
  whose records changed: ``MetadataVersion.checkIfMetadataChanged``).
- ``metadata.version``: ``World.metadata_level``. Accepted, it is the new level; refused, nothing
  changes. Predicted refused (reference/model/metadata_version.py, from
  ``FeatureControlManager.updateMetadataVersion``, 4.0.2 and 4.3.1): a downgrade across a level
  whose metadata changed ("Refusing to perform the requested downgrade because it might delete
  metadata information", unsafe or not), so never below 4.0-IV1 from it or above (a 4.x
  cluster at its build's newest level, unknown to the model, is above it). Whether a level
  is above the build's newest the model does not know: the step's ``refused`` says.
  Raised to 4.0-IV1 or above, ELR may be turned on; below it ELR is off (controller.elr_on)
  and every registration counts as unclean (KIP-966 "Clean shutdown", protocol/brokers._register).
- ELR level 1 below metadata.version 4.0-IV1 is refused (ELRV_1's dependency; the controller's
  ``reasonNotSupported`` / dependency check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from reference.model import metadata_version as MV
from reference.model.controller import Ctx, elr_on
from reference.model.protocol import Outcome, settle
from reference.model.state import World, evolve

ELR = "eligible.leader.replicas.version"
METADATA_VERSION = "metadata.version"
#: The features a step may name, with the levels the loader accepts: ELR's are those of
#: EligibleLeaderReplicasVersion (ELRV_0, ELRV_1; 4.0.2-4.3.1); metadata.version's any
#: level a short holds (the build says which it supports: MetadataVersion.MINIMUM_VERSION,
#: 3.3-IV3 = 7 in 4.x, up to its latest).
LEVELS: dict[str, tuple[int, int]] = {ELR: (0, 1), METADATA_VERSION: (1, 32767)}


def elr_refused(ctx: Ctx) -> bool:
    """The build refuses any level of eligible.leader.replicas.version: it has no such
    feature (3.x)."""
    return not ctx.profile.elr_feature


@dataclass(frozen=True, slots=True)
class Feature:
    """``feature: {name: N, level: L, refused: B}``. ``refused`` is what the scenario
    expects of the build; for ELR the model predicts it too (``elr_refused``) and both are
    checked; for metadata.version only the declaration says (default: accepted)."""

    kind: ClassVar[str] = "feature"
    name: str
    level: int
    refused: bool | None = None

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "level": self.level}
        if self.refused is not None:
            out["refused"] = self.refused
        return out

    def predicts_refusal(self, ctx: Ctx, w: World | None = None) -> bool:
        """Whether the model predicts the build refuses the update (module docstring)."""
        level = None if w is None else w.metadata_level
        if self.name == ELR:
            return elr_refused(ctx) or (self.level >= 1 and not MV.elr_supported(level))
        if w is not None and (MV.downgrade_refused(level, self.level) or (
                level is None and ctx.profile.elr_feature and self.level < MV.ELR)):
            return True
        return bool(self.refused)

    def transition(self, w: World, ctx: Ctx) -> list[Outcome]:
        refused = self.predicts_refusal(ctx, w)
        if not refused and self.name == METADATA_VERSION:
            w = evolve(w, metadata_level=self.level)
        if not refused and self.name == ELR:
            on = self.level >= 1
            if on != elr_on(w, ctx):
                # No partition changes now; the next change of each partition follows the
                # new level (module docstring). Turning ELR on under min ISR voids the
                # KIP's guarantee for what came before (invariants: reconfigured).
                under = len(w.partition.isr) < w.min_isr
                w = evolve(w, elr_live=on, reconfigured=w.reconfigured or (on and under))
            elif w.elr_live is None:
                w = evolve(w, elr_live=on)
        return [Outcome(x, refused=refused) for x in settle(w, ctx)]
