"""pytest plugin (entry point `kafka_chaos`): options, the `chaos` marker, fixtures.

Fixtures: `kafka_build` (session), `chaos_cluster` (a fresh started cluster per test,
shape from `@pytest.mark.cluster(brokers=3, controllers=1, elr=None)`), `faults`,
`observer`, `workload`. Clusters are torn down on failure, Ctrl-C and SIGTERM.

Each chaos_cluster test writes a run history whose verdict is the test's outcome, known
only once its teardown is reported: CONFORMS (passed), DIVERGES (failed in the test
body), ERROR (setup or teardown failed, a harness error in the body, or interrupted),
UNSUPPORTED (skipped or xfailed). See fixtures/histories/SCHEMA.md.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

# Deprecations inside our dependencies (kafka-python's use of importlib.resources' legacy
# API) are not the user's to fix: keep them out of the runs of every project using this
# plugin, not only of this repository (its pyproject). As (module regex, ini line).
_DEPENDENCY_WARNINGS = ((r"kafka(\.|$)", r"ignore::DeprecationWarning:kafka(\.|$)"),
                        (r"importlib\.resources\._legacy",
                         r"ignore::DeprecationWarning:importlib\.resources\._legacy"))

with warnings.catch_warnings():
    # pytest (9+) records the warnings raised while it imports plugins, before any
    # pytest_configure of ours could add its filters: import the dependencies under them.
    for _module, _ in _DEPENDENCY_WARNINGS:
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=_module)
    from harness.client.observe import Observer
    from harness.client.session import Session, open_session
    from harness.client.workload import Workload
    from harness.cluster import builds
    from harness.cluster.backends import BACKENDS
    from harness.cluster.backends.base import Cluster
    from harness.cluster.topology import ClusterShape
    from harness.infra import startslots
    from harness.infra.errors import HarnessError, UsageError
    from harness.infra.history import History, new_run_id
    from harness.nemesis.faults import Faults

_HISTORY = pytest.StashKey[History]()
_PHASES = pytest.StashKey[dict[str, tuple[pytest.TestReport, BaseException | None]]]()
_OPEN = pytest.StashKey[list[tuple[History, str]]]()  # histories not closed yet, by nodeid


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos")
    group.addoption("--kafka-version", default=os.environ.get("KAFKA_CHAOS_VERSION"),
                    help=f"Apache Kafka version from Maven Central (default "
                         f"{builds.DEFAULT_KAFKA_VERSION})")
    group.addoption("--kafka-dist", default=os.environ.get("KAFKA_CHAOS_DIST"),
                    help="local Kafka distribution directory (with libs/*.jar)")
    group.addoption("--backend", default=os.environ.get("KAFKA_CHAOS_BACKEND", "local"),
                    choices=BACKENDS, help="cluster backend (default local)")
    group.addoption("--kafka-image", default=os.environ.get("KAFKA_CHAOS_KAFKA_IMAGE"),
                    help="docker backend: run brokers from this existing local image "
                         "(jars at /opt/kafka/libs) instead of building one from the build")
    group.addoption("--runs-dir", default=os.environ.get("KAFKA_CHAOS_RUNS", "runs"),
                    help="where run histories are written (default ./runs)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: drives a real Kafka cluster (slow)")
    config.addinivalue_line("markers", "cluster(brokers, controllers, elr, broker_config): "
                                       "shape of the chaos_cluster fixture")
    for _, line in _DEPENDENCY_WARNINGS:  # for warnings raised later, in collection and tests
        config.addinivalue_line("filterwarnings", line)
    config.stash[_OPEN] = []
    # No exit hooks here: harness.infra.procs installs them when a cluster first starts a
    # process, so a pytest run that never does keeps its own SIGTERM and exit handling.
    if config.getoption("--kafka-image", None):
        os.environ["KAFKA_CHAOS_KAFKA_IMAGE"] = config.getoption("--kafka-image")
    try:
        startslots.default_slots()  # a bad KAFKA_CHAOS_START_SLOTS fails before any test
    except UsageError as exc:
        raise pytest.UsageError(f"kafka-chaos: {exc}") from exc


# tryfirst: the hook takes the first answer, and xdist's own (the core count) was asked
# before this one, so `-n auto` gave one worker per core whatever default_jobs said.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``pytest -n auto`` runs as many clusters at once as ``--jobs auto`` would
    (harness.run.parallel.default_jobs: 2 per core as memory allows); each worker's
    clusters lease their own loopback blocks."""
    from harness.run.parallel import default_jobs
    return default_jobs()


@pytest.fixture(scope="session")
def kafka_build(request: pytest.FixtureRequest) -> builds.Build:
    try:
        return builds.resolve(request.config.getoption("--kafka-version"),
                              request.config.getoption("--kafka-dist"))
    except HarnessError as exc:
        pytest.exit(f"kafka-chaos: {exc}", returncode=4)


@pytest.fixture
def chaos_session(request: pytest.FixtureRequest, kafka_build: builds.Build
                  ) -> Iterator[Session]:
    """A started cluster (shape from the test's ``cluster`` marker) with its faults,
    observer and workload: the session the CLI's runner opens too."""
    marker = request.node.get_closest_marker("cluster")
    shape = ClusterShape(**(marker.kwargs if marker else {}))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80]
    run_dir = Path(request.config.getoption("--runs-dir")) / new_run_id(name)
    history = History(run_dir)
    # Closed by pytest_runtest_makereport once the outcome is known, not here: after the
    # yield the fixture cannot tell a passing test from a failing one.
    request.node.stash[_HISTORY] = history
    request.config.stash[_OPEN].append((history, request.node.nodeid))
    backend = request.config.getoption("--backend")
    history.update(build=kafka_build.describe(), backend=backend,
                   scenario={"name": request.node.nodeid, "file": None})
    with open_session(kafka_build, shape, run_dir, backend, history=history) as session:
        yield session


@pytest.fixture
def chaos_cluster(chaos_session: Session) -> Cluster:
    return chaos_session.cluster


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    phases = item.stash.setdefault(_PHASES, {})
    phases[report.when] = (report, call.excinfo.value if call.excinfo else None)
    history = item.stash.get(_HISTORY, None)
    if report.when == "teardown" and history is not None:
        _close(item.config, history, *outcome_verdict(phases))
    return report


def outcome_verdict(phases: dict[str, tuple[pytest.TestReport, BaseException | None]]
                    ) -> tuple[str, str]:
    """(verdict, reason) of a test from its setup, call and teardown reports."""
    setup, call, teardown = (phases.get(when, (None, None)) for when in
                             ("setup", "call", "teardown"))
    if setup[0] is not None and setup[0].failed:
        return "ERROR", "setup: " + _reason(setup[0])
    if call[0] is not None and call[0].failed:
        # a harness fault in the test body is never blamed on the build under test
        verdict = "ERROR" if isinstance(call[1], HarnessError) else "DIVERGES"
        return verdict, _reason(call[0])
    if teardown[0] is not None and teardown[0].failed:
        return "ERROR", "teardown: " + _reason(teardown[0])
    for report, _ in (setup, call):
        if report is not None and report.skipped:
            return "UNSUPPORTED", _reason(report)
    if call[0] is not None and call[0].passed:
        return "CONFORMS", "passed"
    return "ERROR", "the test did not run"


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        text = str(crash.message)
    elif isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        text = str(longrepr[2])
    else:
        text = str(longrepr or report.outcome)
    if getattr(report, "wasxfail", None) is not None:  # pytest counts an xfail as skipped
        text = f"xfail {report.wasxfail}: {text}".strip()
    return text.strip()[:1000]


def _close(config: pytest.Config, history: History, verdict: str, reason: str) -> None:
    history.record("verdict", index=None, verdict=verdict, reason=reason, field=None)
    history.close(verdict)
    config.stash[_OPEN][:] = [(h, n) for h, n in config.stash[_OPEN] if h is not history]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After pytest's own teardown of an interrupted test (Ctrl-C, SIGTERM), which makes
    no report: its history would otherwise stay open (ended_wall null)."""
    none: list[tuple[History, str]] = []
    still_open = session.config.stash.get(_OPEN, none)
    for history, nodeid in list(still_open):
        _close(session.config, history, "ERROR", f"interrupted: {nodeid} did not finish")


@pytest.fixture
def faults(chaos_session: Session) -> Faults:
    return chaos_session.faults


@pytest.fixture
def observer(chaos_session: Session) -> Observer:
    return chaos_session.observer


@pytest.fixture
def workload(chaos_session: Session) -> Workload:
    return chaos_session.workload
