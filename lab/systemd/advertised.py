"""advertised.py SNOOP ADAPTER SINCE TIMEOUT: waits until ADAPTER (hciN) puts a fresh EN
advertisement on the air after SINCE (unix seconds, the clock btmon stamps with): advertising
data whose RPI differs from the last one before SINCE, from another address, with the set
enabled. Prints "SECONDS ADDRESS RPI" (SECONDS from SINCE) or "timeout" (exit 1) after TIMEOUT
seconds. Read from btmon's live capture with onair.py, independent of enagent's own account."""
import sys, time
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import onair


def fresh(path, controller, since):
    found = onair.advertisements(path, [controller])[0]
    before = [a for a in found if onair.unix_seconds(a["time"]) < since]
    last = before[-1] if before else None
    for advertisement in found:
        at = onair.unix_seconds(advertisement["time"])
        if at < since or (last and (advertisement["data"][11:27] == last["data"][11:27] or advertisement.get("address") == last.get("address"))):
            continue
        # On the air: the controller accepted an enable after the data, or advertises still.
        changes = onair.radio_changes(path, controller)
        if any(changed >= at and advertising for changed, advertising, _ in changes) or (changes and changes[-1][1]):
            return at - since, advertisement
    return None


def main():
    path, controller, since, timeout = sys.argv[1], int(sys.argv[2].removeprefix("hci")), float(sys.argv[3]), float(sys.argv[4])
    deadline = time.monotonic() + timeout
    while True:
        result = fresh(path, controller, since)
        if result:
            took, advertisement = result
            print(f"{took:.1f} {advertisement['address'].hex(':') if advertisement.get('address') else '?'} {advertisement['data'][11:27].hex()}")
            return 0
        if time.monotonic() > deadline:
            print("timeout")
            return 1
        time.sleep(0.3)


if __name__ == "__main__":
    sys.exit(main())
