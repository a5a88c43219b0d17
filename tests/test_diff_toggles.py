"""ELR turned off and on again under the differential campaign (bench/RESULTS-diff.md, "The
21 signatures of live ELR toggles"), no JVM: the model's rules those signatures showed
missing, each test failing without its rule, and the Kafka defect the model does not adopt
(LastKnownELR [-1]) named by its known bug."""

from __future__ import annotations

from test_differential_model import answer, brokers, part

from harness.differential import protocol as p
from harness.differential.compare import AGREES, DIVERGES, Comparator
from harness.differential.model import initial, observed
from reference.model.controller_events import Cluster, apply
from reference.model.state import evolve
from reference.releases.catalog import get_profile
from reference.releases.known_bugs import naming_diff_finding

K43 = get_profile("kafka-4.3")
K41 = get_profile("kafka-4.1")
K40 = get_profile("kafka-4.0-elr")
IDS = [1, 2, 3, 4]


def _cluster(state: dict[str, object], fenced: tuple[int, ...] = (), elr: bool = True
             ) -> Cluster:
    """ELR on again after a live toggle (``elr_live``), min ISR 2, topic t."""
    c = initial({}, brokers(IDS, fenced=fenced, down=fenced), min_isr=2, unclean=False,
                elr=True)
    c = observed(c, {"t-0": state}, None)
    return evolve(c, elr_live=elr)


def _only(c: Cluster, profile: object, event: dict[str, object]) -> Cluster:
    (out,) = apply(c, profile, event).outcomes  # type: ignore[arg-type]
    assert out.accepted, out.error
    return out.cluster


# ---- LastKnownELR, 4.1+: changed only where the record writes the leader ----

def test_a_last_known_elr_left_from_elr_off_stays_while_the_leader_does() -> None:
    """Leader 1 elected while ELR was off keeps the LastKnownELR [3] of before; an ISR
    change that does not write the leader keeps it (4.3.1 maybeUpdateRecordElr never writes
    it, maybeUpdateLastKnownLeader only when the record names a leader)."""
    c = _cluster(part(1, 3, 7, [1, 2, 3], [1, 2], [], [3]))
    for profile in (K43, K41):
        after = _only(c, profile, p.alter_partition("t", [1]))
        q = after.partitions["t-0"]
        assert (q.leader, sorted(q.isr), sorted(q.last_known_elr)) == (1, [1], [3]), profile.name
    # 4.0.2 clears it at every change that leaves a leader (deviation last-known-leader-
    # rewritten).
    assert _only(c, K40, p.alter_partition("t", [1])).partitions["t-0"].last_known_elr == set()


def test_the_leader_is_recorded_only_into_an_empty_last_known_elr() -> None:
    """Leader 1, the last ISR member, fenced with LastKnownELR [3] left from before: 4.1+
    keeps [3] (records the leader only while it is empty); 4.0.2 rewrites it to [1]."""
    c = _cluster(part(1, 3, 7, [1, 2, 3], [1], [], [3]))
    q = _only(c, K43, p.fence(1)).partitions["t-0"]
    assert (q.leader, sorted(q.isr), sorted(q.elr), sorted(q.last_known_elr)) == (
        None, [], [1], [3])
    assert sorted(_only(c, K40, p.fence(1)).partitions["t-0"].last_known_elr) == [1]
    # The same fencing with an empty LastKnownELR records the leader on both.
    empty = _cluster(part(1, 3, 7, [1, 2, 3], [1]))
    for profile in (K43, K40):
        assert sorted(_only(empty, profile, p.fence(1)).partitions["t-0"].last_known_elr) == [1]


def test_a_leader_written_clears_it_and_none_written_keeps_it() -> None:
    """A preferred election that moves the leader writes it: LastKnownELR cleared; a
    reassignment's epoch bump writes the same leader: cleared too; a change of a
    leaderless partition that writes no leader keeps it."""
    c = _cluster(part(2, 3, 7, [1, 2, 3], [1, 2], [], [3]))
    q = _only(c, K43, p.elect_leaders("t", "preferred")).partitions["t-0"]
    assert (q.leader, q.last_known_elr) == (1, set())
    q = _only(c, K43, p.reassign("t", [1, 2])).partitions["t-0"]
    assert (q.leader, q.leader_epoch, q.last_known_elr) == (2, 4, set())
    q = _only(c, K43, p.alter_partition("t", [2])).partitions["t-0"]
    assert (q.leader, q.last_known_elr) == (2, {3})


# ---- canElectLastKnownLeader in a preferred election ----

def test_a_preferred_election_elects_the_last_known_leader() -> None:
    """Leaderless, ISR and ELR empty, LastKnownELR [2], broker 2 unfenced while ELR was off
    (no election then): with ELR on, a preferred election (ElectLeaders or the periodic
    task) elects 2 uncleanly (electPreferredLeader -> canElectLastKnownLeader, 4.3.1 line
    246): ISR [2], RECOVERING, LastKnownELR cleared."""
    c = _cluster(part(-1, 3, 7, [1, 2, 3], [], [], [2]), fenced=(1, 3))
    for event in (p.elect_leaders("t", "preferred"), p.tick("electPreferred")):
        q = _only(c, K43, event).partitions["t-0"]
        assert (q.leader, sorted(q.isr), q.recovering, q.last_known_elr) == (
            2, [2], True, set()), event
    # Not while ELR is off (canElectLastKnownLeader asks eligibleLeaderReplicasEnabled).
    off = _cluster(part(-1, 3, 7, [1, 2, 3], [], [], [2]), fenced=(1, 3), elr=False)
    (out,) = apply(off, K43, p.elect_leaders("t", "preferred")).outcomes
    assert not out.accepted and out.error == "PREFERRED_LEADER_NOT_AVAILABLE"


# ---- LastKnownELR [-1]: the build's, not the model's; named by its known bug ----

def test_last_known_elr_minus_one_is_a_known_bug_not_a_rule() -> None:
    """Leaderless with ISR [2] (left by ELR off: 2 fenced), LastKnownELR empty, ELR on: a
    cancelled reassignment drops replica 4, so the record writes the leader field, -1, for
    the epoch bump, and 4.1+ records that -1 as the last leader (maybeUpdateLastKnownLeader).
    The model keeps it empty; the comparator's finding is named by the known bug."""
    state = part(-1, 3, 7, [1, 2, 3, 4], [2], adding=[4])
    c = _cluster(state, fenced=(1, 2, 3))
    q = _only(c, K43, p.cancel_reassignment("t")).partitions["t-0"]
    assert (q.leader, q.last_known_elr, q.replicas) == (None, set(), (1, 2, 3))
    comp = Comparator((4, 3, 1), True, c)
    comp.states = {"release": c, "kip": c}
    regs = brokers(IDS, fenced=(1, 2, 3), down=(1, 2, 3))
    built = part(-1, 4, 8, [1, 2, 3], [2], [], [-1])
    rep = comp.step(p.cancel_reassignment("t"), answer("cancelReassignment", {"t-0": built},
                                                         regs))
    assert rep.release == DIVERGES
    named = {f.signature: naming_diff_finding((4, 3, 1), f.signature, f.detail)
             for f in rep.findings}
    assert {s: b.id for s, b in named.items() if b is not None} == {
        "release:lastKnownElr:cancelReassignment:kafka-4.3": "last-known-elr-minus-one",
        "invariant:IsrElrWithinReplicas:cancelReassignment:kafka-4.3":
            "last-known-elr-minus-one"}
    # A removed replica kept in the ELR is still the other known bug.
    assert naming_diff_finding(
        (4, 3, 1), "invariant:IsrElrWithinReplicas:cancelReassignment:kafka-4.3",
        "t-0: [4] in ISR [2] / ELR [4] / LastKnownELR [] but not in replicas [1, 2, 3]",
    ).id == "elr-keeps-removed-replica"
    # Not on 4.0 (its own rule, named by KAFKA-19522's consequence there).
    assert rep.kip != AGREES


# ---- a session outlives fencing: the stale-broker task fences a fenced broker again ----

def test_an_expiring_session_fences_a_fenced_broker_again() -> None:
    """Broker 3 finished a controlled shutdown while ELR was off (fenced, still the last
    ISR member of a leaderless partition; its last heartbeat still tracked); ELR on; the
    clock moves past its session (a `fence` of another broker): 4.0+'s stale-broker task
    takes the expired session from BrokerHeartbeatTracker, blind to fencing, and runs
    handleBrokerFenced for 3 again: out of the ISR, into the ELR."""
    regs = brokers(IDS, fenced=(3, 4), down=(3, 4))
    regs["3"]["inControlledShutdown"] = True
    c = initial({}, regs, min_isr=2, unclean=False, elr=True)
    c = evolve(observed(c, {"t-0": part(-1, 3, 5, [1, 2, 3], [3])}, None), elr_live=True)
    q = _only(c, K43, p.fence(1)).partitions["t-0"]
    assert (q.leader, sorted(q.isr), sorted(q.elr), q.partition_epoch) == (None, [], [3], 6)
    # Its session already ended (fenced by the task before): nothing to expire.
    brokers_now = {**c.brokers, 3: evolve(c.brokers[3], expired=True)}
    gone = evolve(c, brokers=brokers_now)
    assert _only(gone, K43, p.fence(1)).partitions["t-0"].isr == {3}
    # 3.x fences only unfenced brokers (deviation session-ends-when-fenced).
    pre = get_profile("pre-elr")
    assert _only(evolve(c, elr_live=None), pre, p.fence(1)).partitions["t-0"].isr == {3}


def test_a_removed_last_known_leader_is_named_by_its_known_bug() -> None:
    """The controller's fault when an election asks about a LastKnownELR member that is no
    longer a replica, and the invariant that shows such a member, are named by
    last-known-leader-not-a-replica; a removed replica kept in the ELR stays the other bug,
    and [-1] the third."""
    v = (4, 3, 1)
    fault = naming_diff_finding(v, "fault:IllegalArgumentException:unfence:kafka-4.3",
                                "the controller threw java.lang.IllegalArgumentException: "
                                "Replica 1 is not assigned to this partition. (...)")
    assert fault is not None and fault.id == "last-known-leader-not-a-replica"
    assert naming_diff_finding(v, "fault:IllegalArgumentException:unfence:kafka-4.3",
                               "java.lang.IllegalArgumentException: something else") is None
    lke = "k7t1-0: [72] in ISR [73] / ELR [] / LastKnownELR [72] but not in replicas [75, 73]"
    for op in ("unfence", "tick", "alterPartition"):
        bug = naming_diff_finding(v, f"invariant:IsrElrWithinReplicas:{op}:kafka-4.3", lke)
        assert bug is not None and bug.id == "last-known-leader-not-a-replica", op
    elr = "k6t0-0: [62] in ISR [61, 65] / ELR [62] / LastKnownELR [] but not in replicas [61]"
    bug = naming_diff_finding(v, "invariant:IsrElrWithinReplicas:alterPartition:kafka-4.3", elr)
    assert bug is not None and bug.id == "elr-keeps-removed-replica"
    assert naming_diff_finding(v, "invariant:IsrElrWithinReplicas:unfence:kafka-4.3", elr) is None
    minus = "k2t1-0: [-1] in ISR [22] / ELR [] / LastKnownELR [-1] but not in replicas [22]"
    bug = naming_diff_finding(v, "invariant:IsrElrWithinReplicas:tick:kafka-4.3", minus)
    assert bug is not None and bug.id == "last-known-elr-minus-one"
    # 4.0.2 (ELR on) reaches it too, by a cancelled reassignment (events-cancel.json)
    fault = naming_diff_finding((4, 0, 2), "fault:IllegalArgumentException:unfence:x",
                                "Replica 1 is not assigned to this partition")
    assert fault is not None and fault.id == "last-known-leader-not-a-replica"
    assert naming_diff_finding((3, 9, 2), "fault:IllegalArgumentException:unfence:x",
                               "Replica 1 is not assigned to this partition") is None


def test_kafka_19522_names_the_fenced_last_known_leader_of_a_preferred_election() -> None:
    """4.0.2's electPreferredLeader asks the same canElectLastKnownLeader that elects a
    fenced last known leader (KAFKA-19522): met with live toggles; 4.1+ has the fix."""
    for op in ("electLeaders", "tick"):
        bug = naming_diff_finding((4, 0, 2), f"invariant:LeaderIsLive:{op}:kafka-4.0-elr")
        assert bug is not None and bug.id == "KAFKA-19522"
        assert naming_diff_finding((4, 3, 1), f"invariant:LeaderIsLive:{op}:kafka-4.3") is None


def test_last_known_elr_minus_one_is_named_on_4_0_by_its_detail() -> None:
    """4.0.2 writes [-1] when a leaderless partition's ISR empties, whether KAFKA-19522 or ELR
    off left it leaderless with an ISR: the [-1] names last-known-elr-minus-one; without the
    detail the signature stays KAFKA-19522's."""
    sig = "release:lastKnownElr:register:kafka-4.0-elr"
    bug = naming_diff_finding((4, 0, 2), sig, "k0t0-1 lastKnownElr: model [], build [-1]")
    assert bug is not None and bug.id == "last-known-elr-minus-one"
    bug = naming_diff_finding((4, 0, 2), sig)
    assert bug is not None and bug.id == "KAFKA-19522"


def test_unregistering_an_elr_member_after_elr_is_turned_off_clears_the_elr() -> None:
    """Triage of ``release:partitionEpoch:unregister`` (bench/RESULTS-diff.md "Triage"):
    handleBrokerUnregistered re-runs the partitions with the broker in the ELR too
    (brokersToElrs.partitionsWithBrokerInElr, 3.8+), and with ELR off the builder writes
    the ELR empty (PartitionChangeBuilder.maybeUpdateRecordElr; KIP-966 "Compatibility":
    the ELR fields "removed on the next partition change"). Measured on 4.4.0: leader 1,
    ISR [1], ELR [2] left from ELR on, `unregister 2` -> ELR [], partition epoch +1."""
    c = _cluster(part(1, 0, 2, [1, 2, 3], [1], [2]), fenced=(2, 3), elr=False)
    for profile in (K43, K40):
        q = _only(c, profile, p.unregister(2)).partitions["t-0"]
        assert (q.leader, sorted(q.isr), sorted(q.elr), q.partition_epoch) == (1, [1], [], 3), \
            profile.name
    # With ELR on, the same re-run changes nothing: the member stays in the ELR.
    on = _cluster(part(1, 0, 2, [1, 2, 3], [1], [2]), fenced=(2, 3), elr=True)
    q = _only(on, K43, p.unregister(2)).partitions["t-0"]
    assert (sorted(q.elr), q.partition_epoch) == ([2], 2)


def test_a_broker_registering_with_no_registration_left_is_handled_as_unclean() -> None:
    """Triage of ``release:partitionEpoch:register`` (4.4.0 seed 4471, event 646; it was
    named the stale ELR index, but it remains on the fixed build): broker 2, unregistered
    while in t-0's ELR, registers again "cleanly". ClusterControlManager.registerBroker
    compares the PreviousBrokerEpoch with the stored registration's epoch, -2 when there is
    none, so the registration is an unclean shutdown's and the ELR loses broker 2
    (measured on 4.4.0: ELR [2] -> [], partition epoch 2 -> 3)."""
    from reference.model.controller_events.brokers import _with_broker
    c = _with_broker(_cluster(part(1, 0, 2, [1, 2, 3], [1], [2]), fenced=(3,)), 2, None)
    q = _only(c, K43, p.register(2, clean=True)).partitions["t-0"]
    assert (q.leader, sorted(q.isr), sorted(q.elr), q.partition_epoch) == (1, [1], [], 3)
    # with ELR off (turned off live) no unclean handling: nothing changes
    off = _with_broker(_cluster(part(1, 0, 2, [1, 2, 3], [1], [2]), fenced=(3,), elr=False),
                       2, None)
    assert _only(off, K43, p.register(2, clean=True)).partitions["t-0"].partition_epoch == 2


def test_a_clean_registration_re_runs_the_isr_partitions_as_fencing_does() -> None:
    """Triage of ``release:leader:register`` (4.4.0 seed 4471, event 5,268): ELR turned off
    live, t-0 leaderless with ISR [3] (the last member kept), the topic allowing unclean
    elections; broker 3 registers again cleanly. 4.0+ handleBrokerShutdown(3, true) re-runs
    the ISR's partitions with 3 as the broker to remove, as fencing does, and elects 4
    uncleanly (measured on 4.4.0: leader 4, ISR [4], RECOVERING)."""
    c = initial({}, brokers(IDS, fenced=(3,), down=(3,)), min_isr=2, unclean=True, elr=True)
    c = evolve(observed(c, {"t-0": part(-1, 6, 15, [3, 4], [3])}, None), elr_live=False)
    b3 = evolve(c.brokers[3], expired=True)  # its session timed out (the driver's fence)
    c = evolve(c, brokers={**c.brokers, 3: b3})
    q = _only(c, K43, p.register(3, clean=True)).partitions["t-0"]
    assert (q.leader, sorted(q.isr), q.leader_epoch) == (4, [4], 7)


def test_unfencing_an_elr_member_of_a_partition_with_a_leader_changes_nothing() -> None:
    """Triage of ``release:partitionEpoch:unfence`` (bench/RESULTS-diff.md "Triage, fifth
    session"; 4.4.0 and 4.4.0 with the stale-ELR-index fix, shrunk 484 -> 12 events):
    handleBrokerUnfenced re-runs only brokersToIsrs.partitionsWithNoLeader (3.6.2-4.4.0), and
    KIP-966 'Controller behaviors' 3 elects an ELR member only where the ISR is empty. t-0
    has leader 3, ISR [3] and ELR [1] left from a min ISR of 2; the min ISR became 1 while
    ELR was off (no ClearElrRecord), ELR is on again; `unfence 1` writes no partition change
    (measured on 4.4.0: ELR [1], partition epoch 2 kept). The model re-ran the partition
    for its ELR member and emptied the ELR (epoch 3)."""
    c = evolve(_cluster(part(3, 1, 2, [1, 2, 3], [3], [1]), fenced=(1, 2)), min_isr=1)
    for profile in (K43, K41, K40):
        q = _only(c, profile, p.unfence(1)).partitions["t-0"]
        assert (q.leader, sorted(q.isr), sorted(q.elr), q.partition_epoch) == (3, [3], [1], 2), \
            profile.name
    # a leaderless partition is still elected: ISR empty, ELR [1] -> leader 1
    c = _cluster(part(-1, 1, 2, [1, 2, 3], [], [1]), fenced=(1, 2, 3))
    q = _only(c, K43, p.unfence(1)).partitions["t-0"]
    assert (q.leader, sorted(q.isr), sorted(q.elr)) == (1, [1], [])
