"""beacon.py SNOOP CONTROLLER SINCE HEX: whether another program's advertising set, the one whose
data holds HEX, stayed on the air on CONTROLLER (hciN's index) from SINCE (unix seconds) to the
end of btmon's capture: enabled, and never disabled or removed since. Prints "on-air HANDLE" or
"off-air REASON" (exit 1). Extended advertising commands only (the service lab's controllers)."""
import struct, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import onair

REMOVE_ADV_SET, CLEAR_ADV_SETS = 0x203C, 0x203D


def beacon(path, controller, since, pattern):
    handle, enabled, reason, pending = None, False, "its data was never set", None
    for index, opcode, timestamp, payload in onair.records(path):
        if index != controller or len(payload) < 3:
            continue
        if opcode == onair.COMMAND:
            command, parameters = struct.unpack("<H", payload[:2])[0], payload[3:]
            if command == onair.SET_EXT_ADV_DATA and len(parameters) >= 4 and pattern in bytes(parameters[4:4 + parameters[3]]):
                handle, reason = parameters[0], "set, never enabled"
            pending = (command, parameters, onair.unix_seconds(timestamp))
        elif opcode == onair.EVENT and payload[0] == 0x0E and len(payload) >= 6 and pending and payload[5] == 0 \
                and struct.unpack("<H", payload[3:5])[0] == pending[0] and handle is not None:
            command, parameters, at = pending
            if command == onair.SET_EXT_ADV_ENABLE and len(parameters) >= 2:
                handles = {parameters[2 + 4 * i] for i in range(parameters[1]) if 2 + 4 * i < len(parameters)}
                if parameters[0] and handle in handles:
                    enabled = True
                elif not parameters[0] and (handle in handles or parameters[1] == 0):
                    enabled, reason = False, f"disabled at {at - since:+.1f} s"
            elif (command == REMOVE_ADV_SET and parameters and parameters[0] == handle) or command in (CLEAR_ADV_SETS, onair.RESET):
                enabled, reason = False, f"removed at {at - since:+.1f} s"
        elif opcode == onair.EVENT and payload[0] == 0x3E and len(payload) >= 5 and payload[2] == 0x12 and payload[4] == handle:
            enabled, reason = False, "terminated by the controller"
    return handle, enabled, reason


if __name__ == "__main__":
    handle, enabled, reason = beacon(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), bytes.fromhex(sys.argv[4]))
    print(f"on-air {handle}" if enabled else f"off-air {reason}")
    sys.exit(0 if enabled else 1)
