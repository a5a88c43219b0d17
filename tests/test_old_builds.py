"""Builds before 3.8 (issue 11): the observer's Metadata API path, ELR from the metadata log
only where the records carry it, and verdicts that skip fields a build cannot show."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from harness.client.observe import Observer
from harness.client.observe.controller_log import elr_from_records
from harness.client.observe.partitions import _freshest
from harness.cluster.builds import Features

_TID = "AAAAAAAAAAAAAAAAAAAAAA"


def _features(dtp: bool) -> Features:
    return Features(elr=False, elr_default_on=False, describe_topic_partitions=dtp,
                    hwm_rule=True, unclean_recovery=False, kip1303=False,
                    previous_broker_epoch=True)


def _cluster(dtp: bool) -> Any:
    return SimpleNamespace(build=SimpleNamespace(features=_features(dtp)),
                           shape=SimpleNamespace(broker_ids=(1, 2, 3)))


def test_observer_picks_its_api_from_the_probed_features() -> None:
    assert Observer(_cluster(dtp=True)).api == "DescribeTopicPartitions"
    assert Observer(_cluster(dtp=False)).api == "Metadata"


def _topic() -> dict[str, Any]:
    return {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "t", "topicId": _TID}}


def _part(kind: str, version: int, **data: Any) -> dict[str, Any]:
    return {"type": kind, "version": version,
            "data": {"topicId": _TID, "partitionId": 0, **data}}


def test_elr_is_unobservable_when_the_records_do_not_carry_it() -> None:
    # 3.6 writes PartitionRecord v0, 3.7 under its production metadata.version v1.
    records = [_topic(), _part("PARTITION_RECORD", 0, replicas=[1, 2, 3], isr=[1, 2, 3],
                               leader=1),
               _part("PARTITION_CHANGE_RECORD", 1, isr=[1, 3])]
    assert elr_from_records(records, "t", 0) is None


def test_elr_is_read_from_records_that_carry_it() -> None:
    records = [_topic(), _part("PARTITION_RECORD", 2, replicas=[1, 2, 3], isr=[1, 2, 3],
                               leader=1)]
    assert elr_from_records(records, "t", 0) == ([], [])  # v2 without the fields: empty
    records.append(_part("PARTITION_CHANGE_RECORD", 2, isr=[1], eligibleLeaderReplicas=[3, 2],
                         lastKnownElr=[]))
    assert elr_from_records(records, "t", 0) == ([2, 3], [])
    records.append(_part("PARTITION_CHANGE_RECORD", 2, leader=-1))  # null: unchanged
    assert elr_from_records(records, "t", 0) == ([2, 3], [])
    records.append({"type": "CLEAR_ELR_RECORD", "version": 0, "data": {"topicName": "t"}})
    assert elr_from_records(records, "t", 0) == ([], [])
    assert elr_from_records(records, "other", 0) is None


def test_freshest_view_without_leader_epochs_or_elr() -> None:
    def view(leader: int, isr: list[int]) -> dict[str, Any]:
        return {"leader": leader, "leader_epoch": None, "isr": isr, "elr": None,
                "last_known_elr": None}
    node, state = _freshest([(1, view(1, [1, 2])), (2, view(1, [1, 2, 3])),
                             (3, view(1, [1, 2, 3]))])
    assert state["isr"] == [1, 2, 3] and node in (2, 3)


# -- verdicts skip what a build cannot show, and say what they judged ------------------------

def _observation(**state: Any) -> dict[str, Any]:
    base = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3],
            "elr": [], "last_known_elr": [], "hwm": 0, "fenced": []}
    return {"kind": "observation", "state": {**base, **state}}


def _elr_model() -> Any:
    from reference import ClusterSpec, Model, TopicSpec
    return Model("kafka-4.1", ClusterSpec(brokers=(1, 2, 3), controllers=(100,)),
                 TopicSpec(name="t", replicas=(1, 2, 3), min_insync_replicas=2),
                 elr_enabled=True, seed=0)


def test_a_judged_field_that_differs_is_a_divergence() -> None:
    from reference import PartitionState
    seen = PartitionState.from_json(_observation(isr=[1, 2])["state"])
    why = _elr_model().explain(seen)
    assert why is not None and why.startswith("isr:")
    wrong_elr = PartitionState.from_json(_observation(elr=[2])["state"])
    assert (_elr_model().explain(wrong_elr) or "").startswith("elr:")  # ELR shown: judged


def test_an_unobservable_field_is_skipped_and_the_verdict_says_so() -> None:
    from harness.judge.axes import fields_note, judged_fields
    from harness.judge.compare import await_mismatch
    from reference import PartitionState
    old = _observation(elr=None, last_known_elr=None)["state"]  # a 3.6 build's view
    model = _elr_model()
    assert model.explain(PartitionState.from_json(old)) is None
    assert await_mismatch({"elr": [3], "isr": [1, 2, 3]}, old) is None
    assert await_mismatch({"elr": [3], "isr": [1]}, old) == \
        "isr: await expected [1], observed [1, 2, 3]"
    fields = judged_fields([_observation(elr=None, last_known_elr=None),
                            _observation(elr=None, last_known_elr=None, hwm=None)])
    assert fields == {"judged": ["leader", "leader_epoch", "replicas", "isr", "hwm", "fenced"],
                      "unobservable": ["elr", "last_known_elr"]}
    assert "unobservable on this build (not judged): elr, last_known_elr" in fields_note(fields)
    assert judged_fields([_observation()])["unobservable"] == []
    assert judged_fields([]) == {"judged": [], "unobservable": []}


def test_every_axis_of_a_run_carries_the_fields_it_judged() -> None:
    from harness.judge.axes import AxisVerdict
    axis = AxisVerdict("release", "CONFORMS", fields={"judged": ["isr"],
                                                       "unobservable": ["elr"]})
    assert axis.to_json()["fields"] == {"judged": ["isr"], "unobservable": ["elr"]}


def test_metadata_view_of_a_partition() -> None:
    def response(version: int, leader: int, error: int = 0) -> Any:
        part = SimpleNamespace(partition_index=0, error_code=error, leader_id=leader,
                               leader_epoch=4, replica_nodes=[1, 2, 3], isr_nodes=[3, 1])
        return SimpleNamespace(API_VERSION=version, topics=[
            SimpleNamespace(name="t", error_code=0, partitions=[part])])
    observer = Observer(_cluster(dtp=False))
    sent: list[Any] = []
    observer._send = lambda node, req: sent.append(req) or response(12, 1)  # type: ignore
    state = observer._describe(1, "t", 0)
    assert state == {"leader": 1, "leader_epoch": 4, "replicas": [1, 2, 3], "isr": [1, 3],
                     "elr": None, "last_known_elr": None}
    assert type(sent[0]).__name__ == "MetadataRequest"
    observer._send = lambda node, req: response(5, -1, error=5)  # type: ignore
    leaderless = observer._describe(1, "t", 0)
    assert leaderless["leader"] == -1 and leaderless["leader_epoch"] is None  # v5: no epoch


def test_lines_before_39_ignore_the_unclean_election_config() -> None:
    # KAFKA-12670 arrived in 3.9.0 (docs/KNOWN-DEVIATIONS.md#unclean-election-config-ignored).
    from reference import PROFILES, profile_for_build
    for version in ((3, 6, 2), (3, 7, 2), (3, 8, 1)):
        assert PROFILES[profile_for_build(version, False)].unclean_election_config == "never"
    for version in ((3, 9, 2), (4, 0, 2), (4, 3, 1)):
        assert PROFILES[profile_for_build(version, False)].unclean_election_config == "config"
    assert profile_for_build((3, 8, 1), False) == "kafka-3.8"
    assert any("KAFKA-12670" in c for c in PROFILES["kafka-3.8"].cites)


def test_a_look_asks_each_broker_for_its_view_once_and_all_at_once() -> None:
    """The views of every partition in a look come from one batch of requests, one per
    broker; a broker that failed is that broker's failure only."""
    def dtp_answer(leader: int) -> Any:
        parts = [SimpleNamespace(partition_index=i, error_code=0, leader_id=leader,
                                 leader_epoch=2, replica_nodes=[1, 2, 3], isr_nodes=[1, 2, 3],
                                 eligible_leader_replicas=[], last_known_elr=[])
                 for i in range(2)]
        return SimpleNamespace(topics=[SimpleNamespace(name="t", partitions=parts)])

    observer = Observer(_cluster(dtp=True))
    batches: list[dict[int, Any]] = []

    def send_each(requests: dict[int, Any]) -> dict[int, Any]:
        batches.append(requests)
        return {n: RuntimeError("cut off") if n == 3 else dtp_answer(leader=1)
                for n in requests}

    observer._send_each = send_each  # type: ignore[method-assign]
    with observer.one_look():
        first, failed = observer._views([1, 2, 3], "t", 0)
        second, _ = observer._views([1, 2, 3], "t", 1)
    assert [len(b) for b in batches] == [3, 1]  # the failed broker is asked again, alone
    assert {type(r).__name__ for r in batches[0].values()} == {
        "DescribeTopicPartitionsRequest"}
    assert len({id(r) for r in batches[0].values()}) == 3  # a request object per broker
    assert [n for n, _ in first] == [1, 2] and str(failed) == "cut off"
    assert [v["leader"] for _, v in second] == [1, 1]
