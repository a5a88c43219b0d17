"""A differential campaign (issue 33 parts 2, 3 and 5): random events on the build's own
controller code, each compared with the model (compare.Comparator), findings deduplicated
by signature, shrunk by deleting events, written to the run directory.

Lanes: one driver session holds ``lanes`` independent little clusters, each its own five
brokers (lane k: 10k+1 .. 10k+5) and three topics (``k<k>t0`` ..), each driven by its own
seeded ``workload.RandomEvents`` from its own state. One event of every lane goes in one
pipelined batch (one round trip for ``lanes`` events); a lane's events touch only its own
brokers and partitions, except the controller's periodic ``tick`` tasks (which act on
every partition: a lane's log holds every tick, in order). A session ends after
``lane_events`` events per lane and a new JVM starts, so a finding's sequence is at most
that long before shrinking.

The jobs, one module each:

- lanes.py: lane names, which lane an event or finding belongs to, renaming between lanes;
- state.py: Config, Found, Stats and the attributes the jobs share (CampaignState);
- session.py: one driver session and its settings;
- loop.py: the event loop (``Campaign.run``), joining the jobs below as mixins;
- classify.py: each answer against the model, findings recorded by signature (the room
  for oracles that need no model);
- feedback.py: coverage feedback (``--coverage``: corpus, probes, progress lines);
- shrink.py: shrinking a finding by replaying its lane's events with some deleted;
- write.py: findings/*.json, summary.json and the summary lines printed.
"""

from harness.differential.campaign.lanes import (
    BROKERS_PER_LANE,
    CLOCK,
    TOPICS_PER_LANE,
    clock_broker,
    finding_lane,
    lane_brokers,
    lane_of_event,
    lane_of_topic,
    lane_of_where,
    lane_topics,
    rename,
)
from harness.differential.campaign.loop import Campaign
from harness.differential.campaign.session import Session, settings_for, version_of
from harness.differential.campaign.state import CampaignState, Config, Found, Stats
from harness.differential.campaign.write import summary_lines

__all__ = ["BROKERS_PER_LANE", "CLOCK", "TOPICS_PER_LANE", "Campaign", "CampaignState",
           "Config", "Found", "Session", "Stats", "clock_broker", "finding_lane",
           "lane_brokers", "lane_of_event", "lane_of_topic", "lane_of_where", "lane_topics",
           "rename", "settings_for", "summary_lines", "version_of"]
