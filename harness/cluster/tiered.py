"""Tiered storage (KIP-405) on a real cluster: Kafka's own ``LocalTieredStorage`` as the
RemoteStorageManager, the default topic-based RemoteLogMetadataManager, and the remote tier
in the run directory (``<run>/remote/kafka-tiered-storage/``, kept with the run's logs).

``LocalTieredStorage`` ships only in the published *test* jar of ``kafka-storage``
(``org.apache.kafka:kafka-storage:V:jar:test``, storage/src/test/java/org/apache/kafka/
server/log/remote/storage/LocalTieredStorage.java). It is fetched and cached like the other
jars the harness takes from Maven Central (javaprogram.maven_jar) and appended to a broker's
class path. It runs inside each broker's JVM, so nothing is left running when the broker
stops; every broker of a cluster configures the same directory (a shared remote tier, as an
object store is): a new leader reads what the old one uploaded.

Which builds: tiered storage arrived as early access in 3.6.0 (KIP-405) and is production
ready from 3.9.0. The test jar is on Maven Central for every release of 3.6.x-4.3.x that the
harness caches, not for 4.4.0 (checked 2026-11-28: "Could not find artifact
org.apache.kafka:kafka-storage:jar:test:4.4.0"); a build whose own test jar is not published
takes the newest published one of its major version that is older than it (4.4.0: 4.3.1's),
and run.json says which (``tiered_storage.rsm_jar``). The RemoteStorageManager interface is
in kafka-storage-api, unchanged in what LocalTieredStorage implements from 4.3 to 4.4 (the
build's own jar is on the class path before the test jar); but 4.4.0 moved LogContext to
org.apache.kafka.common.utils.internals, so 4.3.1's LocalTieredStorage fails to configure
(NoClassDefFoundError: org/apache/kafka/common/utils/LogContext, seen 2026-11-28) unless
the harness's bridge (java/LogContext.java: the old name, calling the build's own) is on
the class path; it is then, compiled against the build."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from harness.cluster.builds import DEFAULT_MATRIX_VERSIONS, Build, version_tuple
from harness.cluster.topology import ClusterShape
from harness.infra.cache import cache_dir
from harness.infra.errors import BuildError, HarnessError

#: The marker beside a version's cached jars when Maven Central has no test jar for it.
_ABSENT = "test-jar-not-published"
#: What Maven says of an artifact Maven Central does not have.
_NOT_PUBLISHED = ("Could not find artifact", "was not found in", "Failure to find",
                  "from the specified remote repositories")

#: The first release with KIP-405's broker side (RemoteLogManager, remote.log.* configs).
FIRST_VERSION = (3, 6, 0)
RSM_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
#: LocalTieredStorage.configure: its root is <dir>/kafka-tiered-storage (ROOT_STORAGE_DIR_NAME).
ROOT_NAME = "kafka-tiered-storage"
#: How often the RemoteLogManager copies segments and applies remote retention (default
#: 30 s): a scenario waits about this long for an upload.
TASK_INTERVAL_MS = 1000
#: How often the LogManager applies the local retention (log.retention.check.interval.ms,
#: default 5 min): local segments already uploaded go within about this.
RETENTION_CHECK_MS = 1000
#: Topic configs that only mean something with tiered storage (a scenario that sets them on
#: a cluster without it is refused with the line).
TIERED_TOPIC_KEYS = ("remote.storage.enable", "local.retention.ms", "local.retention.bytes",
                     "remote.log.copy.disable", "remote.log.delete.on.disable")
#: Tiered storage's topic configs a build has only from a later release than 3.6.0: KIP-950
#: (disabling tiered storage on a topic), in clients' TopicConfig from 3.9.0 on; an older
#: controller refuses an unknown topic config at CreateTopics or IncrementalAlterConfigs
#: (LogConfig.validateNames: "Unknown topic config name"), after the cluster started.
TOPIC_KEYS_SINCE = {"remote.log.copy.disable": (3, 9, 0),
                    "remote.log.delete.on.disable": (3, 9, 0)}
#: Broker configs of tiered storage (a cluster-scope alter_config or cluster.broker_config):
#: the local-retention defaults (ServerLogConfigs log.local.retention.ms/bytes, 3.6+) and,
#: by prefix, RemoteLogManagerConfig's remote.log.* keys and its manager prefixes'
#: defaults (remote.log.storage.manager.impl.prefix rsm.config., the metadata manager's
#: rlmm.config.).
TIERED_BROKER_KEYS = ("log.local.retention.ms", "log.local.retention.bytes")
TIERED_BROKER_PREFIXES = ("remote.log.", "rsm.config.", "rlmm.config.")


def tiered_keys(scope: str, config: Mapping[str, object]) -> list[str]:
    """The keys of ``config`` that only mean something with tiered storage, at ``scope``
    (topic: a topic's configs; cluster: the brokers'), sorted."""
    if scope == "topic":
        return sorted(set(config) & set(TIERED_TOPIC_KEYS))
    return sorted(k for k in config
                  if k in TIERED_BROKER_KEYS or k.startswith(TIERED_BROKER_PREFIXES))


def remote_dir(run_dir: Path) -> Path:
    """The directory every broker's LocalTieredStorage is configured with (``dir``)."""
    return run_dir / "remote"


def remote_root(run_dir: Path) -> Path:
    """Where LocalTieredStorage keeps the segments: one directory per partition,
    ``<topic>-<partition>-<topic id>``, holding ``<base offset>-<segment id>.log`` etc."""
    return remote_dir(run_dir) / ROOT_NAME


def gap(version: tuple[int, int, int]) -> str | None:
    """Why a build of ``version`` cannot run tiered storage, or None."""
    if version < FIRST_VERSION:
        return (f"Kafka {'.'.join(map(str, version))} has no tiered storage (KIP-405's "
                f"RemoteLogManager arrived in {'.'.join(map(str, FIRST_VERSION))})")
    return None


def broker_props(shape: ClusterShape, run_dir: Path) -> dict[str, str]:
    """What a broker's server.properties gets (RemoteLogManagerConfig's keys, 3.6+)."""
    rf = str(min(3, shape.brokers))
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        # rsm.config. is the default remote.log.storage.manager.impl.prefix: the manager
        # gets "dir" (LocalTieredStorage.STORAGE_DIR_CONFIG) and, from the broker, broker.id.
        "rsm.config.dir": str(remote_dir(run_dir)),
        # The topic-based RLMM (the default class) talks to the brokers on this listener.
        "remote.log.metadata.manager.listener.name": "INTERNAL",
        "rlmm.config.remote.log.metadata.topic.replication.factor": rf,
        "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
    }


def controller_props() -> dict[str, str]:
    """A controller validates a topic's remote.storage.enable against this
    (ControllerConfigurationValidator -> LogConfig.validate(...,
    isRemoteLogStorageSystemEnabled))."""
    return {"remote.log.storage.system.enable": "true"}


def rsm_jar(build: Build) -> tuple[Path, str]:
    """(the kafka-storage test jar holding LocalTieredStorage, the version it is of): the
    build's own, else the newest published one of its major version older than it."""
    from harness.cluster.javaprogram import maven_jar
    tried: list[str] = []
    for version in _candidates(build.version):
        # Maven Central said it has no such artifact (remembered: asking again costs ~20 s)
        absent = cache_dir("kafka-storage", version) / _ABSENT
        if absent.is_file():
            tried.append(f"{version}: {absent.read_text().strip()}")
            continue
        try:
            return maven_jar(f"org.apache.kafka:kafka-storage:{version}:jar:test"), version
        except HarnessError as exc:
            # Maven says "Could not find artifact" when it asks, then "... was not found in
            # ... during a previous attempt" while its own not-found cache lasts, in a first
            # line the error's tail may leave out; its tail keeps "from the specified remote
            # repositories" of the not-found artifact's help.
            if any(m in str(exc) for m in _NOT_PUBLISHED):
                absent.write_text(f"not on Maven Central (asked {time.strftime('%Y-%m-%d')})\n")
            tried.append(f"{version}: {str(exc).splitlines()[-1][:160]}")
    raise BuildError(f"no published kafka-storage test jar (LocalTieredStorage) for Kafka "
                     f"{build.version} or an older {build.version_tuple[0]}.x release: "
                     + "; ".join(tried))


#: The bridge for an older LocalTieredStorage on a build that moved LogContext (4.4.0:
#: org.apache.kafka.common.utils.internals.LogContext), java/LogContext.java.
_SHIM = Path(__file__).parent / "java" / "LogContext.java"
_OLD_LOG_CONTEXT = "org/apache/kafka/common/utils/LogContext.class"
_NEW_LOG_CONTEXT = "org/apache/kafka/common/utils/internals/LogContext.class"


def rsm_classpath(build: Build) -> tuple[list[Path], str]:
    """What a broker's class path gets after the build's jars for LocalTieredStorage: the
    test jar, and where it is older than the build and the build moved LogContext, the
    bridge (compiled against the build, cached with it); and the test jar's version."""
    jar, version = rsm_jar(build)
    entries = [jar]
    if version != build.version and _moved_log_context(build):
        from harness.cluster.javaprogram import compile_program
        entries.insert(0, compile_program(_SHIM, build).classes)
    return entries, version


def _moved_log_context(build: Build) -> bool:
    import zipfile
    for lib in build.libs.glob("kafka-clients-*.jar"):
        with zipfile.ZipFile(lib) as zf:
            names = set(zf.namelist())
        return _OLD_LOG_CONTEXT not in names and _NEW_LOG_CONTEXT in names
    return False


def _candidates(version: str) -> list[str]:
    mine = version_tuple(version)
    older = sorted((v for v in DEFAULT_MATRIX_VERSIONS
                    if version_tuple(v) < mine and version_tuple(v)[0] == mine[0]
                    and version_tuple(v) >= FIRST_VERSION),
                   key=version_tuple, reverse=True)
    return [version, *older[:2]]
