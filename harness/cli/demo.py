"""The placeholder main job: kill the leader of a 3-broker cluster and show what survived."""

from __future__ import annotations

import time
from pathlib import Path

from harness.client import admin
from harness.client.session import open_session
from harness.cluster.builds import Build
from harness.cluster.topology import ClusterShape
from harness.infra.history import new_run_id
from harness.infra.wait import until

TOPIC = "demo"


def run(build: Build, runs_dir: Path, backend: str, records: int = 50) -> int:
    run_dir = runs_dir / new_run_id("demo")
    with open_session(build, ClusterShape(brokers=3, controllers=1), run_dir, backend) as s:
        admin.create_topic(s.observer, TOPIC, [1, 2, 3], {"min.insync.replicas": "2"})
        before = until(lambda: s.observer.partition_state(TOPIC)[0],
                       lambda st: len(st["isr"]) == 3, "topic with a full ISR")
        acks = s.workload.produce(TOPIC, records, acks="all")
        acked = {a.record_id for a in acks if a.error is None}
        print(f"produced {records} records with acks=all: {len(acked)} acknowledged")
        print(f"before: {_fmt(before)}")
        leader = before["leader"]
        t0 = time.monotonic()
        s.faults.kill(leader)
        print(f"SIGKILL broker {leader} (the leader)")
        after = until(lambda: s.observer.partition_state(TOPIC)[0],
                      lambda st: st["leader"] not in (-1, leader) and leader not in st["isr"],
                      "a new leader", timeout_s=60)
        print(f"after {time.monotonic() - t0:.1f}s: {_fmt(after)}")
        visible = {rid for _, rid in s.workload.consume_all(TOPIC)}
        lost = acked - visible
        print(f"consumer sees {len(visible)} records; acknowledged records lost: {len(lost)}")
        s.history.close("CONFORMS" if not lost else "DIVERGES")
    print(f"history: {run_dir}")
    return 0 if not lost else 1


def _fmt(state: dict[str, object]) -> str:
    return (f"leader={state['leader']} epoch={state['leader_epoch']} isr={state['isr']} "
            f"elr={state['elr']} last_known_elr={state['last_known_elr']} hwm={state['hwm']}")
