"""Local images for the docker backend, built offline and cached by content.

- base: a Debian bookworm root filesystem made with `debootstrap --variant=minbase` plus
  openjdk-17-jre-headless and iproute2, `docker import`ed (no registry is ever contacted).
- kafka: base + one build's libs dir at /opt/kafka/libs.
- toxiproxy: base + the go-installed Toxiproxy server (dynamically linked against glibc,
  so it needs a libc: the base image has one).

Every tag is a hash of its inputs, so an image is rebuilt only when an input changes.
The same code runs from `docker/build_images.sh` (python -m harness.cluster.images).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.cluster.builds import Build
from harness.infra import progress, toxiproxy
from harness.infra.errors import BuildError

SUITE = "bookworm"
PACKAGES = ("openjdk-17-jre-headless", "iproute2", "ca-certificates-java")
KAFKA_LIBS = "/opt/kafka/libs"
TOXIPROXY_BIN = "/usr/local/bin/toxiproxy-server"
JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
_RECIPE_VERSION = "1"


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def _image_exists(tag: str) -> bool:
    out = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, timeout=60)
    return out.returncode == 0


def _run(cmd: list[str], what: str, timeout: float = 1800, **kw: object) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]
    if out.returncode != 0:
        raise BuildError(f"{what} failed ({' '.join(cmd[:4])} ...):\n"
                         f"{(out.stdout + out.stderr)[-2000:]}")
    return str(out.stdout)


def debian_mirror() -> str:
    """The Debian mirror apt uses on this machine (read from its sources, never hard-coded)."""
    texts = []
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.is_file() and not path.name.endswith((".disabled", ".save")) and \
                "disabled" not in path.name:
            texts.append(path.read_text(errors="replace"))
    for text in texts:
        for line in text.splitlines():  # deb822: URIs: ... (with Suites: bookworm)
            m = re.match(r"^\s*URIs:\s*(\S+)", line)
            if m and "security" not in m.group(1):
                return m.group(1)
            m = re.match(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", line)
            if m and "security" not in m.group(1):
                return m.group(1)
    raise BuildError("no Debian mirror in /etc/apt/sources.list(.d): debootstrap needs one "
                     "to build the base image")


def base_tag() -> str:
    return f"kafka-chaos/base:{_hash(_RECIPE_VERSION, SUITE, *PACKAGES)}"


def ensure_base_image() -> str:
    tag = base_tag()
    if _image_exists(tag):
        return tag
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None)
    if debootstrap is None:
        from harness.infra.dockerengine import apt_install

        apt_install("debootstrap", "debootstrap (needed to build the base image)")
        debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    mirror = debian_mirror()
    progress.say(f"building base image {tag} with debootstrap ({SUITE}, minbase + "
                 f"{', '.join(PACKAGES)}) from {mirror}: a few minutes, first use only")
    root = Path(tempfile.mkdtemp(prefix="kafka-chaos-rootfs-"))
    try:
        _run([debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE,
              str(root), mirror], "debootstrap", timeout=3600)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc",
                     "usr/share/man", "usr/share/locale"):
            shutil.rmtree(root / junk, ignore_errors=True)
        (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        if not (root / JAVA.lstrip("/")).exists():
            raise BuildError(f"debootstrap produced no {JAVA}")
        progress.say(f"importing the root filesystem as {tag}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        _run(["docker", "import", "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:"
              "/usr/sbin:/usr/bin:/sbin:/bin", "-", tag], "docker import",
             stdin=tar.stdout)
        tar.wait(timeout=600)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tag


def _docker_build(tag: str, dockerfile: str, files: dict[str, Path]) -> None:
    ctx = Path(tempfile.mkdtemp(prefix="kafka-chaos-ctx-"))
    try:
        for name, src in files.items():
            dst = ctx / name
            if src.is_dir():
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".*", "*.json"))
            else:
                shutil.copy2(src, dst)
        (ctx / "Dockerfile").write_text(dockerfile)
        env = dict(os.environ, DOCKER_BUILDKIT="0")
        _run(["docker", "build", "-q", "-t", tag, str(ctx)], f"docker build {tag}", env=env)
    finally:
        shutil.rmtree(ctx, ignore_errors=True)


def _dir_digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.glob("*.jar")):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}\n".encode())
    return h.hexdigest()


def kafka_tag(build: Build) -> str:
    safe = re.sub(r"[^a-z0-9_.-]", "-", build.version.lower())
    return f"kafka-chaos/kafka:{safe}-{_hash(base_tag(), _dir_digest(build.libs))}"


def ensure_kafka_image(build: Build) -> str:
    override = os.environ.get("KAFKA_CHAOS_KAFKA_IMAGE")
    if override:
        if not _image_exists(override):
            raise BuildError(f"KAFKA_CHAOS_KAFKA_IMAGE={override}: no such local image")
        return override
    tag = kafka_tag(build)
    if _image_exists(tag):
        return tag
    base = ensure_base_image()
    progress.say(f"building Kafka image {tag} from {build.libs}")
    _docker_build(tag, f"FROM {base}\nCOPY libs {KAFKA_LIBS}\n", {"libs": build.libs})
    return tag


def toxiproxy_tag(binary: Path) -> str:
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()
    return f"kafka-chaos/toxiproxy:{toxiproxy.TOXIPROXY_VERSION}-{_hash(base_tag(), digest)}"


def ensure_toxiproxy_image() -> str:
    binary = toxiproxy.ensure_server_binary()
    tag = toxiproxy_tag(binary)
    if _image_exists(tag):
        return tag
    base = ensure_base_image()
    progress.say(f"building Toxiproxy image {tag}")
    _docker_build(tag, f"FROM {base}\nCOPY server {TOXIPROXY_BIN}\n", {"server": binary})
    return tag


def main(argv: list[str] | None = None) -> int:
    from harness.cluster import builds
    from harness.infra import dockerengine

    parser = argparse.ArgumentParser(prog="docker/build_images.sh",
                                     description="build the docker backend's images offline")
    parser.add_argument("--kafka-version", action="append", default=[],
                        help="also build the Kafka image of this version (repeatable)")
    parser.add_argument("--kafka-dist", action="append", default=[])
    args = parser.parse_args(argv)
    dockerengine.ensure_engine()
    print(ensure_base_image())
    print(ensure_toxiproxy_image())
    wanted = [builds.resolve(kafka_version=v) for v in args.kafka_version]
    wanted += [builds.resolve(kafka_dist=d) for d in args.kafka_dist]
    if not wanted:
        wanted = [builds.resolve()]
    for build in wanted:
        print(ensure_kafka_image(build))
    return 0


if __name__ == "__main__":
    sys.exit(main())
