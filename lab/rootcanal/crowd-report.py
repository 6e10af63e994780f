#!/usr/bin/env python3
"""crowd-report.py RUN_DIR [ENCTL] [--check [NAME...]]: what the agents of make lab-rootcanal-crowd
(crowd-agents.sh in the guest, two RootCanal controllers) recorded of the host's Bumble phones.

Reads the run's manifest (phases.jsonl), each agent's database (RUN_DIR/a, RUN_DIR/b: its scans
and sightings), RootCanal's own record of the agents' controllers (host.snoop: hcisniffer.py's
merge of RootCanal's HCI sniffer files, stamped by the host's clock to the millisecond) and the
phones' log (phones.jsonl of rclab.py serve: each RPI's "on", stamped once its set was on again,
and "off", stamped before its set went off, by the host's clock). The phones' keys are detected
from each agent's database with ENCTL (enctl detect offline; by default $ENCTL, or the debug build).

The (scan, advertiser) pairs come from the host's clock alone: each scan a controller ran (the
scan enables RootCanal took), and the RPIs on the air for the whole of it, with MARGIN to spare
on either side. A pair is recorded when the agent stored a sighting of that RPI in its own record
of that scan (its database's scan table: the recorded scan that overlaps the controller's most;
from the scan's start to its end plus ScanHistory.lateReportSeconds). A scan is judged only where
it overlaps that record (`pairs`): a discovery of bluetoothd's can run on past it.

Only that matching, the crowd's start and end, and the status polls need the guest's clock: the
databases count in the agents' clock (the manifest's phase "clock": 120 times faster from an
origin), which turns back into the guest's; the guest's clock is the host's give or take what the
guest's kernel read at boot (whole seconds). crowd-agents.sh measures that offset at the run's
start and end (the phase "clock-mark": a file made on the lab share between two readings of the
guest's clock has the host's time as its modification time), and the report takes it as moving
evenly from one to the other; scans 1 s apart are matched with room to spare while a mark is read
within LARGEST_MARK. Until 2026-11-30 the pairs were the agents' recorded scans against btmon's
capture in the guest, which fell minutes behind a crowd of 300 and whose lost tail failed runs
in which the agents had recorded every pair. An RPI's receptions in a scan are one row for each
SAME_SCAN seconds of the agents' clock (SightingRecord: the agent merges the receptions within
that long of a row's first into it); at the lab's 120 times, a scan of seconds is minutes."""
import datetime, functools, json, math, os, statistics, subprocess, sys
from collections import Counter, defaultdict
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import onair, phones  # noqa: E402
from report_checks.bounds import BACK_WITHIN, CONNECTABLE_OFF_WITHIN, PAUSE_WITHIN  # noqa: E402
import labframe  # noqa: E402
from labframe import Check, Lab, agents_stopped, arguments, failed_steps, heading, report  # noqa: E402

AGENTS = {"a": 0, "b": 1}
# Of the pairs expected, the share each agent must record.
RECORDED_SHARE = 0.99
# Seconds an RPI must have been on the air before a controller's scan began and after it ended to
# be expected in it (both by the host's clock: RootCanal's stamps are whole milliseconds).
MARGIN = 0.1
# A flood brings at least this many fresh RPIs a minute (the flood of Debian 12: about 2,300).
FLOOD_LEAST_PER_MINUTE = 2000
# A controller's scan shorter than this is not judged: a phone advertises every 270 ms at most.
SHORTEST_SCAN = 0.5
# The slowest clock mark (seconds from the guest's first reading to its second) that still places
# the agents' scans, 1 s apart, against the controllers'.
LARGEST_MARK = 1.5
# A sighting this long (the agents' seconds) after its scan's recorded end still belongs to it
# (Sources/ENStore/ScanHistory.swift, lateReportSeconds).
LATE_REPORT = 1
# Host ticks: a file's modification time is the host kernel's coarse clock, up to this early.
HOST_TICK = 0.004
# The first reports of new addresses within this long (seconds) of the phone's "on" are those of
# rotations while the controller scanned, RootCanal's delivery printed.
PROMPT = 0.5
# RSSI the agent stores for a reception without one (schema v12, later_receptions).
NO_RSSI = 127
# The agent merges an RPI's receptions within this long (its clock's seconds) of a row's first
# into that row, up to MOST_RECEPTIONS (ExposureWindowing.sameScanSeconds, SightingRecord.maximumReceptions).
SAME_SCAN, MOST_RECEPTIONS = 25, 255
# Under the crowd bluetoothd stalls within seconds of its start (each call of an agent's then costs
# 10 s): an agent is back within issue 56's bound of a stall (onair.RECOVERED_WITHIN) of bluetoothd
# offering its adapter again; a new process or a resumed radio keeps a stall found before it, and
# where none was found takes the kernel's adapter after
# BlueZRadio.unansweredCallsBeforeTheKernelsAdapter calls left unanswered for 10 s each, then is
# back within BACK_WITHIN.
STARTED_WITHIN = 3 * 10.0 + BACK_WITHIN
# Seconds from the kernel's first command making hci0 connectable until a took its advertisement
# off, under the crowd: the agents' lab's CONNECTABLE_OFF_WITHIN, plus a second for the kernel's
# New Settings, which the agent can read only after the reports the kernel queued on its socket before
# it (up to 4 MB of them, each read once: the lab's runs took 0.93 and 0.96 s in all, 2026-11-30;
# once the radio had it, it came first, ahead of the reports waiting in the agent).
CROWD_CONNECTABLE_OFF_WITHIN = CONNECTABLE_OFF_WITHIN + 1.0
# The agents' controllers' last frames in RootCanal's record lie at most this long before the
# crowd's end (an agent scans 3 s of every 4, and each scan's start and end are frames).
CAPTURE_GAP = 10.0
# A sighting counts for a key from this long (seconds) before the key's day to as long after
# (KeyMatcher.validityTolerance: Google's 12 intervals of clock drift).
VALIDITY_TOLERANCE = 12 * 600


def kind(line):
    """The phone's kind for the figures: the three named phones, or the crowd's iPhones and Android phones."""
    if line["controller"].startswith("crowd-"):
        return f"crowd {line['kind']}"
    return f"{line['kind']} ({'legacy commands' if line['handle'] is None else 'extended commands'})"


class CrowdLab(Lab):
    def __init__(self, folder, enctl=None):
        super().__init__(folder)
        self.enctl = labframe.enctl(enctl)

    @functools.cached_property
    def keys(self):
        """Each RPI the phones sent: its TEK (hex), the TEK's rolling start, and whether its
        interval was the agents' clock's (rclab.py serve --agents-clock) or the host's."""
        with open(self.path("phones.jsonl")) as log:
            return {line["rpi"]: (line["tek"], line["rollingStart"], line["clock"]) for line in map(json.loads, log) if "tek" in line}

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
    def uncertainty(self):
        """How well the offset is known: half the wider mark's width and a host tick."""
        return max(width / 2 + HOST_TICK for width, _, _ in self.marks.values())

    def offset(self, guest):
        """The guest's clock minus the host's at the guest's unix time `guest`."""
        (_, start, early), (_, end, late) = self.marks["start"], self.marks["end"]
        return early + (late - early) * (guest - start) / (end - start)

    def from_guest(self, guest):
        """The host's time of the guest's unix time `guest`."""
        return guest - self.offset(guest)

    def host_time(self, agent_seconds):
        return self.from_guest(self.guest_time(agent_seconds))

    @functools.cached_property
    def crowd_span(self):
        """(start, end) of the crowd, by the host's clock."""
        return self.from_guest(self.at("crowd-started")), self.from_guest(self.at("crowd-ended"))

    @functools.cached_property
    def connectable_moment(self):
        """(when the kernel made hci0 connectable under a, when a first took advertising off after
        it), host times on RootCanal's record; None for either that did not happen (both None in a
        run without the adapter phases)."""
        if not self.has("a-connectable"):
            return None, None
        turned = turned_connectable(self.host_snoop, 0, self.from_guest(self.at("a-connectable")))
        off = None if turned is None else next((time for time in onair.withdrawals(self.host_snoop, 0) if time >= turned), None)
        return turned, off

    @functools.cached_property
    def faults_span(self):
        """(start, end) of the faults under the crowd (crowd-agents.sh), by the host's clock; None
        in a run without them."""
        if not self.has("faults-started"):
            return None
        return self.from_guest(self.at("faults-started")), self.from_guest(self.at("faults-ended"))

    @functools.cached_property
    def judged_spans(self):
        """The stretches of the crowd whose scans are judged for pairs and stretches without a
        scan, by the host's clock: the crowd but its faults (judged on the agents' return instead)."""
        start, end = self.crowd_span
        if self.faults_span is None:
            return [(start, end)]
        return [(start, self.faults_span[0]), (self.faults_span[1], end)]

    def judged(self, begun, ended):
        """Whether a stretch (host times) lies within the crowd and clear of its faults."""
        start, end = self.crowd_span
        clear = self.faults_span is None or ended <= self.faults_span[0] or begun >= self.faults_span[1]
        return clear and ended > start and begun < end

    @functools.cached_property
    def host_snoop(self):
        return self.path("host.snoop")

    @functools.cached_property
    def delays(self):
        """Seconds from each phone's "on" to the first report of its address on the agents'
        controllers (both by the host's clock), of those that came within PROMPT: rotations while
        the controller scanned."""
        on = {rpi["address"]: rpi["on"] for rpi in self.rpis}
        delays = []
        for controller in AGENTS.values():
            first = {}
            for time, address in self.reports(controller):
                first.setdefault(address, time)
            delays += [first[address] - on[address] for address in first if address in on]
        return sorted(delay for delay in delays if abs(delay) <= PROMPT)

    @functools.cache
    def reports(self, controller):
        """(host time, address) of each advertising report of the controller (RootCanal's record)."""
        return onair.report_addresses(self.host_snoop, controller)

    @functools.cache
    def scan_windows(self, controller):
        """(start, end), host times, of each scan the controller ran (RootCanal's record)."""
        return onair.scan_windows(self.host_snoop, controller)

    @functools.cache
    def windows(self, controller):
        """The controller's scans during the crowd, clear of its faults (`scan_windows`)."""
        return [(begun, ended) for begun, ended in self.scan_windows(controller) if self.judged(begun, ended)]

    @functools.cache
    def matches(self, agent, controller):
        """Each of the controller's scans with the index of the agent's recorded scan that overlaps
        it most (None: no recorded scan overlaps it)."""
        recorded = [(self.host_time(start), self.host_time(end)) for start, end in self.scans(agent)]
        matched = []
        for begun, ended in self.windows(controller):
            overlaps = [(min(ended, end) - max(begun, start), index) for index, (start, end) in enumerate(recorded) if start < ended and end > begun]
            matched.append(((begun, ended), max(overlaps)[1] if overlaps else None))
        return matched

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
    widest = max(width for width, _, _ in lab.marks.values())
    if widest > LARGEST_MARK:
        fail(f"clock: a mark took {widest * 1000:.0f} ms to read, more than {LARGEST_MARK * 1000:.0f} ms: the agents' scans cannot be placed against the controllers'")
    drift = lab.marks["end"][2] - lab.marks["start"][2]
    if abs(drift) > max(lab.uncertainty, 0.5):
        fail(f"clock: the offset moved by {drift * 1000:.0f} ms during the run")
    delays = lab.delays
    if delays:
        print(f"  RootCanal reported a phone's new address on the agents' controllers {statistics.median(delays) * 1000:+.0f} ms after its \"on\" "
              f"(median of {len(delays)}; {delays[0] * 1000:+.0f} to {delays[-1] * 1000:+.0f} ms; both by the host's clock)")


def pairs(lab, agent, controller, since=-math.inf):
    """The controller's scans judged (those that began at `since` or later, host time) with the
    agent's record of each, the (scan, advertiser) pairs expected in them, those missed
    ((window, index, RPI)), and both by the phones' kind. A scan is judged where it overlaps its
    record: in make test of 2026-12-01 09:55 bluetoothd, which had not yet read b's withdrawal
    from its discovery, started one as b's scan was being stopped; it ran 3.4 s, 0.18 s of them in
    b's record, until b's next scan stopped it (BlueZRadio.stopStaleDiscovery), and the phones
    that came on the air between b's scans counted as missed in the scan before."""
    recorded = {(index, rpi) for index, rpi, _, _ in lab.sightings(agent) if index is not None}
    scans = lab.scans(agent)
    judged = []
    for (begun, ended), index in lab.matches(agent, controller):
        if begun < since:
            continue
        if index is not None:
            begun, ended = max(begun, lab.host_time(scans[index][0])), min(ended, lab.host_time(scans[index][1]))
        if ended - begun >= SHORTEST_SCAN:
            judged.append(((begun, ended), index))
    expected, missed, by_kind = 0, [], defaultdict(lambda: [0, 0])
    for (begun, ended), index in judged:
        for rpi in lab.rpis:
            if rpi["on"] <= begun - MARGIN and rpi["off"] >= ended + MARGIN:
                expected += 1
                by_kind[rpi["kind"]][0] += 1
                if (index, rpi["rpi"]) not in recorded:
                    missed.append(((begun, ended), index, rpi))
                    by_kind[rpi["kind"]][1] += 1
    return judged, expected, missed, by_kind


def crowd(lab, fail):
    start, end = lab.crowd_span
    print(f"  the agents among the phones for {end - start:.0f} s; "
          f"{len(lab.rpis)} RPIs of {len({rpi['phone'] for rpi in lab.rpis})} phones in the phones' log")
    for agent, controller in AGENTS.items():
        matches = lab.matches(agent, controller)
        judged, expected, missed, by_kind = pairs(lab, agent, controller)
        share = (expected - len(missed)) / expected if expected else 0
        lengths = [ended - begun for (begun, ended), _ in judged]
        print(f"  {agent} (hci{controller}): {expected - len(missed)} of {expected} (scan, advertiser) pairs recorded = {share:.2%} "
              f"over {len(judged)} of hci{controller}'s scans of {min(lengths, default=0):.2f}-{max(lengths, default=0):.2f} s"
              + (f" ({len(matches) - len(judged)} shorter than {SHORTEST_SCAN} s not judged)" if len(judged) < len(matches) else "")
              + "; missing by kind: " + ", ".join(f"{name} {lost} of {count}" for name, (count, lost) in sorted(by_kind.items())))
        lags(lab, agent, controller)
        if missed:
            explain(lab, agent, controller, missed)
        if not expected or share < RECORDED_SHARE:
            fail(f"crowd: {agent} recorded {share:.2%} of {expected} (scan, advertiser) pairs, below {RECORDED_SHARE:.0%}")
        unrecorded = sum(1 for _, index in judged if index is None)
        if unrecorded:
            fail(f"crowd: hci{controller} ran {unrecorded} scans that {agent} did not record")
        # Within the crowd and RootCanal's record of the controller (the capture's check judges its
        # end); a recorded scan the controller ran no part of. Against each of its scans, those not
        # judged too: one ran from a scan before the faults into them (make test of 2026-12-01 03:17).
        until = min(end, onair.last_frames(lab.host_snoop, [controller])[controller]) - 1
        ran = lab.scan_windows(controller)
        phantom = [(begun, ended) for begun, ended in ((lab.host_time(begun), lab.host_time(ended)) for begun, ended in lab.scans(agent))
                   if start + 1 < begun and ended < until and lab.judged(begun, ended)
                   and not any(on < ended and off > begun for on, off in ran)]
        if phantom:
            fail(f"crowd: {agent} recorded {len(phantom)} scans during the crowd that hci{controller} did not run")


def lags(lab, agent, controller):
    """How each of the controller's scans lay against the agent's record of it (the agent's
    times through the clock marks): its start's and end's lags."""
    starts, ends = [], []
    for (begun, ended), index in lab.matches(agent, controller):
        if index is not None:
            start, end = lab.scans(agent)[index]
            starts.append(begun - lab.host_time(start))
            ends.append(ended - lab.host_time(end))
    if starts:
        print(f"    hci{controller}'s scan began {statistics.median(starts):+.2f} s from the recorded scan's start (median; {min(starts):+.2f} to "
              f"{max(starts):+.2f}) and ended {statistics.median(ends):+.2f} s from its end ({min(ends):+.2f} to {max(ends):+.2f})")


def explain(lab, agent, controller, missed):
    """Whether the agent's controller reported a missed RPI's address during the scan (the agent, or
    the kernel above the controller, lost it) or not (RootCanal did)."""
    reported = defaultdict(list)
    for time, address in lab.reports(controller):
        reported[address].append(time)
    heard, unheard = Counter(), Counter()
    for (begun, ended), _, rpi in missed:
        (heard if any(begun <= time <= ended for time in reported[rpi["address"]]) else unheard)[begun] += 1
    unmatched = sum(1 for _, index, _ in missed if index is None)
    stray = {rpi for index, rpi, _, _ in lab.sightings(agent) if index is None}
    print(f"    of the {len(missed)} missing: {sum(heard.values())} reported by hci{controller} during the scan (in {len(heard)} scans), "
          f"{sum(unheard.values())} not (in {len(unheard)} scans); {unmatched} in scans {agent} did not record; "
          f"{sum(1 for _, _, rpi in missed if rpi['rpi'] in stray)} of the RPIs stored outside every recorded scan")
    for begun, count in sorted((heard + unheard).items(), key=lambda item: -item[1])[:3]:
        ended = next(window[1] for window, _, _ in missed if window[0] == begun)
        print(f"    hci{controller}'s scan at +{begun - lab.crowd_span[0]:.1f} s ({ended - begun:.2f} s): "
              f"{count} missing, {heard[begun]} of them reported by the controller")


def flood(lab, fail):
    """The flood (from the phase flood-started to the crowd's end): how many fresh RPIs a minute
    it brought, the share of pairs each agent recorded in it, as in the crowd."""
    if not lab.has("flood-started"):
        return print("  no flood in this run")
    start, end = lab.from_guest(lab.at("flood-started")), lab.crowd_span[1]
    fresh = sum(1 for rpi in lab.rpis if start <= rpi["on"] < end) * 60 / (end - start)
    print(f"  the flood for {end - start:.0f} s: {fresh:,.0f} fresh RPIs a minute")
    if fresh < FLOOD_LEAST_PER_MINUTE:
        fail(f"flood: {fresh:,.0f} fresh RPIs a minute, fewer than {FLOOD_LEAST_PER_MINUTE:,}: no flood")
    for agent, controller in AGENTS.items():
        judged, expected, missed, _ = pairs(lab, agent, controller, since=start)
        share = (expected - len(missed)) / expected if expected else 0
        print(f"  {agent} (hci{controller}): {expected - len(missed)} of {expected} pairs recorded in the flood = {share:.2%} over {len(judged)} scans")
        if not expected or share < RECORDED_SHARE:
            fail(f"flood: {agent} recorded {share:.2%} of {expected} (scan, advertiser) pairs in the flood, below {RECORDED_SHARE:.0%}")


def rows(lab, fail):
    for agent in AGENTS:
        sightings, scans = lab.sightings(agent), lab.scans(agent)
        per_scan = defaultdict(list)
        for index, rpi, seen_at, heard in sightings:
            if index is not None:
                # A row of the scan's first second may be the last of the scan before, which ended
                # in that second (the agents' clock counts whole seconds, 1/120 of a real one).
                boundary = index > 0 and seen_at <= scans[index - 1][1] + LATE_REPORT
                per_scan[(index, rpi)].append((seen_at, len(heard), boundary))
        # A row that the one before it should have taken: within SAME_SCAN of its first reception, not full.
        unmerged = sum(1 for found in per_scan.values() for (before, held, boundary), (after, _, _) in zip(sorted(found), sorted(found)[1:])
                       if after - before <= SAME_SCAN and held < MOST_RECEPTIONS and not boundary)
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
    onair.check_capture(lab, fail, AGENTS, lab.crowd_span[1], CAPTURE_GAP, end="the crowd's end", snoop=lab.host_snoop)


def scanning(lab, fail):
    for (start, end), what in zip(lab.judged_spans, ("the crowd", "the crowd's part after the faults")):
        onair.check_scan_stretches(lab, fail, AGENTS, start, end, snoop=lab.host_snoop, what=what)


def journal(lab, fail):
    """A stall said once per run of bluetoothd and of the agent's radio (its restart, its resume)."""
    runs = {agent: [lab.at(phase) for phase in ("bluetoothd-restarted", f"{agent}-restarted", f"{agent}-resumed") if lab.has(phase)] for agent in AGENTS}
    onair.check_stall_notes(lab, fail, AGENTS, lab.at("crowd-started"), snoop=lab.host_snoop, to_capture=lab.from_guest,
                            what="the crowd", restarts=runs)


def faults(lab, fail):
    """The faults under the crowd (crowd-agents.sh), judged on RootCanal's record by the host's
    clock: after bluetoothd's kill and restart each agent's controller advertised and scanned,
    each enabled anew since the kill, within RECOVERED_WITHIN of bluetoothd offering its adapter
    again; after agent a's SIGKILL a's committed sightings and keys were kept, and hci0 advertised
    and scanned anew within STARTED_WITHIN of a's new process running; b's pause had hci1 neither advertising
    nor scanning from PAUSE_WITHIN after enctl pause returned to the resume, and hci1 on again
    within STARTED_WITHIN of it."""
    if lab.faults_span is None:
        return print("  no faults in this run")
    snoop, offered = lab.host_snoop, lab.phase("bluetoothd-offered")
    killed = lab.from_guest(lab.at("bluetoothd-killed"))
    for agent, controller in AGENTS.items():
        moment = offered.get(f"hci{controller}")
        took = None if moment is None else onair.on_again(snoop, controller, lab.from_guest(moment), since=killed)
        print(f"  bluetoothd killed and restarted: it offered hci{controller} again "
              + ("NEVER" if moment is None else f"{moment - lab.at('bluetoothd-restarted'):.1f} s after its restart; {agent} advertised and scanned "
                 + ("NEVER" if took is None else f"{took:.1f} s after that")))
        if took is None or took > onair.RECOVERED_WITHIN:
            said = [] if moment is None else onair.radio_lines(lab, agent, moment, moment + (took or 60.0))
            fail(f"faults: hci{controller} did not advertise and scan anew within {onair.RECOVERED_WITHIN:g} s of bluetoothd offering it again ({took})"
                 + "".join(f"\n    {agent} {line}" for line in said))
    before, after = lab.phase("before-kill")["snapshot"], lab.phase("after-kill")["snapshot"]
    kept = {key for _, _, key in before["keys"]} <= {key for _, _, key in after["keys"]}
    running = onair.process_start(lab, "a", lab.at("a-restarted"))
    took = onair.on_again(snoop, 0, lab.from_guest(running), since=lab.from_guest(lab.at("a-killed")))
    print(f"  a killed with SIGKILL: {before['sightings']} sightings committed before, {after['sightings']} after, database {after['integrity']}, "
          f"keys {'kept' if kept else 'LOST'}; restarted, its process ran {running - lab.at('a-restarted'):.1f} s later (its log), "
          "and it advertised and scanned anew " + ("NEVER" if took is None else f"{took:.1f} s after that"))
    if after["integrity"] != "ok" or after["sightings"] < before["sightings"] or not kept:
        fail("faults: agent a lost committed sightings or keys, or its database, across SIGKILL")
    if took is None or took > STARTED_WITHIN:
        fail(f"faults: hci0 did not advertise and scan anew within {STARTED_WITHIN:g} s of agent a's new process running ({took})")
    paused, resumed = lab.from_guest(lab.at("b-paused")), lab.from_guest(lab.at("b-resumed"))
    # The controller's last change before the resume: quiet, and no later than PAUSE_WITHIN after the pause.
    last = next((change for change in reversed(onair.radio_changes(snoop, 1)) if change[0] < resumed), None)
    quiet = last[0] if last is not None and not any(last[1:]) else None
    took = onair.on_again(snoop, 1, resumed)
    print(f"  b paused: hci1 quiet " + ("NOT before the resume" if quiet is None else f"{quiet - paused:+.1f} s from enctl pause returning to the resume")
          + "; resumed, it advertised and scanned anew " + ("NEVER" if took is None else f"{took:.1f} s later"))
    if quiet is None or quiet - paused > PAUSE_WITHIN:
        fail(f"faults: pausing b did not keep hci1 quiet from {PAUSE_WITHIN:g} s after the pause to the resume")
    if took is None or took > STARTED_WITHIN:
        fail(f"faults: hci1 did not advertise and scan anew within {STARTED_WITHIN:g} s of b's resume ({took})")


WRITE_SCAN_ENABLE, PAGE_SCAN = 0x0C1A, 0x02


def turned_connectable(snoop, controller, after):
    """The host's time of the kernel's first command from `after` on that makes the controller
    connectable (page scan on, an advertising set's properties with the connectable bit, a legacy
    ADV_IND): the adapter turned connectable, as the controller was told; None if none. The
    kernel's New Settings to the agent follows its commands."""
    for time, command, parameters in onair.accepted(snoop, controller):
        if time >= after and ((command == WRITE_SCAN_ENABLE and parameters[:1] and parameters[0] & PAGE_SCAN)
                              or (command == onair.SET_EXT_ADV_PARAMETERS and len(parameters) >= 2 and parameters[1] & 1)
                              or (command == onair.SET_ADV_PARAMETERS and len(parameters) >= 5 and parameters[4] == 0)):
            return time
    return None


def turned_not_connectable(snoop, controller, after):
    """The host's time of the kernel's first command from `after` on that takes page scan off (Write
    Scan Enable without it): the adapter no longer connectable, as the controller was told; None if
    none. Under the crowd the kernel took 10.4 s from set-connectable.py's start to send it (make
    test of 2026-11-30 23:37, trixie): the agent can come back only after."""
    for time, command, parameters in onair.accepted(snoop, controller):
        if time >= after and command == WRITE_SCAN_ENABLE and parameters[:1] and not parameters[0] & PAGE_SCAN:
            return time
    return None


def adapter(lab, fail):
    """The agents' adapters taken from under them under the crowd, judged on RootCanal's record by
    the host's clock: hci0 made connectable had a's advertising taken off (the first withdrawal)
    within CROWD_CONNECTABLE_OFF_WITHIN of the kernel making it connectable, and a advertising and scanning anew within BACK_WITHIN
    of the kernel making hci0 not connectable again; after both were blocked by rfkill and unblocked, each agent
    advertised and scanned anew within BACK_WITHIN of the unblock (a blocked controller is the
    kernel's to silence, not the agent's)."""
    if not lab.has("a-connectable"):
        return print("  no adapter phases in this run")
    snoop = lab.host_snoop
    turned, off = lab.connectable_moment
    asked = lab.from_guest(lab.at("a-not-connectable"))
    turned_back = turned_not_connectable(snoop, 0, asked)
    back = None if turned_back is None else onair.on_again(snoop, 0, turned_back)
    print("  hci0 connectable: " + ("the kernel NEVER made hci0 connectable" if turned is None else
                                    "a's advertising taken off " + ("NEVER" if off is None else f"{(off - turned) * 1000:.0f} ms after the kernel made hci0 connectable"))
          + "; not connectable again: " + ("the kernel NEVER made hci0 not connectable" if turned_back is None else
                                           f"the kernel made it so {turned_back - asked:.1f} s after it was asked, and a advertised and scanned anew "
                                           + ("NEVER" if back is None else f"{back:.1f} s after that")))
    if turned is None or off is None or off - turned > CROWD_CONNECTABLE_OFF_WITHIN:
        fail(f"adapter: agent a did not take its advertisement off within {CROWD_CONNECTABLE_OFF_WITHIN:g} s of hci0 turning connectable ({off})")
    if back is None or back > BACK_WITHIN:
        fail(f"adapter: hci0 did not advertise and scan anew within {BACK_WITHIN:g} s of the kernel making it not connectable ({back})")
    unblocked = lab.from_guest(lab.at("rfkill-unblocked"))
    for agent, controller in AGENTS.items():
        took = onair.on_again(snoop, controller, unblocked)
        print(f"  hci{controller} blocked by rfkill and unblocked: {agent} advertised and scanned anew " + ("NEVER" if took is None else f"{took:.1f} s after the unblock"))
        if took is None or took > BACK_WITHIN:
            fail(f"adapter: hci{controller} did not advertise and scan anew within {BACK_WITHIN:g} s of rfkill's unblock ({took})")


def air(lab, fail):
    """What the agents put on the air, on RootCanal's record: each EN advertisement as the
    specification and phones have it (onair.check: legacy ADV_NONCONN_IND at 200-270 ms from a
    non-resolvable address, Flags, the UUID list, an RPI of the agent's keys and metadata with the
    TX power its controller advertised at: the one it selected, or its advertising channel's when
    it says 127), each RPI from one address and each address with one RPI; no active scan from the
    public address, no set the controller ended. The kernel's re-programming of a's set as hci0
    turned connectable is judged by the adapter check, not here."""
    keys = [(bytes(key), start, period) for agent in AGENTS for key, start, period in
            lab.rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")]
    found, _, _, terminated, public_scans, _ = onair.advertisements(lab.host_snoop, set(AGENTS.values()))
    table = onair.identifiers(keys)
    turned, taken_off = lab.connectable_moment

    def reprogrammed(advertisement):
        return advertisement["controller"] == 0 and turned is not None and turned <= onair.unix_seconds(advertisement["time"]) <= (taken_off or math.inf)

    judged = [advertisement for advertisement in found if not reprogrammed(advertisement)]
    bad = [(advertisement, problems) for advertisement in judged if (problems := onair.check(advertisement, table))]
    for agent, controller in AGENTS.items():
        mine = [advertisement for advertisement in judged if advertisement["controller"] == controller]
        powers = sorted({advertisement.get("tx_power") for advertisement in mine}, key=str)
        print(f"  {agent} (hci{controller}): {len(mine)} EN advertisements, "
              f"{sum(1 for advertisement in mine if not onair.check(advertisement, table))} as the specification has them; "
              f"TX power {', '.join(map(str, powers))} dBm as the controller advertised and in the metadata")
    for advertisement, problems in bad[:5]:
        print(f"  hci{advertisement['controller']} at {onair.unix_seconds(advertisement['time']):.3f}: " + "; ".join(problems))
    _, _, several_addresses, several_rpis = onair.linked({(advertisement["address"].hex(), advertisement["data"][11:27].hex())
                                                          for advertisement in judged if advertisement.get("address")})
    print(f"  RPIs from several addresses: {len(several_addresses)}; addresses with several RPIs: {len(several_rpis)}; "
          f"active scans from the public address: {len(public_scans)}; sets the controllers ended: {len(terminated)}")
    if not any(advertisement["controller"] == controller for advertisement in judged for controller in AGENTS.values()):
        fail("air: no EN advertisement of the agents in RootCanal's record")
    if bad:
        fail(f"air: {len(bad)} of {len(judged)} EN advertisements are off the specification (first: {'; '.join(bad[0][1])})")
    if several_addresses or several_rpis:
        fail(f"air: RPIs from several addresses {sorted(several_addresses)}; addresses with several RPIs {sorted(several_rpis)}")
    if public_scans or terminated:
        fail(f"air: {len(public_scans)} active scans from the public address, {len(terminated)} sets the controllers ended")


def detection(lab, fail):
    """The phones' keys, published as a health authority would (every TEK of the phones' log, for
    its day), detected offline from each agent's database as of the run's end by the agents' clock
    (enctl detect offline --db): each agent matches every key of which it stored an RPI sent by the
    agents' clock, and no key of which it stored no RPI; each exposure window lies on its key's day,
    or within the matching's tolerance of it."""
    published = {tek: start for tek, start, _ in lab.keys.values()}
    export = lab.path("phones.zip")
    phones.export_keys(published, export)
    origin, scale = lab.agent_clock
    now = int(origin + (max(entry["realtime"] for entry in lab.manifest) - origin) * scale)
    print(f"  {len(published)} keys of the phones published; detected as of {datetime.datetime.fromtimestamp(now, datetime.timezone.utc):%Y-%m-%d %H:%M} UTC of the agents' clock")
    for agent in AGENTS:
        stored = {row[0].hex() for row in lab.rows(agent, "SELECT DISTINCT rpi FROM sighting")}
        least = {lab.keys[rpi][0] for rpi in stored if rpi in lab.keys and lab.keys[rpi][2] == "agents"}
        most = {lab.keys[rpi][0] for rpi in stored if rpi in lab.keys}
        detected = json.loads(subprocess.run([lab.enctl, "detect", "offline", "--db", lab.path(f"{agent}/enagent.db"), "--keys", export,
                                              "--insecure-skip-verify", "--now", str(now), "--json"],
                                             check=True, capture_output=True, text=True).stdout)
        windows = detected["exposureWindows"]
        matched = {window["key"]["tek"] for window in windows}
        astray = [window for window in windows if not on_its_keys_day(window, published[window["key"]["tek"]])]
        print(f"  {agent}: {len(matched)} keys matched, in {len(windows)} exposure windows on {', '.join(sorted({w['date'] for w in windows})) or 'no day'}; "
              f"it stored RPIs of {len(most)} keys, of {len(least)} sent by the agents' clock")
        if not least:
            fail(f"detection: {agent} stored no RPI that a phone sent by the agents' clock")
        elif not least <= matched <= most:
            fail(f"detection: {agent} matched {len(matched)} keys: {len(least - matched)} of the {len(least)} whose RPIs by the agents' clock it "
                 f"stored not, {len(matched - most)} of which it stored no RPI")
        if astray:
            fail(f"detection: {agent}'s exposure windows off their keys' days: {[(w['date'], published[w['key']['tek']]) for w in astray[:3]]}")


def on_its_keys_day(window, rolling_start):
    """Whether the window's UTC day meets its key's validity, with the matching's tolerance either side."""
    day = datetime.datetime.strptime(window["date"], "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc).timestamp()
    return day < (rolling_start + 144) * 600 + VALIDITY_TOLERANCE and day + 86400 > rolling_start * 600 - VALIDITY_TOLERANCE


def status(lab, fail):
    onair.check_status_polls(lab, fail, AGENTS, lab.at("crowd-started"), snoop=lab.host_snoop, to_capture=lab.from_guest, slack=lab.uncertainty)


def checks():
    return [
        Check("steps", "STEPS (each phase's commands)", steps),
        Check("clock", "CLOCKS (the guest's against the host's: files made on the lab share; RootCanal's delivery of new addresses)", clock),
        Check("crowd", f"CROWD (the (scan, advertiser) pairs each agent recorded, at least {RECORDED_SHARE:.0%})", crowd),
        Check("flood", f"FLOOD (at least {FLOOD_LEAST_PER_MINUTE:,} fresh RPIs a minute, and at least {RECORDED_SHARE:.0%} of its pairs recorded)", flood),
        Check("rows", "ROWS (an RPI's receptions in a scan one row each 25 s of the agents' clock) AND RSSI", rows),
        Check("capture", "CAPTURE (RootCanal's record of the agents' controllers to the crowd's end)", capture),
        Check("faults", f"FAULTS (bluetoothd killed, agent a killed, b paused: each agent back within {onair.RECOVERED_WITHIN:g} s "
                         f"of bluetoothd's offer, {STARTED_WITHIN:g} s of its own start)", faults),
        Check("adapter", f"ADAPTER (hci0 connectable: a's advertising taken off within {CROWD_CONNECTABLE_OFF_WITHIN:g} s; "
                         f"each agent back within {BACK_WITHIN:g} s of its adapter not connectable or unblocked by rfkill)", adapter),
        Check("scanning", f"SCANNING (no stretch of the crowd without a scan longer than {onair.RECOVERED_WITHIN:.0f} s: a stalled discovery recovered from)", scanning),
        Check("journal", "JOURNAL (a stall said once per run of bluetoothd and of the agent's radio)", journal),
        Check("status", "STATUS (no poll says scanning while the controller ran no scan)", status),
        Check("detection", "DETECTION (the phones' keys detected offline from each agent's database: every key whose RPI it stored "
                           "as the phones sent it by the agents' clock, no key it stored no RPI of)", detection),
        Check("air", "ON AIR (the agents' advertisements on RootCanal's record: the specification's, each RPI from one address, "
                     "the TX power the controller advertised at)", air),
    ]


def main():
    given = arguments(__doc__.splitlines()[0], extra=[("enctl", "enctl to detect with")])
    return report("lab-rootcanal-crowd", given, CrowdLab(given.run, given.enctl), checks(), ahead=heading)


if __name__ == "__main__":
    sys.exit(main())
