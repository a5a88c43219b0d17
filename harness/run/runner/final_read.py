"""The run's final read and its evidence: every visible record read back (through the
traffic's writer under traffic), the data checks over the whole history, the recovery read
of acked records the final read missed, and the metadata log archived for the trace."""

from __future__ import annotations

from typing import Any

from harness.client import metadata_records
from harness.client.session import Session
from harness.infra import progress
from harness.infra.history import History, read_events
from harness.judge.compare import predicts_hwm_drop, run_data_checks
from harness.judge.lanes import lane_events, merge_checks
from harness.judge.traffic import hwm_drop_allowed
from harness.run import recovery
from harness.run.runner.storage import StorageMixin


class FinalReadMixin(StorageMixin):
    """The final read, the data checks, the recovery read and the metadata archive."""

    def _data_checks(self, history: History, session: Session) -> list[dict[str, Any]]:
        """Final read of every visible record, then the data checks over the whole history."""
        from harness.infra.history import read_events
        traffic = self._traffic_writer is not None
        if traffic:
            self._final_read_with_traffic(history, session)
        for lm in self.lockstep.lanes if not traffic else ():
            if lm.model.topic_deleted():
                progress.say(f"final read of {lm.lane.label} skipped: its topic is deleted")
                continue
            try:
                session.workload.consume_all(lm.lane.topic, lm.lane.partition)
            except Exception as exc:  # noqa: BLE001 - a partition with no leader: nothing to read
                progress.say(f"final read of {lm.lane.label} failed: {exc}")
        # Tiered storage: the log start after the read, which the read started at or below;
        # what lies below it retention deleted (harness/judge/tiered.py).
        self._observe_storage(session, history, None)
        from harness.judge import datachecks
        events = list(read_events(history.run_dir))
        self._events, self._raw_checks = events, []
        per_lane = []
        for lm in self.lockstep.lanes:
            mine = lane_events(events, self.scenario, lm.lane)
            raw = datachecks.run_checks(mine)
            self._raw_checks.append(raw)
            per_lane.append((lm.lane, run_data_checks(
                raw, lm.model, predicts_hwm_drop(mine) or hwm_drop_allowed(self.scenario, mine))))
        checks = merge_checks(per_lane)
        for check in checks:
            history.record("check", **check)
        return checks

    def _final_read_with_traffic(self, history: History, session: Session) -> None:
        """One full re-read of every partition into traffic.jsonl (final_read lines); the
        scenario's own records it finds are also the history's consume events, closed by a
        read event per partition, as the data checks read them."""
        from harness.client.traffic_read import final_read
        from harness.infra.history import read_events
        writer, self._traffic_writer = self._traffic_writer, None
        own = {e["record_id"] for e in read_events(history.run_dir) if e["kind"] == "produce"}
        counts: dict[tuple[str, int], int] = {}
        # The whole read's skips (the data checks' gaps: its consume events are the
        # scenario's own records only, with the traffic's between them).
        last: dict[tuple[str, int], int] = {}
        gaps: dict[tuple[str, int], list[dict[str, int]]] = {}

        def seen(topic: str, partition: int, offset: int, rid: str) -> None:
            tp = (topic, partition)
            if tp in last and offset != last[tp] + 1:
                gaps.setdefault(tp, []).append({"after": last[tp], "next": offset})
            last[tp] = offset
            if rid in own:
                counts[(topic, partition)] = counts.get((topic, partition), 0) + 1
                history.record("consume", record_id=rid, topic=topic, partition=partition,
                               offset=offset)
        try:
            lanes = [(lm.lane.topic, lm.lane.partition) for lm in self.lockstep.lanes
                     if not lm.model.topic_deleted()]  # deleted at the end: nothing to read
            done = final_read(session.cluster, writer, lanes, on_record=seen)
            for (topic, partition), complete in done.items():
                history.record("read", topic=topic, partition=partition,
                               records=counts.get((topic, partition), 0), complete=complete,
                               gaps=gaps.get((topic, partition), []))
        except Exception as exc:  # noqa: BLE001 - said; the checks judge an incomplete read
            progress.say(f"final read with traffic failed: {exc}")
        finally:
            writer.close()

    def _recovery_read(self, session: Session, history: History,
                       checks: list[dict[str, Any]]) -> None:
        """Acked records the final read missed: heal the cluster and look again, to tell
        lost from hidden (run/recovery.py). The trace is judged on what the schedule did,
        so the metadata log is archived before the recovery writes to it."""
        unread = recovery.unread_acks_all(checks)
        if not unread:
            return
        self._archive_metadata(history)
        self._archived = True
        try:
            recovery.recover_and_reread(session, unread)
        except Exception as exc:  # noqa: BLE001 - evidence lost; the run's verdicts stand
            history.record("recovery", error=f"{type(exc).__name__}: {exc}")
            progress.say(f"recovery read failed ({type(exc).__name__}: {exc}): the records "
                         "the final read missed count as lost")
        self._events = list(read_events(history.run_dir))

    def _archive_metadata(self, history: History) -> None:
        """After teardown every committed record is on disk: the trace's evidence. A copy
        that fails is said, never raised over the run's own outcome."""
        try:
            metadata_records.archive(history.run_dir, self._data_dirs)
        except OSError as exc:
            progress.say(f"metadata log not archived ({exc}): the trace cannot be judged")
