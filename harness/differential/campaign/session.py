"""One driver session of a campaign: the settings of its lanes (``settings_for``) and
``Session``, the driver with its comparator and the merged state the answers report."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.cluster.builds import Build
from harness.differential import coverage
from harness.differential.campaign.lanes import clock_broker, lane_brokers
from harness.differential.campaign.state import Config
from harness.differential.compare import Comparator
from harness.differential.driver import JVM_OPTS, ControllerDriver, cpu_seconds
from harness.differential.model import initial
from harness.differential.protocol import Answer, Settings

#: The older metadata.version some coverage sessions run at (``older_mv``): before
#: directory assignment (3.7-IV2, KIP-858), ELR and cordoned directories, and at or after
#: 3.6-IV0, so that an ISR shrink does not bump the leader epoch (KAFKA-15021;
#: PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded), which the model does
#: not know. Every build from 3.6 accepts it (3.6.2's latest is 3.6-IV2).
OLDER_MV = "3.6-IV2"


#: JVM options of the older-MV sessions: ReplicationControlManager logs at DEBUG there
#: (slf4j-simple, the binding of 4.x builds; 3.x builds bind reload4j and ignore it), so
#: the branches that only build a log line (``log.isDebugEnabled()``) run both ways.
DEBUG_RCM = ("-Dorg.slf4j.simpleLogger.log.org.apache.kafka.controller."
             "ReplicationControlManager=debug",)


def older_mv(cfg: Config, session: int, version: tuple[int, int, int]) -> str | None:
    """With ``--coverage``, every fourth session (the 2nd, 6th, ...; one of those that run
    ELR off with ``--elr both``) of a build from 3.7 on runs at ``OLDER_MV`` with ELR off
    (issue 44 item 2: "MV levels it accepts"): the controller's branches for a
    metadata.version without directories (the builder's directories, AssignReplicasToDirs
    refused, offline directories ignored)."""
    if not cfg.coverage or session % 4 != 1 or version < (3, 7, 0):
        return None
    return OLDER_MV


def settings_for(lanes: int, cfg: Config, probes: bool = False,
                 elr: bool | None = None, metadata_version: str | None = None) -> Settings:
    """The session's settings; ``probes``: the answers tell the coverage classes' new
    probes (a search session under the agent); ``elr``: instead of the configured one;
    ``metadata_version``: instead of the build's latest production one."""
    brokers = tuple(b for k in range(lanes) for b in [*lane_brokers(k), clock_broker(k)])
    return Settings(brokers=brokers, min_isr=cfg.min_isr,
                    elr=cfg.elr if elr is None else elr, report="changed",
                    metadata_version=metadata_version,
                    coverage_classes=coverage.PROBED if probes else ())


def version_of(build: Build) -> tuple[int, int, int]:
    parts = [int(x) for x in re.findall(r"\d+", build.version)[:3]]
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


class Session:
    """One driver session with its comparator and the merged state the answers report."""

    def __init__(self, build: Build, settings: Settings,
                 extra_jvm_opts: Sequence[str] = (), driver: ControllerDriver | None = None
                 ) -> None:
        """``driver``: a running driver whose JVM the session takes over (a new session in
        it, ``ControllerDriver.restart``), else a new JVM."""
        t0 = time.monotonic()
        if driver is None:
            self.driver = ControllerDriver.for_build(build, settings,
                                                     jvm_opts=(*JVM_OPTS, *extra_jvm_opts))
            self.cpu_at_open = 0.0
            ready = self.driver.start()
        else:
            self.driver = driver
            self.cpu_at_open = self._jvm_cpu()
            ready = driver.restart(settings)
        self.start_seconds = time.monotonic() - t0
        #: The driver's CPU seconds for this session's start: the JVM's (a new one) and
        #: the set-up.
        self.start_cpu_s = self.cpu_seconds()
        self.elr = ready.elr
        self.comparator = Comparator(version_of(build), ready.elr, initial(
            ready.partitions, ready.brokers, min_isr=settings.min_isr,
            unclean=settings.unclean_election, elr=ready.elr))
        self.partitions: dict[str, dict[str, Any]] = dict(ready.partitions)
        self.brokers: dict[str, dict[str, Any]] = dict(ready.brokers)
        self.ready = ready
        self.settings = settings

    def send(self, events: Sequence[Mapping[str, Any]]) -> list[Answer]:
        answers = self.driver.send_many(events)
        for a in answers:
            for key in a.removed:  # a deleted topic's partitions
                self.partitions.pop(key, None)
            self.partitions.update(a.partitions)
            if a.brokers:
                self.brokers = dict(a.brokers)
        return answers

    def cpu_seconds(self) -> float:
        """CPU time the driver's JVM has used for this session so far (0 once it has
        exited)."""
        return max(0.0, self._jvm_cpu() - self.cpu_at_open)

    def _jvm_cpu(self) -> float:
        try:
            return cpu_seconds(self.driver.pid)
        except (OSError, IndexError, ValueError, TypeError):
            return 0.0

    def close(self) -> None:
        self.driver.close()
