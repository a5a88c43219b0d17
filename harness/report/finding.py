"""A finding's first draft from runs with a failing axis (`kafka-chaos finding RUN_DIR...`).

Each run is re-judged from its files alone (harness.judge.audit, as `kafka-chaos audit`
does) and its verdict is the headline of its three axes (harness.judge.headline). A run
whose axes are all clean (CONFORMS, CONFORMS/DEVIATES, SAFE) or UNSUPPORTED is no finding;
a run that ended in ERROR or was cut short (INCOMPLETE) is a harness failure, not
evidence: both are refused, with the reason. A declared failure (the scenario's
``expect:``) still fails its axis: a known bug is still a bug to report.

The draft has the form of a Kafka ticket: title, affected versions (the builds measured,
with each run's verdicts), environment, steps to reproduce (the scenario, shrunk when the
run directory holds a shrink: ``minimal.yaml`` and ``shrink.json`` from ``kafka-chaos
fuzz``, and the command that runs it), expected (every failing axis with its rule names
and their citations: the trace rules of reference.trace.rules, the cited deviations, the
KIP-966 sentences behind the data checks), actual (the first violating metadata record
of each rule, decoded, with the partition before and after it; the data checks that
failed with the records named; the sampled states that broke an invariant), impact, a
suggested fix and how the harness found it. What only a person can write is marked
``TO WRITE``.

Runs of several scenarios give one draft per scenario; runs of one scenario on several
builds share a draft: the affected-versions table lists every run, the details come from
the run on the newest build.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.cluster.builds import version_tuple
from harness.infra.errors import HarnessError, UsageError
from harness.infra.history import RecordedRun, runs_below
from harness.judge import datachecks, trace_check
from harness.judge.audit import AuditResult, audit, recorded_steps
from harness.judge.axes import AXES, CLEAN, ERROR, INCOMPLETE, UNSUPPORTED
from harness.judge.headline import headline
from reference.releases.catalog import profile_for_build
from reference.trace.rules import RULES

#: What a data check or safety rule rests on in KIP-966 (seeds/003), for the rules that
#: are not trace rules (those carry their own citation: reference.trace.rules.RULES).
KIP_GOAL = ("seeds/003 'Eligible Leader Replicas': \"Our ultimate goal is to elect a leader "
            "without data loss or HWM moving backward when we only have min ISR - 1 unclean "
            "shutdowns.\"")
SAFETY_CITATIONS: dict[str, str] = {
    "acked-record-durable": KIP_GOAL + " 'ELR invariants': \"The member of ELR should have "
                            "the data at least to HWM.\"",
    "acked-record-hidden": KIP_GOAL + " (the HWM moved back below acked records, which a "
                           "healed cluster then showed)",
    "consumer-hwm-monotonic": KIP_GOAL,
    "HwmMonotonic": KIP_GOAL,
    "nothing-visible-above-hwm": "seeds/003 'Proposed Changes': the high watermark \"represents "
                                 "the highest offset of the replicated log known to be "
                                 "committed\"; consumers read below it only.",
    "sampled-state-invariants": "the observed-state invariants (reference/model/invariants.py "
                                "OBSERVED), each cited below by its trace rule.",
    "trace-invariants": "the KIP-966 invariants of the committed metadata (reference/trace/"
                        "rules.py), each cited below.",
}
DATA_CHECK_RULE = {"acked_lost": "acked-record-durable", "above_hwm": "nothing-visible-above-hwm",
                   "hwm_regression": "consumer-hwm-monotonic", "duplicates": "", "gaps": ""}
#: How many of each kind of evidence the draft shows before it says "and N more".
SHOW = 5


@dataclass
class LeftOut:
    """A run that is no finding, as the drafts mention it: a build a finding does not
    affect (clean or UNSUPPORTED, with the reason), or a run that proves nothing (ERROR)."""

    run_dir: Path
    why: str
    scenario: str = ""
    version: str = ""
    verdicts: str = ""
    reason: str = ""


class NotAFinding(UsageError):
    """A run the command refuses: no failing axis, or ERROR / INCOMPLETE."""

    def __init__(self, message: str, left: LeftOut | None = None) -> None:
        super().__init__(message)
        self.left = left


@dataclass
class Evidence(RecordedRun):
    """One run, re-judged, with what the draft needs from its directory."""

    result: AuditResult
    scenario_text: str
    scenario_file: str
    minimal: Path | None = None
    shrink: dict[str, Any] | None = None
    checks: list[datachecks.CheckResult] = field(default_factory=list)
    logs: trace_check.TraceLogs | None = None

    @property
    def failing(self) -> list[str]:
        return failing_axes(self.result)


def failing_axes(result: AuditResult) -> list[str]:
    """The axes whose verdict is neither clean nor a verdict that judges nothing."""
    return [a for a in AXES if result.axes[a].verdict not in CLEAN[a]
            and result.axes[a].verdict not in (UNSUPPORTED, ERROR, INCOMPLETE)]


# --- gathering -----------------------------------------------------------------------------

def gather(paths: Sequence[Path]) -> tuple[list[Evidence], list[LeftOut]]:
    """The failing runs among ``paths`` and a note for each run left out. A path that is a
    run directory (it holds run.json) must be a finding, else ``NotAFinding``; under a
    directory of runs, the runs that are not findings are left out with their reason (they
    are the builds a finding does not affect), and at least one must be a finding."""
    found: list[Evidence] = []
    left_out: list[LeftOut] = []
    for path in paths:
        if (path / "run.json").is_file():
            found.append(examine(path))
            continue
        runs = runs_below(path, "finding")
        mine: list[Evidence] = []
        theirs: list[LeftOut] = []
        for run in runs:
            try:
                mine.append(examine(run))
            except NotAFinding as exc:
                theirs.append(exc.left or LeftOut(run, str(exc).removeprefix("finding: ")))
        if not mine:
            raise NotAFinding(f"finding: {path}: none of its {len(runs)} run(s) has a failing "
                              "axis: " + "; ".join(t.why for t in theirs))
        left_out.extend(theirs)
        found.extend(mine)
    return found, left_out


def examine(run_dir: Path) -> Evidence:
    """Re-judge one run directory; ``NotAFinding`` unless an axis fails."""
    if not (run_dir / "run.json").is_file():
        raise UsageError(f"finding: {run_dir} is not a run directory (no run.json in it)")
    try:
        result = audit(run_dir)
        meta = json.loads((run_dir / "run.json").read_text())
        events = _events(run_dir)
    except HarnessError as exc:
        raise UsageError(f"finding: {str(exc).removeprefix('audit: ')}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"finding: {run_dir}: unreadable history ({exc})") from None
    stops = {a.verdict for a in result.axes.values()} & {ERROR, INCOMPLETE}
    if stops:
        stop = INCOMPLETE if INCOMPLETE in stops else ERROR
        why = next(a.reason for a in result.axes.values() if a.verdict == stop)
        what = ("ended in ERROR (a harness failure, not evidence about Kafka: rerun it)"
                if stop == ERROR else "is INCOMPLETE (its history was cut short)")
        raise NotAFinding(f"finding: {run_dir.name} {what}: {why}",
                          LeftOut(run_dir, f"{run_dir.name} {what}: {why}", result.scenario,
                                  result.build, stop, why))
    if not failing_axes(result):
        verdicts = ", ".join(f"{a} {result.axes[a].verdict}" for a in AXES)
        why = f"{run_dir.name} has no failing axis ({verdicts}): nothing to report"
        if len({result.axes[a].verdict for a in AXES}) == 1:
            verdicts = result.axes["release"].verdict
        reason = next((v.reason for v in result.axes.values() if v.reason), "")
        raise NotAFinding(f"finding: {why}", LeftOut(run_dir, why, result.scenario,
                                                       result.build, verdicts, reason))
    ev = Evidence(run_dir, meta, events, result, "", "")
    ev.scenario_text, ev.scenario_file = _scenario_text(run_dir, meta)
    if (run_dir / "minimal.yaml").is_file():
        ev.minimal = run_dir / "minimal.yaml"
        try:
            ev.shrink = json.loads((run_dir / "shrink.json").read_text())
        except (OSError, ValueError):
            ev.shrink = None
    ev.checks = datachecks.run_checks(events)
    return ev


def _events(run_dir: Path) -> list[dict[str, Any]]:
    from harness.infra.history import read_events
    return list(read_events(run_dir))


def _scenario_text(run_dir: Path, meta: Mapping[str, Any]) -> tuple[str, str]:
    """The scenario the run ran (its copy, else the file it names) and the path to give
    `kafka-chaos run`: the named file when it still holds that scenario, else the copy."""
    named = (meta.get("scenario") or {}).get("file")
    copy = run_dir / "scenario.yaml"
    text = copy.read_text() if copy.is_file() else ""
    if named and Path(named).is_file() and (not text or Path(named).read_text() == text):
        return Path(named).read_text(), str(named)
    return text, str(copy)


# --- rendering -----------------------------------------------------------------------------

def render(found: Sequence[Evidence], left_out: Sequence[LeftOut] = (),
           today: dt.date | None = None) -> str:
    """The drafts, one per scenario, in the order the scenarios first appear. A left-out
    run of a scenario with a draft is a build it does not affect (listed in its draft);
    the others are listed at the end."""
    by_scenario: dict[str, list[Evidence]] = {}
    for ev in found:
        by_scenario.setdefault(ev.result.scenario, []).append(ev)
    day = (today or dt.date.today()).isoformat()
    drafts = [_draft(runs, day, [lo for lo in left_out if lo.scenario == name])
              for name, runs in by_scenario.items()]
    text = "\n\n---\n\n".join(drafts)
    rest = [lo for lo in left_out if lo.scenario not in by_scenario]
    if rest:
        text += ("\n\n## Runs left out (not findings)\n\n"
                 + "\n".join(f"- {lo.why}" for lo in rest) + "\n")
    return text


def _draft(runs: list[Evidence], day: str, unaffected: Sequence[LeftOut] = ()) -> str:
    runs = sorted(runs, key=lambda e: (version_tuple(e.version), e.run_dir.name), reverse=True)
    main = runs[0]
    out: list[str] = []
    lost = _lost_all(main)
    out.append(f"# TO WRITE: title. Suggested: {_title(main, lost)}")
    out.append("")
    out.append(f"Draft written by `kafka-chaos finding` on {day} from {len(runs)} run(s); "
               "every `TO WRITE` is for a person.")
    out.append("")
    out.append("- **Type:** Bug")
    out.append("- **Component:** TO WRITE (KRaft controller? broker?)")
    out.append(f"- **Priority (suggested):** {_priority(main, lost)}")
    out.append(f"- **Affected versions (measured):** "
               f"{', '.join(sorted({e.version for e in runs}, key=version_tuple))}")
    out += ["", "## Affected versions (measured)", ""]
    out += _versions_table(runs)
    if unaffected:
        out += ["", "Not affected, or not judged (measured with the same scenario):", "",
                "| build | verdicts | why | run |", "|---|---|---|---|"]
        for lo in sorted(unaffected, key=lambda lo: (version_tuple(lo.version or "0.0.0"),
                                                     lo.run_dir.name)):
            out.append(f"| {lo.version} | {lo.verdicts} | {lo.reason or '-'} | `{lo.run_dir}` |")
    out += ["", "## Environment", ""]
    out += _environment(main)
    out += ["", "## Steps to reproduce", ""]
    out += _steps(main)
    out += ["", "## Expected", ""]
    out += _expected(main)
    out += ["", "## Actual", ""]
    out += _actual(main)
    out += ["", "## Impact", "", "TO WRITE. From the run:", ""]
    out += _impact(main, lost)
    out += ["", "## Suggested fix", "", "TO WRITE.", ""]
    out += ["## How the harness found it", ""]
    out += _how_found(main)
    return "\n".join(out).rstrip() + "\n"


def _title(ev: Evidence, lost: list[dict[str, Any]]) -> str:
    first = ev.failing[0]
    reason = ev.result.axes[first].reason.split("; ")[0]
    if lost:
        return (f"{len(lost)} acks=all record(s) lost in scenario {ev.result.scenario} "
                f"(Kafka {ev.version}): {reason}")
    return (f"{ev.result.scenario} on Kafka {ev.version}: {first} "
            f"{ev.result.axes[first].verdict}: {reason}")


def _priority(ev: Evidence, lost: list[dict[str, Any]]) -> str:
    if lost:
        return (f"Critical: data loss ({len(lost)} acks=all record(s) lost while at most "
                "min ISR - 1 replicas lost unflushed data)")
    if "safety" in ev.failing:
        return "Major: a committed state outside KIP-966's invariants, no record lost in the run"
    return "Minor/Major: the behaviour differs from KIP-966 or from the release's own line; " \
           "no safety rule broken"


def _versions_table(runs: list[Evidence]) -> list[str]:
    rows = ["| build | profile | verdict | release | kip | safety | run |",
            "|---|---|---|---|---|---|---|"]
    for ev in sorted(runs, key=lambda e: (version_tuple(e.version), e.run_dir.name)):
        cells = []
        for a in AXES:
            v = ev.result.axes[a]
            mark = " (declared)" if v.expected is not None and v.as_expected \
                and v.verdict not in CLEAN[a] else ""
            cells.append(f"{v.verdict}{mark}")
        rows.append(f"| {ev.version} | {ev.result.profile} | {ev.result.headline.verdict} | "
                    f"{' | '.join(cells)} | `{ev.run_dir}` |")
    return rows


def _environment(ev: Evidence) -> list[str]:
    meta, scen = ev.meta, _scenario_doc(ev)
    build = meta.get("build") or {}
    cluster = scen.get("cluster") or {}
    out = [f"- Kafka {build.get('version')} ({build.get('source')}); probed features: "
           f"{', '.join(build.get('features') or []) or 'none'}",
           f"- Model profile: {meta.get('profile')}; backend: {meta.get('backend')}",
           f"- Cluster: {cluster.get('brokers')} broker(s), {cluster.get('controllers')} "
           f"controller(s) (KRaft), ELR {_elr_word(cluster.get('elr'))}"]
    if cluster.get("broker_config"):
        out.append(f"- broker_config: {json.dumps(cluster['broker_config'], sort_keys=True)}")
    for t in _topics(scen):
        cfg = f", config {json.dumps(t['config'], sort_keys=True)}" if t.get("config") else ""
        where = t.get("assignment") or t.get("replicas")
        out.append(f"- Topic {t.get('name')}: replicas {where}, min.insync.replicas "
                   f"{t.get('min_insync_replicas')}{cfg}")
    machine = meta.get("machine") or {}
    if machine:
        out.append(f"- Host: {machine.get('cpu')}, {machine.get('cores')} core(s), "
                   f"{machine.get('memory_gib')} GiB")
    versions = meta.get("versions") or {}
    if versions:
        out.append("- Harness: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    return out


def _elr_word(elr: Any) -> str:
    return {True: "on (formatted with eligible.leader.replicas.version=1)",
            False: "off"}.get(elr, "as the build's default")


def _scenario_doc(ev: Evidence) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(ev.scenario_text) if ev.scenario_text else None
    except yaml.YAMLError:
        doc = None
    return doc if isinstance(doc, dict) else {}


def _topics(scen: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    topics = scen.get("topics") or [scen.get("topic") or {}]
    return [t for t in topics if isinstance(t, Mapping)]


def _steps(ev: Evidence) -> list[str]:
    out: list[str] = []
    file = ev.scenario_file
    if ev.minimal is not None:
        text, file = ev.minimal.read_text(), str(ev.minimal)
        sh = ev.shrink or {}
        out.append(f"The schedule shrunk by `kafka-chaos fuzz` ({sh.get('original_steps', '?')} "
                   f"-> {sh.get('steps', '?')} steps in {len(sh.get('attempts') or [])} run(s), "
                   f"{sh.get('stopped') or 'stopped'}; `{ev.run_dir / 'shrink.json'}`), from "
                   f"the failing run's schedule `{ev.scenario_file}`:")
    else:
        text = ev.scenario_text
        out.append(f"Scenario `{ev.result.scenario}` (`{file}`; format: "
                   "fixtures/scenarios/FORMAT.md):")
    out += ["", "```yaml", _without_expect(text).rstrip(), "```", "",
            "One command (resolves the build from Maven Central, brings up the cluster on "
            "loopback, runs the steps in lockstep with the model, judges the three axes):",
            "", "```sh", _command(ev, file), "```", "",
            "Re-judge the recorded run offline (no cluster): "
            f"`kafka-chaos audit {ev.run_dir}`."]
    return out


def _without_expect(text: str) -> str:
    """The scenario as a reproduction: its ``expect:`` declarations (the harness's own
    bookkeeping of known verdicts) left out."""
    m = re.search(r"^expect:", text, re.MULTILINE)
    return text if m is None else text[:m.start()]


def _command(ev: Evidence, file: str) -> str:
    build = ev.meta.get("build") or {}
    source = str(build.get("source") or "")
    args = [f"kafka-chaos run {file}"]
    if source.startswith("dist:"):
        args.append(f"--kafka-dist {source.removeprefix('dist:')}")
    else:
        args.append(f"--kafka-version {build.get('version')}")
    if ev.meta.get("backend") not in (None, "local"):
        args.append(f"--backend {ev.meta['backend']}")
    if ev.result.profile != _auto_profile(ev):
        args.append(f"--profile {ev.result.profile}")
    return " ".join(args)


def _auto_profile(ev: Evidence) -> str:
    scen = _scenario_doc(ev)
    if scen.get("profile") not in (None, "auto"):
        return str(scen["profile"])
    features = list((ev.meta.get("build") or {}).get("features") or [])
    wanted = (scen.get("cluster") or {}).get("elr")
    elr = "elr" in features and (("elr_default_on" in features) if wanted is None
                                 else bool(wanted))
    return profile_for_build(version_tuple(ev.version), elr)


def _expected(ev: Evidence) -> list[str]:
    out = ["The KIP-966 rules the run broke, per failing axis (README 'Three verdicts per "
           "run'), each with its citation (seeds/003 is the accepted KIP text):", ""]
    for axis in ev.failing:
        v = ev.result.axes[axis]
        out.append(f"### {axis}: {v.verdict}")
        if v.expected is not None:
            out.append("Declared for this build by the scenario (`expect:`): "
                       f"{v.expected['verdict']} ({v.expected['reason']}).")
        out.append("")
        for name, citation in _rules(axis, v.reason, v.details):
            out.append(f"- **{name}**: {citation}")
        out.append("")
    return out


def _rules(axis: str, reason: str, details: Iterable[Mapping[str, Any]]
           ) -> list[tuple[str, str]]:
    """(rule name, citation) of an axis's verdict, each once, in order of appearance."""
    seen: dict[str, str] = {}
    details = list(details)
    if axis == "release":
        step = re.match(r"step (\d+) (\w+): (.*)", reason)
        if step:
            seen[f"lockstep step {step.group(1)} ({step.group(2)})"] = (
                f"{step.group(3)}: the build's own profile ({axis} axis) predicts otherwise")
        for d in details:
            seen.setdefault(d["rule"], _citation(d["rule"], d.get("citation")))
    elif axis == "kip":
        m = re.search(r"trace: (\w+) at offset", reason)
        if m:
            seen[m.group(1)] = _citation(m.group(1))
        elif reason:
            seen["kip966 lockstep"] = f"{reason}: the accepted KIP (profile kip966) predicts " \
                                      "otherwise and no cited deviation of the build explains it"
        for d in details:
            seen.setdefault(f"deviation {d['deviation']}",
                            f"{d.get('summary', '')} ({d.get('cite')}); KIP difference: "
                            f"{d.get('kip_difference')}")
    else:
        for d in details:
            rule = str(d["rule"])
            seen.setdefault(rule, _citation(rule))
            for r in d.get("records") or []:
                name = r.get("invariant") or r.get("rule")
                if name:
                    seen.setdefault(str(name), _citation(str(name), r.get("citation")))
    return list(seen.items())


def _citation(rule: str, given: str | None = None) -> str:
    if given:
        return given
    if rule in RULES:
        return RULES[rule].citation
    return SAFETY_CITATIONS.get(rule, "(no citation recorded)")


def _actual(ev: Evidence) -> list[str]:
    out = [f"Verdict: **{ev.result.headline.text}** (re-judged from the run's files; "
           f"`{ev.result.trace.get('summary', 'trace: no metadata log')}`).", ""]
    for axis in AXES:
        v = ev.result.axes[axis]
        out.append(f"- {axis} {v.verdict}" + (f": {v.reason}" if v.reason else ""))
    out.append("")
    out += _step_table(ev) + [""]
    violations = _first_violations(ev)
    if violations:
        out += ["### The first violating metadata record of each rule (decoded)", ""]
        for f in violations:
            out += _record_lines(_culprit(ev, f)) + [""]
    failed = [c for c in ev.checks if not c.ok]
    if failed:
        out += ["### Data checks that failed", ""]
        for c in failed:
            rule = DATA_CHECK_RULE.get(c.name)
            out.append(f"- **{c.name}**" + (f" ({rule})" if rule else "") +
                       f": {len(c.details)} finding(s)")
            out += [f"  - {_record_named(d)}" for d in c.details[:SHOW * 4]]
            if len(c.details) > SHOW * 4:
                out.append(f"  - ... and {len(c.details) - SHOW * 4} more")
        out.append("")
    sampled = next((d for d in ev.result.axes["safety"].details
                    if d.get("rule") == "sampled-state-invariants"), None)
    if sampled:
        recs = list(sampled.get("records") or [])
        out += [f"### Sampled states that broke an observed-state invariant ({len(recs)})", ""]
        firsts: dict[str, dict[str, Any]] = {}
        for r in recs:
            firsts.setdefault(str(r.get("invariant")), r)
        for name, r in firsts.items():
            n = sum(1 for x in recs if x.get("invariant") == name)
            step = "-" if r.get("index") is None else int(r["index"]) + 1
            out.append(f"- {name} ({n} sample(s)), first at step {step} ({_when(r.get('t_wall'))}):"
                       f" {r.get('detail')}")
        out.append("")
    return out


def _step_table(ev: Evidence) -> list[str]:
    """Each recorded step with the state it settled in (as observed) and its lockstep
    verdict: what the cluster did, step by step."""
    steps = recorded_steps(ev.events)
    if not steps:
        return ["No step was recorded."]
    out = ["### Observed, step by step (settled states)", "",
           "| # | step | leader | epoch | replicas | ISR | ELR | LastKnownELR | HWM | lockstep |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for rec in steps:
        o = rec.observed or {}
        step = json.dumps({rec.kind: {k: v for k, v in rec.params.items()
                                      if k not in ("record_ids", "resolved")}},
                          separators=(", ", ": "))
        cells = [_cell(o.get(k)) for k in ("leader", "leader_epoch", "replicas", "isr", "elr",
                                             "last_known_elr", "hwm")]
        out.append(f"| {rec.index + 1} | `{step}` | {' | '.join(cells)} | "
                   f"{rec.verdict or '-'} |")
    return out


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def _first_violations(ev: Evidence) -> list[dict[str, Any]]:
    """The trace findings under the build's profile and the safety axis, the first of
    each rule, by offset."""
    pool: list[dict[str, Any]] = list(ev.result.axes["release"].details)
    for d in ev.result.axes["safety"].details:
        if d.get("rule") == "trace-invariants":
            pool += list(d.get("records") or [])
    firsts: dict[str, dict[str, Any]] = {}
    for f in sorted(pool, key=lambda f: (f.get("offset") is None, f.get("offset") or 0)):
        if "rule" in f and "record" in f:
            firsts.setdefault(str(f["rule"]), f)
    return list(firsts.values())[:SHOW]


PARTITION_RECORDS = ("PARTITION_CHANGE_RECORD", "PARTITION_RECORD")


def _culprit(ev: Evidence, f: Mapping[str, Any]) -> Mapping[str, Any]:
    """The violation with the record that made the partition's state: an invariant is
    judged at the end of a batch, whose last record (a NoOpRecord, a broker's record) may
    say nothing about the partition; then the batch's last record of that partition is
    shown, with the offset the rule was judged at."""
    rec = f.get("record") or {}
    tp = f.get("topic_partition")
    if not tp or rec.get("type") in PARTITION_RECORDS or f.get("offset") is None:
        return f
    if ev.logs is None:
        ev.logs = trace_check.read_logs(ev.run_dir)
    controller = f.get("controller")
    records = (ev.logs.by_controller.get(int(controller)) if controller is not None else None) \
        or (ev.logs.longest[1] if ev.logs.longest else [])
    topic_ids = {r["data"].get("topicId") for r in records
                 if r["type"] == "TOPIC_RECORD" and r["data"].get("name") == tp[0]}
    mine = [r for r in records if r["type"] in PARTITION_RECORDS
            and r["data"].get("topicId") in topic_ids and r["data"].get("partitionId") == tp[1]
            and r["offset"] <= int(f["offset"])]
    if not mine:
        return f
    last, ender = mine[-1], record_name(str(rec.get("type")))
    return {**f, "offset": last["offset"],
            "judged_at": f"{f['offset']} (the end of its batch, a {ender})",
            "record": {k: last.get(k) for k in ("type", "version", "data")}}


def _record_lines(f: Mapping[str, Any]) -> list[str]:
    rec = f.get("record") or {}
    tp = f.get("topic_partition")
    where = f"{tp[0]}-{tp[1]}" if tp else (f"broker {f['broker']}" if f.get("broker") else "")
    judged = f", judged at offset {f['judged_at']}" if f.get("judged_at") else ""
    lines = [f"**{f['rule']}** at offset {f.get('offset')} of controller {f.get('controller')}'s "
             f"metadata log ({_when(f.get('t_wall'))}{judged}){', ' + where if where else ''}: "
             f"{f.get('detail')}", "", "```",
             f"{record_name(str(rec.get('type')))} (version {rec.get('version')}) "
             f"{_fields(rec.get('data') or {})}"]
    if f.get("before") is not None:
        lines.append(f"before: {_fields(f['before'])}")
    if f.get("after") is not None:
        lines.append(f"after:  {_fields(f['after'])}")
    lines.append("```")
    return lines


def record_name(kind: str) -> str:
    """PARTITION_CHANGE_RECORD -> PartitionChangeRecord (Kafka's message name)."""
    return "".join(part.capitalize() for part in kind.split("_")) if kind.isupper() else kind


def _fields(data: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in data.items() if k != "directories")


def _record_named(d: Mapping[str, Any]) -> str:
    if "record_id" in d:
        extra = ", ".join(f"{k} {d[k]}" for k in ("offset", "acks", "hwm", "offsets", "topic",
                                                   "partition") if d.get(k) is not None)
        return f"record `{d['record_id']}`" + (f" ({extra})" if extra else "")
    return ", ".join(f"{k} {v}" for k, v in d.items())


def _when(t: Any) -> str:
    if not isinstance(t, (int, float)):
        return "time unknown"
    return dt.datetime.fromtimestamp(float(t), dt.UTC).strftime("%H:%M:%S.%f")[:-3] \
        + " UTC"


def _lost_all(ev: Evidence) -> list[dict[str, Any]]:
    for d in ev.result.axes["safety"].details:
        if d.get("rule") == "acked-record-durable":
            return list(d.get("records") or [])
    return []


def _impact(ev: Evidence, lost: list[dict[str, Any]]) -> list[str]:
    out = []
    if lost:
        ids = ", ".join(f"`{r['record_id']}`" for r in lost[:SHOW * 4])
        out.append(f"- {len(lost)} record(s) acknowledged to acks=all producers are gone from "
                   f"every replica: {ids}.")
    for d in ev.result.axes["safety"].details:
        if d.get("rule") != "acked-record-durable":
            out.append(f"- safety {d.get('rule')}: {d.get('why')}")
    if not out:
        out.append("- No safety rule broken in the run: "
                   + "; ".join(f"{a} {ev.result.axes[a].verdict}" for a in ev.failing))
    return out


def _how_found(ev: Evidence) -> list[str]:
    how = ("a generated schedule of `kafka-chaos fuzz`, shrunk to the steps above"
           if ev.minimal is not None else f"the scenario `{ev.result.scenario}`")
    return [f"kafka-chaos (a harness that runs real KRaft clusters, injects faults and judges "
            f"each run against a reference model of KIP-966) ran {how} on Kafka {ev.version} "
            f"(run `{ev.run_dir.name}`). Each step's settled state was compared with the "
            f"build's own profile ({ev.result.profile}) and with the accepted KIP (kip966); "
            "the controller's metadata log was archived and every committed record replayed "
            "against the KIP's invariants; acknowledged records were read back at the end.",
            "", f"Headline: {headline(ev.result.axes).text}."]


def finding_text(paths: Sequence[Path], today: dt.date | None = None) -> str:
    """What `kafka-chaos finding` prints: the drafts for the failing runs under ``paths``."""
    found, left_out = gather(paths)
    return render(found, left_out, today)
