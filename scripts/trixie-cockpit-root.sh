#!/bin/bash
# trixie-cockpit-root.sh: a Debian trixie root (debootstrap, minbase) with trixie's own Cockpit,
# chromium and what the amd64 package depends on, made once and cached as scripts/trixie-root.sh
# caches its root (the marker written last says it is whole), for `make test-cockpit-trixie`:
# cockpit/browser-test.py run against the Cockpit that Raspberry Pi OS (Debian 13) gets from apt.
# Then runs a command in it as root, with the project bound at /src, in a mount namespace of its
# own (its mounts vanish with it): /proc, /sys, /dev, /dev/pts, a fresh /dev/shm and /tmp.
#
# Usage: scripts/trixie-cockpit-root.sh [COMMAND...]  (no COMMAND: make the root and print its path)
# Env:   TRIXIE_COCKPIT_ROOT (default /var/cache/enagent/trixie-cockpit)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT=$(cd "$HERE/.." && pwd)
ROOT=${TRIXIE_COCKPIT_ROOT:-/var/cache/enagent/trixie-cockpit}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
. "$HERE/cached-root.sh"
# What the browser test runs (make test-cockpit installs the same on the host): Cockpit without its
# Recommends, as README's command installs it; chromium and python3-websocket to drive it; bluez,
# dbus and the package's library Depends (dpkg-deb -f dist/enagent_*_amd64.deb Depends: trixie's
# t64 libraries provide libcurl4 and libssl3, and cockpit-ws brings systemd, which provides
# systemd-sysusers), so that apt in the test's network-less namespace installs the two packages and
# downloads nothing; python3-cryptography (and python3-cffi-backend, which debootstrap'd roots
# leave unresolved) for the test's health authority; setpriv, unshare, mount (util-linux, mount),
# usermod (passwd), ip (iproute2), openssl and curl.
PACKAGES="cockpit cockpit-ws cockpit-bridge cockpit-system chromium python3 python3-websocket python3-cryptography python3-cffi-backend
bluez dbus dbus-daemon libbluetooth3 libcurl4t64 libdbus-1-3 libsqlite3-0 libssl3t64 libsystemd0 zlib1g init-system-helpers
openssl curl iproute2 passwd util-linux mount ca-certificates"

make_trixie_root trixie-cockpit-root "$ROOT" "$(dirname "$ROOT")"/trixie-cockpit "Cockpit and chromium: some 2 minutes, about 1.1 GB" $PACKAGES
install_missing trixie-cockpit-root "$ROOT" "$(dirname "$ROOT")/trixie-cockpit-apt.log" $PACKAGES
[ $# -gt 0 ] || { echo "$ROOT"; exit 0; }

# A mount namespace of its own, with private propagation: nothing mounted here reaches the host's
# /dev, and every mount is gone when the command ends, whatever way it ends.
exec unshare --mount --propagation private /bin/bash -c '
set -eu
root=$1 project=$2; shift 2
# The root a mount of its own, so that the namespaces that the command makes (unshare
# --propagation) find a mount at its /.
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mkdir -p "$root/src"
mount --bind "$project" "$root/src"
exec chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    sh -c "cd /src && exec \"\$@\"" trixie-cockpit-root "$@"
' trixie-cockpit-root "$ROOT" "$PROJECT" "$@"
