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
from pathlib import Path

from harness.cluster.builds import Build
from harness.infra import progress, tools
from harness.infra.cache import cache_dir, entry_lock
from harness.infra.errors import BuildError

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


def template(build: Build, elr: bool | None) -> Path:
    args = elr_feature_args(build, elr)
    tdir = template_dir(build, "default" if not args else args[-1].replace("=", "-"))
    data = tdir / "data"
    if not (tdir / ".complete").exists():
        with entry_lock(tdir):  # a second process waits, then finds it complete
            if not (tdir / ".complete").exists():
                _format_template(build, args, tdir)
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


def _format_template(build: Build, args: list[str], tdir: Path) -> None:
    data = tdir / "data"
    shutil.rmtree(tdir, ignore_errors=True)
    data.mkdir(parents=True)
    props = tdir / "format.properties"
    props.write_text(_TEMPLATE_PROPS.format(data=data))
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
                cluster_id: str | None = None) -> None:
    """Give `data_dir` formatted storage for `node` (a fresh directory.id each time) of the
    cluster ``cluster_id`` (default: the template's)."""
    src = template(build, elr)
    shutil.copytree(src, data_dir, dirs_exist_ok=True)
    meta = data_dir / "meta.properties"
    text = meta.read_text()
    text = re.sub(r"^node\.id=.*$", f"node.id={node}", text, flags=re.M)
    if cluster_id is not None:
        text = re.sub(r"^cluster\.id=.*$", f"cluster.id={cluster_id}", text, flags=re.M)
    text = re.sub(r"^directory\.id=.*$", f"directory.id={_random_uuid()}", text, flags=re.M)
    meta.write_text(text)


def _random_uuid() -> str:
    """A Kafka Uuid string. Like Kafka's Uuid.randomUuid, never one starting with '-':
    StorageTool's argument parser would read `-t -xyz...` as an option (1 format in 64
    failed with "argument --cluster-id/-t: expected one argument")."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
