"""The pytest plugin records each chaos test's outcome as its run's verdict (a failing test
is never CONFORMS), gives every run a directory of its own, and installs no exit hooks in
a run that starts no cluster. The cluster is a stub: no Kafka here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

CONFTEST = '''
import pytest
from harness.infra.errors import ClusterError
from harness.client import session


class FakeBuild:
    def describe(self):
        return {"version": "fake", "source": "stub", "features": []}


class FakeCluster:
    def __init__(self, shape, history):
        self.shape, self.history = shape, history

    def start(self):
        if self.shape.broker_config.get("fail") == "start":
            raise ClusterError("node 1 did not become ready")
        self.history.record("fault", action="kill", params={"node": 1})

    def teardown(self):
        if self.shape.broker_config.get("fail") == "teardown":
            raise ClusterError("could not stop node 2")


@pytest.fixture(scope="session")
def kafka_build():
    return FakeBuild()


@pytest.fixture(autouse=True)
def stub_cluster(monkeypatch):
    monkeypatch.setattr(session, "make_cluster",
                        lambda backend, build, shape, run_dir, history, readiness:
                        FakeCluster(shape, history))
'''

TESTS = '''
import pytest
from harness.infra.errors import NetworkError


@pytest.fixture
def broken_fixture(chaos_cluster):
    raise RuntimeError("fixture broke")


@pytest.fixture
def broken_teardown(chaos_cluster):
    yield
    raise RuntimeError("fixture teardown broke")


def test_passes(chaos_cluster):
    pass


def test_fails(chaos_cluster):
    assert False, "leader never moved"


def test_harness_error_in_body(chaos_cluster):
    raise NetworkError("Toxiproxy unreachable")


def test_skipped(chaos_cluster):
    pytest.skip("needs ELR")


@pytest.mark.xfail(reason="known divergence")
def test_xfails(chaos_cluster):
    assert False


@pytest.mark.cluster(broker_config={"fail": "start"})
def test_cluster_does_not_start(chaos_cluster):
    pass


def test_setup_error(chaos_cluster, broken_fixture):
    pass


def test_teardown_error(chaos_cluster, broken_teardown):
    pass


@pytest.mark.cluster(broker_config={"fail": "teardown"})
def test_cluster_teardown_fails(chaos_cluster):
    pass


def test_fails_and_teardown_errors(chaos_cluster, broken_teardown):
    assert False, "ISR never shrank"
'''

EXPECTED = {
    "test_passes": ("CONFORMS", "passed"),
    "test_fails": ("DIVERGES", "leader never moved"),
    "test_harness_error_in_body": ("ERROR", "Toxiproxy unreachable"),
    "test_skipped": ("UNSUPPORTED", "needs ELR"),
    "test_xfails": ("UNSUPPORTED", "known divergence"),
    "test_cluster_does_not_start": ("ERROR", "setup: harness.infra.errors.ClusterError: node 1"),
    "test_setup_error": ("ERROR", "setup: RuntimeError: fixture broke"),
    "test_teardown_error": ("ERROR", "teardown: RuntimeError: fixture teardown broke"),
    "test_cluster_teardown_fails": ("ERROR", "teardown: harness.infra.errors.ClusterError"),
    "test_fails_and_teardown_errors": ("DIVERGES", "ISR never shrank"),
}


def _histories(runs: Path) -> dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]]:
    """test name -> [(run.json, events)] for every run directory under `runs`."""
    out: dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]] = {}
    for run_dir in sorted(runs.iterdir()):
        meta = json.loads((run_dir / "run.json").read_text())
        events = [json.loads(line) for line in (run_dir / "events.jsonl").open()]
        test = meta["scenario"]["name"].rsplit("::", 1)[1]
        out.setdefault(test, []).append((meta, events))
    return out


def test_each_run_verdict_is_the_test_outcome(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_chaos=TESTS)
    runs = pytester.path / "runs"
    result = pytester.runpytest_inprocess("--runs-dir", str(runs), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=3, skipped=1, xfailed=1, errors=5)
    histories = _histories(runs)
    assert set(histories) == set(EXPECTED)
    for test, (verdict, reason) in EXPECTED.items():
        [(meta, events)] = histories[test]
        assert meta["verdict"] == verdict and meta["ended_wall"] is not None, test
        assert events[-1]["kind"] == "run_end" and events[-1]["verdict"] == verdict, test
        [judged] = [e for e in events if e["kind"] == "verdict"]
        assert judged["index"] is None and judged["verdict"] == verdict, test
        assert reason in judged["reason"], (test, judged["reason"])
        assert [e["seq"] for e in events] == list(range(len(events))), test


def test_two_sessions_in_the_same_second_get_two_run_directories(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_chaos="def test_passes(chaos_cluster):\n    pass\n")
    runs = pytester.path / "runs"
    for _ in range(2):
        pytester.runpytest_inprocess("--runs-dir", str(runs)).assert_outcomes(passed=1)
    both = _histories(runs)["test_passes"]
    assert len(both) == 2 and both[0][0]["run_id"] != both[1][0]["run_id"]
    for meta, events in both:  # each its own start and end, nothing merged
        assert [e["kind"] for e in events] == ["run_start", "fault", "verdict", "run_end"]
        assert {e["run_id"] for e in events} == {meta["run_id"]}


def test_a_run_without_a_cluster_installs_no_exit_hooks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain='''
import signal
from harness.infra import procs


def test_sigterm_is_left_alone():
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert not procs._atexit_installed and not procs._sigterm_installed
''')
    # a fresh interpreter: this one may have started processes already
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_an_interrupted_test_is_closed_as_error(pytester: pytest.Pytester) -> None:
    """Ctrl-C (or SIGTERM, which harness.infra.procs turns into KeyboardInterrupt) mid-test: pytest
    makes no report for it, so the history is closed at session end, not left open."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_chaos="def test_interrupted(chaos_cluster):\n"
                                   "    raise KeyboardInterrupt\n")
    runs = pytester.path / "runs"
    recorded = pytester.inline_run("--runs-dir", str(runs), "-p", "no:cacheprovider",
                                   no_reraise_ctrlc=True)
    assert recorded.ret == pytest.ExitCode.INTERRUPTED
    [(meta, events)] = _histories(runs)["test_interrupted"]
    assert meta["verdict"] == "ERROR" and meta["ended_wall"] is not None
    assert [e["kind"] for e in events][-2:] == ["verdict", "run_end"]
    assert "interrupted" in events[-2]["reason"]
