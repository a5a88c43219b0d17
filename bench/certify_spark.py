"""A small certify campaign on one machine, on a standalone Spark master with two one-slot
workers on loopback, and the same with one worker killed mid-run (issue 46 item 2;
bench/RESULTS-certify.md "On a Spark cluster").

    python bench/certify_spark.py one|spark|kill|full WORKDIR

Mode `full` (issue 46 item 4, second half) is the 2-hour campaign instead: `certify
--kafka-version 4.4.0 --previous 4.3.1 --budget 2h` with the default scenarios, on the same
two one-slot workers, the 1-minute load sampled every minute into WORKDIR/full/load.txt.

Each mode runs `kafka-chaos certify --kafka-version 4.3.1 --previous 4.2.2` on three cheap
scenarios (WORKDIR/scenarios), the upgrade part skipped, into WORKDIR/MODE/campaign, and
prints: the wall time, each part's first and last progress line's time, the items, and for
`kill` which worker ran what and that the killed worker's item ran again on the other one.
The standalone daemons are started and stopped here (harness/infra/sparkstandalone.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.infra.sparkstandalone import StandaloneSpark  # noqa: E402

SCENARIOS = ("elr-keeps-removed-replica-shrink", "unregister-keeps-elr-member",
             "elr-keeps-removed-replica-complete")
PARTS = "matrix=5m,upgrade=0,diff=1m,hunt=2m"


def full_cmd(campaign: Path, master: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli", "certify", "--kafka-version", "4.4.0",
            "--previous", "4.3.1", "--budget", "2h", "--campaign", str(campaign),
            "--master", master]


def certify_cmd(campaign: Path, scenarios: Path, master: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "harness.cli", "certify", "--kafka-version", "4.3.1",
           "--previous", "4.2.2", "--budget", "8m", "--part-budget", PARTS,
           "--scenarios", str(scenarios), "--campaign", str(campaign)]
    return cmd + (["--master", master] if master else [])


def executor_log(spark_dir: Path, worker: int) -> str:
    return "".join(p.read_text(errors="replace")
                   for p in sorted((spark_dir / f"work-{worker}").glob("app-*/*/stderr")))


def tasks_of(text: str) -> list[str]:
    return re.findall(r"spark task: (scenario \S+ on Kafka \S+|diff of Kafka \S+)", text)


def part_times(log: str) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for m in re.finditer(r"\[kafka-chaos\s+([\d.]+)s\] certify \[(\w+)\]", log):
        t, part = float(m.group(1)), m.group(2)
        first = out.get(part, (t, t))[0]
        out[part] = (first, t)
    return out


def summary(camp: Path, log: str, wall: float) -> dict[str, object]:
    st = json.loads((camp / "certify-state.json").read_text())
    items = st["items"]
    cells = {k: v.get("shown") or v.get("text") for k, v in items.items()
             if k.startswith("matrix/")}
    searches = {k: v.get("stats") for k, v in items.items() if k.startswith(("diff", "hunt"))}
    runs = sorted(p.name for p in (camp / "runs").iterdir()) if (camp / "runs").is_dir() else []
    return {"wall_s": round(wall, 1), "parts": part_times(log), "cells": cells,
            "searches": searches, "run_dirs": len(runs),
            "per_scenario_run_dirs": {s: sum(r.startswith(s + "-20") for r in runs)
                                      for s in SCENARIOS},
            "parts_state": {p: round(v["elapsed_s"], 1) for p, v in st["parts"].items()}}


def main() -> int:
    mode, work = sys.argv[1], Path(sys.argv[2]).resolve()
    scenarios = work / "scenarios"
    scenarios.mkdir(parents=True, exist_ok=True)
    for s in SCENARIOS:
        shutil.copy(ROOT / "fixtures" / "scenarios" / f"{s}.yaml", scenarios)
    out = work / mode
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    camp, logf = out / "campaign", out / "certify.log"
    if mode == "one":
        t0 = time.monotonic()
        with logf.open("wb") as fh:
            rc = subprocess.call(certify_cmd(camp, scenarios, None), cwd=ROOT, stdout=fh,
                                 stderr=subprocess.STDOUT)
        wall = time.monotonic() - t0
        print(json.dumps({"rc": rc, **summary(camp, logf.read_text(), wall)}, indent=1))
        return 0
    spark_dir = out / "spark"
    sp = StandaloneSpark(spark_dir, workers=2, cores=1, memory="1g")
    with sp as master:
        t0 = time.monotonic()
        with logf.open("wb") as fh:
            cmd = full_cmd(camp, master) if mode == "full" else \
                certify_cmd(camp, scenarios, master)
            child = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
            killed: dict[str, object] = {}
            try:
                if mode == "kill":
                    killed = kill_worker_mid_run(sp, spark_dir, child)
                if mode == "full":
                    sample_load(out / "load.txt", child, 3 * 3600)
                rc = child.wait(timeout=4 * 3600 if mode == "full" else 3600)
            finally:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
                    child.wait(timeout=120)
        wall = time.monotonic() - t0
        logs = {w: tasks_of(executor_log(spark_dir, w)) for w in (0, 1)}
    left = subprocess.run(["pgrep", "-f", "kafka-chaos-task-"], capture_output=True,
                          text=True).stdout.split()
    print(json.dumps({"rc": rc, **summary(camp, logf.read_text(), wall),
                      "worker_tasks": logs, "killed": killed,
                      "processes_left_in_task_scratch": left}, indent=1))
    return 0


def sample_load(path: Path, child: subprocess.Popen[bytes], limit_s: float) -> None:
    """The 1-minute load once a minute while the campaign runs (bounded by ``limit_s``)."""
    deadline = time.monotonic() + limit_s
    with path.open("a") as fh:
        while time.monotonic() < deadline and child.poll() is None:
            fh.write(f"{time.strftime('%H:%M:%S')} {os.getloadavg()[0]:.2f}\n")
            fh.flush()
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass


def kill_worker_mid_run(sp: StandaloneSpark, spark_dir: Path,
                        child: subprocess.Popen[bytes]) -> dict[str, object]:
    """SIGKILL worker 0's JVM once both workers run a matrix cell (bounded poll); its
    executor exits with it (Spark's WorkerWatcher), and its task must run on worker 1."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and child.poll() is None:
        both = [tasks_of(executor_log(spark_dir, w)) for w in (0, 1)]
        if all(any(t.startswith("scenario") for t in ts) for ts in both):
            break
        time.sleep(1)
    else:
        return {"error": "both workers never ran a cell"}
    time.sleep(15)  # the cell's cluster is coming up: kill mid-run, not at its start
    running = tasks_of(executor_log(spark_dir, 0))[-1]
    worker0 = sp._procs[1]  # [master, worker-0, worker-1] (sparkstandalone.start)
    os.kill(worker0.pid, signal.SIGKILL)
    return {"worker": 0, "pid": worker0.pid, "running": running,
            "at_s": round(time.monotonic(), 1)}


if __name__ == "__main__":
    sys.exit(main())
