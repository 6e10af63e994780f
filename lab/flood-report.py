#!/usr/bin/env python3
"""flood-report.py RUN_DIR [--check [NAME...]]: what the flood lab (flood.sh) did to the agents'
scans, and whether each scan that stalled ran again within the bound.

Issue 56: under a flood of fresh advertisers Debian 12's bluetoothd stopped taking the kernel's
events, answered StartDiscovery without scanning ("filters were equal") and StopDiscovery not at
all, and the agents said they scanned while their controllers had no scan enabled for minutes.

From btmon's capture: each agent's controller's scans (the scan enables it accepted, and each
advertising report it sent, which only a scanning controller does), and the
longest stretch from the flood's start to the end of the phones after it without one. From the
manifest: the flood's rate, each `enctl status` poll (the phase "status-poll", with the moment it
began), and the phones after the flood (phones.jsonl), which each agent must have stored. From each
agent's log: the stall it noted, once."""
import json, sys
import labframe, onair
from labframe import Check, Lab, arguments, failed_steps, report

AGENTS = {"a": 0, "b": 1}


def checks():
    return [
        Check("steps", "FLOOD STEPS (each phase's commands)", failed_steps),
        Check("flood", "FLOOD (phones.py flood on the other controllers)", flood),
        Check("capture", "CAPTURE (btmon recorded to the end)", capture),
        Check("scanning", f"SCANNING (no stretch without a scan longer than {onair.RECOVERED_WITHIN:.0f} s, btmon)", scanning),
        Check("status", "STATUS (no poll says scanning while the controller ran no scan)", status),
        Check("privacy", "PRIVACY (no scan from an adapter's public address)", privacy),
        Check("phones-after", "PHONES AFTER THE FLOOD (each agent stored every well-formed phone)", phones_after),
        Check("journal", "JOURNAL (the stall said once)", journal),
    ]


def main():
    given = arguments(__doc__.splitlines()[0])
    return report("lab-flood", given, Lab(given.run), checks(), ahead=ahead)


def ahead(lab):
    labframe.heading(lab)
    end = lab.phase("end")
    if "btmon" in end:
        print(f"  at the end: btmon {'still recording' if end['btmon'] else 'GONE'}, {end['free-kib'] // 1024} MiB of the guest's memory available")


def capture(lab, fail):
    onair.check_capture(lab, fail, AGENTS, lab.at("end"), onair.RECOVERED_WITHIN)


def flood(lab, fail):
    done = lab.phase("flood")
    print(f"  {done['advertisers']} fresh advertisers from {', '.join(done['adapters'])} in {done['realtime'] - done['started']:.0f} s "
          f"({done['per_minute']} a minute)")
    if not done["advertisers"]:
        fail("flood: no advertiser went on the air")


def scanning(lab, fail):
    onair.check_scan_stretches(lab, fail, AGENTS, lab.at("flood-started"), lab.at("end"), what="the flood")


def status(lab, fail):
    onair.check_status_polls(lab, fail, AGENTS, lab.at("flood-started"))


def privacy(lab, fail):
    """The recovery scans passively; whatever scans actively (bluetoothd's discovery before the
    stall) does so from a random address: an active scan from the public address, or a scan
    response to one, gives every advertiser around the adapter's identity."""
    _, scans, _, _, public_scans, scan_responses = onair.advertisements(lab.snoop, set(AGENTS.values()))
    for controller in AGENTS.values():
        kinds = sorted({("active" if active else "passive") + (", random" if own_type else ", public")
                        for index, own_type, active, _, _ in scans if index == controller})
        public = [scan for scan in public_scans if scan[0] == controller]
        answered = [response for response in scan_responses if response[0] == controller and response[2] == 0]
        print(f"  hci{controller}: {len(public)} active scans from the public address, {len(answered)} scan responses to them; "
              f"scans seen: {'; '.join(kinds) or 'none'}")
        if public or answered:
            fail(f"privacy: hci{controller} scanned actively from its public address {len(public)} times ({len(answered)} scan responses came back)")


def phones_after(lab, fail):
    phones = [json.loads(line) for line in lab.lines("phones.jsonl")] if lab.exists("phones.jsonl") else []
    wanted = {phone["rpi"] for phone in phones if phone["wellFormed"]}
    if not wanted:
        fail("phones-after: no phone went on the air after the flood")
    for agent in AGENTS:
        stored = {rpi.lower() for (rpi,) in lab.rows(agent, "SELECT hex(rpi) FROM sighting")}
        missed = wanted - stored
        print(f"  {agent}: {len(wanted) - len(missed)} of the {len(wanted)} well-formed phones stored")
        if missed:
            fail(f"phones-after: {agent} did not store {len(missed)} of the {len(wanted)} phones after the flood")


def journal(lab, fail):
    onair.check_stall_notes(lab, fail, AGENTS, lab.at("flood-started"), what="the flood")


if __name__ == "__main__":
    sys.exit(main())
