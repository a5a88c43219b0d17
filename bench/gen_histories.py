"""Generate synthetic run histories (SCHEMA.md) for report tests and the report benchmark.

    python bench/gen_histories.py OUT_DIR --runs 20 --records 250000
Each run: produce/ack events, a few faults and observations, and a final read in which a
seeded fraction of acked records is missing (lost), duplicated or re-read above the HWM.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

BUILDS = ("3.9.1", "4.0.2", "4.1.2", "4.3.1")
SCENARIOS = ("last-replica-standing", "hwm-frozen-under-min-isr", "elr-maintenance")


def write_run(out: Path, index: int, records: int, seed: int, loss: float = 0.001,
              dup: float = 0.0005) -> Path:
    rng = random.Random(seed * 7919 + index)
    run_id = f"gen-{seed}-{index:04d}"
    run_dir = out / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    verdict = rng.choice(("CONFORMS", "CONFORMS", "CONFORMS", "DIVERGES", "UNSUPPORTED"))
    meta = {"schema_version": "1.1", "run_id": run_id,
            "scenario": {"name": SCENARIOS[index % len(SCENARIOS)], "file": None},
            "build": {"version": BUILDS[index % len(BUILDS)], "source": "generated",
                      "features": []},
            "backend": "local", "seed": seed, "profile": "kafka-4.1",
            "started_wall": 1.8e9 + index, "ended_wall": 1.8e9 + index + 30, "timings": {},
            "verdict": verdict, "versions": {}}
    (run_dir / "run.json").write_text(json.dumps(meta))
    seq = 0
    t = 1.8e9 + index

    def ev(kind: str, **fields: object) -> str:
        nonlocal seq, t
        seq += 1
        t += 0.001
        return json.dumps({"run_id": run_id, "seq": seq - 1, "t_wall": t, "t_mono": t,
                           "kind": kind, **fields}) + "\n"

    state = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3],
             "elr": [], "last_known_elr": [], "fenced": [], "hwm": 0}
    with open(run_dir / "events.jsonl", "w") as fh:
        fh.write(ev("run_start", schema_version="1.1"))
        for i in range(records):
            rid = f"{run_id}-r{i}"
            fh.write(ev("produce", record_id=rid, topic="t", partition=0, acks="all"))
            fh.write(ev("ack", record_id=rid, topic="t", partition=0, acks="all", offset=i,
                        error=None))
            if i % max(records // 8, 1) == 0:
                state = {**state, "hwm": i + 1}
                fh.write(ev("observation", topic="t", partition=0, state=state, source=1))
                fh.write(ev("fault", action=rng.choice(("kill", "isolate", "heal")), params={}))
        state = {**state, "hwm": records}
        fh.write(ev("observation", topic="t", partition=0, state=state, source=1))
        offset = 0
        for i in range(records):
            roll = rng.random()
            if roll < loss:
                continue  # lost
            rid = f"{run_id}-r{i}"
            fh.write(ev("consume", record_id=rid, topic="t", partition=0, offset=offset))
            offset += 1
            if roll > 1 - dup:
                fh.write(ev("consume", record_id=rid, topic="t", partition=0, offset=offset))
                offset += 1  # duplicate
        fh.write(ev("read", topic="t", partition=0, records=offset, complete=True))
        fh.write(ev("observation", topic="t", partition=0,
                    state={**state, "hwm": max(records - 2, 0)}, source=1))
        fh.write(ev("run_end", verdict=verdict))
    return run_dir


def write_mixed_run(out: Path, index: int, steps: int, seed: int,
                    read_events: bool = False) -> Path:
    """A run whose events interleave: three partitions produced, acked, observed and read
    in many short reads between other events, with offset gaps, duplicates, reads above the
    HWM, failed acks and HWM drops; for tests of the report's read and window logic. With
    `read_events` (schema 1.1) a `read` event closes every read; some reads are empty and
    some incomplete."""
    rng = random.Random(seed * 104729 + index)
    run_id = f"mixed-{seed}-{index:04d}"
    run_dir = out / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    schema = "1.1" if read_events else "1.0"
    meta = {"schema_version": schema, "run_id": run_id,
            "scenario": {"name": "mixed", "file": None},
            "build": {"version": BUILDS[index % len(BUILDS)], "source": "generated",
                      "features": []},
            "backend": "local", "seed": seed, "profile": "kafka-4.1",
            "started_wall": 1.9e9 + index, "ended_wall": 1.9e9 + index + 30, "timings": {},
            "verdict": "DIVERGES", "versions": {}}
    (run_dir / "run.json").write_text(json.dumps(meta))
    tps = [("t", 0), ("t", 1), ("u", 0)]
    lines = []

    def ev(kind: str, **fields: object) -> None:
        seq = len(lines)
        lines.append(json.dumps({"run_id": run_id, "seq": seq, "t_wall": 1.9e9 + seq / 1000,
                                 "t_mono": seq / 1000, "kind": kind, **fields}) + "\n")

    ev("run_start", schema_version=schema)
    for i in range(steps):
        topic, partition = rng.choice(tps)
        roll = rng.random()
        if roll < 0.3:
            ev("produce", record_id=f"r{i}", topic=topic, partition=partition, acks="all")
        elif roll < 0.55:
            failed = rng.random() < 0.1
            ev("ack", record_id=f"r{rng.randrange(i + 1)}", topic=topic, partition=partition,
               acks=rng.choice(("1", "all")), offset=None if failed else rng.randrange(200),
               error=rng.choice(("NOT_ENOUGH_REPLICAS", "")) if failed else None)
        elif roll < 0.9:
            offset = rng.randrange(150)
            count = rng.randrange(0 if read_events else 1, 25)
            for _ in range(count):  # one read
                ev("consume", record_id=f"r{rng.randrange(i + 1)}", topic=topic,
                   partition=partition, offset=offset)
                offset += 1 if rng.random() < 0.9 else rng.choice((0, 2, 5, -3))
            if read_events:
                ev("read", topic=topic, partition=partition, records=count,
                   complete=rng.random() < 0.85)
        elif roll < 0.97:
            hwm = rng.randrange(160)
            ev("observation", topic=topic, partition=partition, source=1,
               state={"leader": 1, "leader_epoch": 1, "replicas": [1, 2, 3], "isr": [1, 2],
                      "elr": [3], "last_known_elr": [], "hwm": hwm, "fenced": None})
        else:
            ev("fault", action=rng.choice(("kill", "isolate", "heal", "restart")), params={})
    ev("run_end", verdict="DIVERGES")
    (run_dir / "events.jsonl").write_text("".join(lines))
    return run_dir


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for i in range(args.runs):
        write_run(args.out, i, args.records, args.seed)


if __name__ == "__main__":
    main()
