"""Bad storage input refused with the file and line, and the fix, before any cluster starts
(issue 45 "Done when"): tiered settings on a cluster without tiered storage (a topic's,
create_topic's and alter_config's topic configs, a cluster-scope alter_config's and
cluster.broker_config's broker configs), tiered storage on a build without it, a log
directory that does not exist (fail_log_dir, move_replica_dir) and a move to an unknown
directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.builds import Build, Features
from harness.infra.errors import BuildError
from harness.run.runner.tiered import check_tiered
from harness.scenario.loader import ScenarioError, load_scenario, parse_scenario

HEAD = "version: 1\nname: s\ncluster:\n  brokers: 3\n"
TOPIC = "topic:\n  name: t\n  replicas: [1, 2, 3]\n  min_insync_replicas: 2\n"
FIX = r"need cluster\.tiered_storage: true \(add it under cluster:, or drop it"


def _parse(cluster: str = "", steps: str = "  - produce: {count: 1}\n") -> object:
    return parse_scenario(HEAD + cluster + TOPIC + "steps:\n" + steps, "s.yaml")


@pytest.mark.parametrize("steps, line, where, keys", [
    # line 10 is the step: the key's line (block style), the step's (flow style)
    ("  - alter_config: {scope: topic, config: {local.retention.ms: \"1000\"}}\n", 10,
     r"steps\[0\]\.alter_config\.config", "local.retention.ms"),
    ("  - alter_config:\n      scope: topic\n      config:\n        segment.ms: \"1000\"\n"
     "        remote.storage.enable: \"true\"\n", 14,
     r"steps\[0\]\.alter_config\.config", "remote.storage.enable"),
    ("  - alter_config:\n      scope: cluster\n      config:\n"
     "        log.local.retention.bytes: \"100\"\n", 13,
     r"steps\[0\]\.alter_config\.config", "log.local.retention.bytes"),
    ("  - alter_config: {scope: cluster, config: {remote.log.manager.task.interval.ms: "
     "\"500\"}}\n", 10, r"steps\[0\]\.alter_config\.config",
     r"remote\.log\.manager\.task\.interval\.ms"),
    ("  - create_topic:\n      topic: u\n      replicas: [1, 2]\n      min_insync_replicas: 1\n"
     "      config: {local.retention.bytes: \"1\"}\n", 14, r"steps\[0\]\.create_topic\.config",
     "local.retention.bytes"),
])
def test_tiered_configs_on_a_cluster_without_tiered_storage_are_refused_with_the_line(
        steps: str, line: int, where: str, keys: str) -> None:
    what = "broker" if "scope: cluster" in steps else "topic"
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:{line}: {where}: {keys}: tiered "
                                            rf"storage's {what} configs {FIX}"):
        _parse(steps=steps)


def test_tiered_broker_configs_in_broker_config_are_refused_with_the_line() -> None:
    cluster = "  broker_config:\n    num.io.threads: \"4\"\n    rsm.config.dir: /tmp/x\n"
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:7: cluster\.broker_config: "
                                            rf"rsm\.config\.dir: tiered storage's broker "
                                            rf"configs {FIX}"):
        _parse(cluster)


def test_the_same_configs_load_on_a_tiered_cluster_and_others_on_any() -> None:
    tiered = "  tiered_storage: true\n"
    sc = _parse(tiered, "  - alter_config: {scope: topic, config: {local.retention.ms: \"9\"}}\n"
                "  - alter_config: {scope: cluster, config: {log.local.retention.ms: \"9\"}}\n")
    assert [s.step.config for s in sc.steps] == [  # type: ignore[attr-defined]
        {"local.retention.ms": "9"}, {"log.local.retention.ms": "9"}]
    _parse(steps="  - alter_config: {scope: topic, config: {retention.ms: \"9\"}}\n"
           "  - alter_config: {scope: cluster, config: {log.retention.ms: \"9\"}}\n")


def test_a_file_with_tiered_configs_and_no_tiered_cluster_fails_to_load(tmp_path: Path) -> None:
    """What `kafka-chaos run` does first: load the file (no cluster exists yet)."""
    path = tmp_path / "bad.yaml"
    path.write_text(HEAD + TOPIC + "steps:\n  - alter_config:\n      scope: topic\n"
                    "      config:\n        remote.storage.enable: \"true\"\n")
    with pytest.raises(ScenarioError, match=rf"bad\.yaml:13: .*remote\.storage\.enable: .*"
                                            rf"{FIX}"):
        load_scenario(path)


def _build(version: str) -> Build:
    return Build(version, f"dist:/x/{version}", Path("/nonexistent"),
                 Features(False, False, False, True, False, False, True))


def test_tiered_storage_on_a_build_without_it_names_the_line_and_the_builds() -> None:
    sc = parse_scenario(HEAD + "  tiered_storage: true\n" + TOPIC
                        + "steps:\n  - produce: {count: 1}\n", "s.yaml")
    for version in ("3.5.2", "3.4.1", "2.8.2"):
        with pytest.raises(BuildError, match=rf"^s\.yaml:5: cluster\.tiered_storage: Kafka "
                                             rf"{version} has no tiered storage .* run it "
                                             r"with --kafka-version 3\.6\.0 or later"):
            check_tiered(sc, _build(version))  # type: ignore[arg-type]


LOG_DIRS = "  log_dirs: 2\n"


@pytest.mark.parametrize("step, error", [
    # a directory that does not exist: an index out of range
    ("fail_log_dir: {broker: 2, dir: 2}", r"steps\[0\]\.fail_log_dir\.dir: unknown log "
     r"directory 2: the brokers' directories are 0\.\.1 \(cluster\.log_dirs\), this step "
     r"takes 1\.\.1"),
    ("fail_log_dir: {broker: 2, dir: -1}",
     r"steps\[0\]\.fail_log_dir\.dir: unknown log directory -1: .*takes 1\.\.1"),
    # a move to an unknown directory
    ("move_replica_dir: {broker: 1, dir: 5}", r"steps\[0\]\.move_replica_dir\.dir: unknown "
     r"log directory 5: the brokers' directories are 0\.\.1 \(cluster\.log_dirs\), this step "
     r"takes 0\.\.1"),
    ("move_replica_dir: {broker: 1, dir: -1}", r"steps\[0\]\.move_replica_dir\.dir: unknown log "
     r"directory -1: .*takes 0\.\.1"),
    # of a broker that does not exist
    ("move_replica_dir: {broker: 7, dir: 1}",
     r"steps\[0\]\.move_replica_dir\.broker: 7 is not a broker \(brokers are 1\.\.3\)"),
])
def test_a_log_directory_that_does_not_exist_is_refused_with_the_line(step: str, error: str
                                                                      ) -> None:
    with pytest.raises(ScenarioError, match=rf"^s\.yaml:11: {error}"):
        _parse(LOG_DIRS, f"  - {step}\n")


def test_a_move_on_a_cluster_of_one_directory_says_how_to_get_several() -> None:
    with pytest.raises(ScenarioError, match=r"^s\.yaml:10: steps\[0\]\.move_replica_dir\.dir: "
                                            r".*one log directory per broker: give it several "
                                            r"with cluster\.log_dirs: N \(3\.7\+\)"):
        _parse(steps="  - move_replica_dir: {broker: 1, dir: 1}\n")


KIP950 = (HEAD + "  tiered_storage: true\n" + TOPIC
          + "  config:\n    remote.storage.enable: \"true\"\n"
          + "    remote.log.copy.disable: \"false\"\n"
          + "steps:\n  - alter_config: {scope: topic, config: {remote.log.delete.on.disable: "
          + "\"true\"}}\n")


def test_kip950_topic_configs_on_a_build_before_3_9_name_the_line(tmp_path: Path) -> None:
    """remote.log.copy.disable and remote.log.delete.on.disable (KIP-950) are unknown to
    3.6-3.8 controllers: refused with the key's line before any cluster starts."""
    from harness.run.runner.tiered import check_topic_keys
    path = tmp_path / "k.yaml"
    path.write_text(KIP950)
    sc = load_scenario(path)
    with pytest.raises(BuildError, match=r"k\.yaml:12: remote\.log\.copy\.disable: Kafka 3\.8\.1 "
                                         r"has no such topic config \(KIP-950, from 3\.9\.0.*"
                                         r"--kafka-version 3\.9\.0 or later, or drop the key"):
        check_topic_keys(sc, _build("3.8.1"))  # type: ignore[arg-type]
    check_topic_keys(sc, _build("3.9.1"))  # type: ignore[arg-type]
    path.write_text(KIP950.replace("    remote.log.copy.disable: \"false\"\n", ""))
    sc = load_scenario(path)
    with pytest.raises(BuildError, match=r"k\.yaml:13: remote\.log\.delete\.on\.disable: "
                                         r"Kafka 3\.6\.2 has no such"):
        check_topic_keys(sc, _build("3.6.2"))  # type: ignore[arg-type]
