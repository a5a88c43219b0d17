"""KIP-966 / KIP-1303 chaos suites: every scenario file runs on the real cluster and on the
model in lockstep (issue 4). A build lacking a feature gives UNSUPPORTED, shown as a skip
with the reason; the run's history still holds the model's predicted timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.runner import CONFORMS, UNSUPPORTED, Runner
from harness.runner_cli import print_table
from harness.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
KEY = {"last-replica-standing", "hwm-frozen-under-min-isr"}

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
    if result.verdict == UNSUPPORTED:
        pytest.skip(f"UNSUPPORTED on Kafka {kafka_build.version}: {result.reason}")
    assert result.verdict == CONFORMS, f"{result.verdict}: {result.reason} ({result.run_dir})"
