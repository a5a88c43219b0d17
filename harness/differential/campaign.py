"""A differential campaign (issue 33 parts 2, 3 and 5): random events on the build's own
controller code, each compared with the model (compare.Comparator), findings deduplicated
by signature, shrunk by deleting events, written to the run directory.

Lanes: one driver session holds ``lanes`` independent little clusters, each its own five
brokers (lane k: 10k+1 .. 10k+5) and three topics (``k<k>t0`` ..), each driven by its own
seeded ``workload.RandomEvents`` from its own state. One event of every lane goes in one
pipelined batch (one round trip for ``lanes`` events); a lane's events touch only its own
brokers and partitions, except the controller's periodic ``tick`` tasks (which act on
every partition: a lane's log holds every tick, in order). A session ends after
``lane_events`` events per lane and a new JVM starts, so a finding's sequence is at most
that long before shrinking.

Coverage feedback (``--coverage``, corpus.py): the driver tells, with each answer, the
probes of the coverage classes the event set first in its JVM; a lane whose events set
probes no earlier event set joins the corpus (its events after the set-up, up to the last
such event, in lane 0's names; ``corpus/`` in the run directory), and in later sessions a
lane is, with probability ``mutate_share``, a mutation of corpus entries (then its random
generator). After a session the progress line names the corpus and the probes covered, and
at most every ``coverage_report_s`` the branch coverage so far (JaCoCo's report of the
sessions ended).

Shrinking: the finding's lane log up to the event, renamed to lane 0's names, replayed in
fresh sessions with events deleted (halves, quarters, ... single events) while the same
signature still appears; several candidates share one JVM, each in a namespace of its own
(candidates run one after the other, so the clock and ticks of one cannot change another's
state midway). Bounded by attempts and time.
"""

from __future__ import annotations

import collections
import json
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.differential import coverage
from harness.differential.compare import (
    AGREES,
    DEVIATES,
    DIVERGES,
    KIP_DIVERGES,
    UNMODELLED,
    UNSUPPORTED,
    Comparator,
    Finding,
)
from harness.differential.corpus import Corpus, Planned, ProbeMap, mutate
from harness.differential.coverage import CoverageReport
from harness.differential.driver import JVM_OPTS, ControllerDriver
from harness.differential.model import initial
from harness.differential.protocol import Answer, Settings
from harness.differential.workload import RandomEvents
from harness.infra.errors import HarnessError
from reference.releases.known_bugs import KnownBug, naming_diff_finding

BROKERS_PER_LANE = 5
TOPICS_PER_LANE = 3
#: Broker id fields of events (single ids and lists).
_BROKER_FIELDS = ("broker", "leader")
_BROKER_LISTS = ("replicas", "isr")


#: A lane's clock broker (10k+9): registered, then fenced at the lane's start and never
#: used again. A ``fence`` moves the controller's clock for every lane (sessions of brokers
#: that are down expire: their new incarnations may register), so each lane's log holds
#: every other lane's ``fence`` as a fence of its own clock broker, which moves the clock
#: the same way when the lane is replayed alone.
CLOCK = 9


def lane_brokers(k: int) -> list[int]:
    return [10 * k + i for i in range(1, BROKERS_PER_LANE + 1)]


def clock_broker(k: int) -> int:
    return 10 * k + CLOCK


def lane_topics(k: int) -> list[str]:
    return [f"k{k}t{j}" for j in range(TOPICS_PER_LANE)]


_TOPIC = re.compile(r"^k(\d+)(t\d+)$")


def lane_of_topic(topic: str) -> int | None:
    m = _TOPIC.match(topic)
    return int(m.group(1)) if m else None


def lane_of_where(where: str) -> int | None:
    if where.startswith("broker "):
        return (int(where.split()[1]) - 1) // 10
    return lane_of_topic(where.rpartition("-")[0])


def lane_of_event(event: Mapping[str, Any]) -> int | None:
    if "topic" in event:
        return lane_of_topic(str(event["topic"]))
    if "broker" in event:
        return (int(event["broker"]) - 1) // 10
    return None


def rename(event: Mapping[str, Any], src: int, dst: int) -> dict[str, Any]:
    """The event moved from lane ``src``'s names to lane ``dst``'s."""
    shift = 10 * (dst - src)
    out = dict(event)
    for f in _BROKER_FIELDS:
        if f in out and isinstance(out[f], int):
            out[f] = out[f] + shift
    for f in _BROKER_LISTS:
        if isinstance(out.get(f), list):
            out[f] = [b + shift for b in out[f]]
    if isinstance(out.get("assignment"), list):
        out["assignment"] = [[b + shift for b in r] for r in out["assignment"]]
    if "topic" in out:
        m = _TOPIC.match(str(out["topic"]))
        if m:
            out["topic"] = f"k{dst}{m.group(2)}"
    return out


def finding_lane(f: Finding, event: Mapping[str, Any]) -> int | None:
    lane = lane_of_where(f.where) if f.where != "event" else None
    return lane if lane is not None else lane_of_event(event)


@dataclass
class Found:
    """A signature's first occurrence and how often it came back."""

    finding: Finding
    count: int
    event_no: int
    seconds: float
    events: list[dict[str, Any]]  # the lane's log up to the event, in lane 0's names
    shrunk: list[dict[str, Any]] | None = None
    shrink_note: str = ""
    file: Path | None = None
    #: The ELR setting of the session it was found in (replayed with the same).
    elr: bool | None = None
    #: The known bug (reference/releases/known_bugs.py) its signature names on this build.
    known: KnownBug | None = None
    #: Named only because a release-axis finding of the same event names the bug.
    known_by_company: bool = False


@dataclass
class Stats:
    events: int = 0
    seconds: float = 0.0
    sessions: int = 0
    start_seconds: float = 0.0
    per_op: collections.Counter[str] = field(default_factory=collections.Counter)
    verdicts: collections.Counter[str] = field(default_factory=collections.Counter)
    deviations: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Each deviation's first naming: (event number, seconds into the search): how soon a
    #: campaign meets a behaviour the release profile cites (e.g. a known fixed bug's).
    deviation_first: dict[str, tuple[int, float]] = field(default_factory=dict)
    unmodelled: collections.Counter[str] = field(default_factory=collections.Counter)
    refused: int = 0
    #: CPU seconds of the drivers and of this process during the search.
    driver_cpu_s: float = 0.0
    harness_cpu_s: float = 0.0

    @property
    def per_cpu_second(self) -> float:
        return self.events / max(self.driver_cpu_s + self.harness_cpu_s, 1e-9)

    def to_json(self) -> dict[str, Any]:
        return {"events": self.events, "seconds": round(self.seconds, 3),
                "events_per_second": round(self.events / max(self.seconds, 1e-9), 1),
                "driver_cpu_seconds": round(self.driver_cpu_s, 2),
                "harness_cpu_seconds": round(self.harness_cpu_s, 2),
                "events_per_cpu_second": round(self.per_cpu_second, 1),
                "sessions": self.sessions, "session_start_seconds": round(self.start_seconds, 3),
                "refused": self.refused, "per_op": dict(self.per_op),
                "verdicts": dict(self.verdicts), "deviations": dict(self.deviations),
                "deviation_first": {d: {"event": e, "seconds": round(t, 3)}
                                    for d, (e, t) in self.deviation_first.items()},
                "unmodelled": dict(self.unmodelled)}


@dataclass(frozen=True)
class Config:
    seed: int
    budget_s: float
    lanes: int = 8
    lane_events: int = 500
    min_isr: int = 2
    elr: bool | None = None
    #: Sessions alternate ELR on (odd) and off (even); ``elr`` is then ignored.
    elr_both: bool = False
    shrink: bool = True
    shrink_attempts: int = 400
    shrink_budget_s: float = 90.0
    #: Candidates replayed in one JVM while shrinking.
    shrink_batch: int = 32
    #: The search sessions run under the JaCoCo agent (coverage.py); shrinking does not.
    coverage: bool = False
    #: With coverage: the share of lanes that run a mutation of corpus entries.
    mutate_share: float = 0.5
    #: With coverage: at most this often, JaCoCo's branch report of the sessions so far.
    coverage_report_s: float = 60.0


def settings_for(lanes: int, cfg: Config, probes: bool = False,
                 elr: bool | None = None) -> Settings:
    """The session's settings; ``probes``: the answers tell the coverage classes' new
    probes (a search session under the agent); ``elr``: instead of the configured one."""
    brokers = tuple(b for k in range(lanes) for b in [*lane_brokers(k), clock_broker(k)])
    return Settings(brokers=brokers, min_isr=cfg.min_isr,
                    elr=cfg.elr if elr is None else elr, report="changed",
                    coverage_classes=coverage.PROBED if probes else ())


def version_of(build: Build) -> tuple[int, int, int]:
    parts = [int(x) for x in re.findall(r"\d+", build.version)[:3]]
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


class Session:
    """One driver session with its comparator and the merged state the answers report."""

    def __init__(self, build: Build, settings: Settings,
                 extra_jvm_opts: Sequence[str] = ()) -> None:
        self.driver = ControllerDriver.for_build(build, settings,
                                                 jvm_opts=(*JVM_OPTS, *extra_jvm_opts))
        t0 = time.monotonic()
        ready = self.driver.start()
        self.start_seconds = time.monotonic() - t0
        self.elr = ready.elr
        self.comparator = Comparator(version_of(build), ready.elr, initial(
            ready.partitions, ready.brokers, min_isr=settings.min_isr,
            unclean=settings.unclean_election, elr=ready.elr))
        self.partitions: dict[str, dict[str, Any]] = dict(ready.partitions)
        self.brokers: dict[str, dict[str, Any]] = dict(ready.brokers)
        self.ready = ready

    def send(self, events: Sequence[Mapping[str, Any]]) -> list[Answer]:
        answers = self.driver.send_many(events)
        for a in answers:
            self.partitions.update(a.partitions)
            if a.brokers:
                self.brokers = dict(a.brokers)
        return answers

    def cpu_seconds(self) -> float:
        """CPU time the driver's JVM has used so far (0 once it has exited)."""
        from harness.differential.bench import cpu_seconds
        try:
            return cpu_seconds(self.driver.pid)
        except (OSError, IndexError, ValueError):
            return 0.0

    def close(self) -> None:
        self.driver.close()


def _lane_state(s: Session, k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    topics = set(lane_topics(k))
    parts = {key: v for key, v in s.partitions.items() if key.rpartition("-")[0] in topics}
    ids = {str(b) for b in lane_brokers(k)}
    return parts, {b: v for b, v in s.brokers.items() if b in ids}


class Campaign:
    def __init__(self, build: Build, cfg: Config, out_dir: Path,
                 say: Callable[[str], None] = print) -> None:
        self.build, self.cfg, self.out_dir, self.say = build, cfg, out_dir, say
        self.stats = Stats()
        self.found: dict[str, Found] = {}
        self.profiles: tuple[str, str] = ("", "")
        self.elr: bool | None = None
        #: Profiles of the sessions, by their ELR (two with elr_both).
        self.profiles_by_elr: dict[bool, tuple[str, str]] = {}
        self._replay_elr: bool | None = None
        self.coverage: CoverageReport | None = None
        self._agent: list[str] = []
        self.probes = ProbeMap()
        self.corpus = Corpus(out_dir / "corpus")
        #: Lanes run as mutations of corpus entries, and their planned events sent,
        #: skipped (not valid in the lane's state) and mended.
        self.mutants = collections.Counter[str]()
        #: (seconds, events, corpus size, probes covered per class, branch ratios or None).
        self.timeline: list[dict[str, Any]] = []
        self._last_report = 0.0

    # ---- search ----

    def run(self) -> None:
        cfg = self.cfg
        rng = random.Random(cfg.seed)
        t0 = time.monotonic()
        cpu0 = time.process_time()
        deadline = t0 + cfg.budget_s
        if cfg.coverage:
            self._agent = coverage.agent_options(self.out_dir / "coverage" / "jacoco.exec")
            self._last_report = t0
        while time.monotonic() < deadline:
            self._session(random.Random(rng.getrandbits(63)), t0, deadline)
            if cfg.coverage:
                self._progress(t0, deadline)
        self.stats.seconds = time.monotonic() - t0
        self.stats.harness_cpu_s = time.process_time() - cpu0
        if cfg.coverage:
            self.coverage = self._report()
            self._mark(t0, self.coverage)
        if cfg.shrink:
            for n, found in enumerate(self.found.values(), 1):
                self.say(f"diff: shrinking {n}/{len(self.found)} {found.finding.signature} "
                         f"({len(found.events)} events)")
                self._replay_elr = found.elr if self.cfg.elr_both else None
                self._shrink(found)
                self.say(f"diff: {found.shrink_note}")
        self._write()

    def _session(self, rng: random.Random, t0: float, deadline: float) -> None:
        cfg = self.cfg
        elr = self.stats.sessions % 2 == 0 if cfg.elr_both else None
        s = Session(self.build, settings_for(cfg.lanes, cfg, probes=cfg.coverage, elr=elr),
                    self._agent)
        self.stats.sessions += 1
        self.stats.start_seconds += s.start_seconds
        self.elr = s.elr
        self.profiles = (s.comparator.release.name, s.comparator.kip.name)
        self.profiles_by_elr[s.elr] = self.profiles
        session = self.stats.sessions
        feedback = cfg.coverage and bool(s.ready.coverage_probes)
        if feedback:
            self.probes.total.update(s.ready.coverage_probes)
            self.probes.add(s.ready.new_probes)
        try:
            gens: list[RandomEvents | Planned] = []
            for k in range(cfg.lanes):
                lane_rng = random.Random(rng.getrandbits(63))
                gen = RandomEvents(lane_rng, lane_brokers(k), lane_topics(k))
                if feedback and self.corpus.entries and lane_rng.random() < cfg.mutate_share:
                    plan, how = mutate(lane_rng, self.corpus.entries, cfg.lane_events)
                    gens.append(Planned([rename(e, 0, k) for e in plan], gen, clock_broker(k),
                                        how))
                    self.mutants["lanes"] += 1
                else:
                    gens.append(gen)
            logs: list[list[dict[str, Any]]] = [[] for _ in range(cfg.lanes)]
            first: list[dict[str, Any]] = []
            owners: list[int] = []
            for k, g in enumerate(gens):
                lane_first = [{"op": "fence", "broker": clock_broker(k)}, *g.setup()]
                first += lane_first
                owners += [k] * len(lane_first)
            answers = s.send(first)
            self._compare(s, first, answers, logs, t0)
            if feedback:
                self.probes.add({c: i for a in answers for c, i in a.new_probes.items()})
            setup_len = [len(log) for log in logs]
            novel = [0] * cfg.lanes
            novel_end = list(setup_len)
            for _ in range(cfg.lane_events):
                if time.monotonic() >= deadline:
                    break
                batch = []
                for k, g in enumerate(gens):
                    parts, brokers = _lane_state(s, k)
                    batch.append(g.next(parts, brokers))
                answers = s.send(batch)
                self._compare(s, batch, answers, logs, t0)
                if feedback:
                    for k, answer in enumerate(answers):
                        if answer.new_probes and (n := self.probes.add(answer.new_probes)):
                            novel[k] += n
                            novel_end[k] = len(logs[k])
            if feedback:
                self._admit(session, gens, logs, setup_len, novel, novel_end)
        finally:
            self.stats.driver_cpu_s += s.cpu_seconds()
            s.close()

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
        own = {f.signature: naming_diff_finding(self.build.version_tuple, f.signature)
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

    # ---- shrinking ----

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
        finally:
            s.close()
        return out

    def _shrink(self, found: Found) -> None:
        cfg = self.cfg
        sig = found.finding.signature
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

    # ---- output ----

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
                   "stats": self.stats.to_json(), "findings": findings,
                   "coverage": None if self.coverage is None else self.coverage.to_json()}
        if self.cfg.coverage:
            summary["feedback"] = {"corpus": len(self.corpus),
                                   "not_kept": self.corpus.not_kept,
                                   "mutants": dict(self.mutants),
                                   "probes": self.probes.to_json(),
                                   "timeline": self.timeline}
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


def summary_lines(c: Campaign) -> Iterator[str]:
    st = c.stats
    rate = st.events / max(st.seconds, 1e-9)
    for elr, (release_name, kip_name) in sorted(c.profiles_by_elr.items(), reverse=True) or [
            (bool(c.elr), c.profiles)]:
        yield (f"Kafka {c.build.version}, ELR {'on' if elr else 'off'}; profiles "
               f"{release_name} (release axis) and {kip_name} (kip axis)")
    yield (f"{st.events:,} events in {st.seconds:.1f} s: {rate:,.0f} events/s, "
           f"{st.per_cpu_second:,.0f} per CPU second of driver and harness "
           f"({st.sessions} sessions, {st.start_seconds:.1f} s of JVM starts); "
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
