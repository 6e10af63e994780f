#!/usr/bin/env python3
"""hcisniffer.py HCI_DIR GUEST_SNOOP OUT_SNOOP: the guest's RootCanal controllers as RootCanal
itself recorded them, on the host, into one btsnoop file that lab/onair.py reads.

rclab.py serve runs RootCanal with -enable_hci_sniffer in HCI_DIR: a pcap file for each HCI
connection, "rootcanal_<device id>_<controller address>.pcap" (desktop/test_environment.cc,
SetUpHciServer), every packet each way as RootCanal sent or took it (model/hci/hci_sniffer.cc,
LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR: a 4-byte direction, then the H4 packet). Unlike btmon in the
guest, it does not fall behind a crowd, and it stamps by the host's clock, which the phones' log
uses. Its quirk: the record's microseconds field holds milliseconds (include/pcap.h,
WriteRecordHeader: `(time % 1s) / 1ms`), so its stamps are whole milliseconds.

The guest's controllers are told apart from the phones' by their addresses: each hciN's answer to
Read BD_ADDR in the guest's own capture (GUEST_SNOOP, btmon's, whose first frames are all this
needs). Their frames go to OUT_SNOOP with the guest's controller numbers."""
import os, re, struct, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import onair  # noqa: E402

PCAP_MAGIC, LINKTYPE_H4_WITH_PHDR = 0xA1B2C3D4, 201
H4_COMMAND, H4_EVENT = 0x01, 0x04
READ_BD_ADDR = 0x1009


def frames(path):
    """(unix seconds, monitor opcode: onair.COMMAND or onair.EVENT, packet) of each command and
    event in one of RootCanal's pcap files."""
    with open(path, "rb") as capture:
        data = capture.read()
    magic, _, _, _, _, _, linktype = struct.unpack_from("<IHHIIII", data)
    if magic != PCAP_MAGIC or linktype != LINKTYPE_H4_WITH_PHDR:
        raise ValueError(f"{path}: not RootCanal's HCI pcap (magic {magic:#x}, link type {linktype})")
    offset = 24
    while offset + 16 <= len(data):
        seconds, milliseconds, length, _ = struct.unpack_from("<IIII", data, offset)
        packet = data[offset + 16:offset + 16 + length]
        offset += 16 + length
        if len(packet) < 5 or len(packet) < length:
            break
        kind = packet[4]
        if kind in (H4_COMMAND, H4_EVENT):
            yield seconds + milliseconds / 1000, onair.COMMAND if kind == H4_COMMAND else onair.EVENT, packet[5:]


def guest_addresses(snoop):
    """{controller index: its address, as RootCanal's file names write it} from the guest's Read
    BD_ADDR answers."""
    found = {}
    for index, opcode, _, payload in onair.records(snoop):
        if opcode == onair.EVENT and len(payload) >= 12 and payload[0] == 0x0E and payload[5] == 0 \
                and struct.unpack_from("<H", payload, 3)[0] == READ_BD_ADDR:
            found.setdefault(index, bytes(reversed(payload[6:12])).hex(":"))
    return found


def pcap_files(directory):
    """{address: path} of RootCanal's pcap files in `directory`; one address connected twice keeps its last."""
    found = {}
    for name in sorted(os.listdir(directory), key=lambda name: [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]):
        matched = re.fullmatch(r"rootcanal_\d+_([0-9a-f:]{17})(?:_\d+)?\.pcap", name)
        if matched:
            found[matched.group(1)] = os.path.join(directory, name)
    return found


def write(controllers, out):
    """`controllers`: {index: pcap path}. Writes their frames, merged by time, as a btsnoop file
    of the Linux monitor's datalink (2001), as btmon writes one."""
    merged = sorted((time, index, opcode, packet) for index, path in controllers.items() for time, opcode, packet in frames(path))
    with open(out, "wb") as snoop:
        snoop.write(b"btsnoop\0" + struct.pack(">II", 1, 2001))
        for time, index, opcode, packet in merged:
            stamp = round(time * 1e6) + onair.BTSNOOP_EPOCH_MICROSECONDS
            snoop.write(struct.pack(">IIIIq", len(packet), len(packet), index << 16 | opcode, 0, stamp) + packet)
    return len(merged)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.splitlines()[0])
    directory, guest, out = sys.argv[1:]
    addresses, files = guest_addresses(guest), pcap_files(directory)
    controllers = {index: files[address] for index, address in addresses.items() if address in files}
    if not controllers:
        sys.exit(f"hcisniffer.py: none of the guest's controllers ({addresses}) among RootCanal's pcap files in {directory} ({sorted(files)})")
    count = write(controllers, out)
    print(f"hcisniffer.py: {count} frames of " + ", ".join(f"hci{index} ({addresses[index]})" for index in sorted(controllers)) + f" into {out}")


if __name__ == "__main__":
    main()
