"""Formatting node storage (meta.properties, bootstrap checkpoint) from a cached template.

StorageTool costs a JVM start (~2-3 s on 2 cores) per node. The output differs between
nodes only in meta.properties, so we format once per (build, ELR setting) and copy.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

from harness.cluster.builds import Build, version_tuple
from harness.cluster.topology import ClusterShape
from harness.infra import progress, tools
from harness.infra.cache import cache_dir, entry_lock
from harness.infra.errors import BuildError
from reference.model import metadata_version as MV
from reference.model.features import ELR as ELR_FEATURE

_TEMPLATE_PROPS = ("process.roles=controller\nnode.id=100\ncontroller.quorum.voters="
                   "100@127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n"
                   "listeners=CONTROLLER://127.0.0.1:9093\nlog.dirs={data}\n")


def elr_feature_args(build: Build, elr: bool | None) -> list[str]:
    """StorageTool flags for the requested ELR setting; None keeps the build's default."""
    if elr is None or not build.features.elr:
        if elr and not build.features.elr:
            raise BuildError(f"Kafka {build.version} has no eligible.leader.replicas.version "
                             "feature (ELR needs 4.0+): drop `elr: true` or use a newer build")
        return []
    if elr == build.features.elr_default_on:
        return []
    return ["--feature", f"eligible.leader.replicas.version={1 if elr else 0}"]


def unstable_switch(build: Build) -> str:
    """The property that lets ``build`` take non-production feature levels and
    metadata.versions, in its storage tool and its servers: ``unstable.feature.versions.enable``
    from 3.8 (ServerConfigs.UNSTABLE_FEATURE_VERSIONS_ENABLE_CONFIG, read by StorageTool as
    ``config.unstableFeatureVersionsEnabled``), ``unstable.metadata.versions.enable`` in 3.7
    (KafkaConfig.UnstableMetadataVersionsEnableProp, StorageTool
    ``unstableMetadataVersionsEnabled``); 3.6 has none (apache/kafka tags 3.6.0-3.9.0)."""
    if build.version_tuple >= (3, 8, 0):
        return "unstable.feature.versions.enable"
    if build.version_tuple >= (3, 7, 0):
        return "unstable.metadata.versions.enable"
    raise BuildError(f"Kafka {build.version} has no switch for non-production feature levels "
                     "(3.7+): drop `unstable_features: true` or use a newer build")


def birth_release(shape: ClusterShape, run_version: tuple[int, int, int]) -> str | None:
    """The ``--release-version`` a cluster is formatted at: ``metadata_version`` when the
    scenario gives it; else, when nodes are born on other builds, the release line of the
    oldest build among every node's ("3.9": that line's newest production
    metadata.version, MetadataVersion.fromVersionString), which every newer build reads;
    else None (the build's own default, its newest production level)."""
    if shape.metadata_version:
        return shape.metadata_version
    if not shape.builds:
        return None
    oldest = min([run_version] + [version_tuple(v) for _, v in shape.builds])
    return f"{oldest[0]}.{oldest[1]}"


def birth_args(build: Build, shape: ClusterShape, run_version: tuple[int, int, int]
               ) -> tuple[list[str], list[str]]:
    """StorageTool flags and extra format-config lines for a node on ``build`` of a cluster
    of ``shape``: --release-version (birth_release), --feature NAME=LEVEL for each declared
    feature (and ELR from ``cluster.elr``), the unstable switch when declared. Declared
    levels go to every node's tool: a build that does not know one refuses, before the
    cluster starts (harness/run/runner/birth.py)."""
    args: list[str] = []
    release = birth_release(shape, run_version)
    if release:
        args += ["--release-version", release]
    feats = dict(shape.features)
    elr = shape.elr
    if ELR_FEATURE not in feats and build.features.elr and shape.metadata_version:
        # At a given metadata.version the ELR level is said, not left to the tool's
        # default for that level (ELRV_1's bootstrap MV, 4.1-IV0): the model starts from it.
        feats[ELR_FEATURE] = int(elr) if elr is not None else int(born_elr_default(shape))
    elif ELR_FEATURE not in feats:
        args += elr_feature_args(build, elr)
    for name, level in sorted(feats.items()):
        args += ["--feature", f"{name}={level}"]
    props = [f"{unstable_switch(build)}=true"] if shape.unstable_features else []
    return args, props


def line_release(line: tuple[int, int]) -> str:
    """The metadata.version ``--release-version X.Y`` names: the newest level of that
    release line (as the line's own releases ship it: 3.9 -> 3.9-IV0, 4.0 -> 4.0-IV3)."""
    names = [n for n, _, _ in MV.LEVELS if n.startswith(f"{line[0]}.{line[1]}-")]
    if not names:
        raise BuildError(f"no metadata.version of release line {line[0]}.{line[1]} is known")
    return names[-1]


def resolve_birth(shape: ClusterShape, run_version: tuple[int, int, int]) -> ClusterShape:
    """``shape`` with its metadata.version named when nodes are born on other builds and
    the scenario gives none (birth_release's rule), so the model and every node's tool
    start from the same level."""
    release = birth_release(shape, run_version)
    if release is None or shape.metadata_version:
        return shape
    major, minor = release.split(".")
    return replace(shape, metadata_version=line_release((int(major), int(minor))))


def born_with_elr(shape: ClusterShape, has_elr: bool, default_on: bool) -> bool:
    """Whether a cluster of ``shape`` is born with ELR on, on a build with (``has_elr``)
    or without the feature whose storage tool turns it on by default (``default_on``):
    never below metadata.version 4.0-IV1; else the declared level, ``cluster.elr``, the
    default at a given metadata.version (born_elr_default), the build's default."""
    if not has_elr:
        return False
    born_at = getattr(shape, "metadata_version", None)  # a stand-in shape may lack it
    level = MV.level_of(born_at) if born_at else None
    if not MV.elr_supported(level):
        return False
    feats = dict(getattr(shape, "features", ()))
    if ELR_FEATURE in feats:
        return bool(feats[ELR_FEATURE] >= 1)
    if shape.elr is not None:
        return shape.elr
    return born_elr_default(shape) if level is not None else default_on


def born_elr_default(shape: ClusterShape) -> bool:
    """ELR at a given metadata.version when nothing says: on from 4.1-IV0, as the 4.1+
    storage tools default it (EligibleLeaderReplicasVersion.ELRV_1 bootstrapMetadataVersion
    IBP_4_1_IV0)."""
    level = MV.level_of(shape.metadata_version or "")
    return level is not None and level >= MV.BY_NAME["4.1-IV0"]


def template(build: Build, elr: bool | None, args: list[str] | None = None,
             props: list[str] | None = None) -> Path:
    """The formatted storage template of ``build`` with ``args`` (default: the ELR flags
    for ``elr``) and extra format-config lines ``props``."""
    args = elr_feature_args(build, elr) if args is None else args
    props = props or []
    if not args and not props:
        key = "default"
    elif len(args) == 2 and args[0] == "--feature" and not props:
        key = args[-1].replace("=", "-")  # the key templates had before birth args
    else:
        key = "birth-" + hashlib.sha256("\0".join(args + props).encode()).hexdigest()[:12]
    tdir = template_dir(build, key)
    data = tdir / "data"
    if not (tdir / ".complete").exists():
        with entry_lock(tdir):  # a second process waits, then finds it complete
            if not (tdir / ".complete").exists():
                _format_template(build, args, tdir, props)
    return data


def template_dir(build: Build, key: str) -> Path:
    """Beside a Maven build's jars; for a local dist, in the cache under a key of its jars
    (names, sizes, mtimes), stable across processes (Python's hash() is salted per process:
    that key never matched, and left a template in /tmp per run)."""
    if build.source.startswith("maven:"):
        return build.libs.parent / f"storage-template-{key}"
    return cache_dir("storage-templates") / f"{_libs_key(build)}-{key}"


def _libs_key(build: Build) -> str:
    digest = hashlib.sha256(f"{build.version}\0{build.source}\0".encode())
    for jar in sorted(build.libs.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _format_template(build: Build, args: list[str], tdir: Path,
                     extra: list[str] | None = None) -> None:
    data = tdir / "data"
    shutil.rmtree(tdir, ignore_errors=True)
    data.mkdir(parents=True)
    props = tdir / "format.properties"
    props.write_text(_TEMPLATE_PROPS.format(data=data) + "".join(f"{x}\n" for x in extra or []))
    cluster_id = _random_uuid()
    java = tools.require_java(build.java_major)
    progress.say(f"formatting a storage template for Kafka {build.version} {' '.join(args)}")
    cmd = [str(java), "-cp", build.classpath(), "kafka.tools.StorageTool", "format",
           "-t", cluster_id, "-c", str(props), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or not (data / "meta.properties").exists():
        raise BuildError(f"StorageTool format failed for Kafka {build.version} "
                         f"({' '.join(args) or 'defaults'}):\n{(out.stdout + out.stderr)[-1500:]}")
    (tdir / ".complete").write_text(cluster_id)


def new_cluster_id() -> str:
    """A cluster's own id. Every cluster of a build starts from one formatted template, so
    without this they would all share the template's id, and a request that reached a
    broker of another cluster would be answered as if it were this one's."""
    return _random_uuid()


def format_node(build: Build, elr: bool | None, node: int, data_dir: Path,
                cluster_id: str | None = None, birth: tuple[list[str], list[str]] | None = None
                ) -> None:
    """Give `data_dir` formatted storage for `node` (a fresh directory.id each time) of the
    cluster ``cluster_id`` (default: the template's); ``birth``: birth_args' flags and
    config lines instead of the ELR flags for ``elr``."""
    src = template(build, elr) if birth is None else template(build, elr, *birth)
    shutil.copytree(src, data_dir, dirs_exist_ok=True)
    meta = data_dir / "meta.properties"
    text = meta.read_text()
    text = re.sub(r"^node\.id=.*$", f"node.id={node}", text, flags=re.M)
    if cluster_id is not None:
        text = re.sub(r"^cluster\.id=.*$", f"cluster.id={cluster_id}", text, flags=re.M)
    text = re.sub(r"^directory\.id=.*$", f"directory.id={_random_uuid()}", text, flags=re.M)
    meta.write_text(text)


def format_extra_dir(data_dir: Path, log_dir: Path) -> None:
    """Give another log dir of a node formatted as ``data_dir`` (already formatted by
    format_node): the same meta.properties with a directory.id of its own, as StorageTool
    formats each of a broker's log.dirs (KIP-858: every directory has its own id, the
    broker registers them all)."""
    text = (data_dir / "meta.properties").read_text()
    text = re.sub(r"^directory\.id=.*$", f"directory.id={_random_uuid()}", text, flags=re.M)
    (log_dir / "meta.properties").write_text(text)


def _random_uuid() -> str:
    """A Kafka Uuid string. Like Kafka's Uuid.randomUuid, never one starting with '-':
    StorageTool's argument parser would read `-t -xyz...` as an option (1 format in 64
    failed with "argument --cluster-id/-t: expected one argument")."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
