#!/bin/bash
# trixie-root.sh: a Debian trixie root (debootstrap, minbase) with Debian's own Swift 6.0.3
# (`swiftlang`), lld and the -dev packages enagent builds with, made once and cached like the
# lab's kernel: the marker written last says it is whole, so a root left half-made is never used.
# Then runs a command in it as root, with the project bound at /src and the Swift packages' mirror
# (git's url.insteadOf of the host) at the same path as on the host.
#
# Usage: scripts/trixie-root.sh [COMMAND...]      (no COMMAND: make the root and print its path)
# Env:   TRIXIE_ROOT (default /var/cache/enagent/trixie-swift6.0)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT=$(cd "$HERE/.." && pwd)
ROOT=${TRIXIE_ROOT:-/var/cache/enagent/trixie-swift6.0}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
. "$HERE/cached-root.sh"
# What enagent builds and tests with (scripts/install-deps.sh has the same list for the host),
# Swift and its linker, git for SwiftPM, and dbus-daemon for the tests' private buses.
# g++: libstdc++'s static library and headers, which --static-swift-stdlib links.
# python3-cryptography (and python3-cffi-backend, which debootstrap'd roots leave unresolved): the
# tests' loopback health authority signs and checks ES256 certificates. sqlite3: the tests of
# enctl detect offline --db change a database's schema version with it.
PACKAGES="swiftlang lld g++ git ca-certificates pkg-config make python3 python3-cryptography python3-cffi-backend sqlite3 openssl dbus-daemon dbus
libssl-dev libdbus-1-dev libsystemd-dev libsqlite3-dev zlib1g-dev libbluetooth-dev libcurl4-openssl-dev"

make_trixie_root trixie-root "$ROOT" "$(dirname "$ROOT")"/trixie-swift "swiftlang: a few minutes, about 3 GB" $PACKAGES
install_missing trixie-root "$ROOT" "$(dirname "$ROOT")/trixie-swift-apt.log" $PACKAGES
[ $# -gt 0 ] || { echo "$ROOT"; exit 0; }

# The host's git rewrites github.com to a local mirror of the Swift packages: the same inside.
git_rewrites=$(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true)
mirrors=()
while read -r key value; do
    [ -n "$key" ] || continue
    directory=${key#url.}; directory=${directory%.insteadof}
    [ -d "$directory" ] && mirrors+=("$directory")
    chroot "$ROOT" git config --system --add "$key" "$value"
done <<< "$git_rewrites"
status=0
# A mount namespace of its own, with private propagation, as scripts/trixie-cockpit-root.sh has:
# every mount is gone when the command ends, whatever way it ends. Mounts on the host outlived a
# run killed before its cleanup, and a bind of a project deleted since refused every later run's.
# The root's own bind carries none of the mounts below it, so none left by such a run either.
unshare --mount --propagation private /bin/bash -c '
set -eu
root=$1 project=$2; shift 2
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
# Not in /dev'"'"'s bind (it takes no mount below it): the tests run enctl on a pseudo-terminal.
mount --bind /dev/pts "$root/dev/pts"
mount -t tmpfs tmpfs "$root/tmp"
mkdir -p "$root/src"
mount --bind "$project" "$root/src"
while [ "$1" != -- ]; do mkdir -p "$root$1"; mount --bind "$1" "$root$1"; shift; done
shift
exec chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    sh -c "cd /src && exec \"\$@\"" trixie-root "$@"
' trixie-root "$ROOT" "$PROJECT" ${mirrors[@]+"${mirrors[@]}"} -- "$@" || status=$?
# The rewrites were for this run: the next adds them again.
while read -r key value; do [ -n "$key" ] && chroot "$ROOT" git config --system --unset-all "$key" || true; done <<< "$git_rewrites"
exit $status
