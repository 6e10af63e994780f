#!/usr/bin/env python3
"""set-connectable.py INDEX on|off: the kernel's Set Connectable for controller INDEX, as btmgmt
sends it, from a management socket that reads on while it waits (monitor-race.py's). Under the
RootCanal crowd btmgmt never returned (make test of 2026-11-30 21:03): every management socket
hears every Device Found, and the kernel drops a reply that a full socket cannot take, so its
Set Connectable went through but btmgmt waited for the lost answer for good. Exit status 0 when
the kernel answered success, 1 with its status otherwise, 2 when no answer came within 10 s."""
import importlib.util, os, socket, sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("monitor_race", os.path.join(HERE, "monitor-race.py"))
monitor_race = importlib.util.module_from_spec(spec)
spec.loader.exec_module(monitor_race)

SET_CONNECTABLE = 0x0007
# Room for a second or more of a crowd's events while the controller answers (SO_RCVBUFFORCE: root).
RECEIVE_BUFFER, SO_RCVBUFFORCE = 4 << 20, 33


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("on", "off") or not sys.argv[1].isdigit():
        sys.exit("usage: set-connectable.py INDEX on|off")
    management = monitor_race.Management()
    management.socket.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER)
    answer = management.call(SET_CONNECTABLE, int(sys.argv[1]), bytes([sys.argv[2] == "on"]), timeout=10.0)
    if answer is None:
        print(f"hci{sys.argv[1]}: no answer to Set Connectable within 10 s", file=sys.stderr)
        return 2
    if answer[0] != 0:
        print(f"hci{sys.argv[1]}: Set Connectable failed, status 0x{answer[0]:02x}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
