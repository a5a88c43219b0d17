#!/bin/sh
# This finding's JUnit tests (ReplicationControlManagerTest-methods.java) pasted into a
# release's own ReplicationControlManagerTest and run (docs/findings/tools/run_kafka_test.sh
# does the work; its header says how).
#
#   junit/run_kafka_test.sh VERSION [--libs DIR] [--sed EXPR ...] [--all | --class C ...]
#
# 4.4.0 (its test jars are not served here): 4.3.1's tests against 4.4.0's jars,
#   junit/run_kafka_test.sh 4.3.1 --libs DIR/libs --sed \
#     's/org\.apache\.kafka\.common\.utils\.LogContext/org.apache.kafka.common.utils.internals.LogContext/'
# with DIR the 4.4.0 release (~/.cache/kafka-chaos/kafka/4.4.0) or fix/build_fixed_dist.sh 4.4.0's copy.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
METHODS_FILE="$HERE/ReplicationControlManagerTest-methods.java" \
METHODS="testClearElrRecordRemovesBrokerFromElrIndex
  testUncleanShutdownOfFormerElrMemberAfterTopicDeletion(boolean)
  testUnregisterFormerElrMemberAfterTopicDeletion
  testUncleanShutdownOfBrokerBackInElrWritesOneChange" \
  exec "$HERE/../../tools/run_kafka_test.sh" "$@"
