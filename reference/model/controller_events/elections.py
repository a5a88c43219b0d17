"""Election events: ``electLeaders`` (preferred or unclean) and the controller's periodic
``tick`` tasks (electPreferred, electUnclean, fenceStale).

Each election is ``partition_change`` with the election type: KIP-966 'Unclean recovery'
decision order (ISR member, then unfenced ELR member) and, for unclean, only where the
partition has no leader. Each named partition is elected in turn, the alternatives
combined.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Ctx
from reference.model.controller_events.changes import (
    _accepted,
    _accepted_combined,
    _config,
    _elections,
    _refused,
)
from reference.model.controller_events.cluster import MAX_BRANCHES, Cluster, Outcome, Prediction


def _elect(c: Cluster, ctx: Ctx, key: str, kind: str) -> tuple[list[Cluster], str | None]:
    p = c.partitions[key]
    if kind == "preferred" and p.leader == p.replicas[0]:
        return [c], "ELECTION_NOT_NEEDED"
    if kind == "unclean" and p.leader is not None:
        return [c], "ELECTION_NOT_NEEDED"

    outs = [x for x in _elections(c, [key], ctx, kind) if x.partitions[key] != p]
    if not outs:
        return [c], ("PREFERRED_LEADER_NOT_AVAILABLE" if kind == "preferred"
                     else "ELIGIBLE_LEADERS_NOT_AVAILABLE")
    return outs, None


def _elect_leaders(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    kind = str(e.get("type", "preferred"))
    given = e.get("partitions")
    indexes: list[Any] = list(given) if given is not None else [e.get("partition", 0)]
    keys = [f"{e['topic']}-{int(i)}" for i in indexes]
    if any(k not in c.partitions for k in keys):
        return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
    states = [c]
    error: str | None = None
    for key in keys:
        nxt: list[Cluster] = []
        for s in states:
            outs, err = _elect(s, ctx, key, kind)
            nxt.extend(outs)
            error = error or err
        states = nxt[:MAX_BRANCHES]
    if error is not None:
        return Prediction(tuple(Outcome(False, s, error) for s in states))
    return _accepted(states)


def _tick(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction:
    task = e["task"]
    if task == "electPreferred":
        keys = [k for k, p in c.partitions.items() if p.leader != p.replicas[0]]
        return _accepted_combined(_elections(c, keys, ctx, "preferred"))
    if task == "electUnclean":
        keys = [k for k, p in c.partitions.items() if p.leader is None
                and _config(c, k).unclean_leader_election]
        return _accepted_combined(_elections(c, keys, ctx, "unclean"))
    # fenceStale: the clock does not move; every session that expired was fenced by the
    # `fence` that moved it.
    return _accepted([c])
