"""The model side of the differential comparison: the driver's answers as the reference
model's state, and the model's prediction as the driver's fields.

``reference.model.controller_events`` is the pure model (a :class:`Cluster` of broker
registrations, partitions and configs; one transition per driver event). Here: the
driver's ``partitions`` / ``brokers`` JSON to a ``Cluster`` (:func:`observed`), a
partition to the driver's field names (:func:`view`), the session's first state
(:func:`initial`). Configs are not in the answers: the model keeps them from the events
the build accepted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference.model.controller_events import Cluster, Reg
from reference.model.state import Partition, evolve

#: The driver's partition fields, in the order a difference is named.
FIELDS = ("leader", "leaderEpoch", "partitionEpoch", "replicas", "isr", "elr", "lastKnownElr",
          "adding", "removing", "leaderRecoveryState")


def partition_of(d: Mapping[str, Any], prior: Partition | None = None) -> Partition:
    """A driver partition as the model's Partition; ``prior``'s hidden fields (the KIP's
    last known leader, which no record carries) are kept."""
    leader = int(d["leader"])
    p = Partition(replicas=tuple(int(r) for r in d["replicas"]),
                  leader=None if leader < 0 else leader,
                  leader_epoch=int(d["leaderEpoch"]), partition_epoch=int(d["partitionEpoch"]),
                  isr=frozenset(int(r) for r in d["isr"]),
                  elr=frozenset(int(r) for r in d.get("elr") or ()),
                  last_known_elr=frozenset(int(r) for r in d.get("lastKnownElr") or ()),
                  recovering=d.get("leaderRecoveryState") == "RECOVERING",
                  adding=tuple(sorted(int(r) for r in d.get("adding") or ())),
                  removing=tuple(sorted(int(r) for r in d.get("removing") or ())))
    if prior is not None and prior.last_known_leader is not None:
        p = evolve(p, last_known_leader=prior.last_known_leader)
    return p


_REGS: dict[tuple[bool, bool, bool, bool], Reg] = {}


def reg_of(d: Mapping[str, Any], expired: bool = False) -> Reg:
    """A driver broker as a registration (one object per value: registrations are
    immutable); ``expired``: the model's, which the answer does not carry."""
    key = (bool(d["fenced"]), bool(d.get("inControlledShutdown")), bool(d.get("alive", True)),
           expired)
    reg = _REGS.get(key)
    if reg is None:
        reg = _REGS[key] = Reg(fenced=key[0], shutting_down=key[1], alive=key[2],
                               expired=expired)
    return reg


def view(p: Partition) -> dict[str, Any]:
    """The model's partition in the driver's field names and shapes (sets sorted)."""
    return {"leader": -1 if p.leader is None else p.leader, "leaderEpoch": p.leader_epoch,
            "partitionEpoch": p.partition_epoch, "replicas": list(p.replicas),
            "isr": sorted(p.isr), "elr": sorted(p.elr), "lastKnownElr": sorted(p.last_known_elr),
            "adding": list(p.adding), "removing": list(p.removing),
            "leaderRecoveryState": "RECOVERING" if p.recovering else "RECOVERED"}


def observed(prior: Cluster, partitions: Mapping[str, Mapping[str, Any]],
             brokers: Mapping[str, Mapping[str, Any]] | None,
             removed: Sequence[str] = (), elr: bool | None = None) -> Cluster:
    """``prior`` with the driver's partitions (all, or those an answer carries with report
    "changed") and brokers (all registered ones) put in, the partitions the answer says
    were removed (a deleted topic's) taken out, and ELR as an ``updateFeature`` answer
    reports it (``elr``: the build's isElrFeatureEnabled after the event); configs and
    hidden fields kept."""
    parts = prior.partitions  # (the prior's own mapping when the answer changes none)
    if removed or partitions:
        parts = dict(parts)
        for key in removed:
            parts.pop(key, None)
        for key, d in partitions.items():
            parts[key] = partition_of(d, prior.partitions.get(key))
    if not brokers:
        regs = prior.brokers
    else:  # whether a session expired is not in the answer: the model's, while not running
        regs = {}
        for b, d in brokers.items():
            reg, old = reg_of(d), prior.brokers.get(int(b))
            if old is not None and old.expired and not reg.alive:
                reg = reg_of(d, expired=True)
            regs[int(b)] = reg
    out = evolve(prior, partitions=parts, brokers=regs)
    if elr is not None and (out.elr_live is not None or elr != out.elr_now):
        out = evolve(out, elr_live=elr)
    return out


def initial(partitions: Mapping[str, Mapping[str, Any]], brokers: Mapping[str, Mapping[str, Any]],
            *, min_isr: int, unclean: bool, elr: bool) -> Cluster:
    """The session's state at the driver's ready answer (settings' brokers, no topics)."""
    empty = Cluster(brokers={}, partitions={}, min_isr=min_isr, unclean=unclean, elr_enabled=elr)
    return observed(empty, partitions, brokers)
