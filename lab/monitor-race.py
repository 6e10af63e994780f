#!/usr/bin/env python3
"""monitor-race.py OUT ROUNDS [hciN]: the advertisement monitor's race with a power-off, in the guest.
monitor-race.py --strand hciN: on an adapter that is off, removes every monitor, then adds one,
and prints the kernel's status for it ("0x03": failed, which 6.12.117 keeps pending, refusing
every later monitor as Busy until the adapter is next switched off): what the agent's own
monitor met in CI when it reached an adapter rfkill had just closed (agents.sh, airplane mode).

Passive scanning adds a kernel advertisement monitor (the management interface's Add
Advertisement Patterns Monitor). Kernel 6.1 frees such a command still queued when the adapter
goes off and then uses it (mgmt_add_adv_patterns_monitor_complete; mainline 302a1f674c00 and the
6.12 series' fixes up to 6.12.80). Each round here adds a monitor for 0xFD6F service data and,
a random 0-3 ms before or after, switches the adapter off: by Set Powered from another
management socket, or by an rfkill block (/sys/class/rfkill); then switches it on again and
removes the monitor. After every round the kernel's log is read for an oops or a warning; a
command the kernel no longer answers ends the test (the stack is dead).

Writes OUT/monitor-race.txt: the kernel, each round's outcome, and a last line
"monitor-race: PASS" (ROUNDS rounds, no oops, no warning, every command answered) or
"monitor-race: FAIL ...". Exit status 0 on PASS, 1 otherwise.

Raw sockets of the management channel (HCI_CHANNEL_CONTROL), bound with ctypes: Python's own
bind takes no channel."""
import ctypes, os, random, re, select, socket, struct, subprocess, sys, time

HCI_DEV_NONE, HCI_CHANNEL_CONTROL = 0xFFFF, 3
SET_POWERED, ADD_ADV_PATTERNS_MONITOR, REMOVE_ADV_MONITOR = 0x0005, 0x0052, 0x0053
COMMAND_COMPLETE, COMMAND_STATUS = 0x0001, 0x0002
# An oops, a warning, or memory found damaged: what a use after free shows without KASAN too.
KERNEL_TROUBLE = re.compile(r"BUG:|Oops|general protection|KASAN|WARNING:|Call Trace|refcount_t|list_del corruption|use-after-free")


class Management:
    def __init__(self):
        self.socket = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, socket.BTPROTO_HCI)
        address = struct.pack("<HHH", socket.AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.bind(self.socket.fileno(), ctypes.c_char_p(address), len(address)) != 0:
            raise OSError(ctypes.get_errno(), "bind to the management channel")

    def send(self, opcode, index, parameters=b""):
        self.socket.send(struct.pack("<HHH", opcode, index, len(parameters)) + parameters)

    def answer(self, opcode, timeout=5.0):
        """The status (and parameters) of the answer to `opcode`; None when none came in `timeout`."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if not select.select([self.socket], [], [], left)[0]:
                break
            packet = self.socket.recv(1024)
            event, _, _ = struct.unpack("<HHH", packet[:6])
            if event in (COMMAND_COMPLETE, COMMAND_STATUS) and struct.unpack("<H", packet[6:8])[0] == opcode:
                return packet[8], packet[9:]
        return None

    def call(self, opcode, index, parameters=b"", timeout=5.0):
        self.send(opcode, index, parameters)
        return self.answer(opcode, timeout)


def monitor_for_exposure_notification():
    # One pattern: AD type 0x16 (service data), offset 0, the UUID 0xFD6F little-endian.
    return bytes([1, 0x16, 0, 2]) + bytes([0x6F, 0xFD]) + bytes(29)


def rfkill_switch(adapter):
    for switch in os.listdir("/sys/class/rfkill"):
        if open(f"/sys/class/rfkill/{switch}/name").read().strip() == adapter:
            return f"/sys/class/rfkill/{switch}/soft"
    raise SystemExit(f"monitor-race: no rfkill switch for {adapter}")


def kernel_log():
    return subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()


def strand(adapter):
    index = int(adapter.removeprefix("hci"))
    management = Management()
    removed = management.call(REMOVE_ADV_MONITOR, index, b"\x00\x00")
    added = management.call(ADD_ADV_PATTERNS_MONITOR, index, monitor_for_exposure_notification())
    if removed is None or added is None:
        raise SystemExit(f"monitor-race --strand: {adapter} did not answer")
    print(f"0x{added[0]:02x}")


def main():
    if sys.argv[1] == "--strand":
        return strand(sys.argv[2])
    out, rounds = sys.argv[1], int(sys.argv[2])
    adapter = sys.argv[3] if len(sys.argv) > 3 else "hci0"
    index = int(adapter.removeprefix("hci"))
    report = open(f"{out}/monitor-race.txt", "w")
    say = lambda line: (print(line), report.write(line + "\n"), report.flush())
    say(f"kernel {os.uname().release}, {rounds} rounds on {adapter}")
    adder, switcher = Management(), Management()
    switch = rfkill_switch(adapter)
    seen = len(kernel_log())
    failure = None
    counts = {"monitor added": 0, "monitor refused": 0}
    for number in range(1, rounds + 1):
        way = ("power-off", "rfkill")[number % 2]
        first = random.choice(("add", "off"))
        gap = random.uniform(0, 0.003)
        if adder.call(SET_POWERED, index, b"\x01") is None:
            failure = f"round {number}: Set Powered (on) unanswered"
            break
        switch_off = (lambda: switcher.send(SET_POWERED, index, b"\x00")) if way == "power-off" \
            else (lambda: open(switch, "w").write("1"))
        add = lambda: adder.send(ADD_ADV_PATTERNS_MONITOR, index, monitor_for_exposure_notification())
        (add if first == "add" else switch_off)()
        time.sleep(gap)
        (switch_off if first == "add" else add)()
        added = adder.answer(ADD_ADV_PATTERNS_MONITOR)
        if way == "power-off" and switcher.answer(SET_POWERED) is None:
            failure = f"round {number}: Set Powered (off) unanswered"
            break
        if way == "rfkill":
            open(switch, "w").write("0")
        if added is None:
            failure = f"round {number}: Add Advertisement Patterns Monitor unanswered ({way}, {first} first, {gap * 1000:.1f} ms apart)"
            break
        counts["monitor added" if added[0] == 0 else "monitor refused"] += 1
        # Every monitor goes (handle 0: all), the adapter on or off.
        if adder.call(REMOVE_ADV_MONITOR, index, b"\x00\x00") is None:
            failure = f"round {number}: Remove Advertisement Monitor unanswered"
            break
        log = kernel_log()
        trouble = [line for line in log[seen:] if KERNEL_TROUBLE.search(line)]
        seen = len(log)
        say(f"round {number}: {way}, {first} first, {gap * 1000:.1f} ms apart: monitor status 0x{added[0]:02x}"
            + (f"; KERNEL: {trouble[0]}" if trouble else ""))
        if trouble:
            failure = f"round {number}: the kernel logged {trouble[0]!r}"
            break
    say(f"monitors added {counts['monitor added']}, refused {counts['monitor refused']}")
    if failure:
        say("kernel log since the start:")
        for line in kernel_log()[-40:]:
            say(f"  {line}")
        say(f"monitor-race: FAIL {failure}")
        sys.exit(1)
    say(f"monitor-race: PASS ({rounds} rounds, no oops or warning, every command answered)")


if __name__ == "__main__":
    main()
