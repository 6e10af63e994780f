#!/bin/bash
# trixie-guest.sh ARCH: a lab guest's root, a Debian trixie system (what Raspberry Pi OS is now
# based on) for amd64 or arm64, made once with debootstrap and cached, as scripts/trixie-root.sh
# caches its root: the marker written last says it is whole. For arm64, debootstrap's second
# stage runs arm64 programs here through qemu-user's binfmt handler (scripts/arm64-sdk.sh enables it).
#
# The guest has no network, so the root holds everything the labs use: systemd, dbus, udev and
# bluez (btmon, btmgmt, bluetoothctl), rfkill, script(1), sqlite3, python3 with python3-dbus and
# python3-cryptography for the lab's scripts, busybox-static for the initramfs, and the package's
# library dependencies, so that `apt install ./enagent_VERSION_ARCH.deb` in the guest finds every
# Depends installed and downloads nothing. Beside the root: Debian's kernel package (downloaded,
# not installed: lab/boot-lab.sh extracts it, KERNEL_DEB), and for arm64 the hci_vhci module that
# kernel lacks (below).
#
# btvirt: trixie's own (bluez-test-tools 5.82) stops with a general protection fault seconds into
# the lab's phones phase on BT 5 controllers (every extended set has its own broadcast timer, and
# the phones turn sets off and on each second), after which no controller is left. The amd64 root
# gets the host's Debian 12 btvirt (5.66, linked against libc only) in /usr/local/bin, first on the
# guest's PATH, so that the emulated controllers are the same on both stacks and only the kernel
# and bluetoothd differ. The arm64 lab runs BT 4.x controllers only, which 5.82 emulates fine.
#
# Usage: lab/trixie-guest.sh ARCH     (makes what is missing; prints the root's directory)
# Env:   TRIXIE_GUEST (default /var/cache/enagent/trixie-ARCH-guest): ROOT is $TRIXIE_GUEST/root,
#        the kernel package $TRIXIE_GUEST/linux-image.deb, arm64's module $TRIXIE_GUEST/hci_vhci.ko.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ARCH=${1:?usage: lab/trixie-guest.sh amd64|arm64}
case $ARCH in amd64|arm64) ;; *) echo "trixie-guest: no guest recipe for $ARCH (amd64 and arm64 have one)" >&2; exit 64 ;; esac
CACHE=${TRIXIE_GUEST:-/var/cache/enagent/trixie-$ARCH-guest}
ROOT=$CACHE/root
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
. "$HERE/../scripts/cached-root.sh"
# One maker at a time: make test's two chains both boot it (lab-test's trixie kind, the RootCanal crowd).
mkdir -p "$(dirname "$CACHE")"
exec 9> "$CACHE.lock"
flock 9
# The lab's tools, and the Depends of the package (dpkg-deb -f dist/enagent_*_ARCH.deb Depends).
# python3-cffi-backend by name: debootstrap does not resolve the virtual packages python3-cryptography
# depends on (python3-cffi-backend-api-min/-max), and left it unconfigured.
PACKAGES="systemd systemd-sysv dbus udev bluez bluez-test-tools python3 python3-cryptography python3-cffi-backend python3-dbus
kmod openssl procps passwd busybox-static rfkill bsdextrautils sqlite3
libbluetooth3 libcurl4t64 libdbus-1-3 libsqlite3-0 libssl3t64 libsystemd0 zlib1g init-system-helpers"

if [ ! -e "$ROOT/.complete" ]; then
    [ "$(id -u)" = 0 ] || { echo "trixie-guest: making the root needs root (debootstrap, chroot)" >&2; exit 1; }
    if [ "$ARCH" = arm64 ]; then
        "$HERE/../scripts/install-deps.sh" debootstrap qemu-user-static binfmt-support >&2
        grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || update-binfmts --enable qemu-aarch64
        echo "trixie-guest: making $ROOT (debootstrap --arch=arm64 trixie under qemu-user: about 18 minutes on 2 busy cores, 600 MB)" >&2
    else
        "$HERE/../scripts/install-deps.sh" debootstrap >&2
        echo "trixie-guest: making $ROOT (debootstrap trixie: a few minutes, 600 MB)" >&2
    fi
    rm -rf "$ROOT.partial"
    mkdir -p "$CACHE"
    debootstrap --arch="$ARCH" --variant=minbase --include="$(echo $PACKAGES | tr ' ' ,)" trixie "$ROOT.partial" "$MIRROR" \
        > "$CACHE/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE/debootstrap.log" >&2; echo "trixie-guest: debootstrap failed" >&2; exit 1; }
    # The kernel: the package linux-image-ARCH names, for lab/boot-lab.sh to extract.
    chroot "$ROOT.partial" sh -c "apt-get update -qq && cd /tmp &&
        apt-get download -q \"\$(apt-cache depends linux-image-$ARCH | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)\"" \
        > "$CACHE/kernel.log" 2>&1 || { tail -20 "$CACHE/kernel.log" >&2; echo "trixie-guest: no kernel package" >&2; exit 1; }
    mv "$ROOT.partial"/tmp/linux-image-*.deb "$CACHE/linux-image.deb"
    chroot "$ROOT.partial" apt-get clean
    touch "$ROOT.partial/.complete"
    rm -rf "$ROOT"
    mv "$ROOT.partial" "$ROOT"
fi
install_missing trixie-guest "$ROOT" "$CACHE/apt.log" $PACKAGES

if [ "$ARCH" = amd64 ]; then
    # Debian 12's btvirt (see above), from the host's bluez-test-tools.
    "$HERE/../scripts/install-deps.sh" bluez-test-tools >&2
    cmp -s /usr/bin/btvirt "$ROOT/usr/local/bin/btvirt" || install -D -m 0755 /usr/bin/btvirt "$ROOT/usr/local/bin/btvirt"
fi

# Debian's arm64 kernel has no hci_vhci (CONFIG_BT_HCIVHCI is not set; amd64's has it), and btvirt's
# controllers need it: built once from that kernel's own source and headers, in a throwaway copy of
# the root (gcc and the headers need not be in the guest), and kept beside the root for
# lab/boot-lab.sh (KERNEL_MODULES). Unsigned: the kernel loads it, tainted.
MODULE=$CACHE/hci_vhci.ko
if [ "$ARCH" = arm64 ] && [ ! -s "$MODULE" ]; then
    KERNEL_PACKAGE=$(dpkg-deb -f "$CACHE/linux-image.deb" Package)   # linux-image-KVER
    KVER=${KERNEL_PACKAGE#linux-image-}
    SOURCE_VERSION=$(dpkg-deb -f "$CACHE/linux-image.deb" Version)   # linux-source-MAJOR.MINOR's too
    echo "trixie-guest: building hci_vhci for $KVER (gcc and the kernel's headers in a copy of the root: a few minutes)" >&2
    BUILD=$CACHE/module-build
    rm -rf "$BUILD"; cp -a "$ROOT" "$BUILD"
    # The headers pull in the kernel package itself: INITRD=No spares its initramfs (minutes under qemu-user).
    chroot "$BUILD" sh -c "apt-get update -qq && INITRD=No DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        make gcc linux-headers-$KVER && cd /tmp && apt-get download -q linux-source-${KVER%.*+*}=$SOURCE_VERSION" \
        > "$CACHE/module-build.log" 2>&1 || { tail -20 "$CACHE/module-build.log" >&2; echo "trixie-guest: no headers or source for $KVER" >&2; exit 1; }
    mkdir -p "$BUILD/build"
    dpkg-deb --fsys-tarfile "$BUILD"/tmp/linux-source-*.deb | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' \
        | tar -xJO --wildcards '*/drivers/bluetooth/hci_vhci.c' > "$BUILD/build/hci_vhci.c"
    echo 'obj-m := hci_vhci.o' > "$BUILD/build/Makefile"
    chroot "$BUILD" make -C "/usr/src/linux-headers-$KVER" M=/build modules >> "$CACHE/module-build.log" 2>&1 \
        || { tail -20 "$CACHE/module-build.log" >&2; echo "trixie-guest: building hci_vhci failed" >&2; exit 1; }
    cp "$BUILD/build/hci_vhci.ko" "$MODULE.partial" && mv "$MODULE.partial" "$MODULE"
    rm -rf "$BUILD"
fi
echo "$ROOT"
