"""What went on the air: each RPI from one address, the advertisements and scans against the specification."""
import re, time
import onair
from .bounds import LEAST_RPIS, REENABLED_OFF_WITHIN, REPROGRAMMED_AT_MOST


def address_rpi(lab, fail):
    # Pair each address with the service data in the same advertising report event only.
    pairs, address, in_report = set(), None, False
    for line in lab.lines("btmon.txt"):
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
    # A new RPI written to a set on the air goes out from the address of what was there: from the
    # previous RPI's, which links the two whether or not the other agent's scan caught it (the
    # pairing check above sees it only then). Another program's advertisement there is the kernel
    # lending a legacy set, which the agent steps aside from as it hears of it (docs/radio.md).
    for controller in (0, 1):
        changed = list(onair.data_changed_on_the_air(lab.snoop, controller))
        own = [change for change in changed if onair.EN_PREFIX in change[2]]
        print(f"  hci{controller}: {len(own)} new RPIs written while the previous was on the air"
              + (f" (first from {own[0][1].hex(':') if own[0][1] else 'no address'}, "
                 f"{own[0][2][11:27].hex()} then {own[0][3][11:27].hex()})" if own else "")
              + (f"; {len(changed) - len(own)} while another program's advertisement had the set" if len(changed) > len(own) else ""))
        if own:
            fail(f"hci{controller}: {len(own)} new RPIs went out first from the previous RPI's address (LE Set Advertising Data while advertising)")
    # A refused LE Set Random Address leaves the last one in force: the pairing check above and the
    # address of each advertisement are what count; the number says how often the kernel tried.
    print(f"  LE Set Random Address refused {len(refused)} times" + (f" (HCI status 0x{refused[0][2]:02x})" if refused else ""))
