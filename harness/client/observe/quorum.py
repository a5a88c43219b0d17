"""The KRaft quorum of the metadata log: the active controller, its epoch, the high
watermark and the voters' and observers' lag, DescribeQuorum (API key 55) asked of a
current broker."""

from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeQuorumRequest

from harness.client.observe.connection import Connection, ObserveError


class QuorumState(Connection):
    def quorum(self) -> dict[str, Any]:
        """KRaft quorum of the metadata log: leader (the active controller), epoch, high
        watermark, voters' and observers' log end offsets and the voters' lag behind the
        high watermark."""
        part = self._describe_quorum()
        hw = part["high_watermark"]
        voters = {v["replica_id"]: v["log_end_offset"] for v in part["current_voters"]}
        state = {"leader": part["leader_id"], "leader_epoch": part["leader_epoch"],
                 "high_watermark": hw, "voters": voters,
                 "observers": {o["replica_id"]: o["log_end_offset"] for o in part["observers"]},
                 "lag": {c: max(0, hw - leo) for c, leo in voters.items()
                         if leo is not None and leo >= 0}}
        # Brokers replicate the metadata log as observers: how far each one's view is
        # behind the quorum's high watermark (what that broker believes lags by so much).
        state["observer_lag"] = {b: max(0, hw - leo) for b, leo in state["observers"].items()
                                 if leo is not None and leo >= 0}
        if self.record:
            self.cluster.history.record("quorum", state=state)
        return state

    def _describe_quorum(self) -> dict[str, Any]:
        """The metadata partition of DescribeQuorum, asked of a current broker (it forwards
        the request to the active controller it knows). Sent here rather than through
        KafkaAdminClient.describe_metadata_quorum, which (kafka-python 3.0.12) reads a
        per-partition error_message that versions 0-1 (Kafka 3.7 and older) do not carry."""
        request = self._quorum_request()
        last: Exception | None = None
        nodes: list[int | None] = [*self._current()] or [None]
        for node in nodes:
            try:
                resp = self._send_any(request) if node is None else \
                    self._send_once(("DescribeQuorum",), node, request)
            except Exception as exc:  # noqa: BLE001 - the next current broker may answer
                last = exc
                continue
            part = resp.to_dict()["topics"][0]["partitions"][0]
            if part.get("error_code"):
                last = ObserveError(f"DescribeQuorum: error {part['error_code']}")
                continue
            return dict(part)
        raise ObserveError(f"DescribeQuorum: no current broker answered ({last})")

    @staticmethod
    def _quorum_request() -> Any:
        topic = DescribeQuorumRequest.TopicData
        return DescribeQuorumRequest(topics=[topic(
            topic_name="__cluster_metadata",
            partitions=[topic.PartitionData(partition_index=0)])])

    def quorum_fields(self) -> dict[str, Any]:
        """What a partition observation carries of the quorum when there are several
        controllers: ``controller`` (the active one), ``quorum_epoch``, the voters'
        ``quorum_lag`` and each broker's ``broker_metadata_lag`` (its metadata log behind the
        high watermark, DescribeQuorum's observers); None where DescribeQuorum could not be
        answered."""
        if len(self.cluster.shape.controller_ids) < 2:
            return {}
        try:
            q = self.quorum()
        except Exception:  # noqa: BLE001 - e.g. no broker reaches the active controller
            return {"controller": None, "quorum_epoch": None, "quorum_lag": None,
                    "broker_metadata_lag": None}
        leader = q["leader"]
        return {"controller": leader if leader is not None and leader >= 0 else -1,
                "quorum_epoch": q["leader_epoch"], "quorum_lag": q["lag"],
                "broker_metadata_lag": q["observer_lag"]}
