"""The metadata quorum: which controller is active (KRaft, KIP-595).

KIP-966 says nothing of the metadata quorum; the model follows Raft as Kafka ships it:
CheckQuorum (KAFKA-15489, 3.7.0) and, from 4.0, Pre-Vote (KIP-996, ``Profile.pre_vote``).
The active controller is the one every broker session and AlterPartition must reach
(``reference.model.controller.active_controller``).
"""

from __future__ import annotations

from reference.model.controller import Ctx, link, reaches_majority
from reference.model.state import World, evolve


def _quorum(w: World, ctx: Ctx) -> list[World] | None:
    """The metadata quorum (KRaft, KIP-595): a leader that no longer reaches a majority
    resigns (CheckQuorum, KAFKA-15489, 3.7.0); with no leader, any controller that reaches
    a majority may win the election (one branch each: who wins is timing). Without Pre-Vote
    (KIP-996, 4.0) a controller cut off from the leader becomes a candidate and raises its
    epoch; once it reaches a majority again it may force an election or not (timing), with
    Pre-Vote it cannot. The model keeps no per-controller metadata log: every committed
    record is on a majority, and the partition state is the quorum's, kept across leaders."""
    cs = w.controllers
    if len(cs) == 1:
        return None
    cur = w.quorum_leader
    if cur is None:
        won = [c for c in cs if reaches_majority(w, c)]
        if not won:
            return None  # no majority: no leader, no metadata record can be committed
        return [evolve(w, quorum_leader=c, quorum_elections=w.quorum_elections + 1,
                       campaigning=frozenset(d for d in w.campaigning
                                             if not (link(w, d, c) and link(w, c, d))),
                       may_disrupt=frozenset())
                for c in won]
    if not reaches_majority(w, cur):
        return [evolve(w, quorum_leader=None)]
    if ctx.profile.pre_vote:
        return None
    cut_off = frozenset(c for c in cs if c != cur and not (link(w, c, cur) and link(w, cur, c)))
    if cut_off - w.campaigning:
        return [evolve(w, campaigning=w.campaigning | cut_off)]
    back = frozenset(c for c in w.campaigning if c not in cut_off)
    if back:
        calm = evolve(w, campaigning=w.campaigning - back)
        return [evolve(calm, may_disrupt=calm.may_disrupt | back),
                evolve(calm, quorum_leader=None)]
    return None
