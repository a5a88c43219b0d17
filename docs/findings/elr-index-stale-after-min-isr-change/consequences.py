"""Issue 42 item 3: what the stale broker-to-ELR index does to a running cluster, measured.

The scenario format has no topic deletion yet, so this program drives the cluster itself with
the harness's session (the cluster, fault, admin and observer code the runner uses):

1. 4 brokers + C controllers (1 or 3), ELR on; topic t on [1, 2, 3] with min ISR 3; topic
   `other` on [1, 2, 4] with min ISR 2, which the rest of the cluster uses throughout:
   an acks=all producer (20 records/s) and, every 2 s, a controller request (CreateTopics of a
   probe topic), each with its latency and error.
2. broker 3 killed (ISR [1, 2], ELR [3]); min.insync.replicas=2 on t (ClearElrRecord); t
   deleted; broker 3 started again: its registration is an unclean one.
3. For --retry-s seconds: the controllers' faults (`Renouncing leadership` in their logs),
   the quorum's leader and epoch each second (DescribeQuorum), whether broker 3 registered.
   Broker 3 gives up after initial.broker.registration.timeout.ms (60 s) and exits; it is
   started again each time, as a process supervisor would.
4. --end, what is tried to end it: `restart-controllers` (every controller restarted, one by
   one), `snapshot` (the same, after the controllers wrote a snapshot covering the deletion:
   metadata.log.max.snapshot.interval.ms is set low at the start), `unregister`
   (`kafka-cluster.sh unregister --id 3`), `stop-broker` (broker 3 shut down cleanly, then
   started again), or `none`; then up to --after-s seconds more of the same measurements.
5. The producer stopped; `other` read from the start: acks=all records acknowledged and not
   read back are lost.

    python docs/findings/elr-index-stale-after-min-isr-change/consequences.py \\
        [--kafka-version 4.3.1 | --kafka-dist DIR] [--controllers 1|3] [--retry-s 300] \\
        [--end restart-controllers|snapshot|unregister|stop-broker|none] [--control]

--control: the same without the min ISR change (broker 3 must register at once).
Writes result.json (every sample) in the run directory and prints a summary. Exit 1 when broker
3 never registered during the retry window (the finding), 0 when it did, 2 on a harness error.
Everything it started is stopped on the way out.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from harness.client import admin
from harness.client.session import open_session
from harness.client.testing import TOPIC, create_topic, state, wait_state
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.infra.errors import HarnessError
from harness.scenario.steps.unregister import unregister_broker

OTHER = "other"
FAULT = re.compile(r"Renouncing leadership")


class Traffic:
    """The rest of the cluster: an acks=all producer on `other` and controller requests."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sent: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "enable.idempotence": True, "linger.ms": 0,
                                  "message.timeout.ms": 30000, "log_level": 0})
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._ask_controller, daemon=True)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _produce(self) -> None:
        n = 0
        while not self.stop.is_set():
            entry: dict[str, Any] = {"id": f"r{n}", "t": time.time()}
            self.sent.append(entry)

            def done(err: Any, msg: Any, entry: dict[str, Any] = entry) -> None:
                entry["latency_s"] = round(time.time() - entry["t"], 3)
                entry["error"] = None if err is None else str(err)

            self.producer.produce(OTHER, value=entry["id"].encode(), on_delivery=done)
            self.producer.poll(0)
            n += 1
            self.stop.wait(0.05)
        self.producer.flush(40)

    def _ask_controller(self) -> None:
        n = 0
        while not self.stop.is_set():
            t0 = time.time()
            fut = self.admin.create_topics([NewTopic(f"probe-{n}", 1, 1)], request_timeout=15)
            try:
                fut[f"probe-{n}"].result(timeout=20)
                error = None
            except Exception as exc:  # noqa: BLE001 - recorded: this is the measurement
                error = str(exc)[:200]
            self.requests.append({"t": t0, "latency_s": round(time.time() - t0, 3),
                                  "error": error})
            n += 1
            self.stop.wait(2)

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def read_back(self) -> set[str]:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "read-back",
                             "enable.auto.commit": False, "log_level": 0})
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(OTHER, 0), timeout=30)
            consumer.assign([TopicPartition(OTHER, 0, 0)])
            seen: set[str] = set()
            deadline = time.time() + 120
            position = 0
            while position < high and time.time() < deadline:
                for msg in consumer.consume(500, timeout=2):
                    value, offset = msg.value(), msg.offset()
                    if msg.error() is None and value is not None and offset is not None:
                        seen.add(value.decode())
                        position = offset + 1
            return seen
        finally:
            consumer.close()


def faults_in_logs(run_dir: Path) -> dict[str, int]:
    counts = {}
    for log in sorted((run_dir / "logs").glob("controller-*.log")):
        counts[log.stem] = sum(1 for line in log.open(errors="replace") if FAULT.search(line))
    return counts


def watch(session: Any, seconds: float, samples: list[dict[str, Any]], phase: str) -> bool:
    """Samples each second; True as soon as broker 3 is registered and unfenced. Broker 3 is
    kept running as a process supervisor (systemd, Kubernetes) would: a broker whose initial
    registration fails for initial.broker.registration.timeout.ms (60 s) shuts itself down,
    and is started again here."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        sample: dict[str, Any] = {"t": round(time.time(), 2), "phase": phase}
        try:
            q = session.observer.quorum()
            sample["quorum_leader"], sample["quorum_epoch"] = q.get("leader"), q.get("leader_epoch")
        except Exception as exc:  # noqa: BLE001 - no answer is a sample too
            sample["quorum_error"] = str(exc)[:120]
        sample["broker3_unfenced"] = 3 in session.observer.unfenced_brokers()
        sample["faults"] = faults_in_logs(session.cluster.run_dir)
        if not sample["broker3_unfenced"] and not session.cluster.is_running(3):
            sample["broker3_restarted"] = True  # it gave up registering and exited
            session.faults.restart(3, wait=False)
        samples.append(sample)
        if sample["broker3_unfenced"]:
            return True
        time.sleep(1)
    return False


def summary(traffic: Traffic, samples: list[dict[str, Any]], lost: list[str],
            windows: dict[str, tuple[float, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (t0, t1) in windows.items():
        sent = [e for e in traffic.sent if t0 <= e["t"] < t1]
        acked = [e for e in sent if e.get("error") is None and "latency_s" in e]
        lat = [e["latency_s"] for e in acked]
        reqs = [r for r in traffic.requests if t0 <= r["t"] < t1]
        phase = [s for s in samples if t0 <= s["t"] < t1]
        epochs = [s["quorum_epoch"] for s in phase if s.get("quorum_epoch") is not None]
        out[name] = {
            "seconds": round(t1 - t0, 1),
            "produced": len(sent), "acked": len(acked),
            "produce_errors": sum(1 for e in sent if e.get("error")),
            "produce_latency_s": {"median": round(statistics.median(lat), 3) if lat else None,
                                  "max": max(lat) if lat else None},
            "controller_requests": len(reqs),
            "controller_request_errors": sum(1 for r in reqs if r["error"]),
            "controller_request_latency_s_max": max((r["latency_s"] for r in reqs), default=None),
            "controller_request_error_kinds": sorted({(r["error"] or "")[:80] for r in reqs
                                                      if r["error"]}),
            "quorum_epochs": (min(epochs), max(epochs)) if epochs else None,
            "quorum_leaders": sorted({s["quorum_leader"] for s in phase
                                      if s.get("quorum_leader") is not None}),
            "samples_without_quorum_answer": sum(1 for s in phase if "quorum_error" in s),
            "controller_faults_at_end": phase[-1]["faults"] if phase else None,
            "broker3_restarts_after_giving_up": sum(1 for s in phase if s.get("broker3_restarted")),
        }
    out["acked_records_lost"] = len(lost)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-version")
    ap.add_argument("--kafka-dist")
    ap.add_argument("--controllers", type=int, default=1, choices=(1, 3))
    ap.add_argument("--retry-s", type=float, default=300)
    ap.add_argument("--after-s", type=float, default=90)
    ap.add_argument("--end", default="none", choices=(
        "none", "restart-controllers", "snapshot", "unregister", "stop-broker"))
    ap.add_argument("--control", action="store_true")
    ap.add_argument("--runs-dir", type=Path, default=Path("runs/finding-elr-index"))
    args = ap.parse_args(argv)
    build = builds.resolve(args.kafka_version or (None if args.kafka_dist else "4.3.1"),
                           args.kafka_dist)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = (f"stale-elr-index-{build.version}-c{args.controllers}-{args.end}"
            f"{'-control' if args.control else ''}-{stamp}")
    run_dir = args.runs_dir / name
    run_dir.mkdir(parents=True)
    config = {"metadata.log.max.snapshot.interval.ms": "15000"} if args.end == "snapshot" else {}
    shape = ClusterShape(brokers=4, controllers=args.controllers, elr=True, broker_config=config)
    samples: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    windows: dict[str, tuple[float, float]] = {}

    def note(what: str, **extra: Any) -> None:
        steps.append({"t": round(time.time(), 2), "what": what, **extra})
        print(f"[{time.strftime('%H:%M:%S')}] {what}"
              + "".join(f" {k}={v}" for k, v in extra.items()), flush=True)

    with open_session(build, shape, run_dir) as session:
        obs = session.observer
        create_topic(obs, [1, 2, 3], min_isr=3)
        admin.create_topic(obs, OTHER, [1, 2, 4], {"min.insync.replicas": "2"})
        traffic = Traffic(session.cluster.client_bootstrap())
        traffic.start()
        t_start = time.time()
        session.faults.kill(3)
        s = wait_state(obs, lambda s: sorted(s["isr"]) == [1, 2] and s["elr"] == [3],
                       "ISR [1, 2], ELR [3]")
        note("broker 3 killed", isr=s["isr"], elr=s["elr"])
        if not args.control:
            admin.alter_config(obs, "topic", TOPIC, {"min.insync.replicas": "2"})
            note("min.insync.replicas=2 on t (ClearElrRecord)", elr=state(obs)["elr"])
        deleter = AdminClient({"bootstrap.servers": session.cluster.client_bootstrap(),
                               "log_level": 0})
        deleter.delete_topics([TOPIC], request_timeout=30)[TOPIC].result(timeout=60)
        note("t deleted")
        if args.end == "snapshot":
            time.sleep(20)  # the controllers write a snapshot at least every 15 s
        t_retry = time.time()
        windows["before"] = (t_start, t_retry)
        session.faults.restart(3, wait=False)
        note("broker 3 started (unclean registration)")
        registered = watch(session, args.retry_s, samples, "retry")
        t_end = time.time()
        windows["retry"] = (t_retry, t_end)
        note("retry window over", broker3_registered=registered,
             faults=faults_in_logs(run_dir))
        if not registered and args.end != "none":
            if args.end in ("restart-controllers", "snapshot"):
                for c in shape.controller_ids:
                    session.faults.kill(c)
                    session.faults.restart(c)
                    note(f"controller {c} restarted")
            elif args.end == "unregister":
                refused = unregister_broker(session, 3)
                note("unregister broker 3", out="done" if refused is None
                     else "\n".join(line for line in refused.splitlines()
                                     if "Exception" in line)[-600:])
            elif args.end == "stop-broker":
                if session.cluster.is_running(3):
                    session.faults.stop(3)
                note("broker 3 shut down cleanly")
                session.faults.restart(3, wait=False)
                note("broker 3 started again")
            registered_after = watch(session, args.after_s, samples, "after")
            windows["after"] = (t_end, time.time())
            note("after the end action", broker3_registered=registered_after,
                 faults=faults_in_logs(run_dir))
        traffic.finish()
        acked = {e["id"] for e in traffic.sent if e.get("error") is None and "latency_s" in e}
        lost = sorted(acked - traffic.read_back())
        note("other read back", acked=len(acked), lost=len(lost))
    result = {"build": build.version, "controllers": args.controllers, "end": args.end,
              "control": args.control, "broker3_registered_in_retry_window": registered,
              "summary": summary(traffic, samples, lost, windows), "steps": steps,
              "samples": samples, "requests": traffic.requests}
    (run_dir / "result.json").write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps(result["summary"], indent=1, default=str))
    print(f"run directory: {run_dir}")
    return 0 if registered else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
