"""KIP-966 / KIP-1303 chaos suites: every scenario file runs on the real cluster and on the
model in lockstep (issue 4). A build lacking a feature gives UNSUPPORTED, shown as a skip
with the reason; the run's history still holds the model's predicted timeline.

Each run is judged on three axes (release, kip, safety; harness/judge/axes.py). A test passes
only when every axis is clean or gives exactly the verdict the scenario declares for the
build (``expect:`` with a reason): a known-unsafe build stays green here and still shows
UNSAFE in the report; an undeclared failure on any axis fails the test, its message (and
pytest's JUnit message) starting with the run's headline (harness/judge/headline.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.run import print_table
from harness.judge.compare import UNSUPPORTED
from harness.run.runner import Runner
from harness.scenario.loader import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
KEY = {"last-replica-standing", "hwm-frozen-under-min-isr", "timing-leader-pause",
       "reassign-dead-replicas"}

pytestmark = pytest.mark.chaos


def _params() -> list[object]:
    out = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        marks = [pytest.mark.key] if path.stem in KEY else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


@pytest.mark.parametrize("path", _params())
def test_scenario_conforms(path: Path, kafka_build, request: pytest.FixtureRequest,
                           capsys: pytest.CaptureFixture[str]) -> None:
    scenario = load_scenario(path)
    runner = Runner(scenario, kafka_build, request.config.getoption("--backend"),
                    Path(request.config.getoption("--runs-dir")))
    result = runner.run()
    with capsys.disabled():
        print_table(result)
    head = result.headline  # harness/judge/headline.py: from the three axes, not the lockstep
    if head.verdict == UNSUPPORTED:
        pytest.skip(f"UNSUPPORTED on Kafka {kafka_build.version}: {result.reason}")
    assert head.passed, f"{head.message} ({result.run_dir})"
