"""Cache entries: one writer at a time (the build cache, storage templates, Maven downloads
and the Toxiproxy binary each under their entry's lock); moved out of test_harness_units.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.cluster import builds


def _lock_is_held(entry: Path) -> bool:
    import fcntl

    from harness.infra.cache import lock_path
    with open(lock_path(entry), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def test_cache_entry_lock_excludes_other_processes(tmp_path: Path) -> None:
    import subprocess
    import sys
    entry = tmp_path / "kafka" / "4.3.1"
    code = ("import sys; from pathlib import Path; from harness.infra.cache import entry_lock\n"
            "with entry_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n"
            "    sys.stdin.read()\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(entry)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        assert _lock_is_held(entry)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    assert not _lock_is_held(entry)


def _fake_dist(tmp_path: Path) -> builds.Build:
    libs = tmp_path / "dist" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"jar")
    features = builds.Features(elr=True, elr_default_on=True, describe_topic_partitions=True,
                               hwm_rule=True, unclean_recovery=False, kip1303=False,
                               previous_broker_epoch=True)
    return builds.Build("4.3.1", f"dist:{tmp_path / 'dist'}", libs, features)


def test_storage_template_is_formatted_once_under_its_lock_at_a_stable_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle
    import subprocess
    import sys

    from harness.cluster import storage
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    build = _fake_dist(tmp_path)
    tdir = storage.template_dir(build, "default")
    formats: list[list[str]] = []
    real_run = subprocess.run

    def storage_tool(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        assert _lock_is_held(tdir), "formatting a shared template without its lock"
        formats.append(cmd)
        (tdir / "data" / "meta.properties").write_text("node.id=100\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(storage.tools, "require_java", lambda major: Path("java"))
    monkeypatch.setattr(storage.subprocess, "run", storage_tool)
    assert storage.template(build, None) == storage.template(build, None) == tdir / "data"
    assert len(formats) == 1 and tdir.is_relative_to(tmp_path / "cache")
    # the same place from other interpreters (hash() is salted per process)
    code = ("import sys, pickle; from harness.cluster import storage\n"
            "print(storage.template_dir(pickle.loads(bytes.fromhex(sys.argv[1])), 'default'))")
    for seed in ("1", "2"):
        out = real_run([sys.executable, "-c", code, pickle.dumps(build).hex()],
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.stdout.strip() == str(tdir)


def test_maven_download_runs_under_its_lock_once(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    downloads = []

    def download(version: str, libs: Path) -> None:
        assert _lock_is_held(libs.parent), "downloading into the cache without its lock"
        downloads.append(version)
        libs.mkdir(parents=True, exist_ok=True)
        (libs / ".complete").write_text(version)

    monkeypatch.setattr(builds, "_download", download)
    monkeypatch.setattr(builds, "probe_features", lambda libs, version: None)
    assert builds.from_maven("4.3.1").libs == builds.from_maven("4.3.1").libs
    assert downloads == ["4.3.1"]


def test_toxiproxy_binary_is_built_under_its_lock_once(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra import toxiproxy
    from harness.infra.cache import lock_path
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KAFKA_CHAOS_TOXIPROXY", raising=False)
    bindir = tmp_path / "cache" / "toxiproxy" / toxiproxy.TOXIPROXY_VERSION
    calls = tmp_path / "go-calls"
    go = tmp_path / "go"  # a `go` that builds only while the entry's lock is held
    go.write_text(f"#!/bin/sh\necho run >> {calls}\n"
                  f"flock -n {lock_path(bindir)} true && exit 1\n"
                  'printf bin > "$GOBIN/server"\n')
    go.chmod(0o755)
    monkeypatch.setattr(toxiproxy.tools, "require", lambda tool: go)
    assert toxiproxy.ensure_server_binary() == toxiproxy.ensure_server_binary()
    assert calls.read_text() == "run\n"
