"""A partition's high watermark: ListOffsets (API key 2) to its leader at the viewed leader
epoch, checked against the start of that epoch, OffsetsForLeaderEpoch (API key 23)."""

from __future__ import annotations

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient
from kafka.admin import OffsetSpec
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest
from kafka.structs import TopicPartition

from harness.client.observe.connection import Connection, ObserveError


class HighWatermarks(Connection):
    # Set by Observer.__init__ (declared here for the type checker).
    _epoch_starts: dict[tuple[str, int, int, int], int]

    def hwm(self, topic: str, partition: int, leader: int | None,
            leader_epoch: int | None = None) -> tuple[int | None, int | None]:
        """(the leader's HWM, the leader epoch its answer gave); (None, None) when there is
        no running leader, or when the leader does not
        know its HWM yet (OFFSET_NOT_AVAILABLE: a new leader whose HWM is below the start of
        its epoch, or cannot advance while the ISR is below min ISR). With ``leader_epoch``
        (the metadata view's) the request carries it as a consumer's does (KIP-320), so the
        HWM is the one of that leader epoch: a leader at another epoch answers
        FENCED/UNKNOWN_LEADER_EPOCH, raised as ObserveError (ask again). Other errors are
        raised too.

        The observer applies the OFFSET_NOT_AVAILABLE condition itself too: an answer below
        the start of its leader epoch gives (None, None). The broker's check (the KIP-207
        guard) is raced: Partition.fetchOffsetForTimestamp reads the HWM twice (3.9
        Partition.scala:1583/1596), so a follower fetch between the reads lets the stale HWM
        through (seen on 3.9.1: HWM 4 at epoch 1, which starts at 5). The epoch start is
        asked once per leader epoch (``_epoch_start``)."""
        if leader is None or leader < 0 or not self.cluster.is_running(leader):
            return None, None
        tp = TopicPartition(topic, partition)
        req = KafkaAdminClient._list_partition_offsets_request({tp: OffsetSpec.LATEST}, 0)
        if leader_epoch is not None and leader_epoch >= 0:
            req.topics[0].partitions[0].current_leader_epoch = leader_epoch
        resp = self._send(leader, req)
        try:
            found = KafkaAdminClient._list_partition_offsets_process_response(resp)[tp]
        except kafka_errors.OffsetNotAvailableError:
            return None, None
        except (kafka_errors.FencedLeaderEpochError, kafka_errors.UnknownLeaderEpochError) as exc:
            raise ObserveError(f"{topic}-{partition}: broker {leader} is not the leader at "
                               f"epoch {leader_epoch} ({type(exc).__name__})") from exc
        offset, epoch = int(found.offset), found.leader_epoch
        if epoch is not None and epoch > 0 and offset < self._epoch_start(
                topic, partition, leader, epoch):
            return None, None
        return offset, epoch

    def hidden_below(self, topic: str, partition: int, leader: int | None,
                     leader_epoch: int | None) -> int | None:
        """When ``hwm`` gave None for a running leader at ``leader_epoch`` (> 0), the bound
        the hidden HWM is below: the start of that epoch (both the broker's
        OFFSET_NOT_AVAILABLE and the observer's own guard mean exactly "HWM below it"), kept in
        the observation as ``hwm_below``: a new leader that has not learned the HWM yet can
        be told from one that has, offline. None: no leader, or no epoch before."""
        if leader is None or leader < 0 or not leader_epoch or leader_epoch <= 0 \
                or not self.cluster.is_running(leader):
            return None
        start = self._epoch_start(topic, partition, leader, leader_epoch)
        return start if start > 0 else None

    def _epoch_start(self, topic: str, partition: int, leader: int, epoch: int) -> int:
        """Where leader epoch ``epoch`` starts on broker ``leader`` (-1: no bound), asked once
        per (partition, leader, epoch): OffsetsForLeaderEpoch as a consumer asks it, for the
        end of epoch ``epoch - 1``, which is the start the leader gave ``epoch`` in its epoch
        cache when it became leader (Partition.makeLeader, maybeAssignEpochStartOffset). An
        error (the leader moved on, or is not the leader) raises ObserveError: ask again."""
        key = (topic, partition, leader, epoch)
        if key not in self._epoch_starts:
            _Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
            req = OffsetForLeaderEpochRequest(replica_id=-1, topics=[_Topic(
                topic=topic, partitions=[_Topic.OffsetForLeaderPartition(
                    partition=partition, current_leader_epoch=epoch,
                    leader_epoch=epoch - 1)])])
            resp = self._send(leader, req)
            found = [p for t in resp.topics if t.topic == topic
                     for p in t.partitions if p.partition == partition]
            if not found:
                raise ObserveError(f"{topic}-{partition}: no OffsetsForLeaderEpoch answer "
                                   f"from broker {leader}")
            if found[0].error_code:
                error = kafka_errors.for_code(found[0].error_code).__name__
                raise ObserveError(f"{topic}-{partition}: broker {leader} gave no start of "
                                   f"epoch {epoch} ({error})")
            end = int(found[0].end_offset)
            self._epoch_starts[key] = end if end >= 0 else -1
        return self._epoch_starts[key]

