"""rclab.py: EN phones played by Google's Bumble on Google's RootCanal, on the host (no guest).

Run it through lab/rootcanal/run.sh (a private network namespace, the pinned virtual environment):

  lab/rootcanal/run.sh measure [--out DIR] [--crowds 50,100,300] [--topologies sets,controllers] ...
  lab/rootcanal/run.sh phones  [--seconds S] [--rotate S]     the phones and a scanner, until S
  lab/rootcanal/run.sh serve   [--crowd N] [--rotate S|A-B]   RootCanal with phones on the air for
                               [--flood-rotate S|A-B]        another program (a guest) to hear;
                               [--agents-clock MANIFEST]     SIGUSR2: the flood's rotations

Every experiment starts a RootCanal of its own (rootcanal.sh), connects Bumble devices to its HCI
ports as separate controllers (Bumble transport tcp-client:127.0.0.1:PORT: each connection is a new
controller on the same air), and writes what it measured as JSON (OUT/results.json) and a text
summary. Phones are programmed with raw HCI commands through Bumble's host (no Bumble advertising
helpers), so the commands are the ones a phone's stack would send and RootCanal validates them:

  iphone   Flags 0x1A, the UUID list, FD6F service data (RPI 16 + AEM 4): 31 bytes
  android  the UUID list and the service data, no Flags: 28 bytes
  ADV_NONCONN_IND (legacy PDU), own address random, a non-resolvable address that changes with
  the RPI at each rotation (the set off, new address, new data, on), AEM metadata with the TX power
  the controller selected. On a BT 5 controller the extended commands with legacy PDU properties
  (0x0010), as Linux drives one; on a legacy-only controller (a port whose RootCanal configuration
  turns le_extended_advertising off) the legacy commands, as on a Raspberry Pi.

RPIs are derived with the lab's own HKDF/AES (lab/onair.py) from a TEK per phone; a rotation takes
the next interval number, so that an accelerated rotation still gives a new RPI of the same key,
and a new day's interval a new TEK, as a phone makes one each day. Once the guest's manifest tells
the lab agents' clock (serve --agents-clock, its phase "clock": 120 times faster than the host's,
agent-lib.sh), each phone rotates at once and then takes the interval that clock reads (or the next
one, whichever is later), so that the agents can detect the phones' keys.
The scanners record every advertising report (legacy and extended) with the time it arrived.
"""
import argparse, asyncio, json, math, os, random, resource, shutil, signal, socket, struct, subprocess, sys, time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # lab/: onair.py's HKDF and AES
import onair  # noqa: E402

from bumble import hci  # noqa: E402
from bumble.device import Device  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

TEST_PORT, HCI_PORT, LEGACY_PORT = 6401, 6402, 6412  # 6403 and 6404, the link layers, are not used
EXTENDED_SETS = 16  # RootCanal's LE Number of Supported Advertising Sets
ENIN_SECONDS = 600
PAYLOADS = {  # protocol.md §2
    "iphone": lambda s: bytes.fromhex("02011a03036ffd17166ffd") + s,
    "android": lambda s: bytes.fromhex("03036ffd17166ffd") + s,
}


# ------------------------------------------------------------------ RootCanal and its test channel
class RootCanal:
    """A RootCanal process: the default BT 5.3 controller on HCI_PORT and a legacy-only one (no LE
    extended advertising: the legacy commands, as a BT 4.x controller) on LEGACY_PORT."""

    def __init__(self, out, name, sniff=False):
        self.log_path = os.path.join(out, f"rootcanal-{name}.log")
        configuration = (f"tcp_server {{ tcp_port: {HCI_PORT} }} "
                         f"tcp_server {{ tcp_port: {LEGACY_PORT} configuration {{ features {{ le_extended_advertising: false }} }} }}")
        self.log = open(self.log_path, "w")
        # sniff: a pcap file of each HCI connection's packets in out/hci, RootCanal's working
        # directory (hcisniffer.py reads them).
        directory = os.path.join(out, "hci") if sniff else None
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
            os.makedirs(directory)
        self.process = subprocess.Popen([os.path.join(HERE, "rootcanal.sh"), f"-configuration={configuration}"]
                                        + (["-enable_hci_sniffer"] if sniff else []),
                                        stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent, cwd=directory)
        deadline = time.time() + 20
        while not all(port_open(p) for p in (TEST_PORT, HCI_PORT, LEGACY_PORT)):
            if self.process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"RootCanal did not open its ports (log: {self.log_path})")
            time.sleep(0.1)
        self.pid = self.process.pid

    def cpu_seconds(self):
        fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mib(self):
        for line in open(f"/proc/{self.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def die_with_parent():
    """In RootCanal's process before it runs: SIGTERM when this one ends, however it ends
    (rootcanal.sh execs the binary, so the setting stays with it)."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 15)


def port_open(port):
    """Whether something listens on TCP `port`: read from the kernel's table, since a connection
    to an HCI port would make a controller."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(table).readlines()[1:]:
                fields = line.split()
                if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # LISTEN
                    return True
        except FileNotFoundError:
            pass
    return False


class TestChannel:
    """RootCanal's test channel: a command is its name and arguments, each a length byte and the
    bytes; an answer is a 4-byte little-endian length and the text."""

    def __init__(self, port=TEST_PORT):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.answer()  # "RegisterSendResponse called"

    def answer(self):
        size = struct.unpack("<I", self.recv(4))[0]
        return self.recv(size).decode()

    def recv(self, n):
        data = b""
        while len(data) < n:
            chunk = self.socket.recv(n - len(data))
            if not chunk:
                raise ConnectionError("RootCanal closed its test channel")
            data += chunk
        return data

    def command(self, name, *args):
        message = bytes([len(name)]) + name.encode() + bytes([len(args)])
        for arg in args:
            message += bytes([len(arg)]) + arg.encode()
        self.socket.sendall(message)
        return self.answer()

    def close(self):
        self.socket.sendall(bytes([0]))
        self.socket.close()


def remove_default_beacons():
    """RootCanal's test environment puts two beacons on the air at start (devices 0 and 1: public
    addresses be:ac:01:55:00:01/02, ADV_NONCONN_IND "gDevice-beacon" every 1000 ms)."""
    channel = TestChannel()
    listing = channel.command("list")
    answers = [channel.command("del", "0"), channel.command("del", "1")]
    channel.close()
    return listing, answers


# ------------------------------------------------------------------ controllers
async def controller(port, name):
    transport = await open_transport(f"tcp-client:127.0.0.1:{port}")
    device = Device.with_hci(name, hci.Address("F0:F1:F2:F3:F4:F5"), transport.source, transport.sink)
    device.transport = transport
    return device


async def controllers(port, count, prefix, concurrency=16):
    """`count` controllers on `port`: connected one after the other (RootCanal listens with a
    backlog of 1), then powered on (Bumble's reset and set-up commands) `concurrency` at a time."""
    devices = [await controller(port, f"{prefix}{i}") for i in range(count)]
    semaphore = asyncio.Semaphore(concurrency)

    async def power_on(device):
        async with semaphore:
            await device.power_on()
    await asyncio.gather(*(power_on(d) for d in devices))
    return devices


def non_resolvable_address():
    while True:
        raw = bytearray(os.urandom(6))
        raw[0] &= 0x3F  # the two most significant bits 00: non-resolvable private
        if raw[1:] != bytes(5) and raw[1:] != b"\xff" * 5 and raw != bytearray(6):
            return bytes(raw)


def bumble_address(raw):
    return hci.Address(":".join(f"{b:02X}" for b in raw), hci.Address.RANDOM_DEVICE_ADDRESS)


def en_payload(key, interval, tx_power):
    rpik, aemk = onair.hkdf(key, b"EN-RPIK"), onair.hkdf(key, b"EN-AEMK")
    rpi = onair.aes("ecb", rpik, b"EN-RPI" + bytes(6) + struct.pack("<I", interval))
    aem = onair.aes("ctr", aemk, bytes([0x40, tx_power & 0xFF, 0x00, 0x00]), iv=rpi)
    return rpi, aem


class AgentsClock:
    """The lab agents' clock (agent-lib.sh: ORIGIN + SCALE x (t - ORIGIN)), from the phase "clock"
    of the guest's manifest once it is there, read by the host's clock: the guest's is the host's
    within a second (crowd-report.py measures it), and one of the agents' EN intervals is 5 s."""

    def __init__(self, manifest):
        self.manifest, self.origin, self.scale = manifest, None, None

    def read(self):
        """Whether the manifest tells the clock (a line still being written is read next time)."""
        try:
            with open(self.manifest) as lines:
                clock = next((phase for phase in map(json.loads, lines) if phase.get("phase") == "clock"), None)
        except (OSError, ValueError):
            return False
        if clock:
            self.origin, self.scale = clock["origin"], clock["scale"]
        return clock is not None

    def interval(self):
        """The agents' EN interval now, or None while the clock is not known."""
        if self.origin is None:
            return None
        return int((self.origin + (time.time() - self.origin) * self.scale) // ENIN_SECONDS)


class Phone:
    """One EN advertiser: an advertising set of a BT 5 controller (handle), or a legacy-only
    controller's one advertiser (handle None). With `clock` (an AgentsClock) its intervals follow
    the agents' once that is known."""

    def __init__(self, device, handle, kind, interval_ms, log, clock=None):
        self.device, self.handle, self.kind, self.log, self.clock = device, handle, kind, log, clock
        self.interval = (round(interval_ms[0] / 0.625), round(interval_ms[1] / 0.625))
        self.key = os.urandom(16)
        self.enin = int(time.time() // ENIN_SECONDS)
        self.tx_power = None
        self.address = self.rpi = None
        self.rotations = 0

    async def command(self, command):
        return await self.device.send_sync_command(command)

    async def start(self):
        if self.handle is None:
            # The legacy commands: the address changes only while advertising is off.
            await self.command(hci.HCI_LE_Set_Advertising_Parameters_Command(
                advertising_interval_min=self.interval[0], advertising_interval_max=self.interval[1],
                advertising_type=hci.HCI_LE_Set_Advertising_Parameters_Command.AdvertisingType.ADV_NONCONN_IND,
                own_address_type=hci.OwnAddressType.RANDOM, peer_address_type=0,
                peer_address=hci.Address.ANY, advertising_channel_map=0x07, advertising_filter_policy=0))
            response = await self.command(hci.HCI_LE_Read_Advertising_Physical_Channel_Tx_Power_Command())
            self.tx_power = response.tx_power_level
        else:
            response = await self.command(hci.HCI_LE_Set_Extended_Advertising_Parameters_Command(
                advertising_handle=self.handle, advertising_event_properties=0x0010,  # legacy ADV_NONCONN_IND
                primary_advertising_interval_min=self.interval[0], primary_advertising_interval_max=self.interval[1],
                primary_advertising_channel_map=0x07, own_address_type=hci.OwnAddressType.RANDOM,
                peer_address_type=0, peer_address=hci.Address.ANY, advertising_tx_power=0x7F,
                advertising_filter_policy=0, primary_advertising_phy=1, secondary_advertising_max_skip=0,
                secondary_advertising_phy=1, advertising_sid=self.handle & 0x0F, scan_request_notification_enable=0))
            self.tx_power = response.selected_tx_power
            if self.tx_power == 127:
                # The controller does not say (RootCanal's): the metadata carries its advertising
                # channel's, as enagentd's does. 127 dBm in the metadata is no TX power a matcher
                # takes: Google's drops such sightings, and the agents detected none of the keys.
                self.tx_power = (await self.command(hci.HCI_LE_Read_Advertising_Physical_Channel_Tx_Power_Command())).tx_power_level
        await self.rotate(first=True)

    async def enable(self, on):
        if self.handle is None:
            await self.command(hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=int(on)))
        else:
            await self.command(hci.HCI_LE_Set_Extended_Advertising_Enable_Command(
                enable=int(on), advertising_handles=[self.handle], durations=[0], max_extended_advertising_events=[0]))

    async def rotate(self, first=False):
        """A new non-resolvable address with the RPI of the next interval: the set off, both
        changed, the set on. The log's "off" of the RPI it ends is stamped before the set goes
        off, the "on" of the new one after the set is on: each RPI was on the air at least from
        its "on" to its "off"."""
        # Off from the disable on: the RPI it ends was on the air until at least this moment.
        off = time.time()
        if not first:
            await self.enable(False)
        previous, agents = self.enin, None if first or not self.clock else self.clock.interval()
        self.enin = previous if first else previous + 1 if agents is None else max(previous + 1, agents)
        if self.enin // 144 != previous // 144:
            self.key = os.urandom(16)
        address = non_resolvable_address()
        rpi, aem = en_payload(self.key, self.enin, self.tx_power)
        data = PAYLOADS[self.kind](rpi + aem)
        if self.handle is None:
            await self.command(hci.HCI_LE_Set_Random_Address_Command(random_address=bumble_address(address)))
            await self.command(hci.HCI_LE_Set_Advertising_Data_Command(advertising_data=data))
        else:
            await self.command(hci.HCI_LE_Set_Advertising_Set_Random_Address_Command(
                advertising_handle=self.handle, random_address=bumble_address(address)))
            await self.command(hci.HCI_LE_Set_Extended_Advertising_Data_Command(
                advertising_handle=self.handle, operation=3, fragment_preference=1, advertising_data=data))  # complete data
        await self.enable(True)
        now = time.time()
        if self.log and self.address is not None:
            self.log.write(json.dumps({"off": off, "address": self.address.hex(), "rpi": self.rpi.hex()}) + "\n")
        self.address, self.rpi = address, rpi
        self.rotations += 0 if first else 1
        if self.log:
            self.log.write(json.dumps({"on": now, "kind": self.kind, "controller": self.device.name, "handle": self.handle,
                                       "tek": self.key.hex(), "interval": self.enin, "rollingStart": self.enin - self.enin % 144,
                                       "clock": "host" if agents is None else "agents", "address": address.hex(),
                                       "rpi": rpi.hex(), "tx_power": self.tx_power, "data": data.hex()}) + "\n")


def address_text(raw):
    return ":".join(f"{b:02X}" for b in raw)


# ------------------------------------------------------------------ the scanner
class Scanner:
    """A passive scanner that records every advertising report its controller sends."""

    def __init__(self, device, legacy_commands, log=None):
        self.device, self.legacy_commands, self.log = device, legacy_commands, log
        self.reports = []  # (monotonic, scan, address, kind, event_type, rssi, tx_power, data)
        self.scan = None
        self.scans = []  # (index, filter duplicates, enabled at, disabled at)
        device.host.on("advertising_report", self.on_report)

    def on_report(self, report):
        extended = isinstance(report, hci.HCI_LE_Extended_Advertising_Report_Event.Report)
        record = (time.monotonic(), self.scan, str(report.address).split("/")[0], "ext" if extended else "legacy",
                  report.event_type, report.rssi, report.tx_power if extended else None, bytes(report.data))
        self.reports.append(record)
        if self.log:
            self.log.write(json.dumps({"t": record[0], "scan": record[1], "address": record[2], "report": record[3],
                                       "event_type": record[4], "rssi": record[5], "tx_power": record[6],
                                       "data": record[7].hex()}) + "\n")

    async def start(self, filter_duplicates, interval_ms=60, window_ms=30):
        index = len(self.scans)
        if self.legacy_commands:
            await self.device.send_sync_command(hci.HCI_LE_Set_Scan_Parameters_Command(
                le_scan_type=0, le_scan_interval=round(interval_ms / 0.625), le_scan_window=round(window_ms / 0.625),
                own_address_type=hci.OwnAddressType.RANDOM, scanning_filter_policy=0))
            enabled = time.monotonic()
            self.scan = index
            await self.device.send_sync_command(hci.HCI_LE_Set_Scan_Enable_Command(
                le_scan_enable=1, filter_duplicates=int(filter_duplicates)))
        else:
            await self.device.send_sync_command(hci.HCI_LE_Set_Extended_Scan_Parameters_Command(
                own_address_type=hci.OwnAddressType.RANDOM, scanning_filter_policy=0, scanning_phys=1,
                scan_types=[0], scan_intervals=[round(interval_ms / 0.625)], scan_windows=[round(window_ms / 0.625)]))
            enabled = time.monotonic()
            self.scan = index
            await self.device.send_sync_command(hci.HCI_LE_Set_Extended_Scan_Enable_Command(
                enable=1, filter_duplicates=int(filter_duplicates), duration=0, period=0))
        self.scans.append([index, bool(filter_duplicates), enabled, None])

    async def stop(self):
        if self.legacy_commands:
            await self.device.send_sync_command(hci.HCI_LE_Set_Scan_Enable_Command(le_scan_enable=0, filter_duplicates=0))
        else:
            await self.device.send_sync_command(hci.HCI_LE_Set_Extended_Scan_Enable_Command(
                enable=0, filter_duplicates=0, duration=0, period=0))
        self.scans[-1][3] = time.monotonic()
        self.scan = None

    async def scan_for(self, seconds, filter_duplicates, **parameters):
        await self.start(filter_duplicates, **parameters)
        await asyncio.sleep(seconds)
        await self.stop()


# ------------------------------------------------------------------ figures
def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo), 2)


def scan_figures(scanner, names):
    """Per scan: its filter, length, the advertisers heard (`names`: address -> advertiser, one
    advertiser having several addresses as it rotates), reports per advertiser per second, the
    first report of each after the enable, the intervals between one address's reports."""
    out = []
    advertisers = set(names.values())
    for index, duplicates, enabled, disabled in scanner.scans:
        length = (disabled or time.monotonic()) - enabled
        reports = [r for r in scanner.reports if r[1] == index]
        ours = [r for r in reports if r[2] in names]
        per_advertiser = Counter(names[r[2]] for r in ours)
        gaps, by_address, first = [], defaultdict(list), {}
        for r in ours:
            by_address[r[2]].append(r[0])
            first.setdefault(names[r[2]], r[0] - enabled)
        for times in by_address.values():
            gaps += [round((b - a) * 1000, 1) for a, b in zip(times, times[1:])]
        heard = len(per_advertiser)
        first_ms = [f * 1000 for f in first.values()]
        out.append({
            "scan": index, "filter_duplicates": duplicates, "seconds": round(length, 2),
            "reports": len(reports), "reports_of_advertisers": len(ours),
            "advertisers_on_air": len(advertisers), "advertisers_heard": heard,
            "reports_per_advertiser_per_second": round(len(ours) / max(heard, 1) / length, 2),
            "reports_per_advertiser": dict(sorted(Counter(per_advertiser.values()).items())),
            "first_report_ms": {"median": percentile(first_ms, 50), "max": percentile(first_ms, 100)},
            "gap_ms": {"p5": percentile(gaps, 5), "median": percentile(gaps, 50), "p95": percentile(gaps, 95),
                       "min": percentile(gaps, 0), "max": percentile(gaps, 100)},
            "others": sorted(Counter(r[2] for r in reports if r[2] not in names).items())[:4],
        })
    return out


def rssi_figures(reports):
    values = [r[5] for r in reports]
    if not values:
        return {}
    deltas = Counter((b - a) for a, b in zip(values, values[1:]))
    return {"count": len(values), "min": min(values), "max": max(values), "distinct": len(set(values)),
            "most_common": Counter(values).most_common(5), "steps_between_reports": deltas.most_common(4)}


class Meter:
    """CPU seconds of RootCanal and of this process (the Bumble devices), and the load average."""

    def __init__(self, rootcanal):
        self.rootcanal = rootcanal
        self.start = (time.monotonic(), rootcanal.cpu_seconds(), self.own())

    @staticmethod
    def own():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def read(self):
        wall, rc, own = time.monotonic() - self.start[0], self.rootcanal.cpu_seconds() - self.start[1], self.own() - self.start[2]
        return {"seconds": round(wall, 2), "rootcanal_cpu_percent": round(100 * rc / wall, 1),
                "bumble_cpu_percent": round(100 * own / wall, 1), "rootcanal_rss_mib": round(self.rootcanal.rss_mib(), 1),
                "loadavg": open("/proc/loadavg").read().split()[:3]}


async def close(devices):
    for device in devices:
        try:
            await device.transport.close()
        except Exception:
            pass


# ------------------------------------------------------------------ experiments
async def experiment_phones(out, rotate=6.0, scan_seconds=4.0, pause=1.0, scans=3):
    """An iPhone (200-270 ms) and an Android phone (250 ms) on BT 5 controllers, an Android phone on a
    legacy-only controller (100-150 ms, the kernel's interval on BT 4.x), all rotating every
    `rotate` s; two passive scanners, one with the extended commands (BT 5), one with the legacy
    commands (legacy-only), each `scans` scans with the duplicate filter off, then as many with it
    on."""
    rc = RootCanal(out, "phones")
    result = {"experiment": "phones"}
    try:
        result["default_devices"], _ = remove_default_beacons()
        log = open(os.path.join(out, "phones.jsonl"), "w")
        ios, android = await controllers(HCI_PORT, 2, "phone")
        (pi,) = await controllers(LEGACY_PORT, 1, "legacy-phone")
        scanner_ext = (await controllers(HCI_PORT, 1, "scanner"))[0]
        scanner_leg = (await controllers(LEGACY_PORT, 1, "legacy-scanner"))[0]
        result["controllers"] = {d.name: {"public_address": str(d.public_address), "extended_advertising": d.supports_le_extended_advertising}
                                 for d in (ios, android, pi, scanner_ext, scanner_leg)}
        phones = [Phone(ios, 0, "iphone", (200, 270), log), Phone(android, 0, "android", (250, 250), log),
                  Phone(pi, None, "android", (100, 150), log)]
        for phone in phones:
            await phone.start()
        reports_log = open(os.path.join(out, "reports-phones.jsonl"), "w")
        scanners = [Scanner(scanner_ext, False, reports_log), Scanner(scanner_leg, True, reports_log)]
        known = {}  # address -> phone, as they rotate

        def remember():
            for p in phones:
                known[address_text(p.address)] = f"{p.kind}@{p.device.name}"
        remember()

        async def rotations(until):
            while time.monotonic() < until:
                await asyncio.sleep(rotate)
                for p in phones:
                    await p.rotate()
                remember()
        meter = Meter(rc)
        total = 2 * scans * (scan_seconds + pause)
        rotation_task = asyncio.create_task(rotations(time.monotonic() + total))
        for duplicates in (False, True):
            for _ in range(scans):
                await asyncio.gather(*(s.scan_for(scan_seconds, duplicates) for s in scanners))
                await asyncio.sleep(pause)
        rotation_task.cancel()
        result["cpu"] = meter.read()
        log.flush()
        result["rotations"] = {f"{p.kind}@{p.device.name}": p.rotations for p in phones}
        for name, scanner in (("extended_scan_bt5", scanners[0]), ("legacy_scan_legacy_only", scanners[1])):
            figures = scan_figures(scanner, known)
            # Per phone: its reports per second in the scans without the filter.
            per_phone = defaultdict(int)
            seconds = sum(f["seconds"] for f in figures if not f["filter_duplicates"])
            off = {i for i, d, *_ in scanner.scans if not d}
            for r in scanner.reports:
                if r[1] in off and r[2] in known:
                    per_phone[known[r[2]]] += 1
            gaps = defaultdict(list)
            last = {}
            for r in scanner.reports:
                if r[2] in known:
                    if (r[1], r[2]) in last:
                        gaps[known[r[2]]].append((r[0] - last[(r[1], r[2])]) * 1000)
                    last[(r[1], r[2])] = r[0]
            result[name] = {
                "scans": figures,
                "per_phone_reports_per_second_filter_off": {k: round(v / seconds, 2) for k, v in per_phone.items()},
                "per_phone_gap_ms": {k: {"median": percentile(v, 50), "p5": percentile(v, 5), "p95": percentile(v, 95)} for k, v in gaps.items()},
                "rssi": rssi_figures([r for r in scanner.reports if r[2] in known]),
                "event_types": sorted(Counter((r[3], r[4]) for r in scanner.reports).items()),
                "well_formed": check_payloads(scanner, phones, log.name),
            }
        log.close()
        reports_log.close()
        await close([ios, android, pi, scanner_ext, scanner_leg])
    finally:
        rc.stop()
    return result


def check_payloads(scanner, phones, phones_log):
    """Every report of a phone's address carries the data that phone put on the air with it."""
    on_air = {}
    for line in open(phones_log):
        entry = json.loads(line)
        if "on" in entry:
            on_air[address_text(bytes.fromhex(entry["address"]))] = bytes.fromhex(entry["data"])
    mismatched = sum(1 for r in scanner.reports if r[2] in on_air and r[7] != on_air[r[2]])
    return {"reports_checked": sum(1 for r in scanner.reports if r[2] in on_air), "data_mismatches": mismatched}


async def set_extended_data(device, handle, data):
    """LE Set Extended Advertising Data in fragments of at most 251 bytes (HCI's limit per command)."""
    if len(data) <= 251:
        return await device.send_sync_command(hci.HCI_LE_Set_Extended_Advertising_Data_Command(
            advertising_handle=handle, operation=3, fragment_preference=1, advertising_data=data))  # complete data
    chunks = [data[i:i + 251] for i in range(0, len(data), 251)]
    for i, chunk in enumerate(chunks):
        operation = 1 if i == 0 else 2 if i == len(chunks) - 1 else 0  # first, last, intermediate fragment
        await device.send_sync_command(hci.HCI_LE_Set_Extended_Advertising_Data_Command(
            advertising_handle=handle, operation=operation, fragment_preference=1, advertising_data=chunk))


async def experiment_extended(out, lengths=(31, 200, 229, 230, 251, 252, 255, 256, 512, 513, 1650)):
    """Extended (non-legacy) ADV_EXT_IND sets, non-connectable and non-scannable, one per data
    length, on one BT 5 controller; an extended scanner (duplicate filter off, 3 s) and a legacy
    one. Each length's reports reassembled from their fragments (Data Status 1: more to come)."""
    rc = RootCanal(out, "extended")
    result = {"experiment": "extended", "sets": []}
    try:
        remove_default_beacons()
        (advertiser,) = await controllers(HCI_PORT, 1, "extended")
        (scanner_dev,) = await controllers(HCI_PORT, 1, "scanner")
        (legacy_dev,) = await controllers(LEGACY_PORT, 1, "legacy-scanner")
        response = await advertiser.send_sync_command(hci.HCI_LE_Read_Maximum_Advertising_Data_Length_Command())
        result["max_advertising_data_length"] = response.max_advertising_data_length
        sets = {}
        for handle, length in enumerate(lengths):
            address = non_resolvable_address()
            data = bytes([length & 0xFF]) * length  # one byte repeated: a report's fragments are checked whole
            entry = {"length": length, "address": address_text(address)}
            try:
                await advertiser.send_sync_command(hci.HCI_LE_Set_Extended_Advertising_Parameters_Command(
                    advertising_handle=handle, advertising_event_properties=0x0000,  # extended, non-connectable, non-scannable
                    primary_advertising_interval_min=400, primary_advertising_interval_max=400,
                    primary_advertising_channel_map=0x07, own_address_type=hci.OwnAddressType.RANDOM,
                    peer_address_type=0, peer_address=hci.Address.ANY, advertising_tx_power=0x7F,
                    advertising_filter_policy=0, primary_advertising_phy=1, secondary_advertising_max_skip=0,
                    secondary_advertising_phy=1, advertising_sid=handle & 0x0F, scan_request_notification_enable=0))
                await advertiser.send_sync_command(hci.HCI_LE_Set_Advertising_Set_Random_Address_Command(
                    advertising_handle=handle, random_address=bumble_address(address)))
                await set_extended_data(advertiser, handle, data)
                await advertiser.send_sync_command(hci.HCI_LE_Set_Extended_Advertising_Enable_Command(
                    enable=1, advertising_handles=[handle], durations=[0], max_extended_advertising_events=[0]))
                entry["accepted"] = True
                sets[entry["address"]] = (length, data)
            except hci.HCI_Error as error:
                entry["accepted"] = False
                entry["error"] = str(error)
            result["sets"].append(entry)
        ext = Scanner(scanner_dev, False)
        leg = Scanner(legacy_dev, True)
        await asyncio.gather(ext.scan_for(3.0, False), leg.scan_for(3.0, False))
        for entry in result["sets"]:
            if not entry.get("accepted"):
                continue
            reports = [r for r in ext.reports if r[2] == entry["address"]]
            events, assembled, fragments = [], b"", []
            for r in reports:
                status = (r[4] >> 5) & 3
                assembled += r[7]
                fragments.append(len(r[7]))
                if status != 1:
                    events.append((assembled, status, fragments))
                    assembled, fragments = b"", []
            length, data = sets[entry["address"]]
            entry["reports"] = len(reports)
            entry["events"] = len(events)
            entry["fragment_lengths"] = events[0][2] if events else None
            entry["data_status_of_last"] = sorted(Counter(e[1] for e in events).items())
            entry["whole"] = sum(1 for e in events if e[0] == data)
            entry["received_lengths"] = sorted(Counter(len(e[0]) for e in events).items())
            entry["legacy_scanner_reports"] = sum(1 for r in leg.reports if r[2] == entry["address"])
            entry["event_types"] = sorted(Counter(r[4] for r in reports).items())
        await close([advertiser, scanner_dev, legacy_dev])
    finally:
        rc.stop()
    return result


async def experiment_crowd(out, count, topology, steady=10.0, flood=15.0, interval_ms=250):
    """`count` iPhones/Android phones (alternating), `topology` "sets" (16 advertising sets on each
    BT 5 controller) or "controllers" (one controller each); a BT 5 passive scanner: `steady` s with
    the duplicate filter off, two 4 s scans with it on; then a flood: every advertiser rotated as
    fast as its controller takes it, for `flood` s, while the scanner scans without the filter."""
    rc = RootCanal(out, f"crowd-{topology}-{count}")
    result = {"experiment": "crowd", "advertisers": count, "topology": topology, "interval_ms": interval_ms}
    try:
        remove_default_beacons()
        started = time.monotonic()
        per = EXTENDED_SETS if topology == "sets" else 1
        devices = await controllers(HCI_PORT, math.ceil(count / per), f"crowd-{topology}-")
        phones = []
        for i in range(count):
            device = devices[i // per]
            phones.append(Phone(device, i % per, "iphone" if i % 2 == 0 else "android", (interval_ms, interval_ms), None))
        # Each controller's sets one after the other, the controllers side by side.
        async def start_all(device_phones):
            for phone in device_phones:
                await phone.start()
        await asyncio.gather(*(start_all(phones[i:i + per]) for i in range(0, count, per)))
        (scanner_dev,) = await controllers(HCI_PORT, 1, "scanner")
        result["controllers"] = len(devices) + 1
        result["setup_seconds"] = round(time.monotonic() - started, 1)
        await asyncio.sleep(1.0)
        scanner = Scanner(scanner_dev, False)
        addresses = {address_text(p.address): address_text(p.address) for p in phones}
        meter = Meter(rc)
        await scanner.scan_for(steady, False)
        result["steady_cpu"] = meter.read()
        await asyncio.sleep(0.5)
        for _ in range(2):
            await scanner.scan_for(4.0, True)
            await asyncio.sleep(0.5)
        result["scans"] = scan_figures(scanner, addresses)
        result["rssi"] = rssi_figures([r for r in scanner.reports if r[2] in addresses])
        # The flood: rotations as fast as each controller takes them (4 commands each).
        before = len(scanner.reports)
        meter = Meter(rc)
        await scanner.start(False)
        end = time.monotonic() + flood
        on_air = set()

        async def churn(device_phones):
            while time.monotonic() < end:
                for phone in device_phones:
                    await phone.rotate()
                    on_air.add(address_text(phone.address))
        await asyncio.gather(*(churn(phones[i:i + per]) for i in range(0, count, per)))
        await scanner.stop()
        flood_cpu = meter.read()
        rotations = sum(p.rotations for p in phones)
        heard = {r[2] for r in scanner.reports[before:]}
        result["flood"] = {"seconds": flood_cpu["seconds"], "rotations": rotations,
                           "advertisers_per_minute": round(rotations * 60 / flood_cpu["seconds"]),
                           "addresses_on_air": len(on_air), "addresses_heard": len(heard & on_air),
                           "reports": len(scanner.reports) - before, "cpu": flood_cpu}
        await close(devices + [scanner_dev])
    finally:
        rc.stop()
    return result


# ------------------------------------------------------------------ validation
async def raw_status(device, opcode, parameters=b""):
    """Sends a command as bytes; returns the controller's status (Command Complete or Status)."""
    command = hci.HCI_Command.from_bytes(bytes([0x01]) + struct.pack("<HB", opcode, len(parameters)) + parameters)
    response = await device.host.send_command(command)
    if isinstance(response, hci.HCI_Command_Status_Event):
        return response.status
    parameters = response.return_parameters
    if hasattr(parameters, "status"):
        return int(parameters.status)
    return parameters.data[0] if hasattr(parameters, "data") else int(parameters)


def ext_params(handle=0, properties=0x0010, interval=0x0190, own=0x01):
    return struct.pack("<BH", handle, properties) + interval.to_bytes(3, "little") * 2 + bytes([0x07, own, 0x00]) \
        + bytes(6) + bytes([0x00, 0x7F, 0x01, 0x00, 0x01, handle, 0x00])


ENABLE_SET = bytes([0x01, 0x01, 0x00, 0, 0, 0, 0])
DISABLE_SET = bytes([0x00, 0x01, 0x00, 0, 0, 0, 0])
LEGACY_PARAMS = struct.pack("<HH", 0xA0, 0xA0) + bytes([0x03, 0x01, 0x00]) + bytes(6) + bytes([0x07, 0x00])
RANDOM = bytes.fromhex("0102030405c6")[::-1]  # a static random address, little-endian
EN_DATA = bytes.fromhex("03036ffd17166ffd") + bytes(20)


async def experiment_validation(out):
    """Commands a phone's or enagent's stack might send wrongly, and what RootCanal answers: each
    probe on a controller that had only HCI Reset (no random address), so that the order of the
    commands is the probe's own. The status is the controller's (0x00 success, 0x01 unknown command,
    0x0C command disallowed, 0x12 invalid parameters)."""
    rc = RootCanal(out, "validation")
    probes = []
    try:
        remove_default_beacons()

        async def fresh(port):
            transport = await open_transport(f"tcp-client:127.0.0.1:{port}")
            device = Device.with_hci("probe", hci.Address("F0:F1:F2:F3:F4:F5"), transport.source, transport.sink)
            device.transport = transport
            await device.host.reset()
            return device

        async def probe(name, port, steps, expected):
            device = await fresh(port)
            statuses = []
            try:
                for opcode, parameters in steps:
                    statuses.append(f"0x{await raw_status(device, opcode, parameters):02x}")
            except Exception as error:  # RootCanal ended: its last log line says why
                await asyncio.sleep(0.5)
                fatal = [line for line in open(rc.log_path, errors="replace") if " F " in line[:14]]
                statuses.append(f"{type(error).__name__}; RootCanal exit status {rc.process.poll()}: "
                                + (fatal[-1].split("  ")[-1].strip() if fatal else "no fatal line"))
            else:
                await close([device])
            probes.append({"probe": name, "statuses": statuses, "spec": expected, "last": statuses[-1]})

        bt5, legacy = HCI_PORT, LEGACY_PORT
        await probe("legacy-PDU properties 0x0011 (connectable, not scannable: no such legacy PDU)", bt5,
                    [(0x2036, ext_params(properties=0x0011))], "0x12")
        await probe("legacy-PDU set with 32 bytes of data", bt5,
                    [(0x2036, ext_params()), (0x2037, bytes([0, 3, 1, 32]) + bytes(32))], "0x12")
        await probe("primary interval 0x10 (under 20 ms)", bt5, [(0x2036, ext_params(interval=0x10))], "0x11")
        await probe("enable a set with own address random and no random address", bt5,
                    [(0x2036, ext_params()), (0x2037, bytes([0, 3, 1, len(EN_DATA)]) + EN_DATA), (0x2039, ENABLE_SET)], "0x12")
        await probe("set's random address changed while the (non-connectable) set is on", bt5,
                    [(0x2036, ext_params()), (0x2035, bytes([0]) + RANDOM), (0x2037, bytes([0, 3, 1, len(EN_DATA)]) + EN_DATA),
                     (0x2039, ENABLE_SET), (0x2035, bytes([0]) + RANDOM[::-1])], "0x00 (Core 7.8.52 refuses it only for connectable advertising; RootCanal quotes that and refuses any enabled set)")
        await probe("legacy advertising command after an extended one", bt5,
                    [(0x2036, ext_params()), (0x2006, LEGACY_PARAMS)], "0x0c")
        await probe("extended scan from a random address with none set", bt5,
                    [(0x2041, bytes([0x01, 0x00, 0x01, 0x00]) + struct.pack("<HH", 0x60, 0x30)), (0x2042, bytes([1, 0, 0, 0, 0, 0]))], "0x12")
        await probe("extended scan enabled twice (the second changes the filter)", bt5,
                    [(0x2041, bytes([0x00, 0x00, 0x01, 0x00]) + struct.pack("<HH", 0x60, 0x30)), (0x2042, bytes([1, 0, 0, 0, 0, 0])),
                     (0x2042, bytes([1, 1, 0, 0, 0, 0]))], "0x00")
        await probe("extended command on the legacy-only controller", legacy, [(0x2036, ext_params())], "0x01")
        await probe("legacy: advertising from a random address with none set", legacy,
                    [(0x2006, LEGACY_PARAMS), (0x200A, b"\x01")], "0x12")
        await probe("legacy: LE Set Random Address while advertising", legacy,
                    [(0x2005, RANDOM), (0x2006, LEGACY_PARAMS), (0x2008, bytes([len(EN_DATA)]) + EN_DATA + bytes(31 - len(EN_DATA))),
                     (0x200A, b"\x01"), (0x2005, RANDOM[::-1])], "0x0c")
        await probe("legacy: LE Set Random Address while scanning", legacy,
                    [(0x2005, RANDOM), (0x200B, bytes([0x00, 0x60, 0x00, 0x30, 0x00, 0x01, 0x00])), (0x200C, b"\x01\x00"),
                     (0x2005, RANDOM[::-1])], "0x0c")
        await probe("legacy: advertising disabled when it was not enabled", legacy, [(0x200A, b"\x00")],
                    "0x00 (btvirt answers 0x0c: lab/phones.py)")
        cut_short = bytes.fromhex("03036ffd17166ffd") + bytes(10)  # lab/phones.py's malformed "cut-short": AD, not HCI
        await probe("AD structure cut short, legacy-PDU set", bt5,
                    [(0x2036, ext_params()), (0x2035, bytes([0]) + RANDOM), (0x2037, bytes([0, 3, 1, len(cut_short)]) + cut_short),
                     (0x2039, ENABLE_SET)], "0x00 (the controller does not parse AD)")
        await probe("AD structure cut short, legacy advertising", legacy,
                    [(0x2005, RANDOM), (0x2006, LEGACY_PARAMS), (0x2008, bytes([len(cut_short)]) + cut_short + bytes(31 - len(cut_short))),
                     (0x200A, b"\x01")], "0x00")
        # Last: a malformed command (a length byte of 32 in LE Set Advertising Data's 32 bytes).
        await probe("legacy: LE Set Advertising Data with a length of 32", legacy, [(0x2008, bytes([32]) + bytes(31))], "0x12")
    finally:
        rc.stop()
    return {"experiment": "validation", "probes": probes}


# ------------------------------------------------------------------ serve: phones for a guest
async def sleep_unless(seconds, *events):
    """Sleeps `seconds`, or until one of `events` is set: whether one was."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    if not waits:
        await asyncio.sleep(seconds)
        return False
    done, pending = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    for wait in pending:
        wait.cancel()
    return bool(done)


async def serve(out, crowd, rotate, seconds, flood_rotate=None, agents_clock=None):
    """RootCanal with its default HCI port left free for a guest's controller (qemu's serial port
    connected to it), the three phones of experiment_phones and `crowd` more on other controllers,
    for `seconds` (0: until interrupted). Each phone rotates on its own, as phones do: first at a
    random moment within `rotate` (a (shortest, longest) pair of seconds) of the start, then
    every shortest to longest seconds, at random; every rotation is a line of phones.jsonl, the
    RPI it ends ("off", stamped before the set went off) and the one it starts ("on", stamped
    once the set is on again). From SIGUSR2 on, a flood: each phone's next rotation within
    `flood_rotate` of the signal, then every shortest to longest of it (fresh advertisers many
    times a second, as in a station). With `agents_clock` (the guest's manifest), each phone
    rotates at once when the manifest tells the agents' clock, and counts intervals by it from then."""
    rc = RootCanal(out, "serve", sniff=True)
    try:
        remove_default_beacons()
        print(f"rclab serve: RootCanal pid {rc.pid}, HCI {HCI_PORT} (BT 5.3) and {LEGACY_PORT} (legacy-only), "
              f"test channel {TEST_PORT}; log {rc.log_path}", flush=True)
        log = open(os.path.join(out, "phones.jsonl"), "w")
        ios, android = await controllers(HCI_PORT, 2, "phone")
        (pi,) = await controllers(LEGACY_PORT, 1, "legacy-phone")
        clock = AgentsClock(agents_clock) if agents_clock else None
        phones = [Phone(ios, 0, "iphone", (200, 270), log, clock), Phone(android, 0, "android", (250, 250), log, clock),
                  Phone(pi, None, "android", (100, 150), log, clock)]
        if crowd:
            devices = await controllers(HCI_PORT, math.ceil(crowd / EXTENDED_SETS), "crowd-")
            phones += [Phone(devices[i // EXTENDED_SETS], i % EXTENDED_SETS, ("iphone", "android")[i % 2], (250, 250), log, clock)
                       for i in range(crowd)]
        for phone in phones:
            await phone.start()
        log.flush()
        print(f"rclab serve: {len(phones)} phones on the air, each rotating every {rotate[0]:g}-{rotate[1]:g} s (log {log.name})", flush=True)
        end = time.monotonic() + seconds if seconds else math.inf
        # SIGUSR1: the phones leave the air (each set off, its RPI's "off" logged); RootCanal stays.
        leave = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, leave.set)
        flood = asyncio.Event()

        def flood_begins():
            print(f"rclab serve: the flood began: each phone rotating every {flood_rotate[0]:g}-{flood_rotate[1]:g} s", flush=True)
            flood.set()
        if flood_rotate:
            asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, flood_begins)
        clocked = asyncio.Event()

        async def take_the_agents_clock():
            while not clock.read():
                await asyncio.sleep(0.2)
            print(f"rclab serve: the agents' clock (origin {clock.origin}, {clock.scale} times faster): every phone rotates to it", flush=True)
            clocked.set()
        watch = asyncio.ensure_future(take_the_agents_clock()) if clock else None

        async def rotations(phone):
            wait, on_the_agents_clock = random.uniform(0, rotate[1]), False
            while time.monotonic() + wait < end:
                events = [leave] + ([flood] if flood_rotate and not flood.is_set() else []) + ([clocked] if clock and not on_the_agents_clock else [])
                if await sleep_unless(wait, *events):
                    if leave.is_set():
                        break
                    if clocked.is_set() and not on_the_agents_clock:
                        wait, on_the_agents_clock = 0, True
                    else:
                        wait = random.uniform(0, flood_rotate[1])
                    continue
                await phone.rotate()
                log.flush()
                wait = random.uniform(*(flood_rotate if flood.is_set() else rotate))
            if leave.is_set():
                off = time.time()
                await phone.enable(False)
                log.write(json.dumps({"off": off, "address": phone.address.hex(), "rpi": phone.rpi.hex()}) + "\n")
                log.flush()
                return
        await asyncio.gather(*(rotations(phone) for phone in phones))
        if watch:
            watch.cancel()
        if leave.is_set():
            print("rclab serve: the phones left the air", flush=True)
        while time.monotonic() < end:
            await asyncio.sleep(min(60, end - time.monotonic()))
    finally:
        rc.stop()


def seconds_range(text):
    """"S" or "SHORTEST-LONGEST" (seconds) as a (shortest, longest) pair."""
    shortest, _, longest = text.partition("-")
    return float(shortest), float(longest or shortest)


def summary(results):
    lines = []
    for r in results:
        if r["experiment"] == "phones":
            lines.append(f"phones: rootcanal {r['cpu']['rootcanal_cpu_percent']} % CPU, bumble {r['cpu']['bumble_cpu_percent']} %")
            for name in ("extended_scan_bt5", "legacy_scan_legacy_only"):
                s = r[name]
                lines.append(f"  {name}: reports/s per phone (filter off) {s['per_phone_reports_per_second_filter_off']}")
                lines.append(f"    gaps {s['per_phone_gap_ms']}")
                for f in s["scans"]:
                    lines.append(f"    scan {f['scan']} dup={'on ' if f['filter_duplicates'] else 'off'} {f['seconds']} s: "
                                 f"{f['reports_of_advertisers']} reports, {f['advertisers_heard']}/{f['advertisers_on_air']} heard, "
                                 f"per advertiser {f['reports_per_advertiser']}, first {f['first_report_ms']} ms")
                lines.append(f"    rssi {s['rssi']}; payloads {s['well_formed']}; event types {s['event_types']}")
        elif r["experiment"] == "extended":
            lines.append(f"extended: max data length {r['max_advertising_data_length']}")
            for s in r["sets"]:
                lines.append(f"  {s['length']:5d} bytes: " + (f"error {s['error']}" if not s["accepted"] else
                             f"{s['events']} events, fragments {s['fragment_lengths']}, whole {s['whole']}, lengths "
                             f"{s['received_lengths']}, status {s['data_status_of_last']}, legacy scanner {s['legacy_scanner_reports']}"))
        elif r["experiment"] == "validation":
            lines.append("validation (status of the last command; what the Core specification asks):")
            for p in r["probes"]:
                lines.append(f"  {p['last']} (spec {p['spec']}) {p['probe']}  [{' '.join(p['statuses'])}]")
        elif r["experiment"] == "crowd":
            lines.append(f"crowd {r['advertisers']} ({r['topology']}, {r.get('controllers')} controllers): "
                         + (f"error {r['error']}" if "error" in r else
                            f"setup {r['setup_seconds']} s, steady {r['steady_cpu']}"))
            for f in r.get("scans", []):
                lines.append(f"  scan dup={'on ' if f['filter_duplicates'] else 'off'} {f['seconds']} s: "
                             f"{f['advertisers_heard']}/{f['advertisers_on_air']} heard, "
                             f"{f['reports_per_advertiser_per_second']} reports/advertiser/s, gaps {f['gap_ms']}")
            if "flood" in r:
                lines.append(f"  flood: {r['flood']}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("measure", "phones", "extended", "validation", "crowd", "serve"))
    parser.add_argument("--out", default="/tmp/enagent-rootcanal")
    parser.add_argument("--crowds", default="50,100,300")
    parser.add_argument("--topologies", default="sets,controllers")
    parser.add_argument("--max-controllers", type=int, default=300, help="skip a crowd that needs more controllers")
    parser.add_argument("--rotate", default="6", help="seconds between rotations: S, or SHORTEST-LONGEST at random (serve)")
    parser.add_argument("--flood-rotate", help="seconds between rotations from SIGUSR2 on: S, or SHORTEST-LONGEST (serve)")
    parser.add_argument("--agents-clock", help="the guest's manifest, whose phase \"clock\" the phones' intervals follow once it is there (serve)")
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--crowd", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM (guest.sh's end) as ^C: the experiments' `finally` stops RootCanal.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    if args.mode == "serve":
        return asyncio.run(serve(args.out, args.crowd, seconds_range(args.rotate), args.seconds,
                                 seconds_range(args.flood_rotate) if args.flood_rotate else None, args.agents_clock))
    results = []
    header = {"date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "uname": os.uname().release, "nproc": os.cpu_count(),
              "loadavg_at_start": open("/proc/loadavg").read().split()[:3]}
    if args.mode in ("measure", "phones"):
        results.append(asyncio.run(experiment_phones(args.out, rotate=seconds_range(args.rotate)[0])))
    if args.mode in ("measure", "extended"):
        results.append(asyncio.run(experiment_extended(args.out)))
    if args.mode in ("measure", "validation"):
        results.append(asyncio.run(experiment_validation(args.out)))
    if args.mode in ("measure", "crowd"):
        for count in [int(c) for c in args.crowds.split(",") if c]:
            for topology in args.topologies.split(","):
                needed = math.ceil(count / (EXTENDED_SETS if topology == "sets" else 1)) + 1
                if needed > args.max_controllers + 1:
                    results.append({"experiment": "crowd", "advertisers": count, "topology": topology,
                                    "controllers": needed, "error": f"skipped: more than --max-controllers"})
                    continue
                try:
                    results.append(asyncio.run(experiment_crowd(args.out, count, topology)))
                except Exception as error:  # a crowd too large for this host is a figure too
                    results.append({"experiment": "crowd", "advertisers": count, "topology": topology,
                                    "controllers": needed, "error": repr(error)})
                print(summary(results[-1:]), flush=True)
    header["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
    with open(os.path.join(args.out, f"results-{args.mode}.json"), "w") as f:
        json.dump({"header": header, "results": results}, f, indent=1, default=str)
    text = summary(results)
    with open(os.path.join(args.out, f"summary-{args.mode}.txt"), "w") as f:
        f.write(json.dumps(header) + "\n" + text + "\n")
    print(json.dumps(header))
    print(text)


if __name__ == "__main__":
    main()
