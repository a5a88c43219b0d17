"""The four parts of a certify campaign, each through the library functions the commands use
(harness.run.runner.Runner for scenario runs, harness.differential.campaign.Campaign for
`diff`, harness.search.hunt for `hunt`): nothing shells out to the CLI.

One cluster at a time here; certify/spark.py runs the same items on Spark executors
(`--master`, issue 46 item 2) and records them the same way. Every finished item is
recorded in the state (state.py) and saved at once; an interrupted item has no record, so
the next call runs it again. Ctrl-C / SIGTERM: a Runner
tears its cluster down, a diff stops its driver JVM, a hunt saves its state; the exception
goes up after the part's elapsed time is saved."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from harness.certify import compare, confirm, plan, rereplay
from harness.certify.rejudge import declared_failures
from harness.certify.state import CertifyState, save
from harness.certify.upgrade import write_scenarios
from harness.judge.axes import UNSUPPORTED

Say = Callable[[str], None]


class Campaign:
    """A certify campaign on one machine: ``builds`` {"old": Build, "new": Build}."""

    def __init__(self, directory: Path, state: CertifyState, builds: Mapping[str, Any],
                 say: Say, backend: str = "local", step_timeout_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.dir, self.state, self.builds, self.say = directory, state, builds, say
        self.backend, self.step_timeout_s, self.clock = backend, step_timeout_s, clock
        self.runs_dir = directory / "runs"
        self.seed = int(state.settings["seed"])

    # --- bookkeeping ---------------------------------------------------------------------

    def budget(self, part: str) -> float:
        """The part's seconds: its share, with what finished parts left (plan.with_unspent)."""
        return plan.with_unspent(self.state.plan["split"],
                                 {q: self.state.part(q) for q in plan.PARTS}, part,
                                 self.state.plan.get("overridden", ()))

    def _progress(self, part: str, done: int, total: int, eta_s: float, what: str) -> None:
        p = self.state.part(part)
        self.say(f"certify [{part}] {done}/{total}, elapsed {plan.fmt_s(p['elapsed_s'])} of "
                 f"{plan.fmt_s(self.budget(part))}, ETA {plan.fmt_s(eta_s)}: {what}")

    def run_part(self, part: str) -> None:
        p = self.state.part(part)
        if p["done"]:
            self.say(f"certify [{part}]: done in an earlier call ({p['note']}); not re-run")
            self._confirm(part)  # a campaign from before the confirmations gets them
            return
        if self.state.plan["split"][part] <= 0:
            p.update(done=True, note="budget 0: skipped")
            save(self.dir, self.state)
            self.say(f"certify [{part}]: budget 0, skipped")
            return
        getattr(self, f"_{part}")()
        self._confirm(part)
        p["done"] = True
        save(self.dir, self.state)

    def _timed(self, part: str, fn: Callable[[], dict[str, Any]], key: str) -> None:
        """Run one item, add its time to the part, record it (not when interrupted)."""
        t0 = self.clock()
        try:
            rec = fn()
        finally:
            self.state.part(part)["elapsed_s"] += self.clock() - t0
            save(self.dir, self.state)
        self.state.record(key, rec)
        save(self.dir, self.state)

    def _over(self, part: str) -> bool:
        spent = float(self.state.part(part)["elapsed_s"])
        return spent > plan.OVERRUN * self.budget(part)

    # --- scenario runs (matrix, upgrade) -----------------------------------------------

    def _cells(self, part: str, planned: list[dict[str, Any]], confirm: bool = False) -> None:
        from harness.scenario.loader import load_scenario
        todo = [(p, role) for p in planned for role in p["roles"]]
        for n, (p, role) in enumerate(todo):
            key = cell_key(part, role, p["name"], confirm)
            if self.state.done(key):
                continue
            left = sum(q["estimate_s"] for q, r in todo[n:]
                       if not self.state.done(cell_key(part, r, q["name"], confirm)))
            build = self.builds[role]
            if self._over(part):
                self.state.record(key, {**not_run(part, p, role, build.version,
                                                  "not run: the part's budget was spent "
                                                  f"({plan.OVERRUN}x overrun)"),
                                        "confirm": confirm})
                save(self.dir, self.state)
                continue
            what = f"{p['name']} on {build.version}" + (" (a re-run)" if confirm else "")
            self._progress(part, n, len(todo), left, what)
            sc = load_scenario(Path(p["path"]))
            self._timed(part, partial(self._one, part, p, sc, build, role, confirm), key)
            rec = self.state.items[key]
            self.say(f"certify [{part}] {what}: {rec['text']} ({rec['wall_s']:.0f} s)")
        if not confirm:
            self.state.part(part)["note"] = f"{len(todo)} runs"

    def _confirm(self, part: str) -> None:
        """The matrix: run again, on both builds, each scenario whose two cells differ
        (compare.to_confirm): a difference the re-runs do not repeat is flaky, not a change.
        diff and hunt: each finding one build met and the other did not, on both builds
        (certify/confirm.py)."""
        if part in confirm.PARTS:
            self._confirm_findings(part)
        if part != "matrix":
            return
        cells = [r for r in self.state.items.values() if r.get("part") == part]
        names = set(compare.to_confirm(cells))
        again = [p for p in self.state.plan[part] if p["name"] in names]
        if again:
            self.say(f"certify [{part}]: {len(again)} scenario(s) differ between the builds; "
                     "each runs again on both to confirm")
            self._cells(part, again, confirm=True)

    def _confirm_findings(self, part: str) -> None:
        """A diff finding's events replayed here (also with --master: one driver JVM);
        a hunt finding's schedule run on a fresh cluster (``_confirm_runs``)."""
        from harness.certify import render
        if part == "diff":
            self._rereplay()
        cells, searches = render.split(self.state)  # as the report reads them
        now = rereplay.current(self.state.items, rereplay.code_id())
        todo = confirm.todo(self.state.items, part, cells,
                            [render.rejudged(s, now) for s in searches])
        if not todo:
            return
        found = len({(i.found_on, i.finding["key"]) for i in todo})
        self.say(f"certify [{part}]: {found} finding(s) met on one build only; each "
                 f"{'replays its events' if part == 'diff' else 'runs its shrunk schedule'}"
                 " on both builds to confirm")
        if part == "hunt":
            self._confirm_runs(todo)
            return
        for n, item in enumerate(todo):
            build = self.builds[item.role]
            again = now.get((item.role, item.finding["key"]))
            if item.role == item.found_on and again is not None:
                # its own build's run is the replay just made with today's code (the same
                # events, build and code): recorded as the confirmation, not made twice
                self.state.record(item.key, {**{k: v for k, v in again.items()
                                                if k != "code"}, "part": confirm.PARTS[part]})
                save(self.dir, self.state)
            else:
                self._progress(part, n, len(todo), 15.0 * (len(todo) - n),
                               f"replaying {item.finding['key']} on {build.version}")
                self._timed(part, partial(confirm.replay_one, item, build, self.dir),
                            item.key)
            self.say(f"certify [{part}] {confirm.said(self.state.items[item.key])}")

    def _rereplay(self) -> None:
        """Each unexplained diff finding replayed on its own build with today's code, once
        per code (certify/rereplay.py): a class that code no longer reports leaves the
        answer's new findings."""
        from harness.certify import render
        code = rereplay.code_id()
        _, searches = render.split(self.state)
        todo = rereplay.todo(self.state.items, [render.rejudged(s) for s in searches], code)
        if todo:
            self.say(f"certify [diff]: {len(todo)} unexplained finding(s) recorded by other "
                     "code; each replays its events with today's code on its own build")
        for n, item in enumerate(todo):
            build = self.builds[item.role]
            self._progress("diff", n, len(todo), 15.0 * (len(todo) - n),
                           f"replaying {item.finding['key']} on {build.version} (today's code)")
            self._timed("diff", partial(rereplay.replayed, item, build, self.dir, code),
                        item.key)
            self.say(f"certify [diff] {confirm.said(self.state.items[item.key])}")

    def _hunt_schedule(self, item: confirm.Item) -> Path | None:
        """The hunt finding's schedule to re-run, or None with the item recorded as not
        judgeable (its schedule is not there)."""
        path = confirm.hunt_scenario(item.finding, self.dir)
        if path is not None and path.is_file():
            return path
        self.state.record(item.key, confirm.hunt_missing(
            item, self.builds[item.role],
            f"its schedule {path or '(none recorded)'} is not there"))
        save(self.dir, self.state)
        return None

    def _confirm_runs(self, todo: list[confirm.Item]) -> None:
        """The hunt findings' schedules, one cluster at a time."""
        from harness.run.runner import Runner
        from harness.scenario.loader import load_scenario
        for n, item in enumerate(todo):
            build = self.builds[item.role]
            path = self._hunt_schedule(item)
            if path is None:
                continue
            self._progress("hunt", n, len(todo), 120.0 * (len(todo) - n),
                           f"{path.name} on {build.version} (a confirmation)")
            runner = Runner(load_scenario(path), build, self.backend, self.runs_dir,
                            step_timeout_s=self.step_timeout_s)
            self._timed("hunt", partial(_ran, confirm.hunt_one, item, build, runner),
                        item.key)
            self.say(f"certify [hunt] {confirm.said(self.state.items[item.key])}")

    def _one(self, part: str, p: Mapping[str, Any], sc: Any, build: Any,
             role: str, confirm: bool = False) -> dict[str, Any]:
        from harness.run.runner import Runner
        result = Runner(sc, build, self.backend, self.runs_dir,
                        step_timeout_s=self.step_timeout_s).run()
        return {**self.cell_record(part, p, build, role, result), "confirm": confirm}

    def cell_record(self, part: str, p: Mapping[str, Any], build: Any, role: str,
                    result: Any) -> dict[str, Any]:
        """One scenario run's record (its RunResult; its history read from run_dir)."""
        from harness.search.hunt import kip_of_run
        h = result.headline
        bugs, devs = declared_failures(result.axes.values())
        _, adopted = kip_of_run(result.run_dir)
        return {"part": part, "scenario": p["name"], "path": p["path"], "role": role,
                "build": build.version, "verdict": h.verdict, "label": h.label,
                "shown": h.short, "text": h.text, "known_bugs": bugs,
                "deviations": sorted(set(devs) | set(adopted)),
                "run_dir": str(result.run_dir), "wall_s": round(result.wall_s, 1),
                "repro": f"kafka-chaos run {p['path']} {self._build_flag(role)}"}

    def _build_flag(self, role: str) -> str:
        dist = self.state.settings.get("kafka_dist") if role == "new" else None
        return f"--kafka-dist {dist}" if dist else f"--kafka-version {self.builds[role].version}"

    def _matrix(self) -> None:
        self._cells("matrix", self.state.plan["matrix"])  # run_part confirms after it

    def _upgrade(self) -> None:
        write_scenarios(self.dir / "upgrade" / "scenarios", self.builds["old"].version,
                        self.builds["new"].version)
        self._cells("upgrade", self.state.plan["upgrade"])

    # --- diff and hunt -----------------------------------------------------------------

    def _diff(self) -> None:
        per_build = self.budget("diff") / 2
        for n, role in enumerate(("old", "new")):
            key = f"diff/{role}"
            if self.state.done(key):
                continue
            self._progress("diff", n, 2, per_build * (2 - n), f"{self.builds[role].version}")
            self._timed("diff", partial(self._diff_one, role, per_build), key)
        self.state.part("diff")["note"] = "2 builds"

    def _diff_one(self, role: str, budget_s: float) -> dict[str, Any]:
        from harness.differential.campaign import Campaign
        build = self.builds[role]
        out = self.dir / "diff" / plan.slug(build.version)
        Campaign(build, diff_config(self.seed, budget_s, build), out, say=self.say).run()
        return diff_record(role, build.version, out, self._build_flag(role), self.seed,
                           budget_s)

    def _hunt(self) -> None:
        per_build = self.budget("hunt") / 2
        for n, role in enumerate(("old", "new")):
            key = f"hunt/{role}"
            if self.state.done(key):
                continue
            self._progress("hunt", n, 2, per_build * (2 - n), f"{self.builds[role].version}")
            self._timed("hunt", partial(self._hunt_one, role, per_build), key)
        self.state.part("hunt")["note"] = "2 builds"

    def _hunt_one(self, role: str, budget_s: float) -> dict[str, Any]:
        from harness.search import hunt
        build = self.builds[role]
        hunt_dir = self.dir / "hunt"
        probe = hunt.HuntConfig(seed=self.seed, budget_s=budget_s)
        st = hunt.load_state(hunt_dir, probe)
        spent = st.builds[build.version].seconds if build.version in st.builds else 0.0
        left = budget_s - spent  # a resumed build gets what its budget has left
        if left > 1:
            cfg = hunt.HuntConfig(seed=self.seed, budget_s=left, shrink_attempts=3,
                                  shrink_budget_s=min(300.0, max(30.0, budget_s / 4)))
            schedules = hunt_dir / build.version / "schedules"
            schedules.mkdir(parents=True, exist_ok=True)
            st = hunt.hunt(cfg, [self.hunt_plan(build, schedules)], hunt_dir, say=self.say,
                           state=st)
        return hunt_record(role, build.version, st.build(build.version),
                           self._build_flag(role))

    def hunt_plan(self, build: Any, schedules: Path) -> Any:
        """One build's hunt: its runs one at a time on this machine."""
        from harness.search import fuzz, hunt
        runner = fuzz.real_runner(build, self.backend, self.runs_dir, schedules,
                                  self.step_timeout_s)
        return hunt.BuildPlan(build.version, fuzz.model_factory(build), runner)


def _ran(record: Callable[[Any, Any, Any], dict[str, Any]], item: Any, build: Any,
         runner: Any) -> dict[str, Any]:
    return record(item, build, runner.run())


def diff_config(seed: int, budget_s: float, build: Any) -> Any:
    """One build's diff: `diff --elr auto` (harness/cli/diff.py for_build: sessions alternate
    ELR on and off on a build a cluster can run either way), without shrinking: its replays
    are not bounded by the part's budget (measured: 44 and 80 s per finding after a 90 s
    search on 4.2.2); a finding keeps its events and the command that finds it again (`diff`
    with the same seed shrinks it)."""
    from harness.differential.campaign import Config
    return Config(seed=seed, budget_s=budget_s, elr_both=bool(build.features.elr),
                  shrink=False)


def cell_key(part: str, role: str, name: str, confirm: bool = False) -> str:
    """A cell's key in the state: PART/ROLE/NAME, a re-run's PART-confirm/ROLE/NAME."""
    return f"{part}{'-confirm' if confirm else ''}/{role}/{name}"


def not_run(part: str, p: Mapping[str, Any], role: str, version: str,
            why: str) -> dict[str, Any]:
    return {"part": part, "scenario": p["name"], "path": p["path"], "role": role,
            "build": version, "verdict": compare.NOT_RUN if "budget" in why else UNSUPPORTED,
            "label": "", "text": why, "known_bugs": [], "deviations": [], "run_dir": "",
            "wall_s": 0.0, "repro": ""}


def diff_key(finding: Mapping[str, Any]) -> str:
    """A diff finding's class across builds: axis:name:op (the profile, which names the
    build's release line, left out, as known_bugs.py's diff signatures do)."""
    return ":".join(str(finding.get(k)) for k in ("axis", "name", "op"))


def diff_record(role: str, version: str, out: Path, flag: str, seed: int,
                budget_s: float) -> dict[str, Any]:
    summary = json.loads((out / "summary.json").read_text())
    findings = []
    for f in summary.get("findings", []):
        bug = (f.get("known_bug") or {}).get("id")
        findings.append({"key": diff_key(f["finding"]), "known_bug": bug,
                         "cls": "known-bug" if bug else "unexplained",
                         "file": str(out / f["file"]), "count": f.get("count"),
                         "repro": f"kafka-chaos diff {flag} --seed {seed} "
                                  f"--budget {int(budget_s)}s (events: {out / f['file']})"})
    stats = summary.get("stats", {})
    return {"part": "diff", "role": role, "build": version, "dir": str(out),
            "findings": findings, "deviations": sorted(stats.get("deviations", {})),
            "coverage": None,
            "stats": {k: stats.get(k) for k in ("events", "seconds", "sessions")}}


def hunt_record(role: str, version: str, st: Any, flag: str) -> dict[str, Any]:
    from harness.search.hunt import build_summary
    s = build_summary(st)
    findings = []
    for k in st.known:
        bug = compare.hunt_bug(k.why) if k.cls == "known-bug" else None
        # the shrunk schedule (fuzz writes it as minimal.yaml), else the first run's own copy
        scenario = k.minimal or (str(Path(k.first_run) / "scenario.yaml") if k.first_run
                                 else "")
        findings.append({"key": k.key, "cls": k.cls, "known_bug": bug, "why": k.why,
                         "scenario": scenario,
                         "repro": f"kafka-chaos run {scenario} {flag}" if scenario else ""})
    return {"part": "hunt", "role": role, "build": version, "findings": findings,
            "deviations": sorted(st.deviations_met()),
            "coverage": f"{s['transitions']} transitions, {s['rules']} trace rules",
            "stats": {k: s[k] for k in ("runs", "generated", "errors", "minutes")}}
