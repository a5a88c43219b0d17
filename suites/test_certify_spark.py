"""certify --master (issue 46 item 2) on a standalone master with two one-slot workers on
loopback: a worker killed mid-run has its cell run again on the other one, every cell lands
once in the campaign directory; a Ctrl-C on the driver leaves no cluster running, and the
same command resumes. (bench/certify_spark.py measures the same with diff and hunt.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.infra.sparkstandalone import StandaloneSpark
from suites.test_cleanup import _alive, _processes_mentioning, _wait_for

pytestmark = pytest.mark.chaos

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("elr-keeps-removed-replica-shrink", "unregister-keeps-elr-member")


def _certify(build, tmp: Path, master: str) -> list[str]:
    if not build.source.startswith("maven:") or build.version_tuple < (4, 0, 0):
        pytest.skip(f"UNSUPPORTED: certify takes Maven releases >= 4.0 here ({build.source})")
    scenarios = tmp / "scenarios"
    scenarios.mkdir(exist_ok=True)
    for s in SCENARIOS:
        (scenarios / f"{s}.yaml").write_text(
            (ROOT / "fixtures" / "scenarios" / f"{s}.yaml").read_text())
    return [sys.executable, "-m", "harness.cli", "certify", "--kafka-version", build.version,
            "--previous", build.version, "--budget", "10m", "--part-budget",
            "matrix=10m,upgrade=0,diff=0,hunt=0", "--scenarios", str(scenarios),
            "--campaign", str(tmp / "campaign"), "--master", master]


def _tasks(spark_dir: Path, worker: int) -> list[str]:
    text = "".join(p.read_text(errors="replace")
                   for p in (spark_dir / f"work-{worker}").glob("app-*/*/stderr"))
    return re.findall(r"spark task: scenario (\S+) on Kafka", text)


def _state(tmp: Path) -> dict:
    return json.loads((tmp / "campaign" / "certify-state.json").read_text())


def _scratch_processes() -> list[int]:
    return _processes_mentioning("kafka-chaos-task-")


def test_a_killed_worker_s_cell_runs_again_on_the_other(tmp_path: Path, kafka_build) -> None:
    spark_dir = tmp_path / "spark"
    sp = StandaloneSpark(spark_dir, workers=2, cores=1)
    with sp as master:
        log = (tmp_path / "certify.log").open("wb")
        child = subprocess.Popen(_certify(kafka_build, tmp_path, master), cwd=ROOT,
                                 stdout=log, stderr=subprocess.STDOUT)
        try:
            assert _wait_for(lambda: child.poll() is not None or
                             (_tasks(spark_dir, 0) and _tasks(spark_dir, 1)), 300)
            assert child.poll() is None, (tmp_path / "certify.log").read_text()[-3000:]
            lost = _tasks(spark_dir, 0)[-1]
            os.kill(sp._procs[1].pid, signal.SIGKILL)  # [master, worker-0, worker-1]
            rc = child.wait(timeout=900)
        finally:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
                child.wait(timeout=120)
            log.close()
        again = _tasks(spark_dir, 1)
    out = (tmp_path / "certify.log").read_text()
    assert rc in (0, 1), out[-3000:]
    assert lost in again, (lost, again)  # the lost cell ran on the surviving worker
    items = _state(tmp_path)["items"]
    # the same build twice: one cell per scenario and role, each run once, none an ERROR
    keys = sorted(k for k in items if k.startswith("matrix/"))
    assert keys == sorted(f"matrix/{r}/{s}" for s in SCENARIOS for r in ("old", "new")), keys
    assert all(items[k]["verdict"] not in ("ERROR", "NOT RUN") for k in keys), items
    runs = [p.name for p in (tmp_path / "campaign" / "runs").iterdir()]
    for k in keys:
        assert Path(items[k]["run_dir"]).is_dir(), items[k]
    assert len(runs) == len(keys), runs  # the lost attempt left nothing in the campaign
    assert _wait_for(lambda: not _scratch_processes(), 60), _scratch_processes()


def test_ctrl_c_stops_every_cluster_and_the_same_command_resumes(tmp_path: Path,
                                                                 kafka_build) -> None:
    spark_dir = tmp_path / "spark"
    with StandaloneSpark(spark_dir, workers=2, cores=1) as master:
        cmd = _certify(kafka_build, tmp_path, master)
        log = (tmp_path / "certify.log").open("wb")
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            # both executors have a cluster up (3 or 4 Kafka JVMs each, in their scratch)
            up = _wait_for(lambda: child.poll() is not None or (
                _tasks(spark_dir, 0) and _tasks(spark_dir, 1) and
                len(_scratch_processes()) >= 7), 300)
            assert up and child.poll() is None, (tmp_path / "certify.log").read_text()[-3000:]
            running = _scratch_processes()
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=120) == 130
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=30)
            log.close()
        assert _wait_for(lambda: not any(_alive(p) for p in running), 60), \
            [p for p in running if _alive(p)]
        before = set(_state(tmp_path)["items"])
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "resuming" in done.stderr and time.monotonic() - t0 < 900
    items = _state(tmp_path)["items"]
    assert before <= set(items)
    assert all(k in items for k in (f"matrix/new/{s}" for s in SCENARIOS))
