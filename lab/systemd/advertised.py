"""advertised.py SNOOP ADAPTER SINCE TIMEOUT: waits until ADAPTER (hciN) puts a fresh EN
advertisement on the air after SINCE (unix seconds, the clock btmon stamps with): advertising
data whose RPI differs from the last one before SINCE, from another address, with the set
enabled. Prints "SECONDS ADDRESS RPI" (SECONDS from SINCE) or "timeout" (exit 1) after TIMEOUT
seconds. Read from btmon's live capture with onair.py, independent of enagent's own account.
advertised.py --scanning SNOOP ADAPTER SINCE TIMEOUT: waits for the controller to be told to scan
again after SINCE, once its scan stopped (from the capture's history: a short scan between two
polls counts); prints SECONDS."""
import sys, time
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import onair


def fresh(path, controller, since):
    found = onair.advertisements(path, [controller])[0]
    before = [a for a in found if onair.unix_seconds(a["time"]) < since]
    last = before[-1] if before else None
    changes = onair.radio_changes(path, controller)
    for advertisement in found:
        at = onair.unix_seconds(advertisement["time"])
        if at < since or (last and (advertisement["data"][11:27] == last["data"][11:27] or advertisement.get("address") == last.get("address"))):
            continue
        # On the air: the controller accepted an enable after the data, or advertises still.
        if any(changed >= at and advertising for changed, advertising, _ in changes) or (changes and changes[-1][1]):
            return at - since, advertisement
    return None


def scanning(path, controller, since):
    """Seconds from `since` to the first scan enabled after the scan stopped (a restart of
    bluetoothd powers the adapter off), or None."""
    stopped = False
    for changed, _, scans in onair.radio_changes(path, controller):
        if changed < since:
            continue
        if not scans:
            stopped = True
        elif stopped:
            return changed - since
    return None


def main():
    scan = sys.argv[1] == "--scanning"
    arguments = sys.argv[2:] if scan else sys.argv[1:]
    path, controller, since, timeout = arguments[0], int(arguments[1].removeprefix("hci")), float(arguments[2]), float(arguments[3])
    deadline = time.monotonic() + timeout
    while True:
        if scan:
            took = scanning(path, controller, since)
            if took is not None:
                print(f"{took:.1f}")
                return 0
        elif result := fresh(path, controller, since):
            took, advertisement = result
            print(f"{took:.1f} {advertisement['address'].hex(':') if advertisement.get('address') else '?'} {advertisement['data'][11:27].hex()}")
            return 0
        if time.monotonic() > deadline:
            print("timeout")
            return 1
        time.sleep(0.3)


if __name__ == "__main__":
    sys.exit(main())
