#!/bin/sh
# check-footprint.sh DEB: the package's size and its binaries' (installed, stripped) against the
# footprint goals a Raspberry Pi sets (docs/performance.md), and no ICU data in them (full
# Foundation's, which FoundationEssentials leaves out). Prints each figure; fails on a miss.
# With FIGURES=write, a package that passes has its sizes recorded in
# docs/figures/footprint-ARCH.json, which docs/performance.md renders (scripts/render-figures.py).
set -eu
DEB=$1
FIGURES=${FIGURES:-}
case $FIGURES in
    "" | write) ;;
    *) echo "check-footprint: FIGURES=$FIGURES: only FIGURES=write records the figures" >&2; exit 64 ;;
esac
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
PACKAGE_LIMIT=20000000 ENAGENTD_LIMIT=20000000 ENCTL_LIMIT=25000000
package_bytes=$(stat -c %s "$DEB")
enagentd_bytes=$(stat -c %s "$ROOT/usr/sbin/enagentd")
enctl_bytes=$(stat -c %s "$ROOT/usr/bin/enctl")
limit "package $(basename "$DEB")" "$package_bytes" $PACKAGE_LIMIT
limit enagentd "$enagentd_bytes" $ENAGENTD_LIMIT
limit enctl "$enctl_bytes" $ENCTL_LIMIT
# ICU's data names each of its resources "icudtNNl/…" (NN its version): one such name is enough.
for binary in "$ROOT/usr/sbin/enagentd" "$ROOT/usr/bin/enctl"; do
    if grep -a -q -E 'icudt[0-9]+l/' "$binary"; then
        echo "check-footprint: FAILED $(basename "$binary") carries ICU's data (full Foundation is linked in)"
        failed=1
    else
        echo "check-footprint: ok $(basename "$binary") carries no ICU data"
    fi
done
if [ "$FIGURES" = write ]; then
    # The figures of a package that misses a goal do not become the documentation's.
    [ $failed = 0 ] || { echo "check-footprint: figures not recorded: the package misses a goal" >&2; exit 1; }
    figures="$(cd "$(dirname "$0")/.." && pwd)/docs/figures/footprint-$architecture.json"
    mkdir -p "$(dirname "$figures")"
    cat > "$figures" <<EOF
{
  "architecture": "$architecture",
  "built": "$(date -u -r "$DEB" +%Y-%m-%dT%H:%M:%SZ)",
  "enagentdBytes": $enagentd_bytes,
  "enctlBytes": $enctl_bytes,
  "icuData": false,
  "limits": {
    "enagentdBytes": $ENAGENTD_LIMIT,
    "enctlBytes": $ENCTL_LIMIT,
    "packageBytes": $PACKAGE_LIMIT
  },
  "measured": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "package": "$(basename "$DEB")",
  "packageBytes": $package_bytes,
  "version": "$(dpkg-deb -f "$DEB" Version)"
}
EOF
    echo "check-footprint: figures recorded in $figures (scripts/render-figures.py write renders them)"
fi
exit $failed
