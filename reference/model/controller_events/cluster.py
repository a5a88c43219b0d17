"""The controller's state for the differential model, and what a prediction is made of.

A :class:`Cluster` holds every broker's registration (:class:`Reg`: fenced, in controlled
shutdown, whether its process runs), every partition (``reference.model.state.Partition``,
the KIP-966 PartitionRecord fields: ISR, ELR, LastKnownELR, keyed ``topic-index``) and the
configs the rules read (:class:`TopicConf`: min ISR and unclean election per topic, and for
the cluster). A :class:`Prediction` is the outcomes an event may have (kip966 leaves
elections open: any valid candidate), or why the model does not predict it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reference.model.state import Partition

#: The single controller of the one-partition worlds (no quorum at this level).
CONTROLLER = 100
#: At most this many alternative outcomes per event (kip966 leaves elections open).
MAX_BRANCHES = 64


@dataclass(frozen=True, slots=True)
class Reg:
    """A broker's registration as the controller holds it, and whether its process runs
    (the driver's ``alive``: registered or heartbeating since its last fence, controlled
    shutdown or unregistration)."""

    fenced: bool = False
    shutting_down: bool = False
    alive: bool = True
    #: Its session expired: the clock moved (a ``fence``) while its process was not
    #: running. Until then a new incarnation's registration is refused
    #: (DUPLICATE_BROKER_REGISTRATION), even after a controlled shutdown, unless the
    #: profile ends a session when the broker is fenced (3.x: :func:`_has_session`).
    expired: bool = False

    @property
    def active(self) -> bool:
        """ClusterControlManager.isActive: unfenced and not in controlled shutdown."""
        return not self.fenced and not self.shutting_down


@dataclass(frozen=True, slots=True)
class TopicConf:
    """Topic-level configs the rules read (None: the cluster's)."""

    min_isr: int | None = None
    unclean: bool | None = None


@dataclass(frozen=True, slots=True)
class Cluster:
    """The controller's state. Treated as immutable: transitions build new mappings."""

    brokers: Mapping[int, Reg]
    partitions: Mapping[str, Partition]
    topics: Mapping[str, TopicConf] = field(default_factory=dict)
    min_isr: int = 1
    unclean: bool = False
    #: ELR on for this session (the build's feature level).
    elr_enabled: bool = True
    #: ELR as an ``updateFeature`` turned it during the session (None: never changed, as
    #: the session began). It overrides the profile's ELR, as ``World.elr_live`` does in
    #: the scenario model (reference/model/features.py).
    elr_live: bool | None = None

    def topic_of(self, key: str) -> str:
        return key.rpartition("-")[0]

    @property
    def elr_now(self) -> bool:
        """eligible.leader.replicas.version >= 1 now: as the session began, or as the last
        accepted ``updateFeature`` left it."""
        return self.elr_enabled if self.elr_live is None else self.elr_live


@dataclass(frozen=True, slots=True)
class Outcome:
    """One allowed result: accepted or refused (``error``: the model's reason), the state."""

    accepted: bool
    cluster: Cluster
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    outcomes: tuple[Outcome, ...] = ()
    #: Why the model does not predict this event (then ``outcomes`` is empty).
    unmodelled: str | None = None
