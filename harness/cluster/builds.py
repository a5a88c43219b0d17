"""Builds under test: a Kafka version from Maven Central, or a local distribution.

A build knows its version and probes its capabilities from its jars, so suites can
skip with a reason instead of failing on a missing feature.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from harness.infra import progress, tools
from harness.infra.cache import cache_dir, entry_lock
from harness.infra.errors import BuildError

# Newest complete release on Maven Central when this was written (4.4.0 was only
# partly published: kafka-tools missing). Pass --kafka-version to test another.
DEFAULT_KAFKA_VERSION = "4.3.1"
#: `kafka-chaos matrix` without --versions: the newest patch of each KRaft production line
#: on Maven Central (checked 2026-11-23: kafka_2.13 and kafka-clients for all; kafka-tools is
#: missing for 4.2.2 and 4.4.0, which the harness does not need: StorageTool and
#: DumpLogSegments are in kafka_2.13). 4.4.0 joined 2026-11-27 (bench/MATRIX.md "4.4.0").
DEFAULT_MATRIX_VERSIONS = ("3.6.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2",
                           "4.3.1", "4.4.0")
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(?:-[A-Za-z0-9.]+)?$")
_BINDINGS = ("slf4j-reload4j", "slf4j-log4j12", "log4j-slf4j", "slf4j-simple", "logback-classic")
_PROBES_FILE = "kafka-chaos-probes.json"


@dataclass(frozen=True)
class Features:
    elr: bool  # eligible.leader.replicas.version feature (KIP-966 part 1), 4.0+
    elr_default_on: bool  # new clusters get ELR unless told otherwise (4.1+)
    describe_topic_partitions: bool  # API key 75, 3.8+
    hwm_rule: bool  # HWM advances only with ISR >= min ISR (3.7+)
    unclean_recovery: bool  # KIP-966 part 2: unclean.recovery.strategy, GetReplicaLogInfo
    kip1303: bool  # leader.election.eligible.local.log.ms/.bytes
    previous_broker_epoch: bool  # unclean-shutdown detection in registration

    def names(self) -> set[str]:
        return {name for name, on in self.__dict__.items() if on is True}


@dataclass(frozen=True)
class Build:
    version: str
    source: str  # "maven:4.3.1" or "dist:/path"
    libs: Path
    features: Features = field(compare=False)

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return version_tuple(self.version)

    @property
    def java_major(self) -> int:
        return 17 if self.version_tuple >= (4, 0, 0) else 11

    def classpath(self) -> str:
        return f"{self.libs}/*"

    def describe(self) -> dict[str, object]:
        return {"version": self.version, "source": self.source,
                "features": sorted(self.features.names())}


def version_tuple(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in re.findall(r"\d+", version)[:3])
    return major, minor, patch


def resolve(kafka_version: str | None = None, kafka_dist: str | Path | None = None) -> Build:
    """The build named by --kafka-version or --kafka-dist (default: DEFAULT_KAFKA_VERSION)."""
    if kafka_version and kafka_dist:
        raise BuildError("give either --kafka-version or --kafka-dist, not both")
    if kafka_dist:
        return from_dist(Path(kafka_dist))
    return from_maven(kafka_version or DEFAULT_KAFKA_VERSION)


def from_dist(dist: Path) -> Build:
    libs = dist / "libs" if (dist / "libs").is_dir() else dist
    if not dist.is_dir():
        raise BuildError(f"--kafka-dist {dist}: no such directory (expected a Kafka distribution "
                         "with libs/*.jar, e.g. an unpacked kafka_2.13-X.tgz or core/build)")
    jars = list(libs.glob("kafka_2.1*.jar")) + list(libs.glob("kafka-server-*.jar"))
    if not jars or not list(libs.glob("kafka-clients-*.jar")):
        raise BuildError(f"--kafka-dist {dist}: no kafka_2.13-*.jar and kafka-clients-*.jar in "
                         f"{libs}; point it at a Kafka distribution directory (with libs/)")
    version = _version_from_jars(libs)
    return Build(version, f"dist:{dist.resolve()}", libs, probe_features(libs, version))


def from_maven(version: str) -> Build:
    if not _VERSION_RE.match(version):
        raise BuildError(f"--kafka-version {version!r} is not a version like 4.3.1 or 3.9.1")
    libs = cache_dir("kafka", version) / "libs"
    if not (libs / ".complete").exists():
        with entry_lock(libs.parent):  # a second process waits, then finds it complete
            if not (libs / ".complete").exists():
                _download(version, libs)
    return Build(version, f"maven:{version}", libs, probe_features(libs, version))


def _download(version: str, libs: Path) -> None:
    mvn = tools.require("mvn")
    work = libs.parent
    progress.say(f"resolving Apache Kafka {version} from Maven Central into {libs} (first use)")
    ok, log = _copy_dependencies(mvn, work, version, with_tools=True)
    if not ok and f"kafka-tools:jar:{version}" in log:
        progress.say(f"kafka-tools {version} is not published; continuing without it")
        ok, log = _copy_dependencies(mvn, work, version, with_tools=False)
    if not ok:
        if f"kafka_2.13:jar:{version}" in log or f"kafka_2.13:pom:{version}" in log:
            raise BuildError(f"--kafka-version {version}: org.apache.kafka:kafka_2.13:{version} is "
                             "not on Maven Central; use a released version such as "
                             f"{DEFAULT_KAFKA_VERSION}, 4.1.1 or 3.9.1")
        raise BuildError(f"Maven could not resolve Kafka {version} (log: {work}/mvn.log):\n"
                         + _tail(log, 15))
    _add_slf4j_binding(mvn, work, libs)
    (libs / ".complete").write_text(version)
    progress.say(f"Kafka {version}: {len(list(libs.glob('*.jar')))} jars cached")


def _copy_dependencies(mvn: Path, work: Path, version: str, with_tools: bool) -> tuple[bool, str]:
    deps = [("org.apache.kafka", "kafka_2.13")] + (
        [("org.apache.kafka", "kafka-tools")] if with_tools else [])
    _write_pom(work / "pom.xml", [(g, a, version) for g, a in deps])
    return _mvn(mvn, work, ["dependency:copy-dependencies", "-DoutputDirectory=libs",
                            "-DincludeScope=runtime"])


def _add_slf4j_binding(mvn: Path, work: Path, libs: Path) -> None:
    """The kafka_2.13 POM brings no SLF4J binding on 4.x: without one the broker logs nothing."""
    names = [jar.name for jar in libs.glob("*.jar")]
    if any(name.startswith(_BINDINGS) for name in names):
        return
    api = [n for n in names if n.startswith("slf4j-api-")]
    if not api:
        raise BuildError(f"no slf4j-api jar among the resolved jars in {libs}")
    api_version = api[0][len("slf4j-api-"):-len(".jar")]
    artifact = f"org.slf4j:slf4j-simple:{api_version}"
    ok, log = _mvn(mvn, work, ["dependency:copy", f"-Dartifact={artifact}",
                               "-DoutputDirectory=libs"])
    if not ok:
        raise BuildError(f"could not fetch org.slf4j:slf4j-simple:{api_version}:\n{_tail(log, 10)}")


def _mvn(mvn: Path, work: Path, goals: list[str]) -> tuple[bool, str]:
    cmd = [str(mvn), "-B", "-q", "--no-transfer-progress", *goals]
    try:
        out = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"Maven did not finish in 15 min in {work}") from exc
    log = out.stdout + out.stderr
    (work / "mvn.log").write_text(log)
    return out.returncode == 0, log


def _write_pom(path: Path, deps: list[tuple[str, str, str]]) -> None:
    dep_xml = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>" for g, a, v in deps)
    path.write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kafka-chaos</groupId><artifactId>kafka-build</artifactId><version>1</version>"
        f"<dependencies>{dep_xml}</dependencies></project>\n")


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _version_from_jars(libs: Path) -> str:
    for jar in sorted(libs.glob("kafka-clients-*.jar")):
        try:
            with zipfile.ZipFile(jar) as zf:
                props = zf.read("kafka/kafka-version.properties").decode()
        except (KeyError, zipfile.BadZipFile) as exc:
            raise BuildError(f"{jar} is not a usable kafka-clients jar: {exc}") from exc
        match = re.search(r"^version=(\S+)", props, re.M)
        if match:
            return match.group(1)
    raise BuildError(f"cannot tell the Kafka version of the jars in {libs}")


def probe_features(libs: Path, version: str) -> Features:
    """Capabilities read from the jars (cached beside them), not assumed from the version."""
    cached = libs / _PROBES_FILE
    if cached.exists():
        try:
            return Features(**json.loads(cached.read_text()))
        except (TypeError, ValueError):
            pass
    found = _scan_jars(libs)
    v = version_tuple(version)
    features = Features(
        elr="EligibleLeaderReplicasVersion" in found,
        elr_default_on="EligibleLeaderReplicasVersion" in found and v >= (4, 1, 0),
        describe_topic_partitions="DescribeTopicPartitionsRequestData" in found,
        hwm_rule=v >= (3, 7, 0),
        unclean_recovery="GetReplicaLogInfoRequestData" in found,
        kip1303="leader.election.eligible.local.log" in found,
        previous_broker_epoch=v >= (3, 7, 0),
    )
    try:
        cached.write_text(json.dumps(features.__dict__))
    except OSError:
        pass  # a read-only dist is fine: we probe again next time
    return features


_CLASS_MARKERS = ("EligibleLeaderReplicasVersion", "DescribeTopicPartitionsRequestData",
                  "GetReplicaLogInfoRequestData")
_STRING_MARKERS = (b"leader.election.eligible.local.log",)


def _scan_jars(libs: Path) -> set[str]:
    found: set[str] = set()
    for jar in libs.glob("kafka*.jar"):
        try:
            with zipfile.ZipFile(jar) as zf:
                for name in zf.namelist():
                    found.update(m for m in _CLASS_MARKERS if name.endswith(f"/{m}.class"))
                    if name.endswith("Config.class") or name.endswith("Configs.class"):
                        data = zf.read(name)
                        found.update(m.decode() for m in _STRING_MARKERS if m in data)
        except zipfile.BadZipFile as exc:
            raise BuildError(f"{jar} is not a valid jar: {exc}") from exc
    return found
