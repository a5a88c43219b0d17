#!/bin/sh
# Shared by the findings (each finding's fix/build_fixed_dist.sh calls it with its patch and
# the class it patches). Builds a Kafka distribution directory with PATCH applied to CLASS
# (org/apache/kafka/controller/...), for `kafka-chaos run/java --kafka-dist DIR` and
# junit/run_kafka_test.sh --libs DIR/libs.
#
#   tools/build_fixed_dist.sh VERSION OUT CLASS PATCH
#
# VERSION must be in kafka-chaos's build cache (run any kafka-chaos command with
# --kafka-version VERSION first). The kafka-metadata sources jar comes from Maven Central
# (mvn dependency:get). OUT gets libs/: the cached jars, hard-linked, except
# kafka-metadata-VERSION.jar, copied with the patched CLASS classes in it.
set -eu
VERSION=${1:?usage: build_fixed_dist.sh VERSION OUT CLASS PATCH}
OUT=${2:?OUT}
CLASS=${3:?CLASS}
PATCH=${4:?PATCH}
LIBS=${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/kafka/$VERSION/libs
[ -f "$LIBS/kafka-metadata-$VERSION.jar" ] || { echo "no cached build $VERSION at $LIBS" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mvn -B -q dependency:get -Dartifact="org.apache.kafka:kafka-metadata:$VERSION:jar:sources" -Dtransitive=false
SRC="$HOME/.m2/repository/org/apache/kafka/kafka-metadata/$VERSION/kafka-metadata-$VERSION-sources.jar"
mkdir -p "$WORK/src/metadata/src/main/java" "$WORK/classes"
(cd "$WORK/src/metadata/src/main/java" && unzip -q "$SRC" "$CLASS.java")
(cd "$WORK/src" && patch -s -p1 < "$PATCH")
javac -proc:none -nowarn -cp "$LIBS/*" -d "$WORK/classes" "$WORK/src/metadata/src/main/java/$CLASS.java"
rm -rf "$OUT"
mkdir -p "$OUT/libs"
for jar in "$LIBS"/*.jar; do ln "$jar" "$OUT/libs/" 2>/dev/null || cp "$jar" "$OUT/libs/"; done
rm "$OUT/libs/kafka-metadata-$VERSION.jar"
cp "$LIBS/kafka-metadata-$VERSION.jar" "$OUT/libs/"
(cd "$WORK/classes" && jar uf "$OUT/libs/kafka-metadata-$VERSION.jar" $CLASS*.class)
echo "$OUT (Kafka $VERSION, $(basename "$CLASS") patched: $(ls "$WORK/classes/org/apache/kafka/controller" | wc -l) class files)"
