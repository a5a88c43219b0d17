#!/bin/sh
# Build a Kafka distribution directory with the suggested fix (elr-off-ignores-elr.patch)
# applied to PartitionChangeBuilder, for `kafka-chaos run/java --kafka-dist DIR` and
# junit/run_kafka_test.sh --libs DIR/libs.
#
#   docs/findings/elr-disable-elects-unclean-member/fix/build_fixed_dist.sh [VERSION] [OUT]
#
# VERSION (default 4.3.1) must be in kafka-chaos's build cache (run any kafka-chaos command
# with --kafka-version VERSION first). The kafka-metadata sources jar comes from Maven Central
# (mvn dependency:get). OUT (default /tmp/kafka-VERSION-elr-disable-fix) gets libs/: the cached
# jars, hard-linked, except kafka-metadata-VERSION.jar, copied with the patched
# org.apache.kafka.controller.PartitionChangeBuilder classes in it.
set -eu
VERSION=${1:-4.3.1}
OUT=${2:-/tmp/kafka-$VERSION-elr-disable-fix}
HERE=$(cd "$(dirname "$0")" && pwd)
LIBS=${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/kafka/$VERSION/libs
[ -f "$LIBS/kafka-metadata-$VERSION.jar" ] || { echo "no cached build $VERSION at $LIBS" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mvn -B -q dependency:get -Dartifact="org.apache.kafka:kafka-metadata:$VERSION:jar:sources" -Dtransitive=false
SRC="$HOME/.m2/repository/org/apache/kafka/kafka-metadata/$VERSION/kafka-metadata-$VERSION-sources.jar"
CLASS=org/apache/kafka/controller/PartitionChangeBuilder
mkdir -p "$WORK/src/metadata/src/main/java" "$WORK/classes"
(cd "$WORK/src/metadata/src/main/java" && unzip -q "$SRC" "$CLASS.java")
(cd "$WORK/src" && patch -s -p1 < "$HERE/elr-off-ignores-elr.patch")
javac -proc:none -nowarn -cp "$LIBS/*" -d "$WORK/classes" "$WORK/src/metadata/src/main/java/$CLASS.java"
rm -rf "$OUT"
mkdir -p "$OUT/libs"
for jar in "$LIBS"/*.jar; do ln "$jar" "$OUT/libs/" 2>/dev/null || cp "$jar" "$OUT/libs/"; done
rm "$OUT/libs/kafka-metadata-$VERSION.jar"
cp "$LIBS/kafka-metadata-$VERSION.jar" "$OUT/libs/"
(cd "$WORK/classes" && jar uf "$OUT/libs/kafka-metadata-$VERSION.jar" $CLASS*.class)
echo "$OUT (Kafka $VERSION, PartitionChangeBuilder patched: $(ls "$WORK/classes/org/apache/kafka/controller" | wc -l) class files)"
