#!/bin/sh
# verify-units.sh BIN: installs the unit files, bus policy, man pages and the binaries in BIN
# into a scratch root with `make install-files` and runs `systemd-analyze verify` on the units
# there (against this machine's own systemd units, such as sysinit.target), which also checks that
# every man page their Documentation= names exists.
set -eu
BIN=$1
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
# The units name the binaries by their place in the scratch root, which verify checks exist.
make --no-print-directory install-files DESTDIR="$ROOT" SBINDIR="$ROOT/usr/local/sbin" BINDIR="$ROOT/usr/local/bin" > /dev/null
install -D -m 0755 "$BIN/enagentd" "$ROOT/usr/local/sbin/enagentd"
install -D -m 0755 "$BIN/enctl" "$ROOT/usr/local/bin/enctl"
UNITS="enagentd.service enagent-detect.service enagent-detect.timer"
cd "$ROOT/usr/local/lib/systemd/system"
# man finds the pages in the scratch root first (the trailing colon keeps the system's own).
if output=$(MANPATH="$ROOT/usr/local/share/man:" systemd-analyze verify $UNITS 2>&1) && [ -z "$output" ]; then
    echo "verify-units: systemd-analyze verify passed on $UNITS"
else
    echo "$output"
    echo "verify-units: FAIL"
    exit 1
fi
