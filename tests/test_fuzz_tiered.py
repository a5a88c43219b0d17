"""Generated tiered clusters (issue 45 item 4, `fuzz`/`hunt` ``--tiered``;
reference/search/tiered.py): every generated file on a tiered cluster loads through the
scenario loader with tiered storage and the topic's tiered configs, a build before 3.6
never gets one, the draw is deterministic for a seed, and --tiered 0 (the default) leaves
the schedules as they were."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from harness.cli import fuzz as fuzz_cli
from harness.cli import options
from harness.cluster.builds import Build, Features
from harness.infra.errors import UsageError
from harness.judge.datachecks import run_checks
from harness.scenario.loader import parse_scenario
from harness.search import fuzz
from reference.search.generators import Builds
from reference.search.tiered import (
    FIRST_VERSION,
    LOCAL_RETENTION_BYTES,
    RETENTION_BYTES,
    RETENTION_CHANCE,
    TieredTopic,
    draw_tiered,
    supports,
    tiered_weights,
)


def _build(version: str) -> Build:
    major = tuple(int(x) for x in version.split("."))
    features = Features(elr=major >= (4, 0), elr_default_on=major >= (4, 1),
                        describe_topic_partitions=True, hwm_rule=True, unclean_recovery=False,
                        kip1303=False, previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), features)


def _cfg(models: fuzz.CampaignModels, tiered: float, traffic: bool = True) -> Any:
    return fuzz.gen_config(length=8, traffic=traffic, tiered=tiered,
                           builds=Builds(models.build.version, models.build.version,
                                         models.catalog))


@pytest.mark.parametrize("version", ["3.6.2", "4.3.1"])
def test_tiered_schedules_load_with_tiered_storage_and_their_topic_configs(
        version: str) -> None:
    models = fuzz.model_factory(_build(version), {}, (version,))
    cfg = _cfg(models, tiered=1.0)
    kinds: set[str] = set()
    for index in range(8):
        steps = fuzz.schedule(models, 21, index, cfg)
        seed = fuzz.schedule_seed(21, index)
        cluster = fuzz.CLUSTERS.of(seed)
        assert cluster is not None and cluster.traffic is not None
        assert isinstance(cluster.tiered, TieredTopic)
        kinds |= {s.kind for s in steps}
        text = fuzz.scenario_yaml(f"t-{index}", seed, steps)
        sc = parse_scenario(text, f"<t-{index}>")  # the loader takes every one
        assert sc.cluster.tiered_storage
        assert [x.step for x in sc.steps] == list(steps)
        config = sc.topic.config
        assert config["remote.storage.enable"] == "true"
        assert config["segment.ms"] == str(cluster.tiered.segment_ms)
        assert config["local.retention.bytes"] == str(cluster.tiered.local_retention_bytes)
        retention = cluster.tiered.retention_bytes  # drawn on some: RETENTION_CHANCE
        assert config.get("retention.bytes") == (None if retention is None else str(retention))
    assert "kill" in kinds  # kills land during the uploads
    assert not kinds & {"delete_topic", "create_topic"}  # tiered_weights: off


def test_tiered_weights_favour_kills_and_leave_no_deletion() -> None:
    base = {"kill": 3, "restart": 3, "elect": 2, "sleep": 1, "produce": 6,
            "delete_topic": 1, "create_topic": 4, "lose_unflushed": 0}
    w = tiered_weights(base)
    assert w == {"kill": 6, "restart": 6, "elect": 4, "sleep": 3, "produce": 6,
                 "delete_topic": 0, "create_topic": 0, "lose_unflushed": 0}
    assert tiered_weights({"sleep": 0})["sleep"] == 0  # a kind turned off stays off


@pytest.mark.parametrize("version", ["3.4.1", "3.5.2", "2.8.2"])
def test_a_build_before_3_6_never_gets_a_tiered_cluster(version: str) -> None:
    assert not supports(version)
    assert all(draw_tiered(s, 1.0, version) is None for s in range(300))
    models = fuzz.model_factory(_build(version), {}, (version,))
    cfg = _cfg(models, tiered=1.0)
    for index in range(6):
        fuzz.schedule(models, 4, index, cfg)
        cluster = fuzz.CLUSTERS.of(fuzz.schedule_seed(4, index))
        assert cluster is not None and cluster.tiered is None
        assert "tiered" not in fuzz.scenario_yaml("x", fuzz.schedule_seed(4, index), ())


def test_the_draw_is_deterministic_for_a_seed_and_follows_the_chance() -> None:
    assert supports("3.6.2") and supports("4.4.0") and FIRST_VERSION == (3, 6, 0)
    drawn = [draw_tiered(s, 0.3, "4.3.1") for s in range(2000)]
    assert drawn == [draw_tiered(s, 0.3, "4.3.1") for s in range(2000)]
    share = sum(t is not None for t in drawn) / len(drawn)
    assert 0.25 < share < 0.35
    assert len({t for t in drawn if t is not None}) > 3  # segment.ms x local retention
    assert all(draw_tiered(s, 0.0, "4.3.1") is None for s in range(200))


def test_tiered_off_leaves_the_schedules_as_they_were() -> None:
    """--tiered 0 draws the clusters and schedules of before (its stream is its own)."""
    models = fuzz.model_factory(_build("4.3.1"), {}, ("4.3.1",))
    off = _cfg(models, tiered=0.0)
    on = _cfg(models, tiered=1.0)
    for i in range(4):
        plain = fuzz.schedule(models, 8, i, off)
        cp = fuzz.CLUSTERS.of(fuzz.schedule_seed(8, i))
        tiered = fuzz.schedule(models, 8, i, on)
        ct = fuzz.CLUSTERS.of(fuzz.schedule_seed(8, i))
        assert cp is not None and ct is not None and cp.tiered is None
        assert dataclasses.replace(ct, tiered=None) == cp
        assert len(plain) > 0 and len(tiered) > 0


def test_the_tiered_flag_needs_traffic_and_a_chance() -> None:
    with pytest.raises(UsageError, match="--traffic"):
        options.tiered_chance("fuzz", "0.5", traffic=False)
    with pytest.raises(UsageError, match="--tiered"):
        options.tiered_chance("hunt", "2", traffic=True)
    assert options.tiered_chance("fuzz", "0", traffic=False) == 0.0
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    fuzz_cli.add_subcommands(sub)
    args = parser.parse_args(["fuzz", "--seed", "1", "--runs", "1", "--traffic",
                              "--tiered", "0.4"])
    cfg, _ = fuzz_cli.parse_args(args)
    assert cfg.gen.tiered == 0.4 and cfg.gen.traffic


def test_a_remote_retention_is_drawn_on_about_half_the_tiered_topics() -> None:
    """Some tiered topics get ``retention.bytes`` (so remote segments are deleted and the
    log start advances during a run); never under the local retention, which Kafka
    refuses (LogConfig.validateRemoteStorageRetentionSize); deterministic for a seed."""
    drawn = [t for s in range(2000) if (t := draw_tiered(s, 1.0, "4.3.1")) is not None]
    assert drawn == [draw_tiered(s, 1.0, "4.3.1") for s in range(2000)]
    kept = [t for t in drawn if t.retention_bytes is not None]
    assert abs(len(kept) / len(drawn) - RETENTION_CHANCE) < 0.05
    assert all(t.retention_bytes in RETENTION_BYTES
               and t.retention_bytes >= t.local_retention_bytes for t in kept)
    assert {t.retention_bytes for t in kept} == set(RETENTION_BYTES)
    assert {t.local_retention_bytes for t in kept} == set(LOCAL_RETENTION_BYTES)
    # At the slowest generated producer (50 records/s, about 100 bytes a record on disk)
    # a partition passes the largest within a minute or two of traffic.
    assert max(RETENTION_BYTES) <= 50 * 100 * 90


def test_a_schedules_scenario_file_carries_its_remote_retention() -> None:
    models = fuzz.model_factory(_build("4.3.1"), {}, ("4.3.1",))
    cfg = _cfg(models, tiered=1.0)
    found = []
    for index in range(12):
        steps = fuzz.schedule(models, 5, index, cfg)
        seed = fuzz.schedule_seed(5, index)
        cluster = fuzz.CLUSTERS.of(seed)
        assert cluster is not None and cluster.tiered is not None
        sc = parse_scenario(fuzz.scenario_yaml(f"r-{index}", seed, steps), f"<r-{index}>")
        if cluster.tiered.retention_bytes is not None:
            found.append(index)
            assert sc.topic.config["retention.bytes"] == str(cluster.tiered.retention_bytes)
        else:
            assert "retention.bytes" not in sc.topic.config
    assert 2 <= len(found) <= 10


def _events(log_start: int | None) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [
        {"seq": i, "kind": "ack", "record_id": f"r{i}", "topic": "t", "partition": 0,
         "acks": "all", "offset": 100 * i, "error": None} for i in range(3)]
    ev.append({"seq": 3, "kind": "consume", "record_id": "r2", "topic": "t", "partition": 0,
               "offset": 200})
    ev.append({"seq": 4, "kind": "read", "topic": "t", "partition": 0, "complete": True})
    if log_start is not None:
        ev.append({"seq": 5, "kind": "storage", "index": None, "topic": "t", "partition": 0,
                   "log_start": log_start})
    return ev


def test_a_produce_steps_record_below_the_final_log_start_was_deleted_not_lost() -> None:
    """Retention deletes the schedule's own records too: below the partition's final log
    start (tiered runs only: their storage events) they are not lost; at or above, they are."""
    def lost(log_start: int | None) -> list[str]:
        check = next(c for c in run_checks(_events(log_start)) if c.name == "acked_lost")
        return [d["record_id"] for d in check.details]
    assert lost(None) == ["r0", "r1"]  # no storage events: not tiered, judged as before
    assert lost(50) == ["r1"]  # r0 (offset 0) below the log start: deleted by retention
    assert lost(200) == []
