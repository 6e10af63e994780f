#!/bin/bash
# run.sh: runs rclab.py (RootCanal and Bumble phones, on the host) in a network namespace of its
# own, with the virtual environment of setup.sh.
#
# Why a namespace: RootCanal listens on every address (0.0.0.0) on fixed ports, and it writes each
# HCI packet to its TCP socket in two send() calls (the H4 type byte, then the packet) without
# TCP_NODELAY, so Nagle's algorithm holds the packet until the peer's delayed ACK: 40-48 ms for
# every command and event. In a namespace of its own, the loopback route gets `quickack 1` (the
# peer acknowledges at once: 5 ms a command), the ports cannot clash with another lab's, and
# nothing outside it can connect. Needs root (unshare -n), which the lab has.
#
# Usage: lab/rootcanal/run.sh measure|phones|extended|crowd|serve [rclab.py options]
#        RC_NETNS=0 lab/rootcanal/run.sh ...    (in the host's namespace: the 45 ms commands)
#        lab/rootcanal/run.sh --shell CMD...     (CMD in such a namespace, e.g. a qemu guest)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=$("$HERE/setup.sh")
if [ "${RC_NETNS:-1}" = 1 ] && [ -z "${RC_IN_NETNS:-}" ]; then
  exec unshare -n env RC_IN_NETNS=1 "$0" "$@"
fi
if [ -n "${RC_IN_NETNS:-}" ]; then
  ip link set lo up
  # The more specific local route of 127.0.0.1 is the one connections take.
  ip route change local 127.0.0.1 dev lo table local proto kernel scope host src 127.0.0.1 quickack 1
fi
if [ "${1:-}" = --shell ]; then shift; exec "$@"; fi
exec "$VENV/bin/python" "$HERE/rclab.py" "$@"
