"""The radio shared: another advertiser on a's controller, another program's controller beside the agents'."""
import re
import onair
from .agentslab import AGENTS, logged_at
from .bounds import EN_SHARE_BESIDE, OTHER_ADVERTISER_SHARE


def second_advertiser(lab, fail):
    started = lab.at("second-advertiser")
    ended = lab.at("second-advertiser-off")
    legacy = any(advertisement.get("legacy") for advertisement in lab.en_capture[1][0] if advertisement["controller"] == 0)
    # From bluetoothctl's start to its end (it registers its advertisement within about a second;
    # bluetoothd puts the name in the scan response, so the set's advertising data is empty).
    en, other, gap = onair.air_shares(lab.snoop, 0, started, ended)
    # The other's from the moment bluetoothd gave it to the kernel: on a legacy controller the
    # kernel puts it on the set when a steps aside, which needs a new address, refused while a scans.
    # The registration that took: after each that bluetoothd answered Failed (the kernel refuses the
    # new address while a scan runs, as beside any program's scan), bluetoothctl tried again.
    refused = lab.text(lab.phase("second-advertiser-off")["transcript"]).count("Failed to register advertisement")
    registered = onair.registered(lab.snoop, 0, started)
    for _ in range(refused):
        registered = registered and onair.registered(lab.snoop, 0, registered + 1e-6)
    other_since = onair.air_shares(lab.snoop, 0, registered, ended)[1] if registered is not None else 0
    status = lab.phase("second-advertiser-status-a")["status"]
    print(f"  for {ended - started:.1f} s: a's EN advertisement on the air {en:.0%} of the time, bluetoothctl's {other:.0%} "
          + (f"({other_since:.0%} from its registration {registered - started:.1f} s in"
             + (f", after {refused} refused while a scanned" if refused else "") + ")" if registered is not None else "(NEVER registered)")
          + f", the longest stretch without EN {gap:.1f} s; a said {status['status']}, advertising {'yes' if status['advertising'] else 'no'} "
          + ("(legacy: a steps aside, since the kernel would lend the one set in turns, each turn from a new address)" if legacy else "(extended: a set each, side by side)"))
    if other_since < OTHER_ADVERTISER_SHARE:
        fail(f"the second advertiser on hci0 was on the air {other_since:.0%} of the time from its registration (at least {OTHER_ADVERTISER_SHARE:.0%})")
    if legacy and (status["status"] != "adapter-shared" or status["advertising"]):
        fail(f"with a second advertiser on legacy hci0, a said {status['status']} (advertising {status['advertising']})")
    if not legacy and (en < EN_SHARE_BESIDE or status["status"] != "active"):
        fail(f"with a second advertiser on hci0, EN on the air {en:.0%} of the time; a said {status['status']}")


# What an agent logs when something took its advertisement off or cost it a key.
DISTURBED = re.compile(r"radio lost|rolled to a fresh key|taken off the air|not advertising until|cannot advertise|removed by another program")


def another_controller(lab, fail):
    start, end = lab.at("another-controller-from"), lab.at("another-controller-to")
    for agent, adapter in AGENTS.items():
        en, _, gap = onair.air_shares(lab.snoop, int(adapter.removeprefix("hci")), start, end)
        # The stamps are whole seconds: up to the one the next phase may begin in.
        disturbed = [line.strip() for line in lab.lines(f"{agent}/enagentd.log")
                     if DISTURBED.search(line) and int(start) <= logged_at(line) < int(end)]
        print(f"  {agent}: its EN advertisement on the air {en:.0%} of the {end - start:.1f} s (the longest stretch without {gap:.1f} s); "
              + (f"{len(disturbed)} log lines of a disturbance (first: {disturbed[0]})" if disturbed else "nothing disturbed in its log"))
        if en < EN_SHARE_BESIDE or disturbed:
            fail(f"agent {agent} was disturbed by another controller's events: EN on the air {en:.0%} of the time"
                            + (f", it logged '{disturbed[0]}'" if disturbed else ""))
