"""The data-loss sequence of elr-removed-replica-elected-after-shrink, replayed on a build
without a model, to check the suggested fix end to end on a real cluster.

`kafka-chaos run` stops a run at the first step whose settled state the model did not
predict, and the model follows shipped Kafka (it predicts the stale ELR member), so a
patched build cannot be run through the scenario to its end. This program drives the same
steps with the harness's session (cluster, faults, admin calls, observer, producer and
consumer) and prints the partition after each step; at the end it reads the partition back
and names the acks=all records that are gone.

    python docs/findings/elr-keeps-removed-replica/fix/replay_data_loss.py --kafka-version 4.3.1
    python docs/findings/elr-keeps-removed-replica/fix/replay_data_loss.py \\
        --kafka-dist /tmp/kafka-4.3.1-elr-fix            # build_fixed_dist.sh's output

Steps (3 brokers, 1 controller, ELR on, topic t on [1, 2, 3], min ISR 3): produce 3
acks=all; reassign to [1, 2]; stop broker 2; cut broker 3 from 1 and 2; reassign to
[1, 2, 3]; stop broker 1; heal; restart 2, then 1; read everything.

Exit status: 1 when acknowledged records are lost, 0 when every one is read back, 2 on a
harness error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from harness.client import admin
from harness.client.session import open_session
from harness.client.testing import TOPIC, create_topic, state, wait_state
from harness.cluster import builds
from harness.cluster.topology import ClusterShape
from harness.infra.errors import HarnessError


def brief(s: dict[str, Any]) -> str:
    return (f"leader={s['leader']} epoch={s['leader_epoch']} replicas={s['replicas']} "
            f"ISR={s['isr']} ELR={s['elr']} LastKnownELR={s['last_known_elr']} HWM={s['hwm']}")


def settle(obs: Any, seconds: float = 6.0) -> dict[str, Any]:
    """The partition once it has had time to settle (session timeouts are 3 s here)."""
    time.sleep(seconds)
    return state(obs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kafka-version")
    ap.add_argument("--kafka-dist")
    ap.add_argument("--runs-dir", type=Path, default=Path("runs/finding-elr/replay"))
    args = ap.parse_args(argv)
    build = builds.resolve(args.kafka_version, args.kafka_dist)
    tag = "patched" if args.kafka_dist else "stock"
    run_dir = args.runs_dir / (f"replay-data-loss-{build.version}-{tag}-"
                               f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}")
    run_dir.mkdir(parents=True)
    steps: list[dict[str, Any]] = []

    def note(what: str, s: dict[str, Any]) -> None:
        steps.append({"step": what, "state": s})
        print(f"{what:44} {brief(s)}", flush=True)

    with open_session(build, ClusterShape(brokers=3, controllers=1, elr=True), run_dir) as ses:
        obs = ses.observer
        create_topic(obs, [1, 2, 3], min_isr=3)
        acks = ses.workload.produce(TOPIC, 3, acks="all")
        acked = [a.record_id for a in acks if a.offset is not None and not a.error]
        note(f"produce 3 acks=all ({len(acked)} acked)", state(obs))
        admin.reassign(obs, TOPIC, [1, 2])
        note("reassign [1, 2, 3] -> [1, 2]",
             wait_state(obs, lambda s: s["replicas"] == [1, 2], "replicas [1, 2]"))
        ses.faults.stop(2)
        note("stop 2", wait_state(obs, lambda s: s["isr"] == [1], "ISR [1]"))
        ses.faults.cut(3, 1)
        ses.faults.cut(3, 2)
        admin.reassign(obs, TOPIC, [1, 2, 3])
        note("cut 3 from 1, 2; reassign -> [1, 2, 3]",
             wait_state(obs, lambda s: s["replicas"] == [1, 2, 3], "replicas [1, 2, 3]"))
        ses.faults.stop(1)
        note("stop 1", settle(obs))
        ses.faults.heal()
        ses.faults.restart(2)
        note("heal; restart 2", settle(obs))
        ses.faults.restart(1)
        note("restart 1", wait_state(obs, lambda s: s["leader"] not in (None, -1)
                                     and len(s["isr"]) >= 2, "a leader and ISR of 2+", 60))
        read = [rid for _, rid in ses.workload.consume_all(TOPIC)]
    lost = [rid for rid in acked if rid not in read]
    print(f"\nread back {len(read)} record(s); acks=all records lost: {lost or 'none'}")
    (run_dir / "replay.json").write_text(json.dumps(
        {"build": build.describe(), "steps": steps, "acked": acked, "read": read,
         "lost": lost}, indent=1))
    print(f"run directory: {run_dir}")
    return 1 if lost else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
