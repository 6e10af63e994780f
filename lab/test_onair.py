"""lab/onair.py's reading of a btmon capture (python3 -m unittest discover -s lab; make
lab-report-test): a made-up capture as btmon writes one when it reads behind, as in the flood lab,
where bluetoothd's log lines (stamped when btmon reads them) run ahead of the kernel's frames."""
import os, struct, tempfile, unittest
import onair

START = 1795950000.0


def frame(controller, opcode, seconds, payload):
    stamp = int(seconds * 1e6) + onair.BTSNOOP_EPOCH_MICROSECONDS
    return struct.pack(">IIIIq", len(payload), len(payload), controller << 16 | opcode, 0, stamp) + payload


def accepted(controller, seconds, opcode, parameters):
    """A command and the controller's Command Complete with success."""
    return (frame(controller, 2, seconds, struct.pack("<HB", opcode, len(parameters)) + parameters)
            + frame(controller, 3, seconds + 0.001, bytes([0x0E, 4, 1]) + struct.pack("<H", opcode) + b"\0"))


def scan_enable(controller, seconds, enable):
    return accepted(controller, seconds, 0x2042, bytes([enable, 0, 0, 0, 0, 0]))


def log_line(seconds, text):
    return frame(0xFFFF, onair.USER_LOGGING, seconds, b"\x06\x0bbluetoothd\0" + text + b"\0")


class BehindCapture(unittest.TestCase):
    def setUp(self):
        descriptor, self.path = tempfile.mkstemp(suffix=".snoop")
        self.addCleanup(os.remove, self.path)
        with os.fdopen(descriptor, "wb") as capture:
            capture.write(b"btsnoop\0" + struct.pack(">II", 1, 2001) + scan_enable(0, START + 1, 1)
                          # btmon reads 50 s behind: the log line bluetoothd wrote at about +2 s is stamped +52 s
                          + log_line(START + 52, b"src/adapter.c:start_discovery_complete()")
                          + scan_enable(0, START + 4, 0) + scan_enable(0, START + 5, 1) + scan_enable(0, START + 8, 0))

    def test_the_kernels_stamps_stand_when_a_log_line_read_late_comes_between(self):
        windows = [(round(begun - START, 3), round(ended - START, 3)) for begun, ended in onair.scan_windows(self.path, 0)]
        self.assertEqual(windows, [(1.001, 4.001), (5.001, 8.001)])

    def test_a_log_line_takes_the_stamp_of_the_kernels_frame_before_it(self):
        stamps = [round(onair.unix_seconds(stamp) - START, 3) for _, opcode, stamp, _ in onair.records(self.path)
                  if opcode == onair.USER_LOGGING]
        self.assertEqual(stamps, [1.001])


def adv_enable(controller, seconds, enable):
    return accepted(controller, seconds, 0x2039, bytes([enable, 1, 1, 0, 0, 0]))


class BackAgain(unittest.TestCase):
    """After a fault at +0 s: the scan on again at +1 s, the advertisement off and on again at +2
    s (a new bluetoothd clearing it, the agent adding it anew), then the moment the agent could act
    from (`after`, bluetoothd's offer) at +3 s, and the scan off and on at +4 s."""
    def setUp(self):
        descriptor, self.path = tempfile.mkstemp(suffix=".snoop")
        self.addCleanup(os.remove, self.path)
        with os.fdopen(descriptor, "wb") as capture:
            capture.write(b"btsnoop\0" + struct.pack(">II", 1, 2001) + adv_enable(0, START - 5, 1) + scan_enable(0, START - 5, 1)
                          + scan_enable(0, START + 1, 1) + adv_enable(0, START + 2, 0) + adv_enable(0, START + 2.5, 1)
                          + scan_enable(0, START + 4, 0) + scan_enable(0, START + 4.5, 1))

    def test_what_was_back_before_the_moment_counts_from_it_when_enabled_since_the_fault(self):
        self.assertEqual(onair.on_again(self.path, 0, START + 3, since=START), 0.0)
        self.assertIsNone(onair.on_again(self.path, 0, START + 3), "the advertisement not enabled anew since +3 s (make test's soak of 10:03)")
        self.assertEqual(round(onair.on_again(self.path, 0, START), 3), 2.501, "advertising anew at +2.5 s")
        self.assertIsNone(onair.on_again(self.path, 0, START + 5), "nothing enabled after +5 s")


def en_data(rpi):
    data = bytes.fromhex("0201060303") + onair.EN_PREFIX[2:] + rpi + bytes(4)
    return bytes([len(data)]) + data + bytes(31 - len(data))


class LegacyRotation(unittest.TestCase):
    """The kernel's order on a legacy set (hci_start_adv_sync): the data, then off, address, on."""
    def capture(self, *commands):
        descriptor, path = tempfile.mkstemp(suffix=".snoop")
        self.addCleanup(os.remove, path)
        with os.fdopen(descriptor, "wb") as capture:
            capture.write(b"btsnoop\0" + struct.pack(">II", 1, 2001)
                          + b"".join(accepted(0, START + index, opcode, parameters) for index, (opcode, parameters) in enumerate(commands)))
        return list(onair.data_changed_on_the_air(path, 0))

    def enabled(self, address, rpi):
        return [(onair.SET_RANDOM_ADDRESS, address[::-1]), (onair.SET_ADV_DATA, en_data(rpi)), (onair.SET_ADV_ENABLE, b"\1")]

    def test_new_data_on_a_set_on_the_air_is_named_with_the_address_in_force(self):
        first, second = bytes(range(16)), bytes(range(16, 32))
        changes = self.capture(*self.enabled(b"\x31" * 6, first), (onair.SET_ADV_DATA, en_data(second)),
                               (onair.SET_ADV_ENABLE, b"\0"), *self.enabled(b"\x32" * 6, second))
        self.assertEqual([(address, before[11:27], after[11:27]) for _, address, before, after in changes], [(b"\x31" * 6, first, second)])

    def test_new_data_while_the_set_is_off_goes_out_from_the_new_address_only(self):
        first, second = bytes(range(16)), bytes(range(16, 32))
        self.assertEqual(self.capture(*self.enabled(b"\x31" * 6, first), (onair.SET_ADV_ENABLE, b"\0"), *self.enabled(b"\x32" * 6, second)), [])


if __name__ == "__main__":
    unittest.main()
