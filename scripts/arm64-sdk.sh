#!/bin/bash
# arm64-sdk.sh: a Swift SDK for cross-building enagent for arm64 (aarch64-unknown-linux-gnu) with
# Debian trixie's own Swift 6.0.3, inside the trixie root of scripts/trixie-root.sh, made once and
# cached there like the root itself (the marker written last says it is whole).
#
# The target's C libraries come the Debian way: arm64 is added as a foreign architecture of the root
# and the -dev packages enagent links with are installed for it beside the amd64 ones (multiarch:
# /usr/lib/aarch64-linux-gnu), so pkg-config, the linker and dpkg-shlibdeps see arm64's own files.
# The target's Swift runtime (swiftlang:arm64 and libswiftlang:arm64 cannot be installed beside
# amd64's) is unpacked with dpkg-deb -x, keeping only its resource directories. Also enables qemu's
# binfmt handler for aarch64 on the host, so arm64 programs run under qemu-user wherever they are
# executed (the package's build runs enctl for its shell completions; the tests spawn binaries).
#
# Usage: scripts/arm64-sdk.sh        (makes what is missing, prints the SDK's name)
# Build: swift build --swift-sdks-path /opt/enagent-arm64-sdk --swift-sdk enagent-arm64 (in the root,
#        with PKG_CONFIG_PATH=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "arm64-sdk: needs root (chroot, apt, binfmt)" >&2; exit 1; }
ROOT=$("$HERE/trixie-root.sh")
SDK=/opt/enagent-arm64-sdk          # inside the root
NAME=enagent-arm64
TRIPLE=aarch64-unknown-linux-gnu
# What the package links with, for arm64 (scripts/trixie-root.sh has the amd64 list), and what
# building a Debian package for arm64 needs: binutils for its strip and objdump, debhelper.
TARGET_PACKAGES="libc6-dev:arm64 libgcc-14-dev:arm64 libstdc++-14-dev:arm64 libssl-dev:arm64
libdbus-1-dev:arm64 libsystemd-dev:arm64 libsqlite3-dev:arm64 zlib1g-dev:arm64 libbluetooth-dev:arm64
libcurl4-openssl-dev:arm64 binutils-aarch64-linux-gnu debhelper dpkg-dev"

"$HERE/install-deps.sh" qemu-user-static binfmt-support
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable qemu-aarch64 2>/dev/null || true
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
    || { echo "arm64-sdk: cannot enable qemu-aarch64 in binfmt_misc: arm64 programs would not run here" >&2; exit 1; }

if [ -e "$ROOT$SDK/.complete" ]; then echo "$NAME"; exit 0; fi
echo "arm64-sdk: making $ROOT$SDK (arm64 -dev packages and Swift runtime: a minute or two, about 1 GB)" >&2
mount -t proc proc "$ROOT/proc"
trap 'umount "$ROOT/proc" 2>/dev/null || true' EXIT
# Man pages and documentation of a Multi-Arch: same package can differ between architectures (a
# binNMU's changelog, gzip's bytes), which dpkg refuses; nobody reads them in a build root.
printf 'path-exclude=/usr/share/man/*\npath-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n' \
    > "$ROOT/etc/dpkg/dpkg.cfg.d/01-enagent-nodoc"
LOG=$(dirname "$ROOT")/arm64-sdk.log
chroot "$ROOT" sh -c "dpkg --add-architecture arm64 && apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(echo $TARGET_PACKAGES) &&
    rm -rf $SDK.partial && mkdir -p $SDK.partial/debs && cd $SDK.partial/debs &&
    apt-get download swiftlang:arm64 libswiftlang:arm64 && apt-get clean" > "$LOG" 2>&1 \
    || { tail -20 "$LOG" >&2; echo "arm64-sdk: installing arm64's packages failed" >&2; exit 1; }

PARTIAL=$ROOT$SDK.partial
mkdir -p "$PARTIAL/unpacked" "$PARTIAL/runtime"
for deb in "$PARTIAL"/debs/*.deb; do dpkg-deb -x "$deb" "$PARTIAL/unpacked"; done
# The resource directories (modules, runtime libraries, static stdlib); not arm64's compiler, its
# plugins or PackageDescription: the host's Swift compiles the manifest. clang's headers are the
# same for every target: the root's own.
mv "$PARTIAL/unpacked/usr/libexec/swift/lib/swift" "$PARTIAL/unpacked/usr/libexec/swift/lib/swift_static" "$PARTIAL/runtime/"
rm -rf "$PARTIAL/unpacked" "$PARTIAL/debs" "$PARTIAL"/runtime/swift/{host,pm,embedded,migrator} "$PARTIAL/runtime/swift_static/embedded"
for resources in swift swift_static; do ln -sfn /usr/libexec/swift/lib/clang/17 "$PARTIAL/runtime/$resources/clang"; done
# The sysroot is the root's own /usr (where multiarch put arm64's libraries and headers), through
# a directory of its own: with / as the sysroot, SwiftPM takes the project's modules for the SDK's.
mkdir -p "$PARTIAL/sysroot"
ln -sfn /usr "$PARTIAL/sysroot/usr"
ln -sfn usr/lib "$PARTIAL/sysroot/lib"
# The bundle (SE-0387). Paths are where the root puts them, as the build runs inside it.
variant=$PARTIAL/$NAME.artifactbundle/$NAME/$TRIPLE
mkdir -p "$variant"
cat > "$PARTIAL/$NAME.artifactbundle/info.json" <<EOF
{
  "schemaVersion": "1.0",
  "artifacts": {
    "$NAME": {
      "type": "swiftSDK",
      "version": "6.0.3",
      "variants": [ { "path": "$NAME/$TRIPLE" } ]
    }
  }
}
EOF
cat > "$variant/swift-sdk.json" <<EOF
{
  "schemaVersion": "4.0",
  "targetTriples": {
    "$TRIPLE": {
      "sdkRootPath": "$SDK/sysroot",
      "swiftResourcesPath": "$SDK/runtime/swift",
      "swiftStaticResourcesPath": "$SDK/runtime/swift_static",
      "toolsetPaths": ["toolset.json"]
    }
  }
}
EOF
cat > "$variant/toolset.json" <<EOF
{
  "schemaVersion": "1.0",
  "swiftCompiler": { "extraCLIOptions": ["-use-ld=lld"] }
}
EOF
touch "$PARTIAL/.complete"
rm -rf "$ROOT$SDK"
mv "$PARTIAL" "$ROOT$SDK"
echo "$NAME"
