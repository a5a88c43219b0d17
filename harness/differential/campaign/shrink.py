"""Shrinking a finding: the finding's lane log up to the event, renamed to lane 0's names,
replayed in fresh sessions with events deleted (halves, quarters, ... single events) while
the same signature still appears; several candidates share one JVM, each in a namespace of
its own (candidates run one after the other, so the clock and ticks of one cannot change
another's state midway; what is the whole controller's, a snapshot's shadow, the cluster's
configs and the ELR feature level, is put back after each). Bounded by attempts and time."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.differential import protocol as p
from harness.differential.campaign.lanes import finding_lane, lane_of_topic, rename
from harness.differential.campaign.session import Session, settings_for
from harness.differential.campaign.state import CampaignState, Found
from harness.differential.oracles import ORACLE_ERROR


def _cluster_wide(event: dict[str, Any]) -> bool:
    """An alterConfig of the cluster's defaults (neither a topic's nor a broker's)."""
    return event["op"] == "alterConfig" and "topic" not in event and "broker" not in event


def _cluster_configs(records: Sequence[dict[str, Any]]) -> dict[str, str | None]:
    """The cluster-default configs the records set (ConfigRecord of resource type 4,
    BROKER, with the empty name: ConfigResource's cluster default), e.g. the min ISR a 4.x
    controller with ELR on writes at bootstrap."""
    return {str(r["name"]): r.get("value") for r in records
            if r.get("type") == "ConfigRecord" and r.get("resourceType") == 4
            and r.get("resourceName") == ""}


class Shrinker(CampaignState):
    """The campaign's replays of candidate sequences and the shrink of a finding."""

    def replay(self, candidates: Sequence[Sequence[dict[str, Any]]]) -> list[set[str]]:
        """The signatures each candidate (in lane 0's names) shows, each replayed in a
        namespace of its own, one after the other, in one fresh session."""
        out: list[set[str]] = [set() for _ in candidates]
        s = Session(self.build, settings_for(len(candidates), self.cfg, elr=self._replay_elr))
        try:
            for i, cand in enumerate(candidates):
                events = [rename(e, 0, i) for e in cand]
                if not events:
                    continue
                for event, answer in zip(events, s.send(events), strict=True):
                    for f in s.comparator.step(event, answer).findings:
                        if finding_lane(f, event) == i:
                            out[i].add(f.signature)
                if any(e["op"] == "snapshot" for e in events):
                    # The fresh managers of its snapshot would answer the next candidate's
                    # events too: ended (a snapshot with no shadow).
                    end = p.snapshot(0)
                    s.comparator.step(end, s.send([end])[0])
                touched = sorted({k for e in events if _cluster_wide(e) for k in e["configs"]})
                if touched:
                    # The cluster's configs are the whole controller's (an unclean election
                    # allowed, the min ISR): back to the session's before the next
                    # candidate, else it runs with what an earlier one left (e.g. a cancel
                    # that needs an unclean election, allowed only by that).
                    start = _cluster_configs(s.ready.records)
                    back = p.alter_config({k: start.get(k, self._static(k)) for k in touched})
                    s.comparator.step(back, s.send([back])[0])
                if any(e["op"] == "updateFeature" for e in events):
                    # The level is the whole controller's: the next candidate starts at
                    # the session's, as it would alone.
                    back = p.update_feature(p.ELR_FEATURE, 1 if s.elr else 0)
                    s.comparator.step(back, s.send([back])[0])
        finally:
            s.close()
        return out

    def _static(self, name: str) -> str | None:
        """A cluster config's value beneath the dynamic ones: the session's min ISR (set
        again, not deleted: the model knows no static value beneath a deleted one), else
        none (deleted: the driver's static config, the session's settings)."""
        return str(self.cfg.min_isr) if name == "min.insync.replicas" else None

    def _shrink(self, found: Found) -> None:
        cfg = self.cfg
        sig = found.finding.signature
        if found.finding.axis == ORACLE_ERROR:
            # the harness's own oracle failed: its lane's events are written as they are,
            # no replays spent on it (a failure that lasts would be one per op)
            found.shrink_note = "not shrunk: an oracle of the driver failed (oracle-error)"
            return
        seq = found.events
        deadline = time.monotonic() + cfg.shrink_budget_s
        attempts = 0
        if not seq or sig not in self.replay([seq])[0]:
            found.shrink_note = "not reproduced by the lane's events alone: kept unshrunk"
            return
        attempts += 1
        # First, in one replay: without the events of the lane's other topics (a
        # comparison is one event from one state: only the partition's own events and the
        # brokers' can matter).
        topic = found.finding.where.rpartition("-")[0] if "-" in found.finding.where else None
        if topic is not None:
            own = lane_of_topic(topic)
            topic0 = rename({"topic": topic}, own, 0)["topic"] if own is not None else topic
            alone = [e for e in seq if "topic" not in e or e["topic"] == topic0]
            if len(alone) < len(seq):
                attempts += 1
                if sig in self.replay([alone])[0]:
                    seq = alone
        # Then, in one session: without every event of one kind (one candidate per kind,
        # and one per broker's clock moves), repeated while one of them keeps the signature.
        while attempts < cfg.shrink_attempts and time.monotonic() < deadline:
            groups: list[list[dict[str, Any]]] = []
            for key in sorted({(str(e["op"]), e.get("broker")) for e in seq}, key=str):
                rest = [e for e in seq if (str(e["op"]), e.get("broker")) != key]
                if rest and len(rest) < len(seq) and rest not in groups:
                    groups.append(rest)
            groups = groups[:cfg.shrink_batch]
            if not groups:
                break
            attempts += len(groups)
            shown = self.replay(groups)
            kept = [g for g, sigs in zip(groups, shown, strict=True) if sig in sigs]
            if not kept:
                break
            seq = min(kept, key=len)
        chunk = max(1, len(seq) // 2)
        while chunk >= 1 and attempts < cfg.shrink_attempts and time.monotonic() < deadline:
            cands = [seq[:i] + seq[i + chunk:] for i in range(0, len(seq), chunk)]
            hit = None
            for start in range(0, len(cands), cfg.shrink_batch):
                if attempts >= cfg.shrink_attempts or time.monotonic() >= deadline:
                    break
                batch = cands[start:start + cfg.shrink_batch]
                attempts += len(batch)
                shown = self.replay(batch)
                hit = next((c for c, sigs in zip(batch, shown, strict=True) if sig in sigs), None)
                if hit is not None:
                    break
            if hit is not None:
                seq = hit
                chunk = min(chunk, max(1, len(seq) // 2))
            elif chunk == 1:
                break
            else:
                chunk = max(1, chunk // 2)
        found.shrunk = seq
        found.shrink_note = (f"{len(found.events)} -> {len(seq)} events in {attempts} replays "
                             f"({time.monotonic() - deadline + cfg.shrink_budget_s:.0f} s)"
                             + ("" if chunk <= 1 else " (bounded: not minimal)"))
