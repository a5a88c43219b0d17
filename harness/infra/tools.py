"""Locating the external tools the harness needs (Java, Maven, Go), with clear errors."""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.infra.errors import ToolMissing

_INSTALL_HINT = {
    "java": "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jre-headless)",
    "mvn": "install Maven (Debian: apt-get install -y maven)",
    "go": "install Go >= 1.23 (Debian bookworm-backports: golang-1.23, or go.dev)",
}


def require(tool: str) -> Path:
    found = shutil.which(tool)
    if not found:
        raise ToolMissing(f"`{tool}` not found on PATH: {_INSTALL_HINT.get(tool, 'install it')}")
    return Path(found)


def java_major(java: Path) -> int:
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise ToolMissing(f"cannot read the version of {java}: {out.stderr.strip()[:200]}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def require_java(min_major: int) -> Path:
    java = require("java")
    major = java_major(java)
    if major < min_major:
        raise ToolMissing(f"{java} is Java {major}; this Kafka build needs Java {min_major}+: "
                          f"{_INSTALL_HINT['java']}")
    return java


def hash_jdk(digest: Any, home: Path) -> None:
    """Feed what identifies a JDK install into a cache key's hash (``hashlib`` object): its
    path, and the size and time of its release file and module image (an upgrade in place
    changes them)."""
    digest.update(str(home).encode())
    for part in ("release", "lib/modules"):
        try:
            st = (home / part).stat()
            digest.update(f"{part}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        except OSError:
            digest.update(f"{part}:missing\n".encode())
