#!/bin/sh
# wait-radio.sh ADAPTER SECONDS [START]: waits until bluetoothd shows ADAPTER powered and, while
# it is powered, the controller advertising and at some moment scanning (bluez.sh: radio).
# Prints the seconds it took (from START, a /proc/uptime reading, when given), or "timeout".
# Only states seen while powered count, so a stale view from before a power-off cannot pass for a
# recovery.
. "$(dirname "$0")/bluez.sh"
start=${3:-$(cut -d' ' -f1 /proc/uptime)}
advertising= scanning=
while :; do
    now=$(cut -d' ' -f1 /proc/uptime)
    if [ "$(prop "$1" org.bluez.Adapter1 Powered)" = true ]; then
        state=$(radio "$1")
        [ "${state% *}" = yes ] && advertising=yes
        [ "${state#* }" = yes ] && scanning=yes
    fi
    if [ -n "$advertising" ] && [ -n "$scanning" ]; then
        echo "$now $start" | awk '{printf "%.1f\n", $1 - $2}'; exit 0
    fi
    if [ "$(echo "$now $start $2" | awk '{print ($1 - $2 > $3)}')" = 1 ]; then echo timeout; exit 1; fi
    sleep 0.2
done
