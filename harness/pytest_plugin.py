"""pytest plugin (entry point `kafka_chaos`): options, the `chaos` marker, fixtures.

Fixtures: `kafka_build` (session), `chaos_cluster` (a fresh started cluster per test,
shape from `@pytest.mark.cluster(brokers=3, controllers=1, elr=None)`), `faults`,
`observer`, `workload`. Clusters are torn down on failure, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import builds, procs
from harness.backends import BACKENDS, make_cluster
from harness.backends.base import Cluster
from harness.errors import HarnessError
from harness.faults import Faults
from harness.history import History
from harness.observe import Observer
from harness.session import current_brokers
from harness.topology import ClusterShape
from harness.workload import Workload


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
    procs.install_exit_hooks()
    if config.getoption("--kafka-image", None):
        os.environ["KAFKA_CHAOS_KAFKA_IMAGE"] = config.getoption("--kafka-image")


@pytest.fixture(scope="session")
def kafka_build(request: pytest.FixtureRequest) -> builds.Build:
    try:
        return builds.resolve(request.config.getoption("--kafka-version"),
                              request.config.getoption("--kafka-dist"))
    except HarnessError as exc:
        pytest.exit(f"kafka-chaos: {exc}", returncode=4)


@pytest.fixture
def chaos_cluster(request: pytest.FixtureRequest, kafka_build: builds.Build) -> Iterator[Cluster]:
    marker = request.node.get_closest_marker("cluster")
    shape = ClusterShape(**(marker.kwargs if marker else {}))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80]
    run_dir = Path(request.config.getoption("--runs-dir")) / f"{name}-{time.strftime('%H%M%S')}"
    history = History(run_dir)
    backend = request.config.getoption("--backend")
    history.update(build=kafka_build.describe(), backend=backend,
                   scenario={"name": request.node.nodeid, "file": None})
    cluster = make_cluster(backend, kafka_build, shape, run_dir, history)
    verdict = "ERROR"
    try:
        cluster.start()
        yield cluster
        verdict = "CONFORMS"
    finally:
        cluster.teardown()
        history.close(verdict)


@pytest.fixture
def faults(chaos_cluster: Cluster) -> Faults:
    return Faults(chaos_cluster)


@pytest.fixture
def observer(chaos_cluster: Cluster, faults: Faults) -> Iterator[Observer]:
    with Observer(chaos_cluster,
                  current_brokers=lambda: current_brokers(chaos_cluster, faults)) as obs:
        yield obs


@pytest.fixture
def workload(chaos_cluster: Cluster) -> Iterator[Workload]:
    load = Workload(chaos_cluster)
    yield load
    load.close()
