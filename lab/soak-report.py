#!/usr/bin/env python3
"""soak-report.py OUT [--check]: what the chaos soak (soak.sh) did and whether its invariants held.

From the fault log and btmon's capture: how many faults of each kind, and how long hci0 took to
advertise and scan again after each, timed on the controller's commands from the fault's moment
(the lab's poll of the growing capture lags by seconds in the emulated guest: docs/lab.md). From
agent a's database after the soak: PRAGMA integrity_check; every sighting listed before each
SIGKILL still there; its keys: a key for every day from the first to the last, at most three per
day (the first and two rolls after restarts). From btmon's capture of hci0: every EN
advertisement's RPI derives from one of a's stored keys, and RPI and address always changed
together: no RPI with two addresses, no address with two RPIs, across every restart."""
import collections, glob, os, sqlite3, statistics, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onair

out, strict = sys.argv[1], "--check" in sys.argv
failures = []
# What a soak of its length must have done: 20 SIGKILLs and 20 RPIs in the 600 s of make soak, 4 in
# the two minutes of make test's (about 1 in 18 s is expected).
seconds = int(open(f"{out}/soak/seconds").read())
needed = seconds // 30


def database(agent):
    return sqlite3.connect(f"file:{out}/{agent}/enagent.db?mode=ro", uri=True)


print("FAULTS")
faults = [line.split() for line in open(f"{out}/soak/faults")] if os.path.exists(f"{out}/soak/faults") else []
by_kind, polled = collections.defaultdict(list), collections.defaultdict(list)
for _, kind, poll, moment in faults:
    by_kind[kind].append(onair.on_again(f"{out}/btmon.snoop", 0, float(moment)))
    polled[kind].append(None if poll == "timeout" else float(poll))


def summary(times):
    recovered = [t for t in times if t is not None]
    if not recovered:
        return "never"
    return f"median {statistics.median(recovered):.1f} s, slowest {max(recovered):.1f} s" + \
        (f", {len(times) - len(recovered)} never" if len(recovered) < len(times) else "")


for kind, times in sorted(by_kind.items()):
    print(f"  {kind}: {len(times)} times; hci0 advertising and scanning again after {summary(times)} (btmon; "
          f"the lab's poll: {summary(polled[kind])})")
    if None in times or max(times) > 10:
        failures.append(f"after a {kind}, hci0 was not back within 10 s ({[None if t is None else round(t, 1) for t in times]})")
kills = len(by_kind["enagentd"]) + len(by_kind["bluetoothd"])
print(f"  {len(faults)} faults, {kills} of them SIGKILLs")
if kills < needed:
    failures.append(f"only {kills} SIGKILLs (a soak of {seconds} s needs at least {needed})")
detections = [line.strip() for line in open(f"{out}/soak/detections")] if os.path.exists(f"{out}/soak/detections") else []
print(f"  detections during the soak: {detections.count('detect ok')} ok, {detections.count('detect failed')} failed")
if not detections or "detect failed" in detections:
    failures.append(f"detections during the soak: {collections.Counter(detections)}")
exits = open(f"{out}/soak/exits").read().split() if os.path.exists(f"{out}/soak/exits") else []
print(f"  exit statuses at the end (SIGTERM): {' '.join(exits) or 'none'}")
if exits != ["a", "0", "b", "0"]:
    failures.append(f"the agents did not stop cleanly at the end: {exits}")

print("DATA (agent a)")
a = database("a")
integrity = a.execute("PRAGMA integrity_check").fetchone()[0]
final = {(rpi.hex(), seen) for rpi, seen in a.execute("SELECT rpi, seen_at FROM sighting")}
lost = 0
snapshots = sorted(glob.glob(f"{out}/soak/stored-before-kill-*"))
for path in snapshots:
    before = {(rpi, int(seen)) for rpi, seen in (line.split() for line in open(path) if line.strip())}
    lost += len(before - final)
print(f"  integrity_check: {integrity}; {len(final)} sightings at the end; {len(snapshots)} lists taken before a SIGKILL, "
      f"{lost} of their sightings missing afterwards")
if integrity != "ok" or lost or not snapshots:
    failures.append(f"data: integrity {integrity}, {lost} stored sightings lost, {len(snapshots)} snapshots")
keys = list(a.execute("SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key"))
days = collections.Counter(start for _, start, _ in keys)
first, last = min(days), max(days)
missing = [start for start in range(first, last + 1, 144) if start not in days]
print(f"  {len(keys)} TEKs over {len(days)} days; keys per day {sorted(days.values())}; days without a key: {missing or 'none'}")
if missing or max(days.values()) > 3:
    failures.append(f"keys: days without a key {missing}, keys per day {dict(days)}")

print("ON AIR (hci0, btmon)")
table = onair.identifiers(keys)
found, *_ = onair.advertisements(f"{out}/btmon.snoop", controllers={0})
foreign = sum(advertisement["data"][11:27] not in table for advertisement in found)
by_rpi, by_address, shared, sharing = onair.linked((a["address"], a["data"][11:27]) for a in found if a.get("address"))
shared_rpis = {rpi.hex(): len(addresses) for rpi, addresses in shared.items()}
shared_addresses = {address.hex(":"): len(rpis) for address, rpis in sharing.items()}
print(f"  {len(found)} EN advertisements, {len(by_rpi)} RPIs from {len(by_address)} addresses; {foreign} from no stored key; "
      f"RPIs with several addresses: {len(shared_rpis)}; addresses with several RPIs: {len(shared_addresses)}")
if foreign or shared_rpis or shared_addresses or len(by_rpi) < needed:
    failures.append(f"on air: {foreign} RPIs from no stored key, RPIs on several addresses {shared_rpis}, "
                    f"addresses with several RPIs {shared_addresses}, {len(by_rpi)} RPIs in all")

if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
print("soak: " + ("FAIL" if failures else "PASS"))
sys.exit(1 if failures and strict else 0)
