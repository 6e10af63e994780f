#!/bin/sh
# soak.sh BIN OUT SECONDS: the chaos soak (make soak), in the guest. Agent a on hci0 advertises,
# scans and detects while, every 6-18 s at random, one fault strikes: a SIGKILL of a (restarted at
# once, as systemd's Restart= does), a SIGKILL of bluetoothd (restarted), or hci0 switched off (a
# switches it on again); the three in a random order in each round of three, so that even a short
# soak has each of them. Agent b on hci1 advertises for a to see, and its shared keys give a's
# detections something to match. Before each kill of a, the sightings a had stored are listed;
# after each fault, the lab's poll waits until hci0 advertises and scans again (soak-report.py times
# that on btmon's capture, from the fault's moment or bluetoothd's offer of hci0 after its restart,
# and checks). Each fault and list is a line of the run's manifest (manifest.sh: phase). Faults
# strike until SECONDS have passed and at least one SIGKILL for every 30 s of them has struck: the
# lab's poll paces them, and on a loaded host (make test's crowd beside it, the guest loading the
# new enagentd 9-12 s) a soak of 120 s had time for 4 faults, one a power-off (2026-12-01 07:32).
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=${3:-600}
LAB=$(dirname "$0")
. "$LAB/bluez.sh"
rm -rf "$OUT/a" "$OUT/b" "$OUT/phases.jsonl"
. "$LAB/agent-lib.sh"
KILLS=$(( SECONDS_TO_RUN / 30 ))
phase soak seconds:="$SECONDS_TO_RUN" kills:="$KILLS"
random() { echo $(( $(od -An -N2 -tu2 /dev/urandom) % $1 )); }

api_bus a; api_bus b
agent a hci0 & A=$!
agent b hci1 & B=$!
enable a; enable b
sleep 90  # past the agents' midnight, so that b has a key it may share
must "enctl b keys export" enctl b keys export --yes --format zip --out "$STATE/b-keys.zip"
must "enctl keys sign" "$BIN/enctl" keys sign "$STATE/b-keys.zip" --private-key "$STATE/authority.pem" --key-id 228 --out "$STATE/b-signed.zip"

end=$(( $(date +%s) + SECONDS_TO_RUN ))
fault=0 kills=0
round=""
while [ "$(date +%s)" -lt "$end" ] || [ "$kills" -lt "$KILLS" ]; do
    sleep $(( 6 + $(random 13) ))
    fault=$((fault + 1))
    at=$(uptime_seconds) moment=$(date +%s.%N)
    [ -n "$round" ] || round=$(shuf -e 0 1 2)
    kind=$(echo "$round" | head -n 1); round=$(echo "$round" | tail -n +2)
    [ "$kind" = 2 ] || kills=$((kills + 1))
    case $kind in
    0)  what=enagentd
        phase stored-before-kill fault:=$fault sightings:="$(sightings a 2>/dev/null)"
        kill -KILL "$A"; wait "$A"
        agent a hci0 & A=$! ;;
    1)  what=bluetoothd
        pkill -KILL -x bluetoothd; sleep 0.5
        /usr/libexec/bluetooth/bluetoothd -n >> "$OUT/bluetoothd-restarted.log" 2>&1 & ;;
    2)  what=power-off
        dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
            string:org.bluez.Adapter1 string:Powered variant:boolean:false > /dev/null 2>&1 ;;
    esac
    phase fault number:=$fault kind=$what polled="$("$LAB/wait-radio.py" hci0 30 "$at")" at:="$moment"; tail -n 1 "$OUT/phases.jsonl"
    # A detection now and then, through the API, while faults go on.
    [ $((fault % 3)) -eq 0 ] && { enctl a detect "$STATE/b-signed.zip" >> "$OUT/detect.log" 2>&1 \
        && phase detection result=ok || phase detection result=failed; }
done

kill -TERM "$A" "$B"; wait "$A"; a_exit=$?; wait "$B"; b_exit=$?
phase exits a:=$a_exit b:=$b_exit
cp -r "$STATE/a" "$STATE/b" "$OUT/"
