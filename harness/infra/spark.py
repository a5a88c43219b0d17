"""A Spark session as the harness uses it, for the report and for runs spread over Spark
executors alike: quiet logs, the driver on loopback in local mode, Python workers on this
interpreter, and the harness shipped to executors on other machines."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession


def session(master: str | None = None, app: str = "kafka-chaos-report",
            conf: dict[str, str] | None = None) -> SparkSession:
    if not master:
        # Local mode talks to itself only: keep the driver on loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers run this interpreter, not whatever `python3` is first on PATH: a
    # virtual environment used without being activated (venv/bin/kafka-chaos report) left
    # the workers without the harness's dependencies (ModuleNotFoundError: kafka).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.appName(app)
               .config("spark.driver.extraJavaOptions",
                       f"-Dlog4j2.configurationFile=file:{_quiet_log4j2()}"))
    if master:
        builder = builder.master(master)
    elif not SparkSession.getActiveSession():
        builder = builder.master("local[2]")
    builder = (builder.config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "1g")
               # A task holds one run's events in its Python worker; reusing workers keeps
               # the interpreter and imports warm between runs.
               .config("spark.python.worker.reuse", "true"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    with _jvm_stderr_to(Path(tempfile.gettempdir()) / "kafka-chaos-spark.log"):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if master and not master.startswith("local"):
        _ship_package(spark)
    return spark


_QUIET_LOG4J2 = """status=error
rootLogger.level=error
logger.repl.name=org.apache.spark.repl.Main
logger.repl.level=error
rootLogger.appenderRef.stderr.ref=STDERR
appender.stderr.type=Console
appender.stderr.name=STDERR
appender.stderr.target=SYSTEM_ERR
appender.stderr.layout.type=PatternLayout
appender.stderr.layout.pattern=spark: %p %c{1}: %m%n
"""


@contextlib.contextmanager
def _jvm_stderr_to(log: Path) -> Iterator[None]:
    """The driver JVM inherits this process's stderr when it starts: point it at a log
    file, so the JVM's start-up warnings (incubator modules, hostname) stay out of the
    user's terminal; Python's own stderr is restored at once."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(log, "ab") as fh:
            os.dup2(fh.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _quiet_log4j2() -> Path:
    """A log4j2 config for the driver JVM: errors only. Without one Spark prints its
    log4j banner and start-up WARNs into the user's terminal."""
    path = Path(tempfile.gettempdir()) / "kafka-chaos-spark-log4j2.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_QUIET_LOG4J2)
        tmp.replace(path)
    return path


def _ship_package(spark: SparkSession) -> None:
    """Executors on other machines import the judges from a zip of the harness and the
    reference model (and the differential driver's Java sources: certify/spark.py)."""
    top = Path(__file__).resolve().parents[2]  # harness/infra/spark.py -> the checkout
    work = Path(tempfile.mkdtemp(prefix="kafka-chaos-pyfiles-"))
    # Spark serves the zip from this path to every executor that joins while the context
    # lives, so it can go only when the process does (it used to stay behind, 800 KB a run).
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    archive = work / "harness.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for package in ("harness", "reference"):
            for path in (top / package).rglob("*.py"):
                zf.write(path, path.relative_to(top))
        # the differential driver's Java sources, compiled on the executor (certify --master)
        for path in (top / "harness" / "differential" / "java").glob("*.java"):
            zf.write(path, path.relative_to(top))
    spark.sparkContext.addPyFile(str(archive))

