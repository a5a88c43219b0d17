"""A campaign's output: ``findings/NN-<signature>.json`` and ``summary.json`` in the run
directory, and the summary lines `kafka-chaos diff` prints."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from harness.differential.campaign.session import settings_for
from harness.differential.campaign.state import CampaignState
from harness.differential.compare import (
    AGREES,
    DEVIATES,
    DIVERGES,
    KIP_DIVERGES,
    UNMODELLED,
    UNSUPPORTED,
)


class Writer(CampaignState):
    """The campaign's findings files and summary.json."""

    def _write(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        settings = settings_for(1, self.cfg).to_json()
        if self.cfg.elr_both:
            settings["elr"] = "alternating: on in odd sessions, off in even ones"
        findings = []
        for n, found in enumerate(self.found.values(), 1):
            slug = re.sub(r"[^A-Za-z0-9]+", "-", found.finding.signature).strip("-")
            path = self.out_dir / "findings" / f"{n:02d}-{slug}.json"
            path.parent.mkdir(exist_ok=True)
            doc = {"kafka": self.build.version, "settings": settings,
                   "finding": found.finding.to_json(), "count": found.count,
                   "first_event": found.event_no, "first_seconds": round(found.seconds, 3),
                   "elr": found.elr, "shrink": found.shrink_note,
                   "known_bug": None if found.known is None else
                   {"id": found.known.id, "reference": found.known.reference,
                    "at_the_same_event_as_a_release_finding": found.known_by_company},
                   "events": found.shrunk if found.shrunk is not None else found.events,
                   "unshrunk_events": len(found.events)}
            path.write_text(json.dumps(doc, indent=1) + "\n")
            found.file = path
            findings.append({k: doc[k] for k in ("finding", "count", "first_event",
                                                  "first_seconds", "shrink", "known_bug")}
                            | {"file": str(path.relative_to(self.out_dir))})
        summary = {"kafka": self.build.version, "seed": self.cfg.seed,
                   "elr": "both" if self.cfg.elr_both else self.elr,
                   "profiles": {"release": self.profiles[0], "kip": self.profiles[1]},
                   "lanes": self.cfg.lanes, "lane_events": self.cfg.lane_events,
                   "workers": self.cfg.workers,
                   "stats": self.stats.to_json(), "findings": findings,
                   "finding_classes": finding_classes(self),
                   "coverage": None if self.coverage is None else self.coverage.to_json()}
        if self.cfg.coverage:
            summary["feedback"] = {"corpus": len(self.corpus),
                                   "not_kept": self.corpus.not_kept,
                                   "mutants": dict(self.mutants),
                                   "probes": self.probes.to_json(),
                                   "timeline": self.timeline}
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


def finding_classes(c: CampaignState) -> dict[str, int]:
    """Signatures per finding class (the axis: release, kip, invariant, fault, and the
    driver's own oracles index and image, and oracle-error when one of them failed:
    harness/differential/oracles.py)."""
    out: dict[str, int] = {}
    for found in c.found.values():
        out[found.finding.axis] = out.get(found.finding.axis, 0) + 1
    return out


def summary_lines(c: CampaignState) -> Iterator[str]:
    st = c.stats
    rate = st.events / max(st.seconds, 1e-9)
    for elr, (release_name, kip_name) in sorted(c.profiles_by_elr.items(), reverse=True) or [
            (bool(c.elr), c.profiles)]:
        yield (f"Kafka {c.build.version}, ELR {'on' if elr else 'off'}; profiles "
               f"{release_name} (release axis) and {kip_name} (kip axis)")
    yield (f"{st.events:,} events in {st.seconds:.1f} s: {rate:,.0f} events/s, "
           f"{st.per_cpu_second:,.0f} per CPU second of driver and harness "
           f"({c.cfg.workers} worker(s), {st.sessions} sessions, {st.start_seconds:.1f} s of "
           "session starts); "
           f"{st.refused:,} refused by the controller")
    yield "events per kind: " + ", ".join(f"{op} {n:,}" for op, n in st.per_op.most_common())
    rel = {k.split()[1]: v for k, v in st.verdicts.items() if k.startswith("release ")}
    kip = {k.split()[1]: v for k, v in st.verdicts.items() if k.startswith("kip ")}
    yield "release axis: " + ", ".join(f"{v} {rel.get(v, 0):,}" for v in
                                       (AGREES, DIVERGES, UNMODELLED, UNSUPPORTED))
    yield "kip axis: " + ", ".join(f"{v} {kip.get(v, 0):,}" for v in
                                   (AGREES, DEVIATES, KIP_DIVERGES, UNMODELLED, UNSUPPORTED))
    if st.deviations:
        yield "deviations named: " + ", ".join(
            f"{d} {n:,} (first at event {st.deviation_first[d][0]:,}, "
            f"{st.deviation_first[d][1]:.1f} s)" for d, n in st.deviations.most_common())
    if st.unmodelled:
        yield "unmodelled: " + ", ".join(f"{op} {n:,}" for op, n in st.unmodelled.items())
    if c.coverage is not None:
        yield from c.coverage.lines()
    if c.cfg.coverage:
        yield (f"feedback: corpus {len(c.corpus)} entries ({c.corpus.not_kept} not kept), "
               f"probes {c.probes.text()}; mutants: "
               + ", ".join(f"{k} {v:,}" for k, v in sorted(c.mutants.items())))
    known = sum(found.known is not None for found in c.found.values())
    yield (f"findings: {len(c.found)} signature(s), {known} of them named by a known bug "
           "(reference/releases/known_bugs.py; read the others first)")
    if c.found:
        yield "findings by class: " + ", ".join(
            f"{axis} {n}" for axis, n in finding_classes(c).items())
    for found in c.found.values():
        f = found.finding
        yield ""
        yield (f"FINDING {f.signature}: {found.count} time(s), first at event "
               f"{found.event_no:,} ({found.seconds:.1f} s)")
        if found.known is not None:
            yield (f"  known bug {found.known.id} ({found.known.reference})"
                   + (" at the same event as its release-axis finding" if
                      found.known_by_company else "") + f": {found.known.summary}")
        yield f"  {f.detail}"
        for key in f.model:
            yield f"  model {key}: {json.dumps(f.model[key])}"
        for key in f.build:
            yield f"  build {key}: {json.dumps(f.build[key])}"
        for r in f.records:
            yield f"  record: {json.dumps(r)}"
        if found.shrink_note:
            yield f"  shrunk: {found.shrink_note}"
        for e in found.shrunk if found.shrunk is not None else found.events[-12:]:
            yield f"    {json.dumps(e)}"
        if found.file is not None:
            yield f"  written: {found.file}"
