"""The campaign's event loop: sessions until the budget ends, each sending one event of
every lane in one pipelined batch (one round trip for ``lanes`` events), then the findings
shrunk and written. ``Campaign`` joins the jobs: classify.py (each answer against the
model), feedback.py (the coverage corpus), shrink.py and write.py."""

from __future__ import annotations

import random
import time
from typing import Any

from harness.differential import coverage
from harness.differential import protocol as p
from harness.differential.campaign.classify import Classifier
from harness.differential.campaign.feedback import Feedback
from harness.differential.campaign.lanes import clock_broker, lane_brokers, lane_topics, rename
from harness.differential.campaign.session import (
    DEBUG_RCM,
    Session,
    older_mv,
    settings_for,
    version_of,
)
from harness.differential.campaign.shrink import Shrinker
from harness.differential.campaign.write import Writer
from harness.differential.corpus import Planned, mutate
from harness.differential.workload import Capabilities, RandomEvents


def _lane_state(s: Session, k: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Lane ``k``'s partitions and brokers of the session's state, in the state's order."""
    topics = set(lane_topics(k))
    parts = {key: v for key, v in s.partitions.items() if key.rpartition("-")[0] in topics}
    ids = {str(b) for b in lane_brokers(k)}
    return parts, {b: v for b, v in s.brokers.items() if b in ids}


def _lane_states(s: Session, lanes: int
                 ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``_lane_state`` of every lane, from one walk of the state (the same mappings in the
    same order: each lane's entries in the order the state holds them)."""
    topic_lane = {t: k for k in range(lanes) for t in lane_topics(k)}
    broker_lane = {str(b): k for k in range(lanes) for b in lane_brokers(k)}
    out: list[tuple[dict[str, Any], dict[str, Any]]] = [({}, {}) for _ in range(lanes)]
    for key, v in s.partitions.items():
        k = topic_lane.get(key.rpartition("-")[0])
        if k is not None:
            out[k][0][key] = v
    for b, v in s.brokers.items():
        k = broker_lane.get(b)
        if k is not None:
            out[k][1][b] = v
    return out


class Campaign(Classifier, Feedback, Shrinker, Writer):
    """A differential campaign: ``run`` searches, shrinks and writes."""

    def run(self) -> None:
        cfg = self.cfg
        if cfg.workers > 1 and not cfg.coverage:
            from harness.differential.campaign.workers import search_in_workers
            search_in_workers(self)
        else:
            self.search()
        if cfg.shrink:
            for n, found in enumerate(self.found.values(), 1):
                self.say(f"diff: shrinking {n}/{len(self.found)} {found.finding.signature} "
                         f"({len(found.events)} events)")
                self._replay_elr = found.elr if self.cfg.elr_both else None
                self._shrink(found)
                self.say(f"diff: {found.shrink_note}")
        self._write()

    def search(self) -> None:
        """Sessions until the budget (or ``max_events``) ends, in this process: one driver,
        its model."""
        cfg = self.cfg
        rng = random.Random(cfg.seed)
        t0 = time.monotonic()
        cpu0 = time.process_time()
        deadline = t0 + cfg.budget_s
        if cfg.coverage:
            self._agent = coverage.agent_options(self.out_dir / "coverage" / "jacoco.exec")
            self._last_report = t0
        try:
            while time.monotonic() < deadline and not self._enough():
                self._session(random.Random(rng.getrandbits(63)), t0, deadline)
                if cfg.coverage:
                    self._progress(t0, deadline)
        finally:
            if self._jvm is not None:
                self._jvm.close()
                self._jvm = None
        self.stats.seconds = time.monotonic() - t0
        self.stats.harness_cpu_s = time.process_time() - cpu0
        if cfg.coverage:
            self.coverage = self._report()
            self._mark(t0, self.coverage)

    def _enough(self) -> bool:
        """``max_events`` reached (checked between batches: the same seed and count send
        the same batches)."""
        return self.cfg.max_events is not None and self.stats.events >= self.cfg.max_events

    def _session(self, rng: random.Random, t0: float, deadline: float) -> None:
        cfg = self.cfg
        elr = self.stats.sessions % 2 == 0 if cfg.elr_both else None
        # One JVM for every session (a new session in it: its JIT stays warm), except under
        # the coverage agent, whose probes are told per JVM (a session is the unit the
        # corpus admits; its older-metadata.version sessions also log at DEBUG).
        mv = older_mv(cfg, self.stats.sessions, version_of(self.build))
        jvm = list(self._agent)
        if mv is not None:
            elr = False
            jvm += DEBUG_RCM
        s = Session(self.build, settings_for(cfg.lanes, cfg, probes=cfg.coverage, elr=elr,
                                             metadata_version=mv), jvm, driver=self._jvm)
        if not cfg.coverage:
            self._jvm = s.driver
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
            caps = (Capabilities.of(s.ready.kafka, s.ready.supported_features)
                    if cfg.wide else None)
            for k in range(cfg.lanes):
                lane_rng = random.Random(rng.getrandbits(63))
                gen = RandomEvents(lane_rng, lane_brokers(k), lane_topics(k),
                                   # no ELR toggles at an older metadata.version:
                                   # the feature needs a newer one (refused)
                                   elr_feature=s.ready.elr_feature and mv is None,
                                   feature_weight=cfg.feature_weight, caps=caps)
                # (no corpus mutations at an older metadata.version: entries hold ELR
                # toggles, which it refuses)
                if (feedback and mv is None and self.corpus.entries
                        and lane_rng.random() < cfg.mutate_share):
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
            # Snapshot points from a generator of their own, so that the lanes' events are
            # those of the same seed with or without them.
            points = random.Random(rng.getrandbits(63))
            for _ in range(cfg.lane_events):
                if time.monotonic() >= deadline or self._enough():
                    break
                batch = [g.next(parts, brokers)
                         for g, (parts, brokers) in zip(gens, _lane_states(s, cfg.lanes),
                                                        strict=True)]
                if cfg.snapshot_rate > 0 and points.random() < cfg.snapshot_rate:
                    batch.append(p.snapshot(cfg.snapshot_shadow))
                answers = s.send(batch)
                self._compare(s, batch, answers, logs, t0)
                if feedback:
                    for k, answer in enumerate(answers[:cfg.lanes]):
                        if answer.new_probes and (n := self.probes.add(answer.new_probes)):
                            novel[k] += n
                            novel_end[k] = len(logs[k])
            if feedback:
                self._admit(session, gens, logs, setup_len, novel, novel_end)
        except BaseException:
            self._jvm = None
            s.close()
            raise
        finally:
            self.stats.driver_cpu_s += s.cpu_seconds()
            if self._jvm is None:
                s.close()
