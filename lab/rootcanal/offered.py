#!/usr/bin/env python3
"""offered.py MONITOR_LOG ADAPTER...: when bluetoothd offered each ADAPTER (hci0) for advertising,
from what dbus-monitor printed of bluetoothd's InterfacesAdded signals: the time dbus-monitor
stamped on the first one that adds org.bluez.LEAdvertisingManager1 to /org/bluez/ADAPTER (the
guest's unix time), or null; printed as the fields of manifest.sh's phase ("hci0:=TIME hci1:=null"),
one process for all, since the guest polls it every second while it is at its busiest. bluetoothd says it on the bus as it registers the interface, whether or not it answers
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


def fields(lines, adapters):
    """The phase's fields: ADAPTER:=TIME, or null, for each adapter."""
    return " ".join(f"{adapter}:=" + ("null" if (found := offered(lines, adapter)) is None else f"{found:.6f}") for adapter in adapters)


if __name__ == "__main__":
    with open(sys.argv[1], errors="replace") as log:
        print(fields(log.read().splitlines(), sys.argv[2:]))
