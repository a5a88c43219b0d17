"""Coverage feedback (``--coverage``, corpus.py): the driver tells, with each answer, the
probes of the coverage classes the event set first in its JVM; a lane whose events set
probes no earlier event set joins the corpus (its events after the set-up, up to the last
such event, in lane 0's names; ``corpus/`` in the run directory), and in later sessions a
lane is, with probability ``mutate_share``, a mutation of corpus entries (then its random
generator). After a session the progress line names the corpus and the probes covered, and
at most every ``coverage_report_s`` the branch coverage so far (JaCoCo's report of the
sessions ended)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.differential import coverage
from harness.differential.campaign.lanes import rename
from harness.differential.campaign.state import CampaignState
from harness.differential.corpus import Planned
from harness.differential.coverage import CoverageReport
from harness.differential.workload import RandomEvents
from harness.infra.errors import HarnessError


class Feedback(CampaignState):
    """The campaign's corpus admission, coverage reports and progress lines."""

    def _admit(self, session: int, gens: Sequence[RandomEvents | Planned],
               logs: Sequence[Sequence[dict[str, Any]]], setup_len: Sequence[int],
               novel: Sequence[int], novel_end: Sequence[int]) -> None:
        for k, g in enumerate(gens):
            origin = "random"
            if isinstance(g, Planned):
                origin = f"mutant of {g.origin}"
                self.mutants["planned events sent"] += g.sent
                self.mutants["planned events skipped"] += g.skipped
                self.mutants["planned events mended"] += g.mended
            events = [rename(e, k, 0) for e in logs[k][setup_len[k]:novel_end[k]]]
            if self.corpus.admit(events, novel[k], session, k, origin) is not None:
                self.mutants["entries from mutants" if isinstance(g, Planned)
                             else "entries from random lanes"] += 1

    def _report(self) -> CoverageReport:
        folder = self.out_dir / "coverage"
        xml = coverage.xml_report(folder / "jacoco.exec", self.build, folder / "jacoco.xml")
        return coverage.read_report(xml, self.build.version)

    def _mark(self, t0: float, report: CoverageReport | None) -> None:
        branches = None if report is None else {
            t.name.split(" ")[0]: t.branches.ratio for t in report.targets}
        self.timeline.append({"seconds": round(time.monotonic() - t0, 1),
                              "events": self.stats.events, "corpus": len(self.corpus),
                              "probes": self.probes.to_json(), "branches": branches})

    def _progress(self, t0: float, deadline: float) -> None:
        """The session's progress line; JaCoCo's branch report at most every
        coverage_report_s (not in the last 20 s of the budget)."""
        now = time.monotonic()
        report = None
        if (now - self._last_report >= self.cfg.coverage_report_s
                and deadline - now > 20):
            self._last_report = now
            try:
                report = self._report()
            except HarnessError as exc:
                self.say(f"diff: coverage report failed: {exc}")
        self._mark(t0, report)
        line = (f"diff: session {self.stats.sessions}, {self.stats.events:,} events, "
                f"{now - t0:.0f} s: corpus {len(self.corpus)} "
                f"({self.mutants['lanes']} mutant lanes so far); probes {self.probes.text()}")
        if report is not None:
            line += "; branches " + ", ".join(f"{t.name.split(' ')[0]} {t.branches.text()}"
                                              for t in report.targets)
        self.say(line)
