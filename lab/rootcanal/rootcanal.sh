#!/bin/bash
# rootcanal.sh: runs Google's RootCanal (the binary in the rootcanal wheel of setup.sh's virtual
# environment) in the foreground, with its arguments (rootcanal --help names them).
#
# The wheel's linux-x86_64 binary (a debug build: `--version` says NDEBUG is not defined) needs
# glibc 2.39 and libstdc++ GLIBCXX_3.4.32; Debian 12 has 2.36. It runs with the loader and
# libraries of one of the project's Debian trixie roots instead, the first that exists: the Swift
# toolchain's (scripts/trixie-root.sh) or the trixie guest's (lab/trixie-guest.sh amd64); any
# trixie root with libc6 and libstdc++6 will do. Nothing is installed on the host.
#
# Ports (RootCanal's defaults): 6401 the test channel (RootCanal's own commands: add, del, list,
# set_timer_period...: rclab.py's TestChannel), 6402 HCI (H4 over TCP: every connection is a new
# controller on the same air), 6403 the BR/EDR link layer and 6404 the LE link layer (raw link
# layer packets, for devices outside RootCanal). --configuration='tcp_server { tcp_port: P
# configuration { ... } }' opens HCI ports with other controllers (proto/rootcanal/configuration.proto:
# presets, features such as le_extended_advertising: false); it replaces the default HCI port.
#
# Usage: lab/rootcanal/rootcanal.sh [-test_port=6401 -hci_port=6402 ...]
# Env:   RC_VENV (setup.sh's), TRIXIE_ROOT (default: /var/cache/enagent/trixie-swift6.0, else
#        /var/cache/enagent/trixie-amd64-guest/root)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=$("$HERE/setup.sh")
if [ -z "${TRIXIE_ROOT:-}" ]; then
  for TRIXIE_ROOT in /var/cache/enagent/trixie-swift6.0 /var/cache/enagent/trixie-amd64-guest/root; do
    [ -e "$TRIXIE_ROOT/usr/lib/x86_64-linux-gnu/libstdc++.so.6" ] && break
  done
fi
ROOT=$TRIXIE_ROOT
BIN=$VENV/lib/python3.11/site-packages/rootcanal/bin/linux-$(uname -m)/rootcanal
[ -x "$BIN" ] || BIN=$(ls "$VENV"/lib/python3*/site-packages/rootcanal/bin/linux-"$(uname -m)"/rootcanal 2>/dev/null | head -1)
[ -x "$BIN" ] || { echo "rootcanal.sh: no rootcanal binary for linux-$(uname -m) in $VENV" >&2; exit 70; }
LOADER=$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
LIBS=$ROOT/usr/lib/x86_64-linux-gnu
[ -x "$LOADER" ] && [ -e "$LIBS/libc.so.6" ] && [ -e "$LIBS/libstdc++.so.6" ] || {
  echo "rootcanal.sh: $ROOT has no trixie loader, libc.so.6 or libstdc++.so.6 (TRIXIE_ROOT=...; scripts/trixie-root.sh or lab/trixie-guest.sh amd64 make one)" >&2; exit 70; }
# The loader runs the binary by path: /proc/PID/exe is the loader, argv[0] stays rootcanal's.
exec "$LOADER" --library-path "$LIBS" "$BIN" "$@"
