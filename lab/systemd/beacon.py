"""beacon.py SNOOP CONTROLLER HEX: the advertising sets enabled on CONTROLLER (hciN's index) at the
end of btmon's capture, from the commands the controller accepted: prints "on-air HANDLE N" when
a set whose data holds HEX (another program's beacon) is among them, else "off-air - N"; N is the
number of enabled sets that carry an EN advertisement. Extended advertising commands only.
beacon.py --extended SNOOP CONTROLLER: whether the kernel drives CONTROLLER with the extended
advertising commands (exit 0) or the legacy ones (exit 1: a BT 4.x controller)."""
import struct, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import onair

REMOVE_ADV_SET, CLEAR_ADV_SETS = 0x203C, 0x203D


def enabled_sets(path, controller):
    """handle -> advertising data of each set enabled at the end of the capture."""
    data, enabled = {}, set()
    for _, command, parameters in onair.accepted(path, controller):
        if command == onair.ADV_SET_TERMINATED:
            enabled.discard(parameters[0])
        elif command == onair.SET_EXT_ADV_DATA and len(parameters) >= 4:
            data[parameters[0]] = bytes(parameters[4:4 + parameters[3]])
        elif command == onair.SET_EXT_ADV_ENABLE and len(parameters) >= 2:
            enabled = onair.sets_enabled_after(enabled, parameters)
        elif command == REMOVE_ADV_SET and parameters:
            enabled.discard(parameters[0])
            data.pop(parameters[0], None)
        elif command in (CLEAR_ADV_SETS, onair.RESET):
            enabled.clear()
            data.clear()
    return {handle: data.get(handle, b"") for handle in enabled}


def extended(path, controller):
    return any(index == controller and opcode == onair.COMMAND and len(payload) >= 2
               and struct.unpack("<H", payload[:2])[0] == onair.SET_EXT_ADV_PARAMETERS
               for index, opcode, _, payload in onair.records(path))


if __name__ == "__main__" and sys.argv[1] == "--extended":
    sys.exit(0 if extended(sys.argv[2], int(sys.argv[3])) else 1)
elif __name__ == "__main__":
    sets = enabled_sets(sys.argv[1], int(sys.argv[2]))
    pattern = bytes.fromhex(sys.argv[3])
    beacons = [handle for handle, data in sets.items() if pattern in data]
    en_sets = sum(onair.EN_PREFIX in data for data in sets.values())
    print(f"on-air {beacons[0]} {en_sets}" if beacons else f"off-air - {en_sets}")
    sys.exit(0 if beacons else 1)
