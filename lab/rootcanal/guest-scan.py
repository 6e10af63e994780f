"""guest-scan.py hciN SECONDS: in the lab's guest, a passive scan of SECONDS on hciN with raw HCI
commands (LE Set Extended Scan Parameters/Enable), once with the controller's duplicate filter
off and once with it on, counting the LE Extended Advertising Reports per address and their RSSI.
The kernel's own discovery (btmgmt find) always asks for the filter; this shows what the
controller delivers without it. Prints one JSON object per scan."""
import json, os, socket, struct, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from phones import Controller  # noqa: E402  (lab/phones.py: raw HCI commands on an emulated controller)


def scan(controller, seconds, filter_duplicates):
    controller.command(0x2041, bytes([0x01, 0x00, 0x01, 0x00]) + struct.pack("<HH", 0x60, 0x30))  # random, accept all, 1M passive 60/30 ms
    controller.command(0x2042, bytes([0x01, filter_duplicates]) + bytes(4))
    reports, rssi, started = {}, [], time.monotonic()
    controller.socket.settimeout(0.2)
    while time.monotonic() < started + seconds:
        try:
            event = controller.socket.recv(300)
        except socket.timeout:
            continue
        if event[1] != 0x3E or event[3] != 0x0D:  # LE Meta Event, LE Extended Advertising Report
            continue
        position = 5
        for _ in range(event[4]):
            address = event[position + 3:position + 9][::-1].hex(":")
            value = struct.unpack("b", event[position + 13:position + 14])[0]
            length = event[position + 23]
            reports[address] = reports.get(address, 0) + 1
            rssi.append(value)
            position += 24 + length
    controller.socket.settimeout(5)
    controller.command(0x2042, bytes([0x00, 0x00]) + bytes(4))
    return {"filter_duplicates": bool(filter_duplicates), "seconds": seconds, "reports": sum(reports.values()),
            "addresses": len(reports), "per_address": sorted(reports.values(), reverse=True),
            "rssi_min": min(rssi, default=None), "rssi_max": max(rssi, default=None), "rssi_distinct": len(set(rssi))}


controller = Controller(sys.argv[1])
for duplicates in (0, 1):
    print(json.dumps(scan(controller, float(sys.argv[2]), duplicates)), flush=True)
