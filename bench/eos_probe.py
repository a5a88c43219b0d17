"""Does an idempotent librdkafka producer write a record twice around its own message
timeouts? A standalone probe (not part of the harness): it produces numbered records to
its own topic (led by broker 1) on a harness-started cluster, with librdkafka's
`debug=eos,msg,protocol` log in a file, then reads the topic back and counts the ids
written at more than one offset. Results: bench/RESULTS-traffic.md ("Duplicates of the
idempotent librdkafka producer").

Start the cluster with `kafka-chaos run bench/eos_probe.yaml --runs-dir DIR` (it kills
broker 1, the probe topic's leader, for about its 15 s session, longer than the probe's
5 s message.timeout.ms), then, while it runs:

    python bench/eos_probe.py DIR OUT [--latency-broker 2 --latency-ms 1500 --latency-at 0
                                       --latency-s 45]

The latency options delay the answers of broker N (the leader after the kill) to this
producer through the run's Toxiproxy, so that the backlog's produce requests are still in
flight when their oldest records time out: that is what doubles records. The probe finds
the run directory under DIR, reads the CLIENT listener from the brokers'
server.properties, produces until the scenario's `restart` step has ended + 10 s (bounded
by --max-s), flushes, reads partition 0 back and writes OUT/summary.json, OUT/acks.jsonl
and OUT/librdkafka.log. Every wait is a bounded poll.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
    libversion,
    version,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]


def _bootstrap(runs: Path, limit_s: float) -> tuple[Path, str]:
    """The newest run dir under `runs` with brokers, and their CLIENT listeners (a bounded
    poll: the nodes' configs are written before the run ends)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        dirs = sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
        for run_dir in reversed(dirs):
            addrs = []
            for props in sorted(run_dir.glob("nodes/broker-*/server.properties")):
                m = re.search(r"^advertised\.listeners=.*CLIENT://([0-9.]+:\d+)",
                              props.read_text(), re.M)
                if m:
                    addrs.append(m.group(1))
            if addrs:
                return run_dir, ",".join(addrs)
        time.sleep(0.5)
    raise SystemExit(f"no run with brokers under {runs} after {limit_s} s")


def _toxiproxy(bootstrap: str, method: str, path: str, body: dict[str, Any] | None) -> None:
    """A call to the run's Toxiproxy API: <net>.<block>.0.254:8474 (harness/cluster/
    topology.py), the block read from a CLIENT address <net>.<block>.250.<broker>."""
    net, block = bootstrap.split(",")[0].split(".")[:2]
    req = urllib.request.Request(f"http://{net}.{block}.0.254:8474{path}", method=method,
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as answer:
        answer.read()


def _step_ended(run_dir: Path, kind: str) -> bool:
    events = run_dir / "events.jsonl"
    if not events.exists():
        return False
    for line in events.read_text().splitlines():
        if f'"{kind}"' in line and '"phase": "end"' in line and '"kind": "step"' in line:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--topic", default="eos")
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--timeout-ms", type=int, default=5000)
    ap.add_argument("--max-s", type=float, default=150.0)
    ap.add_argument("--latency-ms", type=int, default=0,
                    help="delay a broker's answers to this client by this much (Toxiproxy "
                         "latency toxic on the client->N proxy, downstream) ...")
    ap.add_argument("--latency-broker", type=int, default=1, help="... of broker N ...")
    ap.add_argument("--latency-at", type=float, default=10.0, help="... from this second")
    ap.add_argument("--latency-s", type=float, default=10.0, help="... for this long")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    run_dir, bootstrap = _bootstrap(args.runs, 300.0)
    log = logging.getLogger("librdkafka")
    handler = logging.FileHandler(args.out / "librdkafka.log")
    handler.setFormatter(logging.Formatter("%(created).3f %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    # The traffic producer's settings (harness/client/traffic.py ProducerLoop, _common),
    # with a shorter message timeout and the debug contexts.
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
        "linger.ms": 5, "batch.num.messages": 10_000, "queue.buffering.max.messages": 100_000,
        "message.timeout.ms": args.timeout_ms, "retry.backoff.ms": 100,
        "socket.timeout.ms": 4000, "topic.metadata.refresh.interval.ms": 1000,
        "metadata.max.age.ms": 3000, "reconnect.backoff.max.ms": 500,
        "debug": "eos,msg,protocol"}, logger=log)
    acks = (args.out / "acks.jsonl").open("w")
    sent = acked = failed = 0

    def report(err: KafkaError | None, msg: Any) -> None:
        nonlocal acked, failed
        seq = int(msg.value().decode().split(" ")[1])
        row: dict[str, Any] = {"seq": seq, "t": time.time()}
        if err is None:
            acked += 1
            row["offset"] = msg.offset()
        else:
            failed += 1
            row["error"] = err.name()
        acks.write(json.dumps(row) + "\n")

    # Its own topic (the scenario's is the harness's, judged against the model), led by
    # broker 1, which the scenario kills. Created once the harness has created its topic
    # (every broker is up then), so that broker 1, the first replica, leads it.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 120
    while True:
        try:
            if "t" in admin.list_topics(timeout=5).topics:
                break
        except KafkaException:  # the brokers are not up yet
            pass
        if time.monotonic() > deadline:
            raise SystemExit("the harness's topic t never appeared")
        time.sleep(0.5)
    admin.create_topics([NewTopic(args.topic, num_partitions=1,
                                  replica_assignment=[[1, 2, 3]],
                                  config={"min.insync.replicas": "2"})])[args.topic].result(60)
    deadline = time.monotonic() + 60
    while args.topic not in producer.list_topics(timeout=5).topics:
        if time.monotonic() > deadline:
            raise SystemExit("topic never appeared")
        time.sleep(0.5)
    leader = producer.list_topics(args.topic, timeout=5).topics[args.topic].partitions[0].leader
    if leader != 1:
        raise SystemExit(f"{args.topic}-0 is led by {leader}, not 1: the kill would miss it")
    start = time.monotonic()
    end = start + args.max_s
    restarted_at: float | None = None
    events: list[dict[str, float]] = []
    toxic = "none"  # none -> on -> off
    while time.monotonic() < end:
        now = time.monotonic() - start
        if args.latency_ms and toxic == "none" and now >= args.latency_at:
            _toxiproxy(bootstrap, "POST", f"/proxies/client->{args.latency_broker}/toxics",
                        {"name": "eos_probe", "type": "latency", "stream": "downstream",
                         "attributes": {"latency": args.latency_ms}})
            toxic = "on"
            events.append({"latency_on": time.time()})
        if toxic == "on" and now >= args.latency_at + args.latency_s:
            _toxiproxy(bootstrap, "DELETE",
                       f"/proxies/client->{args.latency_broker}/toxics/eos_probe", None)
            toxic = "off"
            events.append({"latency_off": time.time()})
        if restarted_at is None and sent % 200 == 0 and _step_ended(run_dir, "restart"):
            restarted_at = time.monotonic()
        if restarted_at is not None and time.monotonic() > restarted_at + 10:
            break
        producer.produce(args.topic, value=f"p {sent}".encode(), partition=0, on_delivery=report)
        sent += 1
        producer.poll(0)
        time.sleep(max(0.0, start + sent / args.rate - time.monotonic()))
    left = producer.flush(args.timeout_ms / 1000 + 10)
    acks.close()
    # Read partition 0 back from offset 0 to its high watermark (bounded).
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-probe",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    _, high = consumer.get_watermark_offsets(TopicPartition(args.topic, 0), timeout=10)
    consumer.assign([TopicPartition(args.topic, 0, 0)])
    offsets: dict[int, list[int]] = {}
    deadline = time.monotonic() + 60
    last = -1
    while last + 1 < high and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is None or m.error():
            continue
        offset, value = m.offset(), m.value()
        if offset is None or value is None:
            continue
        last = offset
        offsets.setdefault(int(value.decode().split(" ")[1]), []).append(offset)
    consumer.close()
    dups = {s: o for s, o in offsets.items() if len(o) > 1}
    outcome: dict[int, str] = {}
    for line in (args.out / "acks.jsonl").read_text().splitlines():
        row = json.loads(line)
        outcome[row["seq"]] = "acked" if "offset" in row else row["error"]
    dup_outcomes: dict[str, int] = {}
    positions: dict[int, int] = {}
    for s, o in dups.items():
        key = outcome.get(s, "unreported")
        dup_outcomes[key] = dup_outcomes.get(key, 0) + 1
        positions[len(o)] = positions.get(len(o), 0) + 1
    summary = {"confluent_kafka": version(), "librdkafka": libversion()[0],
               "run_dir": str(run_dir), "bootstrap": bootstrap, "sent": sent, "acked": acked,
               "failed": failed, "latency": events, "unreported": left, "high_watermark": high,
               "read_to": last, "ids_read": len(offsets), "duplicated_ids": len(dups),
               "duplicated_seqs": [min(dups), max(dups)] if dups else None,
               "duplicates_by_outcome": dup_outcomes, "positions_per_duplicate": positions,
               "extra_copies": sum(len(o) - 1 for o in dups.values()),
               "examples": {s: dups[s] for s in sorted(dups)[:5]}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
