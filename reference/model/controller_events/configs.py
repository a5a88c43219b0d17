"""Config events: ``alterConfig`` at topic or cluster level, and reading a topic's configs.

KIP-966 'Other behaviors' 2: "if the new min ISR <= current ISR, the ELR will be removed"
(``reference.model.elr.after_min_isr_change``); shipped Kafka wipes ELR and LastKnownELR on
any change (``Profile.min_isr_change_clears`` "always"), and then a cluster-level change
reaches every partition, not only those whose topic sets no min ISR of its own. Setting a
topic's min ISR to the value it has is no change. Broker-level configs are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference.model.controller import Ctx
from reference.model.controller_events.changes import _accepted, _bump, _refused, world_of
from reference.model.controller_events.cluster import Cluster, Prediction, TopicConf
from reference.model.elr import after_min_isr_change
from reference.model.state import evolve


def _topic_conf(conf: TopicConf, configs: Mapping[str, Any]) -> TopicConf | None:
    for k, v in configs.items():
        if k == "min.insync.replicas":
            if v is None:
                conf = evolve(conf, min_isr=None)
                continue
            try:
                n = int(str(v).strip())
            except ValueError:
                return None
            if n < 1:
                return None
            conf = evolve(conf, min_isr=n)
        elif k == "unclean.leader.election.enable":
            if v is None:
                conf = evolve(conf, unclean=None)
                continue
            text = str(v).strip().lower()
            if text not in ("true", "false"):
                return None
            conf = evolve(conf, unclean=text == "true")
    return conf


def _alter_config(c: Cluster, ctx: Ctx, e: Mapping[str, Any]) -> Prediction | None:
    if e.get("broker") is not None:
        return None
    configs: Mapping[str, Any] = e["configs"]
    topic = e.get("topic")
    if topic is not None:
        keys = [k for k in c.partitions if c.topic_of(k) == topic]
        if not keys:
            return _refused(c, "UNKNOWN_TOPIC_OR_PARTITION")
        old = c.topics.get(str(topic), TopicConf())
        conf = _topic_conf(old, configs)
        if conf is None:
            return _refused(c, "INVALID_CONFIG")
        c2 = evolve(c, topics={**c.topics, str(topic): conf})
        if conf.min_isr == old.min_isr:
            # The same value again is no config change: no ClearElrRecord (4.3.1).
            return _accepted([c2])
    else:
        cluster_conf = _topic_conf(TopicConf(min_isr=c.min_isr, unclean=c.unclean), configs)
        if cluster_conf is None or cluster_conf.min_isr is None:
            return _refused(c, "INVALID_CONFIG")
        c2 = evolve(c, min_isr=cluster_conf.min_isr,
                    unclean=bool(cluster_conf.unclean))
        keys = [k for k in c.partitions
                if c.topics.get(c.topic_of(k), TopicConf()).min_isr is None
                or ctx.profile.min_isr_change_clears == "always"]
    if "min.insync.replicas" not in configs or not ctx.elr_on:
        return _accepted([c2])
    parts = dict(c2.partitions)
    for key in keys:
        p = parts[key]
        upd = after_min_isr_change(ctx.profile, isr=p.isr, elr=p.elr,
                                   last_known_elr=p.last_known_elr,
                                   new_min_isr=world_of(c2, key).min_isr)
        parts[key] = _bump(p, evolve(p, elr=upd.elr, last_known_elr=upd.last_known_elr))
    return _accepted([evolve(c2, partitions=parts)])
