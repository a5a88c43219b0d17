"""The harness-free reproduction of docs/findings/elr-keeps-removed-replica/, run against the
build under test (--kafka-version, default 4.3.1): the build's own PartitionChangeBuilder
leaves a replica that is no longer in the replica set in the ELR once a reassignment is
done. No cluster: one JVM with the build's jars."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.cluster import javaprogram
from harness.cluster.builds import Build

pytestmark = [pytest.mark.chaos]

REPRO = (Path(__file__).resolve().parent.parent / "docs" / "findings"
         / "elr-keeps-removed-replica" / "ReproduceElrKeepsRemovedReplica.java")
UNSUPPORTED = 3


@pytest.mark.parametrize(("case", "gone"), [
    ("complete", 2),  # the reassignment [1, 2, 3] -> [1, 3, 4] completes: 2 removed
    ("cancel-after-catch-up", 4),  # [1, 2, 3] -> [1, 4, 5] cancelled: 4 no longer a replica
])
def test_elr_keeps_a_replica_the_reassignment_took_out(kafka_build: Build, case: str,
                                                       gone: int) -> None:
    program = javaprogram.compile_program(REPRO, kafka_build)
    result = javaprogram.run(program, [case], timeout_s=120)
    out = result.stdout
    if result.exit_code == UNSUPPORTED:
        pytest.skip(out.strip().splitlines()[-1])
    after = re.search(r"^  after: +replicas=\[([\d, ]*)\]", out, re.M)
    assert after, out + result.stderr
    if case == "complete" and "2" in after.group(1).split(", "):
        # 3.8-4.2 complete a reassignment only once every target replica is in the ISR:
        # ISR [1, 2, 4] (3 is out) does not complete it, so the case does not arise there.
        pytest.skip(f"Kafka {kafka_build.version} does not complete this reassignment "
                    f"(replicas after: [{after.group(1)}])")
    assert result.exit_code == 1, out + result.stderr
    bug = re.search(r"^BUG: ELR \[([\d, ]*)\] holds non-replica\(s\) \[([\d, ]*)\]", out, re.M)
    assert bug, out
    assert str(gone) in bug.group(1).split(", ") and bug.group(2) == str(gone), out
