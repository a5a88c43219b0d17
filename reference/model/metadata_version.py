"""metadata.version: the levels Kafka knows, which of them changed the metadata records, and
the two levels KIP-966 guards by a metadata.version (seed 003, "Compatibility, Deprecation,
and Migration Plan").

The table is Kafka's ``org.apache.kafka.server.common.MetadataVersion`` enum as 4.4.0 ships it
(kafka-server-common 4.4.0: each constant's feature level and ``didMetadataChange``; the 4.0.2
and 4.3.1 enums are prefixes of it with the same values, checked against their sources). A
build knows a prefix: up to its ``LATEST_PRODUCTION`` without its unstable switch, up to its
last constant with it (``MetadataVersion.fromVersionString``, ``latestTesting``); 4.x starts at
``MINIMUM_VERSION`` 3.3-IV3. Which prefix a build knows is the build's own StorageTool's answer
(harness/run/runner/birth.py asks it before any cluster starts), not this table's.

The KIP's guards, as Kafka ships them:

- ELR: "It will be guarded by a new metadata version and the eligible.leader.replicas.enabled"
  -> ``IBP_4_0_IV1`` (23, "Add ELR related metadata records (KIP-966)": PartitionRecord and
  PartitionChangeRecord v2, ClearElrRecord; ``MetadataVersion.isElrSupported``), and
  ``EligibleLeaderReplicasVersion.ELRV_1`` depends on it (its ``dependencies``:
  metadata.version 23): a cluster below 4.0-IV1 cannot have ELR on, formatted or live.
- Clean shutdown: "It will be guarded by a new metadata version. Before that, the controller
  will treat all the registrations with unclean shutdowns." The MV once reserved for it and ELR
  was ``IBP_3_7_IV3`` ("reserved for ELR support (KIP-966) but has been moved forward to a
  later release requiring a new MetadataVersion"), i.e. 4.0-IV1 again. Kafka detects a clean
  shutdown by BrokerRegistrationRequest v3's PreviousBrokerEpoch (QuorumController
  .registerBroker passes ``requestApiVersion() >= 3`` as ``cleanShutdownDetectionEnabled`` to
  ClusterControlManager.registerBroker, which compares it with the stored epoch), and acts on
  an unclean one only with ELR on (ReplicationControlManager.handleBrokerShutdown:
  ``featureControl.isElrFeatureEnabled() && !isCleanShutdown``), which needs 4.0-IV1. So below
  4.0-IV1 every registration is handled as the KIP says for one "with unclean shutdown" when
  ELR is off: as a fencing, the broker kept in the ISR only as its last member. The model
  takes 4.0-IV1 as the MV that carries clean-shutdown detection (``CLEAN_SHUTDOWN``).
- MV downgrade: ``FeatureControlManager.updateMetadataVersion`` (4.0.2, 4.3.1) accepts a
  downgrade only when no level between the two changed the metadata
  (``MetadataVersion.checkIfMetadataChanged``) and refuses any other, unsafe or not
  ("Refusing to perform the requested downgrade because it might delete metadata
  information"; "Unsafe metadata downgrade is not supported in this version"). 4.0-IV1 changed
  the metadata, so no shipped build lowers a cluster from ELR's MV below it: the KIP's "Once
  the MV version is downgraded, all the ELR related fields will be removed on the next
  partition change" never happens (docs/KNOWN-DEVIATIONS.md mv-downgrade-below-elr-refused).
"""

from __future__ import annotations

import re

#: (name, feature level, didMetadataChange), in order (MetadataVersion, kafka 4.4.0).
LEVELS: tuple[tuple[str, int, bool], ...] = (
    ("3.3-IV3", 7, True), ("3.4-IV0", 8, True), ("3.5-IV0", 9, False),
    ("3.5-IV1", 10, False), ("3.5-IV2", 11, True), ("3.6-IV0", 12, False),
    ("3.6-IV1", 13, True), ("3.6-IV2", 14, True), ("3.7-IV0", 15, True),
    ("3.7-IV1", 16, False), ("3.7-IV2", 17, True), ("3.7-IV3", 18, False),
    ("3.7-IV4", 19, False), ("3.8-IV0", 20, False), ("3.9-IV0", 21, False),
    ("4.0-IV0", 22, False), ("4.0-IV1", 23, True), ("4.0-IV2", 24, False),
    ("4.0-IV3", 25, False), ("4.1-IV0", 26, False), ("4.1-IV1", 27, False),
    ("4.2-IV0", 28, False), ("4.2-IV1", 29, False), ("4.3-IV0", 30, True),
    ("4.4-IV0", 31, False), ("4.4-IV1", 32, True), ("4.4-IV2", 33, True),
    ("4.5-IV0", 34, False),
)
BY_NAME: dict[str, int] = {name: level for name, level, _ in LEVELS}
CHANGED: dict[int, bool] = {level: changed for _, level, changed in LEVELS}
#: IBP_4_0_IV1: ELR's records, ELRV_1's dependency, and (module docstring) clean shutdown.
ELR = BY_NAME["4.0-IV1"]
CLEAN_SHUTDOWN = ELR
_NAME = re.compile(r"^\d+\.\d+-IV\d+$")
#: The level each release line formats a new cluster at (its ``LATEST_PRODUCTION``),
#: measured from the cached jars of 3.7.2-4.4.0 (3.6 read from the 3.6.2 source).
NEWEST_PRODUCTION: dict[tuple[int, int], int] = {
    (3, 6): 14, (3, 7): 19, (3, 8): 20, (3, 9): 21, (4, 0): 25, (4, 1): 27, (4, 2): 29,
    (4, 3): 30, (4, 4): 33}


def level_of(name: str) -> int | None:
    """The feature level of a metadata.version named as Kafka names it ("3.9-IV0"); None:
    no release names it (so far: 4.4.0's enum)."""
    return BY_NAME.get(name) if _NAME.match(name) else None


def name_of(level: int) -> str:
    for name, lv, _ in LEVELS:
        if lv == level:
            return name
    return str(level)


def release_line(level: int) -> tuple[int, int]:
    """(major, minor) of the release that introduced ``level`` (3.9-IV0 -> (3, 9))."""
    major, minor = name_of(level).split("-")[0].split(".")
    return int(major), int(minor)


def metadata_changed(current: int, target: int) -> bool:
    """``MetadataVersion.checkIfMetadataChanged``: some level in (low, high] changed the
    metadata records (a level this table does not know counts as changed)."""
    if current == target:
        return False
    high, low = max(current, target), min(current, target)
    return any(CHANGED.get(lv, True) for lv in range(low + 1, high + 1))


def downgrade_refused(current: int | None, target: int) -> bool:
    """``FeatureControlManager.updateMetadataVersion``: a downgrade across a level that changed
    the metadata is refused (unsafe downgrades are not supported either). ``current`` None:
    the build's newest level, not known to the model: not predicted here."""
    return current is not None and target < current and metadata_changed(current, target)


def clean_shutdown_detected(level: int | None) -> bool:
    """KIP-966 "Clean shutdown": guarded by a metadata.version, below which every
    registration counts as unclean. None: the build's newest, which carries it."""
    return level is None or level >= CLEAN_SHUTDOWN


def elr_supported(level: int | None) -> bool:
    """``MetadataVersion.isElrSupported`` (4.0-IV1 and above); None: the build's newest."""
    return level is None or level >= ELR
