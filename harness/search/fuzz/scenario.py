"""The cluster and the scenario file of a generated schedule: the fixed BASE cluster, the
clusters ``schedule`` drew in this process (``CLUSTERS``, by scenario seed), and the
scenario file (FORMAT.md) a schedule is written as on its cluster (``scenario_yaml``), so
`kafka-chaos run` reads it like any other scenario."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from harness.search.shrink import Steps
from reference.model import steps as S
from reference.search import fuzzgen

#: The cluster a schedule runs on without generated settings: 3 brokers, 1 controller, one
#: partition on all three with min ISR 2 (the KIP's examples), unclean election off.
BASE: dict[str, Any] = {
    "version": 1,
    "cluster": {"brokers": 3, "controllers": 1},
    "topic": {"name": "t", "replicas": [1, 2, 3], "min_insync_replicas": 2,
              "config": {"unclean.leader.election.enable": "false"}},
}


class Clusters:
    """The cluster of each schedule generated in this process, by its scenario seed
    (``schedule`` draws it), so the scenario file written for that seed (``scenario_yaml``:
    the run, a re-run, a shrink attempt, the minimal scenario) holds it; and the one a
    campaign works on now (the latest seed generated or written), for the callers that ask
    for a model without naming the schedule (``CampaignModels.__call__``)."""

    def __init__(self) -> None:
        self.by_seed: dict[int, fuzzgen.Cluster] = {}
        self.current: fuzzgen.Cluster | None = None

    def of(self, seed: int) -> fuzzgen.Cluster | None:
        return self.by_seed.get(seed)

    def kept(self, seed: int) -> tuple[fuzzgen.Cluster | None, fuzzgen.Cluster | None]:
        """What ``put_back`` restores: seed's cluster and the current one."""
        return self.by_seed.get(seed), self.current

    def put_back(self, seed: int,
                 kept: tuple[fuzzgen.Cluster | None, fuzzgen.Cluster | None]) -> None:
        cluster, self.current = kept
        if cluster is None:
            self.by_seed.pop(seed, None)
        else:
            self.by_seed[seed] = cluster


CLUSTERS = Clusters()


def cluster_doc(cluster: fuzzgen.Cluster) -> dict[str, Any]:
    """The scenario file's ``cluster`` and ``topic`` (FORMAT.md) of a generated cluster,
    and its ``traffic`` when it has some."""
    c = cluster
    shape: dict[str, Any] = {"brokers": c.brokers, "controllers": c.controllers}
    if c.elr is not None:
        shape["elr"] = c.elr
    if c.log_dirs > 1:  # drawn only for a 3.7+ birth (generators/logdirs.py)
        shape["log_dirs"] = c.log_dirs
    topic: dict[str, Any] = {"name": "t", "replicas": list(c.replicas)}
    if c.partitions > 1:
        topic["partitions"] = c.partitions
    topic["min_insync_replicas"] = c.min_isr
    topic["config"] = {"unclean.leader.election.enable": "true" if c.unclean else "false"}
    if c.tiered is not None:  # FORMAT.md "Tiered storage" (reference/search/tiered.py)
        shape["tiered_storage"] = True
        topic["config"].update(c.tiered.topic_config())
    out: dict[str, Any] = {"cluster": shape, "topic": topic}
    if c.birth is not None:
        # Born on an older build: the file runs with --kafka-version BIRTH (the run's
        # build is the one its upgrade steps go to); any other build is UNSUPPORTED.
        out["requires"] = {"min_version": c.birth, "max_version": c.birth}
    if c.traffic is not None:
        out["traffic"] = c.traffic.to_dict()
    return out


def scenario_yaml(name: str, seed: int, steps: Steps, description: str = "",
                  cluster: fuzzgen.Cluster | None = None) -> str:
    """The scenario file of a schedule (FORMAT.md), as `kafka-chaos run` reads it: on
    ``cluster``, else the cluster generated for ``seed`` (``schedule``), else BASE."""
    doc: dict[str, Any] = {"version": 1, "name": name}
    if cluster is None:
        cluster = CLUSTERS.of(seed)
        if cluster is not None:
            CLUSTERS.current = cluster
    if cluster is not None and cluster.birth is not None:
        description = (f"{description}; " if description else "") + (
            f"born on Kafka {cluster.birth} (run it with --kafka-version {cluster.birth}), "
            "its nodes upgraded by its steps")
    if description:
        doc["description"] = description
    doc["seed"] = seed
    doc.update(cluster_doc(cluster) if cluster is not None
               else {k: v for k, v in BASE.items() if k != "version"})
    doc["steps"] = [S.step_to_dict(s) for s in steps]
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    return str(text)


def base_scenario(name: str = "fuzz-base", cluster: fuzzgen.Cluster | None = None) -> Any:
    """The base cluster (or ``cluster``, without its traffic: the model's settings are the
    cluster's) as a loaded Scenario (one consume step), to build the model."""
    from harness.scenario.loader import parse_scenario
    shape = dataclasses.replace(cluster or fuzzgen.BASE_CLUSTER, traffic=None)
    return parse_scenario(scenario_yaml(name, 0, (S.Consume(),), cluster=shape), f"<{name}>")
