"""The observer: reads cluster state over the wire on a path faults never touch.

Per partition: leader, leader epoch, replicas, ISR, ELR, LastKnownELR (DescribeTopicPartitions,
API key 75), HWM (ListOffsets to the leader), and which brokers are fenced (DescribeCluster).
It asks a broker whose view is current: one that is running and, as far as the harness's
own fault table knows, connected to the controllers.

DescribeTopicPartitions exists from Kafka 3.8 (KIP-966). A build without it (the probed
feature ``describe_topic_partitions``, decided once per build, not per poll) is observed with
the Metadata API (leader, leader epoch, replicas, ISR), and ELR and LastKnownELR are taken from
the controller's metadata log where its partition records carry them (PartitionRecord /
PartitionChangeRecord version 2+, written only under a metadata.version with ELR support);
otherwise they are None: unobservable, which the model comparison skips (never ``[]``, which
would claim "known empty").

One module per API or state read, composed by ``observer.Observer``:

- ``connection``: the admin client, sending requests, checking each answer's cluster, looks
- ``partitions``: the brokers' partition views (DescribeTopicPartitions or Metadata)
- ``brokers``: fenced brokers (DescribeCluster)
- ``offsets``: the HWM (ListOffsets) and the start of its leader epoch (OffsetsForLeaderEpoch)
- ``quorum``: the metadata quorum (DescribeQuorum)
- ``controller_log``: a partition replayed from a controller's metadata log on disk
- ``reassignment``: an ongoing reassignment (ListPartitionReassignments)
- ``logdirs``: each replica's log directory and the offline directories (DescribeLogDirs)
- ``observer``: the observer, one partition's state from all of the above
"""

from harness.client.observe.connection import ObserveError, admin_errors
from harness.client.observe.controller_log import elr_from_records
from harness.client.observe.observer import STATE_FIELDS, Observer
from harness.client.observe.reassignment import reassignment_state

__all__ = ["STATE_FIELDS", "ObserveError", "Observer", "admin_errors", "elr_from_records",
           "reassignment_state"]
