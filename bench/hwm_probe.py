"""Probe for the transient HWM at failover (fixtures/scenarios/pending/README.md): one cluster,
many leader failovers right after an acks=all produce, every broker asked for its HWM
(ListOffsets LATEST, READ_UNCOMMITTED, replica id -1: what a consumer asks) every few ms.
Every answer is kept with the answering broker, the request version and the answer's leader
epoch, so a HWM that goes back can be told apart: a new leader really answering below what
the old one served, or an observer artifact.

Run: python bench/hwm_probe.py [VERSION] [--failovers N] [--fault isolate|kill]
Prints a summary; answers are written to hwm-probe-answers.jsonl in --out (default: a temp dir).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from kafka.admin import OffsetSpec
from kafka.structs import TopicPartition

from harness.client import admin
from harness.client.session import Session, open_session
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.infra.wait import until

TOPIC = "t"
POLL_S = 0.003
ASK_S = 4.0  # how long after a fault every broker is asked


def ask(session: Session, node: int) -> dict[str, Any]:
    obs = session.observer
    client = obs.admin()
    tp = TopicPartition(TOPIC, 0)
    req = client._list_partition_offsets_request({tp: OffsetSpec.LATEST}, 0)
    t = time.time()
    try:
        resp = obs._send(node, req)
    except Exception as exc:  # noqa: BLE001 - a probe records every outcome
        return {"t": t, "node": node, "exc": type(exc).__name__}
    part = resp.topics[0].partitions[0]
    return {"t": t, "node": node, "version": getattr(resp, "version", None),
            "error": part.error_code, "offset": part.offset,
            "epoch": getattr(part, "leader_epoch", None)}


def poll_all(session: Session, until_t: float, out: list[dict[str, Any]]) -> None:
    while time.monotonic() < until_t:
        for node in (1, 2, 3):
            if session.cluster.is_running(node):
                out.append(ask(session, node))
        time.sleep(POLL_S)


def leader(session: Session) -> dict[str, Any]:
    return session.observer.partition_state(TOPIC)[0]


def one_failover(session: Session, producer: Producer, fault: str,
                 answers: list[dict[str, Any]], i: int) -> None:
    state = until(lambda: leader(session), lambda s: len(s["isr"]) == 3 and s["leader"] > 0,
                  "ISR back to 3", 60, 0.1)
    old = state["leader"]
    for n in range(3):
        producer.produce(TOPIC, f"{i}-{n}".encode(), partition=0)
    assert producer.flush(15) == 0, "produce not acked"
    got: list[dict[str, Any]] = []
    poller = threading.Thread(target=poll_all, args=(session, time.monotonic() + ASK_S, got))
    poller.start()
    time.sleep(0.05)
    if fault == "kill":
        session.faults.kill(old)
    else:
        session.faults.isolate(old)
    poller.join()
    for a in got:
        a.update(failover=i, old_leader=old)
    answers.extend(got)
    if fault == "kill":
        session.faults.restart(old)
    else:
        session.faults.heal()


def regressions(answers: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """Answers (without error) below the highest offset answered before them in the same
    failover by a leader of a lower or equal epoch."""
    out = []
    for i in sorted({a["failover"] for a in answers}):
        top: dict[int, int] = {}
        for a in sorted((a for a in answers if a["failover"] == i), key=lambda a: a["t"]):
            if a.get("error") != 0 or a.get("epoch") is None:
                continue
            before = [v for e, v in top.items() if e <= a["epoch"]]
            if before and a["offset"] < max(before):
                out.append((a, max(before)))
            top[a["epoch"]] = max(top.get(a["epoch"], 0), a["offset"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("version", nargs="?")
    ap.add_argument("--failovers", type=int, default=20)
    ap.add_argument("--fault", choices=["isolate", "kill"], default="isolate")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    build = builds.resolve(args.version)
    out = args.out or Path(tempfile.mkdtemp(prefix="hwm-probe-"))
    answers: list[dict[str, Any]] = []
    with open_session(build, ClusterShape(), out / "run") as s:
        admin.create_topic(s.observer, TOPIC, [1, 2, 3], {"min.insync.replicas": "2"})
        producer = Producer({"bootstrap.servers": s.cluster.client_bootstrap(), "acks": "all",
                             "linger.ms": 0, "log_level": 3})
        for i in range(args.failovers):
            one_failover(s, producer, args.fault, answers, i)
            print(f"failover {i + 1}/{args.failovers}: {len(answers)} answers", flush=True)
    with (out / "hwm-probe-answers.jsonl").open("w") as f:
        for a in answers:
            f.write(json.dumps(a) + "\n")
    errors: dict[Any, int] = {}
    for a in answers:
        errors[a.get("error", a.get("exc"))] = errors.get(a.get("error", a.get("exc")), 0) + 1
    print(f"Kafka {build.version}, {args.fault}: {len(answers)} answers, by error: {errors}")
    found = regressions(answers)
    print(f"HWM below an earlier answer of the same or a lower epoch: {len(found)}")
    for a, before in found[:20]:
        print(f"  {a} (earlier {before})")
    print(f"answers: {out / 'hwm-probe-answers.jsonl'}")


if __name__ == "__main__":
    main()
