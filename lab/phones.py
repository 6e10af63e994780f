"""phones.py OUT ORIGIN SCALE MODE SECONDS hciN...: phones on emulated controllers, in the guest.

Each advertising set is one phone with a TEK of its own; its RPI and AEM are derived for the
agents' current EN interval (their clock: ORIGIN + SCALE x (real - ORIGIN)) with onair.py's own
HKDF/AES, not enagent's. The sets are programmed with raw HCI commands (LE Set Extended
Advertising Parameters/Data/Enable, legacy non-connectable PDUs, a random address per set), so
that malformed payloads go out too, which the kernel's management interface refuses. Every set is
switched off and on every second (Controller.repeat: btvirt reports a set once per enable, a
real advertiser every 100-270 ms).

MODE phones: what phones send, one set each for SECONDS: an iPhone (Flags 0x1A first), an Android
phone (no Flags), extra AD structures in another order, and the malformed: FD6F service data of 19
and of 21 bytes, another UUID, a structure cut short.
MODE crowd: every set of every controller (3 each in btvirt) as an iPhone, rotating to a new
address, TEK-derived RPI and AEM every second EN interval, for SECONDS.
phones.py beacons OUT hciN: until stopped (SIGTERM), the scannable advertisers of a street on
controller hciN: ADV_SCAN_IND and ADV_IND with scan response data (a BT 4.x controller takes them
in turns, a second each), from static random addresses. btvirt answers an active scanner's scan
of them with a scan response, which the report pairs with the scan's own address. The controller
going away (the lab's unplug) is waited out: the beacons come back with it.
phones.py flood OUT SECONDS hciN...: a flood of fresh advertisers, for SECONDS: every set of every
controller given a new address and a fresh RPI (of a new TEK) as fast as the controllers take it,
with no pause, as a crowded station's phones would in a minute's rotations. Nothing is logged per
advertisement (no agent could keep them all); the phase "flood" of the run's manifest counts them.
phones.py export PHONES.JSONL ZIP: an unsigned key export (export.bin in a zip) of every phone's
TEK, as a health authority would publish them (enctl keys sign signs it).

Appends one JSON object per advertisement to OUT/phones.jsonl: controller, kind, well-formed,
TEK (hex), rolling start, interval, address, RPI, and the unix times it went on and off the air."""
import json, os, socket, struct, sys, time
import onair

EXTENDED_ADVERTISING_SETS = 3  # btvirt's MAX_EXT_ADV_SETS
UNKNOWN_COMMAND, COMMAND_DISALLOWED = 0x01, 0x0C


class HCIError(RuntimeError):
    def __init__(self, name, opcode, status):
        super().__init__(f"{name}: HCI command 0x{opcode:04x} failed with status 0x{status:02x}")
        self.status = status


class Controller:
    def __init__(self, name):
        self.name = name
        self.socket = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW, socket.BTPROTO_HCI)
        self.socket.bind((int(name.removeprefix("hci")),))
        # Event packets only, every event.
        self.socket.setsockopt(socket.SOL_HCI, socket.HCI_FILTER, struct.pack("<IIIHxx", 1 << 4, 0xFFFFFFFF, 0xFFFFFFFF, 0))
        self.socket.settimeout(5)
        # A BT 4.x controller (btvirt -L) knows only the legacy commands: one advertiser, handle 0.
        try:
            self.command(0x203B, b"")  # LE Read Number of Supported Advertising Sets
            self.sets = EXTENDED_ADVERTISING_SETS
        except HCIError as error:
            if error.status != UNKNOWN_COMMAND:
                raise
            self.sets = None

    @property
    def handles(self):
        return range(self.sets or 1)

    def command(self, opcode, parameters):
        self.socket.send(bytes([0x01]) + struct.pack("<HB", opcode, len(parameters)) + parameters)
        while True:
            event = self.socket.recv(300)
            if event[1] == 0x0E and struct.unpack("<H", event[4:6])[0] == opcode:
                status = event[6]
            elif event[1] == 0x0F and struct.unpack("<H", event[5:7])[0] == opcode:
                status = event[3]
            else:
                continue
            if status:
                raise HCIError(self.name, opcode, status)
            return

    def advertise(self, handle, address, data):
        """(Re)programs set `handle`: legacy ADV_NONCONN_IND every 100 ms from `address`."""
        if self.sets is None:
            return self.advertise_legacy(address, data)
        try:
            self.command(0x2039, bytes([0x00, 0x01, handle, 0, 0, 0]))  # a set's address changes only while it is off
        except RuntimeError:
            pass  # a set never used before
        parameters = struct.pack("<BH", handle, 0x0010) + (0xA0).to_bytes(3, "little") * 2 \
            + bytes([0x07, 0x01, 0x00]) + bytes(6) + bytes([0x00, 0x7F, 0x01, 0x00, 0x01, handle, 0x00])
        self.command(0x2036, parameters)
        self.command(0x2035, bytes([handle]) + address[::-1])
        self.command(0x2037, bytes([handle, 0x03, 0x01, len(data)]) + data)
        self.command(0x2039, bytes([0x01, 0x01, handle, 0, 0, 0]))

    def disable_legacy(self):
        try:
            self.command(0x200A, b"\x00")
        except HCIError as error:
            if error.status != COMMAND_DISALLOWED:  # btvirt's answer when it was not advertising
                raise

    def advertise_legacy(self, address, data):
        """The legacy commands: the address changes only while advertising is off."""
        self.disable_legacy()
        self.command(0x2005, address[::-1])
        self.command(0x2006, struct.pack("<HH", 0xA0, 0xA0) + bytes([0x03, 0x01, 0x00]) + bytes(6) + bytes([0x07, 0x00]))
        self.command(0x2008, bytes([len(data)]) + data + bytes(31 - len(data)))
        self.command(0x200A, b"\x01")

    def beacon(self, handle, properties, address, data, response):
        """(Re)programs set `handle` as a scannable legacy advertiser (`properties`: 0x0012
        ADV_SCAN_IND, 0x0013 ADV_IND) with `response` as its scan response data."""
        if self.sets is None:
            self.disable_legacy()
            self.command(0x2005, address[::-1])
            self.command(0x2006, struct.pack("<HH", 0xA0, 0xA0) + bytes([0x02 if properties == 0x0012 else 0x00, 0x01, 0x00]) + bytes(6) + bytes([0x07, 0x00]))
            self.command(0x2008, bytes([len(data)]) + data + bytes(31 - len(data)))
            self.command(0x2009, bytes([len(response)]) + response + bytes(31 - len(response)))
            return self.command(0x200A, b"\x01")
        try:
            self.command(0x2039, bytes([0x00, 0x01, handle, 0, 0, 0]))
        except RuntimeError:
            pass  # a set never used before
        parameters = struct.pack("<BH", handle, properties) + (0xA0).to_bytes(3, "little") * 2 \
            + bytes([0x07, 0x01, 0x00]) + bytes(6) + bytes([0x00, 0x7F, 0x01, 0x00, 0x01, handle, 0x00])
        self.command(0x2036, parameters)
        self.command(0x2035, bytes([handle]) + address[::-1])
        self.command(0x2037, bytes([handle, 0x03, 0x01, len(data)]) + data)
        self.command(0x2038, bytes([handle, 0x03, 0x01, len(response)]) + response)
        self.command(0x2039, bytes([0x01, 0x01, handle, 0, 0, 0]))

    def stop(self, handle):
        if self.sets is None:
            return self.disable_legacy()
        self.command(0x2039, bytes([0x00, 0x01, handle, 0, 0, 0]))

    def repeat(self, handles):
        """Off and on again: btvirt reports a set to scanners only when it is enabled (or a scan
        is), once, where a real advertiser repeats every 100-270 ms; that one report can race the
        scanner's kernel entering discovery and be dropped. Same address, same data."""
        if self.sets is None:
            self.disable_legacy()
            return self.command(0x200A, b"\x01")
        sets = b"".join(bytes([handle, 0, 0, 0]) for handle in handles)
        self.command(0x2039, bytes([0x00, len(handles)]) + sets)
        self.command(0x2039, bytes([0x01, len(handles)]) + sets)


def non_resolvable_address():
    while True:
        address = bytearray(os.urandom(6))
        address[0] &= 0x3F
        if address[1:] != bytes(5) and address[1:] != b"\xff" * 5:
            return bytes(address)


def en_data(key, interval):
    rpik, aemk = onair.hkdf(key, b"EN-RPIK"), onair.hkdf(key, b"EN-AEMK")
    rpi = onair.aes("ecb", rpik, b"EN-RPI" + bytes(6) + struct.pack("<I", interval))
    aem = onair.aes("ctr", aemk, bytes([0x40, 0x00, 0x00, 0x00]), iv=rpi)
    return rpi, aem


# (kind, well-formed, AD bytes from RPI ‖ AEM)
KINDS = [
    ("iphone", True, lambda s: bytes.fromhex("02011a03036ffd17166ffd") + s),
    ("android", True, lambda s: bytes.fromhex("03036ffd17166ffd") + s),
    # Service data first, then the UUID list and a TX Power Level structure: 31 bytes.
    ("reordered-extra", True, lambda s: bytes.fromhex("17166ffd") + s + bytes.fromhex("03036ffd") + bytes.fromhex("020a00")),
    ("service-data-19", False, lambda s: bytes.fromhex("03036ffd16166ffd") + s[:19]),
    ("service-data-21", False, lambda s: bytes.fromhex("03036ffd18166ffd") + s + b"\x00"),
    ("another-uuid", False, lambda s: bytes.fromhex("03036efd17166efd") + s),
    ("cut-short", False, lambda s: bytes.fromhex("03036ffd17166ffd") + s[:10]),
]


def varint(value):
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def field(number, wire_type, payload):
    if wire_type == 2:
        payload = varint(len(payload)) + payload
    return varint(number << 3 | wire_type) + payload


def export(phones_jsonl, path):
    export_keys({p["tek"]: p["rollingStart"] for p in map(json.loads, open(phones_jsonl))}, path)


def export_keys(rolling_starts, path):
    """An unsigned key export of each TEK (hex) of `rolling_starts` from its rolling start, for a day,
    reported as a confirmed test."""
    import zipfile
    keys = b"".join(field(7, 2, field(1, 2, bytes.fromhex(tek)) + field(3, 0, varint(start))
                                + field(4, 0, varint(144)) + field(5, 0, varint(1)))
                    for tek, start in rolling_starts.items())
    now = int(time.time())
    body = field(1, 1, struct.pack("<Q", now - 86400)) + field(2, 1, struct.pack("<Q", now)) + field(3, 2, b"LAB") \
        + field(4, 0, varint(1)) + field(5, 0, varint(1)) + keys
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("export.bin", b"EK Export v1    " + body)


# (PDU properties, static random address, advertising data, scan response data): a tracker tag and
# a TV, say. Their data names no EN service.
BEACONS = [
    (0x0012, bytes.fromhex("c1b0000000a1"), bytes.fromhex("020106") + bytes.fromhex("07ff4c0012020000"), bytes.fromhex("0709") + b"beacon"),
    (0x0013, bytes.fromhex("c1b0000000a2"), bytes.fromhex("020106") + bytes.fromhex("0303aafe"), bytes.fromhex("0309") + b"tv"),
]


def beacons(out, name):
    """Keeps BEACONS on the air on `name` until SIGTERM; writes the phase "beacons" to the run's
    manifest (OUT/phases.jsonl, as agent-lib.sh's phase does) when first on."""
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    controller, turn, announced = None, 0, False
    while True:
        try:
            if controller is None:
                controller = Controller(name)
            if controller.sets is None:
                controller.beacon(0, *BEACONS[turn % len(BEACONS)])
            else:
                for handle, beacon in enumerate(BEACONS):
                    controller.beacon(handle, *beacon)
            if not announced:
                with open(f"{out}/phases.jsonl", "a") as manifest:
                    manifest.write(json.dumps({"phase": "beacons", "realtime": time.time(), "monotonic": time.monotonic(),
                                               "adapter": name, "advertisers": len(BEACONS)}) + "\n")
                announced = True
            turn += 1
        except (OSError, HCIError):
            # Unplugged, or not yet back: the socket goes with the controller.
            if controller is not None:
                controller.socket.close()
            controller = None
        time.sleep(1.0)


def flood(out, seconds, names):
    """Fresh advertisers on every set of `names` for `seconds`, as fast as the controllers take
    them; writes the phase "flood" (how many, for how long) to the run's manifest."""
    controllers = [Controller(name) for name in names]
    slots = [(controller, handle) for controller in controllers for handle in controller.handles]
    started, fresh = time.time(), 0
    while time.time() < started + seconds:
        for controller, handle in slots:
            rpi, aem = en_data(os.urandom(16), int(time.time() // 600))
            controller.advertise(handle, non_resolvable_address(), KINDS[0][2](rpi + aem))
            fresh += 1
    for controller, handle in slots:
        controller.stop(handle)
    ended = time.time()
    with open(f"{out}/phases.jsonl", "a") as manifest:
        manifest.write(json.dumps({"phase": "flood", "realtime": ended, "monotonic": time.monotonic(), "adapters": names,
                                   "started": started, "advertisers": fresh,
                                   "per_minute": round(fresh * 60 / (ended - started))}) + "\n")


def main():
    if sys.argv[1] == "flood":
        return flood(sys.argv[2], float(sys.argv[3]), sys.argv[4:])
    if sys.argv[1] == "export":
        return export(sys.argv[2], sys.argv[3])
    if sys.argv[1] == "beacons":
        return beacons(sys.argv[2], sys.argv[3])
    out, origin, scale, mode, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    controllers = [Controller(name) for name in sys.argv[6:]]
    slots = [(controller, handle) for controller in controllers for handle in controller.handles]
    agent_now = lambda: origin + scale * (time.time() - origin)
    log = open(f"{out}/phones.jsonl", "a")
    ends = time.time() + seconds
    plan = KINDS if mode == "phones" else None
    if plan and len(plan) > len(slots):
        sys.exit(f"phones.py: {len(plan)} phones need {len(plan)} advertising sets, the controllers have {len(slots)}")
    live, next_rotation = {}, time.time()
    while time.time() < ends:
        if time.time() >= next_rotation:
            interval = int(agent_now() // 600)
            chosen = slots if mode == "crowd" else slots[:len(plan)]
            # Derived before the radio is touched, so that the sets change within moments of each other.
            fresh = []
            for index, (controller, handle) in enumerate(chosen):
                kind, well_formed, build = ("crowd-iphone", True, KINDS[0][2]) if mode == "crowd" else plan[index]
                key, address = os.urandom(16), non_resolvable_address()
                rpi, aem = en_data(key, interval)
                fresh.append((controller, handle, kind, well_formed, key, address, rpi, build(rpi + aem)))
            for controller, handle, kind, well_formed, key, address, rpi, data in fresh:
                previous = live.get((controller.name, handle))
                controller.advertise(handle, address, data)
                now = time.time()
                if previous:
                    previous["off"] = now
                    log.write(json.dumps(previous) + "\n")
                live[(controller.name, handle)] = {
                    "controller": controller.name, "set": handle, "kind": kind, "wellFormed": well_formed, "tek": key.hex(),
                    "rollingStart": interval - interval % 144, "interval": interval, "address": address.hex(":"),
                    "rpi": rpi.hex(), "on": now}
            # A new RPI and address every second EN interval of the agents' clock (real phones:
            # every 10-20 minutes); the phones keep theirs.
            next_rotation = ((interval + 2) * 600 - origin) / scale + origin if mode == "crowd" else ends
        else:
            for controller in controllers:
                handles = [handle for (name, handle) in live if name == controller.name]
                if handles:
                    controller.repeat(handles)
        time.sleep(max(0.05, min(1.0, next_rotation - time.time(), ends - time.time())))
    for (name, handle), record in live.items():
        next(c for c in controllers if c.name == name).stop(handle)
        record["off"] = time.time()
        log.write(json.dumps(record) + "\n")
    log.close()


if __name__ == "__main__":
    main()
