"""An agent's adapter taken from under it and given back: switched off, blocked, unplugged, suspended, made connectable."""
import re
import onair
from .agentslab import AGENTS, day_of
from .bounds import BACK_WITHIN, CONNECTABLE_OFF_WITHIN, CONNECTABLE_STATUS_WITHIN, REENABLED_OFF_WITHIN


def adapter(lab, fail):
    power_off = lab.phase("power-off-a")
    powered_after_off, polled, losses = power_off["powered"], power_off["polled"], power_off["losses"]
    # The switch-off as the kernel was told it (bluetoothd's Powered read just after can already
    # be true again: the agent may switch the adapter back on within a second).
    trace = lab.text("btmon.txt")
    switched_off = re.search(r"MGMT Command: Set Powered \(0x0005\) plen 1\s+\{0x\w+\} \[hci0\].*\n\s+Powered: Disabled", trace) is not None
    # The recovery timed on the controller's own commands: the first moment after the switch-off
    # (bluetoothd's Set Powered: a rotation of a's just before it has a quiet moment of its own on
    # a legacy controller) when hci0 went quiet, then the first advertising and the first scan
    # after that, timed from that Set Powered, the moment the agent could notice. (The lab's poll of
    # the growing capture can lag by seconds in the emulated guest.)
    powered_off = onair.powered(lab.snoop, 0, lab.at("a-switched-off"))
    changes = [change for change in onair.radio_changes(lab.snoop, 0) if powered_off is not None and change[0] >= powered_off]
    quiet = next((index for index, (_, on_air, listening) in enumerate(changes) if not on_air and not listening), None)
    after = changes[quiet + 1:] if quiet is not None else []
    advertising_at = next((time for time, on_air, _ in after if on_air), None)
    scanning_at = next((time for time, _, listening in after if listening), None)
    took = None if advertising_at is None or scanning_at is None else max(advertising_at, scanning_at) - powered_off
    print(f"  hci0 switched off under a (btmon: {'Set Powered off' if switched_off else 'NO Set Powered off'}; Powered {powered_after_off} just after): "
          f"a noticed the loss {losses} time(s); advertising and scanning again after "
          + (f"{took:.1f} s (btmon; the lab's poll saw it after {polled} s)" if took is not None else f"NEVER (the lab's poll: {polled})"))
    if not switched_off or losses == 0 or took is None or took > BACK_WITHIN:
        fail(f"agent a did not bring hci0 back within {BACK_WITHIN:g} s of it being switched off ({switched_off}, {losses}, {took})")


def judge_return(fail, agent, adapter, status, waiting, took, fresh, polled, gone, back, extra=""):
    """One agent's account of its adapter gone and back: its API must have said one of `waiting`,
    neither advertising nor scanning, while the adapter was `gone`, and it must have advertised a
    new RPI from a new address and scanned within BACK_WITHIN (`took`, from `back`)."""
    print(f"  {agent} ({adapter}) {gone}: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}, "
          f"scanning {'yes' if status['scanning'] else 'no'}{extra}; {back} advertising and scanning again "
          + (f"{took:.1f} s later (btmon)" if took is not None else "NEVER") + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address")
          + f" (the lab's poll: {polled})")
    if status["status"] not in waiting or status["advertising"] or status["scanning"]:
        fail(f"agent {agent}'s API says {status['status']} (advertising {status['advertising']}, scanning {status['scanning']}) while {adapter} is {gone}")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent {agent} did not advertise a new RPI from a new address and scan within {BACK_WITHIN:g} s once {adapter} was back ({gone}: {took}, {fresh})")


def airplane_mode(lab, fail):
    blocked_at = lab.at("rfkill-blocked")
    unblocked_at = lab.at("rfkill-unblocked")
    polled = lab.phase("rfkill")
    for agent, adapter in AGENTS.items():
        status = lab.phase(f"rfkill-status-{agent}")["status"]
        said = "switched off by airplane mode" in lab.text(f"{agent}/enagentd.log")
        took, fresh, _ = lab.returned(int(adapter.removeprefix("hci")), blocked_at, unblocked_at)
        judge_return(fail, agent, adapter, status, ("bluetooth-off",), took, fresh, polled.get(adapter), gone="blocked", back="unblocked:",
                     extra=f"; its log {'names' if said else 'does NOT name'} the block")
        if not said:
            fail(f"agent {agent}'s log does not say that {adapter} is blocked")
    # A monitor stranded on hci0 while it was blocked (agents.sh, where a scans passively).
    if lab.has("monitor-stranded"):
        status = lab.phase("monitor-stranded")["status"]
        # No monitor of anyone's is refused as Busy in the lab but after this one.
        busy = len(re.findall(r"\[hci0\].*\n\s+Add Advertisement Patterns Monitor \(0x0052\)\n\s+Status: Busy", lab.text("btmon.txt")))
        # Said as such, or, where a stall was noted before, as asking bluetoothd's discovery again.
        fell_back = re.search(r"scanning actively through bluetoothd's discovery until the kernel takes the scan's monitor again"
                              r"|the kernel refuses the scan's monitor on hci0 \(.*\): asking bluetoothd's discovery again", lab.text("a/enagentd.log"))
        print(f"  a monitor added to hci0 while blocked: status {status}; the kernel refused a's monitors as Busy {busy} time(s) after it (btmon); "
              f"a's log {'says' if fell_back else 'does NOT say'} it scans through bluetoothd's discovery until the kernel takes its monitor again")
        if busy and not fell_back:
            fail("the kernel refused agent a's monitor as Busy, and a did not say it scans through bluetoothd's discovery meanwhile")


def unplug(lab, fail):
    unplugged_at = lab.at("unplugged")
    replugged_at = lab.at("replugged")
    polled = lab.phase("replug")
    for agent, adapter in AGENTS.items():
        controller = int(adapter.removeprefix("hci"))
        status = lab.phase(f"unplugged-status-{agent}")["status"]
        # Timed from bluetoothd offering the new controller (btmon), as after bluetoothd's restart.
        offered = onair.offered(lab.snoop, controller, replugged_at)
        took, fresh, _ = (None, False, None) if offered is None else lab.returned(controller, unplugged_at, offered)
        judge_return(fail, agent, adapter, status, ("no-adapter", "bluetooth-off"), took, fresh, polled.get(adapter), gone="unplugged",
                     back="plugged: bluetoothd offered it " + (f"{offered - replugged_at:.1f} s later, and" if offered is not None else "NEVER, and"))


def suspend(lab, fail):
    suspended_at = lab.at("suspended")
    resumed_at = lab.at("resumed")
    day = lab.phase("resumed")["agent_time"] // 86400
    again = lab.reenabled_at_resume
    # a's own return: after the kernel's re-enabling, which a takes off on waking.
    taken_off = max((max(onair.unix_seconds(advertisement["time"]), resumed_at) + took for advertisement, took in again if took is not None),
                    default=resumed_at)
    took, fresh, back = lab.returned(0, suspended_at, max(resumed_at, taken_off))
    took = None if took is None else took + max(resumed_at, taken_off) - resumed_at
    # The key of the first RPI after the return: it must be the new day's.
    rpi = back["data"][11:27].hex() if back is not None else None
    key_day = next((start // 144 for start, period, key in lab.phase("after-suspend")["snapshot"]["keys"]
                    if rpi in lab.derived(key, start, period)), None)
    before, after = (lab.phase(name)["snapshot"] for name in ("before-suspend", "after-suspend"))
    print(f"  resumed {resumed_at - suspended_at:.1f} s (real) after a slept, in the agents' day {day_of(day * 144)}: a advertising and scanning again "
          + (f"{took:.1f} s later (btmon)" if took is not None else "NEVER") + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address")
          + f", its key of {day_of(key_day * 144) if key_day is not None else 'NO KEY OF a'}; sightings {before['sightings']} before, {after['sightings']} after"
          + f" (the lab's poll: {lab.phase('resume-a')['polled']})")
    for advertisement, off in again:
        print(f"  the kernel put a's last RPI before the sleep on the air again at power-on (from {advertisement['address'].hex(':') if advertisement.get('address') else '?'}); "
              + (f"a took it off {off * 1000:.0f} ms after it was continued" if off is not None else "a NEVER took it off") + f" (at most {REENABLED_OFF_WITHIN * 1000:.0f} ms)")
        if off is None or off > REENABLED_OFF_WITHIN:
            fail(f"the kernel's re-enabled advertisement of a's last RPI stayed on the air {off} s after the resume")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent a did not advertise a new RPI from a new address and scan within {BACK_WITHIN:g} s of its resume ({took}, {fresh})")
    if key_day != day:
        fail(f"agent a's first RPI after the resume is not from a key of the new day ({key_day}, {day})")
    if after["sightings"] < before["sightings"] or after["integrity"] != "ok":
        fail("committed sightings were lost across the suspend")


def connectable(lab, fail):
    at, reprogrammed = lab.connectable_moment
    polls = lab.entries("connectable-poll")
    status = lab.phase("connectable-status-a")["status"]
    # Timed on the capture: from the kernel's New Settings event (connectable) to the first command
    # after it that took advertising off; and a's status: no poll of it begun more than
    # CONNECTABLE_STATUS_WITHIN after that event may read another (enctl's own start on a loaded
    # host is not a's lag), and one must read adapter-connectable.
    turned = next((moment for moment, settings in onair.settings_changes(lab.snoop, 0) if moment >= at and settings & onair.CONNECTABLE), None)
    taken_off = None if turned is None else next((moment - turned for moment in lab.withdrawals(0) if moment >= turned), None)
    said = next((poll for poll in polls if poll["said"] == "adapter-connectable no"), None)
    late = [poll for poll in polls if poll["said"] != "adapter-connectable no" and turned is not None
            and poll["started"] - turned > CONNECTABLE_STATUS_WITHIN]
    # From the kernel's New Settings event (not connectable) on: when a could advertise again.
    off_at = lab.at("a-not-connectable")
    turned_back = next((moment for moment, settings in onair.settings_changes(lab.snoop, 0) if moment >= off_at and not settings & onair.CONNECTABLE), None)
    back, fresh = lab.back_on_air(0, at, off_at if turned_back is None else turned_back)
    took = None if back is None or turned_back is None else onair.unix_seconds(back["time"]) - turned_back
    print(f"  connectable on: a's advertising taken off " + (f"{taken_off * 1000:.0f} ms after the kernel's New Settings (btmon)" if taken_off is not None else "NEVER")
          + "; enctl status said " + (f"adapter-connectable in the poll begun {said['started'] - turned:.1f} s after it" if said and turned is not None else "NEVER adapter-connectable")
          + (f", {late[-1]['said']} in one begun {late[-1]['started'] - turned:.1f} s after" if late else "")
          + f"; 2 s later: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}")
    print(f"  connectable off: a advertising again " + (f"{took:.1f} s after the kernel's New Settings" if took is not None else "NEVER")
          + (", a new RPI from a new address" if fresh else ", NOT a new RPI from a new address") + f" (the lab's poll: {lab.phase('connectable-a')['polled']})")
    if taken_off is None or taken_off > CONNECTABLE_OFF_WITHIN or not said or late:
        fail(f"agent a did not take its advertisement off at once when hci0 turned connectable, or did not say so "
             f"({taken_off}, {[(round(poll['started'] - (turned or 0), 1), poll['said']) for poll in polls]})")
    if status["status"] != "adapter-connectable" or status["advertising"]:
        fail(f"agent a's API says {status['status']}, advertising {status['advertising']}, on a connectable adapter")
    if took is None or took > BACK_WITHIN or not fresh:
        fail(f"agent a did not advertise a new RPI from a new address within {BACK_WITHIN:g} s of hci0 turning non-connectable ({took}, {fresh})")
