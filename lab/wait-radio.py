#!/usr/bin/python3
"""wait-radio.py ADAPTER SECONDS [START]: waits until bluetoothd shows ADAPTER powered and, while it
is powered, the controller advertising and at some moment scanning, as its accepted commands in
btmon's capture ($BTSNOOP) say (onair.py). Prints the seconds it took (from START, a /proc/uptime
reading, when given), or "timeout". Only states seen while powered count, so a stale view from
before a power-off cannot pass for a recovery.

The capture is read once, following what btmon appends: a poll that parsed the whole capture
anew (megabytes by the lab's later phases) took seconds in the loaded guest, and the polls'
figures and timeouts were the parser's, not the agents'."""
import os, subprocess, sys, time
import onair


def uptime():
    return float(open("/proc/uptime").read().split()[0])


def powered(adapter):
    reply = subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.bluez", f"/org/bluez/{adapter}",
                            "org.freedesktop.DBus.Properties.Get", "string:org.bluez.Adapter1", "string:Powered"],
                           capture_output=True, text=True).stdout
    return "boolean true" in reply


def main(adapter, seconds, start=None):
    start = uptime() if start is None else float(start)
    state = [False, False]  # the controller's advertising and scanning after the commands read so far
    seen = [False, False]

    def poll():
        if powered(adapter):
            seen[0] |= state[0]
            seen[1] |= state[1]
        if all(seen):
            print(f"{uptime() - start:.1f}")
            sys.exit(0)
        if uptime() - start > seconds:
            print("timeout")
            sys.exit(1)
        time.sleep(0.2)

    for _, _, advertising, scanning in onair.radio_states(os.environ["BTSNOOP"], int(adapter.removeprefix("hci")), follow=poll):
        state[:] = [advertising, scanning]


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), *sys.argv[3:4])
