"""Classifying each event's answer: the comparison with the model (compare.Comparator: the
release and kip axes, the invariants), the tallies of verdicts and deviations, and each
finding recorded once per signature with its lane's log and the known bug its signature
names (reference/releases/known_bugs.py).

Oracles that need no model (no fault, snapshot equivalence, index consistency, image
agreement) are finding classes of their own: they belong here, beside the model's
comparison, recorded through ``_record`` so that deduplication, shrinking (shrink.py replays
a candidate and looks for the signature: a new class must be looked for there too) and
writing treat them as the model's findings."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.differential.campaign.lanes import (
    clock_broker,
    finding_lane,
    lane_of_event,
    rename,
)
from harness.differential.campaign.session import Session
from harness.differential.campaign.state import CampaignState, Found
from harness.differential.compare import UNMODELLED, Finding
from harness.differential.protocol import Answer
from reference.releases.known_bugs import KnownBug, naming_diff_finding


class Classifier(CampaignState):
    """The campaign's comparison of each answer with the model, and its findings."""

    def _compare(self, s: Session, events: Sequence[dict[str, Any]], answers: Sequence[Answer],
                 logs: list[list[dict[str, Any]]], t0: float) -> None:
        st = self.stats
        for event, answer in zip(events, answers, strict=True):
            st.events += 1
            op = str(event["op"])
            st.per_op[op] += 1
            lane = lane_of_event(event)
            for k, log in enumerate(logs):
                if lane is None or lane == k:
                    log.append(event)
                elif op == "fence":  # the clock moved for this lane too
                    log.append({"op": "fence", "broker": clock_broker(k)})
            rep = s.comparator.step(event, answer)
            if answer.unsupported is None and not answer.ok:
                st.refused += 1
            st.verdicts[f"release {rep.release}"] += 1
            st.verdicts[f"kip {rep.kip}"] += 1
            for d in rep.deviations:
                st.deviations[d] += 1
                st.deviation_first.setdefault(d, (st.events, time.monotonic() - t0))
            if rep.release == UNMODELLED:
                st.unmodelled[op] += 1
            bugs = self._bugs_of(rep.findings)
            for f in rep.findings:
                self._record(f, event, logs, st.events, time.monotonic() - t0,
                             bugs[f.signature])

    def _bugs_of(self, findings: Sequence[Finding]
                 ) -> dict[str, tuple[KnownBug | None, bool]]:
        """Each finding's known bug, and whether only by company: a kip-axis finding is
        named by the bug a release-axis finding of the same event names (the KIP with any
        set of cited deviations cannot explain a state with the bug's difference in it,
        and the kip finding is named after the first differing field, which may be
        another)."""
        own = {f.signature: naming_diff_finding(self.build.version_tuple, f.signature,
                                                f.detail)
               for f in findings}
        release = next((b for f in findings if f.axis == "release"
                        and (b := own[f.signature]) is not None), None)
        return {sig: (bug, False) if bug is not None or not sig.startswith("kip:")
                else (release, release is not None) for sig, bug in own.items()}

    def _record(self, f: Finding, event: Mapping[str, Any], logs: list[list[dict[str, Any]]],
                event_no: int, seconds: float,
                bug: tuple[KnownBug | None, bool] = (None, False)) -> None:
        seen = self.found.get(f.signature)
        if seen is not None:
            seen.count += 1
            return
        lane = finding_lane(f, event)
        log = logs[lane] if lane is not None and lane < len(logs) else []
        events = [rename(e, lane, 0) for e in log] if lane is not None else list(log)
        known, by_company = bug
        self.found[f.signature] = Found(f, 1, event_no, seconds, events, elr=self.elr,
                                        known=known, known_by_company=by_company)
        self.say(f"diff: first {f.signature} at event {event_no} ({seconds:.1f} s): "
                 f"{f.detail}" + ("" if known is None else f" [known bug {known.id}]"))
