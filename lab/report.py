#!/usr/bin/env python3
"""report.py RUN_DIR [ENCTL] [--check [NAME...]]: what happened in the agents' lab (agents.sh),
readable in ten seconds, and whether each rule of docs/lab.md held.

Reads the run's manifest (phases.jsonl), each agent's database and log (RUN_DIR/a, RUN_DIR/b) and
btmon's capture (btmon.snoop, btmon.txt), derives the agents' RPIs from their stored keys with
`enctl derive` (ENCTL: the tree's debug build unless given), and runs the checks of CHECKS in
order. With --check it exits 1 unless every check holds; --check NAME... runs those checks alone
(on a saved run folder too); --list names them.

Every bound of a time is taken by the guest's own clocks, from the moment the agent could act:
the manifest's stamps and btmon's capture are the guest's (docs/lab.md, "The report")."""
import calendar, datetime, functools, json, os, re, subprocess, sys, time
import onair
from labframe import Check, Lab, arguments, heading, report

AGENTS = {"a": "hci0", "b": "hci1"}
# Seconds from the moment an agent could act again (its adapter offered, powered, unblocked or
# not connectable any more, the agent started or continued) until it advertised (a new RPI from a
# new address) and scanned.
BACK_WITHIN = 10.0
# Seconds from enctl pause returning until b's controller stopped advertising and scanning.
PAUSE_WITHIN = 2.0
# Seconds from the kernel's New Settings (connectable) until a took its advertisement off; and
# until a said adapter-connectable: no status poll begun later than that may read another status.
CONNECTABLE_OFF_WITHIN = 1.0
CONNECTABLE_STATUS_WITHIN = 2.0
# An EN advertisement the kernel re-programs when the adapter turns connectable (a legacy controller
# sends it in ADV_IND from the public address) is on the air until the agent takes it off: at most
# this long, about one advertising interval, or the ON AIR check fails.
REPROGRAMMED_AT_MOST = 0.25
# The lab's suspend is a sleep enagentd is not told of (no systemd-logind in this guest; the service
# lab has it, and there nothing may go out again): at power-on the kernel enables the instance it
# kept, from a new address on a legacy controller, before a runs again. a takes it off within this
# long of being continued (SIGCONT), or the SUSPEND check fails.
REENABLED_OFF_WITHIN = 1.0
# Of the other agent's RPIs on the air during one of an agent's scans, away from the phases (within
# PHASE_MARGIN seconds of a phase's moment: a kill loses what was not yet written, a restart or a
# switch-off ends a scan), the share it must record; of the crowd's (scan, advertiser) pairs.
SEEN_SHARE, PHASE_MARGIN = 0.8, 10.0
CROWD_SHARE = 0.95
# Another program's advertisement stays on the air beside a's (BT 5) or in its place (BT 4.x) from
# the moment bluetoothd gave it to the kernel until the phase's end, which comes a second or two
# after its removal (81-94 % in the day's captures where it went on the air at once); on BT 5 a's
# own EN advertisement beside it, and each agent's while another controller is busy.
OTHER_ADVERTISER_SHARE, EN_SHARE_BESIDE = 0.8, 0.9
KEYS_PER_DAY, LEAST_RPIS, LEAST_API_MEMBERS = 3, 4, 17
# The phases that disturbed the radio: the other's RPIs within PHASE_MARGIN of them are not counted.
DISTURBANCES = ("bluetoothd-killed", "a-killed", "b-paused", "a-switched-off", "second-advertiser", "second-advertiser-off",
                "a-connectable", "a-not-connectable", "unplugged", "replugged", "suspended", "resumed", "rfkill-blocked", "rfkill-unblocked")
# The moments an adapter is taken from under the agents: an advertisement requested just then may
# meet the block or the power-off (Rejected, Failed) and is not counted as refused.
TAKEN_AWAY = ("a-switched-off", "rfkill-blocked", "unplugged", "suspended")


def checks():
    """The report's checks, in the order they print."""
    return [
        Check("steps", "LAB STEPS (each phase's commands)", steps),
        Check("shutdown", "SHUTDOWN", shutdown),
        Check("who-saw-whom", "WHO SAW WHOM", who_saw_whom),
        Check("address-rpi", "ADDRESS ↔ RPI (from btmon's advertising reports)", address_rpi),
        Check("on-air", "ON AIR (btsnoop, against the EN Bluetooth Specification)", on_air),
        Check("no-gap", "NO GAP, NO LINK (the first advertisement after each restart)", first_after_restart),
        Check("phones", "PHONES AND A CROWD (lab/phones.py on the other controllers)", phones_and_crowd),
        Check("phone-exposures", "PHONE EXPOSURES (the phones' keys signed by the lab's authority; b detects through its API)", phone_exposures),
        Check("recovery", "RECOVERY", recovery),
        Check("logs", "LOGS", logs),
        Check("pause", "PAUSE", pause),
        Check("adapter", "ADAPTER", adapter),
        Check("airplane-mode", "AIRPLANE MODE (both agents' adapters blocked by rfkill, then unblocked)", airplane_mode),
        Check("second-advertiser", "SECOND ADVERTISER (bluetoothctl's broadcast beside a's on hci0, through bluetoothd)", second_advertiser),
        Check("another-controller", "ANOTHER CONTROLLER (another program's advertisements, power cycle and connectable switch on a third controller)",
              another_controller),
        Check("unplug", "UNPLUG (every controller closed, as when a dongle is pulled, then new ones opened)", unplug),
        Check("suspend", "SUSPEND (a asleep, hci0 off, the clock forward into the next day, hci0 on, a awake)", suspend),
        Check("connectable", "CONNECTABLE ADAPTER (hci0 made connectable under a, then not)", connectable),
        Check("api-access", "API ACCESS (each method as root, a member of enagent and another user, under the bus policy)", api_access),
        Check("api", "API (enctl status at the end)", api),
        Check("exposure", "EXPOSURE (a shared its keys; b detected from the key server)", exposure),
    ]


def main():
    given = arguments(__doc__.splitlines()[0], extra=[("enctl", "enctl to derive and detect with")])
    enctl = given.enctl or os.environ.get("ENCTL") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.build/debug/enctl")
    lab = AgentsLab(given.run, enctl)
    try:
        lab.own
    except Exception as error:
        # Without the agents' databases no check can run: the lab stopped before its agents did.
        print(f"lab-test: FAIL\n  no agent database to read, or no enctl to derive with ({type(error).__name__}: {error}); see {lab.path('console.log')}")
        return 1 if given.check is not None else 0
    return report("lab-test", given, lab, checks(), ahead=heading)



class AgentsLab(Lab):
    """A run of agents.sh, with what several checks derive from it."""

    def __init__(self, folder, enctl):
        super().__init__(folder)
        self.enctl = enctl

    def keys(self, agent):
        return self.rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")

    def derived(self, key, start, period):
        """The RPIs of one key by `enctl derive`."""
        result = subprocess.run([self.enctl, "derive", "--tek", key, "--interval", str(start), "--count", str(period), "--json"],
                                check=True, capture_output=True, text=True)
        return {row["rpi"] for row in json.loads(result.stdout)}

    @functools.cached_property
    def own(self):
        """Each agent's RPIs, derived from its stored keys."""
        return {agent: set().union(*(self.derived(key.hex(), start, period) for key, start, period in self.keys(agent))) for agent in AGENTS}

    @functools.cached_property
    def phones(self):
        """The lab's phones and crowd (phones.py): one line per advertisement."""
        return [json.loads(line) for line in open(self.path("phones.jsonl"))] if self.exists("phones.jsonl") else []

    @functools.cached_property
    def phone_rpis(self):
        return {p["rpi"] for p in self.phones if p["wellFormed"]}

    @functools.cached_property
    def en_capture(self):
        """The RPI table of every agent key, and the agents' EN advertisements in the capture."""
        keys = [tuple(row) for agent in AGENTS for row in self.keys(agent)]
        return onair.identifiers(keys), onair.advertisements(self.snoop, controllers={0, 1})

    @functools.cache
    def withdrawals(self, controller):
        return onair.withdrawals(self.snoop, controller)

    @functools.cached_property
    def connectable_moment(self):
        """When hci0 turned connectable under a (None if the phase did not run), and each EN advertisement
        the kernel then put on the air off the specification, with the seconds until a took it off."""
        if not self.has("a-connectable"):
            return None, []
        at = self.at("a-connectable")
        table, (found, *_) = self.en_capture
        reprogrammed = []
        for advertisement in found:
            moment = onair.unix_seconds(advertisement["time"])
            if advertisement["controller"] == 0 and at - 0.5 <= moment <= at + 2 and onair.check(advertisement, table):
                off = next((withdrawn for withdrawn in self.withdrawals(0) if withdrawn >= moment), None)
                reprogrammed.append((advertisement, None if off is None else off - moment))
        return at, reprogrammed

    def excused_at_connectable(self):
        """The re-programmed advertisements that a took off within REPROGRAMMED_AT_MOST."""
        return [advertisement for advertisement, took in self.connectable_moment[1] if took is not None and took <= REPROGRAMMED_AT_MOST]

    @functools.cached_property
    def reenabled_at_resume(self):
        """The EN advertisements the kernel put on hci0's air again at the lab's resume with the RPI
        on the air before the sleep, each with the seconds from a's continuing (or the advertisement,
        if later) until a took it off (None: never). Before a continued, it could do nothing."""
        if not self.has("suspended"):
            return []
        suspended, resumed = self.at("suspended"), self.at("resumed")
        table, (found, *_) = self.en_capture
        mine = [advertisement for advertisement in found if advertisement["controller"] == 0]
        before = [advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) < suspended]
        if not before:
            return []
        again = []
        for advertisement in mine:
            moment = onair.unix_seconds(advertisement["time"])
            if suspended <= moment <= resumed + 2 and advertisement["data"][11:27] == before[-1]["data"][11:27]:
                off = next((withdrawn for withdrawn in self.withdrawals(0) if withdrawn >= moment), None)
                again.append((advertisement, None if off is None else off - max(moment, resumed)))
        return again

    def back_on_air(self, controller, gone_at, back_at):
        """The controller's first EN advertisement on the specification from `back_at` on (None if
        none), and whether it carries a new RPI from a new address against the last one before `gone_at`."""
        table, (found, *_) = self.en_capture
        mine = [advertisement for advertisement in found if advertisement["controller"] == controller and not onair.check(advertisement, table)]
        before = [advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) < gone_at]
        back = next((advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) >= back_at), None)
        fresh = back is not None and bool(before) and back["data"][11:27] != before[-1]["data"][11:27] and back["address"] != before[-1]["address"]
        return back, fresh

    def returned(self, controller, gone_at, back_at):
        """Seconds from `back_at` until the controller had an EN advertisement on the specification on
        the air and scanned again (None if it did not), and whether that advertisement is a new RPI from
        a new address against the last one before `gone_at` (back_on_air)."""
        back, fresh = self.back_on_air(controller, gone_at, back_at)
        scanning = next((moment for moment, _, listening in onair.radio_changes(self.snoop, controller) if moment >= back_at and listening), None)
        took = None if back is None or scanning is None else max(onair.unix_seconds(back["time"]), scanning) - back_at
        return took, fresh, back

    @functools.cached_property
    def phase_moments(self):
        """The unix times at which the lab's phases disturbed the radio."""
        return [entry["realtime"] for name in DISTURBANCES for entry in self.entries(name)]

    def on_air_spans(self, controller):
        """(start, end, RPI) of each EN advertisement the controller was given, in unix times: from its
        data (or, on a legacy controller, the enable) to the next one or the first withdrawal after it."""
        table, (found, *_) = self.en_capture
        given = sorted((onair.unix_seconds(advertisement["time"]), advertisement["data"][11:27].hex())
                       for advertisement in found if advertisement["controller"] == controller)
        spans = []
        for index, (start, rpi) in enumerate(given):
            following = given[index + 1][0] if index + 1 < len(given) else float("inf")
            spans.append((start, min([following] + [moment for moment in self.withdrawals(controller) if moment > start][:1]), rpi))
        return spans

    @functools.cached_property
    def bluetoothd_restart(self):
        """Per adapter, (seconds from the restarted bluetoothd's start until it offered the adapter
        again, seconds from then to the agent's first successful advertisement and scan, the time
        of day it offered it), from btmon's trace of the management commands (the radio's own
        record: polling bluetoothd's properties can see stale kernel state just after a restart).
        bluetoothd offers an adapter for advertising once its own Read Advertising Features for it
        is done; in the emulated guest, with six controllers to set up, that alone can take over 10 s."""
        lines = self.text("btmon.txt").splitlines()
        starts = [i for i, line in enumerate(lines) if "bluetoothd: Bluetooth daemon" in line]
        if len(starts) < 2:
            return {}
        started = btmon_seconds(lines[starts[-1]].split()[-1])
        socket = next((re.search(r"\{0x\w+\}", line).group(0) for line in lines[starts[-1]:] if line.startswith("@ MGMT Open: bluetoothd")), None)
        ready, first = {}, {}
        for i in range(starts[-1], len(lines) - 2):
            offered = re.match(r"@ MGMT Command: Read Adverti.. \(0x003d\) plen 0\s+(\{0x\w+\}) \[(hci\d)\] (\S+)$", lines[i])
            if offered and offered.group(1) == socket:
                ready.setdefault(offered.group(2), btmon_seconds(offered.group(3)))
            event = re.match(r"@ MGMT Event: Command Complete .*\[(hci\d)\] (\S+)$", lines[i])
            if not event or "Status: Success" not in lines[i + 2]:
                continue
            kind = ("advertising" if re.search(r"Add (Extended )?Advertising( Data)? \(", lines[i + 1])
                    else "scanning" if re.search(r"Start Service Discovery|Add Advertisement Patterns Monitor", lines[i + 1]) else None)
            if kind and event.group(1) in ready:
                first.setdefault(event.group(1), {}).setdefault(kind, btmon_seconds(event.group(2)))
        return {adapter: (ready[adapter] - started, max(kinds.values()) - ready[adapter], ready[adapter])
                for adapter, kinds in first.items() if len(kinds) == 2}

    def refused_advertisements(self, agent):
        """The agent's log lines of advertisements the kernel refused (issue 25 began with 37 of them
        on legacy controllers), but in the seconds an adapter was taken away."""
        moments = [entry["realtime"] for name in TAKEN_AWAY for entry in self.entries(name)]
        refused = []
        for line in open(self.path(f"{agent}/enagentd.log")):
            if re.search(r"cannot advertise: hci\d+ refused", line):
                logged = logged_at(line)
                if not any(moment - 1 <= logged <= moment + 2 for moment in moments):
                    refused.append(line.strip())
        return refused


def btmon_seconds(stamp):
    hours, minutes, rest = stamp.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def day_of(interval):
    return datetime.datetime.fromtimestamp(interval * 600, datetime.timezone.utc).strftime("%Y-%m-%d")


def logged_at(line):
    """The unix time of an agent's log line (its stamp is the real clock's, to the second)."""
    return calendar.timegm(time.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%SZ"))


def steps(lab, fail):
    failed = [entry["step"] for entry in lab.entries("failed")]
    for step in failed:
        print(f"  failed: {step}")
        fail(f"lab step failed: {step}")
    if not failed:
        print("  every phase's commands succeeded")


def shutdown(lab, fail):
    for agent in AGENTS:
        status = open(lab.path(f"{agent}/exit-status")).read().strip()
        print(f"  agent {agent} stopped on SIGTERM with exit status {status}")
        if status != "0":
            fail(f"agent {agent} exited with status {status} on SIGTERM, not 0")

def who_saw_whom(lab, fail):
    for agent, other in (("a", "b"), ("b", "a")):
        sightings = lab.rows(agent, "SELECT rpi, rssi FROM sighting")
        seen = [rpi.hex() for rpi, _ in sightings]
        of_other = [rpi for rpi in seen if rpi in lab.own[other]]
        of_self = [rpi for rpi in seen if rpi in lab.own[agent]]
        of_phones = [rpi for rpi in seen if rpi in lab.phone_rpis]
        unknown_rssi = sum(1 for _, rssi in sightings if rssi is None)
        print(f"  {agent} ({AGENTS[agent]}) saw {other} ({AGENTS[other]}): {len(of_other)} sightings of {len(set(of_other))} "
              f"distinct RPIs, all derived from {other}'s TEK by enctl derive; {len(of_phones)} of the lab's phones"
              if of_other and len(of_other) + len(of_phones) == len(seen)
              else f"  {agent} ({AGENTS[agent]}): {len(seen)} sightings, {len(of_other)} of {other}'s RPIs, "
                   f"{len(of_phones)} of lab.phones, {len(of_self)} of its own")
        print(f"      RSSI unknown in {unknown_rssi} of {len(sightings)} (the emulated controllers report none)")
        # The other's RPIs, away from the phases (PHASE_MARGIN). btvirt reports an advertiser once,
        # when its set or a scan is enabled; the report at a scan's enable comes 0.1 ms before the
        # kernel enters discovery (its Discovering event) and is dropped, where a real advertiser
        # repeats every 100-270 ms. So the 80 % is checked over the RPIs that went on the
        # air while this agent scanned (at least 0.5 s of the scan left), whose one report came
        # during the scan; the share of those on the air for a scan's first 3 s (as the crowd's
        # pairs below) is printed.
        scans = onair.scan_windows(lab.snoop, int(AGENTS[agent].removeprefix("hci")))
        steady = [(start, end, rpi) for start, end, rpi in lab.on_air_spans(int(AGENTS[other].removeprefix("hci")))
                  if not any(start - PHASE_MARGIN <= moment <= end + PHASE_MARGIN for moment in lab.phase_moments)]
        during = {rpi for start, end, rpi in steady if any(scan <= start and start + 0.5 <= scan_end for scan, scan_end in scans)}
        through = {rpi for start, end, rpi in steady if any(start <= scan and end >= scan + 3 for scan, _ in scans)}
        share = len(during & set(seen)) / len(during) if during else 0
        print(f"      of {other}'s RPIs away from the phases: {len(during & set(seen))} of the {len(during)} that went on the air during one of {agent}'s scans "
              f"({share:.0%}, at least {SEEN_SHARE:.0%}); {len(through & set(seen))} of the {len(through)} on the air for a scan's first 3 s (btvirt's report at the scan's enable is dropped)")
        if not during or share < SEEN_SHARE:
            fail(f"{agent} recorded {share:.0%} of the {len(during)} RPIs of {other}'s that went on the air while it scanned, below {SEEN_SHARE:.0%}")
        if not of_other:
            fail(f"{agent} recorded none of {other}'s RPIs")
        if of_self:
            fail(f"{agent} recorded {len(of_self)} of its own RPIs")
        if len(of_other) + len(of_phones) != len(seen):
            fail(f"{agent} recorded {len(seen) - len(of_other) - len(of_phones)} sightings that derive from no agent's or well-formed phone's key")

def address_rpi(lab, fail):
    # Pair each address with the service data in the same advertising report event only.
    pairs, address, in_report = set(), None, False
    for line in open(lab.path("btmon.txt"), errors="replace"):
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
    # The kernel's re-programming at the connectable switch (ON AIR, below): a phone heard a's RPI
    # from hci0's public address for as long as it lasted; named here, judged there.
    public = {entry["address"] for entry in lab.phase("status-a")["status"]["adapterRssiCorrections"] if entry["name"] == "hci0"} \
        if lab.has("status-a") else set()
    leaked = {advertisement["data"][11:27].hex() for advertisement in lab.excused_at_connectable()}
    heard_public = {(address, rpi) for address, rpi in pairs if address in public and rpi in leaked}
    for address, rpi in sorted(heard_public):
        print(f"  {address}  {rpi}  (a, from hci0's public address when it turned connectable: see ON AIR)")
    pairs -= heard_public
    # The kernel's re-enabling at the lab's resume (SUSPEND, below): named here, judged there.
    again = {(advertisement["address"].hex(":").upper(), advertisement["data"][11:27].hex())
             for advertisement, took in lab.reenabled_at_resume if took is not None and took <= REENABLED_OFF_WITHIN and advertisement.get("address")}
    for address, rpi in sorted(again & pairs):
        print(f"  {address}  {rpi}  (a, its last RPI before the sleep, put back on the air by the kernel at power-on: see SUSPEND)")
    pairs -= again
    by_rpi, by_address, bad_rpis, bad_addresses = onair.linked(pairs)
    for address, rpis in sorted(by_address.items()):
        owner = next((agent for agent, keys in lab.own.items() if rpis & keys), "?")
        print(f"  {address}  {' '.join(sorted(rpis))}  ({owner})")
    print(f"  {len(by_rpi)} RPIs from {len(by_address)} addresses: "
          + ("each RPI from one address, each address with one RPI" if not bad_rpis and not bad_addresses else "PAIRING BROKEN"))
    if bad_rpis or bad_addresses:
        fail(f"RPIs on several addresses: {bad_rpis}; addresses with several RPIs: {bad_addresses}")
    if len(by_rpi) < LEAST_RPIS:
        fail(f"only {len(by_rpi)} RPIs went on the air: too few rotations")

def on_air(lab, fail):
    table, (found, scans, refused, terminated, public_scans, scan_responses) = lab.en_capture
    excused = lab.excused_at_connectable()
    bad = [(advertisement, problems) for advertisement in found
           if (problems := onair.check(advertisement, table)) and not any(advertisement is other for other in excused)]
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
    for advertisement, took in lab.connectable_moment[1]:
        problems = "; ".join(onair.check(advertisement, table))
        print(f"  hci0 turned connectable: the kernel re-programmed a's advertisement ({problems}); a took it off "
              + (f"{took * 1000:.0f} ms later" if took is not None else "NEVER") + f" (at most {REPROGRAMMED_AT_MOST * 1000:.0f} ms)")
    if not found:
        fail("no EN advertisement in the btsnoop capture")
    if bad:
        fail(f"{len(bad)} of {len(found)} EN advertisements are off the specification (first: {'; '.join(bad[0][1])})")
    if terminated:
        fail(f"the controllers ended {len(terminated)} advertising sets before the agents did (first: hci{terminated[0][0]} "
                        f"handle {terminated[0][1]}, HCI status 0x{terminated[0][2]:02x})")
    # The kernel scans from the public address when the controller refuses the scan's random
    # address (hci_active_scan_sync), whoever is at fault: every scannable advertiser around would
    # get the adapter's identity in SCAN_REQs. The agent starts its active scans only while its
    # advertisement is on the air, when the kernel keeps the address it has (docs/radio.md).
    if public_scans:
        refused_first = sum(1 for scan in public_scans if scan[2])
        fail(f"{len(public_scans)} active scans (first on hci{public_scans[0][0]} at {time.strftime('%H:%M:%S', time.gmtime(onair.unix_seconds(public_scans[0][1])))} UTC) from the adapter's public address, "
                        f"{refused_first} of them after the controller refused the random address")
    # The lab's scannable beacons (phones.py beacons, on a controller of their own for the whole
    # run) answer every active scan's SCAN_REQ with a scan response: one heard during a scan from
    # the public address means the beacon got that address.
    beacons = lab.has("beacons")
    for controller in (0, 1):
        heard = [response for response in scan_responses if response[0] == controller]
        public = [response for response in heard if response[2] == 0]
        passive = [response for response in heard if response[2] is None]
        heard = [response for response in heard if response[2] is not None]
        print(f"  hci{controller}: {len(heard)} scan responses from the lab's scannable beacons (ADV_SCAN_IND, ADV_IND), "
              f"{len(public)} to SCAN_REQs from the public address"
              + (f"; {len(passive)} reports labelled scan responses during a passive scan, which sends no SCAN_REQ (btvirt's label)" if passive else ""))
        if public:
            fail(f"hci{controller} sent SCAN_REQs from its public address: {len(public)} scan responses came back")
        # A passive scan sends no SCAN_REQ and hears no scan response.
        if beacons and not heard and any(scan[0] == controller and scan[2] for scan in scans):
            fail(f"hci{controller} scanned actively but heard no scan response from the lab's beacons: the check of its SCAN_REQs proves nothing")
    # What links rotations in SCAN_REQs: on a BT 5 controller the kernel keeps the first scan's
    # address while the adapter advertises, until a power cycle (docs/radio.md, "The scan").
    for controller in (0, 1):
        addresses = onair.active_scan_addresses(lab.snoop, controller)
        if addresses:
            rpis = len({a["data"] for a in found if a["controller"] == controller})
            print(f"  hci{controller}: {len(addresses)} active scans from {len(set(addresses))} random addresses, "
                  f"while {rpis} EN advertisements went on the air")
    # A refused LE Set Random Address leaves the last one in force: the pairing check above and the
    # address of each advertisement are what count; the number says how often the kernel tried.
    print(f"  LE Set Random Address refused {len(refused)} times" + (f" (HCI status 0x{refused[0][2]:02x})" if refused else ""))

def first_after_restart(lab, fail):
    """After agent a's SIGKILL and after bluetoothd's restart, each agent's next EN advertisement
    comes within BACK_WITHIN from a new address, timed from the moment the agent could act: the
    restarted agent's start, or the restarted bluetoothd offering its adapter (btmon); when it falls
    in the same interval as the last one before, its RPI comes from a fresh key (the day's key
    rolled), never the old key's again."""
    table, (found, *_) = lab.en_capture
    for event, restarted, controllers in (("bluetoothd-killed", "bluetoothd-restarted", (0, 1)), ("a-killed", "a-restarted", (0,))):
        for controller in controllers:
            offered = onair.offered(lab.snoop, controller, lab.at(restarted)) if event.startswith("bluetoothd") else None
            moment = lab.at(restarted) if offered is None else offered
            mine = [a for a in found if a["controller"] == controller]
            before = [a for a in mine if onair.unix_seconds(a["time"]) < lab.at(event)]
            # The kernel may set the same advertisement up again (same RPI, same address) when
            # bluetoothd restarts: the first with a new RPI is the agent's new identifier.
            after = [a for a in mine if onair.unix_seconds(a["time"]) >= max(moment, lab.at(event)) and before
                     and a["data"][11:27] != before[-1]["data"][11:27]]
            if not before or not after:
                fail(f"hci{controller}: no EN advertisement {'before' if not before else 'after'} {event}")
                continue
            last, first = before[-1], after[0]
            took = onair.unix_seconds(first["time"]) - moment
            _, last_interval, last_key = table.get(last["data"][11:27], (None, None, None))
            _, first_interval, first_key = table.get(first["data"][11:27], (None, None, None))
            rolled = first_interval == last_interval
            print(f"  {event.replace('-', ' ')} ({'from its restart' if offered is None else 'from hci%d offered again' % controller}): "
                  f"hci{controller} advertised again {took:.1f} s later from a new address "
                  f"{first['address'].hex(':')}; " + ("same interval, a fresh key (rolled)" if rolled and first_key != last_key
                                                     else "same interval, THE SAME KEY" if rolled else "the next interval's RPI"))
            if took > BACK_WITHIN:
                fail(f"hci{controller} advertised {took:.1f} s after {event} ({'restarted' if offered is None else 'offered again'}), more than {BACK_WITHIN:g} s")
            if first["address"] == last["address"]:
                fail(f"hci{controller} kept its address {last['address'].hex(':')} across {event}")
            if rolled and first_key == last_key:
                fail(f"hci{controller} advertised two RPIs of one key in interval {first_interval} across {event}")
    for agent in AGENTS:
        rolls = open(lab.path(f"{agent}/enagentd.log")).read().count("rolled to a fresh key")
        print(f"  agent {agent} rolled to a fresh key {rolls} time(s) (a recovery within the interval of its last advertisement)")

def phones_and_crowd(lab, fail):
    if not lab.phones:
        fail("no phone advertised (phones.jsonl is missing or empty)")
        return
    recorded = {agent: {rpi.hex() for (rpi,) in lab.rows(agent, "SELECT rpi FROM sighting")} for agent in AGENTS}
    for p in lab.phones:
        if p["kind"].startswith("crowd"):
            continue
        seen_by = [agent for agent in AGENTS if p["rpi"] in recorded[agent]]
        print(f"  {p['kind']:16} {'well-formed' if p['wellFormed'] else 'malformed  '} {p['address']}: recorded by {', '.join(seen_by) or 'nobody'}")
        if p["wellFormed"] and len(seen_by) != len(AGENTS):
            fail(f"the {p['kind']} phone was not recorded by {sorted(set(AGENTS) - set(seen_by))}")
        if not p["wellFormed"] and seen_by:
            fail(f"the malformed {p['kind']} phone was recorded by {seen_by}")
    crowd = [p for p in lab.phones if p["kind"].startswith("crowd")]
    sets = len({(p["controller"], p["set"]) for p in crowd})
    for agent, controller in (("a", 0), ("b", 1)):
        scans = [w for w in onair.scan_windows(lab.snoop, controller) if w[0] >= min(p["on"] for p in crowd)]
        # Over each scan's configured length (lab.conf: scan-seconds = 3): in the loaded emulated
        # guest a scan's end can come seconds late, and an advertiser on the air for the first
        # three seconds of a scan must be caught.
        pairs = [(scan, p) for scan in scans for p in crowd if p["on"] <= scan[0] and p["off"] >= scan[0] + 3]
        caught = sum(1 for _, p in pairs if p["rpi"] in recorded[agent])
        share = caught / len(pairs) if pairs else 0
        lengths = [end - start for start, end in scans]
        print(f"  crowd of {len(crowd)} advertisements ({sets} sets at once, each advertisement its own address and TEK): {agent} recorded "
              f"{caught} of {len(pairs)} (scan, advertiser on the air for the scan's first 3 s) pairs = {share:.1%} over {len(scans)} scans "
              f"of {min(lengths, default=0):.1f}-{max(lengths, default=0):.1f} s")
        if pairs and share < CROWD_SHARE:
            fail(f"{agent} recorded {share:.1%} of the crowd's (scan, advertiser) pairs, below {CROWD_SHARE:.0%}")
        if not pairs:
            print(f"      (no advertiser spanned the first 3 s of one of {agent}'s scans in this run: the share is not measured)")
        if not any(p["rpi"] in recorded[agent] for p in crowd):
            fail(f"{agent} recorded none of the crowd")
    crowd_cpu = lab.phase("crowd-cpu-b")
    started, ended = crowd_cpu["started"], crowd_cpu["realtime"]
    cpu = crowd_cpu["ticks"] / crowd_cpu["clock_ticks"] / ((ended - started) / 60)
    log = open(lab.path("b/enagentd.log")).read().splitlines()
    stamp = lambda line: datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S%z").timestamp()
    writes = [line for line in log if "stored " in line and " sightings" in line]
    during = [line for line in writes if float(started) - 1 <= stamp(line) <= float(ended) + 1]
    crowd_scans = [w for w in onair.scan_windows(lab.snoop, 1) if float(started) <= w[1] <= float(ended)]
    print(f"  b's CPU during the crowd: {cpu:.2f} s per minute ({cpu / 60:.1%} of a core, the emulated guest's); "
          f"{len(during)} writes of sightings for {len(crowd_scans)} scans")
    if len(during) > len(crowd_scans) + 2:
        fail(f"b wrote sightings {len(during)} times during {len(crowd_scans)} scans: more than one write per scan")

def phone_exposures(lab, fail):
    detected = lab.phase("detect-phones-b")["result"]
    windows = lab.phase("windows-phones-b")["windows"]
    # b's sightings just before and just after the detection bound what it could match.
    before, after = ({rpi for rpi, _ in lab.phase(f"b-sightings-{when}-detect")["sightings"]} for when in ("before", "after"))
    teks = {p["tek"] for p in lab.phones}
    least, most = ({p["tek"] for p in lab.phones if p["rpi"] in recorded} for recorded in (before, after))
    days = sorted({w["date"] for w in windows})
    phone_days = sorted({day_of(p["rollingStart"]) for p in lab.phones})
    matched = detected.get("MatchedKeys")
    print(f"  {len(teks)} phone keys published; b matched {matched} (it had stored RPIs of {len(least)} of them just before the "
          f"detection, {len(most)} just after); {detected.get('NewExposureWindows')} exposure windows on {', '.join(days)}; "
          f"the phones' day {', '.join(phone_days)}")
    if not least or matched is None or not len(least) <= matched <= len(most):
        fail(f"b matched {matched} phone keys; it had stored RPIs of {len(least)} before, {len(most)} after")
    if days != phone_days:
        fail(f"the phones' exposures are on {days}, not on their keys' day {phone_days}")

def recovery(lab, fail):
    recovered = lab.bluetoothd_restart
    waited = lab.phase("bluetoothd-restart")
    for adapter in AGENTS.values():
        ready, took, _ = recovered.get(adapter, (None, None, None))
        print(f"  bluetoothd killed and restarted: it offered {adapter} again after "
              + (f"{ready:.1f} s; the agent advertised and scanned on it {took:.1f} s later (btmon)" if took is not None
                 else "?; the agent never advertised and scanned again (btmon)"))
        if took is None or took > BACK_WITHIN or waited.get(adapter) == "timeout":
            fail(f"{adapter} did not advertise and scan within {BACK_WITHIN:g} s of bluetoothd offering it again ({took})")
    snapshots = {name: lab.phase(name)["snapshot"] for name in ("before-kill", "after-kill", "end")}
    before, after, end = snapshots["before-kill"], snapshots["after-kill"], snapshots["end"]
    # Every key from before the kill is still there (a roll may have ended one early and added one).
    kept = {key for _, _, key in before["keys"]} <= {key for _, _, key in end["keys"]}
    per_day = {}
    for start, _, _ in end["keys"]:
        per_day[start] = per_day.get(start, 0) + 1
    print(f"  agent a killed with SIGKILL: {before['sightings']} sightings committed before, {after['sightings']} after, "
          f"{end['sightings']} at the end; database {after['integrity']}; TEKs {'kept' if kept else 'LOST'} after the restart; "
          f"keys per day {sorted(per_day.values())}")
    if max(per_day.values(), default=0) > KEYS_PER_DAY:
        fail(f"agent a has more than {KEYS_PER_DAY} keys for one day: {per_day}")
    if after["integrity"] != "ok":
        fail(f"agent a's database after SIGKILL: {after['integrity']}")
    if after["sightings"] < before["sightings"] or end["sightings"] < after["sightings"]:
        fail("committed sightings were lost across SIGKILL and restart")
    if not kept:
        fail("agent a lost TEKs across SIGKILL and restart")

def logs(lab, fail):
    for agent, adapter in AGENTS.items():
        log = open(lab.path(f"{agent}/enagentd.log")).read().lower()
        secrets = [key.hex() for (key,) in lab.rows(agent, "SELECT key_data FROM temporary_exposure_key")] + sorted(lab.own[agent])
        leaked = [secret for secret in secrets if secret in log]
        power = re.search(r"advertising tx power (-?\d+) dbm, (read from \w+|as configured)", log)
        print(f"  {agent}: {len(log.splitlines())} lines, {len(leaked)} of its {len(secrets)} TEKs and RPIs in them; "
              f"TX power {power.group(1) + ' dBm, ' + power.group(2) if power else 'not logged'}")
        if leaked:
            fail(f"agent {agent}'s log carries {len(leaked)} TEKs or RPIs")
        if not power or power.group(2) != f"read from {adapter}":
            fail(f"agent {agent} did not read its TX power from {adapter}")
        refused = lab.refused_advertisements(agent)
        print(f"  {agent}: the kernel refused {len(refused)} of its advertisements" + (f" (first: {refused[0]})" if refused else ""))
        if refused:
            fail(f"the kernel refused {len(refused)} of agent {agent}'s advertisements (first: {refused[0]})")


def pause(lab, fail):
    advertising, scanning = lab.phase("pause-b")["radio"].split()
    paused = lab.phase("paused-status-b")["status"]
    # Timed in the capture: from enctl pause returning to the controller accepting the last
    # command that stopped its advertising and scanning.
    paused_at = lab.at("b-paused")
    quiet = next((time for time, on_air, listening in onair.radio_changes(lab.snoop, 1)
                  if time >= paused_at - 2 and not on_air and not listening), None)
    took = None if quiet is None else max(0.0, quiet - paused_at)
    print(f"  b paused: status {paused['status']}; hci1 stopped advertising and scanning "
          + (f"{took:.1f} s after enctl pause returned" if took is not None else "NEVER") + f" (the controller's commands; still {advertising}/{scanning} when polled)")
    if paused["status"] != "paused" or advertising != "no" or scanning != "no" or took is None or took > PAUSE_WITHIN:
        fail(f"pausing b left its radio on (advertising {advertising}, scanning {scanning}; stopped after {took} s)")

def adapter(lab, fail):
    power_off = lab.phase("power-off-a")
    powered_after_off, polled, losses = power_off["powered"], power_off["polled"], power_off["losses"]
    # The switch-off as the kernel was told it (bluetoothd's Powered read just after can already
    # be true again: the agent may switch the adapter back on within a second).
    trace = open(lab.path("btmon.txt"), errors="replace").read()
    switched_off = re.search(r"MGMT Command: Set Powered \(0x0005\) plen 1\s+\{0x\w+\} \[hci0\].*\n\s+Powered: Disabled", trace) is not None
    # The recovery timed on the controller's own commands: the first moment after the switch-off
    # (bluetoothd's Set Powered: a rotation of a's just before it has a quiet moment of its own on
    # a legacy controller) when hci0 went quiet, then the first advertising and the first scan
    # after that, timed from that Set Powered, the moment the agent could notice. (The lab's poll of
    # the growing capture can lag by seconds in the emulated guest.)
    powered_off = onair.powered(lab.snoop, 0, lab.at("a-switched-off"))
    changes = [change for change in onair.radio_changes(lab.snoop, 0) if powered_off is not None and change[0] >= powered_off]
    quiet = next((index for index, (_, on_air, listening) in enumerate(changes) if not on_air and not listening), None)
    after = changes[quiet + 1:] if quiet is not None else []
    advertising_at = next((time for time, on_air, _ in after if on_air), None)
    scanning_at = next((time for time, _, listening in after if listening), None)
    took = None if advertising_at is None or scanning_at is None else max(advertising_at, scanning_at) - powered_off
    print(f"  hci0 switched off under a (btmon: {'Set Powered off' if switched_off else 'NO Set Powered off'}; Powered {powered_after_off} just after): "
          f"a noticed the loss {losses} time(s); advertising and scanning again after "
          + (f"{took:.1f} s (btmon; the lab's poll saw it after {polled} s)" if took is not None else f"NEVER (the lab's poll: {polled})"))
    if not switched_off or losses == 0 or took is None or took > BACK_WITHIN:
        fail(f"agent a did not bring hci0 back within {BACK_WITHIN:g} s of it being switched off ({switched_off}, {losses}, {took})")

def judge_return(fail, agent, adapter, status, waiting, took, fresh, polled, gone, back, extra=""):
    """One agent's account of its adapter gone and back: its API must have said one of `waiting`,
    neither advertising nor scanning, while the adapter was `gone`, and it must have advertised a
    new RPI from a new address and scanned within BACK_WITHIN (`took`, from `back`)."""
    print(f"  {agent} ({adapter}) {gone}: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}, "
          f"scanning {'yes' if status['scanning'] else 'no'}{extra}; {back} advertising and scanning again "
          + (f"{took:.1f} s later (btmon)" if took is not None else "NEVER") + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address")
          + f" (the lab's poll: {polled})")
    if status["status"] not in waiting or status["advertising"] or status["scanning"]:
        fail(f"agent {agent}'s API says {status['status']} (advertising {status['advertising']}, scanning {status['scanning']}) while {adapter} is {gone}")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent {agent} did not advertise a new RPI from a new address and scan within {BACK_WITHIN:g} s once {adapter} was back ({gone}: {took}, {fresh})")

def airplane_mode(lab, fail):
    blocked_at = lab.at("rfkill-blocked")
    unblocked_at = lab.at("rfkill-unblocked")
    polled = lab.phase("rfkill")
    for agent, adapter in AGENTS.items():
        status = lab.phase(f"rfkill-status-{agent}")["status"]
        said = "switched off by airplane mode" in open(lab.path(f"{agent}/enagentd.log")).read()
        took, fresh, _ = lab.returned(int(adapter.removeprefix("hci")), blocked_at, unblocked_at)
        judge_return(fail, agent, adapter, status, ("bluetooth-off",), took, fresh, polled.get(adapter), gone="blocked", back="unblocked:",
                     extra=f"; its log {'names' if said else 'does NOT name'} the block")
        if not said:
            fail(f"agent {agent}'s log does not say that {adapter} is blocked")
    # A monitor stranded on hci0 while it was blocked (agents.sh, where a scans passively).
    if lab.has("monitor-stranded"):
        status = lab.phase("monitor-stranded")["status"]
        # No monitor of anyone's is refused as Busy in the lab but after this one.
        busy = len(re.findall(r"\[hci0\].*\n\s+Add Advertisement Patterns Monitor \(0x0052\)\n\s+Status: Busy", lab.text("btmon.txt")))
        fell_back = "scanning actively through bluetoothd's discovery until the kernel takes the scan's monitor again" in lab.text("a/enagentd.log")
        print(f"  a monitor added to hci0 while blocked: status {status}; the kernel refused a's monitors as Busy {busy} time(s) after it (btmon); "
              f"a's log {'says' if fell_back else 'does NOT say'} it scans through bluetoothd's discovery until the kernel takes its monitor again")
        if busy and not fell_back:
            fail("the kernel refused agent a's monitor as Busy, and a did not say it scans through bluetoothd's discovery meanwhile")

def second_advertiser(lab, fail):
    started = lab.at("second-advertiser")
    ended = lab.at("second-advertiser-off")
    legacy = any(advertisement.get("legacy") for advertisement in lab.en_capture[1][0] if advertisement["controller"] == 0)
    # From bluetoothctl's start to its end (it registers its advertisement within about a second;
    # bluetoothd puts the name in the scan response, so the set's advertising data is empty).
    en, other, gap = onair.air_shares(lab.snoop, 0, started, ended)
    # The other's from the moment bluetoothd gave it to the kernel: on a legacy controller the
    # kernel puts it on the set when a steps aside, which needs a new address, refused while a scans.
    # The registration that took: after each that bluetoothd answered Failed (the kernel refuses the
    # new address while a scan runs, as beside any program's scan), bluetoothctl tried again.
    refused = lab.text(lab.phase("second-advertiser-off")["transcript"]).count("Failed to register advertisement")
    registered = onair.registered(lab.snoop, 0, started)
    for _ in range(refused):
        registered = registered and onair.registered(lab.snoop, 0, registered + 1e-6)
    other_since = onair.air_shares(lab.snoop, 0, registered, ended)[1] if registered is not None else 0
    status = lab.phase("second-advertiser-status-a")["status"]
    print(f"  for {ended - started:.1f} s: a's EN advertisement on the air {en:.0%} of the time, bluetoothctl's {other:.0%} "
          + (f"({other_since:.0%} from its registration {registered - started:.1f} s in"
             + (f", after {refused} refused while a scanned" if refused else "") + ")" if registered is not None else "(NEVER registered)")
          + f", the longest stretch without EN {gap:.1f} s; a said {status['status']}, advertising {'yes' if status['advertising'] else 'no'} "
          + ("(legacy: a steps aside, since the kernel would lend the one set in turns, each turn from a new address)" if legacy else "(extended: a set each, side by side)"))
    if other_since < OTHER_ADVERTISER_SHARE:
        fail(f"the second advertiser on hci0 was on the air {other_since:.0%} of the time from its registration (at least {OTHER_ADVERTISER_SHARE:.0%})")
    if legacy and (status["status"] != "adapter-shared" or status["advertising"]):
        fail(f"with a second advertiser on legacy hci0, a said {status['status']} (advertising {status['advertising']})")
    if not legacy and (en < EN_SHARE_BESIDE or status["status"] != "active"):
        fail(f"with a second advertiser on hci0, EN on the air {en:.0%} of the time; a said {status['status']}")

# What an agent logs when something took its advertisement off or cost it a key.
DISTURBED = re.compile(r"radio lost|rolled to a fresh key|taken off the air|not advertising until|cannot advertise|removed by another program")

def another_controller(lab, fail):
    start, end = lab.at("another-controller-from"), lab.at("another-controller-to")
    for agent, adapter in AGENTS.items():
        en, _, gap = onair.air_shares(lab.snoop, int(adapter.removeprefix("hci")), start, end)
        # The stamps are whole seconds: up to the one the next phase may begin in.
        disturbed = [line.strip() for line in open(lab.path(f"{agent}/enagentd.log"))
                     if DISTURBED.search(line) and int(start) <= logged_at(line) < int(end)]
        print(f"  {agent}: its EN advertisement on the air {en:.0%} of the {end - start:.1f} s (the longest stretch without {gap:.1f} s); "
              + (f"{len(disturbed)} log lines of a disturbance (first: {disturbed[0]})" if disturbed else "nothing disturbed in its log"))
        if en < EN_SHARE_BESIDE or disturbed:
            fail(f"agent {agent} was disturbed by another controller's events: EN on the air {en:.0%} of the time"
                            + (f", it logged '{disturbed[0]}'" if disturbed else ""))

def unplug(lab, fail):
    unplugged_at = lab.at("unplugged")
    replugged_at = lab.at("replugged")
    polled = lab.phase("replug")
    for agent, adapter in AGENTS.items():
        controller = int(adapter.removeprefix("hci"))
        status = lab.phase(f"unplugged-status-{agent}")["status"]
        # Timed from bluetoothd offering the new controller (btmon), as after bluetoothd's restart.
        offered = onair.offered(lab.snoop, controller, replugged_at)
        took, fresh, _ = (None, False, None) if offered is None else lab.returned(controller, unplugged_at, offered)
        judge_return(fail, agent, adapter, status, ("no-adapter", "bluetooth-off"), took, fresh, polled.get(adapter), gone="unplugged",
                     back="plugged: bluetoothd offered it " + (f"{offered - replugged_at:.1f} s later, and" if offered is not None else "NEVER, and"))

def suspend(lab, fail):
    suspended_at = lab.at("suspended")
    resumed_at = lab.at("resumed")
    day = lab.phase("resumed")["agent_time"] // 86400
    again = lab.reenabled_at_resume
    # a's own return: after the kernel's re-enabling, which a takes off on waking.
    taken_off = max((max(onair.unix_seconds(advertisement["time"]), resumed_at) + took for advertisement, took in again if took is not None),
                    default=resumed_at)
    took, fresh, back = lab.returned(0, suspended_at, max(resumed_at, taken_off))
    took = None if took is None else took + max(resumed_at, taken_off) - resumed_at
    # The key of the first RPI after the return: it must be the new day's.
    rpi = back["data"][11:27].hex() if back is not None else None
    key_day = next((start // 144 for start, period, key in lab.phase("after-suspend")["snapshot"]["keys"]
                    if rpi in lab.derived(key, start, period)), None)
    before, after = (lab.phase(name)["snapshot"] for name in ("before-suspend", "after-suspend"))
    print(f"  resumed {resumed_at - suspended_at:.1f} s (real) after a slept, in the agents' day {day_of(day * 144)}: a advertising and scanning again "
          + (f"{took:.1f} s later (btmon)" if took is not None else "NEVER") + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address")
          + f", its key of {day_of(key_day * 144) if key_day is not None else 'NO KEY OF a'}; sightings {before['sightings']} before, {after['sightings']} after"
          + f" (the lab's poll: {lab.phase('resume-a')['polled']})")
    for advertisement, off in again:
        print(f"  the kernel put a's last RPI before the sleep on the air again at power-on (from {advertisement['address'].hex(':') if advertisement.get('address') else '?'}); "
              + (f"a took it off {off * 1000:.0f} ms after it was continued" if off is not None else "a NEVER took it off") + f" (at most {REENABLED_OFF_WITHIN * 1000:.0f} ms)")
        if off is None or off > REENABLED_OFF_WITHIN:
            fail(f"the kernel's re-enabled advertisement of a's last RPI stayed on the air {off} s after the resume")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent a did not advertise a new RPI from a new address and scan within {BACK_WITHIN:g} s of its resume ({took}, {fresh})")
    if key_day != day:
        fail(f"agent a's first RPI after the resume is not from a key of the new day ({key_day}, {day})")
    if after["sightings"] < before["sightings"] or after["integrity"] != "ok":
        fail("committed sightings were lost across the suspend")

def connectable(lab, fail):
    at, reprogrammed = lab.connectable_moment
    polls = lab.entries("connectable-poll")
    status = lab.phase("connectable-status-a")["status"]
    # Timed on the capture: from the kernel's New Settings event (connectable) to the first command
    # after it that took advertising off; and a's status: no poll of it begun more than
    # CONNECTABLE_STATUS_WITHIN after that event may read another (enctl's own start on a loaded
    # host is not a's lag), and one must read adapter-connectable.
    turned = next((moment for moment, settings in onair.settings_changes(lab.snoop, 0) if moment >= at and settings & onair.CONNECTABLE), None)
    taken_off = None if turned is None else next((moment - turned for moment in lab.withdrawals(0) if moment >= turned), None)
    said = next((poll for poll in polls if poll["said"] == "adapter-connectable no"), None)
    late = [poll for poll in polls if poll["said"] != "adapter-connectable no" and turned is not None
            and poll["started"] - turned > CONNECTABLE_STATUS_WITHIN]
    # From the kernel's New Settings event (not connectable) on: when a could advertise again.
    off_at = lab.at("a-not-connectable")
    turned_back = next((moment for moment, settings in onair.settings_changes(lab.snoop, 0) if moment >= off_at and not settings & onair.CONNECTABLE), None)
    back, fresh = lab.back_on_air(0, at, off_at if turned_back is None else turned_back)
    took = None if back is None or turned_back is None else onair.unix_seconds(back["time"]) - turned_back
    print(f"  connectable on: a's advertising taken off " + (f"{taken_off * 1000:.0f} ms after the kernel's New Settings (btmon)" if taken_off is not None else "NEVER")
          + "; enctl status said " + (f"adapter-connectable in the poll begun {said['started'] - turned:.1f} s after it" if said and turned is not None else "NEVER adapter-connectable")
          + (f", {late[-1]['said']} in one begun {late[-1]['started'] - turned:.1f} s after" if late else "")
          + f"; 2 s later: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}")
    print(f"  connectable off: a advertising again " + (f"{took:.1f} s after the kernel's New Settings" if took is not None else "NEVER")
          + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address") + f" (the lab's poll: {lab.phase('connectable-a')['polled']})")
    if taken_off is None or taken_off > CONNECTABLE_OFF_WITHIN or not said or late:
        fail(f"agent a did not take its advertisement off at once when hci0 turned connectable, or did not say so "
             f"({taken_off}, {[(round(poll['started'] - (turned or 0), 1), poll['said']) for poll in polls]})")
    if status["status"] != "adapter-connectable" or status["advertising"]:
        fail(f"agent a's API says {status['status']}, advertising {status['advertising']}, on a connectable adapter")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent a did not advertise a new RPI from a new address within {BACK_WITHIN:g} s of hci0 turning non-connectable ({took}, {fresh})")


def api_access(lab, fail):
    answers = {caller: lab.phase(f"callers-{caller}")["answers"] for caller in ("root", "member", "other")}
    reads = {"Properties.Get", "Properties.GetAll"}
    wrong = []
    for member in sorted(answers["root"]):
        expected = {"root": "allowed", "member": "allowed", "other": "allowed" if member in reads else "denied"}
        got = {caller: answers[caller].get(member) for caller in answers}
        if got != expected:
            wrong.append(f"{member}: {got}")
    print(f"  {len(answers['root'])} members; root and members of enagent may call every one; another user only "
          f"{', '.join(sorted(reads))} (and Introspect)" + ("" if not wrong else "; NOT AS EXPECTED: " + "; ".join(wrong)))
    if wrong or len(answers["root"]) < LEAST_API_MEMBERS:
        fail(f"the bus policy lets the wrong callers through: {wrong or answers['root']}")

def api(lab, fail):
    for agent in AGENTS:
        status = lab.phase(f"status-{agent}")["status"]
        print(f"  {agent}: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}, "
              f"{status['sightingsStored']} sightings stored, adapter {status['adapter']}")
        if status["status"] != "active" or status["adapter"] != AGENTS[agent]:
            fail(f"agent {agent}'s API says {status['status']} on {status['adapter'] or 'no adapter'}, not active on {AGENTS[agent]}")

def exposure(lab, fail):
    detected = lab.phase("detect-b")["result"]
    windows = lab.phase("windows-b")["windows"]
    shared_keys = lab.phase("shared-keys")
    keys, public_key = lab.path(shared_keys["keys"]), lab.path(shared_keys["public_key"])
    offline = json.loads(subprocess.run([lab.enctl, "detect", "offline", "--db", lab.path("b/enagent.db"), "--keys", keys,
                                         "--public-key", public_key, "--json"], check=True, capture_output=True, text=True).stdout)
    shared = subprocess.run([lab.enctl, "keys", "inspect", keys, "--public-key", public_key, "--json"],
                            check=True, capture_output=True, text=True).stdout
    days = sorted({w["date"] for w in windows})
    key_days = sorted({row[0] for row in lab.rows("a", "SELECT date(rolling_start_interval_number * 600, 'unixepoch') FROM temporary_exposure_key")})
    print(f"  a shared {json.loads(shared)['keyCount']} keys; b: {detected.get('MatchedKeys', 0)} matched, "
          f"{detected.get('NewExposureWindows', 0)} new exposure windows (offline detection finds {len(offline['exposureWindows'])}); "
          f"all of b's windows on {', '.join(days) or 'no day'}")
    new_windows = detected.get("NewExposureWindows", 0)
    if not new_windows or new_windows != len(offline["exposureWindows"]):
        fail(f"b's detection through the key server found {new_windows} windows, offline detection {len(offline['exposureWindows'])}")
    phone_days = {day_of(p["rollingStart"]) for p in lab.phones}
    if not set(days) <= set(key_days) | phone_days:
        fail(f"exposure days {days} are neither days of a's keys {key_days} nor the phones' {sorted(phone_days)}")



if __name__ == "__main__":
    sys.exit(main())
