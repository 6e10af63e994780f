#!/bin/sh
# check-footprint.sh DEB: the package's size and its binaries' (installed, stripped) against the
# footprint goals a Raspberry Pi sets (docs/packaging.md), and no ICU data in them (full
# Foundation's 34 MB, which FoundationEssentials leaves out). Prints each figure; fails on a miss.
set -eu
DEB=$1
[ -f "$DEB" ] || { echo "check-footprint: no $DEB (make deb builds it)" >&2; exit 1; }
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
dpkg-deb -x "$DEB" "$ROOT"
failed=0
# limit NAME BYTES LIMIT
limit() {
    verdict=ok
    [ "$2" -le "$3" ] || { verdict=FAILED; failed=1; }
    echo "check-footprint: $verdict $1: $2 bytes (at most $3)"
}
# The binaries are built for the package's architecture (a cross-build that fell back to the host's
# compiler would not be).
architecture=$(dpkg-deb -f "$DEB" Architecture)
case $architecture in
    amd64) machine="x86-64" ;;
    arm64) machine="ARM aarch64" ;;
    *) machine="" ;;
esac
for binary in "$ROOT/usr/sbin/enagentd" "$ROOT/usr/bin/enctl"; do
    description=$(file -b "$binary")
    case $description in
        *"$machine"*) echo "check-footprint: ok $(basename "$binary") is $architecture: $description" ;;
        *) echo "check-footprint: FAILED $(basename "$binary") is not $architecture: $description"; failed=1 ;;
    esac
done
limit "package $(basename "$DEB")" "$(stat -c %s "$DEB")" 20000000
limit enagentd "$(stat -c %s "$ROOT/usr/sbin/enagentd")" 20000000
limit enctl "$(stat -c %s "$ROOT/usr/bin/enctl")" 25000000
# ICU's data names each of its resources "icudtNNl/…" (NN its version): one such name is enough.
for binary in "$ROOT/usr/sbin/enagentd" "$ROOT/usr/bin/enctl"; do
    if grep -a -q -E 'icudt[0-9]+l/' "$binary"; then
        echo "check-footprint: FAILED $(basename "$binary") carries ICU's data (full Foundation is linked in)"
        failed=1
    else
        echo "check-footprint: ok $(basename "$binary") carries no ICU data"
    fi
done
exit $failed
