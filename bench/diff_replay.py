"""The model and comparison half of a differential campaign, replayed without the driver
(issue 44 item 3): for timing the Python side alone and for checking that a change to the
model or the comparison leaves every step's report the same.

    python -m bench.diff_replay record --version 4.4.0 --events 8000 --out /tmp/r440.pickle
    python -m bench.diff_replay replay /tmp/r440.pickle --save /tmp/r440-reports.json
    (change the code)
    python -m bench.diff_replay replay /tmp/r440.pickle --against /tmp/r440-reports.json

``record`` runs ``kafka-chaos diff``'s campaign (seed, 8 lanes, no shrinking) and keeps, per
session, the comparator's first state and every (event, answer) pair. ``replay`` feeds them
to a fresh :class:`Comparator` per session and keeps, per event, the report (verdicts,
deviations, every finding's signature, detail, partitions) and the comparator's states
after it. Same reports and states for the same answers means the campaign (whose generator
reads those states) makes the same events and the same verdicts.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.cluster import builds
from harness.differential.compare import Comparator, StepReport
from harness.differential.protocol import Answer, Settings
from reference.model.controller_events import Cluster

#: Per session: the build's version, ELR at the start, the comparator's first state, every
#: (event, answer) pair, the driver's settings.
_UUID = re.compile(r"\b[A-Za-z0-9_-]{22}\b")

Recorded = list[tuple[tuple[int, int, int], bool, Cluster, list[tuple[dict[str, Any], Answer]],
                      Settings]]


def record(version: str, events: int, seed: int, lanes: int, out_dir: Path) -> Recorded:
    from harness.differential.campaign import Campaign, Config
    from harness.differential.campaign.session import Session, version_of

    sessions: Recorded = []
    current: list[Session] = []
    build = builds.from_maven(version)

    class Recording(Campaign):
        def _compare(self, s: Session, batch: Sequence[dict[str, Any]],
                     answers: Sequence[Answer], logs: list[list[dict[str, Any]]],
                     t0: float) -> None:
            if not current or current[-1] is not s:
                current.append(s)
                sessions.append((version_of(self.build), s.elr,
                                 s.comparator.states["release"], [], s.settings))
            sessions[-1][3].extend(zip([dict(e) for e in batch], answers, strict=True))
            super()._compare(s, batch, answers, logs, t0)

    cfg = Config(seed=seed, budget_s=24 * 3600.0, lanes=lanes, shrink=False,
                 elr_both=build.features.elr, max_events=events)
    Recording(build, cfg, out_dir, say=lambda _: None).run()
    return sessions


def _report(rep: StepReport, c: Comparator) -> str:
    text = json.dumps([rep.op, rep.release, rep.kip, list(rep.deviations), rep.why,
                       [f.to_json() for f in rep.findings]], sort_keys=True, default=str)
    states = repr((c.states["release"], c.states["kip"]))
    return hashlib.sha1((text + states).encode()).hexdigest()[:16]


def replay(sessions: Recorded) -> tuple[list[str], float, int]:
    reports: list[str] = []
    cpu = 0.0
    for version, elr, first, pairs, _ in sessions:
        c = Comparator(version, elr, first)
        for event, answer in pairs:
            t0 = time.process_time()
            rep = c.step(event, answer)
            cpu += time.process_time() - t0
            reports.append(_report(rep, c))
    return reports, cpu, len(reports)


def _normal(raw: dict[str, Any]) -> str:
    """An answer without Kafka's random ids and without the order of its lists (a topic
    id's hash orders the controller's maps, so two runs list records and reports
    differently)."""
    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, list):
            return sorted((norm(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
        if isinstance(v, str):
            return _UUID.sub("<id>", v)
        return v
    return json.dumps(norm(raw), sort_keys=True)


def drive(version: str, sessions: Recorded, lanes: int, check: bool, rounds: int = 1,
          jvm_opts: Sequence[str] = (), jfr: str = "", threads: bool = False
          ) -> tuple[float, int, int]:
    """The recorded events on the driver alone, in batches of ``lanes`` as the campaign
    sends them, one JVM, a new session per recorded session (``rounds`` times over, the
    JVM kept: later rounds run on a warmer JIT): (the JVM's CPU seconds after its start,
    events, answers that differ from the recorded ones)."""
    from harness.differential.driver import JVM_OPTS, ControllerDriver, compile_driver, cpu_seconds

    build = builds.from_maven(version)
    compile_driver(build)
    d = ControllerDriver.for_build(build, sessions[0][4], jvm_opts=(*JVM_OPTS, *jvm_opts))
    cpu = 0.0
    n = differ = named = 0
    try:
        for k, (_, _, _, pairs, settings) in enumerate(sessions * rounds):
            if k == 0:
                d.start()
                if jfr:  # started by jcmd: a recording started by a JVM option says so on stdout
                    import subprocess
                    settings_file, _, out = jfr.partition(":")
                    subprocess.run(["jcmd", str(d.pid), "JFR.start", "name=bench",
                                    f"settings={settings_file}", f"filename={out}"],
                                   check=True, capture_output=True)
            else:
                d.restart(settings)
            c0 = cpu_seconds(d.pid)
            answers: list[Answer] = []
            for i in range(0, len(pairs), lanes):
                answers.extend(d.send_many([e for e, _ in pairs[i:i + lanes]]))
            cpu += cpu_seconds(d.pid) - c0
            n += len(pairs)
            if check:
                for (event, was), now in zip(pairs, answers, strict=True):
                    a, b = _normal(_whole(was)), _normal(_whole(now))
                    if a != b and _only_stale_walk(_whole(was), _whole(now)):
                        # which of a deleted topic's stale directory entries is named
                        # (the first of a hash set's walk) varies with the random ids
                        named += 1
                    elif a != b:
                        if differ < 3:
                            print(f"answer differs for {event}:\n  before {a[:600]}\n"
                                  f"  after  {b[:600]}")
                        differ += 1
        if jfr:
            import subprocess
            subprocess.run(["jcmd", str(d.pid), "JFR.stop", "name=bench"], check=True,
                           capture_output=True)
        if threads:
            print("JVM CPU by thread (start included):", _threads(d.pid))
    finally:
        d.close()
    if named:
        print(f"{named} answers differ only in the partition a stale directoriesToPartitions "
              "report names (random topic ids order the walk: also between two runs of "
              "the same code)")
    return cpu, n, differ


def _whole(answer: Answer) -> dict[str, Any]:
    """The raw answer with the brokers as ``Answer.brokers`` has them (the wire may carry
    only those that changed: ``brokersChanged``, ``brokersGone``)."""
    raw = {k: v for k, v in answer.raw.items()
           if k not in ("brokers", "brokersChanged", "brokersGone")}
    if answer.brokers:
        raw["brokers"] = answer.brokers
    return raw


def _threads(pid: int | None) -> str:
    """The JVM's CPU seconds per thread name (main, C1 compiler, GC, ...), from /proc."""
    import os
    per: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as fh:
            head, rest = fh.read().rsplit(") ", 1)
        fields = rest.split()
        name = head.split(" (", 1)[1]
        name = re.sub(r"\d+$", "", name)
        ticks = int(fields[11]) + int(fields[12])
        per[name] = per.get(name, 0.0) + ticks / os.sysconf("SC_CLK_TCK")
    ranked = sorted(per.items(), key=lambda x: -x[1])
    return ", ".join(f"{k} {v:.2f}" for k, v in ranked if v >= 0.01)


def _only_stale_walk(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def strip(raw: dict[str, Any]) -> tuple[str, list[str]]:
        rest = {k: v for k, v in raw.items() if k != "oracles"}
        stale = [o.get("name", "") + ":" + re.sub(r"indexes \S+-\d+ on", "indexes on",
                                                   _UUID.sub("<id>", str(o.get("detail"))))
                 for o in raw.get("oracles") or []]
        return _normal(rest), sorted(stale)
    return strip(a) == strip(b)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--version", required=True)
    rec.add_argument("--events", type=int, default=8000)
    rec.add_argument("--seed", type=int, default=11)
    rec.add_argument("--lanes", type=int, default=8)
    rec.add_argument("--out", type=Path, required=True)
    rep = sub.add_parser("replay")
    rep.add_argument("recording", type=Path)
    rep.add_argument("--save", type=Path)
    rep.add_argument("--against", type=Path)
    rep.add_argument("--profile", type=Path, help="write a cProfile of the replay here")
    drv = sub.add_parser("driver")
    drv.add_argument("recording", type=Path)
    drv.add_argument("--version", required=True)
    drv.add_argument("--lanes", type=int, default=8)
    drv.add_argument("--rounds", type=int, default=1,
                     help="replay the recorded sessions this many times in the one JVM")
    drv.add_argument("--jvm-opt", action="append", default=[],
                     help="an extra JVM option (e.g. -XX:StartFlightRecording=...)")
    drv.add_argument("--jfr", default="", metavar="SETTINGS.jfc:OUT.jfr",
                     help="a JFR recording of the events (jcmd JFR.start after the start)")
    drv.add_argument("--threads", action="store_true",
                     help="print the JVM's CPU per thread at the end")
    drv.add_argument("--check", action="store_true",
                     help="compare every answer with the recorded one (ids and list order "
                          "left out)")
    args = parser.parse_args(argv)
    if args.cmd == "record":
        sessions = record(args.version, args.events, args.seed, args.lanes,
                          Path("/tmp") / f"diff-replay-{args.version}")
        args.out.write_bytes(pickle.dumps(sessions))
        print(f"{sum(len(s[3]) for s in sessions)} events in {len(sessions)} sessions")
        return 0
    sessions = pickle.loads(args.recording.read_bytes())
    if args.cmd == "driver":
        cpu, n, differ = drive(args.version, sessions, args.lanes, args.check, args.rounds,
                               args.jvm_opt, args.jfr, args.threads)
        print(f"{n} events, driver JVM CPU {cpu:.2f} s, {cpu / n * 1e6:.0f} us per event"
              + (f"; {differ} answers differ" if args.check else ""))
        return 1 if differ else 0
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
        reports, cpu, n = replay(sessions)
        prof.disable()
        prof.dump_stats(str(args.profile))
    else:
        reports, cpu, n = replay(sessions)
    print(f"{n} events, comparator CPU {cpu:.2f} s, {cpu / n * 1e6:.0f} us per event")
    if args.save:
        args.save.write_text(json.dumps(reports))
    if args.against:
        before = json.loads(args.against.read_text())
        bad = [i for i, (a, b) in enumerate(zip(before, reports, strict=False)) if a != b]
        if bad or len(before) != len(reports):
            print(f"DIFFERS: {len(bad)} events, first at event {bad[0] + 1 if bad else '-'}; "
                  f"{len(before)} before, {len(reports)} after")
            return 1
        print("identical: every report and state")
    return 0


if __name__ == "__main__":
    sys.exit(main())
