"""certify --master (issue 46 item 2): the fan-out's bookkeeping without a cluster
(harness/certify/spark.py, harness/infra/shipping.py). The real runs on a standalone master
with two workers: suites/test_certify_spark.py."""

from __future__ import annotations

import threading
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from harness.certify import spark as cspark
from harness.certify.state import CertifyState, load
from harness.infra import shipping
from harness.run import fanout

# --- shipping ---------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_shipped_directory_lands_as_it_was(tmp_path: Path) -> None:
    src = tmp_path / "scratch"
    (src / "run-1" / "logs").mkdir(parents=True)
    (src / "run-1" / "events.jsonl").write_text('{"e": 1}\n')
    (src / "run-1" / "logs" / "broker-1.log").write_text("started\n")
    dest = tmp_path / "campaign" / "runs"
    landed = shipping.land(shipping.pack(src), dest)
    assert landed == [dest / "run-1"]
    assert _tree(dest) == _tree(src)
    assert not [p for p in dest.iterdir() if p.name.startswith(".landing")]


def test_a_sparse_file_lands_sparse(tmp_path: Path) -> None:
    """A tar stores holes as zeros: a run's loop image (256 MiB, mostly holes) landed dense
    filled the disk in a 2-hour Spark campaign (54 GB of run directories); it lands sparse."""
    src, dest = tmp_path / "s", tmp_path / "d"
    (src / "run-1").mkdir(parents=True)
    image = src / "run-1" / "disk-1.img"
    with image.open("wb") as f:
        f.truncate(32 << 20)
        f.seek(5 << 20)
        f.write(b"superblock")
    shipping.land(shipping.pack(src), dest)
    landed = dest / "run-1" / "disk-1.img"
    assert landed.read_bytes() == image.read_bytes()
    assert landed.stat().st_blocks * 512 < 1 << 20  # 64 KiB of data, the rest holes
    assert shipping.resparse(dest) == 0  # already sparse: nothing more to save


def test_landing_twice_keeps_one_and_replace_renews_it(tmp_path: Path) -> None:
    src, dest = tmp_path / "s", tmp_path / "d"
    (src / "4.3.1").mkdir(parents=True)
    (src / "4.3.1" / "summary.json").write_text("first")
    shipping.land(shipping.pack(src), dest)
    (src / "4.3.1" / "summary.json").write_text("second")
    shipping.land(shipping.pack(src), dest)  # a run dir's name is unique: the same run
    assert (dest / "4.3.1" / "summary.json").read_text() == "first"
    (dest / "4.3.1" / "stale").write_text("left by an interrupted call")
    shipping.land(shipping.pack(src), dest, replace=True)  # a part's directory re-made
    assert _tree(dest) == {"4.3.1/summary.json": "second"}


def test_a_shipped_run_points_at_its_landed_history(tmp_path: Path) -> None:
    from harness.run.runner import RunResult
    scratch = tmp_path / "executor"
    (scratch / "s-20261128-abc").mkdir(parents=True)
    (scratch / "s-20261128-abc" / "run.json").write_text("{}")
    result = RunResult("s", "4.3.1", scratch / "s-20261128-abc", "", "CONFORMS")
    out = fanout.land_run(fanout.Shipped(result, shipping.pack(scratch), "h"),
                          tmp_path / "camp" / "runs")
    assert out.run_dir == tmp_path / "camp" / "runs" / "s-20261128-abc"
    assert (out.run_dir / "run.json").is_file() and out.verdict == "CONFORMS"


def test_a_lost_attempt_s_scratch_is_swept_and_a_live_one_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    monkeypatch.setattr(shipping.tempfile, "tempdir", str(tmp_path))
    lost = tmp_path / f"{shipping.SCRATCH_PREFIX}lost"
    (lost / "run-1").mkdir(parents=True)
    (lost / ".lock").write_text("")  # its task was killed: nobody holds the lock
    live = tmp_path / f"{shipping.SCRATCH_PREFIX}live"
    live.mkdir()
    with open(live / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert shipping.sweep(now=time.time() + 10 * shipping.STALE_S) == [lost]
    assert live.is_dir() and not lost.exists()
    with shipping.scratch() as where:
        (where / "run-2").mkdir()
        assert where.parent == tmp_path
        landed = shipping.land(shipping.pack(where), tmp_path / "d")
    assert [p.name for p in landed] == ["run-2"]  # its lock is not shipped
    assert not where.exists()


# --- the fan-out ------------------------------------------------------------------------------

class FakeRuns:
    """SparkRuns' surface the campaign uses: slots, cancel."""

    def __init__(self, slots: int) -> None:
        self.slots, self.cancelled = slots, 0

    def cancel(self) -> None:
        self.cancelled += 1


def _campaign(tmp_path: Path, slots: int = 2, split: float = 1000.0) -> cspark.SparkCampaign:
    st = CertifyState({"new": "4.3.1", "old": "4.2.2", "seed": 1, "kafka_dist": None},
                      plan={"split": {"matrix": split, "upgrade": 0.0, "diff": 0.0,
                                      "hunt": 0.0}})
    return cspark.SparkCampaign(tmp_path, st, {}, lambda s: None, runs=FakeRuns(slots))


def _work(key: str, fn: Any, log: list[str] | None = None) -> cspark.Work:
    return cspark.Work(key, key, 10.0, fn, lambda got: {"text": str(got), "wall_s": 0.0},
                       lambda: {"text": "not run: budget"})


def test_items_run_width_at_a_time_and_each_is_recorded_once(tmp_path: Path) -> None:
    camp = _campaign(tmp_path, slots=2)
    lock, now, peak = threading.Lock(), [0], [0]

    def item(n: int) -> int:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        return n

    camp.fan("matrix", [_work(f"matrix/new/s{n}", lambda n=n: item(n)) for n in range(5)])
    assert peak[0] == 2
    assert {k: v["text"] for k, v in camp.state.items.items()} == {
        f"matrix/new/s{n}": str(n) for n in range(5)}
    on_disk = load(tmp_path, camp.state.settings)
    assert sorted(on_disk.items) == sorted(camp.state.items)
    assert on_disk.part("matrix")["elapsed_s"] > 0


def test_a_recorded_item_is_not_run_again(tmp_path: Path) -> None:
    camp = _campaign(tmp_path)
    camp.state.record("matrix/new/a", {"text": "from an earlier call"})
    ran: list[str] = []
    camp.fan("matrix", [_work(k, lambda k=k: ran.append(k) or k)
                        for k in ("matrix/new/a", "matrix/new/b")])
    assert ran == ["matrix/new/b"]
    assert camp.state.items["matrix/new/a"]["text"] == "from an earlier call"


def test_a_spent_part_starts_no_more_items(tmp_path: Path) -> None:
    camp = _campaign(tmp_path, slots=1, split=1.0)
    camp.state.part("matrix")["elapsed_s"] = 5.0  # past 1.5x of 1 s
    ran: list[str] = []
    camp.fan("matrix", [_work("matrix/old/a", lambda: ran.append("a"))])
    assert ran == [] and camp.state.items["matrix/old/a"]["text"] == "not run: budget"


def test_an_interrupt_cancels_the_jobs_and_keeps_no_record_in_flight(tmp_path: Path) -> None:
    camp = _campaign(tmp_path, slots=2)
    release = threading.Event()

    def slow() -> str:
        release.wait(5)
        return "late"

    def interrupt() -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        camp.fan("matrix", [_work("matrix/new/slow", slow),
                            _work("matrix/new/boom", interrupt)])
    release.set()
    assert camp.runs.cancelled == 1  # type: ignore[attr-defined]
    assert camp.state.items == {}
    assert load(tmp_path, camp.state.settings).items == {}


def test_the_master_is_checked_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.app import main
    assert main(["certify", "--kafka-version", "4.3.1", "--previous", "4.2.2", "--master",
                 "spark://127.0.0.1:1", "--campaign", str(tmp_path / "c")]) == 2
    assert "cannot reach" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


# --- the executor's side --------------------------------------------------------------------

def test_the_driver_sources_come_out_of_the_shipped_zip(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.differential import driver
    archive = tmp_path / "harness.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("harness/differential/driver.py", "")
        zf.writestr("harness/differential/java/ControllerDriver.java", "class ControllerDriver {}")
        zf.writestr("harness/differential/java/DriverX.java", "class DriverX {}")
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(driver, "SOURCES", archive / "harness" / "differential" / "java")
    cspark.java_sources_from_zip()
    assert driver.SOURCES.is_dir()
    assert sorted(p.name for p in driver.SOURCES.glob("*.java")) == [
        "ControllerDriver.java", "DriverX.java"]
    assert (driver.SOURCES / "DriverX.java").read_text() == "class DriverX {}"


def test_the_zip_shipped_to_executors_holds_the_driver_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.infra import spark as infra_spark
    added: list[str] = []

    class Ctx:
        def addPyFile(self, path: str) -> None:  # noqa: N802 - Spark's name
            added.append(path)

    class Session:
        sparkContext = Ctx()

    monkeypatch.setattr(infra_spark.tempfile, "mkdtemp", lambda prefix: str(tmp_path))
    infra_spark._ship_package(Session())  # type: ignore[arg-type]
    names = zipfile.ZipFile(added[0]).namelist()
    assert "harness/differential/java/ControllerDriver.java" in names
    assert "harness/certify/spark.py" in names


def test_spark_runs_a_failed_attempt_again_and_only_the_finished_one_lands(
        tmp_path: Path) -> None:
    """On local[2,3] (2 cores, 3 attempts a task): Spark's own retry, which certify sets
    (spark.task.maxFailures on a cluster): the result is the finished attempt's alone."""
    from pyspark.sql import SparkSession

    from harness.infra.spark import session
    had = SparkSession.getActiveSession()
    if had is not None:
        pytest.skip("another Spark session is active in this process")
    def flaky_item(scratch_root: str) -> dict[str, str]:
        """A task whose first attempt dies half way (as on an executor that is lost)
        after writing into its scratch directory; the second finishes and ships. (Defined
        here so that it pickles by value: the Python workers import no test module.)"""
        from pyspark import TaskContext
        ctx = TaskContext.get()
        n = ctx.attemptNumber() if ctx is not None else 0
        scratch = Path(scratch_root) / f"attempt-{n}"
        (scratch / "run-x").mkdir(parents=True)
        (scratch / "run-x" / "events.jsonl").write_text(f"attempt {n}\n")
        if n == 0:
            raise RuntimeError("executor lost")
        return {str(p.relative_to(scratch)): p.read_text() for p in scratch.rglob("*")
                if p.is_file()}

    spark = session("local[2,3]", app="kafka-chaos-certify-test")
    try:
        files = spark.sparkContext.parallelize([str(tmp_path / "executor")], 1) \
            .map(flaky_item).collect()[0]
    finally:
        spark.stop()
    assert files == {"run-x/events.jsonl": "attempt 1\n"}  # only the attempt that finished
