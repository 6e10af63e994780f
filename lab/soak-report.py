#!/usr/bin/env python3
"""soak-report.py RUN_DIR [--check [NAME...]]: what the chaos soak (soak.sh) did and whether its
invariants held.

From the run's manifest (phases.jsonl: each fault, the lists of sightings taken before each
SIGKILL, the detections, the exit statuses) and btmon's capture: how many faults of each kind, and
how long hci0 took to advertise and scan again after each, timed on the controller's commands from
the moment agent a could act (after a's SIGKILL when its new process ran, after bluetoothd's
restart when it offered hci0 again, else the fault's; the lab's poll of the growing capture lags
by seconds in the emulated guest: docs/lab.md). From agent a's database after the soak: PRAGMA integrity_check; every sighting
listed before each SIGKILL still there; its keys: a key for every day from the first to the last,
at most three per day (the first and two rolls after restarts). From btmon's capture of hci0: every
EN advertisement's RPI derives from one of a's stored keys, and RPI and address always changed
together: no RPI with two addresses, no address with two RPIs, across every restart."""
import collections, statistics, sys
import onair
from labframe import Check, Lab, arguments, report

# Seconds from the moment agent a could act after a fault (could_act) until hci0 advertised and scanned anew.
BACK_WITHIN = 10.0
KEYS_PER_DAY = 3


def checks():
    return [
        Check("faults", "FAULTS", faults),
        Check("data", "DATA (agent a)", data),
        Check("on-air", "ON AIR (hci0, btmon)", on_air),
    ]


def main():
    given = arguments(__doc__.splitlines()[0])
    return report("soak", given, Lab(given.run), checks(), ahead=lambda lab: print(f"  {lab.host_load()}"))


def needed(lab):
    """The SIGKILLs soak.sh strikes at least (one for every 30 s of the soak: 20 in the 600 s of
    make soak, 4 in the two minutes of make test's), and as many RPIs on the air."""
    soak = lab.phase("soak")
    # Runs recorded before 2026-12-01 (testdata/soak-run.tar.xz) name the seconds alone.
    return soak.get("kills", soak["seconds"] // 30)


def could_act(lab, fault):
    """The moment agent a could act after the fault: after its SIGKILL, when its new process ran
    (its log's start line; loading it took 2.4 to 9.5 s on a loaded host, make test of 2026-11-30
    15:45); after bluetoothd's restart, when the new bluetoothd offered hci0 (btmon; None if it did
    not); else the fault's."""
    if fault["kind"] == "enagentd":
        return onair.process_start(lab, "a", fault["at"])
    if fault["kind"] == "bluetoothd":
        return onair.offered(lab.snoop, 0, fault["at"])
    return fault["at"]


def recovery(lab, fault):
    """Seconds until hci0 advertised and scanned anew after the fault (None: never), from the moment a
    could act, 0 if a was back by then (make test of 2026-11-30 10:03: a advertised anew 8 ms
    before bluetoothd's offer)."""
    moment = could_act(lab, fault)
    return None if moment is None else onair.on_again(lab.snoop, 0, moment, since=fault["at"])


def summary(times):
    recovered = [t for t in times if t is not None]
    if not recovered:
        return "never"
    return f"median {statistics.median(recovered):.1f} s, slowest {max(recovered):.1f} s" + \
        (f", {len(times) - len(recovered)} never" if len(recovered) < len(times) else "")


def faults(lab, fail):
    by_kind, polled = collections.defaultdict(list), collections.defaultdict(list)
    for fault in lab.entries("fault"):
        by_kind[fault["kind"]].append(recovery(lab, fault))
        polled[fault["kind"]].append(None if fault["polled"] == "timeout" else float(fault["polled"]))
    starts = [onair.process_start(lab, "a", fault["at"]) - fault["at"] for fault in lab.entries("fault") if fault["kind"] == "enagentd"]
    for kind, times in sorted(by_kind.items()):
        print(f"  {kind}: {len(times)} times; hci0 advertising and scanning again after {summary(times)} (btmon"
              + {"bluetoothd": "; from bluetoothd offering hci0 again",
                 "enagentd": f"; from a's new process running, {summary(starts)} after the kill"}.get(kind, "")
              + f"; the lab's poll: {summary(polled[kind])})")
        if None in times or max(times) > BACK_WITHIN:
            fail(f"after a {kind}, hci0 was not back within {BACK_WITHIN:g} s ({[None if t is None else round(t, 1) for t in times]})")
    kills = len(by_kind["enagentd"]) + len(by_kind["bluetoothd"])
    print(f"  {len(lab.entries('fault'))} faults, {kills} of them SIGKILLs")
    if kills < needed(lab):
        fail(f"only {kills} SIGKILLs (a soak of {lab.phase('soak')['seconds']} s needs at least {needed(lab)})")
    detections = collections.Counter(entry["result"] for entry in lab.entries("detection"))
    print(f"  detections during the soak: {detections['ok']} ok, {detections['failed']} failed")
    if not detections or detections["failed"]:
        fail(f"detections during the soak: {dict(detections)}")
    exits = lab.phase("exits") if lab.has("exits") else {}
    print(f"  exit statuses at the end (SIGTERM): a {exits.get('a')}, b {exits.get('b')}")
    if (exits.get("a"), exits.get("b")) != (0, 0):
        fail(f"the agents did not stop cleanly at the end: a {exits.get('a')}, b {exits.get('b')}")


def data(lab, fail):
    integrity = lab.rows("a", "PRAGMA integrity_check")[0][0]
    final = {(rpi.hex(), seen) for rpi, seen in lab.rows("a", "SELECT rpi, seen_at FROM sighting")}
    snapshots = lab.entries("stored-before-kill")
    lost = sum(len({(rpi, seen) for rpi, seen in snapshot["sightings"] or []} - final) for snapshot in snapshots)
    print(f"  integrity_check: {integrity}; {len(final)} sightings at the end; {len(snapshots)} lists taken before a SIGKILL, "
          f"{lost} of their sightings missing afterwards")
    if integrity != "ok" or lost or not snapshots:
        fail(f"data: integrity {integrity}, {lost} stored sightings lost, {len(snapshots)} snapshots")
    days = collections.Counter(start for _, start, _ in keys(lab))
    missing = [start for start in range(min(days), max(days) + 1, 144) if start not in days]
    print(f"  {len(keys(lab))} TEKs over {len(days)} days; keys per day {sorted(days.values())}; days without a key: {missing or 'none'}")
    if missing or max(days.values()) > KEYS_PER_DAY:
        fail(f"keys: days without a key {missing}, keys per day {dict(days)}")


def keys(lab):
    return lab.rows("a", "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")


def on_air(lab, fail):
    table = onair.identifiers(keys(lab))
    found, *_ = onair.advertisements(lab.snoop, controllers={0})
    foreign = sum(advertisement["data"][11:27] not in table for advertisement in found)
    by_rpi, by_address, shared, sharing = onair.linked((a["address"], a["data"][11:27]) for a in found if a.get("address"))
    shared_rpis = {rpi.hex(): len(addresses) for rpi, addresses in shared.items()}
    shared_addresses = {address.hex(":"): len(rpis) for address, rpis in sharing.items()}
    print(f"  {len(found)} EN advertisements, {len(by_rpi)} RPIs from {len(by_address)} addresses; {foreign} from no stored key; "
          f"RPIs with several addresses: {len(shared_rpis)}; addresses with several RPIs: {len(shared_addresses)}")
    if foreign or shared_rpis or shared_addresses or len(by_rpi) < needed(lab):
        fail(f"on air: {foreign} RPIs from no stored key, RPIs on several addresses {shared_rpis}, "
             f"addresses with several RPIs {shared_addresses}, {len(by_rpi)} RPIs in all")


if __name__ == "__main__":
    sys.exit(main())
