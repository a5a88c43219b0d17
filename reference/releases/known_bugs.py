"""Known bugs of shipped Apache Kafka in the KIP-966 paths, and the trace rules that name them.

A deviation (deviations.py) is intended, documented behaviour that a release profile adopts.
A known bug is not: no profile adopts it, so a run that meets it still fails, and the
scenario that shows it declares the failure for the affected releases. This catalog lets a
campaign (``kafka-chaos hunt`` by trace rule, ``kafka-chaos diff`` by its findings' signatures)
say which failures are bugs already reported, so that a person reads the new ones first.
Each entry was measured on clusters of the releases it names and cites where it is written
up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class KnownBug:
    """One reported bug: the releases it affects and the trace rules its records break."""

    id: str
    summary: str
    #: A JIRA key or a report in this repository.
    reference: str
    first_affected: Version
    #: The first release without it; None while no release fixes it.
    fixed_in: Version | None
    #: Trace rules (reference/trace/rules/) whose violation on an affected release names it.
    trace_rules: frozenset[str]
    #: Differential findings (harness/differential/compare.py signatures ``axis:name:op``,
    #: the profile left out) that name it on an affected release: those it was seen as.
    diff_signatures: frozenset[str] = frozenset()
    #: When set, a differential finding names it only if its detail matches one of these
    #: regular expressions (the same signature can have another cause: e.g. a LastKnownELR
    #: of [-1], or a removed replica kept in the ELR or in LastKnownELR). Entries with
    #: them are looked at first, in catalog order.
    diff_details: tuple[str, ...] = ()
    #: Differential signatures (``axis:name:op``) that name it only when the finding's
    #: detail matches the regular expression paired with them, whatever ``diff_details``
    #: says: a signature that has other causes, where the bug's other signatures have
    #: none (e.g. a refused reassignment, named only with the state the bug left).
    diff_signatures_by_detail: tuple[tuple[str, str], ...] = ()

    def names(self, key: str, detail: str | None) -> bool:
        """Whether a differential finding of signature ``key`` (``axis:name:op``) and
        ``detail`` (None: not known) names this bug."""
        if key in self.diff_signatures and (not self.diff_details or (
                detail is not None and any(re.search(d, detail) for d in self.diff_details))):
            return True
        return detail is not None and any(
            s == key and re.search(d, detail) for s, d in self.diff_signatures_by_detail)

    def affects(self, version: Version) -> bool:
        return self.first_affected <= version and (
            self.fixed_in is None or version < self.fixed_in)


#: The differential ops that run a PartitionChangeBuilder, where the LastKnownELR bugs below
#: show (a change that drops a replica; an election of a leaderless partition).
_CHANGE_OPS = ("reassign", "cancelReassignment", "alterPartition", "completeReassignment",
               "fence", "controlledShutdown", "register", "unfence", "unregister", "tick",
               "electLeaders", "alterConfig",
               # issue 44 item 2: AssignReplicasToDirs and a heartbeat's offline directory
               # run the builder too (handleAssignReplicasToDirs, handleDirectoriesOffline)
               "assignDirs", "heartbeat")

#: A finding's note (harness/differential/compare.py _broken_before) that the partition's ELR
#: held a replica outside its replicas before the event (IsrElrWithinReplicas, the member
#: listed as outside and in the ELR).
_REMOVED_IN_ELR = (r"\S+ already broke IsrElrWithinReplicas \(\S+ \[(?:\d+, )*(\d+)(?:, \d+)*\] "
                   r"in ISR \[[^\]]*\] / ELR \[(?:\d+, )*\1[,\]]")

KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        "last-known-elr-minus-one",
        "PartitionChangeBuilder.maybeUpdateLastKnownLeader records the leader a leaderless "
        "partition had, -1, as its last known leader: LastKnownELR [-1], outside the "
        "replicas. 4.1+: a change that writes the leader field of a leaderless partition "
        "whose LastKnownELR is empty (the epoch bump of a change that drops a replica); "
        "4.0.x: a change that empties the ISR of a leaderless partition",
        "docs/findings/last-known-elr-minus-one.md",
        # 4.1+ read in the 4.1.2 and 4.3.1 sources (apache/kafka PR 20629's rule) and
        # measured with the driver on 4.1.2-4.4.0; 4.0.2's own rule (lines 495-505) writes
        # it when a leaderless partition's ISR empties: a partition left leaderless with an
        # ISR by KAFKA-19522 (confirmed on a 4.0.2 cluster, bench/RESULTS-diff.md) or by ELR
        # off (measured with the driver: the live toggles). Named by the detail ([-1]), so
        # it comes before KAFKA-19522, which names the same signatures without it.
        (4, 0, 0), None, frozenset(),
        frozenset({f"release:lastKnownElr:{op}" for op in _CHANGE_OPS}
                  | {f"invariant:IsrElrWithinReplicas:{op}" for op in _CHANGE_OPS}),
        diff_details=(r"build \[-1\]", r"\[-1\] in ISR")),
    KnownBug(
        "last-known-leader-not-a-replica",
        "LastKnownELR keeps a broker that a reassignment removed while ELR was off (nothing "
        "writes LastKnownELR then); with ELR on again, an election of the leaderless "
        "partition asks LeaderAcceptor about it, PartitionRegistration.directory throws "
        "IllegalArgumentException ('Replica N is not assigned to this partition') and the "
        "controller faults (renounces) at every attempt, e.g. that broker's unfencing",
        "docs/findings/last-known-leader-not-a-replica.md",
        # Measured with the builds' own controller classes on 4.1.2, 4.2.2, 4.3.1, 4.4.0;
        # 4.0.2 clears LastKnownELR at the first change with ELR on (its own rule), so the
        # toggles' route does not reach it there. Another route does, 4.0.2 (ELR on)
        # included: a cancelled reassignment of a leaderless partition keeps its last
        # leader, an adding replica, in LastKnownELR (docs/findings/
        # last-known-leader-not-a-replica/events-cancel.json, 12 events, no toggle: the fault
        # on 4.0.2, on 4.0.2 with KAFKA-19522's fix, 4.1.2, 4.2.2); 4.0.2's
        # canElectLastKnownLeader calls isAcceptableLeader.test too. Triaged 2026-11-28
        # (bench/RESULTS-diff.md "Triage, sixth session"): the 4.0.2 seed-1 sweep's
        # fault:IllegalArgumentException:register (a cancel at lane event 875, the fault at
        # 896, read event by event).
        (4, 0, 0), None, frozenset(),
        frozenset({f"fault:IllegalArgumentException:{op}" for op in _CHANGE_OPS}
                  | {f"invariant:IsrElrWithinReplicas:{op}" for op in _CHANGE_OPS}),
        # the fault's message, or the invariant with the LastKnownELR member (one: the
        # last leader) as what is outside the replicas
        diff_details=(r"is not assigned to this partition",
                      r"\[(\d+)\] in ISR .* / LastKnownELR \[\1\] but not in replicas")),
    KnownBug(
        "elr-keeps-removed-replica",
        "the ELR keeps a replica that a reassignment (completed, cancelled or shrinking) "
        "removed, computed from the old ISR while the ISR is below min ISR "
        "(PartitionChangeBuilder); re-added, it can be elected with an empty log",
        "docs/findings/elr-keeps-removed-replica.md",
        (4, 0, 0), None, frozenset({"IsrElrWithinReplicas"}),
        # the completion, cancel, shrink and direct-reassignment paths (bench/RESULTS-diff.md,
        # RESULTS-diff-coverage.md): the removed replica in the ELR, also at min ISR.
        frozenset({f"invariant:{rule}:{op}"
                   for rule in ("IsrElrWithinReplicas", "ElrEmptyAtMinIsr")
                   for op in ("completeReassignment", "cancelReassignment", "alterPartition",
                              "reassign")}),
        # A reassignment naming the removed replica again, while the ISR is empty: the
        # builder finds it in the ELR (PartitionChangeBuilder.isValidNewLeader) and asks
        # LeaderAcceptor, built on the partition before the change, for its directory:
        # PartitionRegistration.directory throws IllegalArgumentException, which
        # alterPartitionReassignments answers as UNKNOWN_SERVER_ERROR for the partition
        # (4.0.2, 4.3.1 sources; 4.4.0's PartitionChangeBuilder is 4.3.1's), where the model
        # elects it from the ELR. Named by the state before the event (the finding's note,
        # harness/differential/compare.py _broken_before): a member outside the replicas in
        # the ELR. Triaged 2026-11-28 (bench/RESULTS-diff.md "Triage, sixth session"):
        # certify's 4.4.0 findings (Spark #60/#61, one machine #53/#54) reproduce on 4.4.0
        # and not on 4.4.0 with fix/elr-within-target-replicas.patch.
        diff_signatures_by_detail=tuple(
            (f"{axis}:accepted:reassign",
             r"\(build: UNKNOWN_SERVER_ERROR[^)]*\)(?: \(model: [^)]*\))?; before the event "
             + _REMOVED_IN_ELR)
            for axis in ("release", "kip"))
        # One step later: an election from an ELR that keeps removed replicas leaves them
        # beside the elected ISR, at a min ISR the shrunk partition 0 lowered (4.4.0 seed
        # 606, 1,068 events shrunk to 5: t [5, 3, 4] reassigned to [5], fenced, unfenced;
        # reproduces on 4.4.0 and not on 4.4.0 with fix/elr-within-target-replicas.patch;
        # bench/RESULTS-diff.md "Triage, sixth session (h/tidx)"). Named only with the
        # note that the partition's ELR held a removed replica before the event
        # (compare.py _broken_before): the same class has other causes.
        + (("invariant:ElrEmptyAtMinIsr:unfence",
            r"ElrEmptyAtMinIsr\); before the event " + _REMOVED_IN_ELR),)),
    KnownBug(
        "KAFKA-19522",
        "the controller elects a fenced last known leader in the batch that re-registers it "
        "after an unclean shutdown (ReplicationControlManager; fixed by apache/kafka PR 20200)",
        "KAFKA-19522",
        (4, 0, 0), (4, 1, 0), frozenset({"NewLeaderIsLive"}),
        # the invariant, and the release axis at the same event (the model leaves the
        # partition leaderless where 4.0.x elects the fenced broker); and its consequence
        # confirmed on a 4.0.2 cluster (bench/RESULTS-diff.md "LastKnownELR [-1]",
        # fixtures/scenarios/diff-last-known-elr-minus-one.yaml): a leaderless partition's
        # LastKnownELR becomes [-1], outside the replicas, and an unclean election is then
        # refused where the model elects.
        # register and unfence, and (met with live ELR toggles: a fenced last known
        # leader left from ELR off) the preferred election, by ElectLeaders or the periodic
        # task: 4.0.2's electPreferredLeader asks the same canElectLastKnownLeader.
        frozenset({f"{check}:{op}" for check in ("invariant:LeaderIsLive", "release:leader")
                   for op in ("register", "unfence", "electLeaders", "tick")}
                  | {"release:lastKnownElr:register", "invariant:IsrElrWithinReplicas:register",
                     "release:accepted:electLeaders"}
                  # Every builder run of a leaderless partition with ISR and ELR empty and
                  # one LastKnownELR member reaches 4.0.2's canElectLastKnownLeader, which
                  # tests the member's acceptability only to log it and returns true (PR
                  # 20200 returns false): a reassignment (changePartitionReassignment's
                  # builder), an unregistration (handleBrokerUnregistered) and a heartbeat
                  # that unfences a broker (handleBrokerUnfenced re-runs every leaderless
                  # partition; the heartbeat itself is unmodelled, so only the invariant
                  # speaks). Triaged 2026-11-28 (bench/RESULTS-diff.md "Triage, sixth
                  # session"): 4.0.2 seed 1 (300 s) findings replayed reproduce on 4.0.2 and
                  # not on 4.0.2 with PR 20200's rule (the heartbeat ones with a heartbeat
                  # unfencing the lane's clock broker appended: the campaign's was another
                  # lane's); 8 events by hand (tests/test_diff_reassign_back.py).
                  | {"release:leader:reassign", "invariant:LeaderIsLive:reassign",
                     "invariant:LeaderIsLive:unregister", "invariant:LeaderIsLive:heartbeat"})),
    KnownBug(
        "elr-index-stale-after-min-isr-change",
        "replaying a ClearElrRecord leaves the broker-to-ELR index stale, so an unclean "
        "registration writes the same PartitionChangeRecord twice (the partition epoch, and "
        "the leader epoch when it elects, rise by 2) and, after a topic deletion, the broker "
        "cannot register (ReplicationControlManager.removeTopicElrs)",
        "docs/findings/elr-index-stale-after-min-isr-change.md",
        # ClearElrRecord arrived in 4.0.0 (KAFKA-16540); measured on 4.0.2-4.3.1. No trace
        # rule names it alone: its LeaderEpochBump violation has other causes too.
        # The release axis only: there the model matches the build but for the duplicate;
        # on the kip axis an epoch difference at a registration has other causes too (the
        # KIP's LastKnownELR).
        (4, 0, 0), None, frozenset(),
        frozenset({"release:partitionEpoch:register", "release:leaderEpoch:register",
                   # after a topic deletion: the controller throws RuntimeException("Topic ID
                   # ... existed in isrMembers, but not in the topics map.") from
                   # generateLeaderAndIsrUpdates at an unclean registration
                   # (handleBrokerShutdown) or an unregistration (handleBrokerUnregistered);
                   # the differential campaign's fault class (harness/differential/compare.py).
                   "fault:RuntimeException:register", "fault:RuntimeException:unregister",
                   # an unregistration re-running a partition whose ELR the broker is no
                   # longer in (handleBrokerUnregistered iterates the stale index), which
                   # with unclean election allowed elects: shrunk cases on 4.0.2 and 4.4.0
                   # (issue 44's cluster-level configs) vanish without the min ISR changes
                   # or without the unclean config (bench/RESULTS-diff.md)
                   "release:leader:unregister",
                   # the same re-run of a partition through a stale entry completing a
                   # reassignment the model leaves pending (4.4.0 seed 44, event 7,108:
                   # replicas [72, 71, 75] -> [72, 71], leader epoch +1); the lane replayed
                   # on the fixed build (fix/clear-elr-updates-index.patch) agrees there
                   "release:leaderEpoch:unregister",
                   # snapshot equivalence (harness/differential/java/DriverSnapshot.java):
                   # a controller loaded from a snapshot taken after the ClearElrRecord
                   # builds its index from the PartitionRecords, so it registers the broker
                   # (fresh: ok) where the original faults, and writes the change once
                   # (fixtures/scenarios/elr-index-stale-cleared-by-snapshot-restart.yaml).
                   "snapshot:ok:register", "snapshot:ok:unregister",
                   "snapshot:records:register",
                   # the cause itself, at the min ISR change that writes the ClearElrRecord:
                   # the index oracle (harness/differential/oracles.py) sees brokersToElrs
                   # index a broker the partition's ELR no longer holds
                   "index:brokersToElrs:alterConfig",
                   # and its follow-on: a stale entry plus the broker's return to the ELR
                   # indexes the partition twice (BrokersToElrs.add appends), and removing
                   # it (BrokersToElrs.remove: an array one shorter, nothing copied) leaves a
                   # phantom entry for partition 0, seen at the event that clears that ELR:
                   # an unfencing or a heartbeat that elects (with ELR off the builder
                   # clears the ELR of every leaderless partition it re-runs), a
                   # registration. Triaged 2026-11-28 (bench/RESULTS-diff.md "Triage"): 4.4.0
                   # seed 44's lanes, replayed alone, show the stale entries at min ISR
                   # changes first, then these; with the fix (fix/clear-elr-updates-index
                   # .patch) the same lanes show no index finding at all.
                   "index:brokersToElrs:register", "index:brokersToElrs:unfence",
                   "index:brokersToElrs:heartbeat",
                   # the same phantom at elections that clear an ELR (4.4.0 seed 4472: the
                   # periodic preferred election, ElectLeaders; the lane is clean with the
                   # fix)
                   "index:brokersToElrs:tick", "index:brokersToElrs:electLeaders",
                   # a re-run through a stale entry at an unclean registration that elects
                   # (4.4.0 seed 4472, lane event 1,042) or at an unregistration that only
                   # bumps the partition epoch (seeds 4471, 4472): both lanes agree on the
                   # fixed build. The model gaps these signatures also showed (an
                   # unregistration's ELR partitions, a registration with no registration
                   # left, a clean registration's ISR re-run) are fixed, with tests
                   # (tests/test_diff_toggles.py), so naming them here hides no known gap.
                   "release:leader:register", "release:partitionEpoch:unregister",
                   # the phantom entry met by the other events that run a partition's ELR
                   # through the index (an ISR change, a directory assignment that elects, a
                   # fencing, a reassignment, an unregistration) and a snapshot whose fresh
                   # side writes the unregistration's change once: 4.4.0 seed 1 (240 s,
                   # 2026-11-28), each finding's events replayed (`diff --replay`) reproduce
                   # on 4.4.0 and not on 4.4.0 with fix/clear-elr-updates-index.patch
                   # (bench/RESULTS-certify.md, "nothing regressed")
                   "index:brokersToElrs:alterPartition", "index:brokersToElrs:assignDirs",
                   "index:brokersToElrs:fence", "index:brokersToElrs:reassign",
                   "index:brokersToElrs:unregister", "snapshot:records:unregister",
                   # the same phantom at the other events whose record takes a doubly indexed
                   # broker out of an ELR: a cancel (PartitionReassignmentRevert's empty-ISR
                   # case puts it back in the ISR; with ELR off the builder clears the ELR),
                   # a completion (the ISR reaches the min ISR, the ELR is cleared) and a
                   # controlled shutdown (with ELR off, maybeUpdateRecordElr clears the ELR of
                   # each partition it re-runs). Triaged 2026-11-28 (bench/RESULTS-diff.md
                   # "Triage, sixth session"): certify's 4.4.0 findings (Spark #58, #59, #62;
                   # one machine #49) reproduce on 4.4.0 and not with
                   # fix/clear-elr-updates-index.patch; 9-11 events by hand each (a
                   # ClearElrRecord, the broker back in the ELR, the op) reproduce on 4.4.0,
                   # not on the fixed build nor without the min ISR changes. The ELR keeping
                   # a removed replica (elr-keeps-removed-replica) is not needed: none of the
                   # hand cases has it.
                   "index:brokersToElrs:cancelReassignment",
                   "index:brokersToElrs:completeReassignment",
                   "index:brokersToElrs:controlledShutdown"})),
    KnownBug(
        "directory-index-stale-after-topic-deletion",
        "replaying a RemoveTopicRecord removes a partition from the controller's directory "
        "index only through its ISR members, so a partition deleted with an empty ISR (ELR "
        "on) stays there, and a later offline log directory makes the controller fault "
        "(ReplicationControlManager.replay(RemoveTopicRecord), handleDirectoriesOffline)",
        "docs/findings/directory-index-stale-after-topic-deletion.md",
        # A draft: measured with the builds' controller classes only (the diff driver), on
        # 4.0.2 (ELR on), 4.3.1, 4.4.0 and on 3.8.1 / 3.9.2 at their non-production
        # metadata.versions with ELR; no cluster run. Named only with its exception's text:
        # a heartbeat runs the ISR index too.
        (3, 8, 0), None, frozenset(),
        # The index oracle sees the cause itself, at the deletion
        # (harness/differential/oracles.py): directoriesToPartitions keeps the partition.
        frozenset({"fault:RuntimeException:heartbeat",
                   "index:directoriesToPartitions:deleteTopic",
                   # snapshot equivalence: a controller loaded from a snapshot written
                   # after the deletion has no stale entry, so it accepts the heartbeat the
                   # original faults at (the snapshot finding's detail carries the
                   # original's exception). Triaged 2026-11-28 (bench/RESULTS-diff.md
                   # "Triage, fifth session"): 4.4.0 seed 1 and certify's 4.3.1 campaign
                   # replayed; 9 events by hand on 4.3.1 and 4.4.0, and no difference with
                   # the snapshot taken before the deletion (both sides fault).
                   "snapshot:ok:heartbeat"}),
        (r"existed in isrMembers, but not in the topics map",
         r"directoriesToPartitions indexes .* but its topic \(id .*\) is not in the topics map")),
    KnownBug(
        "deleted-topic-config-survives-image",
        "a topic's dynamic configs written and the topic deleted within one metadata delta "
        "survive in the MetadataImage (ConfigurationsDelta.replay(RemoveTopicRecord) deletes "
        "only configs the delta's base image holds, since KAFKA-16206 in 3.8.0): a snapshot "
        "or a broker's image keeps the deleted topic's configs, and a topic created again "
        "with its name inherits them (e.g. min.insync.replicas) after a controller loads the "
        "snapshot",
        "docs/findings/deleted-topic-config-survives-image.md",
        # a draft finding: measured with the builds' own image classes (the differential
        # driver's snapshot equivalence: 3.8.1, 3.9.2, 4.0.2-4.4.0 keep the config; 3.6.2 and
        # 3.7.2 drop it); not yet on a cluster.
        (3, 8, 0), None, frozenset(),
        frozenset({"snapshot:loaded.configs:snapshot"})),
    KnownBug(
        "cluster-clear-elr-replays-deleted-topic",
        "a ClearElrRecord with no topic name (a cluster-level min.insync.replicas change, ELR "
        "on) replayed into a metadata delta that created and deleted a topic throws "
        "NullPointerException: TopicsDelta.replay(RemoveTopicRecord) leaves the topic in "
        "createdTopics, and replay(ClearElrRecord) builds a TopicDelta over its null image",
        "docs/findings/cluster-clear-elr-replays-deleted-topic.md",
        # a draft: measured with the builds' own image classes (the diff driver's snapshot
        # points) on 4.0.2 and 4.1.2; 4.2.2, 4.3.1, 4.4.0 write the snapshot (the 4.3.1
        # source removes the name from createdTopics). The first release without it is not
        # known: 4.2.0 stands for "by 4.2.2". Named only with the exception's text.
        (4, 0, 0), (4, 2, 0), frozenset(),
        frozenset({"snapshot:write:snapshot"}),
        (r"TopicImage\.partitions\(\)\" because \"this\.image\" is null",)),
    KnownBug(
        "elr-disable-elects-unclean-member",
        "after eligible.leader.replicas.version is downgraded to 0, the ELR left in a "
        "leaderless partition still elects its members, a broker back from an unclean "
        "shutdown included (PartitionChangeBuilder reads the ELR whatever the feature level; "
        "2 acks=all records lost on clusters of 4.0.2-4.4.0)",
        "docs/findings/elr-disable-elects-unclean-member.md",
        # a draft finding: measured on clusters and without the harness (exit 1 on
        # 4.0.2-4.4.0); no trace rule or differential signature is known to name it alone.
        (4, 0, 0), None, frozenset()),
    KnownBug(
        "elr-survives-effective-min-isr-drop",
        "a reassignment that makes a topic's partition 0 smaller lowers the topic's effective "
        "min ISR (ReplicationControlManager.getTopicEffectiveMinIsr) without clearing the other "
        "partitions' ELRs, and an election from the ELR keeps the other members "
        "(PartitionChangeBuilder.build runs maybePopulateTargetElr before tryElection): ISR "
        "[1], ELR [3] at min ISR 1, against KIP-966's invariant (the brokers' own min ISR for "
        "the partition is not lowered: a loss of acks=all records is not expected, not "
        "measured)",
        "docs/findings/elr-survives-effective-min-isr-drop.md",
        # a draft: measured with the builds' own controller classes (the diff driver) on
        # 4.0.2 (ELR on), 4.1.2, 4.2.2, 4.3.1, 4.4.0, 8 events, and a control without the
        # reassignment; no cluster run. The campaign's finding (4.0.2 seed 1, 300 s, finding
        # 123, replayed alone also on 4.1.2 and 4.3.1) came by the other route to a lower
        # effective min ISR: the cluster min ISR lowered while ELR was off (no ClearElrRecord
        # then), ELR on again, the same election. Triaged 2026-11-28 (bench/RESULTS-diff.md
        # "Triage, sixth session").
        # Named only when the partition broke no invariant before the event (no note,
        # compare.py _broken_before): with a removed replica in the ELR before it, the same
        # class is elr-keeps-removed-replica one step later; after a min ISR change made
        # with ELR off the campaign names the cited deviation elr-disable-keeps-fields
        # instead of a finding (harness/differential/stale_elr.py).
        (4, 0, 0), None, frozenset(), frozenset(),
        diff_signatures_by_detail=(("invariant:ElrEmptyAtMinIsr:unfence",
                                    r"ElrEmptyAtMinIsr\)$"),)),
)


def affecting(version: Version) -> tuple[KnownBug, ...]:
    """The known bugs a release has."""
    return tuple(b for b in KNOWN_BUGS if b.affects(version))


def naming_diff_finding(version: Version, signature: str, detail: str | None = None
                        ) -> KnownBug | None:
    """The known bug of ``version`` that a differential finding's signature
    (``axis:name:op:profile``) names, if any; a bug with ``diff_details`` only when the
    finding's ``detail`` contains one of them (None: the detail is not known, those bugs
    are left out)."""
    key = ":".join(signature.split(":")[:3])
    bugs = sorted(affecting(version),
                  key=lambda b: not (b.diff_details or b.diff_signatures_by_detail))
    return next((b for b in bugs if b.names(key, detail)), None)
