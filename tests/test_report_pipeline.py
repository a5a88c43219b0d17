"""The report pipeline on PySpark: its data checks equal the runner's (harness/judge/datachecks.py),
bad histories are named and skipped, and the page loads in a real headless browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.infra.history import read_events
from harness.judge.datachecks import run_checks

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "histories"
pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark() -> Any:
    from harness.infra.spark import session
    return session()


def _python_findings(run_dir: Path) -> dict[str, list[str]]:
    return {c.name: sorted(json.dumps(d, sort_keys=True) for d in c.details)
            for c in run_checks(read_events(run_dir))}


def _spark_findings(spark: Any, run_dirs: list[Path]) -> dict[str, dict[str, list[str]]]:
    """Every finding of every check, as the report's Spark job collects them."""
    from harness.report.spark_jobs import judge_runs
    judged = judge_runs(spark, [(d.name, d / "events.jsonl") for d in run_dirs])
    return {f.run_id: {name: sorted(json.dumps(i, sort_keys=True) for i in items)
                       for name, items in f.checks.items()} for f in judged}


def test_the_report_job_finds_what_the_runner_finds_on_real_and_generated_histories(
        spark: Any, tmp_path: Path, bench_script: Any) -> None:
    gen = bench_script("gen_histories")
    generated = [gen.write_run(tmp_path, i, 400, seed=3, loss=0.02, dup=0.02) for i in range(4)]
    # interleaved partitions and short reads: the read, gap and nearest-HWM logic
    mixed = [gen.write_mixed_run(tmp_path, i, 3000, seed=5, read_events=i > 0)
             for i in range(4)]
    real = sorted(p for p in FIXTURES.iterdir() if (p / "run.json").exists())
    assert real, "fixtures/histories holds real chaos-run histories"
    spark_side = _spark_findings(spark, generated + mixed + real)
    for run_dir in generated + mixed + real:
        assert spark_side[run_dir.name] == _python_findings(run_dir), run_dir.name
    # the generator's seeded losses and duplicates are really there to be found
    found = [{k: len(v) for k, v in _python_findings(d).items()} for d in generated]
    assert all(f["acked_lost"] > 0 and f["duplicates"] > 0 and f["hwm_regression"] == 1
               for f in found), found
    found = [{k: len(v) for k, v in _python_findings(d).items()} for d in mixed]
    assert all(all(n > 0 for n in f.values()) for f in found), found


def test_report_names_bad_histories_and_writes_all_outputs(tmp_path: Path) -> None:
    from harness.report.build import make_report
    runs = tmp_path / "runs"
    shutil.copytree(FIXTURES, runs, ignore=shutil.ignore_patterns("*.md"))
    bad = runs / "corrupt-run"
    bad.mkdir()
    (bad / "run.json").write_text("{not json")
    future = runs / "future-run"
    shutil.copytree(next(p for p in runs.iterdir() if p.name.startswith("last-")), future)
    meta = json.loads((future / "run.json").read_text())
    (future / "run.json").write_text(json.dumps({**meta, "schema_version": "2.0"}))
    torn = next(p for p in runs.iterdir() if p.name.startswith("hwm-"))
    with open(torn / "events.jsonl", "a") as fh:
        fh.write('{"run_id": "x", "seq": 99999, "kind": "ack"')  # crashed mid-line
    summary = make_report([runs], tmp_path / "out")
    skipped = {Path(s["dir"]).name: s["reason"] for s in summary["skipped"]}
    assert "unreadable run.json" in skipped["corrupt-run"]
    assert "schema 2.0 is not supported" in skipped["future-run"]
    fixtures = [p for p in FIXTURES.iterdir() if (p / "run.json").exists()]
    assert summary["corrupt_lines"] == 1 and len(summary["runs"]) == len(fixtures)
    matrix = summary["matrix"]
    assert matrix["last-replica-standing"]["3.9.1"]["verdict"] == "CONFORMS"
    # recorded DIVERGES by a model bug fixed since (SCHEMA.md): re-judged, the run conforms;
    # the recorded step-wise result stays visible as the lockstep's, not as the verdict
    usle = matrix["unclean-shutdown-leaves-elr"]["4.3.1"]
    assert usle["verdict"] == "CONFORMS" and "last_known_elr" in usle["reason"]
    assert next(r["lockstep"] for r in summary["runs"] if r["run_id"] == usle["run_id"]) \
        .startswith("lockstep DIVERGES (settled states")
    lrs_391 = next(r for r in summary["runs"] if r["build"] == "3.9.1"
                   and r["scenario"] == "last-replica-standing")
    lost = lrs_391["checks"]["acked_lost"]
    assert {d["acks"] for d in lost} == {"all", "1"}  # the KIP's loss, found again offline
    lkl = next(r for r in summary["runs"] if r["scenario"].startswith("last-known-leader"))
    # an empty final read (schema 1.1 `read` event): the one acked record is lost
    assert [d["acks"] for d in lkl["checks"]["acked_lost"]] == ["all"]
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'failures="0"' in junit  # every real run as its scenario declares
    page = (tmp_path / "out" / "index.html").read_text()
    assert "lockstep DIVERGES (settled states, step by step): last_known_elr" in page
    assert "id='matrix'" in page and "http://" not in page.replace("http://www.w3.org", "")


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed "
                    "(apt-get install chromium); .ci/run installs it")
def test_page_loads_in_headless_chromium(tmp_path: Path) -> None:
    from harness.report.build import make_report
    make_report([FIXTURES], tmp_path / "out")
    page = tmp_path / "out" / "index.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(["chromium", *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert 'data-ready="yes"' in dom.stdout, dom.stderr[-2000:]  # the page's script ran
    assert 'id="matrix"' in dom.stdout and "last-replica-standing" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", *flags, "--window-size=1200,900", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_trends_follow_each_build_day_by_day() -> None:
    from harness.report.build import _trends

    day1, day2 = 1_795_000_000.0, 1_795_000_000.0 + 86_400

    def run(build: str, verdict: str, started: float | None) -> dict[str, Any]:
        return {"build": build, "verdict": verdict, "started": started}

    trends = _trends([run("4.3.1", "CONFORMS", day2), run("4.3.1", "CONFORMS", day1),
                      run("4.3.1", "DIVERGES", day1), run("4.3.1", "UNSUPPORTED", day1),
                      run("3.9.1", "UNSUPPORTED", day1), run("3.9.1", "ERROR", None)])
    assert [(d["day"], d["runs"], d["conform_rate"]) for d in trends["4.3.1"]] == [
        ("2026-11-18", 3, 0.5), ("2026-11-19", 1, 1.0)]  # UNSUPPORTED judges nothing
    assert trends["3.9.1"][0]["conform_rate"] is None  # only UNSUPPORTED that day
    assert trends["3.9.1"][1] == {"day": "unknown", "runs": 1, "verdicts": {"ERROR": 1},
                                  "conform_rate": 0.0}


def test_history_reader_counts_bad_lines_anywhere_and_keeps_the_rest(tmp_path: Path) -> None:
    from harness.report.spark_jobs import read_history
    path = tmp_path / "events.jsonl"
    good = [{"run_id": "r", "seq": i, "t_wall": 1.0 + i, "kind": "produce"} for i in range(3)]
    path.write_text(json.dumps(good[0]) + "\n" + "{broken\n" + json.dumps(good[1]) + "\n"
                    + json.dumps({"seq": 9, "kind": "ack"}) + "\n"  # no run_id
                    + "[1, 2]\n" + json.dumps(good[2]) + "\n" + '{"run_id": "r", "se')
    events, corrupt = read_history(path)
    assert events == good and corrupt == 4


def _report_cli(*args: str) -> int:
    from harness.cli.app import main
    return main(["report", *args])


def test_report_refuses_to_pass_on_nothing(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped, empty or file path, or histories none of which can be judged: exit 2
    with a message naming it, and no report (a junit.xml of 0 tests passes in CI)."""
    out = tmp_path / "out"
    empty = tmp_path / "empty"
    empty.mkdir()
    a_file = tmp_path / "run.json"
    a_file.write_text("{}")
    only_bad = tmp_path / "bad"
    (only_bad / "corrupt-run").mkdir(parents=True)
    (only_bad / "corrupt-run" / "run.json").write_text("{not json")
    cases = [(tmp_path / "runz", "runz: no such directory"),
             (a_file, "run.json: not a directory"),
             (empty, "no run history to judge under"),
             (only_bad, "skipped " + str(only_bad / "corrupt-run") + ": ")]
    for path, message in cases:
        assert _report_cli(str(path), "--out", str(out)) == 2, path
        assert message in capsys.readouterr().err, path
        assert not out.exists(), path
    # one good root beside a mistyped one is still an error: the typo is not ignored
    assert _report_cli(str(FIXTURES), str(tmp_path / "runz"), "--out", str(out)) == 2
    assert "runz: no such directory" in capsys.readouterr().err


def test_symlinked_run_directories_are_named_as_skipped(tmp_path: Path) -> None:
    from harness.report.load import discover
    real = sorted(p for p in FIXTURES.iterdir() if (p / "run.json").exists())
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copytree(real[0], runs / real[0].name)
    (runs / "latest").symlink_to(runs / real[0].name)
    (runs / "elsewhere").symlink_to(real[1])
    (runs / "loop").symlink_to(runs)
    found = discover([runs])
    assert [d.name for d, _ in found.good] == [real[0].name]
    skipped = {Path(d).name: reason for d, reason in found.skipped}
    assert set(skipped) == {"latest", "elsewhere", "loop"}
    assert skipped["elsewhere"] == f"symbolic link to {real[1]}: not followed"
    # a root given as a link is what the user asked for: followed
    (tmp_path / "link-root").symlink_to(runs)
    assert [d.name for d, _ in discover([tmp_path / "link-root"]).good] == [real[0].name]


def test_a_history_cut_short_is_incomplete_whatever_its_run_json_says(tmp_path: Path) -> None:
    from harness.report.build import make_report
    source = next(p for p in FIXTURES.iterdir() if p.name.startswith("hwm-"))
    runs = tmp_path / "runs"
    no_end = runs / "no-run-end"
    shutil.copytree(source, no_end)
    lines = (no_end / "events.jsonl").read_text().splitlines(keepends=True)
    (no_end / "events.jsonl").write_text("".join(lines[:-1]))  # lost its run_end
    assert '"run_end"' in lines[-1]
    open_ended = runs / "ended-wall-null"
    shutil.copytree(source, open_ended)
    meta = json.loads((open_ended / "run.json").read_text())
    assert meta["verdict"] == "CONFORMS"
    (open_ended / "run.json").write_text(json.dumps({**meta, "ended_wall": None,
                                                     "scenario": {"name": "other"}}))
    summary = make_report([runs], tmp_path / "out")
    assert {Path(r["dir"]).name: r["verdict"] for r in summary["runs"]} == {
        "no-run-end": "INCOMPLETE", "ended-wall-null": "INCOMPLETE"}
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert 'tests="2" failures="2"' in junit and "INCOMPLETE" in junit


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_shipped_package_is_removed_when_the_process_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Executors fetch the harness zip while the context lives; it must not outlive the
    process (every report on a cluster left one in the temporary directory)."""
    import atexit
    import tempfile
    import zipfile

    from harness.infra import spark

    at_exit: list[Any] = []
    monkeypatch.setattr(atexit, "register", lambda f, *a, **kw: at_exit.append((f, a, kw)))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shipped: list[str] = []

    class Context:
        def addPyFile(self, path: str) -> None:  # noqa: N802 (Spark's name)
            shipped.append(path)

    class Session:
        sparkContext = Context()  # noqa: N815

    spark._ship_package(Session())  # type: ignore[arg-type]
    archive = Path(shipped[0])
    assert "harness/judge/datachecks.py" in zipfile.ZipFile(archive).namelist()
    for f, args, kwargs in at_exit:
        f(*args, **kwargs)
    assert not archive.exists() and list(tmp_path.iterdir()) == []


def test_report_runs_on_a_standalone_spark_cluster(tmp_path: Path) -> None:
    """`--master`: a real standalone master and worker on loopback, executors that import the
    checks from the shipped package, the same findings as the runner's. Last in this file:
    it stops the local session the other tests share."""
    import signal

    from pyspark.sql import SparkSession

    from harness.cluster.backends.readiness import wait_log_line
    from harness.infra import procs
    from harness.report.build import make_report

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    url = f"spark://127.0.0.1:{_free_port()}"
    daemons: list[Any] = []

    def daemon(cls: str, marker: str, *args: str) -> None:
        log = tmp_path / f"{cls.rsplit('.', 1)[1]}.log"
        proc = procs.spawn([str(home / "bin" / "spark-class"), cls, *args, "--webui-port",
                            str(_free_port())], log, env=env)
        daemons.append(proc)
        wait_log_line(log, marker, 0, alive=lambda: proc.poll() is None, what=cls,
                      timeout_s=120)

    host, port = url.removeprefix("spark://").split(":")
    try:
        daemon("org.apache.spark.deploy.master.Master", "elected leader", "--host", host,
               "--port", port)
        daemon("org.apache.spark.deploy.worker.Worker", "Successfully registered", url,
               "--host", host, "--cores", "1", "--memory", "1g")
        if (active := SparkSession.getActiveSession()) is not None:
            active.stop()  # getOrCreate would hand back the local session
        summary = make_report([FIXTURES], tmp_path / "out", master=url)
        session = SparkSession.getActiveSession()
        assert session is not None and session.sparkContext.master == url
        for run in summary["runs"]:
            assert {k: sorted(json.dumps(d, sort_keys=True) for d in v)
                    for k, v in run["checks"].items()} == _python_findings(Path(run["dir"]))
        assert any(run["checks"]["acked_lost"] for run in summary["runs"])
    finally:
        if (active := SparkSession.getActiveSession()) is not None:
            active.stop()
        for proc in reversed(daemons):
            procs.kill(proc, signal.SIGTERM)

