"""The differential driver's one source, adapted to Kafka 4.4's moved client utilities (no
JVM: the choice is made from the build's kafka-clients jar)."""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.differential import driver


def _build(tmp_path: Path, entries: list[str]) -> SimpleNamespace:
    libs = tmp_path / "libs"
    libs.mkdir()
    with zipfile.ZipFile(libs / "kafka-clients-9.9.9.jar", "w") as z:
        for name in entries:
            z.writestr(name, b"")
    return SimpleNamespace(libs=libs)


def test_a_build_with_the_utilities_in_place_compiles_the_source_itself(tmp_path: Path) -> None:
    build = _build(tmp_path, ["org/apache/kafka/common/utils/LogContext.class"])
    assert driver.source_for(build) == driver.SOURCE  # type: ignore[arg-type]


def test_kafka_44s_moved_utilities_get_a_copy_with_the_imports_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "cache_dir", lambda what: tmp_path / "cache" / what)
    build = _build(tmp_path, ["org/apache/kafka/common/utils/internals/LogContext.class"])
    copy = driver.source_for(build)  # type: ignore[arg-type]
    assert copy != driver.SOURCE and copy.name == driver.SOURCE.name
    text = copy.read_text()
    for name in ("AppInfoParser", "LogContext"):
        assert f"import org.apache.kafka.common.utils.internals.{name};" in text
        assert f"import org.apache.kafka.common.utils.{name};" not in text
    # only those imports differ
    assert len(text.splitlines()) == len(driver.SOURCE.read_text().splitlines())
    assert driver.source_for(build) == copy  # type: ignore[arg-type]  # the cached copy
