#!/bin/sh
# flood.sh BIN OUT SECONDS FLOOD_SECONDS AFTER_SECONDS: the flood lab, in the guest (make
# lab-flood). Two agents, a on hci0 and b on hci1, scanning actively through bluetoothd's discovery
# (the lab's configuration on Debian 12), run for SECONDS; then every other controller floods the
# air with fresh advertisers for FLOOD_SECONDS (phones.py flood: thousands of new addresses and RPIs
# a minute, each a new device to bluetoothd); then the air is quiet for AFTER_SECONDS, and three
# phones advertise for 30 s, which each agent must record: its scan runs again after the flood.
# Throughout, each agent's status is polled every 2 s (the phase "status-poll"), so that the
# report can compare what the agent said with what its controller did (btmon's capture).
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=${3:-40} FLOOD_SECONDS=${4:-300} AFTER_SECONDS=${5:-100}
LAB=$(dirname "$0")
. "$LAB/bluez.sh"
PHONES=$(ls /sys/class/bluetooth | grep -x 'hci[0-9]*' | grep -v -x -e hci0 -e hci1 | sort -V | tr '\n' ' ')
rm -rf "$OUT/a" "$OUT/b" "$OUT/phases.jsonl" "$OUT/phones.jsonl"
. "$LAB/agent-lib.sh"
phase stack description="$(printf 'Debian %s, kernel %s, bluetoothd %s, btvirt %s (%s)' "$(cat /etc/debian_version)" "$(uname -r)" \
    "$(/usr/libexec/bluetooth/bluetoothd --version)" "$(btvirt --version 2>&1 | head -1)" "$(command -v btvirt)")"
start_agents
echo "agents: a (hci0) pid $A, b (hci1) pid $B; running ${SECONDS_TO_RUN}s, then a flood for ${FLOOD_SECONDS}s on $PHONES"
sleep "$SECONDS_TO_RUN"
poll_status & POLL=$!
phase flood-started
must "flood" python3 "$LAB/phones.py" flood "$OUT" "$FLOOD_SECONDS" $PHONES
phase flood-ended
sleep "$AFTER_SECONDS"
phase phones-after
must "phones after the flood" python3 "$LAB/phones.py" "$OUT" "$ORIGIN" 120 phones 30 $PHONES
sleep 5  # one scan cycle (lab.conf): what the agents heard is written
kill "$POLL"
end_run
