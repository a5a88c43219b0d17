"""Java programs run against a build's own jars: one source file, or several compiled
together (a directory of them or a list), compiled with the JDK's ``javac`` against the
build's ``libs/*`` (and any extra jars), cached per build, then run with ``java -cp``.

Used by ``kafka-chaos java`` (docs/findings/*/ reproductions, their JUnit tests), and meant
for any later driver that runs a long-lived Java process against a build: ``compile_program()``
gives a :class:`Program` (compiled or found in the cache), ``Program.command()`` its argv,
``run()`` one bounded run with its exit code and output.

Cache, like the class-data archives (harness/cluster/cds.py): beside a Maven build's jars
(``<cache>/kafka/<version>/java/<Stem>-<key>/``), in ``<cache>/java/`` for a local dist.
The key covers the sources (each one's bytes and file name; several: their paths
relative to their directory, in order), the build (version, source, each jar's name,
size and mtime), the extra jars, the JDK (its home, ``release`` and
``lib/modules``) and the javac options: a changed source, build or JDK compiles again.
Two processes compiling the same key at once: the entry lock lets one compile (into a
temporary directory, renamed into place when javac succeeded); the other waits, then finds
the classes. A directory in place is always a complete compilation.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.cluster.builds import Build
from harness.infra import progress, tools
from harness.infra.cache import cache_dir, entry_lock
from harness.infra.errors import HarnessError, ToolMissing, UsageError

#: javac options (part of the cache key). -proc:none: the build's jars carry annotation
#: processors (log4j-core's plugin processor) that must not run on our source.
JAVAC_OPTS: tuple[str, ...] = ("-proc:none", "-encoding", "UTF-8", "-nowarn")
COMPILE_TIMEOUT_S = 300.0
#: The JUnit console launcher (JUnit Platform 1.13 = Jupiter 5.13) for --junit runs.
JUNIT_CONSOLE = "org.junit.platform:junit-platform-console-standalone:1.13.4"
JUNIT_MAIN = "org.junit.platform.console.ConsoleLauncher"
_JDK_HINT = "install a JDK 17+ (Debian: apt-get install -y openjdk-17-jdk-headless)"
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*)\s*;", re.M)
_MAIN_METHOD = re.compile(r"\bstatic\s+void\s+main\s*\(")


class JavaCompileError(HarnessError):
    """javac refused a source file; the message carries javac's own output."""


@dataclass(frozen=True)
class Jdk:
    """The JDK's compiler and launcher, a matched pair (a class javac wrote must load in
    this java); ``home`` is where both live."""

    javac: Path
    java: Path

    @property
    def home(self) -> Path:
        return Path(os.path.realpath(self.javac)).parent.parent


@dataclass(frozen=True)
class Program:
    source: Path  # the main class's file
    main_class: str  # fully qualified: the source's package + its file name
    classes: Path  # the compiled classes (cached)
    classpath: tuple[str, ...]  # classes first, then the build's libs/*, then extra jars
    jdk: Jdk
    compiled: bool  # compiled by this call (False: found in the cache)
    sources: tuple[Path, ...] = field(default=())  # every file compiled (source among them)

    def command(self, args: Sequence[str] = (), jvm_opts: Sequence[str] = (),
                main_class: str | None = None) -> list[str]:
        """The argv that runs it (or another class on its class path, e.g. a test runner)."""
        return [str(self.jdk.java), *jvm_opts, "-cp", os.pathsep.join(self.classpath),
                main_class or self.main_class, *args]


@dataclass(frozen=True)
class Result:
    exit_code: int
    stdout: str
    stderr: str


def find_jdk(min_major: int = 11) -> Jdk:
    """javac and java of one JDK: the JDK of the `java` on PATH (the one nodes run on),
    else the `javac` on PATH and its own `java`."""
    java_on_path = shutil.which("java")
    candidates = []
    if java_on_path:
        candidates.append(Path(os.path.realpath(java_on_path)).parent / "javac")
    javac_on_path = shutil.which("javac")
    if javac_on_path:
        candidates.append(Path(os.path.realpath(javac_on_path)))
    for javac in candidates:
        if javac.is_file() and os.access(javac, os.X_OK):
            java = javac.parent / "java"
            if not java.is_file():
                raise ToolMissing(f"{javac} has no `java` beside it: {_JDK_HINT}")
            major = _java_major(java)
            if major < min_major:
                raise ToolMissing(f"{java} is Java {major}; this build needs Java {min_major}+: "
                                  f"{_JDK_HINT}")
            return Jdk(javac, java)
    where = f" (the `java` on PATH, {java_on_path}, is a JRE)" if java_on_path else ""
    raise ToolMissing(f"`javac` not found{where}: compiling a Java program needs a JDK: "
                      f"{_JDK_HINT}")


_majors: dict[Path, int] = {}


def _java_major(java: Path) -> int:
    """tools.java_major, asked once per process and JDK (it starts a JVM)."""
    if java not in _majors:
        _majors[java] = tools.java_major(java)
    return _majors[java]


def check_source(source: Path) -> Path:
    """The source file, or a UsageError naming what is wrong with the path."""
    if source.suffix != ".java":
        raise UsageError(f"{source}: not a Java source file (expected a path ending in .java)")
    if not source.exists():
        raise UsageError(f"{source}: no such file")
    if not source.is_file():
        raise UsageError(f"{source}: not a file")
    return source


def check_sources(sources: Path | Sequence[Path]) -> list[Path]:
    """The files to compile together: a .java file alone, every .java file under a
    directory (sorted by path), or a list of .java files; a UsageError names a bad one."""
    if isinstance(sources, Path):
        if sources.is_dir() and sources.suffix != ".java":  # X.java/: "not a file", as before
            found = sorted(sources.rglob("*.java"))
            if not found:
                raise UsageError(f"{sources}: a directory with no .java file")
            return found
        return [check_source(sources)]
    files = [check_source(Path(s)) for s in sources]
    if not files:
        raise UsageError("no Java source given")
    if len({f.resolve() for f in files}) != len(files):
        raise UsageError("a Java source is given twice")
    return files


def main_source(sources: Sequence[Path], main: str | None = None) -> Path:
    """The file of the main class: the only one, the one whose name (without .java) is
    main, or the only one declaring a ``static void main(``."""
    if len(sources) == 1 and main is None:
        return sources[0]
    if main is not None:
        named = [s for s in sources if s.stem == main]
        if len(named) != 1:
            raise UsageError(f"main class {main}: {'no' if not named else 'more than one'} "
                             f"source file {main}.java among {len(sources)}")
        return named[0]
    mains = [s for s in sources
             if _MAIN_METHOD.search(_COMMENTS.sub(" ", s.read_text(encoding="utf-8",
                                                                    errors="replace")))]
    if len(mains) != 1:
        raise UsageError(f"{len(mains)} of the {len(sources)} sources declare a main method; "
                         "name the main class")
    return mains[0]


def main_class(source: Path) -> str:
    """The class javac makes of the file: its package (if any) + the file name."""
    text = _COMMENTS.sub(" ", source.read_text(encoding="utf-8", errors="replace"))
    match = _PACKAGE.search(text)
    package = re.sub(r"\s+", "", match.group(1)) if match else ""
    return f"{package}.{source.stem}" if package else source.stem


def compile_program(source: Path | Sequence[Path], build: Build,
                    extra_jars: Sequence[Path] = (), jdk: Jdk | None = None, *,
                    main: str | None = None) -> Program:
    """The program compiled against the build's jars (+ extra_jars), from the cache when
    these sources, build and JDK were compiled before. source: one .java file, a directory
    of them or a list, compiled together; main: the main class's file name without .java,
    when several sources could be it (check_sources, main_source)."""
    sources = check_sources(source)
    entry = main_source(sources, main)
    for jar in extra_jars:
        if not jar.is_file():
            raise UsageError(f"extra jar {jar}: no such file")
    jdk = jdk or find_jdk(build.java_major)
    classpath_libs = [build.classpath(), *(str(j.resolve()) for j in extra_jars)]
    target = classes_dir(sources, build, extra_jars, jdk, entry)
    compiled = False
    if not target.is_dir():
        with entry_lock(target):  # one process compiles; the others wait, then find it
            if not target.is_dir():
                _compile_into(sources, target, classpath_libs, jdk)
                compiled = True
    return Program(entry.resolve(), main_class(entry), target,
                   (str(target), *classpath_libs), jdk, compiled,
                   tuple(s.resolve() for s in sources))


def classes_dir(sources: Path | Sequence[Path], build: Build, extra_jars: Sequence[Path],
                jdk: Jdk, entry: Path | None = None) -> Path:
    files = [sources] if isinstance(sources, Path) else list(sources)
    name = f"{(entry or files[0]).stem}-{cache_key(files, build, extra_jars, jdk)}"
    if build.source.startswith("maven:"):
        return build.libs.parent / "java" / name
    return cache_dir("java") / name


def source_names(sources: Sequence[Path]) -> list[str]:
    """What the key calls each source: its file name, or for several their paths relative
    to the directory that holds them all (a file's package comes from its text, so two
    files of one name in different directories are two sources)."""
    if len(sources) == 1:
        return [sources[0].name]
    root = Path(os.path.commonpath([str(s.resolve().parent) for s in sources]))
    return [s.resolve().relative_to(root).as_posix() for s in sources]


def cache_key(sources: Path | Sequence[Path], build: Build, extra_jars: Sequence[Path],
              jdk: Jdk) -> str:
    """Stable across processes; changes with any source (its bytes, its name, which files
    there are), the build's jars, the extra jars, the JDK or the javac options. For one
    source the same key as when only one source could be given."""
    files = [sources] if isinstance(sources, Path) else list(sources)
    names = "\0".join(source_names(files))
    digest = hashlib.sha256(f"{names}\0{build.version}\0{build.source}\0"
                            f"{' '.join(JAVAC_OPTS)}\0".encode())
    for source in files:
        digest.update(hashlib.sha256(source.read_bytes()).digest())
    for jar in sorted(build.libs.glob("*.jar")):
        st = jar.stat()
        digest.update(f"lib {jar.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for jar in extra_jars:
        st = jar.stat()
        digest.update(f"extra {jar.resolve()}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    home = jdk.home
    tools.hash_jdk(digest, home)
    return digest.hexdigest()[:16]


def _compile_into(sources: Sequence[Path], target: Path, classpath: Sequence[str],
                  jdk: Jdk) -> None:
    """javac into a temporary directory beside target, renamed into place on success."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{target.name}.tmp-*"):  # left by a killed compile
        shutil.rmtree(stale, ignore_errors=True)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    tmp.mkdir()
    cmd = [str(jdk.javac), *JAVAC_OPTS, "-cp", os.pathsep.join(classpath), "-d", str(tmp),
           *(str(s) for s in sources)]
    t0 = time.monotonic()
    source = str(sources[0]) if len(sources) == 1 else \
        f"{len(sources)} sources in {os.path.commonpath([str(s.parent) for s in sources])}"
    progress.say(f"compiling {source} against {classpath[0]} (once per source, build and JDK)")
    try:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise HarnessError(f"javac did not finish in {COMPILE_TIMEOUT_S:.0f} s "
                               f"compiling {source}") from exc
        if out.returncode != 0:
            text = (out.stdout + out.stderr).strip()
            raise JavaCompileError(f"javac could not compile {source} (exit {out.returncode}):"
                                   f"\n{_tail(text, 40)}")
        (tmp / "javac.txt").write_text(" ".join(cmd) + "\n")
        os.rename(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    progress.say(f"compiled in {time.monotonic() - t0:.1f}s into {target}")


def run(program: Program, args: Sequence[str] = (), *, jvm_opts: Sequence[str] = (),
        main_class: str | None = None, timeout_s: float | None = 600.0,
        capture: bool = True, cwd: Path | None = None) -> Result:
    """Run it once. capture=False lets it write to this process's stdout and stderr (the
    Result's texts are then empty). A run past timeout_s is killed: a HarnessError."""
    cmd = program.command(args, jvm_opts, main_class)
    try:
        out = subprocess.run(cmd, capture_output=capture, text=True, timeout=timeout_s, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"{main_class or program.main_class} did not finish in "
                           f"{timeout_s} s (killed)") from exc
    return Result(out.returncode, out.stdout or "", out.stderr or "")


def junit_console_jar() -> Path:
    """The JUnit console launcher (one jar: launcher, Jupiter API, params and engine)."""
    return maven_jar(JUNIT_CONSOLE)


#: An artifact name of org.apache.kafka (kafka-metadata, kafka-clients, ...).
_ARTIFACT = re.compile(r"[a-z][a-z0-9_.-]*")


def kafka_test_jars(names: Sequence[str], build: Build) -> list[Path]:
    """The published test jars (``org.apache.kafka:NAME:VERSION:jar:test``) of the build's
    version: Kafka's own test helpers (e.g. ReplicationControlManagerTest's context) for a
    test written in the style of Kafka's, against released jars only."""
    for name in names:
        if not _ARTIFACT.fullmatch(name):
            raise UsageError(f"--test-jars: {name!r} is not an artifact name of "
                             "org.apache.kafka (e.g. kafka-metadata,kafka-clients)")
    return [maven_jar(f"org.apache.kafka:{name}:{build.version}:jar:test") for name in names]


def maven_jar(coordinate: str) -> Path:
    """One jar from Maven Central (``group:artifact:version[:jar:classifier]``), cached in
    <cache>/<artifact>/<version>/ (needs `mvn` on first use)."""
    group, artifact, version, *rest = coordinate.split(":")
    classifier = rest[1] if len(rest) > 1 else ""
    folder = cache_dir(artifact, version)
    jar = folder / f"{artifact}-{version}{'-' + classifier if classifier else ''}.jar"
    if jar.is_file():
        return jar
    with entry_lock(jar):
        if jar.is_file():
            return jar
        mvn = tools.require("mvn")
        progress.say(f"fetching {coordinate} from Maven Central into {folder} (first use)")
        tmp = folder / f"tmp-{os.getpid()}"
        tmp.mkdir(exist_ok=True)
        try:
            out = subprocess.run([str(mvn), "-B", "-q", "--no-transfer-progress",
                                  "dependency:copy", f"-Dartifact={coordinate}",
                                  f"-DoutputDirectory={tmp}"],
                                 cwd=tmp, capture_output=True, text=True, timeout=600)
            fetched = tmp / jar.name
            if out.returncode != 0 or not fetched.is_file():
                raise HarnessError(f"Maven could not fetch {coordinate}:\n"
                                   + _tail(out.stdout + out.stderr, 15))
            os.replace(fetched, jar)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return jar


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
