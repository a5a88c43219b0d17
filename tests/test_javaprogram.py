"""harness.cluster.javaprogram and `kafka-chaos java`: a Java source compiled against a
build's jars, cached per build, run with java -cp. The builds here are fake (a directory of
libs, empty); the one test that needs real Kafka jars skips when the build is not cached."""

from __future__ import annotations

import re
import threading
import zipfile
from pathlib import Path

import pytest

from harness.cli import app
from harness.cli import java as java_cli
from harness.cluster import builds, javaprogram
from harness.cluster.builds import Build, Features
from harness.infra.cache import cache_root
from harness.infra.errors import HarnessError, ToolMissing, UsageError

REPRO = (Path(__file__).resolve().parent.parent / "docs" / "findings"
         / "elr-keeps-removed-replica" / "ReproduceElrKeepsRemovedReplica.java")

HELLO = """
public class Hello {
    public static void main(String[] args) {
        System.out.println("hello " + String.join(",", args));
        System.exit(args.length == 0 ? 0 : Integer.parseInt(args[0]));
    }
}
"""


def _jdk() -> javaprogram.Jdk | None:
    try:
        return javaprogram.find_jdk()
    except ToolMissing:
        return None


needs_javac = pytest.mark.skipif(_jdk() is None, reason="no JDK javac on this machine")


@pytest.fixture
def fake_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Build:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    libs = tmp_path / "dist" / "libs"
    libs.mkdir(parents=True)
    features = Features(elr=False, elr_default_on=False, describe_topic_partitions=False,
                        hwm_rule=False, unclean_recovery=False, kip1303=False,
                        previous_broker_epoch=False)
    return Build("9.9.9", f"dist:{tmp_path / 'dist'}", libs, features)


def _source(folder: Path, text: str = HELLO, name: str = "Hello.java") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def _entries(folder: Path) -> list[str]:
    """What a cache folder holds, without the entries' lock files."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


@needs_javac
def test_compiles_once_runs_and_returns_exit_code_and_output(tmp_path: Path,
                                                             fake_build: Build) -> None:
    source = _source(tmp_path / "src")
    first = javaprogram.compile_program(source, fake_build)
    assert first.compiled and first.main_class == "Hello"
    assert (first.classes / "Hello.class").is_file()
    assert first.classes.is_relative_to(cache_root() / "java")  # a dist build: in the cache
    result = javaprogram.run(first, ["7", "x"])
    assert (result.exit_code, result.stdout) == (7, "hello 7,x\n")

    again = javaprogram.compile_program(source, fake_build)
    assert not again.compiled, "same source, build and JDK: the cached classes"
    assert again.classes == first.classes
    assert javaprogram.run(again).exit_code == 0


@needs_javac
def test_changed_source_compiles_again(tmp_path: Path, fake_build: Build) -> None:
    source = _source(tmp_path / "src")
    first = javaprogram.compile_program(source, fake_build)
    source.write_text(HELLO.replace('"hello "', '"changed "'))
    second = javaprogram.compile_program(source, fake_build)
    assert second.compiled and second.classes != first.classes
    assert javaprogram.run(second).stdout == "changed \n"


@needs_javac
def test_another_build_gets_its_own_classes(tmp_path: Path, fake_build: Build) -> None:
    source = _source(tmp_path / "src")
    first = javaprogram.compile_program(source, fake_build)
    with zipfile.ZipFile(fake_build.libs / "extra.jar", "w") as jar:  # the build's jars changed
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    second = javaprogram.compile_program(source, fake_build)
    assert second.compiled and second.classes != first.classes


@needs_javac
def test_package_declaration_names_the_main_class(tmp_path: Path, fake_build: Build) -> None:
    text = "/* package not.this; */\n// package nor.this;\npackage demo.tools;\n" + HELLO
    program = javaprogram.compile_program(_source(tmp_path / "src", text), fake_build)
    assert program.main_class == "demo.tools.Hello"
    assert (program.classes / "demo" / "tools" / "Hello.class").is_file()
    assert javaprogram.run(program, ["3"]).exit_code == 3


@needs_javac
def test_compile_error_carries_javacs_message_and_caches_nothing(tmp_path: Path,
                                                                 fake_build: Build) -> None:
    source = _source(tmp_path / "src", HELLO.replace("System.exit(", "Sytem.exit("))
    with pytest.raises(javaprogram.JavaCompileError) as err:
        javaprogram.compile_program(source, fake_build)
    assert re.search(r"Hello\.java:\d+: error: cannot find symbol", str(err.value)), err.value
    assert "symbol:   variable Sytem" in str(err.value)
    assert not _entries(cache_root() / "java"), "no half-made classes directory"


@needs_javac
def test_two_compiles_at_once_compile_once(tmp_path: Path, fake_build: Build) -> None:
    source = _source(tmp_path / "src")
    results: list[javaprogram.Program] = []
    threads = [threading.Thread(target=lambda: results.append(
        javaprogram.compile_program(source, fake_build))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.compiled for p in results) == [False, True]
    assert results[0].classes == results[1].classes
    assert _entries(cache_root() / "java") == [results[0].classes.name]


def test_bad_paths_are_usage_errors(tmp_path: Path, fake_build: Build) -> None:
    with pytest.raises(UsageError, match="no such file"):
        javaprogram.compile_program(tmp_path / "Missing.java", fake_build)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match="not a Java source file"):
        javaprogram.compile_program(tmp_path / "notes.txt", fake_build)
    (tmp_path / "Dir.java").mkdir()
    with pytest.raises(UsageError, match="not a file"):
        javaprogram.compile_program(tmp_path / "Dir.java", fake_build)


# -- several sources compiled together ---------------------------------------------------
GREETER = """
package demo;

final class Greeter {
    static String greet(String who) {
        return "hi " + who;
    }
}
"""
APP = """
package demo;

public class App {
    public static void main(String[] args) {
        System.out.println(Greeter.greet(String.join(",", args)));
    }
}
"""


def _project(folder: Path) -> tuple[Path, Path]:
    return _source(folder, APP, "App.java"), _source(folder, GREETER, "Greeter.java")


@needs_javac
def test_a_directory_compiles_together_and_its_main_class_is_found(
        tmp_path: Path, fake_build: Build) -> None:
    _project(tmp_path / "src")
    program = javaprogram.compile_program(tmp_path / "src", fake_build)
    assert program.compiled and program.main_class == "demo.App"
    assert program.source.name == "App.java" and len(program.sources) == 2
    assert (program.classes / "demo" / "Greeter.class").is_file()
    assert program.classes.name.startswith("App-")
    assert javaprogram.run(program, ["x"]).stdout == "hi x\n"
    again = javaprogram.compile_program(tmp_path / "src", fake_build, main="App")
    assert not again.compiled and again.classes == program.classes


@needs_javac
def test_a_change_to_any_source_compiles_again(tmp_path: Path, fake_build: Build) -> None:
    app, greeter = _project(tmp_path / "src")
    first = javaprogram.compile_program([app, greeter], fake_build)
    greeter.write_text(GREETER.replace('"hi "', '"hello "'))  # not the main class's file
    second = javaprogram.compile_program([app, greeter], fake_build)
    assert second.compiled and second.classes != first.classes
    assert javaprogram.run(second, ["y"]).stdout == "hello y\n"
    (tmp_path / "src" / "Extra.java").write_text("package demo;\nfinal class Extra {}\n")
    third = javaprogram.compile_program(tmp_path / "src", fake_build)  # one file more
    assert third.compiled and third.classes not in (first.classes, second.classes)


def test_one_source_keeps_its_key_and_several_key_by_every_file(tmp_path: Path,
                                                                fake_build: Build) -> None:
    jdk = javaprogram.Jdk(Path("/nonexistent/bin/javac"), Path("/nonexistent/bin/java"))
    app, greeter = _project(tmp_path / "src")
    assert javaprogram.cache_key(app, fake_build, (), jdk) == \
        javaprogram.cache_key([app], fake_build, (), jdk)
    both = javaprogram.cache_key([app, greeter], fake_build, (), jdk)
    assert both != javaprogram.cache_key(app, fake_build, (), jdk)
    moved = tmp_path / "src" / "sub"
    moved.mkdir()
    greeter.rename(moved / "Greeter.java")  # same bytes, another path
    assert javaprogram.cache_key([app, moved / "Greeter.java"], fake_build, (), jdk) != both


def test_several_sources_need_one_main_class(tmp_path: Path, fake_build: Build) -> None:
    app, greeter = _project(tmp_path / "src")
    with pytest.raises(UsageError, match="main class Nope: no source file Nope.java"):
        javaprogram.compile_program([app, greeter], fake_build, main="Nope")
    (tmp_path / "src" / "Other.java").write_text(APP.replace("class App", "class Other"))
    with pytest.raises(UsageError, match="2 of the 3 sources declare a main method"):
        javaprogram.compile_program(tmp_path / "src", fake_build)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="a directory with no .java file"):
        javaprogram.compile_program(tmp_path / "empty", fake_build)
    with pytest.raises(UsageError, match="given twice"):
        javaprogram.compile_program([app, app], fake_build)


def test_missing_javac_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(javaprogram.shutil, "which", lambda name: None)
    with pytest.raises(ToolMissing, match="`javac` not found.*JDK"):
        javaprogram.find_jdk()


@needs_javac
def test_run_past_its_timeout_is_a_harness_error(tmp_path: Path, fake_build: Build) -> None:
    text = HELLO.replace('System.out.println("hello "', 'try { Thread.sleep(60000); } catch '
                                                       '(InterruptedException e) {}\n'
                                                       'System.out.println("hello "')
    program = javaprogram.compile_program(_source(tmp_path / "src", text), fake_build)
    with pytest.raises(HarnessError, match="did not finish"):
        javaprogram.run(program, timeout_s=1.0)


# -- the command ----------------------------------------------------------------------------
def test_cli_bad_source_fails_before_any_build(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def no_build(*args: object) -> Build:
        raise AssertionError("a build was resolved")

    monkeypatch.setattr(builds, "resolve", no_build)
    assert app.main(["java", str(tmp_path / "Nope.java"), "--kafka-version", "4.3.1"]) == 2
    assert "Nope.java: no such file" in capsys.readouterr().err
    assert app.main(["java", "README.md"]) == 2
    assert "not a Java source file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["java", "R.java", "--kafka-version", "4.3.1", "--", "cancel", "--unstable"],
    ["java", "--kafka-version", "4.3.1", "R.java", "--", "cancel", "--unstable"],
    ["java", "R.java", "cancel", "--kafka-version", "4.3.1", "--", "--unstable"],
])
def test_cli_takes_options_around_the_source_and_program_args_after_dashes(
        argv: list[str]) -> None:
    args = java_cli.parse_command(app.parser().parse_args(argv))
    assert (args.source, args.kafka_version, args.args, args.junit) == (
        Path("R.java"), "4.3.1", ["cancel", "--unstable"], False)


@needs_javac
def test_cli_runs_the_program_and_exits_with_its_status(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_build: Build,
        capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(builds, "resolve", lambda version, dist: fake_build)
    source = _source(tmp_path / "src")
    assert app.main(["java", str(source), "--", "5", "y"]) == 5
    assert capfd.readouterr().out == "hello 5,y\n"


# -- the real reproduction ----------------------------------------------------------------
def _cached_431() -> Build:
    """Kafka 4.3.1 from the cache; the test is skipped when it is not there."""
    if not (cache_root() / "kafka" / "4.3.1" / "libs" / ".complete").exists():
        pytest.skip("Kafka 4.3.1 is not in the cache (kafka-chaos build --kafka-version 4.3.1 "
                    "fetches it); fast tests do not download Kafka")
    return builds.from_maven("4.3.1")


@needs_javac
def test_reproduction_on_cached_431_names_the_removed_replica() -> None:
    program = javaprogram.compile_program(REPRO, _cached_431())
    result = javaprogram.run(program, ["complete"], timeout_s=120)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert re.search(r"^BUG: ELR \[2, 3\] holds non-replica\(s\) \[2\] \(replicas \[1, 3, 4\]\)",
                     result.stdout, re.M), result.stdout
    cancel = javaprogram.run(program, ["cancel"], timeout_s=120)
    assert cancel.exit_code == 0 and "OK: ELR [3]" in cancel.stdout, cancel.stdout


def test_test_jars_are_the_builds_published_test_jars(monkeypatch: pytest.MonkeyPatch,
                                                      fake_build: Build) -> None:
    asked: list[str] = []
    monkeypatch.setattr(javaprogram, "maven_jar", lambda c: asked.append(c) or Path(c))
    javaprogram.kafka_test_jars(["kafka-metadata", "kafka-clients"], fake_build)
    assert asked == [f"org.apache.kafka:kafka-metadata:{fake_build.version}:jar:test",
                     f"org.apache.kafka:kafka-clients:{fake_build.version}:jar:test"]


def test_a_test_jar_that_is_no_artifact_name_is_a_usage_error_before_any_fetch(
        monkeypatch: pytest.MonkeyPatch, fake_build: Build) -> None:
    monkeypatch.setattr(javaprogram, "maven_jar", lambda c: pytest.fail(f"fetched {c}"))
    with pytest.raises(UsageError, match="--test-jars: 'kafka-metadata:test'"):
        javaprogram.kafka_test_jars(["kafka-clients", "kafka-metadata:test"], fake_build)


STALE_INDEX_REPRO = (Path(__file__).resolve().parent.parent / "docs" / "findings"
                     / "elr-index-stale-after-min-isr-change" / "ReproduceStaleElrIndex.java")


@needs_javac
def test_stale_elr_index_reproduction_on_cached_431_faults_and_its_control_does_not() -> None:
    program = javaprogram.compile_program(STALE_INDEX_REPRO, _cached_431())
    case = javaprogram.run(program, ["topic-min-isr"], timeout_s=120)
    assert case.exit_code == 1, case.stdout + case.stderr
    assert re.search(r"FAULT java\.lang\.RuntimeException: Topic ID \S+ existed in isrMembers, "
                     r"but not in the topics map\.", case.stdout), case.stdout
    control = javaprogram.run(program, ["topic-min-isr-control"], timeout_s=120)
    assert control.exit_code == 0, control.stdout + control.stderr
    assert "topic-min-isr-control        clean" in control.stdout, control.stdout
