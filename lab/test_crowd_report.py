"""lab/rootcanal/crowd-report.py on a made-up run (python3 -m unittest discover -s lab; make
lab-report-test): five phones rotating every 10 s, two agents scanning 3 s of every 4 s for a
minute and storing every RPI on the air during a scan once, a guest clock 0.3 s ahead of the
host's, RootCanal's record of the controllers in the host's clock to the millisecond; then the
same run with one pair missing, one RPI stored twice in a scan within the agent's merge window, a
status said while no scan ran, a scan recorded that the controller did not run, a scan run that
the agent did not record, clock marks read too slowly and a record that ends early, each failing
its check alone; and one stored twice beyond the merge window, and marks read slowly within the
bound, which pass; the last half minute as a flood, too slow for one but for a lower bound,
and with a pair missing in it; and faults from 18.5 s to 36 s (bluetoothd killed, agent a
killed, b paused, hci0 made connectable, both adapters blocked by rfkill), whose scans are not
judged for pairs, with an agent back late, b's radio on in its pause, sightings lost, a's
advertisement left on a connectable adapter, and a stall noted in each of bluetoothd's runs; the
phones' keys detected from the agents' databases, and not when the phones count their intervals
by the host's clock instead of the agents'. Each
agent advertises twice, a at the power its controller selected, b at its channel's (its controller
says 127, as RootCanal's); a's metadata at another power, or its second RPI from the first's
address, fails the air."""
import contextlib, importlib.util, io, json, math, os, shutil, sqlite3, struct, tempfile, time, unittest
import labframe, onair, phones

HERE = os.path.dirname(os.path.abspath(__file__))
crowd_report = importlib.util.module_from_spec(
    spec := importlib.util.spec_from_file_location("crowd_report", os.path.join(HERE, "rootcanal", "crowd-report.py")))
spec.loader.exec_module(crowd_report)

ORIGIN, SCALE, OFFSET, START = 1795900000, 120, 0.3, 1795950000.0  # OFFSET: the guest's clock minus the host's
BTSNOOP_EPOCH = 0x00DCDDB30F2F8000
# Each agent's one key (TEK, rolling start, period) and the TX power its controller advertises at.
KEYS = {"a": (bytes(range(16)), 2700000, 144), "b": (bytes(range(16, 32)), 2700000, 144)}
ADVERTISED_POWER = -10
# Seconds the kernel takes to act on Set Connectable (under the crowd it took up to 10 s).
KERNEL_LAG = 0.02
# The faults' phases, seconds into the crowd (crowd-agents.sh's order).
FAULTS = {"faults-started": 18.5, "bluetoothd-killed": 18.6, "bluetoothd-restarted": 19, "bluetoothd-offered": 20, "before-kill": 23.4,
          "a-killed": 23.5, "after-kill": 23.7, "a-restarted": 23.9, "b-paused": 26.8, "b-resumed": 31, "a-connectable": 32,
          "a-not-connectable": 33, "rfkill-blocked": 34, "rfkill-unblocked": 34.5, "faults-ended": 36}


class Run:
    """A run folder as make lab-rootcanal-crowd leaves it, made up; `missing` (agent, scan, phone),
    `twice` (agent, scan, phone: a second row `later` agent seconds after the first) and
    `stray_poll` doctor it; `mark_width` is how long each clock mark took to read (seconds);
    `captured_seconds`: RootCanal's record ends that long after the crowd's start; `phantom_scan`
    (agent, scan): the agent records it, the controller never runs it; `unrecorded_scan` (agent,
    scan): the reverse; `gap` (agent, first scan, last scan): neither runs those; `stall_notes`:
    how often a's log notes a stalled discovery (at the crowd's start, the next scan 1 s later);
    `flood`: the phase flood-started 30 s into the crowd; `faults`: the faults' phases (FAULTS), each
    agent back `back` seconds after it could act, b's radio on in its pause with `woke`, and agent
    a's snapshot after the kill with `lost` sightings fewer; `stall_notes_after`: the notes after
    bluetoothd's restart; `connectable_off`: seconds from the kernel's connectable parameters until
    a takes its advertisement off (None: never); `boundary` (agent, scan): that scan is recorded to
    the next one's start, and each RPI of the next has a row of that second, the scan before's last;
    `metadata_power`: the TX power in a's metadata; `address_kept`: a's second RPI goes out from
    the first's address; `merged` (agent, scan): the controller scans on from that scan through the
    next, one scan of its own for the two recorded; `phones_clock` "host": the phones count their
    intervals by the host's clock, and their log says the agents'."""

    def __init__(self, folder, missing=None, twice=None, later=0, stray_poll=False, mark_width=0.01, captured_seconds=None,
                 phantom_scan=None, unrecorded_scan=None, gap=None, stall_notes=0, flood=False, faults=False, back=0.5,
                 woke=False, lost=0, stall_notes_after=0, connectable_off=0.2, boundary=None, metadata_power=ADVERTISED_POWER,
                 address_kept=False, merged=None, phones_clock="agents"):
        self.folder, self.phases, self.records, self.aems = folder, [], [], {}
        for number, at in enumerate((0.3, 40)):
            self.en_advertisement(0, START + OFFSET + at, "a", number, 0 if address_kept else number, metadata_power, selected=ADVERTISED_POWER)
            self.en_advertisement(1, START + OFFSET + at + 0.1, "b", number, number, ADVERTISED_POWER, selected=127)
        self.faults, self.back = faults, back
        rpis = self.phones(phones_clock)
        self.phase("clock", START + OFFSET, origin=ORIGIN, scale=SCALE)
        for at, host in (("start", START), ("end", START + 60)):
            name = f"clock-{at}-1"
            open(os.path.join(folder, name), "w").close()
            os.utime(os.path.join(folder, name), (host, host - crowd_report.HOST_TICK / 2))
            self.phase("clock-mark", host + OFFSET, file=name, at=at, before=host + OFFSET - mark_width / 2,
                       after=host + OFFSET + mark_width / 2)
        self.phase("crowd-started", START + OFFSET)
        for agent, controller in crowd_report.AGENTS.items():
            self.agent(agent, controller, rpis, missing, twice, later, phantom_scan, unrecorded_scan, gap, boundary, merged)
            note = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + OFFSET))
            later_note = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + OFFSET + 40))
            stall = "warning enagentd: bluetoothd does not scan on hci{} (it did not answer StopDiscovery)\n".format(controller)
            with open(os.path.join(folder, agent, "enagentd.log"), "w") as log:
                log.write(f"{note} info enagentd: advertising a new identifier\n" + f"{note} {stall}" * (stall_notes if agent == "a" else 0)
                          + f"{later_note} {stall}" * (stall_notes_after if agent == "a" else 0))
                if faults and agent == "a":  # its new process, a second after the restart
                    log.write(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + OFFSET + FAULTS["a-restarted"] + 1)) + " info enagentd: enagentd started\n")
        for poll in range(10):
            asked = START + OFFSET + 1.5 + poll * 4 + (3.2 if stray_poll and poll == 5 else 0)  # 3.2: in the pause
            if faults and FAULTS["a-killed"] < asked - START - OFFSET < FAULTS["a-restarted"] + back + 1:
                continue
            self.phase("status-poll", asked + 0.1, agent="a", started=asked, status={"scanning": True})
        if faults:
            snapshot = {"keys": [[2700000, 144, "aa" * 16]], "sightings": 40, "integrity": "ok"}
            for name, at in FAULTS.items():
                self.phase(name, START + OFFSET + at)
            self.phases[-len(FAULTS):] = [dict(line, **extra) for line, extra in zip(self.phases[-len(FAULTS):], (
                {}, {}, {}, {"hci0": START + OFFSET + 20, "hci1": START + OFFSET + 20}, {"snapshot": snapshot}, {},
                {"snapshot": dict(snapshot, sightings=40 - lost)}, {}, {}, {}, {}, {}, {}, {}, {}))]
            for controller in crowd_report.AGENTS.values():
                self.advertising(controller, START + OFFSET + 0.5, 1)
                self.advertising(controller, START + OFFSET + FAULTS["bluetoothd-offered"] + back, 1)
            self.advertising(0, START + OFFSET + FAULTS["a-restarted"] + back, 1)
            self.advertising(1, START + OFFSET + FAULTS["b-paused"] + 0.2, 0)
            if woke:
                self.advertising(1, START + OFFSET + FAULTS["b-paused"] + 2, 1)
            self.advertising(1, START + OFFSET + FAULTS["b-resumed"] + back, 1)
            # hci0 connectable: the kernel's connectable parameters, a's advertising off, on again.
            turned = START + OFFSET + FAULTS["a-connectable"] + 0.1
            self.record(0, turned, 2, struct.pack("<HB", 0x2036, 25) + bytes([1, 0x11, 0]) + bytes(22))
            self.record(0, turned + 0.002, 3, bytes([0x0E, 5, 1]) + struct.pack("<H", 0x2036) + bytes([0, 0]))
            if connectable_off is not None:
                self.advertising(0, turned + connectable_off, 0)
            # Not connectable: the kernel takes page scan off KERNEL_LAG after it was asked, a is back `back` after that.
            not_connectable = START + OFFSET + FAULTS["a-not-connectable"] + KERNEL_LAG
            self.command(0, not_connectable, crowd_report.WRITE_SCAN_ENABLE, bytes([0]))
            self.advertising(0, not_connectable + back, 1)
            for controller in crowd_report.AGENTS.values():
                self.advertising(controller, START + OFFSET + FAULTS["rfkill-unblocked"] + back, 1)
        if flood:
            self.phase("flood-started", START + OFFSET + 30)
        self.phase("crowd-ended", START + OFFSET + 60)
        with open(os.path.join(folder, labframe.MANIFEST), "w") as manifest:
            manifest.writelines(json.dumps(line) + "\n" for line in self.phases)
        with open(os.path.join(folder, "host.snoop"), "wb") as capture:
            kept = [record for host, record in sorted(self.records, key=lambda frame: frame[0])
                    if captured_seconds is None or host <= START + captured_seconds]
            capture.write(b"btsnoop\0" + struct.pack(">II", 1, 2001) + b"".join(kept))

    def phase(self, name, realtime, **values):
        self.phases.append({"phase": name, "realtime": realtime, "monotonic": 0, **values})

    def phones(self, phones_clock):
        """Five phones, each a new address and RPI every 10 s, of a key of its own, its interval the
        agents' clock's then (or, with `phones_clock` "host", the host's, the log saying the agents'):
        phones.jsonl, and (on, off, address, RPI, phone); the AEM of each RPI in `self.aems`."""
        lines, rpis = [], []
        for phone in range(5):
            previous, on, key = None, START - 5 + phone, bytes([phone + 1]) * 16
            for rotation in range(8):
                interval = int(on // 600) + rotation if phones_clock == "host" else int((ORIGIN + (on - ORIGIN) * SCALE) // 600)
                address, (rpi, aem) = f"{phone:02x}{rotation:02x}00000000", phones.en_data(key, interval)
                rpi = rpi.hex()
                self.aems[rpi] = aem
                if previous:
                    lines.append({"off": on - 0.01, "address": previous[0], "rpi": previous[1]})
                lines.append({"on": on, "kind": ("android", "iphone")[phone % 2], "controller": f"crowd-{phone}", "handle": phone,
                              "tek": key.hex(), "interval": interval, "rollingStart": interval - interval % 144, "clock": "agents",
                              "address": address, "rpi": rpi})
                rpis.append((on, on + 9.99, address, rpi, phone))
                previous, on = (address, rpi), on + 10
        with open(os.path.join(self.folder, "phones.jsonl"), "w") as log:
            log.writelines(json.dumps(line) + "\n" for line in sorted(lines, key=lambda line: line.get("on", line.get("off"))))
        return rpis

    def record(self, controller, guest, opcode, payload):
        """A frame as RootCanal records it: by the host's clock, in whole milliseconds."""
        host = int((guest - OFFSET) * 1000) / 1000
        stamp = round(host * 1e6) + BTSNOOP_EPOCH
        self.records.append((host, struct.pack(">IIIIq", len(payload), len(payload), controller << 16 | opcode, 0, stamp) + payload))

    def advertising(self, controller, guest, enable):
        """LE Set Extended Advertising Enable of set 1, and its completion."""
        self.command(controller, guest, 0x2039, bytes([enable, 1, 1, 0, 0, 0]))

    def command(self, controller, guest, opcode, parameters, reply=b""):
        """An HCI command and its Command Complete with success and `reply`."""
        self.record(controller, guest, 2, struct.pack("<HB", opcode, len(parameters)) + parameters)
        self.record(controller, guest + 0.001, 3, bytes([0x0E, 4 + len(reply), 1]) + struct.pack("<H", opcode) + b"\0" + reply)

    def en_advertisement(self, controller, guest, agent, number, address, metadata_power, selected):
        """The agent's `number`-th EN advertisement (its key's interval of that number) as the kernel
        sets it up: legacy ADV_NONCONN_IND at 200-270 ms, the controller selecting `selected` dBm (127:
        it does not say, and the agent asks for its channel's at its first advertisement, between
        the parameters and the data), a non-resolvable address (its `address`-th), and the data with
        `metadata_power` in the metadata."""
        key, start, _ = KEYS[agent]
        rpi = onair.aes("ecb", onair.hkdf(key, b"EN-RPIK"), b"EN-RPI" + bytes(6) + struct.pack("<I", start + number))
        aem = onair.aes("ctr", onair.hkdf(key, b"EN-AEMK"), bytes([0x40, metadata_power & 0xFF, 0, 0]), iv=rpi)
        parameters = bytes([1]) + struct.pack("<H", 0x0010) + (320).to_bytes(3, "little") + (432).to_bytes(3, "little") + bytes([7, 1]) + bytes(14)
        self.command(controller, guest, onair.SET_EXT_ADV_PARAMETERS, parameters, bytes([selected & 0xFF]))
        if selected == 127 and number == 0:
            self.command(controller, guest + 0.001, onair.READ_ADV_TX_POWER, b"", bytes([ADVERTISED_POWER & 0xFF]))
        self.command(controller, guest + 0.002, onair.SET_ADV_SET_RANDOM_ADDRESS, bytes([1]) + bytes([address + 1, 0, 0, 0, controller, 0x3A])[::-1])
        data = bytes.fromhex("02011a") + onair.EN_PREFIX + rpi + aem
        self.command(controller, guest + 0.004, onair.SET_EXT_ADV_DATA, bytes([1, 3, 1, len(data)]) + data)

    def scan_enable(self, controller, guest, enable):
        self.command(controller, guest, 0x2042, bytes([enable, enable, 0, 0, 0, 0]))

    def agent(self, agent, controller, rpis, missing, twice, later, phantom_scan, unrecorded_scan, gap, boundary, merged):
        os.makedirs(os.path.join(self.folder, agent))
        with open(os.path.join(self.folder, agent, "exit-status"), "w") as status:
            status.write("0\n")
        db = sqlite3.connect(os.path.join(self.folder, agent, "enagent.db"))
        # What the report reads of schema 12; labelled 8, the version before the sightings' counts
        # and batches, so that enctl detect offline reads it too (ignoring later_receptions).
        db.executescript("CREATE TABLE scan (started_at INTEGER PRIMARY KEY, ended_at INTEGER NOT NULL);"
                         "CREATE TABLE sighting (id INTEGER PRIMARY KEY, rpi BLOB, aem BLOB, rssi INTEGER, seen_at INTEGER, adapter_address TEXT, "
                         "later_receptions BLOB);"
                         "CREATE TABLE temporary_exposure_key (key_data BLOB, rolling_start_interval_number INTEGER, rolling_period INTEGER);"
                         "PRAGMA user_version = 8;")
        db.execute("INSERT INTO temporary_exposure_key VALUES (?, ?, ?)", KEYS[agent])
        agent_time = lambda guest: int(ORIGIN + (guest - ORIGIN) * SCALE)
        for scan in range(14):
            start = START + OFFSET + 1 + controller * 0.5 + scan * 4
            if gap and agent == gap[0] and gap[1] <= scan <= gap[2]:
                continue
            if (agent, scan) != unrecorded_scan:
                db.execute("INSERT INTO scan VALUES (?, ?)", (agent_time(start), agent_time(start + (4 if (agent, scan) == boundary else 3))))
            if (agent, scan) == phantom_scan:
                continue
            # The scans the faults take: a's while it is down, b's from the one the pause ends.
            if self.faults and agent == "b" and FAULTS["b-paused"] - 3 < start - START - OFFSET < FAULTS["b-resumed"] + self.back:
                continue
            if self.faults and agent == "a" and FAULTS["a-killed"] < start - START - OFFSET < FAULTS["a-restarted"] + self.back:
                continue
            if (agent, scan - 1) != merged:
                self.scan_enable(controller, start + 0.05, 1)
            if (agent, scan) != merged:
                self.scan_enable(controller, start + 3.05, 0)
            for on, off, address, rpi, phone in rpis:
                heard = max(on + OFFSET, start + 0.05) + 0.02
                if on + OFFSET >= start + 3 or off + OFFSET <= start or (agent, scan, phone) == missing:
                    continue
                for row in range(2 if (agent, scan, phone) == twice else 1):
                    db.execute("INSERT INTO sighting (rpi, aem, rssi, seen_at, later_receptions) VALUES (?, ?, ?, ?, ?)",
                               (bytes.fromhex(rpi), self.aems[rpi], -40, agent_time(heard) + row * later, bytes([1, 0xEC])))
                if boundary == (agent, scan - 1):
                    db.execute("INSERT INTO sighting (rpi, aem, rssi, seen_at) VALUES (?, ?, ?, ?)",
                               (bytes.fromhex(rpi), self.aems[rpi], -40, agent_time(start)))
                report = struct.pack("<H", 0x0010) + b"\x01" + bytes.fromhex(address)[::-1] + bytes([1, 0, 0xFF, 0x7F, 0xD8]) + bytes(10)
                self.record(controller, heard, 3, bytes([0x3E, 2 + len(report), 0x0D, 1]) + report)
        db.commit()
        db.close()


class OneScan:
    """What `crowd_report.pairs` reads of a run: one recorded scan of agent a, from 0 to 3 s (its
    clock the host's), which stored phone A; the controller's scan matched to it, `window`; phone
    A on the air throughout, phone B from `b_on` on."""

    def __init__(self, window, b_on=2.6):
        self.window = window
        self.rpis = [{"rpi": "aa", "on": -10.0, "off": math.inf, "kind": "A"}, {"rpi": "bb", "on": b_on, "off": math.inf, "kind": "B"}]

    def scans(self, agent):
        return [(0, 3)]

    def host_time(self, seconds):
        return seconds

    def sightings(self, agent):
        return [(0, "aa", 1, [-40])]

    def matches(self, agent, controller):
        return [(self.window, 0)]


class CrowdPairs(unittest.TestCase):
    def test_a_scan_is_judged_where_it_overlaps_its_record(self):
        # bluetoothd's discovery begun 0.18 s before the record's end and run 3.4 s past it
        # (make test of 2026-12-01 09:55): too little of it in the record to judge, and B, on the
        # air from after the agent's own scan, is not one of the record's pairs.
        judged, expected, missed, _ = crowd_report.pairs(OneScan((2.82, 6.4)), "a", 0)
        self.assertEqual((judged, expected, missed), ([], 0, []))
        # A scan that began before the record: judged from the record's start; A recorded, B on too late.
        judged, expected, missed, _ = crowd_report.pairs(OneScan((-0.5, 3.05)), "a", 0)
        self.assertEqual((judged, expected, missed), ([((0, 3), 0)], 1, []))
        # One that ran 3 s past the record, its last second in it: B, on the air all that second
        # and not recorded, is missed.
        judged, expected, missed, _ = crowd_report.pairs(OneScan((2.0, 6.0), b_on=1.5), "a", 0)
        self.assertEqual((judged, expected, [rpi["rpi"] for _, _, rpi in missed]), ([((2.0, 3), 0)], 2, ["bb"]))
        # Under half a second of it in the record: not judged.
        self.assertEqual(crowd_report.pairs(OneScan((2.7, 6.0), b_on=1.5), "a", 0)[0], [])


class CrowdReport(unittest.TestCase):
    def failing(self, **doctored):
        folder = tempfile.mkdtemp(prefix="crowd-report-")
        self.addCleanup(shutil.rmtree, folder)
        Run(folder, **doctored)
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            failures = labframe.run_report(crowd_report.checks(), crowd_report.CrowdLab(folder))
        return {name for name, found in failures.items() if found}, printed.getvalue()

    def test_a_whole_run_passes(self):
        failed, printed = self.failing()
        self.assertEqual(failed, set(), printed)
        self.assertIn("the guest's clock +300 ms from the host's", printed)
        self.assertIn("rows per RPI per scan: 1 row", printed)
        self.assertIn("a (hci0): 43 of 43 (scan, advertiser) pairs recorded = 100.00% over 14 of hci0", printed)
        self.assertIn("b (hci1): 2 EN advertisements, 2 as the specification has them; TX power -10 dBm", printed)

    def test_the_phones_keys_are_detected_and_phones_off_the_agents_clock_fail_the_detection(self):
        failed, printed = self.failing()
        self.assertIn("a: 5 keys matched, in 20 exposure windows on 2027-02-06", printed)
        self.assertIn("it stored RPIs of 5 keys, of 5 sent by the agents' clock", printed)
        failed, printed = self.failing(phones_clock="host")
        self.assertEqual(failed, {"detection"}, printed)
        self.assertIn("a: 0 keys matched, in 0 exposure windows on no day; it stored RPIs of 5 keys, of 5 sent by the agents' clock", printed)

    def test_metadata_at_another_power_or_an_address_kept_for_a_new_rpi_fails_the_air(self):
        failed, printed = self.failing(metadata_power=-4)
        self.assertEqual(failed, {"air"}, printed)
        self.assertIn("metadata TX power -4 dBm, the controller selected -10 dBm", printed)
        failed, printed = self.failing(address_kept=True)
        self.assertEqual(failed, {"air"}, printed)
        self.assertIn("addresses with several RPIs: 1", printed)

    def test_marks_read_slowly_pass_up_to_their_bound(self):
        failed, printed = self.failing(mark_width=1.2)
        self.assertEqual(failed, set(), printed)
        self.assertEqual(self.failing(mark_width=crowd_report.LARGEST_MARK + 0.1)[0], {"clock"})

    def test_a_scan_recorded_and_not_run_or_run_and_not_recorded_fails_the_crowd(self):
        failed, printed = self.failing(phantom_scan=("a", 5))
        self.assertEqual(failed, {"crowd", "status"}, printed)  # a's poll during it said scanning
        failed, printed = self.failing(unrecorded_scan=("b", 5))
        self.assertEqual(failed, {"crowd"}, printed)

    def test_a_pair_missing_fails_the_crowd(self):
        failed, printed = self.failing(missing=("b", 6, 0))
        self.assertEqual(failed, {"crowd"}, printed)
        self.assertIn("crowd android 1 of", printed)

    def test_an_rpi_stored_twice_in_a_scan_fails_the_rows(self):
        self.assertEqual(self.failing(twice=("a", 3, 1))[0], {"rows"})
        self.assertEqual(self.failing(twice=("a", 3, 1), later=crowd_report.SAME_SCAN)[0], {"rows"})

    def test_a_row_of_the_second_one_scan_ended_and_the_next_began_passes(self):
        failed, printed = self.failing(boundary=("a", 3))
        self.assertEqual(failed, set(), printed)
        self.assertIn("rows per RPI per scan: 1 row", printed)
        self.assertIn("2 rows", printed)

    def test_a_second_row_past_the_merge_window_passes(self):
        failed, printed = self.failing(twice=("a", 3, 1), later=crowd_report.SAME_SCAN + 1)
        self.assertEqual(failed, set(), printed)
        self.assertIn("2 rows 1 times; 0 within", printed)

    def test_a_stall_noted_once_and_recovered_from_passes_and_noted_twice_fails_the_journal(self):
        failed, printed = self.failing(stall_notes=1)
        self.assertEqual(failed, set(), printed)
        self.assertIn("hci0's next scan 1.4 s after the note's second", printed)
        self.assertEqual(self.failing(stall_notes=2)[0], {"journal"})

    def test_no_scan_for_longer_than_the_bound_fails_the_scanning(self):
        # Scans 2 to 10 of b: 36 s without one, neither run nor recorded.
        failed, printed = self.failing(gap=("b", 2, 10))
        self.assertEqual(failed, {"scanning"}, printed)
        self.assertEqual(self.failing(gap=("b", 2, 8))[0], set())

    def test_a_flood_too_slow_fails_and_a_pair_missing_in_it_fails_it_too(self):
        failed, printed = self.failing()
        self.assertIn("no flood in this run", printed)
        failed, printed = self.failing(flood=True)
        self.assertEqual(failed, {"flood"}, printed)
        self.assertIn("the flood for 30 s: 30 fresh RPIs a minute", printed)
        least = crowd_report.FLOOD_LEAST_PER_MINUTE
        crowd_report.FLOOD_LEAST_PER_MINUTE = 30
        self.addCleanup(setattr, crowd_report, "FLOOD_LEAST_PER_MINUTE", least)
        failed, printed = self.failing(flood=True)
        self.assertEqual(failed, set(), printed)
        self.assertIn("a (hci0): 18 of 18 pairs recorded in the flood = 100.00% over 6 scans", printed)
        # Scan 9 of b begins 37.5 s into the crowd: in the flood, so both checks fail; scan 2 is before it.
        self.assertEqual(self.failing(flood=True, missing=("b", 9, 0))[0], {"crowd", "flood"})
        self.assertEqual(self.failing(flood=True, missing=("b", 2, 0))[0], {"crowd"})

    def test_faults_recovered_from_pass_and_their_scans_are_not_judged(self):
        failed, printed = self.failing()
        self.assertIn("no faults in this run", printed)
        failed, printed = self.failing(faults=True, missing=("a", 5, 0))  # scan 5 of a: from 21 s, in the faults
        self.assertEqual(failed, set(), printed)
        self.assertIn("it offered hci1 again 1.0 s after its restart; b advertised and scanned 1.6 s after that", printed)
        self.assertIn("a killed with SIGKILL: 40 sightings committed before, 40 after, database ok, keys kept; restarted, "
                      "its process ran 0.8 s later (its log), and it advertised and scanned anew 0.4 s after that", printed)
        self.assertIn("b paused: hci1 quiet +0.2 s from enctl pause returning to the resume; resumed, it advertised and scanned anew 2.6 s later",
                      printed)
        self.assertIn("a (hci0): 28 of 28 (scan, advertiser) pairs recorded", printed)
        self.assertEqual(self.failing(faults=True, missing=("a", 4, 0))[0], set())  # scan 4: 17-20 s, into the faults
        self.assertEqual(self.failing(faults=True, missing=("a", 3, 2))[0], {"crowd"})  # scan 3: 13-16 s, phone 2 on from 7 s to 17 s
        # One scan of hci0's from scan 3 into the faults (make test of 2026-12-01 03:17): scan 3 ran.
        failed, printed = self.failing(faults=True, merged=("a", 3))
        self.assertEqual(failed, set(), printed)

    def test_an_agent_back_late_or_b_on_in_its_pause_or_sightings_lost_fail_the_faults(self):
        failed, printed = self.failing(faults=True, back=crowd_report.STARTED_WITHIN + 1)
        self.assertIn("faults", failed, printed)
        self.assertEqual(self.failing(faults=True, woke=True)[0], {"faults"})
        self.assertEqual(self.failing(faults=True, lost=1)[0], {"faults"})

    def test_a_connectable_adapter_left_on_the_air_or_an_agent_back_late_fails_the_adapter(self):
        failed, printed = self.failing(faults=True)
        self.assertIn("hci0 connectable: a's advertising taken off 199 ms after the kernel made hci0 connectable; "
                      "not connectable again: the kernel made it so 0.0 s after it was asked, and a advertised and scanned anew 0.5 s after that", printed)
        self.assertIn("hci1 blocked by rfkill and unblocked: b advertised and scanned anew 3.1 s after the unblock", printed)
        self.assertEqual(self.failing(faults=True, connectable_off=crowd_report.CROWD_CONNECTABLE_OFF_WITHIN - 0.1)[0], set())
        self.assertEqual(self.failing(faults=True, connectable_off=crowd_report.CROWD_CONNECTABLE_OFF_WITHIN + 0.1)[0], {"adapter"})
        self.assertEqual(self.failing(faults=True, connectable_off=None)[0], {"adapter"})
        self.assertIn("adapter", self.failing(faults=True, back=crowd_report.BACK_WITHIN + 1)[0])

    def test_a_stall_noted_once_in_each_run_of_bluetoothd_and_of_the_agent_passes(self):
        self.assertEqual(self.failing(faults=True, stall_notes=1, stall_notes_after=1)[0], set())
        self.assertEqual(self.failing(faults=True, stall_notes_after=2)[0], {"journal"})

    def test_scanning_said_between_scans_fails_the_status(self):
        self.assertEqual(self.failing(stray_poll=True)[0], {"status"})

    def test_a_capture_that_ends_early_fails_it_and_leaves_the_later_polls_unjudged(self):
        failed, printed = self.failing(stray_poll=True, captured_seconds=20)
        self.assertEqual(failed, {"capture"}, printed)
        self.assertIn("0 of them while hci0 ran no scan (5 after the capture's last frame of hci0, not judged", printed)


class Offered(unittest.TestCase):
    """offered.py on what dbus-monitor printed of a restarted bluetoothd's InterfacesAdded in a
    crowd's faults (testdata/bluetoothd-offers.txt, 2026-11-30 16:06): hci1 first, then hci0."""
    offered = importlib.util.module_from_spec(spec := importlib.util.spec_from_file_location("offered", os.path.join(HERE, "rootcanal", "offered.py")))
    spec.loader.exec_module(offered)

    def setUp(self):
        with open(os.path.join(HERE, "testdata", "bluetoothd-offers.txt")) as recorded:
            self.lines = recorded.read().splitlines()

    def test_each_adapter_is_offered_when_its_advertising_manager_is_added(self):
        self.assertEqual([self.offered.offered(self.lines, adapter) for adapter in ("hci0", "hci1", "hci2")],
                         [1796054788.336431, 1796054786.792348, None])

    def test_the_phase_fields_name_each_adapter(self):
        self.assertEqual(self.offered.fields(self.lines, ["hci0", "hci1", "hci2"]),
                         "hci0:=1796054788.336431 hci1:=1796054786.792348 hci2:=null")

    def test_an_adapter_added_without_its_advertising_manager_is_not_offered(self):
        without = [line for line in self.lines if "LEAdvertisingManager1" not in line]
        self.assertEqual([self.offered.offered(without, adapter) for adapter in ("hci0", "hci1")], [None, None])


if __name__ == "__main__":
    unittest.main()
