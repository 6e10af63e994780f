#!/bin/sh
# wait-radio.sh ADAPTER SECONDS [START]: waits until bluetoothd shows ADAPTER powered and, while
# it is powered, the controller advertising and at some moment scanning (bluez.sh: radio).
# Prints the seconds it took (from START, a /proc/uptime reading, when given), or "timeout".
# Only states seen while powered count, so a stale view from before a power-off cannot pass for a
# recovery.
. "$(dirname "$0")/bluez.sh"
start=${3:-$(uptime_seconds)}
advertising= scanning=
while :; do
    if [ "$(prop "$1" org.bluez.Adapter1 Powered)" = true ]; then
        state=$(radio "$1")
        [ "${state% *}" = yes ] && advertising=yes
        [ "${state#* }" = yes ] && scanning=yes
    fi
    if [ -n "$advertising" ] && [ -n "$scanning" ]; then
        since "$start"; exit 0
    fi
    if past "$start" "$2"; then echo timeout; exit 1; fi
    sleep 0.2
done
