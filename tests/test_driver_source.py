"""The differential driver's sources (harness/differential/java/): compiled together, split
by job (no file over 600 lines, every class named Driver* so none shadows one of Kafka's
package org.apache.kafka.controller), and adapted to Kafka 4.4's moved client utilities
(no JVM: the choice is made from the build's kafka-clients jar)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cluster import javaprogram
from harness.differential import driver


def _build(tmp_path: Path, entries: list[str]) -> SimpleNamespace:
    libs = tmp_path / "libs"
    libs.mkdir()
    with zipfile.ZipFile(libs / "kafka-clients-9.9.9.jar", "w") as z:
        for name in entries:
            z.writestr(name, b"")
    return SimpleNamespace(libs=libs)


def _sources(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.glob("*.java"))}


def test_a_build_with_the_utilities_in_place_compiles_the_sources_themselves(
        tmp_path: Path) -> None:
    build = _build(tmp_path, ["org/apache/kafka/common/utils/LogContext.class"])
    assert driver.source_for(build) == driver.SOURCES  # type: ignore[arg-type]


def test_kafka_44s_moved_utilities_get_a_copy_with_the_imports_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "cache_dir", lambda what: tmp_path / "cache" / what)
    build = _build(tmp_path, ["org/apache/kafka/common/utils/internals/LogContext.class"])
    copy = driver.source_for(build)  # type: ignore[arg-type]
    assert copy != driver.SOURCES and copy.is_dir()
    original, copied = _sources(driver.SOURCES), _sources(copy)
    assert copied.keys() == original.keys()
    changed = {name for name in original if copied[name] != original[name]}
    assert changed == {"DriverKafkaUtils.java"}  # the one file that names them
    text = copied["DriverKafkaUtils.java"]
    for name in ("AppInfoParser", "LogContext"):
        assert f"import org.apache.kafka.common.utils.internals.{name};" in text
        assert f"import org.apache.kafka.common.utils.{name};" not in text
    # only those imports differ
    assert len(text.splitlines()) == len(original["DriverKafkaUtils.java"].splitlines())
    assert driver.source_for(build) == copy  # type: ignore[arg-type]  # the cached copy


def test_no_other_source_names_the_moved_utilities() -> None:
    for name, text in _sources(driver.SOURCES).items():
        if name != "DriverKafkaUtils.java":
            assert not re.search(r"^import .*\.(LogContext|AppInfoParser);", text, re.M), name


def test_the_sources_are_split_by_job_and_named_apart_from_kafkas_classes() -> None:
    sources = _sources(driver.SOURCES)
    assert f"{driver.MAIN}.java" in sources and len(sources) > 10
    for name, text in sources.items():
        assert len(text.splitlines()) <= 600, name
        assert name == f"{driver.MAIN}.java" or name.startswith("Driver"), name
        assert "package org.apache.kafka.controller;" in text, name
    files = javaprogram.check_sources(driver.SOURCES)
    assert javaprogram.main_source(files, driver.MAIN).name == f"{driver.MAIN}.java"
    assert javaprogram.main_source(files).name == f"{driver.MAIN}.java"  # the only main()


def test_every_release_line_adapter_says_what_its_line_changed() -> None:
    sources = _sources(driver.SOURCES)
    table = sources["DriverLine.java"]
    lines = sorted(n for n in sources if re.fullmatch(r"DriverLine\d+\.java", n))
    assert lines == ["DriverLine36.java", "DriverLine37.java", "DriverLine38.java",
                     "DriverLine39.java", "DriverLine40.java", "DriverLine41.java",
                     "DriverLine43.java"]
    previous = "DriverLine"
    for name in lines:
        cls = name.removesuffix(".java")
        text = sources[name]
        major, minor = cls[-2], cls[-1]
        assert text.startswith(f"/*\n * Kafka {major}.{minor}"), name  # the header says
        assert f"class {cls} extends {previous} " in text, name  # each extends the one before
        assert f"new {cls}()" in table and f"{major}.{minor}  {cls}" in table, name
        previous = cls
