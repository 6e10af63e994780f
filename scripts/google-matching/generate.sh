#!/bin/sh
# Runs Google's Exposure Notification matching on seeded scenarios and writes the fixtures that
# enctl's detection is compared with.
#
#   scripts/google-matching/generate.sh GOOGLE_CHECKOUT OUT_DIR [SEED]
#
# GOOGLE_CHECKOUT: a clone of google/exposure-notifications-internals at $PINNED_COMMIT.
# Needs Debian's openjdk-17-jdk-headless, protobuf-compiler, libprotobuf-java, libguava-java,
# libjoda-time-java, libgoogle-gson-java and python3. Nothing of Google's, nor anything built from
# it, is written outside a temporary directory except the scenarios' results.
set -eu

PINNED_COMMIT=aaada6ce5cad0ea1493930591557f8053ef4f113

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 GOOGLE_CHECKOUT OUT_DIR [SEED]" >&2
    exit 64
fi
checkout=$1
out_dir=$2
seed=${3:-46}
here=$(cd "$(dirname "$0")" && pwd)

if ! commit=$(git -C "$checkout" rev-parse HEAD 2>/dev/null); then
    echo "$0: $checkout is not a git clone (of google/exposure-notifications-internals)" >&2
    exit 66
fi
if [ "$commit" != "$PINNED_COMMIT" ]; then
    echo "$0: $checkout is at $commit, not the pinned $PINNED_COMMIT" >&2
    exit 65
fi
for jar in protobuf guava joda-time gson; do
    if [ ! -e "/usr/share/java/$jar.jar" ]; then
        echo "$0: /usr/share/java/$jar.jar is missing (Debian's lib${jar%-time}*-java)" >&2
        exit 69
    fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
google_java="$checkout/exposurenotification/src/main/java"

# Google's .proto files, without the nanopb options that only its C++ matcher uses.
mkdir -p "$work/proto" "$work/src"
cp "$checkout"/exposurenotification/src/main/proto/*.proto "$work/proto/"
sed -i -e '/import "nanopb.proto";/d' -e 's/ *\[(nanopb)[^]]*\]//' "$work/proto/exposure_key_export.proto"
protoc --java_out="$work/src" -I "$work/proto" "$work"/proto/*.proto

# Google's sources, with the stubs laid over them (they replace Google's in-memory stand-ins for
# its stores and its file-reading MatchingRequest); javac compiles only what Main reaches.
cp -R "$google_java"/. "$work/src/"
cp -R "$here/stubs"/. "$work/src/"
cp -R "$here/harness"/. "$work/src/"

classpath=/usr/share/java/protobuf.jar:/usr/share/java/guava.jar:/usr/share/java/joda-time.jar:/usr/share/java/gson.jar
mkdir -p "$work/classes"
javac -nowarn -encoding UTF-8 -d "$work/classes" -cp "$classpath" -sourcepath "$work/src" \
    "$work/src/com/google/samples/exposurenotification/matching/Main.java"

now=$(date +%s)
python3 "$here/scenarios.py" --seed "$seed" --now "$now" > "$work/scenarios.json"
mkdir -p "$out_dir"
java -cp "$work/classes:$classpath" com.google.samples.exposurenotification.matching.Main \
    "$work/scenarios.json" "$out_dir/scenarios.json" "$PINNED_COMMIT"
echo "wrote $out_dir/scenarios.json (seed $seed, now $now)"
