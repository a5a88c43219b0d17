"""Scenario files: every fixture loads; bad files name the file, the line, the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.scenario import nodes
from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario
from reference.model import steps as S

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"

GOOD = """\
version: 1
name: ok
seed: 4
profile: kafka-4.1
requires:
  min_version: "4.0.0"
  features: [elr]
cluster:
  brokers: 3
  controllers: 1
  broker_config: {auto.leader.rebalance.enable: false}
topic:
  name: t
  replicas: [1, 2, 3]
  min_insync_replicas: 2
  config: {unclean.leader.election.enable: "false"}
steps:
  - produce: {count: 5, acks: all}
  - produce: {acks: 1}
  - isolate: {node: 100}
  - partition: {groups: [[1, 100], [2, 3]]}
  - cut: {src: 2, dst: 1, direction: oneway}
  - heal: {}
  - kill: {broker: 3}
  - lose_unflushed: {broker: 3, offset: 2}
  - stop: {broker: 2}
  - restart: {broker: 3}
  - alter_config: {scope: topic, config: {min.insync.replicas: "3"}}
  - elect: {type: designated, broker: 1}
  - elect: {type: preferred}
  - reassign: {replicas: [3, 2, 1]}
  - await: {leader: null, isr: [2, 3], elr: [], hwm: 5, timeout_s: 30}
  - consume: {}
"""


def test_every_fixture_loads() -> None:
    files = sorted(SCENARIOS.glob("*.yaml"))
    assert files
    for f in files:
        sc = load_scenario(f)
        assert sc.steps and sc.name
        assert set(sc.topic.replicas) <= set(sc.cluster.broker_ids)


def test_good_file_maps_steps_to_reference_objects() -> None:
    sc = parse_scenario(GOOD, "good.yaml")
    assert (sc.version, sc.name, sc.seed, sc.profile) == (1, "ok", 4, "kafka-4.1")
    assert sc.requires.min_version == (4, 0, 0) and sc.requires.features == ("elr",)
    assert sc.cluster.broker_ids == (1, 2, 3) and sc.cluster.controller_ids == (100,)
    assert sc.cluster.broker_config == {"auto.leader.rebalance.enable": "false"}
    kinds = [s.kind for s in sc.steps]
    assert kinds[0] == "produce" and kinds[-1] == "consume"
    assert sc.steps[0].step == S.Produce(5, "all")
    assert sc.steps[1].step == S.Produce(1, "1")
    assert sc.steps[3].step == S.Partition(((1, 100), (2, 3)))
    assert sc.steps[4].step == S.Cut(2, 1, "oneway")
    assert sc.steps[7].step == S.LoseUnflushed(3, 2)
    assert sc.steps[11].step == S.Elect("designated", 1)
    aw = sc.steps[14].step
    assert isinstance(aw, S.Await) and aw.expect["leader"] is None and aw.timeout_s == 30
    assert sc.steps[0].line == 18 and sc.steps[0].mapping == {"produce": {"count": 5,
                                                                           "acks": "all"}}
    assert sc.topic_spec().replicas == (1, 2, 3)
    assert sc.cluster_spec().controllers == (100,)


def bad(text: str, line: int, *words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "bad.yaml")
    msg = str(e.value)
    assert msg.startswith(f"bad.yaml:{line}:"), msg
    for w in words:
        assert w in msg, msg


def edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


def test_unknown_top_level_key() -> None:
    bad(GOOD + "extra: 1\n", 34, "unknown key 'extra'")


def test_bad_broker_in_kill() -> None:
    bad(edit("kill: {broker: 3}", "kill: {broker: 7}"), 24, "steps[6].kill.broker",
        "7 is not a broker", "1..3")


def test_replicas_must_be_brokers() -> None:
    bad(edit("replicas: [1, 2, 3]", "replicas: [1, 2, 4]"), 14, "topic.replicas[2]")


def test_duplicate_replica() -> None:
    bad(edit("replicas: [1, 2, 3]", "replicas: [1, 1]"), 14, "listed twice")


def test_bad_acks() -> None:
    bad(edit("acks: all}", "acks: 2}"), 18, "acks must be 0, 1 or all")


def test_unknown_step_and_step_param() -> None:
    bad(edit("  - heal: {}", "  - explode: {}"), 23, "unknown step 'explode'")
    bad(edit("stop: {broker: 2}", "stop: {broker: 2, force: true}"), 26, "unknown key 'force'")


def test_step_with_two_keys() -> None:
    bad(edit("  - heal: {}", "  - {heal: {}, consume: {}}"), 23, "exactly one key")


def test_node_ids_follow_cluster_shape() -> None:
    bad(edit("isolate: {node: 100}", "isolate: {node: 101}"), 20, "101 is not a node")
    bad(edit("partition: {groups: [[1, 100], [2, 3]]}",
             "partition: {groups: [[1, 100], [2, 1]]}"), 21, "in two groups")


def test_lose_unflushed_must_follow_kill() -> None:
    bad(edit("lose_unflushed: {broker: 3, offset: 2}", "lose_unflushed: {broker: 1, offset: 2}"),
        25, "must follow a kill")


def test_missing_required_and_version() -> None:
    bad(GOOD.replace("version: 1\n", ""), 1, "missing required key 'version'")
    bad(edit("version: 1", "version: 2"), 1, "unsupported format version 2")
    bad(edit("name: ok", "name: Not_OK"), 2, "[a-z0-9-]+")


def test_profile_and_features_and_versions() -> None:
    bad(edit("profile: kafka-4.1", "profile: kafka-9"), 4, "unknown profile")
    bad(edit("features: [elr]", "features: [warp]"), 7, "unknown feature")
    bad(edit('min_version: "4.0.0"', "min_version: 4.0"), 6, "quoted version")


def test_election_type_and_designated_broker() -> None:
    bad(edit("elect: {type: preferred}", "elect: {type: random}"), 30, "unknown election type")
    bad(edit("elect: {type: designated, broker: 1}", "elect: {type: designated}"), 29,
        "missing required key 'broker'")


def test_local_log_step() -> None:
    text = edit("  - heal: {}", "  - local_log: {broker: 2, age_ms: 1000}")
    step = parse_scenario(text).steps[5].step
    assert step == S.ReportLocalLog(2, 1000, None)
    bad(edit("  - heal: {}", "  - local_log: {broker: 2}"), 23, "needs age_ms, size_bytes")
    bad(edit("  - heal: {}", "  - local_log: {broker: 2, size_bytes: -1}"), 23, "must be >= 0")
    bad(edit("  - heal: {}", "  - local_log: {broker: 7, age_ms: 1}"), 23, "broker")


def test_invalid_yaml_names_line() -> None:
    bad(GOOD.replace("  - heal: {}", "  - heal: {]"), 23, "invalid YAML")


def test_duplicate_keys_rejected() -> None:
    bad(edit("  name: t\n", "  name: t\n  name: u\n"), 14, "duplicate key 'name'")


def test_load_scenario_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(edit("brokers: 3", "brokers: zero"))
    with pytest.raises(ScenarioError, match=r"x\.yaml:9: cluster\.brokers: expected an integer"):
        load_scenario(f)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


# -- bounds: validation is the single gate (issue 16) -------------------------------------
def edit_cluster(brokers: int, controllers: int) -> str:
    return edit("  brokers: 3\n  controllers: 1\n",
                f"  brokers: {brokers}\n  controllers: {controllers}\n")


@pytest.mark.parametrize("text, line, words", [
    (edit_cluster(10, 1), 9, ("cluster.brokers", "1..9")),
    (edit_cluster(3, 2), 10, ("cluster.controllers", "1, 3 or 5")),
    (edit_cluster(3, 100000000), 10, ("cluster.controllers", "1, 3 or 5")),
    (edit("count: 5,", "count: 100000000000,"), 18, ("steps[0].produce.count", "10000")),
    (edit("count: 5,", "count: 10001,"), 18, ("10000",)),
    (edit("acks: 1}", "acks: 1, count: 9996}"), 19, ("records in all", "10000")),
    (edit("timeout_s: 30}", "timeout_s: 601}"), 32, ("timeout_s", "600")),
    (edit("offset: 2}", "offset: 1000000001}"), 25, ("offset", "1000000000")),
    (edit("hwm: 5,", "hwm: 1000000001,"), 32, ("hwm",)),
    (edit("seed: 4", "seed: 9223372036854775808"), 3, ("seed",)),
    (edit("name: ok", "name: " + "a" * 101), 2, ("at most 100",)),
    (edit("  name: t\n", "  name: " + "t" * 250 + "\n"), 13, ("topic.name", "249")),
    (edit("  name: t\n", "  name: ..\n"), 13, ("topic.name", "'..'")),
    (edit("  name: t\n", '  name: "t\\n"\n'), 13, ("topic.name",)),
    (edit("name: ok", 'name: "ok\\n"'), 2, ("[a-z0-9-]+",)),
    (edit("min_insync_replicas: 2", "min_insync_replicas: 2147483648"), 15, ("min_insync",)),
])
def test_upper_bounds(text: str, line: int, words: tuple[str, ...]) -> None:
    bad(text, line, *words)


def test_too_many_steps() -> None:
    head = GOOD.split("steps:\n")[0] + "steps:\n"
    assert len(parse_scenario(head + "  - heal: {}\n" * 500).steps) == 500
    bad(head + "  - heal: {}\n" * 501, 18, "steps: 501 entries, at most 500")


def test_bounds_are_inclusive_and_the_model_takes_them() -> None:
    from reference import Model
    text = edit_cluster(9, 5).replace("replicas: [1, 2, 3]",
                                      "replicas: [9, 8, 7, 6, 5, 4, 3, 2, 1]")
    text = text.replace("count: 5,", "count: 9999,").replace("timeout_s: 30}", "timeout_s: 600}")
    text = text.replace("name: ok", "name: " + "a" * 100).replace("  name: t\n", "  name: "
                                                                   + "t" * 249 + "\n")
    sc = parse_scenario(text)
    assert sc.cluster.controller_ids == (100, 101, 102, 103, 104)
    model = Model("kafka-4.1", sc.cluster_spec(), sc.topic_spec(), seed=sc.seed)
    for st in sc.steps:
        model.apply(st.step)


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "-1", "0", "1e400", "true"])
def test_await_timeout_must_be_finite_positive_and_bounded(value: str) -> None:
    bad(edit("timeout_s: 30}", f"timeout_s: {value}}}"), 32, "timeout_s", "600")


def test_file_larger_than_1_mb_is_rejected_unread(tmp_path: Path) -> None:
    f = tmp_path / "big.yaml"
    f.write_text(GOOD + "#" * 1_000_000)
    with pytest.raises(ScenarioError, match=r"big\.yaml:1: .*larger than 1 MB"):
        load_scenario(f)


# -- no tracebacks: every bad input is `file:line: reason` ---------------------------------
@pytest.mark.parametrize("old, new, line, words", [
    ("seed: 4", "seed: !!int abc", 3, ("seed", "!!int")),
    ("seed: 4", "seed: !!int " + "9" * 5000, 3, ("seed",)),
    ("seed: 4", "seed: 1:" + "1:" * 100 + "1", 3, ("seed",)),
    ("  elr: true\n", "  elr: !!bool maybe\n", 11, ("!!bool",)),
    ("  brokers: 3\n  controllers: 1\n  elr: true\n",
     "  brokers: 3\n  controllers: 1\n  elr: !!timestamp x\n", 11, ("!!timestamp",)),
    ("profile: kafka-4.1", "profile: !foo kafka-4.1", 4, ("!foo",)),
    ("profile: kafka-4.1", "profile: !!binary aGk=", 4, ("!!binary",)),
    ("features: [elr]", "features: !!set {elr}", 7, ("!!set",)),
    ("features: [elr]", "features: !!omap [{elr: 1}]", 7, ("!!omap",)),
    ("profile: kafka-4.1", "profile: =", 4, ("quote",)),
])
def test_yaml_tags_are_errors_not_tracebacks(old: str, new: str, line: int,
                                             words: tuple[str, ...]) -> None:
    text = GOOD.replace("  controllers: 1\n", "  controllers: 1\n  elr: true\n")
    assert old in text
    bad(text.replace(old, new, 1), line, *words)


def test_merge_keys_are_supported() -> None:
    text = edit("  - kill: {broker: 3}\n", "  - kill: &k3 {broker: 3}\n").replace(
        "  - restart: {broker: 3}\n", "  - restart: {<<: *k3}\n").replace(
        "  - elect: {type: preferred}\n", "  - elect: {<<: [{type: preferred}, {type: x}]}\n")
    plain = parse_scenario(GOOD)
    merged = parse_scenario(text)
    assert [s.step for s in merged.steps] == [s.step for s in plain.steps]
    assert merged.steps[9].mapping == {"restart": {"broker": 3}}
    own_wins = edit("  - stop: {broker: 2}\n", "  - stop: {<<: *k3, broker: 2}\n").replace(
        "kill: {broker: 3}", "kill: &k3 {broker: 3}")
    assert parse_scenario(own_wins).steps[8].step == S.Stop(2)
    bad(edit("  - heal: {}\n", "  - heal: {<<: 5}\n"), 23, "<<", "mapping")
    bad(edit("  - heal: {}\n", "  - heal: {<<: *nowhere}\n"), 23, "undefined alias")


def test_merge_key_on_an_aliased_node_reads_the_same_twice() -> None:
    text = edit("  - heal: {}\n", "  - await: &a {<<: {hwm: 1}, hwm: 5}\n  - await: *a\n")
    sc = parse_scenario(text)
    assert sc.steps[5].step == sc.steps[6].step


def test_non_utf8_file_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes(GOOD.replace("description", "d").encode().replace(b"name: ok",
                                                                      b"name: caf\xe9"))
    with pytest.raises(ScenarioError, match=r"latin1\.yaml:2: not UTF-8"):
        load_scenario(f)


def test_control_characters_name_the_line() -> None:
    bad(edit("name: ok", "name: o\x00k"), 2, "U+0000")
    bad(edit("name: ok", "name: o\x1bk"), 2, "U+001B")


LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])


@pytest.fixture(params=LOADERS, ids=lambda loader: loader.__name__)
def yaml_loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both YAML parsers PyYAML may use: libyaml's has a nesting limit of its own (1,000
    levels since PyYAML 6.0.4) and stops before the loader sees 17 levels."""
    monkeypatch.setattr(nodes, "_LOADER", request.param)


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("depth", [17, 999, 1001, 3000, 100_000])
def test_deep_nesting_is_an_error_not_a_recursion_error(depth: int) -> None:
    bad(GOOD + "x: " + "[" * depth + "]" * depth + "\n", 34, "nested deeper than 16")


@pytest.mark.usefixtures("yaml_loader")
@pytest.mark.parametrize("depth", [17, 1001, 1400])
def test_deep_block_nesting_names_the_projects_limit(depth: int) -> None:
    text = "".join(" " * i + "a:\n" for i in range(depth))
    bad(text, 17, "nested deeper than 16")


@pytest.mark.usefixtures("yaml_loader")
def test_a_syntax_error_is_still_the_parsers_after_the_limits_are_checked() -> None:
    bad(GOOD + "x: [1, 2\n", 35, "invalid YAML")


def test_alias_bombs_and_cycles_are_rejected_fast() -> None:
    import time
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    started = time.process_time()  # CPU, not wall: other processes' load must not count
    bad("\n".join(lines) + "\n" + GOOD, 5, "50000 values")
    assert time.process_time() - started < 1
    bad(GOOD + "x: &c [*c]\n", 34, "contains it")


def test_one_document_per_file() -> None:
    bad(GOOD + "---\n" + GOOD, 34, "one YAML document")


def test_the_loader_keeps_nothing_alive() -> None:
    import gc
    import tracemalloc
    text = (SCENARIOS / "kip966-last-replica-standing.yaml").read_text()
    parse_scenario(text)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            parse_scenario(text)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, f"{grown} bytes kept after 20 loads"


# -- broker_config: the harness owns the wiring --------------------------------------------
@pytest.mark.parametrize("key", ["listeners", "advertised.listeners",
                                 "listener.security.protocol.map", "inter.broker.listener.name",
                                 "controller.listener.names", "controller.quorum.voters",
                                 "controller.quorum.bootstrap.servers", "log.dirs", "log.dir",
                                 "metadata.log.dir", "node.id", "broker.id", "process.roles"])
def test_harness_owned_broker_config_keys_are_rejected(key: str) -> None:
    bad(edit("broker_config: {auto.leader.rebalance.enable: false}",
             f"broker_config: {{{key}: x}}"), 11, key, "owned by the harness")
    bad(edit("alter_config: {scope: topic, config: {min.insync.replicas: \"3\"}}",
             f"alter_config: {{scope: cluster, config: {{{key}: x}}}}"), 28, "owned by the harness")


@pytest.mark.parametrize("entry, words", [
    ('"a=b": x', ("config key",)), ('"a:b": x', ("config key",)), ('"a b": x', ("config key",)),
    ('"a\\nb": x', ("config key",)), ('a: "x\\ny"', ("line break",)),
    ('a: "x\\u2028y"', ("line break",)), ('a: "x\\ty"', ("control",)),
    ("min.insync.replicas: abc", ("min.insync.replicas", "integer")),
    ("min.insync.replicas: 0", ("min.insync.replicas",)),
    ("unclean.leader.election.enable: maybe", ("true or false",)),
    ("unclean.recovery.strategy: sometimes", ("Aggressive",)),
    ("leader.election.eligible.local.log.ms: 1e3", ("integer",)),
])
def test_broker_config_that_breaks_a_properties_file_or_the_model(entry: str,
                                                                 words: tuple[str, ...]) -> None:
    bad(edit("broker_config: {auto.leader.rebalance.enable: false}",
             f"broker_config: {{{entry}}}"), 11, *words)


def test_alter_config_min_isr_must_be_ascii_digits() -> None:
    bad(edit('config: {min.insync.replicas: "3"}', 'config: {min.insync.replicas: "\u00b2"}'),
        28, "min.insync.replicas")


def test_server_properties_escape_values_and_keep_broker_config_off_controllers() -> None:
    from harness.cluster import config as kafkaconfig
    from harness.cluster.topology import ClusterShape
    from harness.infra.errors import UsageError
    shape = ClusterShape(brokers=3)
    addr = kafkaconfig.NodeAddresses("127.9.0.2", "127.9.250.2:9094", "127.9.0.2:9095")
    cfg = {"ssl.keystore.location": " C:\\k\u00fcy #1\n\U0001f600", "log.segment.bytes": "1000",
           "unclean.leader.election.enable": "true"}
    broker = kafkaconfig.render(2, shape, addr, "/d", cfg).splitlines()
    assert "ssl.keystore.location=\\ C:\\\\k\\u00fcy #1\\n\\ud83d\\ude00" in broker
    assert "log.segment.bytes=1000" in broker
    controller = kafkaconfig.render(100, shape, addr, "/d", cfg).splitlines()
    assert "unclean.leader.election.enable=true" in controller
    assert not any(line.startswith(("log.segment.bytes", "ssl.")) for line in controller)
    assert "auto.leader.rebalance.enable=false" in controller
    with pytest.raises(UsageError, match="listeners.*the harness owns"):
        kafkaconfig.render(2, shape, addr, "/d", {"listeners": "PLAINTEXT://:1"})


def test_reserved_keys_cover_everything_the_harness_writes() -> None:
    from harness.cluster import config as kafkaconfig
    from harness.cluster.topology import ClusterShape
    shape = ClusterShape(brokers=3)
    addr = kafkaconfig.NodeAddresses("h", "h:1", "h:2")
    written = set(kafkaconfig.broker_props(1, shape, addr)) | set(
        kafkaconfig.controller_props(100, shape, addr)) | {"log.dirs"}
    presets = (set(kafkaconfig.TEST_FRIENDLY_BROKER) | set(kafkaconfig.TEST_FRIENDLY_CONTROLLER)
               | set(kafkaconfig.LEAN_INTERNALS)
               | {"offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                  "transaction.state.log.min.isr"})
    assert written - presets <= kafkaconfig.HARNESS_OWNED


# -- expect: the three judging axes --------------------------------------------------------
def test_expect_entries_parse_into_expectations() -> None:
    from harness.scenario.loader import Expectation
    text = GOOD + """expect:
  - axis: safety
    verdict: UNSAFE
    versions: {max: "3.9.99"}
    reason: "KIP-966 motivation: without ELR the last replica standing loses acked records"
  - {axis: safety, verdict: SAFE, reason: ELR keeps them}
  - {axis: kip, verdict: DEVIATES, versions: {min: "4.1.0", max: "4.1.9"}, reason: r}
"""
    sc = parse_scenario(text)
    unsafe = sc.expectations[0]
    assert unsafe == Expectation("safety", "UNSAFE", None, (3, 9, 99), unsafe.reason)
    assert sc.expected("safety", (3, 9, 1)) is unsafe
    assert sc.expected("safety", (4, 0, 0)) == sc.expectations[1]
    assert sc.expected("kip", (4, 1, 9)) == sc.expectations[2]
    assert sc.expected("kip", (4, 2, 0)) is None and sc.expected("release", (3, 9, 1)) is None
    assert parse_scenario(GOOD).expectations == ()
    with pytest.raises(AttributeError):
        unsafe.verdict = "SAFE"  # type: ignore[misc]
    bad(GOOD + "expect:\n  - {axis: safety, verdict: UNSAFE, reason: r, when: x}\n", 35,
        "unknown key 'when'")
    bad(GOOD + "expect:\n  - {axis: safety, verdict: UNSAFE, reason: '  '}\n", 35, "reason")
    bad(GOOD + "expect:\n  - {axis: safety, verdict: UNSAFE, reason: r, versions: "
        "{max: \"3.9\"}}\n", 35, "expect[0].versions.max", "quoted version")


def test_odd_yaml_line_breaks_are_refused_so_lines_match_the_editor() -> None:
    bad(edit("name: ok", "name: o\x85k"), 2, "U+0085", "line break")
    bad(edit("  - heal: {}", "  - heal: {}\u2028"), 23, "U+2028")


def test_every_error_line_is_a_line_of_the_file() -> None:
    # found by the fuzz test: libyaml marks some errors at the end of the stream one line
    # past the last line of a truncated file
    for f in SCENARIOS.glob("*.yaml"):
        text = f.read_text()
        for cut in range(0, len(text), 7):
            prefix = text[:cut]
            try:
                parse_scenario(prefix, "cut.yaml")
            except ScenarioError as e:
                line = int(str(e).split(":")[1])
                assert 1 <= line <= prefix.count("\n") + 1, (f.name, cut, str(e))


def test_a_bad_character_after_an_odd_line_break_is_on_line_1() -> None:
    bad("\x85\x00", 1, "U+0000")  # found by the fuzz test: splitlines counted U+0085
    bad("a\r\nb\rc\x00", 3, "U+0000")
