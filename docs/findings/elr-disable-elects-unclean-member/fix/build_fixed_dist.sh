#!/bin/sh
# Build a Kafka distribution directory with this finding's fix (elr-off-ignores-elr.patch) applied to
# PartitionChangeBuilder, for `kafka-chaos run/java --kafka-dist DIR` and junit/run_kafka_test.sh
# --libs DIR/libs (docs/findings/tools/build_fixed_dist.sh does the work).
#
#   docs/findings/elr-disable-elects-unclean-member/fix/build_fixed_dist.sh [VERSION] [OUT]
#
# VERSION (default 4.3.1; 4.4.0 too: its sources jar is not served, so the 4.3.1 source is made
# into 4.4.0's by docs/findings/tools/reconstruct/4.4.0/ and checked against the 4.4.0 class
# files before the patch is applied) must be in kafka-chaos's build cache; OUT defaults to
# /tmp/kafka-VERSION-elr-disable-fix.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=${1:-4.3.1}
exec "$HERE/../../tools/build_fixed_dist.sh" "$VERSION" "${2:-/tmp/kafka-$VERSION-elr-disable-fix}" \
  org/apache/kafka/controller/PartitionChangeBuilder "$HERE/elr-off-ignores-elr.patch"
