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
