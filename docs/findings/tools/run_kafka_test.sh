#!/bin/sh
# Shared by the findings (each finding's junit/run_kafka_test.sh calls it with its methods
# file in METHODS_FILE and its test methods in METHODS, space-separated).
# Pastes METHODS_FILE into a release's own
# org.apache.kafka.controller.ReplicationControlManagerTest (from its published test-sources
# jar), compiles that file against the build's jars and its published test jars, and runs the
# pasted tests with the JUnit console launcher; --all runs the whole class (Kafka's own tests
# of ReplicationControlManager with the pasted ones); --class C (repeatable) runs Kafka's own
# test class org.apache.kafka.controller.C instead (e.g. PartitionChangeBuilderTest,
# QuorumControllerTest). Needs a JDK 17, mvn, and network access to Maven Central. Nothing of
# kafka-chaos is used.
#
#   METHODS_FILE=F METHODS="m1 m2(boolean)" tools/run_kafka_test.sh VERSION [--libs DIR] [--sed EXPR ...] [--all | --class C ...]
#
# VERSION: the release whose test sources and test jars are used (4.3 API: 4.3.x, 4.4.x).
# --libs DIR: the build's jars (default: kafka-chaos's cache of VERSION, or a distribution's
# libs/, e.g. the patched one a finding's fix/build_fixed_dist.sh makes).
# --sed EXPR (repeatable): a sed expression applied to the pasted ReplicationControlManagerTest
# source before it is compiled, for running one release's tests against a later build's jars
# whose test jars Maven Central does not serve (4.3.1's against 4.4.0's: --sed
# 's/org\.apache\.kafka\.common\.utils\.LogContext/org.apache.kafka.common.utils.internals.LogContext/',
# LogContext having moved in 4.4). Only that one source file is changed; the test jars' classes
# (e.g. PartitionChangeBuilderTest, QuorumControllerTest) run as published.
# Exit status: the launcher's (0 every test passed, 1 a test failed), 2 on a setup error.
set -eu
: "${METHODS_FILE:?set METHODS_FILE to the test methods to paste}" "${METHODS:?set METHODS}"
VERSION=${1:?usage: run_kafka_test.sh VERSION [--libs DIR] [--all | --class C ...]}
shift
LIBS=${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/kafka/$VERSION/libs
ALL=
CLASSES=
SEDS=
while [ $# -gt 0 ]; do
  case "$1" in
    --libs) LIBS=$2; shift 2 ;;
    --all) ALL=1; shift ;;
    --sed) SEDS="$SEDS$2
"; shift 2 ;;
    --class) CLASSES="$CLASSES --select-class org.apache.kafka.controller.$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -d "$LIBS" ] || { echo "no build jars at $LIBS (give --libs DIR)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fetch() {  # group:artifact:version:jar[:classifier]
  mvn -B -q --no-transfer-progress dependency:copy -Dartifact="$1" -DoutputDirectory="$WORK/jars" \
    || { echo "Maven could not fetch $1" >&2; exit 2; }
}
for a in kafka-metadata kafka-clients kafka-server-common; do
  fetch "org.apache.kafka:$a:$VERSION:jar:test"
done
fetch "org.apache.kafka:kafka-metadata:$VERSION:jar:test-sources"
fetch "org.junit.platform:junit-platform-console-standalone:1.13.4:jar"
TEST=org/apache/kafka/controller/ReplicationControlManagerTest.java
(cd "$WORK" && unzip -q "jars/kafka-metadata-$VERSION-test-sources.jar" "$TEST")
# The methods go before the class's last closing brace.
last=$(grep -n '^}' "$WORK/$TEST" | tail -1 | cut -d: -f1)
{ head -n $((last - 1)) "$WORK/$TEST"; cat "$METHODS_FILE"; echo "}"; } \
  > "$WORK/pasted.java"
mv "$WORK/pasted.java" "$WORK/$TEST"
if [ -n "$SEDS" ]; then
  printf '%s' "$SEDS" > "$WORK/adapt.sed"
  sed -f "$WORK/adapt.sed" "$WORK/$TEST" > "$WORK/adapted.java"
  mv "$WORK/adapted.java" "$WORK/$TEST"
fi
CP="$WORK/jars/*:$LIBS/*"
mkdir -p "$WORK/classes"
javac -proc:none -nowarn -encoding UTF-8 -cp "$CP" -d "$WORK/classes" "$WORK/$TEST"
if [ -n "$CLASSES" ]; then
  SELECT=$CLASSES
elif [ -n "$ALL" ]; then
  SELECT="--select-class org.apache.kafka.controller.ReplicationControlManagerTest"
else
  SELECT=""
  for m in $METHODS; do
    SELECT="$SELECT --select-method org.apache.kafka.controller.ReplicationControlManagerTest#$m"
  done
fi
# shellcheck disable=SC2086
java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$WORK/classes:$CP" \
  org.junit.platform.console.ConsoleLauncher execute --disable-banner --disable-ansi-colors \
  --details=tree $SELECT
