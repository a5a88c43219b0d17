"""The docker backend leaves nothing behind: after a run, and after an interrupted run.

Needs a Docker engine: one is installed/started by `dockerengine.ensure_engine()` when
possible (and stopped again at exit if this process started it); otherwise every test
here is skipped with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.cluster import builds
from harness.infra import dockerengine
from harness.infra.errors import HarnessError

pytestmark = [pytest.mark.docker]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def engine() -> None:
    if os.environ.get("KAFKA_CHAOS_NO_DOCKER"):
        pytest.skip("KAFKA_CHAOS_NO_DOCKER is set")
    try:
        dockerengine.ensure_engine()
    except HarnessError as exc:
        pytest.skip(f"no usable Docker engine: {exc}")


@pytest.fixture(scope="module")
def build(engine: None) -> builds.Build:
    try:
        return builds.resolve(os.environ.get("KAFKA_CHAOS_VERSION"))
    except HarnessError as exc:
        pytest.skip(f"no Kafka build: {exc}")


def _leftovers(pid: int) -> tuple[list[str], list[str]]:
    ps = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}", "--filter",
                         f"name=kafka-chaos-{pid}-"], capture_output=True, text=True,
                        timeout=30, check=True).stdout.split()
    nets = subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}", "--filter",
                           f"label={dockerengine.OWNER_LABEL}={pid}"], capture_output=True,
                          text=True, timeout=30, check=True).stdout.split()
    return ps, nets


def test_no_container_or_network_left_after_a_run(build: builds.Build, tmp_path: Path) -> None:
    from harness.client.readiness import BrokersUnfenced
    from harness.cluster.backends.docker import DockerCluster
    from harness.cluster.topology import ClusterShape
    from harness.infra.history import History

    cluster = DockerCluster(build, ClusterShape(brokers=1, controllers=1), tmp_path / "run",
                            History(tmp_path / "run"), BrokersUnfenced())
    with cluster:
        containers, nets = _leftovers(os.getpid())
        assert len(containers) == 3 and len(nets) == 1, (containers, nets)  # 2 nodes + proxy
        cluster.kill(1)
        assert not cluster.is_running(1)
        cluster.start_node(1)
        assert cluster.is_running(1)
        assert (tmp_path / "run" / "logs" / "broker-1.log").stat().st_size > 0
    assert _leftovers(os.getpid()) == ([], [])
    cluster.teardown()  # idempotent


def test_teardown_removes_what_it_never_got_a_handle_on(build: builds.Build,
                                                       tmp_path: Path) -> None:
    # An interrupt can land after the daemon created a container or network and before
    # the cluster object held it.
    from harness.client.readiness import BrokersUnfenced
    from harness.cluster import images as dockerimages
    from harness.cluster.backends.docker import DockerCluster
    from harness.cluster.topology import ClusterShape
    from harness.infra.history import History

    cluster = DockerCluster(build, ClusterShape(brokers=1, controllers=1), tmp_path / "run",
                            History(tmp_path / "run"), BrokersUnfenced())
    image = dockerimages.ensure_toxiproxy_image()
    for cmd in (["create", "--name", cluster.container_name("stray"), image, "true"],
                ["network", "create", cluster.container_name("net")]):
        subprocess.run(["docker", *cmd], capture_output=True, timeout=60, check=True)
    cluster.teardown()

    def named(*what: str) -> list[str]:
        return subprocess.run(["docker", *what, "--filter", f"name={cluster.container_name('')}"],
                              capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert named("ps", "-aq") == [] and named("network", "ls", "-q") == []


_CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from harness.client.readiness import BrokersUnfenced
    from harness.cluster import builds
    from harness.client.readiness import BrokersUnfenced
    from harness.cluster.backends.docker import DockerCluster
    from harness.infra.history import History
    from harness.cluster.topology import ClusterShape
    run = Path(sys.argv[1])
    cluster = DockerCluster(builds.resolve(sys.argv[2]), ClusterShape(brokers=1, controllers=1),
                            run, History(run), BrokersUnfenced())
    cluster.start()
    print("UP", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("sig,when", [(signal.SIGTERM, "up"), (signal.SIGINT, "starting")])
def test_no_container_or_network_left_after_an_interrupted_run(
        build: builds.Build, tmp_path: Path, sig: signal.Signals, when: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESTCONTAINERS_RYUK_DISABLED="true")
    # A shell that starts jobs in the background without job control (nohup ... &, some CI
    # runners) hands them SIGINT ignored, and Python then installs no KeyboardInterrupt
    # handler: the child must get Ctrl-C's default like an interactive run does.
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path / "run"),
                              build.version], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 180
        seen: list[str] = []
        while time.monotonic() < deadline:
            if when == "starting" and _leftovers(child.pid)[0]:
                break  # interrupted in the middle of bring-up: some containers exist
            if when == "up" and child.stdout is not None:
                line = child.stdout.readline()
                seen.append(line)
                if line.startswith("UP"):
                    break
            if child.poll() is not None:
                pytest.fail(f"child exited early: {''.join(seen)}")
            time.sleep(0.05 if when == "starting" else 0)
        else:
            pytest.fail(f"child never reached {when!r}: {''.join(seen)}")
        assert _leftovers(child.pid)[0], "the child had containers before the interrupt"
        child.send_signal(sig)
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            out = child.communicate()[0] if child.stdout is not None else ""
            pytest.fail(f"the child did not exit within 120 s of {sig.name}: {out[-3000:]}")
        assert _leftovers(child.pid) == ([], []), "containers/networks left after the interrupt"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        dockerengine.remove_owned(str(child.pid))  # a failed test leaves nothing either
