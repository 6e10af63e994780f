#!/bin/bash
# arm64-root.sh: the arm64 lab guest's root, a Debian trixie arm64 system (what Raspberry Pi OS is
# now based on) made once with debootstrap and cached, as scripts/trixie-root.sh caches its root:
# the marker written last says it is whole. debootstrap's second stage runs arm64 programs here
# through qemu-user's binfmt handler (scripts/arm64-sdk.sh enables it).
#
# The guest has no network, so the root holds everything the service lab uses: systemd, dbus, udev
# and bluez (btvirt from bluez-test-tools), python3 and python3-cryptography for the lab's scripts,
# busybox-static for the initramfs (an arm64 busybox), and the arm64 package's library dependencies,
# so that `apt install ./enagent_VERSION_arm64.deb` in the guest finds every Depends installed and
# downloads nothing. Beside the root: Debian's arm64 kernel package (downloaded, not installed:
# lab/boot-lab.sh extracts it, KERNEL_DEB) and the hci_vhci module that kernel lacks (below).
#
# Usage: lab/arm64-root.sh     (makes what is missing; prints the root's directory)
# Env:   ARM64_GUEST (default /var/cache/enagent/trixie-arm64-guest): ROOT is $ARM64_GUEST/root,
#        the kernel package $ARM64_GUEST/linux-image.deb, the module $ARM64_GUEST/hci_vhci.ko.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${ARM64_GUEST:-/var/cache/enagent/trixie-arm64-guest}
ROOT=$CACHE/root
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
. "$HERE/../scripts/cached-root.sh"
# The lab's tools, and the Depends of the arm64 package (dpkg-deb -f dist/enagent_*_arm64.deb Depends).
# python3-cffi-backend by name: debootstrap does not resolve the virtual packages python3-cryptography
# depends on (python3-cffi-backend-api-min/-max), and left it unconfigured.
PACKAGES="systemd systemd-sysv dbus udev bluez bluez-test-tools python3 python3-cryptography python3-cffi-backend kmod openssl procps passwd busybox-static
libbluetooth3 libcurl4t64 libdbus-1-3 libsqlite3-0 libssl3t64 libsystemd0 zlib1g init-system-helpers"

if [ ! -e "$ROOT/.complete" ]; then
    [ "$(id -u)" = 0 ] || { echo "arm64-root: making the root needs root (debootstrap, chroot)" >&2; exit 1; }
    "$HERE/../scripts/install-deps.sh" debootstrap qemu-user-static binfmt-support >&2
    grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null || update-binfmts --enable qemu-aarch64
    echo "arm64-root: making $ROOT (debootstrap --arch=arm64 trixie under qemu-user: about 18 minutes on 2 busy cores, 600 MB)" >&2
    rm -rf "$ROOT.partial"
    mkdir -p "$CACHE"
    debootstrap --arch=arm64 --variant=minbase --include="$(echo $PACKAGES | tr ' ' ,)" trixie "$ROOT.partial" "$MIRROR" \
        > "$CACHE/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE/debootstrap.log" >&2; echo "arm64-root: debootstrap failed" >&2; exit 1; }
    # The kernel: the package linux-image-arm64 names, for lab/boot-lab.sh to extract.
    chroot "$ROOT.partial" sh -c 'apt-get update -qq && cd /tmp &&
        apt-get download -q "$(apt-cache depends linux-image-arm64 | sed -n "s/.*Depends: \(linux-image-[0-9].*\)/\1/p" | head -1)"' \
        > "$CACHE/kernel.log" 2>&1 || { tail -20 "$CACHE/kernel.log" >&2; echo "arm64-root: no kernel package" >&2; exit 1; }
    mv "$ROOT.partial"/tmp/linux-image-*.deb "$CACHE/linux-image.deb"
    chroot "$ROOT.partial" apt-get clean
    touch "$ROOT.partial/.complete"
    rm -rf "$ROOT"
    mv "$ROOT.partial" "$ROOT"
fi
install_missing arm64-root "$ROOT" "$CACHE/apt.log" $PACKAGES

# Debian's arm64 kernel has no hci_vhci (CONFIG_BT_HCIVHCI is not set; amd64's has it), and btvirt's
# controllers need it: built once from that kernel's own source and headers, in a throwaway copy of
# the root (gcc and the headers need not be in the guest), and kept beside the root for
# lab/boot-lab.sh (KERNEL_MODULES). Unsigned: the kernel loads it, tainted.
MODULE=$CACHE/hci_vhci.ko
if [ ! -s "$MODULE" ]; then
    KERNEL_PACKAGE=$(dpkg-deb -f "$CACHE/linux-image.deb" Package)   # linux-image-KVER
    KVER=${KERNEL_PACKAGE#linux-image-}
    SOURCE_VERSION=$(dpkg-deb -f "$CACHE/linux-image.deb" Version)   # linux-source-MAJOR.MINOR's too
    echo "arm64-root: building hci_vhci for $KVER (gcc and the kernel's headers in a copy of the root: a few minutes)" >&2
    BUILD=$CACHE/module-build
    rm -rf "$BUILD"; cp -a "$ROOT" "$BUILD"
    # The headers pull in the kernel package itself: INITRD=No spares its initramfs (minutes under qemu-user).
    chroot "$BUILD" sh -c "apt-get update -qq && INITRD=No DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        make gcc linux-headers-$KVER && cd /tmp && apt-get download -q linux-source-${KVER%.*+*}=$SOURCE_VERSION" \
        > "$CACHE/module-build.log" 2>&1 || { tail -20 "$CACHE/module-build.log" >&2; echo "arm64-root: no headers or source for $KVER" >&2; exit 1; }
    mkdir -p "$BUILD/build"
    dpkg-deb --fsys-tarfile "$BUILD"/tmp/linux-source-*.deb | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' \
        | tar -xJO --wildcards '*/drivers/bluetooth/hci_vhci.c' > "$BUILD/build/hci_vhci.c"
    echo 'obj-m := hci_vhci.o' > "$BUILD/build/Makefile"
    chroot "$BUILD" make -C "/usr/src/linux-headers-$KVER" M=/build modules >> "$CACHE/module-build.log" 2>&1 \
        || { tail -20 "$CACHE/module-build.log" >&2; echo "arm64-root: building hci_vhci failed" >&2; exit 1; }
    cp "$BUILD/build/hci_vhci.ko" "$MODULE.partial" && mv "$MODULE.partial" "$MODULE"
    rm -rf "$BUILD"
fi
echo "$ROOT"
