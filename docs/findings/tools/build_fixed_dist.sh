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
#
# A VERSION whose sources jar Maven Central does not serve (4.4.0 here): the source of
# SOURCE_VERSION is used, made into VERSION's by a reconstruction patch, and checked before the
# fix is applied. tools/reconstruct/VERSION/ holds SOURCE_VERSION (a file naming the source
# release, e.g. 4.3.1) and, per class that differs, <Class>.patch (its header says how it was
# derived); a class with no patch there is taken as it is in SOURCE_VERSION. The check: the
# reconstructed, unpatched source compiled (javac -g) against VERSION's jars must give, for
# every class file of CLASS (CLASS.class and CLASS$*.class, the same set), the same
# `javap -c -l -p` output (bytecode, line numbers, local variables; constant-pool indices
# stripped; lambda method numbers ignored, as javac 17 numbers them per class and newer javac
# per method) and the same string constants as VERSION's release jar; otherwise the script
# refuses (exit 3) and prints the first differences. Environment: SOURCE_VERSION=V overrides
# reconstruct/VERSION/SOURCE_VERSION (SOURCE_VERSION=VERSION: the release's own sources jar);
# VERIFY=1 runs the same check when the source is VERSION's own.
set -eu
VERSION=${1:?usage: build_fixed_dist.sh VERSION OUT CLASS PATCH}
OUT=${2:?OUT}
CLASS=${3:?CLASS}
PATCH=${4:?PATCH}
TOOLS=$(cd "$(dirname "$0")" && pwd)
RECON=$TOOLS/reconstruct/$VERSION
NAME=$(basename "$CLASS")
if [ -z "${SOURCE_VERSION:-}" ] && [ -f "$RECON/SOURCE_VERSION" ]; then
  SOURCE_VERSION=$(cat "$RECON/SOURCE_VERSION")
fi
SOURCE_VERSION=${SOURCE_VERSION:-$VERSION}
LIBS=${KAFKA_CHAOS_CACHE:-$HOME/.cache/kafka-chaos}/kafka/$VERSION/libs
[ -f "$LIBS/kafka-metadata-$VERSION.jar" ] || { echo "no cached build $VERSION at $LIBS" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mvn -B -q dependency:get -Dartifact="org.apache.kafka:kafka-metadata:$SOURCE_VERSION:jar:sources" -Dtransitive=false
SRC="$HOME/.m2/repository/org/apache/kafka/kafka-metadata/$SOURCE_VERSION/kafka-metadata-$SOURCE_VERSION-sources.jar"
mkdir -p "$WORK/src/metadata/src/main/java" "$WORK/classes"
(cd "$WORK/src/metadata/src/main/java" && unzip -q "$SRC" "$CLASS.java")
JAVA_FILE="$WORK/src/metadata/src/main/java/$CLASS.java"

if [ "$SOURCE_VERSION" != "$VERSION" ] && [ -f "$RECON/$NAME.patch" ]; then
  (cd "$WORK/src" && patch -s -p1 < "$RECON/$NAME.patch")
  HOW="$SOURCE_VERSION source + reconstruct/$VERSION/$NAME.patch"
elif [ "$SOURCE_VERSION" != "$VERSION" ]; then
  HOW="$SOURCE_VERSION source, no reconstruction patch"
else
  HOW="$VERSION source"
fi

# describe DIR: every class file of CLASS under DIR, normalized for the comparison.
describe() {
  for f in $(cd "$1" && ls -1 "$CLASS.class" "$CLASS"'$'*.class 2>/dev/null | LC_ALL=C sort); do
    echo "== $f"
    javap -c -l -p "$1/$f" | grep -v '^Compiled from' \
      | sed -e 's/#[0-9]*//g' -e 's/lambda\$\([A-Za-z0-9_]*\)\$[0-9]*/lambda$\1$N/g'
    echo "== string constants of $f"
    javap -v -p "$1/$f" | grep -E '^ *#[0-9]+ = String ' | sed 's|^[^/]*// *||' | LC_ALL=C sort
  done
}
if [ "$SOURCE_VERSION" != "$VERSION" ] || [ "${VERIFY:-}" = 1 ]; then
  mkdir -p "$WORK/release" "$WORK/rebuilt"
  (cd "$WORK/release" && unzip -q "$LIBS/kafka-metadata-$VERSION.jar" "$CLASS.class" "$CLASS\$*.class" 2>/dev/null \
    || unzip -q "$LIBS/kafka-metadata-$VERSION.jar" "$CLASS.class")
  javac -g -proc:none -nowarn -cp "$LIBS/*" -d "$WORK/rebuilt" "$JAVA_FILE" \
    || { echo "refusing: the $HOW does not compile against Kafka $VERSION's jars" >&2; exit 3; }
  describe "$WORK/release" > "$WORK/release.txt"
  describe "$WORK/rebuilt" > "$WORK/rebuilt.txt"
  if ! diff "$WORK/release.txt" "$WORK/rebuilt.txt" > "$WORK/check.diff"; then
    echo "refusing: $NAME from the $HOW, compiled against Kafka $VERSION's jars, is not" \
      "Kafka $VERSION's $NAME (javap -c -l -p of its class files, or their string constants," \
      "differ from kafka-metadata-$VERSION.jar; < release, > rebuilt):" >&2
    head -40 "$WORK/check.diff" >&2
    exit 3
  fi
  echo "checked: $NAME from the $HOW = Kafka $VERSION's release" \
    "($(grep -c '^== [^s]' "$WORK/release.txt") class files: bytecode, line numbers, local variables, strings)"
fi

(cd "$WORK/src" && patch -s -p1 < "$PATCH")
javac -proc:none -nowarn -cp "$LIBS/*" -d "$WORK/classes" "$JAVA_FILE"
rm -rf "$OUT"
mkdir -p "$OUT/libs"
for jar in "$LIBS"/*.jar; do ln "$jar" "$OUT/libs/" 2>/dev/null || cp "$jar" "$OUT/libs/"; done
rm "$OUT/libs/kafka-metadata-$VERSION.jar"
cp "$LIBS/kafka-metadata-$VERSION.jar" "$OUT/libs/"
(cd "$WORK/classes" && jar uf "$OUT/libs/kafka-metadata-$VERSION.jar" $CLASS*.class)
echo "$OUT (Kafka $VERSION, $NAME patched: $(ls "$WORK/classes/org/apache/kafka/controller" | wc -l) class files)"
