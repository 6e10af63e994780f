#!/usr/bin/env python3
"""offered.py MONITOR_LOG ADAPTER: when bluetoothd offered ADAPTER (hci0) for advertising, from what
dbus-monitor printed of bluetoothd's InterfacesAdded signals: the time dbus-monitor stamped on the
first one that adds org.bluez.LEAdvertisingManager1 to /org/bluez/ADAPTER (the guest's unix time),
or null. bluetoothd says it on the bus as it registers the interface, whether or not it answers
calls: one restarted among the RootCanal crowd on a loaded host (make test of 2026-11-30 15:40)
answered no question of the lab's for a minute while agent a advertised through it."""
import re, sys

SIGNAL = re.compile(r"^signal time=([0-9.]+) .*member=InterfacesAdded$")


def offered(lines, adapter):
    """The dbus-monitor time of the first InterfacesAdded that adds LEAdvertisingManager1 to the adapter."""
    time = path = None
    for line in lines:
        signal = SIGNAL.match(line)
        if signal:
            time, path = float(signal.group(1)), None
        elif time is not None and path is None and line.strip().startswith("object path "):
            path = line.strip()[len("object path "):].strip('"')
        elif time is not None and path == f"/org/bluez/{adapter}" and line.strip() == 'string "org.bluez.LEAdvertisingManager1"':
            return time
    return None


if __name__ == "__main__":
    with open(sys.argv[1], errors="replace") as log:
        found = offered(log.read().splitlines(), sys.argv[2])
    print("null" if found is None else f"{found:.6f}")
