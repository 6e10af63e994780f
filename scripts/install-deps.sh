#!/bin/sh
# Installs the Debian packages enagent builds and tests with; installs only what is missing.
# Usage: scripts/install-deps.sh [extra packages...]
set -eu

# libcurl4-openssl-dev: enctl's HTTP client (CENCurl). g++: libstdc++, which the release build's
# --static-swift-stdlib links. python3-cryptography: the tests' loopback health authority signs
# and checks ES256 certificates with it. sqlite3: tests and the lab's scripts read and change
# databases with it.
packages="pkg-config g++ libssl-dev libdbus-1-dev libsystemd-dev libsqlite3-dev zlib1g-dev libbluetooth-dev libcurl4-openssl-dev dbus python3-cryptography sqlite3 $*"

missing=""
for package in $packages; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing="$missing $package"
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "Installing Debian packages:$missing" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
