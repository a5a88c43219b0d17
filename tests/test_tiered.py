"""Tiered storage (issue 45 items 1 and 2): the cluster setting and its bad input, the
remote tier as files, and the tiered checks on crafted histories where each fails (and a
history where it passes)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from harness.client.observe.storage import local_bytes_after, remote_segments
from harness.cluster import tiered
from harness.cluster.builds import Build, Features
from harness.infra.errors import BuildError
from harness.judge.tiered import (
    LOG_START_RULE,
    RETAINED_RULE,
    final_log_starts,
    log_start_findings,
    retained_in,
)
from harness.run.runner.tiered import check_tiered, tiered_gap
from harness.scenario.loader import ScenarioError, parse_scenario
from harness.traffic.checks import check_events

TIERED = """version: 1
name: tiered
cluster:
  brokers: 3
  tiered_storage: true
topic:
  name: t
  replicas: [1, 2, 3]
  min_insync_replicas: 2
  config:
    remote.storage.enable: "true"
    retention.bytes: "1000"
steps:
  - sleep: {seconds: 1}
"""


def _build(version: str) -> Build:
    return Build(version, f"dist:/x/{version}", Path("/nonexistent"),
                 Features(False, False, False, True, False, False, True))


def test_tiered_storage_is_a_cluster_setting_with_its_line() -> None:
    sc = parse_scenario(TIERED, "t.yaml")
    assert sc.cluster.tiered_storage is True
    assert sc.cluster.line("tiered_storage") == 5


def test_remote_storage_topic_config_needs_tiered_cluster() -> None:
    text = TIERED.replace("  tiered_storage: true\n", "")
    with pytest.raises(ScenarioError, match=r"t\.yaml:10: topic\.config: remote\.storage"
                                            r"\.enable: tiered storage's topic configs need "
                                            r"cluster\.tiered_storage: true"):
        parse_scenario(text, "t.yaml")


def test_tiered_storage_must_be_a_boolean() -> None:
    with pytest.raises(ScenarioError, match=r"t\.yaml:5: cluster\.tiered_storage"):
        parse_scenario(TIERED.replace("tiered_storage: true", "tiered_storage: 3"), "t.yaml")


def test_a_build_without_kip405_is_refused_with_the_line_before_any_cluster() -> None:
    sc = parse_scenario(TIERED, "t.yaml")
    with pytest.raises(BuildError, match=r"t\.yaml:5: cluster\.tiered_storage: Kafka 3\.5\.2 "
                                         r"has no tiered storage"):
        check_tiered(sc, _build("3.5.2"))


def test_tiered_storage_runs_on_the_local_and_docker_backends() -> None:
    sc = parse_scenario(TIERED, "t.yaml")
    assert tiered_gap(sc, "local") is None
    assert tiered_gap(sc, "docker") is None
    assert "not on k8s" in str(tiered_gap(sc, "k8s"))


def test_broker_props_use_local_tiered_storage_in_the_run_dir(tmp_path: Path) -> None:
    sc = parse_scenario(TIERED, "t.yaml")
    props = tiered.broker_props(sc.cluster, tmp_path)
    assert props["remote.log.storage.manager.class.name"].endswith(".LocalTieredStorage")
    assert props["rsm.config.dir"] == str(tmp_path / "remote")
    assert props["remote.log.storage.system.enable"] == "true"
    assert int(props["remote.log.manager.task.interval.ms"]) <= 1000


def test_a_build_without_its_own_test_jar_takes_an_older_one_of_its_major() -> None:
    assert tiered._candidates("4.4.0") == ["4.4.0", "4.3.1", "4.2.2"]
    assert tiered._candidates("3.6.2") == ["3.6.2"]


def _batch(base: int, records: int) -> bytes:
    """A v2 batch header (what the remote tier's reader looks at) and a body."""
    body = b"\0" * 40
    header = struct.pack(">qii", base, 15 + len(body), 0) + b"\x02" + b"\0" * 4 + b"\0\0"
    header += struct.pack(">i", records - 1)
    return header + body


def test_remote_segments_are_read_from_the_local_tiered_storage_layout(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0-2x7MMfnoQL6k2roW89be1g"
    pdir.mkdir()
    (pdir / "00000000000000000010-sB1DtXTNQI6-7qmOdbjsLA.log").write_bytes(
        _batch(10, 5) + _batch(15, 3))
    (pdir / "00000000000000000010-sB1DtXTNQI6-7qmOdbjsLA.index").write_bytes(b"x")
    (tmp_path / "t-00-2x7MMfnoQL6k2roW89be1g").mkdir()  # another partition's: not read
    other = tmp_path / "t-1-AAAAAAAAAAAAAAAAAAAAAA"
    other.mkdir()
    (other / "00000000000000000000-sB1DtXTNQI6-7qmOdbjsLA.log").write_bytes(_batch(0, 2))
    segs = remote_segments(tmp_path, "t", 0)
    assert [(s["base"], s["end"]) for s in segs] == [(10, 17)]
    assert segs[0]["bytes"] == 2 * len(_batch(0, 1))


def test_local_bytes_after_counts_segments_beyond_the_remote_tier(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"a" * 10)
    (part / "00000000000000000020.log").write_bytes(b"b" * 7)
    (part / "00000000000000000000.log.deleted").write_bytes(b"c" * 99)
    assert local_bytes_after(tmp_path, "t", 0, 17) == 7


def _storage(index: int | None, leader: int, log_start: int, retained: int,
             t_wall: float) -> dict[str, Any]:
    return {"kind": "storage", "index": index, "topic": "t", "partition": 0,
            "leader": leader, "log_start": log_start, "local_log_start": log_start,
            "log_end": 5000, "retained_bytes": retained, "t_wall": t_wall}


def test_log_start_moved_by_a_leader_change_fails() -> None:
    """Crafted: the leader changes and the log start jumps from 0 to 3000 with 400 bytes
    retained under retention.bytes 1000: nothing retention does explains it."""
    sc = parse_scenario(TIERED, "t.yaml")
    events = [_storage(0, 1, 0, 5000, 10.0), _storage(1, 2, 3000, 400, 12.0)]
    found = log_start_findings(sc, events)
    assert [f["rule"] for f in found] == [LOG_START_RULE]
    assert "from 0 to 3000 at step 2, the leader changed from 1 to 2" in found[0]["why"]


def test_log_start_moved_by_retention_bytes_passes() -> None:
    sc = parse_scenario(TIERED, "t.yaml")
    events = [_storage(0, 1, 0, 5000, 10.0), _storage(1, 2, 3000, 1200, 12.0),
              _storage(None, 2, 3000, 1300, 13.0)]
    assert log_start_findings(sc, events) == []


def test_log_start_with_unlimited_retention_may_never_move() -> None:
    sc = parse_scenario(TIERED.replace('    retention.bytes: "1000"\n', ""), "t.yaml")
    events = [_storage(0, 1, 0, 5000, 10.0), _storage(1, 1, 10, 10**9, 20.0)]
    assert [f["rule"] for f in log_start_findings(sc, events)] == [LOG_START_RULE]


def test_log_start_by_retention_ms_once_the_topic_is_older() -> None:
    sc = parse_scenario(TIERED.replace('retention.bytes: "1000"', 'retention.ms: "5000"'),
                        "t.yaml")
    young = [_storage(0, 1, 0, 0, 10.0), _storage(1, 1, 10, 0, 12.0)]
    old = [_storage(0, 1, 0, 0, 10.0), _storage(1, 1, 10, 0, 16.0)]
    assert log_start_findings(sc, young) and not log_start_findings(sc, old)


def _traffic(read: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"kind": "producer", "producer": "p0", "acks": "all",
                                  "idempotent": True}]
    for i in range(6):
        out.append({"kind": "send", "producer": "p0", "seq": i, "id": f"r{i}", "topic": "t",
                    "partition": 0})
        out.append({"kind": "ack", "producer": "p0", "seq": i, "id": f"r{i}", "topic": "t",
                    "partition": 0, "offset": i})
    for rid in read:
        out.append({"kind": "final_read", "topic": "t", "partition": 0,
                    "offset": int(rid[1:]), "id": rid})
    out.append({"kind": "final_read_end", "topic": "t", "partition": 0, "complete": True})
    return [{**e, "n": n, "t": float(n)} for n, e in enumerate(out)]


def test_acked_record_within_retention_missing_fails() -> None:
    """Crafted: log start 3, and r4 (offset 4) is missing from the read from the earliest."""
    found = retained_in(_traffic(["r3", "r5"]), {("t", 0): 3})
    assert [f["rule"] for f in found] == [RETAINED_RULE]
    assert [r["id"] for r in found[0]["records"]] == ["r4"]


def test_records_below_the_log_start_are_deleted_by_retention_not_lost() -> None:
    traffic = _traffic(["r3", "r4", "r5"])
    assert retained_in(traffic, {("t", 0): 3}) == []
    summaries = {s.name: s for s in check_events(traffic, retained={("t", 0): 3})}
    assert summaries["lost_writes"].ok
    assert summaries["lost_writes"].counts["deleted_by_retention"] == 3
    assert not {s.name: s for s in check_events(traffic)}["lost_writes"].ok


def test_final_log_start_is_the_last_observed() -> None:
    events = [_storage(0, 1, 0, 1, 1.0), _storage(None, 1, 7, 1, 2.0),
              {"kind": "storage", "index": None, "topic": "t", "partition": 0, "error": "x"}]
    assert final_log_starts(events) == {("t", 0): 7}


# --- KIP-1303 on the observed local logs ------------------------------------------------

KIP1303 = """version: 1
name: kip1303-tiered
cluster:
  brokers: 3
  tiered_storage: true
  broker_config:
    leader.election.eligible.local.log.ms: "15000"
topic:
  name: t
  replicas: [1, 2, 3]
  min_insync_replicas: 2
  config:
    remote.storage.enable: "true"
steps:
  - stop: {broker: 1}
"""


def test_local_log_facts_read_the_first_local_record_time_and_the_size(tmp_path: Path) -> None:
    from harness.client.observe.storage import local_log_facts
    part = tmp_path / "t-0"
    part.mkdir()
    first = _batch(100, 2)
    first = first[:27] + struct.pack(">q", 1_700_000_000_123) + first[35:]
    (part / "00000000000000000100.log").write_bytes(first)
    (part / "00000000000000000102.log").write_bytes(b"x" * 9)
    (part / "00000000000000000000.log.deleted").write_bytes(b"y" * 99)
    assert local_log_facts(tmp_path, "t", 0) == (1_700_000_000_123, len(first) + 9)
    assert local_log_facts(tmp_path, "u", 0) == (None, 0)


def test_kip1303_is_the_kip_of_a_tiered_cluster_that_configures_it() -> None:
    from harness.judge.tiered import kip_profile
    assert kip_profile(parse_scenario(KIP1303, "k.yaml")).name == "kip1303"
    plain = KIP1303.replace('    leader.election.eligible.local.log.ms: "15000"\n', "")
    assert kip_profile(parse_scenario(plain.replace("  broker_config:\n", ""), "k.yaml")) is None


def _kip_verdict(ages: dict[str, int], leader: int) -> Any:
    """A crafted history: the storage event before ``stop 1`` saw these local-log ages,
    and the cluster elected ``leader``; the kip axis under KIP-1303."""
    from harness.judge.axes import KipJudge
    from harness.judge.compare import model_for
    from harness.judge.lockstep import kip_steps
    from harness.judge.tiered import kip_profile, local_log_steps
    from harness.scenario.steps import StepOutcome
    from reference import PartitionState
    from reference.releases.catalog import PROFILES
    sc = parse_scenario(KIP1303, "k.yaml")
    judge = KipJudge(lambda prof: model_for(sc, prof, True), PROFILES["kafka-4.3"], True,
                     lambda pred, outcome: None, (), kip_profile(sc))
    storage = {"kind": "storage", "local_logs": {
        r: {"start_ms": 0, "bytes": 1000, "age_ms": a} for r, a in ages.items()}}
    observed = PartitionState(replicas=(1, 2, 3), leader=leader, leader_epoch=1,
                              isr=frozenset({2, 3}), elr=frozenset(),
                              last_known_elr=frozenset(), hwm=0, fenced=frozenset({1}))
    kip_steps(judge, 0, sc.steps[0].step, observed, StepOutcome(), None,
              local_log_steps(storage))
    return judge.verdict()


def test_kip1303_young_follower_elected_is_the_cited_deviation() -> None:
    """Crafted: broker 2's local log is 3 s old (< 15 s): KIP-1303 elects 3; the cluster
    elected 2, which only no-kip1303 explains."""
    v = _kip_verdict({"1": 30_000, "2": 3_000, "3": 30_000}, leader=2)
    assert v.verdict == "DEVIATES"
    assert [d["deviation"] for d in v.details] == ["no-kip1303"]


def test_kip1303_with_every_local_log_old_enough_conforms() -> None:
    assert _kip_verdict({"1": 30_000, "2": 25_000, "3": 30_000}, leader=2).verdict == "CONFORMS"
    assert _kip_verdict({"1": 30_000, "2": 3_000, "3": 30_000}, leader=3).verdict == "CONFORMS"


def test_a_test_jar_maven_has_cached_as_missing_is_remembered(tmp_path: Path,
                                                               monkeypatch: Any) -> None:
    """4.4.0 publishes no test jar: once Maven cached the miss, its error's tail (what the
    harness keeps) no longer says "Could not find artifact"; the miss must be remembered
    anyway, or every run of 4.4.0 asks Maven again (seen: 22 asks of 17-50 s in one hunt)."""
    from harness.cluster import javaprogram
    from harness.infra.errors import HarnessError
    asked: list[str] = []
    tail = ("[ERROR]   org.apache.kafka:kafka-storage:jar:4.4.0\n[ERROR] \n[ERROR] from the "
            "specified remote repositories:\n[ERROR]   central (https://repo.maven.apache.org/"
            "maven2, releases=true, snapshots=false)\n[ERROR] -> [Help 1]")

    def fake(coordinate: str) -> Path:
        asked.append(coordinate)
        if ":4.4.0:" in coordinate:
            raise HarnessError(f"Maven could not fetch {coordinate}:\n{tail}")
        return tmp_path / "4.3.1.jar"
    monkeypatch.setattr(javaprogram, "maven_jar", fake)
    monkeypatch.setattr(tiered, "cache_dir", lambda *parts: tmp_path.joinpath(*parts))
    (tmp_path / "kafka-storage" / "4.4.0").mkdir(parents=True)
    build = _build("4.4.0")
    assert tiered.rsm_jar(build)[1] == "4.3.1"
    assert tiered.rsm_jar(build)[1] == "4.3.1"
    assert [c for c in asked if ":4.4.0:" in c] == ["org.apache.kafka:kafka-storage:4.4.0:jar:test"]
