"""Readiness as a client sees it: every broker registered and unfenced (DescribeCluster
through the observer's untouched path). The strategy a cluster is started with
(cluster.backends.base.Readiness)."""

from __future__ import annotations

import time

from harness.client.observe import Observer
from harness.cluster.backends.base import Cluster
from harness.infra import procs
from harness.infra.errors import ClusterError

#: Not a Kafka timeout: how soon after the last broker is unfenced the run goes on. Each
#: poll is one DescribeCluster over the observer's path; brokers are unfenced at their
#: first heartbeat after catching up (broker.heartbeat.interval.ms = 500), so 0.1 s
#: (was 0.2) adds at most a fifth of a heartbeat to bring-up.
POLL_S = 0.1


class BrokersUnfenced:
    """Ready when every broker in ``brokers`` (default: all) is registered and unfenced."""

    def __init__(self, brokers: tuple[int, ...] | None = None) -> None:
        self.brokers = brokers

    def wait(self, cluster: Cluster, timeout_s: float) -> None:
        wanted = set(self.brokers or cluster.shape.broker_ids)
        deadline = time.monotonic() + timeout_s
        seen: set[int] = set()
        with Observer(cluster, record=False) as observer:
            while time.monotonic() < deadline:
                procs.check_interrupted()
                seen = observer.unfenced_brokers()
                if wanted <= seen:
                    return
                time.sleep(POLL_S)
        raise ClusterError(f"brokers {sorted(wanted - seen)} not unfenced after "
                           f"{timeout_s:.0f}s (unfenced: {sorted(seen)}); see logs in "
                           f"{cluster.run_dir / 'logs'}")
