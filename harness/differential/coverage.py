"""Coverage of the build's own controller code by a `kafka-chaos diff` campaign (issue 33,
part 4): the driver's JVM runs under the JaCoCo agent (Maven Central), every session adds
to one execution-data file, and JaCoCo's command-line tool turns it into an XML report
against the build's `kafka-metadata` jar, read here into line and branch counts of
`PartitionChangeBuilder`, `PartitionReassignmentReplicas` and the partition-changing
methods of `ReplicationControlManager`, and the lines of those classes with a branch
never taken.

The agent records what a JVM ran when the JVM exits (``dumponexit``): a session closed
normally (its input closed) is counted; a driver killed with SIGKILL after a timeout is
not. Coverage is opt-in (``--coverage``): instrumented classes run slower, and the
campaign's throughput figures are then not the uninstrumented ones.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.builds import Build
from harness.cluster.javaprogram import find_jdk, maven_jar
from harness.infra.errors import HarnessError

JACOCO_VERSION = "0.8.15"  # the newest whose runtime agent Maven Central serves here
AGENT = f"org.jacoco:org.jacoco.agent:{JACOCO_VERSION}:jar:runtime"
CLI = f"org.jacoco:org.jacoco.cli:{JACOCO_VERSION}:jar:nodeps"
#: Only the controller and metadata packages are instrumented (the rest of the class path
#: runs at full speed and is not reported).
INCLUDES = "org.apache.kafka.controller.*:org.apache.kafka.metadata.*"
PACKAGE = "org/apache/kafka/controller"
#: Classes reported whole (issue 33's and issue 44 item 4's targets: the builder and the
#: reassignment replicas, ReplicationControlManager as a whole, and the three other
#: managers QuorumController composes). A class's own methods only: its nested classes
#: (Builders, records) are JaCoCo classes of their own, not counted here.
WHOLE = ("PartitionChangeBuilder", "PartitionReassignmentReplicas",
         "ReplicationControlManager", "ClusterControlManager", "ConfigurationControlManager",
         "FeatureControlManager")
#: Issue 44 item 4's branch-coverage targets (a share of the class's branches).
TARGETS = {"ReplicationControlManager": 0.80, "PartitionChangeBuilder": 0.90}
#: ReplicationControlManager's methods that change partitions (by name; every overload
#: and every lambda JaCoCo names after one of them, ``lambda$<name>$<n>``).
PARTITION_METHODS = (
    "generateLeaderAndIsrUpdates", "handleBrokerFenced", "handleBrokerUnfenced",
    "handleBrokerInControlledShutdown", "handleBrokerUnregistered",
    "handleBrokerUncleanShutdown", "alterPartition", "alterPartitionReassignments",
    "changePartitionReassignment", "changePartitionReassignmentV2",
    "cancelPartitionReassignment", "electLeaders", "electLeader",
    "maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader",
    "maybeTriggerUncleanLeaderElectionForLeaderlessPartitions",
    "maybeCompleteReassignment", "buildPartitionRegistration", "createPartitions",
    "clearElrRecordsOnTopic", "clearElr", "handleMinIsrUpdate",
)
RCM = "ReplicationControlManager"
#: Classes whose probes the driver reports after each event (corpus.py's feedback).
PROBED = WHOLE
REPORT_TIMEOUT_S = 300.0


def agent_options(exec_file: Path) -> list[str]:
    """JVM options that record coverage into ``exec_file`` (appended, one file for every
    session of a campaign)."""
    agent = maven_jar(AGENT)
    exec_file.parent.mkdir(parents=True, exist_ok=True)
    return [f"-javaagent:{agent}=destfile={exec_file},append=true,includes={INCLUDES},"
            "output=file,dumponexit=true"]


@dataclass(frozen=True)
class Counts:
    covered: int = 0
    missed: int = 0

    @property
    def total(self) -> int:
        return self.covered + self.missed

    @property
    def ratio(self) -> float | None:
        return None if self.total == 0 else self.covered / self.total

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.covered + other.covered, self.missed + other.missed)

    def text(self) -> str:
        r = self.ratio
        return "none" if r is None else f"{100 * r:.1f}% ({self.covered}/{self.total})"


@dataclass(frozen=True)
class Target:
    """One reported unit: a class, or a class's chosen methods."""

    name: str
    lines: Counts
    branches: Counts
    #: Source lines with a branch never taken: (method, line, missed, covered branches);
    #: the method is the one whose first line is the nearest at or above.
    partial_lines: tuple[tuple[str, int, int, int], ...] = ()
    #: Methods with branches never taken (ReplicationControlManager's partition methods).
    methods_missing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "line": _ratio_json(self.lines),
                "branch": _ratio_json(self.branches),
                "lines_with_missed_branches": [
                    {"method": f, "line": n, "missed": m, "covered": c}
                    for f, n, m, c in self.partial_lines],
                "methods_with_missed_branches": list(self.methods_missing)}


@dataclass
class CoverageReport:
    build: str
    targets: list[Target] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"kafka": self.build, "jacoco": JACOCO_VERSION,
                "targets": [t.to_json() for t in self.targets]}

    def lines(self) -> Iterator[str]:
        for t in self.targets:
            goal = TARGETS.get(t.name)
            met = "" if goal is None or t.branches.ratio is None else (
                f" (target {100 * goal:.0f}%: {'met' if t.branches.ratio >= goal else 'NOT met'})")
            yield (f"coverage {t.name}: branches {t.branches.text()}{met}, "
                   f"lines {t.lines.text()}")
            if t.partial_lines:
                yield ("  lines with a branch never taken: "
                       + ", ".join(f"{f}:{n} ({m} of {m + c})" for f, n, m, c in t.partial_lines))
            if t.methods_missing:
                yield "  methods with a branch never taken: " + ", ".join(t.methods_missing)


def _ratio_json(c: Counts) -> dict[str, Any]:
    return {"covered": c.covered, "missed": c.missed,
            "ratio": None if c.ratio is None else round(c.ratio, 4)}


def metadata_jar(build: Build) -> Path:
    """The build's jar that holds the controller's classes."""
    jars = sorted(build.libs.glob("kafka-metadata-*.jar"))
    jars = [j for j in jars if "-test" not in j.name and "-sources" not in j.name]
    if not jars:
        raise HarnessError(f"Kafka {build.version}: no kafka-metadata jar in {build.libs}")
    return jars[0]


def xml_report(exec_file: Path, build: Build, out: Path) -> Path:
    """JaCoCo's XML report of ``exec_file`` against the build's controller classes."""
    if not exec_file.is_file():
        raise HarnessError(f"no coverage recorded ({exec_file} is missing: did every driver "
                           "session end before it was closed?)")
    java = find_jdk().java
    cmd = [str(java), "-jar", str(maven_jar(CLI)), "report", str(exec_file),
           "--classfiles", str(metadata_jar(build)), "--xml", str(out), "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=REPORT_TIMEOUT_S)
    if done.returncode != 0 or not out.is_file():
        raise HarnessError("JaCoCo's report failed: " + (done.stderr or done.stdout)[-2000:])
    return out


def read_report(xml_file: Path, build: str) -> CoverageReport:
    """The targets' counts from a JaCoCo XML report."""
    root = ET.parse(xml_file).getroot()
    package = next((p for p in root.iter("package") if p.get("name") == PACKAGE), None)
    report = CoverageReport(build)
    if package is None:
        return report
    for name in WHOLE:
        cls = package.find(f"class[@name='{PACKAGE}/{name}']")
        if cls is None:
            continue
        lines, branches = _counters(cls)
        report.targets.append(Target(name, lines, branches,
                                     _partial_lines(package, cls, f"{name}.java")))
    rcm = package.find(f"class[@name='{PACKAGE}/{RCM}']")
    if rcm is not None:
        methods = [m for m in rcm.findall("method") if _partition_method(m.get("name", ""))]
        lines, branches = Counts(), Counts()
        missing = []
        for m in methods:
            ml, mb = _counters(m)
            lines, branches = lines + ml, branches + mb
            if mb.missed:
                missing.append(f"{m.get('name')}:{m.get('line')} ({mb.missed} of {mb.total})")
        report.targets.append(Target(f"{RCM} (partition-changing methods: {len(methods)})",
                                     lines, branches, (), tuple(missing)))
    return report


def _partition_method(name: str) -> bool:
    base = name.split("$")[1] if name.startswith("lambda$") else name
    return base in PARTITION_METHODS


def _counters(node: ET.Element) -> tuple[Counts, Counts]:
    found = {c.get("type"): Counts(int(c.get("covered", 0)), int(c.get("missed", 0)))
             for c in node.findall("counter")}
    return found.get("LINE", Counts()), found.get("BRANCH", Counts())


def _partial_lines(package: ET.Element, cls: ET.Element, source: str
                   ) -> tuple[tuple[str, int, int, int], ...]:
    src = package.find(f"sourcefile[@name='{source}']")
    if src is None:
        return ()
    # Every class of the source file (nested ones too), so that a line of a nested class
    # is not taken for one of the class's own methods; only the class's own are kept.
    outer = str(cls.get("name"))
    starts = sorted((int(m.get("line", 0)), str(k.get("name")), str(m.get("name")))
                    for k in package.findall("class")
                    if k.get("sourcefilename") == source
                    for m in k.findall("method") if m.get("line"))
    out = []
    for n, m, c in _missed_branches(src.findall("line")):
        owner, method = _method_at(starts, n)
        if owner == outer:
            out.append((method, n, m, c))
    return tuple(out)


def _method_at(starts: list[tuple[int, str, str]], line: int) -> tuple[str, str]:
    """(class, method) whose first line is the nearest at or above ``line``."""
    found = ("?", "?")
    for first, owner, method in starts:
        if first > line:
            break
        found = (owner, method)
    return found


def _missed_branches(lines: Iterable[ET.Element]) -> Iterator[tuple[int, int, int]]:
    for line in lines:
        missed = int(line.get("mb", 0))
        if missed:
            yield int(line.get("nr", 0)), missed, int(line.get("cb", 0))
