"""feature: UpdateFeatures of one finalized feature with the build's own FeatureCommand
(``kafka-features.sh``; org.apache.kafka.tools.FeatureCommand is in kafka-tools from 3.6.2
through 4.3.1): ``upgrade --feature NAME=LEVEL`` when the level is at or above the finalized
one, else ``downgrade --feature NAME=LEVEL`` (a safe downgrade: the controller refuses an
unsafe metadata.version downgrade in every release, FeatureControlManager
.updateMetadataVersion). The current level is read first with ``describe``.

A refusal is an outcome, not an error: the tool's output is recorded (a ``feature`` event
and the step's note) and judged against the model's prediction and the step's own
``refused:`` (harness.judge.compare.refusal_mismatch). A feature the build lacks (ELR on
3.x) is such a refusal ("... does not support this feature" / "Invalid update version"),
which the model predicts from the profile (reference/model/features.py)."""

from __future__ import annotations

import re
import subprocess

from yaml.nodes import Node

from harness.client.session import Session
from harness.cluster.topology import ClusterShape
from harness.infra import tools
from harness.infra.errors import HarnessError
from harness.scenario.nodes import Items, Reader
from harness.scenario.steps.kind import StepKind, StepOutcome, Target
from reference.model import features as F
from reference.model import metadata_version as MV
from reference.search import generators as G

TOOL = "org.apache.kafka.tools.FeatureCommand"
TIMEOUT_S = 60
NOTE_CHARS = 300
_DESCRIBED = re.compile(r"Feature:\s*(\S+)\s+SupportedMinVersion:\s*(\S+)\s+"
                        r"SupportedMaxVersion:\s*(\S+)\s+FinalizedVersionLevel:\s*(\S+)")


def _parse(c: Reader, it: Items, n: Node, w: str, cl: ClusterShape) -> F.Feature:
    c.unknown(it, ("name", "level", "refused"), w)
    nnode = c.required(it, "name", n, w)
    name = c.str_(nnode, f"{w}.name")
    if name not in F.LEVELS:
        raise c.fail(nnode, f"{w}.name", f"unknown feature {name!r} (the model knows "
                     f"{', '.join(sorted(F.LEVELS))})")
    lo, hi = F.LEVELS[name]
    lnode = c.required(it, "level", n, w)
    level = c.int_(lnode, f"{w}.level")
    if not lo <= level <= hi:
        raise c.fail(lnode, f"{w}.level", f"level {level} of {name} out of range {lo}..{hi}")
    refused = c.bool_(it["refused"][1], f"{w}.refused") if "refused" in it else None
    return F.Feature(name, level, refused)


def _bootstrap(s: Session) -> list[str]:
    """Through a running broker that reaches the active controller, which forwards
    UpdateFeatures (as unregister.py). ``--bootstrap-controller`` (KIP-919, 3.7+) would
    also work with every broker down, but from the harness's address the tool timed out
    on 4.3.1 (elr-disabled-live run 2026-11-28, 60 s on ``describe``): not used until
    that is understood."""
    current = s.observer.current_brokers()
    if not current:
        raise HarnessError("feature: no running broker reaches the active controller to "
                           "forward UpdateFeatures")
    host, port = s.cluster.observer_address(current[0])
    return ["--bootstrap-server", f"{host}:{port}"]


def _run(s: Session, args: list[str]) -> subprocess.CompletedProcess[str]:
    build = s.cluster.build
    cmd = [str(tools.require_java(build.java_major)), "-cp", build.classpath(), TOOL,
           *_bootstrap(s), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)


def finalized_level(described: str, name: str) -> int | None:
    """The finalized level of ``name`` in FeatureCommand's ``describe`` output (None: the
    build does not list it)."""
    for m in _DESCRIBED.finditer(described):
        if m.group(1) == name:
            try:
                return int(m.group(4))
            except ValueError:
                # metadata.version is described by name ("FinalizedVersionLevel: 4.0-IV3",
                # FeatureCommand.handleDescribe prints MetadataVersion's version string).
                return MV.level_of(m.group(4))
    return None


def update_args(name: str, level: int, current: int | None) -> list[str]:
    """``upgrade`` when ``level`` is at or above the finalized level (or the build does
    not list the feature: the controller answers for it), else ``downgrade``."""
    verb = "downgrade" if current is not None and level < current else "upgrade"
    return [verb, "--feature", f"{name}={level}"]


def _answer(done: subprocess.CompletedProcess[str]) -> str:
    """The tool's answer: its stdout (one line per feature: "... was upgraded to 1." or
    "Could not upgrade ... <the controller's message>"), then what it said on stderr that
    is not its clients' logging (a command-line error, "1 out of 1 operation(s) failed.")."""
    said = [ln for ln in done.stderr.splitlines()
            if ln.strip() and not ln.startswith(("[", "\t", " ")) and " INFO " not in ln]
    return "\n".join([done.stdout.strip(), *said]).strip()


def _feature(s: Session, at: Target, step: F.Feature, out: StepOutcome) -> None:
    described = _run(s, ["describe"])
    current = finalized_level(described.stdout, step.name)
    done = _run(s, update_args(step.name, step.level, current))
    text = _answer(done)
    refused = done.returncode != 0
    out.refused = (text or f"exit {done.returncode}") if refused else None
    out.declared_refused = step.refused
    out.note = (f"{'refused' if refused else 'accepted'} (level was {current}): "
                f"{text[-NOTE_CHARS:]}")
    s.history.record("feature", name=step.name, level=step.level, was=current,
                     refused=out.refused, declared_refused=step.refused, output=text)


KINDS = (
    StepKind("feature", "feature: {name: eligible.leader.replicas.version|metadata.version, "
             "level: L, refused: B}: UpdateFeatures with the build's kafka-features tool "
             "(upgrade, or downgrade below the finalized level); ELR 1 on, 0 off, from the "
             "next partition change; refused: what the build must answer (the model "
             "predicts ELR's: refused on 3.x)",
             _parse, _feature, generator=G.FEATURE),
)
