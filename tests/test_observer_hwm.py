"""The observer's HWM read: a consumer's ListOffsets, for the leader epoch the metadata view
showed (KIP-320), with the epoch the answer gave beside the HWM."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.consumer.offsets import (
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

from harness.client.observe import ObserveError, Observer

_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Part = _Topic.ListOffsetsPartitionResponse


def _observer(answer: Any, sent: list[Any]) -> Observer:
    cluster = SimpleNamespace(build=None, shape=SimpleNamespace(broker_ids=(1, 2, 3)),
                              is_running=lambda node: True)
    observer = Observer(cluster)  # type: ignore[arg-type]
    observer._send = lambda node, req: (  # type: ignore[method-assign]
        sent.append(req) or (_no_epoch_start if isinstance(req, OffsetForLeaderEpochRequest)
                             else answer))
    return observer


#: OffsetsForLeaderEpoch's answer here: no start known for the epoch, so no bound on the HWM
#: (the epoch-start check has its own tests, test_observe_hwm_guard).
_ETopic = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
_no_epoch_start = OffsetForLeaderEpochResponse(version=4, throttle_time_ms=0, topics=[_ETopic(
    topic="t", partitions=[_ETopic.EpochEndOffset(error_code=0, partition=0, leader_epoch=-1,
                                                  end_offset=-1)])])


def _answer(error: int, offset: int, epoch: int) -> Any:
    part = _Part(partition_index=0, error_code=error, timestamp=-1, offset=offset,
                 leader_epoch=epoch)
    return ListOffsetsResponse(version=7, throttle_time_ms=0,
                               topics=[_Topic(name="t", partitions=[part])])


def test_the_hwm_is_asked_for_the_viewed_leader_epoch_as_a_consumer_asks() -> None:
    sent: list[Any] = []
    observer = _observer(_answer(0, 7, 3), sent)
    assert observer.hwm("t", 0, 2, leader_epoch=3) == (7, 3)  # the HWM and its answer's epoch
    request = sent[0]
    assert request.topics[0].partitions[0].current_leader_epoch == 3
    assert request.replica_id == -1 and request.isolation_level == 0


def test_a_new_leader_below_its_epoch_start_gives_no_hwm() -> None:
    observer = _observer(_answer(78, -1, 3), [])  # OFFSET_NOT_AVAILABLE
    assert observer.hwm("t", 0, 2, leader_epoch=3) == (None, None)


@pytest.mark.parametrize("error", [74, 75])  # FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
def test_a_leader_at_another_epoch_is_asked_again(error: int) -> None:
    observer = _observer(_answer(error, -1, -1), [])
    with pytest.raises(ObserveError, match="not the leader at epoch 3"):
        observer.hwm("t", 0, 2, leader_epoch=3)


def test_without_a_viewed_epoch_the_request_names_none() -> None:
    sent: list[Any] = []
    observer = _observer(_answer(0, 5, 1), sent)
    assert observer.hwm("t", 0, 1) == (5, 1)
    assert sent[0].topics[0].partitions[0].current_leader_epoch == -1
