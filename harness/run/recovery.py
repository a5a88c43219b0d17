"""The recovery read: lost, or only hidden?

A run whose final read misses acked records may have lost them, or the partition may only
hide them: a leader whose HWM lags (docs/KNOWN-DEVIATIONS.md#new-leader-hwm-lag: under
min ISR it stays behind until a follower is back), a partition with no leader while its
replicas are down or cut off. The final read happens while the run's faults still hold, so
both look the same there. After that read (and its checks) the runner heals the cluster:
every link back, every paused node resumed, every stopped or killed node started on its
own files; it waits, bounded, for each partition to have a leader with every replica in
its ISR, and reads each partition that missed records again. A record seen then was on a
replica all along: hidden, not lost.

What the recovery does is not part of the run's history as a schedule step: the metadata
log is archived before it (so the trace is judged on what the schedule did), the reads
and looks of the recovery record nothing but one ``recovery`` event per partition, which
the safety judge reads (judge.axes.judge_safety) online and offline alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.client.observe import ObserveError, Observer
from harness.client.session import Session
from harness.infra import progress
from harness.infra.wait import WaitTimeout, until

#: Seconds the recovery may wait for every partition to have a leader and a full ISR.
SETTLE_S = 60.0
#: Seconds between two looks while it waits.
POLL_S = 0.5
#: Seconds one re-read may take (Workload.consume_all).
READ_S = 15.0


def unread_acks_all(checks: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[str]]:
    """The acks=all records the final read missed, by (topic, partition), from the data
    checks as recorded (``acked_lost``)."""
    out: dict[tuple[str, int], list[str]] = {}
    for check in checks:
        if check.get("name") != "acked_lost":
            continue
        for d in check.get("details") or ():
            if str(d.get("acks")) == "all":
                key = (str(d.get("topic")), int(d.get("partition") or 0))
                out.setdefault(key, []).append(str(d["record_id"]))
    return out


def recover_and_reread(session: Session, unread: Mapping[tuple[str, int], Sequence[str]]
                       ) -> None:
    """Heal the cluster, wait for full ISRs, read the partitions that missed records again
    and record a ``recovery`` event for each (what was done, what is readable now)."""
    t0 = time.monotonic()
    done = _heal(session)
    observer = Observer(session.cluster, record=False)
    try:
        settled = _wait_full_isr(observer, list(unread))
    finally:
        observer.close()
    for (topic, partition), ids in sorted(unread.items()):
        seen = {rid for _, rid in session.workload.consume_all(
            topic, partition, timeout_s=READ_S, record=False)}
        readable = sorted(r for r in ids if r in seen)
        session.history.record("recovery", topic=topic, partition=partition, **done,
                               settled=settled.get((topic, partition), False),
                               seconds=round(time.monotonic() - t0, 2), readable=readable,
                               unread=sorted(r for r in ids if r not in seen))
        progress.say(f"recovery read of {topic}-{partition}: {len(readable)} of {len(ids)} "
                     "acked record(s) the final read missed are readable once the cluster "
                     "is healed" + (" (hidden, not lost)" if len(readable) == len(ids) else ""))


def _heal(session: Session) -> dict[str, Any]:
    """Every link back, paused nodes resumed, down nodes started (controllers first).
    Through the cluster and the network, not ``Faults``: a fault event would enter the
    trace's context (unclean restarts are read from them, trace_check)."""
    cluster, network = session.cluster, session.faults.network
    network.heal()
    resumed = sorted(network.paused)
    for node in resumed:
        cluster.resume(node)
        network.paused.discard(node)
    shape = cluster.shape
    started, failed = [], []
    for node in [*shape.controller_ids, *shape.broker_ids]:
        if cluster.is_running(node):
            continue
        try:
            cluster.start_node(node)
            started.append(node)
        except Exception as exc:  # noqa: BLE001 - said in the event; the read goes on
            failed.append(f"{node}: {type(exc).__name__}: {exc}")
    return {"resumed": resumed, "started": started, "start_failed": failed}


def _wait_full_isr(observer: Observer, partitions: Sequence[tuple[str, int]]
                   ) -> dict[tuple[str, int], bool]:
    """Polls (bounded by SETTLE_S) until each partition has a leader and every replica in
    its ISR; which ones got there."""
    settled = {key: False for key in partitions}

    def look() -> dict[tuple[str, int], bool]:
        for topic, partition in partitions:
            if settled[(topic, partition)]:
                continue
            try:
                state, _ = observer.partition_state(topic, partition)
            except ObserveError:
                continue
            settled[(topic, partition)] = (
                state.get("leader", -1) >= 0
                and set(state.get("replicas") or ()) <= set(state.get("isr") or ()))
        return settled

    try:
        until(look, lambda s: all(s.values()), "full ISRs after the recovery", SETTLE_S, POLL_S)
    except WaitTimeout:
        pass  # read what is visible anyway; the event says which partitions settled
    return dict(settled)
