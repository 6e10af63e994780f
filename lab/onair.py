"""onair.py: what went on the air, from btmon's btsnoop capture, checked against the EN
Bluetooth Specification v1.2 (protocol.md §2) without any of enagent's own code.

The HCI commands each controller received are decoded here from the raw bytes: advertising
parameters (PDU type, interval, own address type), the advertising set's random address, the
advertising data, the TX power the controller selected, and the scan parameters. The RPIs and
the metadata are derived from the agents' TEKs with the standard library's HMAC (HKDF) and Debian's python3-cryptography (AES),
an implementation independent of enagent's."""
import calendar, functools, hashlib, hmac, math, os, struct, time
from collections import Counter
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

# btsnoop with the Linux monitor's datalink (2001): a record's flags carry the controller index
# (high 16 bits) and the monitor opcode (low 16 bits).
COMMAND, EVENT = 2, 3
SET_ADV_SET_RANDOM_ADDRESS, SET_EXT_ADV_PARAMETERS, SET_EXT_ADV_DATA, SET_EXT_SCAN_PARAMETERS = 0x2035, 0x2036, 0x2037, 0x2041
# The legacy commands (BT 4.x controllers): one random address for the whole controller, taken only
# while neither advertising nor scanning runs (the controller answers Command Disallowed otherwise).
SET_RANDOM_ADDRESS, SET_ADV_PARAMETERS, SET_ADV_DATA, SET_SCAN_PARAMETERS = 0x2005, 0x2006, 0x2008, 0x200B
ADV_NONCONN_IND, LEGACY_NONCONN_PROPERTIES, READ_ADV_TX_POWER = 0x03, 0x0010, 0x2007
# Selected_TX_Power of a controller that has no preference to tell (the kernel's "no preference").
UNSELECTED_TX_POWER = 127
# LE Meta Event subevents, and the legacy report's event type of a scan response.
LE_ADVERTISING_REPORT, LE_EXTENDED_ADVERTISING_REPORT, SCAN_RSP = 0x02, 0x0D, 0x04
LEGACY_KERNEL_INTERVAL = (100.0, 150.0)
EN_PREFIX = bytes.fromhex("03036ffd17166ffd")


# btsnoop timestamps count microseconds from the year 0 (0x00DCDDB30F2F8000 is 1970).
BTSNOOP_EPOCH_MICROSECONDS = 0x00DCDDB30F2F8000


def unix_seconds(timestamp):
    return (timestamp - BTSNOOP_EPOCH_MICROSECONDS) / 1e6


# The monitor channel's opcode of a program's log line (bluetoothd's), which the kernel passes on
# unstamped (net/bluetooth/hci_sock.c hci_logging_frame), so that btmon's read stamps it.
USER_LOGGING = 13


def records(path, follow=None):
    """(index, opcode, timestamp, payload) of every frame, in the order btmon wrote them (`frames`);
    a finished capture is read once, however many questions a report asks of it."""
    if follow is not None:
        return frames(path, follow)
    status = os.stat(path)
    return iter(captured(path, status.st_mtime_ns, status.st_size))


@functools.lru_cache(maxsize=2)
def captured(path, modified, size):
    """The frames of the capture at `path` as it was when modified at `modified`, `size` bytes long."""
    return tuple(frames(path))


def frames(path, follow=None):
    """(index, opcode, timestamp, payload) of every frame, in the order btmon wrote them. The
    kernel stamps HCI and management frames as they happen (hci_send_frame, hci_recv_frame), but
    a log line when btmon reads it: in the flood lab's guest btmon read up to 284 s behind, so a
    log line takes the stamp of the kernel's frame before it (its lower bound; HCI frames were
    never out of order by more than a second there, while log lines ran minutes ahead of them).
    `follow`: called each time the frames written so far are read, after which those btmon wrote
    meanwhile are read (each frame once), for as long as it returns."""
    with open(path, "rb") as capture:
        data = capture.read()
        if data[:8] != b"btsnoop\0":
            raise ValueError(f"{path} is not a btsnoop file")
        position, latest = 16, None
        while True:
            while position + 24 <= len(data):
                _, included, flags, _ = struct.unpack(">IIII", data[position:position + 16])
                if position + 24 + included > len(data):
                    break  # written in part so far
                timestamp = struct.unpack(">q", data[position + 16:position + 24])[0]
                if flags & 0xFFFF == USER_LOGGING and latest is not None:
                    timestamp = latest
                else:
                    latest = timestamp if latest is None else max(latest, timestamp)
                yield flags >> 16, flags & 0xFFFF, timestamp, data[position + 24:position + 24 + included]
                position += 24 + included
            if follow is None:
                return
            follow()
            data = data[position:] + capture.read()
            position = 0


def hkdf(key, info):
    pseudo_random = hmac.new(b"\0" * 32, key, hashlib.sha256).digest()
    return hmac.new(pseudo_random, info + b"\x01", hashlib.sha256).digest()[:16]


def aes(mode, key, data, iv=None):
    encryptor = Cipher(algorithms.AES(key), modes.ECB() if mode == "ecb" else modes.CTR(iv)).encryptor()
    return encryptor.update(data) + encryptor.finalize()


def identifiers(keys):
    """RPI -> (AEM key, interval, TEK) for every interval of every (key, start, period)."""
    table = {}
    for key, start, period in keys:
        rpik, aemk = hkdf(key, b"EN-RPIK"), hkdf(key, b"EN-AEMK")
        blocks = b"".join(b"EN-RPI" + b"\0" * 6 + struct.pack("<I", start + j) for j in range(period))
        out = aes("ecb", rpik, blocks)
        for j in range(period):
            table[out[16 * j:16 * j + 16]] = (aemk, start + j, key)
    return table


def advertisements(path, controllers):
    """Every EN advertising data set on `controllers` (indexes), with the parameters, random
    address and selected TX power in force for its advertising set at that moment; and the scan
    responses they heard, each (index, time, own address type of the scan that asked for it):
    a scan response answers the controller's SCAN_REQ, which carried that address (None: the scan
    was passive and sent none; btvirt 5.66 still labels some of a passive scanner's reports as scan
    responses: emulator/btdev.c le_set_ext_adv_enable_complete turns report_type into the scan
    response's for an active scanner and keeps it for the scanners after it in its loop)."""
    found, scans, refused, terminated, scan_responses = [], [], [], [], []
    scan_own_type = {}  # index -> own address type of the scan enabled last
    state = {}  # (index, handle) -> dict; legacy advertising is handle None
    last_parameters = {}  # index -> handle of the last Set Extended Advertising Parameters
    pending = {}  # index -> (command, parameters) awaiting its Command Complete
    # What the Core spec lets a controller refuse LE Set Random Address for: scanning or legacy
    # advertising enabled (Vol 4 Part E 7.8.4). A refusal without either is the controller's fault.
    scanning, legacy_advertising, last_refusal, public_scans = {}, {}, {}, []
    # index -> the last scan parameters sent, and (time, excused) when active from the public address:
    # a scan counts once it is enabled.
    scan_parameters, public_parameters = {}, {}
    channel_power = {}  # index -> the TX power the last LE Read Advertising Physical Channel Tx Power gave
    for index, opcode, timestamp, payload in records(path):
        if index not in controllers or len(payload) < 3:
            continue
        if opcode == COMMAND:
            command, parameters = struct.unpack("<H", payload[:2])[0], payload[3:]
            pending[index] = (command, parameters)
            if command == SET_EXT_ADV_PARAMETERS and len(parameters) >= 20:
                handle = parameters[0]
                state[(index, handle)] = {
                    "properties": struct.unpack("<H", parameters[1:3])[0],
                    "interval": (int.from_bytes(parameters[3:6], "little") * 0.625, int.from_bytes(parameters[6:9], "little") * 0.625),
                    "own_address_type": parameters[10], "address": None, "tx_power": None}
                last_parameters[index] = handle
            elif command == SET_ADV_SET_RANDOM_ADDRESS and len(parameters) >= 7:
                state.setdefault((index, parameters[0]), {})["address"] = parameters[1:7][::-1]
            elif command == SET_EXT_ADV_DATA and len(parameters) >= 4:
                data = bytes(parameters[4:4 + parameters[3]])
                if EN_PREFIX in data:
                    found.append({"controller": index, "time": timestamp, "data": data, **state.get((index, parameters[0]), {})})
                    # A controller that does not say (127: RootCanal answers the 127 the kernel
                    # asks for) leaves the agent the channel's power, which it reads between the
                    # parameters and the data (docs/radio.md).
                    if found[-1].get("tx_power") == UNSELECTED_TX_POWER:
                        found[-1]["tx_power"] = channel_power.get(index, UNSELECTED_TX_POWER)
            elif command == SET_ADV_PARAMETERS and len(parameters) >= 15:
                legacy = state.setdefault((index, None), {"address": None, "tx_power": None})
                legacy["properties"] = LEGACY_NONCONN_PROPERTIES if parameters[4] == ADV_NONCONN_IND else 0x0100 | parameters[4]
                legacy["interval"] = tuple(struct.unpack("<H", parameters[i:i + 2])[0] * 0.625 for i in (0, 2))
                legacy["own_address_type"] = parameters[5]
            elif command == SET_ADV_DATA and len(parameters) >= 1:
                state.setdefault((index, None), {"address": None, "tx_power": None})["data"] = bytes(parameters[1:1 + parameters[0]])
            if command in (SET_EXT_SCAN_PARAMETERS, SET_SCAN_PARAMETERS) and len(parameters) >= 7:
                own_type, active = (parameters[0], parameters[3]) if command == SET_EXT_SCAN_PARAMETERS else (parameters[5], parameters[0])
                if active and own_type == 0:
                    refusal = last_refusal.get(index)
                    recent = refusal is not None and timestamp - refusal[0] < 1_000_000
                    public_parameters[index] = (timestamp, recent and refusal[1])
                else:
                    public_parameters.pop(index, None)
            if command == SET_EXT_SCAN_PARAMETERS and len(parameters) >= 8:
                scan_parameters[index] = (index, parameters[0], parameters[3], struct.unpack("<H", parameters[4:6])[0] * 0.625,
                                          struct.unpack("<H", parameters[6:8])[0] * 0.625)
            elif command == SET_SCAN_PARAMETERS and len(parameters) >= 7:
                scan_parameters[index] = (index, parameters[5], parameters[0], struct.unpack("<H", parameters[1:3])[0] * 0.625,
                                          struct.unpack("<H", parameters[3:5])[0] * 0.625)
        elif opcode == EVENT and payload[0] == 0x3E and len(payload) >= 6 and payload[2] in (LE_ADVERTISING_REPORT, LE_EXTENDED_ADVERTISING_REPORT):
            # The first report of the event (btvirt sends one per event): SCAN_RSP, or an
            # extended report's scan response bit.
            if payload[2] == LE_ADVERTISING_REPORT and payload[4] == SCAN_RSP \
                    or payload[2] == LE_EXTENDED_ADVERTISING_REPORT and struct.unpack("<H", payload[4:6])[0] & 0x0008:
                scan_responses.append((index, timestamp, scan_own_type.get(index)))
        elif opcode == EVENT and payload[0] == 0x3E and len(payload) >= 4 and payload[2] == 0x12 and payload[3] != 0:
            # LE Advertising Set Terminated with an error status: the controller ended a set.
            terminated.append((index, payload[4], payload[3]))
        elif opcode == EVENT and payload[0] == 0x0E and len(payload) >= 6:
            command, status = struct.unpack("<H", payload[3:5])[0], payload[5]
            if command == SET_EXT_ADV_PARAMETERS and status == 0 and len(payload) >= 7 and index in last_parameters:
                state[(index, last_parameters[index])]["tx_power"] = struct.unpack("b", payload[6:7])[0]
            sent = pending.pop(index, None)
            if not sent or sent[0] != command:
                continue
            legacy = state.setdefault((index, None), {"address": None, "tx_power": None})
            if command == SET_ADV_ENABLE and status == 0 and sent[1]:
                legacy_advertising[index] = bool(sent[1][0])
            if command == SET_RANDOM_ADDRESS and len(sent[1]) >= 6:
                if status == 0:  # a refused address leaves the old one in force
                    legacy["address"] = sent[1][:6][::-1]
                else:
                    refused.append((index, timestamp, status))
                    last_refusal[index] = (timestamp, not scanning.get(index) and not legacy_advertising.get(index))
            elif command in (SET_SCAN_ENABLE, SET_EXT_SCAN_ENABLE) and status == 0 and sent[1]:
                scanning[index] = bool(sent[1][0])
                # Scan requests go out only once the scan is enabled: parameters the kernel sent
                # as the controller went away (rfkill) and never enabled put nothing on the air.
                if scanning[index] and index in public_parameters:
                    public_scans.append((index,) + public_parameters.pop(index))
                if scanning[index] and index in scan_parameters:
                    # A passive scan sends no SCAN_REQ: no own address goes out (None).
                    scan_own_type[index] = scan_parameters[index][1] if scan_parameters[index][2] else None
                    scans.append(scan_parameters.pop(index))
            elif command == READ_ADV_TX_POWER and status == 0 and len(payload) >= 7:
                legacy["tx_power"] = channel_power[index] = struct.unpack("b", payload[6:7])[0]
            elif command == SET_ADV_ENABLE and status == 0 and sent[1][:1] == b"\x01" and EN_PREFIX in legacy.get("data", b""):
                # The kernel sets a legacy advertisement's data before its address and parameters:
                # what goes on the air is what is in force when advertising is enabled.
                found.append({"controller": index, "time": timestamp, "legacy": True, **legacy})
    return found, scans, refused, terminated, public_scans, scan_responses


def check(advertisement, table):
    """What is wrong with one EN advertisement, as a list of reasons (empty: conforms)."""
    problems = []
    data = advertisement["data"]
    if advertisement.get("properties") != 0x0010:
        problems.append(f"PDU properties 0x{advertisement.get('properties') or 0:04x}, not legacy ADV_NONCONN_IND (0x0010)")
    low, high = advertisement.get("interval") or (0, 0)
    if advertisement.get("legacy"):
        # Linux (6.1 to this day, hci_enable_advertising_sync) gives non-connectable legacy
        # advertising of an adapter that is not discoverable 100-150 ms, whatever the instance
        # asked for; discoverable needs connectable, which would send the RPI in connectable PDUs.
        if (low, high) != LEGACY_KERNEL_INTERVAL:
            problems.append(f"interval {low:.1f}-{high:.1f} ms, not the kernel's 100-150 ms for legacy advertising")
    elif not 200 <= low <= high <= 270:
        problems.append(f"interval {low:.1f}-{high:.1f} ms, not within 200-270 ms")
    address = advertisement.get("address")
    if advertisement.get("own_address_type") != 1 or address is None or address[0] >> 6 != 0:
        problems.append(f"address {address.hex(':') if address else None} (own type {advertisement.get('own_address_type')}) is not non-resolvable random")
    if len(data) != 31 or data[:2] != b"\x02\x01" or not data[2] & 0x02 or data[3:11] != EN_PREFIX:
        problems.append(f"AD bytes {data.hex()} are not Flags (general discoverable) ‖ 03036ffd ‖ 17166ffd ‖ RPI ‖ AEM (31 bytes)")
    rpi, aem = data[11:27], data[27:31]
    if rpi not in table:
        problems.append(f"RPI {rpi.hex()} derives from no agent's TEK")
    else:
        aemk = table[rpi][0]
        metadata = aes("ctr", aemk, aem, iv=rpi)
        power = struct.unpack("b", metadata[1:2])[0]
        if metadata[0] not in (0x40, 0x50):
            problems.append(f"metadata version byte 0x{metadata[0]:02x}")
        if power != advertisement.get("tx_power"):
            problems.append(f"metadata TX power {power} dBm, the controller selected {advertisement.get('tx_power')} dBm")
    return problems


SET_EXT_ADV_ENABLE, SET_ADV_ENABLE, SET_EXT_SCAN_ENABLE, SET_SCAN_ENABLE, RESET = 0x2039, 0x200A, 0x2042, 0x200C, 0x0C03


def radio_state(path, controller):
    """(advertising, scanning) of one controller at the end of the capture, by the commands it
    accepted: the radio's own record, which neither bluetoothd nor the kernel's instance list
    can get wrong (Read Advertising Features hides instances numbered above the instance count)."""
    changes = radio_changes(path, controller)
    return changes[-1][1:] if changes else (False, False)


def linked(pairs):
    """From (address, RPI) pairs: RPI -> addresses, address -> RPIs, and those a phone could link
    (an RPI on several addresses, an address with several RPIs)."""
    by_rpi, by_address = {}, {}
    for address, rpi in pairs:
        by_rpi.setdefault(rpi, set()).add(address)
        by_address.setdefault(address, set()).add(rpi)
    return (by_rpi, by_address, {rpi: found for rpi, found in by_rpi.items() if len(found) > 1},
            {address: found for address, found in by_address.items() if len(found) > 1})


ADV_SET_TERMINATED = "LE Advertising Set Terminated"


def accepted(path, controller, follow=None):
    """(unix time, command, parameters) of every command the controller completed with success, in
    order; an LE Advertising Set Terminated event comes as (time, ADV_SET_TERMINATED, [handle])."""
    pending = None
    for index, opcode, timestamp, payload in records(path, follow):
        if index != controller or len(payload) < 3:
            continue
        if opcode == COMMAND:
            pending = (struct.unpack("<H", payload[:2])[0], payload[3:])
        elif opcode == EVENT and payload[0] == 0x3E and len(payload) >= 5 and payload[2] == 0x12:
            yield unix_seconds(timestamp), ADV_SET_TERMINATED, payload[4:5]
        elif opcode == EVENT and payload[0] == 0x0E and len(payload) >= 6 and pending and payload[5] == 0 \
                and struct.unpack("<H", payload[3:5])[0] == pending[0]:
            yield (unix_seconds(timestamp),) + pending


def sets_enabled_after(enabled, parameters):
    """The advertising set handles enabled after an accepted LE Set Extended Advertising Enable of
    these parameters (a disable naming no set disables every one)."""
    handles = {parameters[2 + 4 * i] for i in range(parameters[1]) if 2 + 4 * i < len(parameters)}
    if parameters[0]:
        return enabled | handles
    return enabled - handles if parameters[1] else set()


def radio_states(path, controller, follow=None):
    """(unix time, command, advertising, scanning) after every command the controller accepted."""
    enabled_sets, scanning = set(), False
    for time, command, parameters in accepted(path, controller, follow):
        if command == ADV_SET_TERMINATED:
            enabled_sets.discard(parameters[0])
        elif command == SET_EXT_ADV_ENABLE and len(parameters) >= 2:
            enabled_sets = sets_enabled_after(enabled_sets, parameters)
        elif command == SET_ADV_ENABLE and parameters:
            enabled_sets = {0} if parameters[0] else set()
        elif command in (SET_EXT_SCAN_ENABLE, SET_SCAN_ENABLE) and parameters:
            scanning = bool(parameters[0])
        elif command == RESET:
            enabled_sets, scanning = set(), False
        yield time, command, bool(enabled_sets), scanning


def radio_changes(path, controller):
    """Every (unix time, advertising, scanning) the controller went through, in order."""
    changes = []
    for time, _, advertising, scanning in radio_states(path, controller):
        if not changes or changes[-1][1:] != (advertising, scanning):
            changes.append((time, advertising, scanning))
    return changes


def on_again(path, controller, after, since=None):
    """Seconds from `after` (a unix time) until the controller advertised and scanned again: the
    first moment from `after` on at which both were on, each enabled anew since `since` (`after`
    by default; an advertisement or scan left on from before, a killed agent's say, does not
    count), 0 when they already were as `after` came; None if never."""
    since = after if since is None else since
    advertised = scanned = on = False
    for time, command, advertising, scanning in radio_states(path, controller):
        if time < since:
            continue
        if time >= after and on:
            return 0.0
        advertised = advertised or (advertising and command in (SET_EXT_ADV_ENABLE, SET_ADV_ENABLE))
        scanned = scanned or (scanning and command in (SET_EXT_SCAN_ENABLE, SET_SCAN_ENABLE))
        on = advertised and scanned and advertising and scanning
        if on and time >= after:
            return time - after
    return 0.0 if on else None


REMOVE_ADV_SET, CLEAR_ADV_SETS = 0x203C, 0x203D
# The monitor's record of a management event (cookie of the socket, event code, parameters), and
# the kernel's New Settings event with the connectable bit.
CONTROL_EVENT, NEW_SETTINGS, CONNECTABLE = 17, 0x0006, 1 << 1


def settings_changes(path, controller):
    """(unix time, current settings) of every New Settings event the kernel sent for the controller."""
    changes = []
    for index, opcode, timestamp, payload in records(path):
        if index == controller and opcode == CONTROL_EVENT and len(payload) >= 10 and struct.unpack("<H", payload[4:6])[0] == NEW_SETTINGS:
            change = (unix_seconds(timestamp), struct.unpack("<I", payload[6:10])[0])
            if not changes or changes[-1] != change:  # one record per management socket
                changes.append(change)
    return changes


CONTROL_OPEN, CONTROL_COMMAND, SET_POWERED, READ_ADVERTISING_FEATURES, ADD_EXT_ADV_DATA = 14, 16, 0x0005, 0x003D, 0x0055


def from_bluetoothd(path, controller, command, after):
    """The unix time of bluetoothd's first management `command` on the controller at or after the
    unix time `after`, None if it sent none."""
    sockets = set()
    for index, opcode, timestamp, payload in records(path):
        if opcode == CONTROL_OPEN and len(payload) >= 14 and payload[14:14 + payload[13]].rstrip(b"\0") == b"bluetoothd":
            sockets.add(payload[:4])
        elif (opcode == CONTROL_COMMAND and index == controller and payload[:4] in sockets and len(payload) >= 6
              and struct.unpack("<H", payload[4:6])[0] == command and unix_seconds(timestamp) >= after):
            return unix_seconds(timestamp)
    return None


def powered(path, controller, after):
    """The unix time of bluetoothd's first Set Powered (on or off) for the controller at or after
    the unix time `after`, None if it sent none."""
    return from_bluetoothd(path, controller, SET_POWERED, after)


def offered(path, controller, after):
    """The unix time at which bluetoothd offered the controller for advertising at or after the unix
    time `after` (its own Read Advertising Features on it, which bluetoothd sends once it has set
    the adapter up, after a restart or a controller's return), None if it did not."""
    return from_bluetoothd(path, controller, READ_ADVERTISING_FEATURES, after)


def registered(path, controller, after):
    """The unix time at which bluetoothd gave the kernel a program's advertisement for the
    controller (Add Extended Advertising Data) at or after the unix time `after`, None if it did not."""
    return from_bluetoothd(path, controller, ADD_EXT_ADV_DATA, after)


def withdrawals(path, controller):
    """Unix times at which the controller accepted a command that takes advertising off the air:
    advertising disabled (legacy, or extended sets), a set removed, every set cleared."""
    return [time for time, command, parameters in accepted(path, controller)
            if (command in (SET_ADV_ENABLE, SET_EXT_ADV_ENABLE) and parameters[:1] == b"\x00") or command in (REMOVE_ADV_SET, CLEAR_ADV_SETS)]


def scan_windows(path, controller):
    """(start, end) unix times of every scan the controller ran, from the scan enables it accepted;
    one still enabled when the capture ends lasts to the controller's last frame in it."""
    windows, started = [], None
    for time, _, scanning in radio_changes(path, controller):
        if scanning and started is None:
            started = time
        elif not scanning and started is not None:
            windows.append((started, time))
            started = None
    if started is not None:
        windows.append((started, last_frames(path, [controller])[controller]))
    return windows


def report_times(path, controller):
    """Unix times of the controller's advertising reports. A controller reports only while it
    scans, so each proves a scan at its moment: btmon's capture can miss the scan enable itself
    (in the flood lab of 2026-11-29 18:04 it lost the enable of scans that brought 607 of hci0's
    6,256 reports, while that controller's reports went on being recorded)."""
    return [unix_seconds(timestamp) for index, opcode, timestamp, payload in records(path)
            if index == controller and opcode == EVENT and len(payload) >= 3 and payload[0] == 0x3E
            and payload[2] in (LE_ADVERTISING_REPORT, LE_EXTENDED_ADVERTISING_REPORT)]


def scan_moments(path, controller):
    """The controller's scans, sorted: (start, end) of each from the scan enables it accepted, and
    (time, time) of each advertising report it sent (only a scanning controller reports; btmon may
    miss an enable under a flood)."""
    return sorted(scan_windows(path, controller) + [(at, at) for at in report_times(path, controller)])


def last_frames(path, controllers):
    """Unix time of the last frame of each controller in the capture (0 when it has none)."""
    last = {controller: 0.0 for controller in controllers}
    for index, _, timestamp, _ in records(path):
        if index in last:
            last[index] = unix_seconds(timestamp)
    return last


def check_capture(lab, fail, agents, until, bound, end="the run's end", snoop=None):
    """The agents' controllers' frames last in btmon's capture to `until` (unix time), give or take
    `bound` seconds: in one flood run of 2026-11-29 they ended 281 s before it, and in a RootCanal
    crowd of 300 before the crowd began, while bluetoothd's log lines went on being recorded (btmon
    read that far behind, and what it had not read when it stopped was lost). `agents`: name ->
    controller index; `end`: what `until` is; `snoop`: a capture other than btmon's (then btmon's
    end does not matter)."""
    gone = snoop is None and any(entry.get("btmon") is False for entry in lab.entries("end"))
    for controller, at in sorted(last_frames(snoop or lab.snoop, agents.values()).items()):
        print(f"  hci{controller}: the capture's last frame {abs(until - at):.1f} s {'before' if at <= until else 'after'} {end}"
              + ("; btmon was gone at the end" if gone else ""))
        if until - at > bound or gone:
            fail(f"capture: hci{controller}'s frames end {until - at:.0f} s before {end}, so its scans after them cannot be judged "
                 "(dmesg.txt has the kernel's word)")


def check_status_polls(lab, fail, agents, since, snoop=None, to_capture=lambda time: time, slack=0.0):
    """No `enctl status` poll of an agent (the manifest's "status-poll" lines of agent-lib.sh's
    poll_status, each with the moment it began) said Scanning while its controller ran no scan at
    any moment from the poll's start to its answer; polls answered after the capture's last frame
    of the controller are not judged (`check_capture` fails then). `agents`: name -> controller index; `since`:
    the unix time from which the run's lines are told apart (printed relative to it). `snoop`: a
    capture other than btmon's, whose clock `to_capture` turns the guest's times into, known to
    within `slack` seconds either way."""
    snoop = snoop or lab.snoop
    last = last_frames(snoop, agents.values())
    for agent, controller in agents.items():
        scans = scan_moments(snoop, controller)
        polls = [entry for entry in lab.entries("status-poll") if entry["agent"] == agent]
        said = [poll for poll in polls if poll["status"].get("scanning")]
        judged = [poll for poll in said if to_capture(poll["realtime"]) <= last[controller]]
        wrong = [poll for poll in judged
                 if not any(begun <= to_capture(poll["realtime"]) + slack and ended >= to_capture(poll["started"]) - slack for begun, ended in scans)]
        print(f"  {agent}: {len(polls)} polls, {len(said)} said scanning, {len(wrong)} of them while hci{controller} ran no scan"
              + (f" ({len(said) - len(judged)} after the capture's last frame of hci{controller}, not judged: see the capture's check)"
                 if len(judged) < len(said) else ""))
        for poll in wrong[:3]:
            fail(f"status: {agent} said scanning at {poll['started']:.1f}-{poll['realtime']:.1f} (+{poll['started'] - since:.0f} s), "
                 f"and hci{controller} ran no scan then")


# The note of a stalled discovery in an agent's log (BlueZRadio.noteStall), and how often it may
# come: once per run of bluetoothd (the labs' bluetoothd runs throughout their floods and crowds).
STALL_NOTE, STALL_NOTES_AT_MOST = "bluetoothd does not scan on hci", 1
# An agent whose scan stalled scans again within this long (issue 56's bound), plus one pause of the
# lab's scan cycle (lab.conf: 3 s of every 4, at the agents' clock; a real second at most).
RECOVERED_WITHIN = 30.0 + 4.0


def check_scan_stretches(lab, fail, agents, start, end, snoop=None, what="the run"):
    """No stretch from `start` to `end` (unix times, the capture's clock) longer than
    RECOVERED_WITHIN in which an agent's controller ran no scan (its scan enables, and its reports,
    which only a scanning controller sends): issue 56's recovery from a stalled discovery; judged
    to the capture's last frame of the controller (`check_capture` fails when that is early).
    `snoop`: a capture other than btmon's; `what`: what began at `start`."""
    snoop = snoop or lab.snoop
    last = last_frames(snoop, agents.values())
    for agent, controller in agents.items():
        stretches, since, until = [], start, min(end, last[controller])
        for begun, ended in scan_moments(snoop, controller):
            if ended <= start:
                continue
            if begun >= until:
                break
            if begun > since:
                stretches.append((begun - since, since))
            since = max(since, ended)
        if until > since:  # not when the last scan ran past the end
            stretches.append((until - since, since))
        longest = sorted(stretches, reverse=True)[:3]
        during = sum(1 for begun, _ in scan_windows(snoop, controller) if start <= begun <= end)
        print(f"  {agent} (hci{controller}): {during} scans since {what} began; longest stretches without one: "
              + (", ".join(f"{length:.1f} s from +{at - start:.0f} s" for length, at in longest) or "none"))
        for length, at in longest:
            if length > RECOVERED_WITHIN:
                fail(f"scanning: hci{controller} ran no scan for {length:.1f} s from +{at - start:.0f} s after {what} began "
                     f"(at most {RECOVERED_WITHIN:.0f} s)")


def logged_at(line):
    """The unix time of an agent's log line (its stamp is the real clock's, to the millisecond;
    to the second before 2026-12-01)."""
    stamp = line.split()[0]
    seconds, _, fraction = stamp.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(seconds, "%Y-%m-%dT%H:%M:%S")) + (float("0." + fraction) if fraction else 0.0)


# What an agent's log says of its radio: the advertisement's and the scan's phases, and what held them.
RADIO_LINES = ("advertisement:", "advertiser:", "scan:", "scan on", "warning", "error", "notice", "waits")


def radio_lines(lab, agent, origin, until, before=10.0, most=16):
    """The agent's log lines of its radio from `before` seconds ahead of `origin` to `until` (the
    guest's unix times), the last `most` of them, each with its seconds from `origin`: what a failed
    recovery's verdict quotes, so that CI's printout says why."""
    lines = [line for line in lab.lines(f"{agent}/enagentd.log")
             if any(word in line for word in RADIO_LINES) and origin - before <= logged_at(line) <= until]
    return [f"{logged_at(line) - origin:+.1f} s {line.split(' ', 1)[1][:160]}" for line in lines[-most:]]


def process_start(lab, agent, after):
    """The guest's unix time of the agent's first "enagentd started" line from `after` (a guest
    time) on, to the whole second before it (the log's stamps): its new process running, which a
    loaded guest took up to 9.5 s to load (make test of 2026-11-30 15:45); `after` without one."""
    for line in lab.text(f"{agent}/enagentd.log").splitlines():
        if "enagentd started" in line:
            stamp = logged_at(line)
            if stamp >= math.floor(after):
                return max(stamp, after)
    return after


def check_stall_notes(lab, fail, agents, since, snoop=None, to_capture=lambda time: time, what="the run", restarts=None):
    """Each agent's log notes a stalled discovery at most STALL_NOTES_AT_MOST times per run of
    bluetoothd and of its radio (`restarts`: agent -> the guest's unix times at which the lab
    started bluetoothd or the agent's radio again, a restart or a resume); printed with
    the first scan its controller ran from the note's second on (`since`: a unix time of the
    guest's to count from, when `what` began; `snoop`, `to_capture`: a capture other than btmon's,
    and the guest's clock turned into its)."""
    for agent, controller in agents.items():
        notes = [line for line in lab.text(f"{agent}/enagentd.log").splitlines() if STALL_NOTE in line]
        print(f"  {agent}: {len(notes)} notes of a stalled discovery" + (f"; the first: {notes[0][:400]}" if notes else ""))
        if notes:
            # The log's stamps are whole seconds (UTC): the first scan the controller ran from that second on.
            noted = logged_at(notes[0])
            after = [begun for begun, _ in scan_moments(snoop or lab.snoop, controller) if begun >= to_capture(noted)]
            print(f"    hci{controller}'s next scan " + (f"{after[0] - to_capture(noted):.1f} s after the note's second, "
                                                        f"{noted - since:+.0f} s from {what}'s start" if after else "never came"))
        stamps = [logged_at(note) for note in notes]
        per_run = Counter(sum(1 for restart in (restarts or {}).get(agent, ()) if restart < stamp) for stamp in stamps)
        if max(per_run.values(), default=0) > STALL_NOTES_AT_MOST:
            fail(f"journal: {agent} noted the stall {max(per_run.values())} times in one run of bluetoothd")


def report_addresses(path, controller):
    """(unix time, address) of every advertising report the controller sent, legacy or extended,
    each report of an event; the address as written (most significant byte first), in hex."""
    found = []
    for index, opcode, timestamp, payload in records(path):
        if index != controller or opcode != EVENT or len(payload) < 4 or payload[0] != 0x3E:
            continue
        position = 4
        for _ in range(payload[3]):
            if payload[2] == LE_ADVERTISING_REPORT and position + 9 <= len(payload):
                address, position = payload[position + 2:position + 8], position + 10 + payload[position + 8]
            elif payload[2] == LE_EXTENDED_ADVERTISING_REPORT and position + 24 <= len(payload):
                address, position = payload[position + 3:position + 9], position + 24 + payload[position + 23]
            else:
                break
            found.append((unix_seconds(timestamp), address[::-1].hex()))
    return found


def active_scan_addresses(path, controller):
    """The random address each active scan of the controller went out from (its SCAN_REQs'), in
    order: the LE Set Random Address in force when the scan was enabled."""
    address, active_random, addresses = None, False, []
    for _, command, parameters in accepted(path, controller):
        if command == SET_RANDOM_ADDRESS and len(parameters) >= 6:
            address = parameters[:6][::-1]
        elif command == SET_EXT_SCAN_PARAMETERS and len(parameters) >= 4:
            active_random = parameters[3] == 1 and parameters[0] == 1
        elif command == SET_SCAN_PARAMETERS and len(parameters) >= 6:
            active_random = parameters[0] == 1 and parameters[5] == 1
        elif command in (SET_SCAN_ENABLE, SET_EXT_SCAN_ENABLE) and parameters[:1] == b"\x01" and active_random:
            addresses.append(address)
    return addresses


class Advertising:
    """What a controller advertises, by the commands it accepted (`take` each in order): the
    legacy set's data, whether it is on and its random address; each extended set's data and
    random address, and which sets are enabled."""

    def __init__(self):
        self.legacy_data, self.legacy_on, self.legacy_address = b"", False, None
        self.set_data, self.set_addresses, self.enabled_sets = {}, {}, set()

    @staticmethod
    def written(command, parameters):
        """(None for the legacy set or an extended set's handle, the data) of a command that
        writes advertising data; None for any other."""
        if command == SET_ADV_DATA and parameters:
            return None, bytes(parameters[1:1 + parameters[0]])
        if command == SET_EXT_ADV_DATA and len(parameters) >= 4:
            return parameters[0], bytes(parameters[4:4 + parameters[3]])
        return None

    def on_air(self, handle):
        """The data on the air from the legacy set (handle None) or an extended set, or None when it is off."""
        if handle is None:
            return self.legacy_data if self.legacy_on else None
        return self.set_data.get(handle, b"") if handle in self.enabled_sets else None

    def take(self, command, parameters):
        if (written := self.written(command, parameters)) is not None:
            handle, data = written
            if handle is None:
                self.legacy_data = data
            else:
                self.set_data[handle] = data
        elif command == SET_RANDOM_ADDRESS and len(parameters) >= 6:
            self.legacy_address = bytes(reversed(parameters[:6]))
        elif command == SET_ADV_SET_RANDOM_ADDRESS and len(parameters) >= 7:
            self.set_addresses[parameters[0]] = bytes(reversed(parameters[1:7]))
        elif command == SET_ADV_ENABLE and parameters:
            self.legacy_on = bool(parameters[0])
        elif command == SET_EXT_ADV_ENABLE and len(parameters) >= 2:
            self.enabled_sets = sets_enabled_after(self.enabled_sets, parameters)
        elif command in (ADV_SET_TERMINATED, REMOVE_ADV_SET) and parameters:
            self.enabled_sets.discard(parameters[0])
        elif command == CLEAR_ADV_SETS:
            self.enabled_sets = set()
        elif command == RESET:
            self.legacy_on, self.enabled_sets = False, set()


def air_shares(path, controller, start, end):
    """From `start` to `end` (unix times): the share of the time an EN advertisement was on the air
    from the controller, the share another advertisement was, and the longest stretch without EN
    (the kernel takes turns between instances on a legacy controller's one set)."""
    advertising = Advertising()
    def on_air():
        data = [item for handle in [None, *advertising.enabled_sets] if (item := advertising.on_air(handle)) is not None]
        return any(EN_PREFIX in item for item in data), any(EN_PREFIX not in item for item in data)
    en_time = other_time = longest_gap = 0.0
    last, gap_from = start, start
    for time, command, parameters in list(accepted(path, controller)) + [(end, None, b"")]:
        if time > start:
            span = min(time, end) - last
            en, other = on_air()
            en_time += span if en else 0
            other_time += span if other else 0
            if en:
                gap_from = min(time, end)
            else:
                longest_gap = max(longest_gap, min(time, end) - gap_from)
            last = min(time, end)
        if time >= end:
            break
        advertising.take(command, parameters)
    return en_time / (end - start), other_time / (end - start), longest_gap


def data_changed_on_the_air(path, controller):
    """Every EN advertisement whose data a set on the air took before a new address: (unix time,
    the address in force, the data on the air before, the new data). A controller sends new data at
    its next advertising event, from the address it has (Core Vol 4 Part E 7.8.7), so the new RPI
    goes out from the address of what was there before; the kernel writes a legacy set's data
    before it disables the set for the next address (hci_start_adv_sync)."""
    advertising = Advertising()
    for time, command, parameters in accepted(path, controller):
        if (written := Advertising.written(command, parameters)) is not None:
            handle, data = written
            before = advertising.on_air(handle)
            if before is not None and EN_PREFIX in data and data != before:
                address = advertising.legacy_address if handle is None else advertising.set_addresses.get(handle)
                yield time, address, before, data
        advertising.take(command, parameters)


if __name__ == "__main__":
    # onair.py SNOOP CONTROLLER: prints "ADVERTISING SCANNING" (yes/no) for the lab's scripts.
    import sys
    advertising, scanning = radio_state(sys.argv[1], int(sys.argv[2].removeprefix("hci")))
    print("yes" if advertising else "no", "yes" if scanning else "no")
