#!/usr/bin/env python3
"""crowd-report.py RUN_DIR [--check [NAME...]]: what the agents of make lab-rootcanal-crowd
(crowd-agents.sh in the guest, two RootCanal controllers) recorded of the host's Bumble phones.

Reads the run's manifest (phases.jsonl), each agent's database (RUN_DIR/a, RUN_DIR/b: its scans
and sightings), btmon's capture of the guest and the phones' log (phones.jsonl of rclab.py serve:
each RPI's "on", stamped once its set was on again, and "off", stamped before its set went off,
by the host's clock).

The clocks: the databases count in the agents' clock (the manifest's phase "clock": 120 times
faster from an origin), which turns back into the guest's; the guest's clock is the host's give or
take what the guest's kernel read at boot (whole seconds). crowd-agents.sh measures that offset at
the run's start and end (the phase "clock-mark": a file made on the lab share between two readings
of the guest's clock has the host's time as its modification time), and the report takes it as
moving evenly from one to the other. As a cross-check, btmon's first report of each phone's new
address follows the host's "on" of it by the offset and a few milliseconds when the controller
scanned then (RootCanal sends an advertising set as soon as it is enabled).

For each scan of each agent (its database's scan table, turned into the host's clock), the RPIs on
the air for the whole scan, with the clocks' margin to spare on either side, are the (scan, advertiser) pairs
expected; a pair is recorded when the agent stored a sighting of that RPI in that scan (from the
scan's start to its end plus ScanHistory.lateReportSeconds). An RPI's receptions in a scan are one
row for each SAME_SCAN seconds of the agents' clock (SightingRecord: the agent merges the receptions
within that long of a row's first into it); at the lab's 120 times, a scan of seconds is minutes."""
import functools, json, os, statistics, sys
from collections import Counter, defaultdict
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import onair  # noqa: E402
from labframe import Check, Lab, agents_stopped, arguments, failed_steps, heading, report  # noqa: E402

AGENTS = {"a": 0, "b": 1}
# Of the pairs expected, the share each agent must record.
RECORDED_SHARE = 0.99
# Seconds an RPI must have been on the air before a scan's start and after its end to be expected
# in it, at least: more when the clock marks were read more slowly (a loaded guest), as the offset
# is then known only to half a mark's width (CrowdLab.margin). Past LARGEST_MARGIN the pairs near
# a scan's ends would be too few to judge, and the clock check fails.
MARGIN, LARGEST_MARGIN = 0.1, 0.5
# A sighting this long (the agents' seconds) after its scan's recorded end still belongs to it
# (Sources/ENStore/ScanHistory.swift, lateReportSeconds).
LATE_REPORT = 1
# Host ticks: a file's modification time is the host kernel's coarse clock, up to this early.
HOST_TICK = 0.004
# The first reports of new addresses within this long of the offset (seconds) are those of
# rotations while the controller scanned, the delivery's delays printed.
PROMPT = 0.5
# RSSI the agent stores for a reception without one (schema v12, later_receptions).
NO_RSSI = 127
# The agent merges an RPI's receptions within this long (its clock's seconds) of a row's first
# into that row, up to MOST_RECEPTIONS (ExposureWindowing.sameScanSeconds, SightingRecord.maximumReceptions).
SAME_SCAN, MOST_RECEPTIONS = 25, 255
# The agents' controllers' last frames in btmon's capture lie at most this long before the crowd's
# end (an agent scans 3 s of every 4, and each scan's start and end are frames).
CAPTURE_GAP = 10.0


def kind(line):
    """The phone's kind for the figures: the three named phones, or the crowd's iPhones and Android phones."""
    if line["controller"].startswith("crowd-"):
        return f"crowd {line['kind']}"
    return f"{line['kind']} ({'legacy commands' if line['handle'] is None else 'extended commands'})"


class CrowdLab(Lab):
    @functools.cached_property
    def rpis(self):
        """Each RPI of the phones' log: its phone, kind, address, and its time on the air by the
        host's clock ("off" infinite for one still on at the end)."""
        spans, order = {}, []
        with open(self.path("phones.jsonl")) as log:
            for line in map(json.loads, log):
                if "on" in line:
                    spans[line["rpi"]] = {"rpi": line["rpi"], "address": line["address"], "on": line["on"], "off": float("inf"),
                                          "kind": kind(line), "phone": (line["controller"], line["handle"])}
                    order.append(line["rpi"])
                else:
                    spans[line["rpi"]]["off"] = line["off"]
        return [spans[rpi] for rpi in order]

    @functools.cached_property
    def agent_clock(self):
        clock = self.phase("clock")
        return clock["origin"], clock["scale"]

    def guest_time(self, agent_seconds):
        """The guest's unix time of an agent's clock reading."""
        origin, scale = self.agent_clock
        return origin + (agent_seconds - origin) / scale

    @functools.cached_property
    def marks(self):
        """{"start": (width, guest time, offset), "end": ...}: at each end of the run, the narrowest of
        its clock marks (width: the seconds between the guest's two readings), the offset the
        guest's clock minus the host's."""
        best = {}
        for mark in self.entries("clock-mark"):
            width = mark["after"] - mark["before"]
            if mark["at"] not in best or width < best[mark["at"]][0]:
                host = os.stat(self.path(mark["file"])).st_mtime + HOST_TICK / 2
                middle = (mark["before"] + mark["after"]) / 2
                best[mark["at"]] = (width, middle, middle - host)
        return {at: best[at] for at in ("start", "end")}

    @functools.cached_property
    def margin(self):
        """MARGIN, or the offset's uncertainty when larger: half the wider mark's width and a host tick."""
        return max(MARGIN, max(width / 2 + HOST_TICK for width, _, _ in self.marks.values()))

    def offset(self, guest):
        """The guest's clock minus the host's at the guest's unix time `guest`."""
        (_, start, early), (_, end, late) = self.marks["start"], self.marks["end"]
        return early + (late - early) * (guest - start) / (end - start)

    def host_time(self, agent_seconds):
        guest = self.guest_time(agent_seconds)
        return guest - self.offset(guest)

    @functools.cached_property
    def delays(self):
        """Seconds from each phone's "on" (host) to the first report of its address on the agents'
        controllers (guest, less the offset), of those that came within PROMPT: rotations while the
        controller scanned."""
        on = {rpi["address"]: rpi["on"] for rpi in self.rpis}
        delays = []
        for controller in AGENTS.values():
            first = {}
            for time, address in self.reports(controller):
                first.setdefault(address, time - self.offset(time))
            delays += [first[address] - on[address] for address in first if address in on]
        return sorted(delay for delay in delays if abs(delay) <= PROMPT)

    @functools.cache
    def reports(self, controller):
        """(guest time, address) of each advertising report of the controller (btmon)."""
        return onair.report_addresses(self.snoop, controller)

    @functools.cache
    def windows(self, controller):
        """(start, end), guest times, of each scan the controller ran (btmon)."""
        return onair.scan_windows(self.snoop, controller)

    @functools.cache
    def scans(self, agent):
        """The agent's scans: (start, end) by its clock, as its database has them."""
        return self.rows(agent, "SELECT started_at, ended_at FROM scan ORDER BY started_at")

    @functools.cache
    def sightings(self, agent):
        """(scan index or None, RPI, its first reception's time, RSSIs of its receptions) of each of the agent's sightings."""
        scans, found = self.scans(agent), []
        for rpi, seen_at, rssi, later in self.rows(agent, "SELECT rpi, seen_at, rssi, later_receptions FROM sighting ORDER BY seen_at"):
            index = max((i for i, (start, _) in enumerate(scans) if start <= seen_at), default=None)
            if index is not None and seen_at > scans[index][1] + LATE_REPORT:
                index = None
            receptions = [NO_RSSI if rssi is None else rssi] + [int.from_bytes(later[i + 1:i + 2], "little", signed=True)
                                                                  for i in range(0, len(later or b""), 2)]
            found.append((index, rpi.hex(), seen_at, receptions))
        return found


def steps(lab, fail):
    failed_steps(lab, fail)
    agents_stopped(lab, fail, AGENTS)


def clock(lab, fail):
    for at, (width, _, offset) in lab.marks.items():
        print(f"  at the {at}: the guest's clock {offset * 1000:+.0f} ms from the host's (read within {width * 1000:.0f} ms)")
    print(f"  the pairs' margin: {lab.margin * 1000:.0f} ms")
    if lab.margin > LARGEST_MARGIN:
        fail(f"clock: the marks were read too slowly for a margin under {LARGEST_MARGIN * 1000:.0f} ms")
    drift = lab.marks["end"][2] - lab.marks["start"][2]
    if abs(drift) > lab.margin:
        fail(f"clock: the offset moved by {drift * 1000:.0f} ms during the run")
    delays = lab.delays
    if not delays:
        fail("clock: no phone's new address reported within half a second of its \"on\": the offset is not confirmed")
        return
    print(f"  a new address reported on the agents' controllers {statistics.median(delays) * 1000:+.0f} ms after its \"on\" "
          f"(median of {len(delays)}; {delays[0] * 1000:+.0f} to {delays[-1] * 1000:+.0f} ms)")
    if delays[0] < -lab.margin:
        fail(f"clock: a new address reported {-delays[0] * 1000:.0f} ms before its \"on\": the clocks' offset is wrong")


def crowd(lab, fail):
    print(f"  the agents among the phones for {lab.at('crowd-ended') - lab.at('crowd-started'):.0f} s; "
          f"{len(lab.rpis)} RPIs of {len({rpi['phone'] for rpi in lab.rpis})} phones in the phones' log")
    for agent, controller in AGENTS.items():
        scans = lab.scans(agent)
        recorded = {(index, rpi) for index, rpi, _, _ in lab.sightings(agent) if index is not None}
        expected, missed, by_kind = 0, [], defaultdict(lambda: [0, 0])
        for index, (start, end) in enumerate(scans):
            begun, ended = lab.host_time(start), lab.host_time(end)
            for rpi in lab.rpis:
                if rpi["on"] <= begun - lab.margin and rpi["off"] >= ended + lab.margin:
                    expected += 1
                    by_kind[rpi["kind"]][0] += 1
                    if (index, rpi["rpi"]) not in recorded:
                        missed.append((index, rpi))
                        by_kind[rpi["kind"]][1] += 1
        share = (expected - len(missed)) / expected if expected else 0
        lengths = [(end - start) / lab.agent_clock[1] for start, end in scans]
        print(f"  {agent} (hci{controller}): {expected - len(missed)} of {expected} (scan, advertiser) pairs recorded = {share:.2%} "
              f"over {len(scans)} scans of {min(lengths, default=0):.2f}-{max(lengths, default=0):.2f} s; missing by kind: "
              + ", ".join(f"{name} {lost} of {count}" for name, (count, lost) in sorted(by_kind.items())))
        lags(lab, agent, controller)
        if missed:
            explain(lab, agent, controller, missed)
        if not expected or share < RECORDED_SHARE:
            fail(f"crowd: {agent} recorded {share:.2%} of {expected} (scan, advertiser) pairs, below {RECORDED_SHARE:.0%}")


def lags(lab, agent, controller):
    """How the controller's scans (the scan enables it accepted, btmon) lay against the agent's
    recorded ones: the one overlapping each recorded scan most, its start's and end's lags."""
    windows, starts, ends, none = lab.windows(controller), [], [], 0
    for start, end in lab.scans(agent):
        start, end = lab.guest_time(start), lab.guest_time(end)
        overlaps = [(min(end, ended) - max(start, begun), begun, ended) for begun, ended in windows if begun < end and ended > start]
        if not overlaps:
            none += 1
            continue
        _, begun, ended = max(overlaps)
        starts.append(begun - start)
        ends.append(ended - end)
    if starts:
        print(f"    hci{controller}'s scan began {statistics.median(starts):+.2f} s from a recorded scan's start (median; {min(starts):+.2f} to "
              f"{max(starts):+.2f}) and ended {statistics.median(ends):+.2f} s from its end ({min(ends):+.2f} to {max(ends):+.2f})"
              + (f"; {none} recorded scans without one" if none else ""))


def explain(lab, agent, controller, missed):
    """Whether the agent's controller reported a missed RPI's address during the scan (the agent, or
    the kernel above the controller, lost it) or not (RootCanal, or the controller's scan, did)."""
    reported = defaultdict(list)
    for time, address in lab.reports(controller):
        reported[address].append(time - lab.offset(time))
    windows = lab.windows(controller)
    heard, unheard = Counter(), Counter()
    for index, rpi in missed:
        start, end = (lab.host_time(moment) for moment in lab.scans(agent)[index])
        (heard if any(start <= time <= end for time in reported[rpi["address"]]) else unheard)[index] += 1
    scanning = sum(1 for index in set(unheard) if any(begun - lab.offset(begun) < lab.host_time(lab.scans(agent)[index][1])
                                                      and ended - lab.offset(ended) > lab.host_time(lab.scans(agent)[index][0])
                                                      for begun, ended in windows))
    stray = {rpi for index, rpi, _, _ in lab.sightings(agent) if index is None}
    print(f"    of the {len(missed)} missing: {sum(heard.values())} reported by hci{controller} during the scan (in {len(heard)} scans), "
          f"{sum(unheard.values())} not (in {len(unheard)} scans, {scanning} of them with a scan enabled on hci{controller} meanwhile); "
          f"{sum(1 for _, rpi in missed if rpi['rpi'] in stray)} of the RPIs stored outside every recorded scan")
    for index, count in sorted((heard + unheard).items(), key=lambda item: -item[1])[:3]:
        start, end = lab.scans(agent)[index]
        print(f"    scan {index} (+{lab.guest_time(start) - lab.at('crowd-started'):.1f} s, {(end - start) / lab.agent_clock[1]:.2f} s): "
              f"{count} missing, {heard[index]} of them reported by the controller")


def rows(lab, fail):
    for agent in AGENTS:
        sightings = lab.sightings(agent)
        per_scan = defaultdict(list)
        for index, rpi, seen_at, heard in sightings:
            if index is not None:
                per_scan[(index, rpi)].append((seen_at, len(heard)))
        # A row that the one before it should have taken: within SAME_SCAN of its first reception, not full.
        unmerged = sum(1 for found in per_scan.values() for (before, held), (after, _) in zip(sorted(found), sorted(found)[1:])
                       if after - before <= SAME_SCAN and held < MOST_RECEPTIONS)
        outside = sum(1 for index, _, _, _ in sightings if index is None)
        counts = Counter(len(found) for found in per_scan.values())
        receptions = [len(heard) for _, _, _, heard in sightings]
        rssi = [value for _, _, _, heard in sightings for value in heard if value != NO_RSSI]
        print(f"  {agent}: {len(sightings)} sightings, {outside} outside every recorded scan; rows per RPI per scan: "
              + ", ".join(f"{count} row{'s' if count > 1 else ''} {times} times" for count, times in sorted(counts.items()))
              + f"; {unmerged} within {SAME_SCAN} s of the row before")
        print(f"     receptions per row: median {statistics.median(receptions) if receptions else 0:g}, at most {max(receptions, default=0)}; "
              f"RSSI {min(rssi, default=0)} to {max(rssi, default=0)} dBm ({len(set(rssi))} values; "
              f"{sum(len(heard) for _, _, _, heard in sightings) - len(rssi)} receptions without one)")
        if unmerged:
            fail(f"rows: {agent} stored {unmerged} rows of an RPI within {SAME_SCAN} s (its clock) of its row before in the same scan")


def capture(lab, fail):
    onair.check_capture(lab, fail, AGENTS, lab.at("crowd-ended"), CAPTURE_GAP, end="the crowd's end")


def status(lab, fail):
    onair.check_status_polls(lab, fail, AGENTS, lab.at("crowd-started"))


def checks():
    return [
        Check("steps", "STEPS (each phase's commands)", steps),
        Check("clock", "CLOCKS (the guest's against the host's: files made on the lab share, and btmon's first report of each new address)", clock),
        Check("crowd", f"CROWD (the (scan, advertiser) pairs each agent recorded, at least {RECORDED_SHARE:.0%})", crowd),
        Check("rows", "ROWS (an RPI's receptions in a scan one row each 25 s of the agents' clock) AND RSSI", rows),
        Check("capture", "CAPTURE (btmon recorded to the crowd's end)", capture),
        Check("status", "STATUS (no poll says scanning while the controller ran no scan)", status),
    ]


def main():
    given = arguments(__doc__.splitlines()[0])
    return report("lab-rootcanal-crowd", given, CrowdLab(given.run), checks(), ahead=heading)


if __name__ == "__main__":
    sys.exit(main())
