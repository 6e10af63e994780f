#!/bin/bash
# service-lab.sh DEB [COCKPIT_DEB]: enagent as a Debian system service, checked the way a user
# meets it. Boots the lab's guest with systemd as PID 1 and Debian's own dbus and bluetooth
# services, two emulated controllers (hci0 for enagentd, hci1 for phones), installs DEB with dpkg -i
# with the Swift toolchain hidden, and runs lab/systemd/checks.sh; with COCKPIT_DEB (cockpit-enagent),
# installs it too, starts cockpit.socket and logs in over TLS on port 9090 (the guest's Cockpit is
# the host's cockpit-ws, seen through its root). The guest records what it saw; lab/service-report.py
# judges each check on the host and prints them and the figures; fails unless every check held. (make lab-service; make lab-arm64 on
# an arm64 guest root, without COCKPIT_DEB: that root has no Cockpit)
# Env: LAB (default /tmp/enagent-lab), SWIFT (swift: whose directories the guest hides),
#      BTVIRT_OPTS (-l2; -Ll2: BT 4.x controllers), INSTALL (dpkg -i; how the guest installs DEB),
#      and lab/boot-lab.sh's ARCH, GUEST_ROOT and KERNEL_DEB (a guest root with no toolchain to hide).
set -euo pipefail
DEB=$1 COCKPIT_DEB=${2:-}
[ -f "$DEB" ] || { echo "service-lab: no package $DEB (make deb or make deb-arm64 builds it)" >&2; exit 64; }
[ -z "$COCKPIT_DEB" ] || [ -f "$COCKPIT_DEB" ] || { echo "service-lab: no package $COCKPIT_DEB (make deb builds it)" >&2; exit 64; }
LAB=${LAB:-/tmp/enagent-lab}
HERE=$(cd "$(dirname "$0")" && pwd)
SD=$LAB/sd
rm -rf "$SD"; mkdir -p "$SD"
BTVIRT_OPTS=${BTVIRT_OPTS:--l2}
for file in "$HERE"/systemd/*.service "$HERE"/systemd/radio-up.sh; do
    sed -e "s|@LAB@|$LAB|g" -e "s|@BTVIRT_OPTS@|$BTVIRT_OPTS|g" "$file" > "$SD/${file##*/}"
done
cp "$HERE"/systemd/checks.sh "$HERE"/systemd/advertised.py "$HERE"/systemd/beacon.py "$HERE"/bluez.sh "$HERE"/onair.py "$HERE"/phones.py \
    "$HERE"/snapshot.py "$HERE"/manifest.sh "$SD/"
# The health authority's servers of the command tests (Google's behaviour, file by file), for the share.
mkdir -p "$SD/servers"; cp "$HERE"/../Tests/CommandTests/Servers/*.py "$SD/servers/"
cp "$DEB" "$SD/enagent.deb"
[ -z "$COCKPIT_DEB" ] || cp "$COCKPIT_DEB" "$SD/cockpit-enagent.deb"
echo "${INSTALL:-dpkg -i}" > "$SD/install-command"

# The toolchain the guest hides (it sees the host's root): a toolchain of its own (such as
# /opt/swift/usr) whole; one installed into /usr, its runtime libraries only.
: > "$SD/toolchain-dirs"
if [ "${GUEST_ROOT:-/}" = / ] && swift_path=$(command -v "${SWIFT:-swift}"); then
    toolchain=$(dirname "$(dirname "$(readlink -f "$swift_path")")")
    if [ "$toolchain" != /usr ] && [ "$toolchain" != /usr/local ]; then
        echo "$toolchain" >> "$SD/toolchain-dirs"
    else
        "${SWIFT:-swift}" -print-target-info | python3 -c 'import json, sys
print("\n".join(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"]))' >> "$SD/toolchain-dirs"
    fi
fi

set +e
SYSTEMD_UNITS=$SD LAB=$LAB NCTRL=2 BTVIRT_OPTS=$BTVIRT_OPTS QEMU_TIMEOUT=${QEMU_TIMEOUT:-1800} "$HERE/boot-lab.sh"
rc=$?
set -e
echo
echo "enagent as a system service (lab/systemd/checks.sh, judged by lab/service-report.py; log: $LAB/out/checks.log, journal: $LAB/out/journal.txt):"
report=0; python3 "$HERE/service-report.py" "$LAB/out" --check || report=$?
if [ "$rc" != 0 ] || [ "$report" != 0 ]; then
    echo "service-lab: FAILED (guest exit $rc, report exit $report)"
    exit 1
fi
echo "service-lab: every check held"
