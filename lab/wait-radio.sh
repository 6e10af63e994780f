#!/bin/sh
# wait-radio.sh ADAPTER SECONDS: waits until bluetoothd shows ADAPTER advertising (an active
# advertisement instance) and, at some moment, discovering; prints the seconds it took, or
# "timeout". Polls bluetoothd's own D-Bus properties.
. "$(dirname "$0")/bluez.sh"
start=$(cut -d' ' -f1 /proc/uptime)
advertising= scanning=
while :; do
    now=$(cut -d' ' -f1 /proc/uptime)
    [ "$(prop "$1" org.bluez.LEAdvertisingManager1 ActiveInstances)" -ge 1 ] 2>/dev/null && advertising=yes
    [ "$(prop "$1" org.bluez.Adapter1 Discovering)" = true ] && scanning=yes
    if [ -n "$advertising" ] && [ -n "$scanning" ]; then
        echo "$now $start" | awk '{printf "%.1f\n", $1 - $2}'; exit 0
    fi
    if [ "$(echo "$now $start $2" | awk '{print ($1 - $2 > $3)}')" = 1 ]; then echo timeout; exit 1; fi
    sleep 0.2
done
