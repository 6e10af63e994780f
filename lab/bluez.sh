# bluez.sh: sourced by the lab's scripts. prop ADAPTER INTERFACE NAME prints a property of
# bluetoothd's adapter object (its own view of what the radio does), empty if it cannot.
prop() {
    dbus-send --system --print-reply --dest=org.bluez "/org/bluez/$1" org.freedesktop.DBus.Properties.Get \
        "string:$2" "string:$3" 2>/dev/null | awk '/variant/ {print $NF}'
}
