"""Issue 32, consequence (a), on a real cluster: a broker that a completed reassignment
removed stays in the ELR after the broker is unregistered.

The scenario format has no step that unregisters a broker, so this program drives the
cluster itself, with the harness's session (the same cluster, fault, admin and observer
code the runner uses) and Kafka's own tool for the unregistration
(`kafka-cluster.sh unregister`, i.e. `org.apache.kafka.tools.ClusterTool unregister`, the
UnregisterBroker API):

1. 4 brokers + 1 controller, ELR on; topic t on [1, 2, 3], min ISR 3; 3 acks=all records.
2. broker 3 shuts down cleanly: ISR [1, 2], ELR [3].
3. reassign [1, 2, 3] -> [1, 3, 4]: on 4.3 it completes once broker 4 joins the ISR:
   replicas [1, 3, 4], ISR [1, 4], ELR [2, 3] (the finding's completion path).
4. broker 2 is decommissioned as an operator would: shut down cleanly, then unregistered.
5. the partition is read again: ELR still [2, 3], with broker 2 gone from the cluster.
6. broker 3 comes back: the ISR reaches min ISR and only then is the ELR cleared.

After the cluster is down the controller's metadata log is decoded
(harness/client/metadata_records.py) and the records from the reassignment on are printed:
the UnregisterBrokerRecord of broker 2 is followed by no PartitionChangeRecord of t until
broker 3's return (ReplicationControlManager.handleBrokerUnregistered runs the partition
through PartitionChangeBuilder with broker 2 as brokerToRemove only: the builder keeps the
old ELR while the ISR is below min ISR, and filters only the target ISR and
unclean-shutdown replicas out of it).

Run (from the repository root, with the harness installed):

    python docs/findings/elr-keeps-removed-replica/unregister_stale_member.py \\
        [--kafka-version 4.3.1 | --kafka-dist DIR] [--runs-dir runs/finding-elr/unregister]

Exit status: 1 when the unregistered broker is still in the ELR (the finding), 0 when it
left, 3 when there is no stale member to unregister (3.8-4.2 keep the reassignment waiting;
a build with the suggested fix completes it without broker 2 in the ELR), 2 on a harness
error. Everything it started is stopped on the way out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.client import admin, metadata_records
from harness.client.session import open_session
from harness.client.testing import TOPIC, create_topic, state, wait_state
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.infra import tools
from harness.infra.errors import HarnessError


def unregister(build: builds.Build, bootstrap: str, broker: int) -> str:
    """`kafka-cluster.sh unregister --bootstrap-server B --id N` with the build's own jars."""
    java = tools.require_java(build.java_major)
    cmd = [str(java), "-cp", build.classpath(), "org.apache.kafka.tools.ClusterTool",
           "unregister", "--bootstrap-server", bootstrap, "--id", str(broker)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    out = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise HarnessError(f"ClusterTool unregister exited {done.returncode}: {out[-2000:]}")
    return out


def brief(s: dict[str, Any]) -> str:
    return (f"leader={s['leader']} epoch={s['leader_epoch']} replicas={s['replicas']} "
            f"ISR={s['isr']} ELR={s['elr']} LastKnownELR={s['last_known_elr']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-version")
    ap.add_argument("--kafka-dist", help="a distribution directory instead (e.g. the patched "
                                         "build of fix/build_fixed_dist.sh)")
    ap.add_argument("--runs-dir", type=Path, default=Path("runs/finding-elr/unregister"))
    args = ap.parse_args(argv)
    build = builds.resolve(args.kafka_version or (None if args.kafka_dist else "4.3.1"),
                           args.kafka_dist)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    tag = "-patched" if args.kafka_dist else ""
    run_dir = args.runs_dir / f"unregister-stale-member-{build.version}{tag}-{stamp}"
    run_dir.mkdir(parents=True)
    shape = ClusterShape(brokers=4, controllers=1, elr=True)
    log: list[dict[str, Any]] = []

    def note(what: str, s: dict[str, Any] | None = None, **extra: Any) -> None:
        entry = {"t": round(time.time(), 3), "what": what, "state": s, **extra}
        log.append(entry)
        print(f"{what}" + (f": {brief(s)}" if s else "")
              + "".join(f" {k}={v}" for k, v in extra.items()), flush=True)

    verdict = 2
    with open_session(build, shape, run_dir) as session:
        obs = session.observer
        create_topic(obs, [1, 2, 3], min_isr=3)
        acks = session.workload.produce(TOPIC, 3, acks="all")
        note("produced 3 records, acks=all", state(obs), acked=len(acks))
        session.faults.stop(3)
        note("broker 3 shut down", wait_state(obs, lambda s: sorted(s["isr"]) == [1, 2],
                                              "ISR [1, 2]"))
        admin.reassign(obs, TOPIC, [1, 3, 4])
        try:
            s = wait_state(obs, lambda s: s["replicas"] == [1, 3, 4] and 2 in (s["elr"] or []),
                           "the reassignment completed with broker 2 in the ELR", 30)
        except Exception as exc:  # noqa: BLE001 - 3.8-4.2 keep waiting: say so and stop
            note("the reassignment did not complete with broker 2 in the ELR", state(obs),
                 error=str(exc).splitlines()[0])
            verdict = 3
        else:
            note("reassigned [1, 2, 3] -> [1, 3, 4]", s)
            session.faults.stop(2)
            note("broker 2 shut down (decommissioned)", state(obs))
            host, port = session.cluster.observer_address(1)
            out = unregister(build, f"{host}:{port}", 2)
            note("broker 2 unregistered (ClusterTool unregister --id 2)", tool_output=out)
            # The tool returns once the controller has committed the UnregisterBrokerRecord
            # (the metadata log below shows it); give the brokers' metadata a moment.
            time.sleep(3)
            after = state(obs)
            note("after the unregistration", after)
            verdict = 1 if 2 in (after["elr"] or []) else 0
            session.faults.restart(3)
            note("broker 3 back", wait_state(obs, lambda s: len(s["isr"]) >= 3,
                                             "ISR back at min ISR", 60))
    records = metadata_records.read_log_dir(
        run_dir / "nodes" / "controller-100" / "data" / "__cluster_metadata-0")
    interesting = [r for r in records if r["type"] in (
        "PARTITION_CHANGE_RECORD", "UNREGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
        "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD")]
    print("\ncommitted metadata records (controller 100), partition changes and broker "
          "changes:")
    for r in interesting:
        print(f"  offset {r['offset']}: {r['type']} v{r['version']} {json.dumps(r['data'])}")
    (run_dir / "result.json").write_text(json.dumps(
        {"build": build.version, "verdict": {1: "stale ELR member kept after unregistration",
                                             0: "unregistration removed it",
                                             3: "no stale member to unregister",
                                             2: "error"}[verdict],
         "exit": verdict, "steps": log, "records": interesting}, indent=1))
    print(f"\nrun directory: {run_dir}")
    if verdict == 1:
        print("FINDING: broker 2 is unregistered and still in the ELR of t-0")
    return verdict


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
