"""The draft's environment and steps to reproduce: the build, cluster and topics the run
used, the scenario (or the schedule ``kafka-chaos fuzz`` shrank) without its ``expect:``,
and the one command that runs it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from harness.cluster.builds import version_tuple
from harness.report.finding.runs import Evidence, without_expect
from reference.releases.catalog import profile_for_build


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
    out += ["", "```yaml", without_expect(text).rstrip(), "```", "",
            "One command (resolves the build from Maven Central, brings up the cluster on "
            "loopback, runs the steps in lockstep with the model, judges the three axes):",
            "", "```sh", _command(ev, file), "```", "",
            "Re-judge the recorded run offline (no cluster): "
            f"`kafka-chaos audit {ev.run_dir}`."]
    return out


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
