# bluez.sh: sourced by the lab's scripts. prop ADAPTER INTERFACE NAME prints a property of
# bluetoothd's adapter object, empty if it cannot. radio ADAPTER prints "ADVERTISING SCANNING"
# (yes/no) as the controller itself was told by its last accepted commands (btmon's btsnoop
# capture, $BTSNOOP): enagentd advertises through the kernel, which bluetoothd does not see.
prop() {
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.freedesktop.DBus.Properties.Get \
        "string:$2" "string:$3" 2>/dev/null | awk '/variant/ {print $NF}'
}
radio() {
    python3 "$(dirname "$0")/onair.py" "$BTSNOOP" "$1"
}
# Time on the guest's steady clock: uptime_seconds prints it; since START prints the seconds from
# START (an uptime_seconds reading) to now; past START SECONDS holds once more have gone by.
uptime_seconds() { cut -d' ' -f1 /proc/uptime; }
since() { echo "$(uptime_seconds) $1" | awk '{printf "%.1f\n", $1 - $2}'; }
past() { [ "$(echo "$(uptime_seconds) $1 $2" | awk '{print ($1 - $2 > $3)}')" = 1 ]; }
