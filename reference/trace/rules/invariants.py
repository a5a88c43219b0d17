"""The per-state invariants, judged on each committed state (a batch end): the leader in
the ISR and live, ISR / ELR / LastKnownELR shapes, no ELR when it is off, an ISR not empty
without ELR, unclean-shutdown registrations out of the ELR, and a min ISR change clearing
the ELR on profiles that always clear.

KIP-966 'ISR invariants' and 'ELR invariants' (an ELR member not in the ISR; if the ELR is
not empty, the ISR is under min ISR; an unclean-shutdown registration leaves the ELR),
'Other behaviors' 4 and 6, 'Config changes' 1; TLA+ ValidControllerIsrAndElr,
ValidControllerState. Each rule's citation: registry.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from reference.releases.profiles import Profile
from reference.trace.records import (
    CommittedState,
    PartitionKey,
    PartitionRegistration,
    Record,
    TraceContext,
)
from reference.trace.rules.directories import offline_directory
from reference.trace.rules.min_isr import _min_isr_configs
from reference.trace.rules.step import Finding, _ids, _key, _new_incarnation, elr_on

_ELR_FEATURE = "eligible.leader.replicas.version"

#: Records after which every partition is judged (they change brokers, configs, features).
_GLOBAL = {"REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD",
           "UNFENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "CONFIG_RECORD",
           "FEATURE_LEVEL_RECORD", "CLEAR_ELR_RECORD", "REMOVE_TOPIC_RECORD"}


def check_batch(records: Sequence[Record], first: int, last: int, before: CommittedState,
                after: CommittedState, profile: Profile, ctx: TraceContext
                ) -> tuple[set[PartitionKey], list[Finding]]:
    """The invariants of the state committed by records[first:last + 1]: the partitions
    judged (all of them when brokers, configs or features changed) and the findings."""
    batch = records[first:last + 1]
    elr = elr_on(after, profile, ctx)
    if any(r.get("type") in _GLOBAL for r in batch):
        keys = list(after.partitions)
    else:
        keys = [k for k in dict.fromkeys(_key(r) for r in batch) if k in after.partitions]
    out = [f for k in keys for f in _partition_invariants(after, k, elr, profile, ctx)]
    if batch and batch[0].get("source") == "snapshot":
        # A snapshot is a state, not changes (the records of a metadata image, written by
        # SnapshotGenerator/SnapshotEmitter: one ConfigRecord per config, one
        # RegisterBrokerRecord per broker): no min ISR was changed and no broker registered
        # in it, so only the state's invariants are judged (a trace that starts from one:
        # harness/client/metadata_records.py ``plan``).
        return set(keys), out
    for b in after.brokers.values():
        if elr and b.unclean_shutdown and profile.unclean_shutdown_detection \
                and _new_incarnation(before, after, b.id):
            out += [Finding("UncleanShutdownReplicaNotInElr",
                            f"broker {b.id} registered after an unclean shutdown but is still in "
                            f"the {'ELR' if b.id in q.elr else 'ISR'}", k, b.id)
                    for k, q in after.partitions.items() if b.id in q.elr or b.id in q.isr]
    configs = _min_isr_configs(batch)
    if configs and elr and profile.min_isr_change_clears == "always":
        out += [Finding("MinIsrChangeClearsElr", f"min.insync.replicas changed but ELR "
                        f"{_ids(q.elr)} / LastKnownELR {_ids(q.last_known_elr)} remain", k)
                for k, q in after.partitions.items()
                if (None in configs or after.topic_name(k[0]) in configs)
                and (q.elr or q.last_known_elr)]
    return set(keys), out


def _elr_on_at_change(st: CommittedState, q: PartitionRegistration, profile: Profile,
                      ctx: TraceContext) -> bool:
    """Whether ELR was on when ``q`` was last written (the level then, else the run's start)."""
    level = q.elr_level_at_change
    return elr_on(replace(st, features={} if level is None else {_ELR_FEATURE: level}),
                  profile, ctx)


def _partition_invariants(st: CommittedState, key: PartitionKey, elr: bool, profile: Profile,
                          ctx: TraceContext) -> Iterator[Finding]:
    q = st.partitions[key]
    isr, replicas = set(q.isr), set(q.replicas)
    min_isr = st.min_isr(key[0], ctx.min_isr_default)

    def live(b: int) -> bool:
        return b in st.brokers and st.brokers[b].active

    def f(rule: str, detail: str) -> Finding:
        return Finding(rule, detail, key)

    if q.leader >= 0 and q.leader not in isr:
        yield f("LeaderInIsr", f"leader {q.leader} not in ISR {_ids(isr)}")
    if q.leader >= 0 and not live(q.leader):
        yield f("LeaderIsLive", f"leader {q.leader} is fenced, shutting down or unregistered")
    outside = (isr | set(q.elr) | set(q.last_known_elr)) - replicas
    if outside:
        yield f("IsrElrWithinReplicas", f"{_ids(outside)} in ISR/ELR/LastKnownELR but not "
                f"replicas {list(q.replicas)}")
    if isr & set(q.elr):
        yield f("ElrIsrDisjoint", f"{_ids(isr & set(q.elr))} in both ISR and ELR")
    if q.elr and len(isr) >= min_isr and profile.elr_cleared_at_min_isr:
        yield f("ElrEmptyAtMinIsr", f"ELR {_ids(q.elr)} with ISR {_ids(isr)} at min ISR {min_isr}")
    dead = [b for b in q.isr if not live(b)]
    # A partition last written while ELR was off keeps ELR-off's last ISR member, fenced,
    # until its next change after a live enable (KIP-966 'Compatibility').
    written_elr_off = ctx.elr_follows_level and not _elr_on_at_change(st, q, profile, ctx)
    if dead and ((elr and not written_elr_off) or len(isr) > 1):
        yield f("FencedReplicaNotInIsr", f"inactive {_ids(dead)} in ISR {_ids(isr)}")
    # In a run that turned ELR off live the fields may outlive it: KIP-966 'Compatibility'
    # removes them "on the next partition change", and 4.x updateFeatures writes no
    # ClearElrRecord (LastKnownELR is never cleared: deviation elr-disable-keeps-fields).
    lingering = ctx.elr_follows_level
    if not elr and (q.elr or q.last_known_elr) and not lingering:
        yield f("NoElrWhenDisabled", f"ELR {_ids(q.elr)}, LastKnownELR "
                f"{_ids(q.last_known_elr)} with ELR off")
    if not elr and not isr and not lingering:
        yield f("IsrNotEmptyWhenElrDisabled", "empty ISR with ELR off")
    if elr and profile.last_known_elr == "last-leader" and (
            len(q.last_known_elr) > 1 or (q.leader >= 0 and q.last_known_elr)):
        yield f("LastKnownElrShape", f"LastKnownELR {_ids(q.last_known_elr)} with leader "
                f"{q.leader}: it holds at most the last leader, while leaderless")
    yield from offline_directory(st, key)
    if elr and profile.last_known_elr == "kip" and q.last_known_elr and len(isr) >= min_isr:
        yield f("LastKnownElrShape", f"LastKnownELR {_ids(q.last_known_elr)} kept with ISR "
                f"{_ids(isr)} at min ISR {min_isr}")
