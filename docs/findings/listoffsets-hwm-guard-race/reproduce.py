"""Reproduce the ListOffsets HWM-guard race on a real cluster, on demand, with a plain client.

docs/findings/listoffsets-hwm-guard-race.md: Partition.fetchOffsetForTimestamp reads the high
watermark twice (read #1 -> the answer, read #2 -> the KIP-207 guard `epochStart > HWM`)
with no lock that keeps a follower fetch from advancing the HWM in between. A new leader
whose HWM is still below the start of its epoch must refuse ListOffsets(LATEST,
READ_UNCOMMITTED) with OFFSET_NOT_AVAILABLE; if the HWM moves between the reads, it answers
the stale read #1 instead: an end offset below the one the old leader gave, at a later
leader epoch.

The program holds the interleaving open with the JDK's debugger instead of waiting for luck:

1. 3 brokers + 1 controller; broker 2 (the next leader) runs with a JDWP agent
   (KAFKA_CHAOS_JVM_OPTS_NODE2, harness/cluster/backends/base.py). Topic t on [1, 2, 3],
   replica.lag.time.max.ms 60 s (no ISR change while a thread is held: see the write-up).
2. 5 records acks=all; the 3 <-> 2 link cut (3 still fetches from leader 1); 3 more records
   acks=all; the client reads the end offset from leader 1: 8 at epoch e ("before").
3. Broker 1 killed (kill -9) right away: the followers' HWM is 5 (they learn 8 only in a
   later fetch response, up to replica.fetch.wait.max.ms later). The controller fences it
   and elects 2 at epoch e+1: LEO 8 = the epoch start, HWM 5, and 3 cannot fetch from it.
   The guard is checked closed (the observer's ListOffsets gets no HWM) and the client
   reads once more (its view of the guard).
4. jdb attaches to broker 2: `stop thread at kafka.cluster.Partition:<line after read #1>`
   (found in the build's jar by javap: jdb.py). The client asks again: the handler thread
   stops after read #1 (lastFetchableOffset = 5, printed by jdb); only that thread is
   suspended. The breakpoint is cleared, the link healed: 3 fetches from 2 (read lock only,
   as the held thread: it is not blocked) and 2's HWM reaches 8 (polled by the observer on
   its own connection). The thread is resumed: read #2 sees 8, the guard passes, the answer
   is read #1's 5 at epoch e+1.

    python docs/findings/listoffsets-hwm-guard-race/reproduce.py [--kafka-version 4.4.0]
        [--client consumer|admin] [--attempts 3]

--client consumer: confluent-kafka Consumer.get_watermark_offsets(cached=False), isolation
read_uncommitted (the epoch is the metadata's). --client admin: AdminClient.list_offsets(latest,
READ_UNCOMMITTED), whose answer carries the leader epoch itself; NOT WORKING yet: on 4.4.0 its
read while the guard was closed gave offset -1001 without an error after 5 s, and its held
read never reached broker 2 within 60 s (exit 2). --control: the same steps without holding
the thread (exit 0 expected).
Exit 1: the client read an end offset below one it read before at a later leader epoch
(reproduced); 0: it did not (the guard held); 3: UNSUPPORTED (the reason is printed);
2: a harness error, or the precondition (a new leader whose HWM is below its epoch start)
was not reached in --attempts clusters. result.json in the run directory has every step.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

# This checkout's harness (not another installed one), and jdb.py beside this file.
sys.path[:0] = [str(Path(__file__).resolve().parents[3]), str(Path(__file__).resolve().parent)]
from jdb import Jdb, Unsupported, find_breakpoint  # noqa: E402

from harness.client.session import open_session  # noqa: E402
from harness.client.testing import TOPIC, create_topic, wait_state  # noqa: E402
from harness.cluster import builds  # noqa: E402
from harness.cluster.backends.base import DEBUG_JVM_OPTS_ENV  # noqa: E402
from harness.cluster.topology import ClusterShape  # noqa: E402
from harness.infra.errors import HarnessError  # noqa: E402
from harness.infra.wait import until  # noqa: E402

HERE = Path(__file__).resolve().parent
FIRST, MORE = 5, 3  # records before the cut, records the new leader's HWM does not cover
LEADER, NEXT, THIRD = 1, 2, 3


class NotReached(Exception):
    """The precondition was not reached on this cluster (try another)."""


class EndOffsets:
    """A plain client's end offset of t-0: (offset, leader epoch or None, error)."""

    def __init__(self, mode: str, bootstrap: str) -> None:
        self.mode = mode
        self.tp = TopicPartition(TOPIC, 0)
        if mode == "consumer":
            self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lo-race",
                                      "isolation.level": "read_uncommitted",
                                      "enable.auto.commit": False, "log_level": 0})
        else:
            self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

    def read(self, timeout_s: float) -> dict[str, Any]:
        t0 = time.time()
        out: dict[str, Any] = {"t": round(t0, 3), "offset": None, "epoch": None, "error": None}
        try:
            if self.mode == "consumer":
                # The consumer's metadata first (as after a NOT_LEADER error): librdkafka
                # asks the leader its cache names, which a killed leader leaves stale.
                self.consumer.list_topics(TOPIC, timeout=timeout_s)
                _, high = self.consumer.get_watermark_offsets(self.tp, timeout=timeout_s,
                                                              cached=False)
                out["offset"] = high
            else:
                fut = self.admin.list_offsets({self.tp: OffsetSpec.latest()},
                                              isolation_level=IsolationLevel.READ_UNCOMMITTED,
                                              request_timeout=timeout_s)
                info = fut[self.tp].result(timeout=timeout_s + 5)
                out["offset"], out["epoch"] = info.offset, info.leader_epoch
        except Exception as exc:  # noqa: BLE001 - an error is the client's view too
            out["error"] = f"{type(exc).__name__}: {exc}"[:300]
        out["took_s"] = round(time.time() - t0, 3)
        return out

    def close(self) -> None:
        if self.mode == "consumer":
            self.consumer.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def attempt(build: builds.Build, mode: str, run_dir: Path, line: int | None,
            note: Any) -> dict[str, Any]:
    port = free_port()
    os.environ[DEBUG_JVM_OPTS_ENV.format(node=NEXT)] = (
        f"-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:{port}")
    shape = ClusterShape(brokers=3, controllers=1,
                         broker_config={"replica.lag.time.max.ms": "60000"})
    out: dict[str, Any] = {"run_dir": str(run_dir), "breakpoint_line": line}
    with open_session(build, shape, run_dir) as session:
        obs, faults = session.observer, session.faults
        create_topic(obs, [LEADER, NEXT, THIRD], min_isr=1)
        bootstrap = session.cluster.client_bootstrap()
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                             "log_level": 0})
        client = EndOffsets(mode, bootstrap)
        jdb = Jdb(port, run_dir / "jdb.log")
        try:
            for i in range(FIRST):
                producer.produce(TOPIC, value=f"r{i}".encode())
            if producer.flush(30):
                raise HarnessError("the first records were not acknowledged")
            s0 = wait_state(obs, lambda s: s["hwm"] == FIRST, f"HWM {FIRST} on leader 1")
            out["first_read"] = {**client.read(15), "metadata_epoch": s0["leader_epoch"]}
            note("first records acked", state=s0, read=out["first_read"])
            faults.cut(THIRD, NEXT)
            for i in range(FIRST, FIRST + MORE):
                producer.produce(TOPIC, value=f"r{i}".encode())
            if producer.flush(30):
                raise HarnessError("the later records were not acknowledged")
            before = client.read(15)
            faults.kill(LEADER)
            before["metadata_epoch"] = s0["leader_epoch"]
            out["before"] = before
            note("3 more records acked, end offset read from leader 1, leader 1 killed",
                 read=before)
            s1 = wait_state(obs, lambda s: s["leader"] == NEXT
                            and s["leader_epoch"] > s0["leader_epoch"], "broker 2 leads",
                            timeout_s=30)
            out["new_leader_state"] = s1
            note("broker 2 leads", state=s1)
            if s1["hwm"] is not None or s1.get("hwm_below") != FIRST + MORE:
                raise NotReached(f"broker 2 became leader with HWM {s1['hwm']} (hidden below "
                                 f"{s1.get('hwm_below')}): it had learned HWM "
                                 f"{FIRST + MORE} before leader 1 was killed")
            out["guard_read"] = {**client.read(5), "metadata_epoch": s1["leader_epoch"]}
            note("the client's read while the guard is closed", read=out["guard_read"])
            out.update(held_read(jdb, client, obs, faults, line, s1["leader_epoch"], note))
            out["after"]["metadata_epoch"] = s1["leader_epoch"]
            out["later_read"] = {**client.read(15), "metadata_epoch": s1["leader_epoch"]}
            note("a later read", read=out["later_read"])
        finally:
            jdb.close()
            client.close()
        log = session.cluster.log_path(NEXT).read_text(errors="replace").splitlines()
        out["broker2_leader_lines"] = [x for x in log if "starts at leader epoch" in x
                                       and f"{TOPIC}-0" in x][-2:]
    return out


def held_read(jdb: Jdb, client: EndOffsets, obs: Any, faults: Any, line: int | None,
              epoch: int,
              note: Any) -> dict[str, Any]:
    """Steps 4-5: the client's request held after HWM read #1 while the HWM advances.
    ``line`` None (--control): the same without the debugger: the link healed, the HWM
    polled until it reaches the epoch start, then the client's read."""
    if line is None:
        faults.heal()
        hwm = until(lambda: obs.hwm(TOPIC, 0, NEXT, epoch)[0], lambda h: h == FIRST + MORE,
                    "broker 2's HWM reaches the epoch start", timeout_s=30)
        read = client.read(15)
        note("control: link healed, HWM advanced, the client's read", hwm=hwm, read=read)
        return {"held": None, "after": read}
    at = jdb.send(f"stop thread at kafka.cluster.Partition:{line}")
    jdb.wait_for(r"Set breakpoint|Deferring breakpoint", 30, at)
    result: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: result.update(client.read(90)), daemon=True)
    reader.start()
    since, seen = at, []
    while True:
        hit = jdb.wait_for(r'Breakpoint hit: (?:\S+ )?"thread=([^"]+)"', 60, since)
        since = hit.end()
        thread = hit.group(1)
        tid = jdb.select(thread)
        found = jdb.locals(["timestamp$1", "lastFetchableOffset"])
        seen.append(found["timestamp$1"])
        if found["timestamp$1"] == "-1":  # LATEST (a consumer also asks EARLIEST, -2)
            break
        jdb.send(f"resume {tid}")
    read1 = found["lastFetchableOffset"]
    note("handler thread held after HWM read #1", thread=thread, read1=read1,
         timestamps_seen=seen)
    jdb.wait_for(r"Removed|Not found", 15, jdb.send(f"clear kafka.cluster.Partition:{line}"))
    faults.heal()
    t0 = time.time()
    hwm = until(lambda: obs.hwm(TOPIC, 0, NEXT, epoch)[0], lambda h: h == FIRST + MORE,
                "broker 2's HWM reaches the epoch start", timeout_s=30)
    advanced_s = round(time.time() - t0, 3)
    note("link 3-2 healed, broker 2's HWM advanced while the thread is held", hwm=hwm,
         after_s=advanced_s)
    jdb.send(f"resume {tid}")
    reader.join(60)
    if reader.is_alive():
        raise HarnessError("the held client read did not return within 60 s of its release")
    note("thread released; the client's answer", read=result)
    return {"held": {"thread": thread, "read1": read1, "timestamps_seen": seen,
                     "hwm_seen_while_held": hwm, "hwm_advanced_after_heal_s": advanced_s},
            "after": result}


def verdict(out: dict[str, Any]) -> bool:
    """Whether the client read an end offset below one it read before at a later epoch."""
    before, after = out["before"], out["after"]
    if before.get("offset") is None or after.get("offset") is None:
        return False
    epoch_b = before.get("epoch") if before.get("epoch") is not None else before["metadata_epoch"]
    epoch_a = after.get("epoch") if after.get("epoch") is not None else after["metadata_epoch"]
    return bool(after["offset"] < before["offset"] and epoch_a >= epoch_b)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-version")
    ap.add_argument("--kafka-dist")
    ap.add_argument("--client", default="consumer", choices=("consumer", "admin"))
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--control", action="store_true",
                    help="the same steps without holding the thread (expected: exit 0)")
    ap.add_argument("--runs-dir", type=Path, default=HERE / "runs")
    args = ap.parse_args(argv)
    build = builds.resolve(args.kafka_version or (None if args.kafka_dist else "4.4.0"),
                           args.kafka_dist)
    jars = sorted(build.libs.glob("kafka_2.1*.jar"))
    try:
        if not jars:
            raise Unsupported(f"no kafka_2.1x jar in {build.libs} (kafka.cluster.Partition)")
        bp = find_breakpoint(jars[0])
    except Unsupported as exc:
        print(f"UNSUPPORTED: {exc}")
        return 3
    print(f"breakpoint: {bp}", flush=True)
    results = []
    for n in range(1, args.attempts + 1):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        run_dir = (args.runs_dir / f"lo-race-{build.version}-{args.client}"
                                   f"{'-control' if args.control else ''}-{stamp}").resolve()
        run_dir.mkdir(parents=True)
        steps: list[dict[str, Any]] = []

        def note(what: str, steps: list[dict[str, Any]] = steps, **extra: Any) -> None:
            steps.append({"t": round(time.time(), 3), "what": what, **extra})
            print(f"[{time.strftime('%H:%M:%S')}] {what}"
                  + "".join(f" {k}={v}" for k, v in extra.items()), flush=True)

        record: dict[str, Any] = {"build": build.version, "client": args.client,
                                  "attempt": n, "breakpoint": bp.__dict__, "control": args.control,
                                  "steps": steps}
        try:
            record.update(attempt(build, args.client, run_dir,
                                  None if args.control else bp.line, note))
            record["reproduced"] = verdict(record)
        except NotReached as exc:
            record["not_reached"] = str(exc)
            note(f"precondition not reached: {exc}")
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
            (run_dir / "result.json").write_text(json.dumps(record, indent=1, default=str))
            raise
        (run_dir / "result.json").write_text(json.dumps(record, indent=1, default=str))
        results.append(record)
        if "reproduced" in record:
            b, a = record["before"], record["after"]
            print(f"before: end offset {b['offset']} (epoch {b.get('epoch')}, metadata epoch "
                  f"{b['metadata_epoch']}); guard: {record['guard_read']}; after: end offset "
                  f"{a['offset']} (epoch {a.get('epoch')}, metadata epoch "
                  f"{a['metadata_epoch']}); later: {record['later_read']['offset']}")
            print(("REPRODUCED" if record["reproduced"] else "NOT REPRODUCED")
                  + f": run directory {run_dir}")
            return 1 if record["reproduced"] else 0
    print(f"precondition not reached in {args.attempts} clusters")
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # noqa: BLE001 - never exit 1 (the finding) on an error
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
