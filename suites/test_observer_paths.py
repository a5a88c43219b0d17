"""Observer paths checked against each other on a real cluster."""

from __future__ import annotations

import pytest

from harness.infra.wait import until
from suites.helpers import TOPIC, create_topic, wait_state

pytestmark = [pytest.mark.chaos]


@pytest.fixture
def elr_build(kafka_build):
    """The build, when it shows ELR both ways; skipped before any cluster starts otherwise
    (an `elr: true` cluster cannot even be formatted on a build without the feature)."""
    features = kafka_build.features
    if not features.describe_topic_partitions or not features.elr:
        pytest.skip(f"UNSUPPORTED: Kafka {kafka_build.version} shows no ELR to compare with")
    return kafka_build


@pytest.mark.cluster(brokers=3, controllers=1, elr=True)
def test_elr_read_from_the_metadata_log_matches_describe_topic_partitions(
        elr_build, chaos_cluster, faults, observer):
    """The Metadata-API observer (builds before 3.8) takes ELR and LastKnownELR from the
    controller's metadata log. Builds that old never write ELR, so that path is checked
    here, on a build that shows both: the log's ELR must equal DescribeTopicPartitions'."""
    from harness.client.observe import Observer
    create_topic(observer, [1, 2, 3], min_isr=3)
    with Observer(chaos_cluster, record=False) as from_log:
        from_log.api = "Metadata"
        for victim, elr in ((3, {3}), (2, {2, 3})):
            faults.kill(victim)
            wanted = wait_state(observer, lambda s, e=elr: set(s["elr"] or ()) == e,
                                f"ELR {sorted(elr)} once broker {victim} is fenced")
            seen = until(lambda: from_log.partition_state(TOPIC)[0],
                         lambda s, w=wanted: s["elr"] == w["elr"], "the log's ELR", 15)
            assert seen["last_known_elr"] == wanted["last_known_elr"]
            assert seen["isr"] == wanted["isr"] and seen["leader"] == wanted["leader"]
