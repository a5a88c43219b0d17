"""Coverage of the build's controller code (issue 33 part 4): JaCoCo's XML read into the
targets' counts, with crafted reports (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.differential import coverage
from harness.infra.errors import HarnessError

PKG = "org/apache/kafka/controller"

XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<report name="t">
 <package name="{PKG}">
  <class name="{PKG}/PartitionChangeBuilder" sourcefilename="PartitionChangeBuilder.java">
   <method name="build" desc="()V" line="10">
    <counter type="LINE" missed="1" covered="3"/><counter type="BRANCH" missed="1" covered="3"/>
   </method>
   <method name="electLeader" desc="()V" line="20">
    <counter type="LINE" missed="0" covered="2"/><counter type="BRANCH" missed="0" covered="2"/>
   </method>
   <counter type="LINE" missed="1" covered="5"/><counter type="BRANCH" missed="1" covered="5"/>
  </class>
  <class name="{PKG}/ReplicationControlManager" sourcefilename="ReplicationControlManager.java">
   <method name="alterPartition" desc="()V" line="100">
    <counter type="LINE" missed="2" covered="8"/><counter type="BRANCH" missed="3" covered="7"/>
   </method>
   <method name="lambda$electLeaders$4" desc="()V" line="200">
    <counter type="LINE" missed="0" covered="1"/><counter type="BRANCH" missed="0" covered="2"/>
   </method>
   <method name="replay" desc="()V" line="300">
    <counter type="LINE" missed="9" covered="0"/><counter type="BRANCH" missed="9" covered="0"/>
   </method>
  </class>
  <sourcefile name="PartitionChangeBuilder.java">
   <line nr="11" mi="0" ci="3" mb="1" cb="1"/>
   <line nr="12" mi="0" ci="3" mb="0" cb="2"/>
   <line nr="21" mi="0" ci="3" mb="0" cb="2"/>
  </sourcefile>
 </package>
</report>
"""


def _report(tmp_path: Path, text: str = XML) -> coverage.CoverageReport:
    (path := tmp_path / "jacoco.xml").write_text(text)
    return coverage.read_report(path, "4.3.1")


def test_a_whole_class_is_counted_with_the_lines_whose_branch_was_never_taken(
        tmp_path: Path) -> None:
    pcb = _report(tmp_path).targets[0]
    assert pcb.name == "PartitionChangeBuilder"
    assert pcb.branches == coverage.Counts(5, 1) and pcb.lines == coverage.Counts(5, 1)
    assert pcb.branches.text() == "83.3% (5/6)"
    # Line 11 lies in build (first line 10); 12 and 21 took every branch.
    assert pcb.partial_lines == (("build", 11, 1, 1),)


def test_only_the_partition_changing_methods_of_the_manager_count(tmp_path: Path) -> None:
    rcm = _report(tmp_path).targets[-1]
    assert rcm.name.startswith("ReplicationControlManager (partition-changing methods: 2)")
    # alterPartition and electLeaders' lambda, not replay (9 missed branches left out).
    assert rcm.branches == coverage.Counts(9, 3)
    assert rcm.methods_missing == ("alterPartition:100 (3 of 10)",)


def test_a_class_the_report_lacks_is_not_reported_as_covered(tmp_path: Path) -> None:
    names = [t.name for t in _report(tmp_path).targets]
    assert "PartitionReassignmentReplicas" not in names  # not in this report: not invented
    assert _report(tmp_path, '<report name="t"/>').targets == []


def test_the_report_says_every_target_and_what_was_never_taken(tmp_path: Path) -> None:
    lines = list(_report(tmp_path).lines())
    assert lines[0] == ("coverage PartitionChangeBuilder: branches 83.3% (5/6) "
                        "(target 90%: NOT met), lines 83.3% (5/6)")
    assert "build:11 (1 of 2)" in lines[1]
    js = _report(tmp_path).to_json()
    assert js["targets"][0]["branch"] == {"covered": 5, "missed": 1, "ratio": 0.8333}
    assert js["targets"][0]["lines_with_missed_branches"] == [
        {"method": "build", "line": 11, "missed": 1, "covered": 1}]


def test_no_execution_data_is_an_error_naming_the_file(tmp_path: Path) -> None:
    build = type("B", (), {"version": "4.3.1", "libs": tmp_path})()
    with pytest.raises(HarnessError, match="jacoco.exec is missing"):
        coverage.xml_report(tmp_path / "jacoco.exec", build, tmp_path / "out.xml")  # type: ignore[arg-type]


def test_the_agent_appends_every_session_to_one_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coverage, "maven_jar", lambda coordinate: Path("/cache/agent.jar"))
    (opt,) = coverage.agent_options(tmp_path / "cov" / "jacoco.exec")
    assert opt.startswith("-javaagent:/cache/agent.jar=destfile=")
    assert "append=true" in opt and "dumponexit=true" in opt
    assert "includes=org.apache.kafka.controller.*" in opt
    assert (tmp_path / "cov").is_dir()
