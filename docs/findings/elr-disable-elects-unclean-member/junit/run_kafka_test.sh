#!/bin/sh
# This finding's JUnit tests (ReplicationControlManagerTest-methods.java) pasted into a
# release's own ReplicationControlManagerTest and run (docs/findings/tools/run_kafka_test.sh
# does the work; its header says how).
#
#   junit/run_kafka_test.sh VERSION [--libs DIR] [--all | --class C ...]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
METHODS_FILE="$HERE/ReplicationControlManagerTest-methods.java" \
METHODS="testElrDisabledLiveDoesNotElectUncleanlyShutDownElrMember
  testElrDisabledLiveRemovesElrFieldsOnNextPartitionChange
  testElrOnDoesNotElectUncleanlyShutDownElrMember" \
  exec "$HERE/../../tools/run_kafka_test.sh" "$@"
