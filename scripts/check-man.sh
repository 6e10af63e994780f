#!/bin/sh
# check-man.sh [SCRATCH]: fails when a man page does not render without warnings (`man --warnings`,
# as lintian runs it) or when the committed enctl.1 and enagentd.8 in man/ differ from what
# `make man` would write now from the debug build in SCRATCH (default .build).
set -eu
SCRATCH=${1:-.build}
cd "$(dirname "$0")/.."
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
status=0
for page in man/*.[1-8]; do
    warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null) || true
    if [ -n "$warnings" ]; then
        echo "$warnings"
        echo "check-man: $page: man reports the above"
        status=1
    fi
done
scripts/generate-man.sh "$fresh" "$SCRATCH"
for page in enctl.1 enagentd.8; do
    if ! cmp -s "man/$page" "$fresh/$page"; then
        diff -u "man/$page" "$fresh/$page" | head -n 40 || true
        echo "check-man: man/$page is stale: run \`make man\` and commit it"
        status=1
    fi
done
[ "$status" -ne 0 ] || echo "check-man: the man pages render cleanly and enctl.1 and enagentd.8 are up to date"
exit "$status"
