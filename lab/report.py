#!/usr/bin/env python3
"""report.py OUT ENCTL [--check]: what happened in the lab, readable in ten seconds.

Reads each agent's database (OUT/a, OUT/b) and btmon's trace (OUT/btmon.txt). For each agent it
derives the other's RPIs from the other's stored TEKs with `enctl derive`, and counts the sightings
that carry them. From btmon it pairs every advertiser address with the RPIs it carried.
With --check it exits 1 unless: each agent recorded the other's RPIs; no sighting is of the
agent's own RPIs; every RPI came from exactly one address and every address carried one RPI;
at least four RPIs went on the air; both agents stopped cleanly (exit 0) on SIGTERM; after
bluetoothd's restart each agent advertised and scanned again within 10 s (btmon's record of the
management commands); across agent a's SIGKILL and restart its database stayed intact, its TEKs
the same and no committed sighting was lost;
no agent's log carries a TEK or an RPI; each agent read its TX power from its controller; at the
end (agent a after its restart, without being enabled again) each agent's API says active; b's
detection from the key server that published a's shared keys found exposure windows on the days
of a's shared keys, as many as `enctl detect --offline` finds in b's database; pausing b stopped
its advertising and scanning (the controller's own record) within 2 s of enctl pause returning; after
hci0 was switched off under agent a (power-on = yes), agent a logged a recovery and hci0 was
powered (bluetoothd), advertising and scanning (the controller) again within 10 s of the switch-off;
every EN advertisement the agents' controllers were given conforms to the EN Bluetooth
Specification (onair.py) and none was ended by the controller."""
import json, os, re, sqlite3, subprocess, sys
import onair

out, enctl = sys.argv[1], sys.argv[2]
strict = "--check" in sys.argv
failures = []

def rows(agent, sql):
    db = sqlite3.connect(f"file:{out}/{agent}/enagent.db?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()

def derived_rpis(agent):
    rpis = set()
    for key, start, period in rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key"):
        result = subprocess.run([enctl, "derive", "--tek", key.hex(), "--interval", str(start), "--count", str(period), "--json"],
                                check=True, capture_output=True, text=True)
        rpis |= {row["rpi"] for row in json.loads(result.stdout)}
    return rpis

agents = {"a": "hci0", "b": "hci1"}
try:
    own = {agent: derived_rpis(agent) for agent in agents}
except Exception as error:
    # Without the agents' databases no check can run: the lab stopped before its agents did.
    print(f"lab-test: FAIL\n  no agent database to read ({type(error).__name__}: {error}); see {out}/console.log")
    sys.exit(1 if strict else 0)

def check(title):
    """Runs one named check; if its inputs are missing (a phase that failed early), the check
    fails with its name and the reason instead of ending the report."""
    def run(body):
        print(title)
        try:
            body()
        except Exception as error:
            failures.append(f"{title.split(' (')[0].lower()}: could not be checked ({type(error).__name__}: {error})")
            print(f"  could not be checked: {type(error).__name__}: {error}")
    return run

failed_steps = open(f"{out}/phases/failed").read().splitlines() if os.path.exists(f"{out}/phases/failed") else []
failures += [f"lab step failed: {step}" for step in failed_steps]

@check("SHUTDOWN")
def shutdown():
    for agent in agents:
        status = open(f"{out}/{agent}/exit-status").read().strip()
        print(f"  agent {agent} stopped on SIGTERM with exit status {status}")
        if status != "0":
            failures.append(f"agent {agent} exited with status {status} on SIGTERM, not 0")

@check("WHO SAW WHOM")
def who_saw_whom():
    for agent, other in (("a", "b"), ("b", "a")):
        sightings = rows(agent, "SELECT rpi, rssi FROM sighting")
        seen = [rpi.hex() for rpi, _ in sightings]
        of_other = [rpi for rpi in seen if rpi in own[other]]
        of_self = [rpi for rpi in seen if rpi in own[agent]]
        unknown_rssi = sum(1 for _, rssi in sightings if rssi is None)
        print(f"  {agent} ({agents[agent]}) saw {other} ({agents[other]}): {len(of_other)} sightings of {len(set(of_other))} "
              f"distinct RPIs, all derived from {other}'s TEK by enctl derive" if of_other and len(of_other) == len(seen)
              else f"  {agent} ({agents[agent]}): {len(seen)} sightings, {len(of_other)} of {other}'s RPIs, {len(of_self)} of its own")
        print(f"      RSSI unknown in {unknown_rssi} of {len(sightings)} (the emulated controllers report none)")
        if not of_other:
            failures.append(f"{agent} recorded none of {other}'s RPIs")
        if of_self:
            failures.append(f"{agent} recorded {len(of_self)} of its own RPIs")
        if len(of_other) != len(seen):
            failures.append(f"{agent} recorded {len(seen) - len(of_other)} sightings that derive from no agent's key")

@check("ADDRESS ↔ RPI (from btmon's advertising reports)")
def address_rpi():
    # Pair each address with the service data in the same advertising report event only.
    pairs, address, in_report = set(), None, False
    for line in open(f"{out}/btmon.txt", errors="replace"):
        if line[:1] in "<>@=":
            in_report, address = False, None
        if "Advertising Report" in line and line.startswith("      LE"):
            in_report = True
        if not in_report:
            continue
        found = re.search(r"^\s+Address: ([0-9A-F:]{17})", line)
        if found:
            address = found.group(1)
        data = re.search(r"^\s+Data: ([0-9a-f]{40})$", line)
        if data and address:
            pairs.add((address, data.group(1)[:32]))
    by_rpi, by_address = {}, {}
    for address, rpi in pairs:
        by_rpi.setdefault(rpi, set()).add(address)
        by_address.setdefault(address, set()).add(rpi)
    for address, rpis in sorted(by_address.items()):
        owner = next((agent for agent, keys in own.items() if rpis & keys), "?")
        print(f"  {address}  {' '.join(sorted(rpis))}  ({owner})")
    bad_rpis = {rpi: addresses for rpi, addresses in by_rpi.items() if len(addresses) != 1}
    bad_addresses = {address: rpis for address, rpis in by_address.items() if len(rpis) != 1}
    print(f"  {len(by_rpi)} RPIs from {len(by_address)} addresses: "
          + ("each RPI from one address, each address with one RPI" if not bad_rpis and not bad_addresses else "PAIRING BROKEN"))
    if bad_rpis or bad_addresses:
        failures.append(f"RPIs on several addresses: {bad_rpis}; addresses with several RPIs: {bad_addresses}")
    if len(by_rpi) < 4:
        failures.append(f"only {len(by_rpi)} RPIs went on the air: too few rotations")

@check("ON AIR (btsnoop, against the EN Bluetooth Specification)")
def on_air():
    keys = [tuple(row) for agent in agents for row in rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")]
    table = onair.identifiers(keys)
    found, scans, legacy, terminated = onair.advertisements(f"{out}/btmon.snoop", controllers={0, 1})
    bad = [(advertisement, problems) for advertisement in found if (problems := onair.check(advertisement, table))]
    for controller in (0, 1):
        mine = [a for a in found if a["controller"] == controller]
        if mine:
            low, high = mine[-1]["interval"]
            print(f"  hci{controller}: {len(mine)} EN advertisements; AD {mine[-1]['data'][:11].hex(' ')} + RPI ‖ AEM ({len(mine[-1]['data'])} bytes); "
                  f"interval {low:.1f}-{high:.1f} ms; PDU 0x{mine[-1]['properties']:04x} (ADV_NONCONN_IND); "
                  f"address {mine[-1]['address'].hex(':')} (non-resolvable); TX power {mine[-1]['tx_power']} dBm in the metadata and as selected")
    for controller, own_type, scan_type, interval, window in sorted(set(scans)):
        print(f"  hci{controller} scans: {'active' if scan_type else 'passive'}, interval {interval:.2f} ms, window {window:.2f} ms, "
              f"own address type {'random' if own_type else 'public'}")
    for advertisement, problems in bad[:5]:
        print(f"  hci{advertisement['controller']} at {advertisement['time']}: " + "; ".join(problems))
    if not found:
        failures.append("no EN advertisement in the btsnoop capture")
    if bad:
        failures.append(f"{len(bad)} of {len(found)} EN advertisements are off the specification (first: {'; '.join(bad[0][1])})")
    if terminated:
        failures.append(f"the controllers ended {len(terminated)} advertising sets before the agents did (first: hci{terminated[0][0]} "
                        f"handle {terminated[0][1]}, HCI status 0x{terminated[0][2]:02x})")
    if legacy:
        failures.append(f"{legacy} EN advertisements were set with legacy HCI commands, which this check does not decode")

@check("NO GAP, NO LINK (the first advertisement after each restart)")
def first_after_restart():
    """After agent a's SIGKILL and after bluetoothd's restart, each agent's next EN advertisement
    comes within 10 s from a new address; when it falls in the same interval as the last one
    before, its RPI comes from a fresh key (the day's key rolled), never the old key's again."""
    keys = [tuple(row) for agent in agents for row in rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")]
    table = onair.identifiers(keys)
    found, _, _, _ = onair.advertisements(f"{out}/btmon.snoop", controllers={0, 1})
    for event, controllers in (("bluetoothd-killed-at", (0, 1)), ("a-killed-at", (0,))):
        moment = float(open(f"{out}/phases/{event}").read())
        for controller in controllers:
            mine = [a for a in found if a["controller"] == controller]
            before = [a for a in mine if onair.unix_seconds(a["time"]) < moment]
            after = [a for a in mine if onair.unix_seconds(a["time"]) >= moment]
            if not before or not after:
                failures.append(f"hci{controller}: no EN advertisement {'before' if not before else 'after'} {event}")
                continue
            last, first = before[-1], after[0]
            took = onair.unix_seconds(first["time"]) - moment
            _, last_interval, last_key = table.get(last["data"][11:27], (None, None, None))
            _, first_interval, first_key = table.get(first["data"][11:27], (None, None, None))
            rolled = first_interval == last_interval
            print(f"  {event.removesuffix('-at').replace('-', ' ')}: hci{controller} advertised again {took:.1f} s later from a new address "
                  f"{first['address'].hex(':')}; " + ("same interval, a fresh key (rolled)" if rolled and first_key != last_key
                                                     else "same interval, THE SAME KEY" if rolled else "the next interval's RPI"))
            if took > 10:
                failures.append(f"hci{controller} advertised {took:.1f} s after {event}, more than 10 s")
            if first["address"] == last["address"]:
                failures.append(f"hci{controller} kept its address {last['address'].hex(':')} across {event}")
            if rolled and first_key == last_key:
                failures.append(f"hci{controller} advertised two RPIs of one key in interval {first_interval} across {event}")
    for agent in agents:
        rolls = open(f"{out}/{agent}/enagentd.log").read().count("rolled to a fresh key")
        print(f"  agent {agent} rolled to a fresh key {rolls} time(s) (a recovery within the interval of its last advertisement)")

@check("RECOVERY")
def recovery():
    def recovery_after_restart():
        """Per adapter, seconds from the restarted bluetoothd's start to its first successful
        advertisement and discovery, from btmon's trace of the management commands (the radio's
        own record: polling bluetoothd's properties can see stale kernel state just after a restart)."""
        def seconds(stamp):
            hours, minutes, rest = stamp.split(":")
            return int(hours) * 3600 + int(minutes) * 60 + float(rest)
        lines = open(f"{out}/btmon.txt", errors="replace").read().splitlines()
        starts = [i for i, line in enumerate(lines) if "bluetoothd: Bluetooth daemon" in line]
        if len(starts) < 2:
            return {}
        started = seconds(lines[starts[-1]].split()[-1])
        first = {}
        for i in range(starts[-1], len(lines) - 2):
            event = re.match(r"@ MGMT Event: Command Complete .*\[(hci\d)\] (\S+)$", lines[i])
            if not event or "Status: Success" not in lines[i + 2]:
                continue
            kind = ("advertising" if re.search(r"Add (Extended )?Advertising( Data)? \(", lines[i + 1])
                    else "scanning" if "Start Service Discovery" in lines[i + 1] else None)
            if kind:
                first.setdefault(event.group(1), {}).setdefault(kind, seconds(event.group(2)) - started)
        return {adapter: max(kinds.values()) for adapter, kinds in first.items() if len(kinds) == 2}

    recovered = recovery_after_restart()
    waited = dict(line.split() for line in open(f"{out}/phases/bluetoothd-restart"))
    for adapter in agents.values():
        took = recovered.get(adapter)
        print(f"  bluetoothd killed and restarted: {adapter} advertising and scanning again after "
              + (f"{took:.1f} s (btmon)" if took is not None else "never (btmon)"))
        if took is None or took > 10 or waited.get(adapter) == "timeout":
            failures.append(f"{adapter} did not advertise and scan within 10 s of bluetoothd's restart ({took})")
    snapshots = {name: json.load(open(f"{out}/phases/{name}.json")) for name in ("before-kill", "after-kill", "end")}
    before, after, end = snapshots["before-kill"], snapshots["after-kill"], snapshots["end"]
    # Every key from before the kill is still there (a roll may have ended one early and added one).
    kept = {key for _, _, key in before["keys"]} <= {key for _, _, key in end["keys"]}
    per_day = {}
    for start, _, _ in end["keys"]:
        per_day[start] = per_day.get(start, 0) + 1
    print(f"  agent a killed with SIGKILL: {before['sightings']} sightings committed before, {after['sightings']} after, "
          f"{end['sightings']} at the end; database {after['integrity']}; TEKs {'kept' if kept else 'LOST'} after the restart; "
          f"keys per day {sorted(per_day.values())}")
    if max(per_day.values(), default=0) > 3:
        failures.append(f"agent a has more than 3 keys for one day: {per_day}")
    if after["integrity"] != "ok":
        failures.append(f"agent a's database after SIGKILL: {after['integrity']}")
    if after["sightings"] < before["sightings"] or end["sightings"] < after["sightings"]:
        failures.append("committed sightings were lost across SIGKILL and restart")
    if not kept:
        failures.append("agent a lost TEKs across SIGKILL and restart")

@check("LOGS")
def logs():
    for agent, adapter in agents.items():
        log = open(f"{out}/{agent}/enagentd.log").read().lower()
        secrets = [key.hex() for (key,) in rows(agent, "SELECT key_data FROM temporary_exposure_key")] + sorted(own[agent])
        leaked = [secret for secret in secrets if secret in log]
        power = re.search(r"advertising tx power (-?\d+) dbm, (read from \w+|as configured)", log)
        print(f"  {agent}: {len(log.splitlines())} lines, {len(leaked)} of its {len(secrets)} TEKs and RPIs in them; "
              f"TX power {power.group(1) + ' dBm, ' + power.group(2) if power else 'not logged'}")
        if leaked:
            failures.append(f"agent {agent}'s log carries {len(leaked)} TEKs or RPIs")
        if not power or power.group(2) != f"read from {adapter}":
            failures.append(f"agent {agent} did not read its TX power from {adapter}")

@check("PAUSE")
def pause():
    took, advertising, scanning = open(f"{out}/phases/pause-b").read().split()
    paused = json.load(open(f"{out}/phases/paused-status-b.json"))
    print(f"  b paused: status {paused['status']}; hci1 advertising {advertising}, scanning {scanning} (the controller's commands) after {took} s")
    if paused["status"] != "paused" or advertising != "no" or scanning != "no" or float(took) > 2.0:
        failures.append(f"pausing b left its radio on (advertising {advertising}, scanning {scanning} after {took} s)")

@check("ADAPTER")
def adapter():
    powered_after_off, took, recoveries = open(f"{out}/phases/power-off-a").read().split()
    # The switch-off as the kernel was told it (bluetoothd's Powered read just after can already
    # be true again: the agent may switch the adapter back on within a second).
    trace = open(f"{out}/btmon.txt", errors="replace").read()
    switched_off = re.search(r"MGMT Command: Set Powered \(0x0005\) plen 1\s+\{0x\w+\} \[hci0\].*\n\s+Powered: Disabled", trace) is not None
    print(f"  hci0 switched off under a (btmon: {'Set Powered off' if switched_off else 'NO Set Powered off'}; Powered {powered_after_off} just after): "
          f"a recovered {recoveries} time(s); powered on, advertising and scanning again after {took} s")
    if not switched_off or recoveries == "0" or took == "timeout" or float(took) > 10:
        failures.append(f"agent a did not bring hci0 back within 10 s of it being switched off ({switched_off}, {recoveries}, {took})")

@check("API (enctl status at the end)")
def api():
    for agent in agents:
        status = json.load(open(f"{out}/phases/status-{agent}.json"))
        print(f"  {agent}: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}, "
              f"{status['sightingsStored']} sightings stored, adapter {status['adapter']}")
        if status["status"] != "active" or status["adapter"] != agents[agent]:
            failures.append(f"agent {agent}'s API says {status['status']} on {status['adapter'] or 'no adapter'}, not active on {agents[agent]}")

@check("EXPOSURE (a shared its keys; b detected from the key server)")
def exposure():
    detected = json.load(open(f"{out}/phases/detect-b.json"))
    windows = json.load(open(f"{out}/phases/windows-b.json"))
    offline = json.loads(subprocess.run([enctl, "detect", "--offline", "--db", f"{out}/b/enagent.db", "--keys", f"{out}/phases/1.zip",
                                         "--public-key", f"{out}/phases/228_v1.pem", "--json"], check=True, capture_output=True, text=True).stdout)
    shared = subprocess.run([enctl, "keys", "inspect", f"{out}/phases/1.zip", "--public-key", f"{out}/phases/228_v1.pem", "--json"],
                            check=True, capture_output=True, text=True).stdout
    days = sorted({w["date"] for w in windows})
    key_days = sorted({row[0] for row in rows("a", "SELECT date(rolling_start_interval_number * 600, 'unixepoch') FROM temporary_exposure_key")})
    print(f"  a shared {json.loads(shared)['keyCount']} keys; b: {detected.get('MatchedKeys', 0)} matched, "
          f"{len(windows)} exposure windows on {', '.join(days) or 'no day'} (offline detection finds {len(offline['exposureWindows'])})")
    if not windows or len(windows) != len(offline["exposureWindows"]):
        failures.append(f"b's detection through the key server found {len(windows)} windows, offline detection {len(offline['exposureWindows'])}")
    if not set(days) <= set(key_days):
        failures.append(f"exposure days {days} are not days of a's keys {key_days}")


if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
print("lab-test: " + ("FAIL" if failures else "PASS"))
sys.exit(1 if failures and strict else 0)
