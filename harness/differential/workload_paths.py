"""Short event sequences that lead a lane to PartitionChangeBuilder's rarer paths (issue 44
item 4): each starts from a state the lane often has and is sent by the lane's next events
(``RandomEvents.plan``), every event an ordinary one of the random generator, so the model
predicts each (none is UNMODELLED but the ``assignDirs``, as always). Without them a 60 s
``--coverage`` run missed some of five branches the controller can take, three of them in
every run (docs/differential-coverage.md, "The ceilings"); line numbers are 4.3.1's (the
same in 4.4.0):

- ``adding``: a replica being added, elected uncleanly (the topic allows unclean elections,
  every other replica is fenced; ``electAnyLeader`` picks the first acceptable replica, which
  the ISR of just that replica then holds); the next builder of the partition, here a
  preferred election, completes the reassignment and writes only ``addingReplicas``
  (``PartitionChangeBuilder.build``: ``completeReassignmentIfNeeded`` runs first, and
  ``changeRecordIsNoOp`` reaches its ``addingReplicas`` test, line 60). A reassignment
  completes otherwise with an ISR change in the same record (AlterPartition).
- ``cancel``: the same, but the adding replica is fenced too, so the partition goes
  leaderless (with ELR on: its LastKnownELR holds the last leader, its ISR is empty); the
  first replica registers again (fenced); the cancellation reverts to replicas without the
  adding one, with that first replica as the ISR (``PartitionReassignmentRevert``: an ISR
  of adding replicas only; the topic allows the unclean revert), and bumps the leader epoch
  by setting the (absent) leader (``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``):
  a record whose leader is NO_LEADER while LastKnownELR is already set
  (``maybeUpdateLastKnownLeader``, line 493); the first replica's unfencing then elects it
  from the ISR, a record of the leader and the cleared LastKnownELR only, ISR and ELR
  unchanged (``changeRecordIsNoOp``'s LastKnownELR test, line 56).
- ``later``: a partition led by its only unfenced ISR member K, not its preferred replica;
  K's replica assigned to an offline log directory and back in one event
  (``handleAssignReplicasToDirs``: ``generateLeaderAndIsrUpdates`` removes K and finds no
  leader; the assignment back runs a builder whose acceptor still sees the offline
  directory, so no election), which leaves the partition leaderless while K is a valid
  leader; a preferred election then skips the invalid preferred replica and current leader
  and elects K (``electPreferredLeader``, line 242). The topic's unclean election is turned
  off first (else the removal elects another replica uncleanly). Another lane's unfencing
  may elect K in between (it re-runs every leaderless partition; half the time or more
  under load): then the election finds the leader valid. So half the sequences ask for the
  election in the ``assignDirs`` event itself (``elect``, java/ControllerDriver.java), which
  the model does not predict (UNMODELLED, as every ``assignDirs``); the others send it as
  the next event, compared.
- ``lastknown``: (where the build has the ELR feature) a partition whose ISR members are all
  fenced, the leader L last, so that its LastKnownELR holds L; every one of them registers
  again after an unclean shutdown (``handleBrokerUncleanShutdown`` takes each out of the
  ELR; no election, all are fenced), which leaves ISR and ELR empty and LastKnownELR [L];
  L is unfenced while ELR is off (``canElectLastKnownLeader`` answers false then, so the
  unfencing elects no one) and ELR turned on again: a preferred election finds no valid
  replica and elects the last known leader (``electPreferredLeader``, line 246; the
  unfencing's own election, ``electAnyLeader``, line 269, is what other events take). ELR
  is turned on first (a session may run it off), the topic's unclean election off. The
  feature changes reach every lane, as the random toggles do; another lane's unfencing
  between the last two steps elects L first (line 269).

Weights are per lane event, like the wider vocabulary's; the rest of a sequence is sent
whatever the other lanes do (a step the state no longer allows is refused: an answer too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.differential import protocol as p

State = Mapping[str, Mapping[str, Any]]
#: Weights of the sequences per lane event (the base events weigh 0.3-3, about 20 in all).
ADDING_WEIGHT, LATER_WEIGHT, LASTKNOWN_WEIGHT = 0.15, 0.15, 0.06
#: A directory index no registration reaches (at most 3 directories: workload_more), so an
#: offline one (DriverDirectoryEvents.unknownDir).
OFFLINE_DIR = 3
MAX_RF = 5
#: The share of ``later`` sequences whose preferred election is in the ``assignDirs`` event
#: itself (``elect``; UNMODELLED with it): another lane's unfencing cannot come between.
IN_EVENT = 0.5


def _active(brokers: State, b: int) -> bool:
    s = brokers.get(str(b), {})
    return bool(s.get("alive")) and not s.get("fenced", True) \
        and not s.get("inControlledShutdown")


def path_choices(gen: Any, caps: Any, partitions: State, brokers: State
                 ) -> list[tuple[float, Any]]:
    """(weight, make-event) pairs of the sequences for one lane event; ``make`` returns the
    first event and queues the rest in ``gen.plan``."""
    keys = sorted(partitions)
    if not keys:
        return []
    rng = gen.rng
    key = rng.choice(keys)
    topic, _, index = key.rpartition("-")
    idx = int(index)
    part = partitions[key]
    replicas, isr, leader = list(part["replicas"]), list(part["isr"]), int(part["leader"])
    if leader < 0 or not isr or not all(_active(brokers, b) for b in isr):
        return []
    out: list[tuple[float, Any]] = []
    spare = [b for b in gen.brokers if b not in replicas and _active(brokers, b)]
    if spare and not (part["adding"] or part["removing"]) and len(replicas) < MAX_RF:
        def adding() -> dict[str, Any]:
            b = rng.choice(spare)
            cancel = rng.random() < 0.5
            # every other running replica fenced, the leader last (so that no replica but
            # the adding one is acceptable at the last election); for the cancel, the
            # adding replica first
            fences = [b] if cancel else []
            fences += [x for x in replicas if x != leader and _active(brokers, x)] + [leader]
            # the cancel: the first replica registered again (fenced, not yet active)
            # before it, unfenced after it
            last = ([p.register(replicas[0]), p.cancel_reassignment(topic, idx),
                     p.unfence(replicas[0])] if cancel
                    else [p.elect_leaders(topic, "preferred", idx)])
            gen.plan += [p.reassign(topic, [*replicas, b], idx),
                         *(p.fence(x) for x in fences), *last]
            return p.alter_config({"unclean.leader.election.enable": "true"}, topic)
        out.append((ADDING_WEIGHT, adding))
    later = [b for b in isr if b != replicas[0]]
    if caps.log_dirs and later:
        def preferred_later() -> dict[str, Any]:
            k = rng.choice(later)
            assign = {**p.assign_dirs(k, topic, idx, OFFLINE_DIR), "back": True}
            if rng.random() < IN_EVENT:
                assign["elect"] = "preferred"  # the election in the same event
                last = [assign]
            else:
                last = [assign, p.elect_leaders(topic, "preferred", idx)]
            gen.plan += [*(p.fence(x) for x in isr if x != k), *last]
            return p.alter_config({"unclean.leader.election.enable": "false"}, topic)
        out.append((LATER_WEIGHT, preferred_later))
    if gen.elr_feature and not part["elr"]:
        def last_known() -> dict[str, Any]:
            others = [x for x in isr if x != leader]
            gen.plan += [p.update_feature(p.ELR_FEATURE, 1),
                         *(p.fence(x) for x in [*others, leader]),
                         *(p.register(x, clean=False) for x in [*others, leader]),
                         p.update_feature(p.ELR_FEATURE, 0), p.unfence(leader),
                         p.update_feature(p.ELR_FEATURE, 1),
                         p.elect_leaders(topic, "preferred", idx)]
            return p.alter_config({"unclean.leader.election.enable": "false"}, topic)
        out.append((LASTKNOWN_WEIGHT, last_known))
    return out
