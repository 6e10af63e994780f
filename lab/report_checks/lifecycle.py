"""The lab's steps and the agents' lives: the kills and restarts, the pause, the shutdown."""
import labframe, onair
from .agentslab import AGENTS
from .bounds import BACK_WITHIN, KEYS_PER_DAY, PAUSE_WITHIN


def steps(lab, fail):
    failed = [entry["step"] for entry in lab.entries("failed")]
    for step in failed:
        print(f"  failed: {step}")
        fail(f"lab step failed: {step}")
    if not failed:
        print("  every phase's commands succeeded")


def shutdown(lab, fail):
    labframe.agents_stopped(lab, fail, AGENTS)


def first_after_restart(lab, fail):
    """After agent a's SIGKILL and after bluetoothd's restart, each agent's next EN advertisement
    comes within BACK_WITHIN from a new address, timed from the moment the agent could act: the
    restarted agent's start, or the restarted bluetoothd offering its adapter (btmon); when it falls
    in the same interval as the last one before, its RPI comes from a fresh key (the day's key
    rolled), never the old key's again."""
    table, (found, *_) = lab.en_capture
    for event, restarted, controllers in (("bluetoothd-killed", "bluetoothd-restarted", (0, 1)), ("a-killed", "a-restarted", (0,))):
        for controller in controllers:
            offered = onair.offered(lab.snoop, controller, lab.at(restarted)) if event.startswith("bluetoothd") else None
            moment = lab.at(restarted) if offered is None else offered
            mine = [a for a in found if a["controller"] == controller]
            before = [a for a in mine if onair.unix_seconds(a["time"]) < lab.at(event)]
            # The kernel may set the same advertisement up again (same RPI, same address) when
            # bluetoothd restarts: the first with a new RPI is the agent's new identifier.
            after = [a for a in mine if onair.unix_seconds(a["time"]) >= max(moment, lab.at(event)) and before
                     and a["data"][11:27] != before[-1]["data"][11:27]]
            if not before or not after:
                fail(f"hci{controller}: no EN advertisement {'before' if not before else 'after'} {event}")
                continue
            last, first = before[-1], after[0]
            took = onair.unix_seconds(first["time"]) - moment
            _, last_interval, last_key = table.get(last["data"][11:27], (None, None, None))
            _, first_interval, first_key = table.get(first["data"][11:27], (None, None, None))
            rolled = first_interval == last_interval
            print(f"  {event.replace('-', ' ')} ({'from its restart' if offered is None else 'from hci%d offered again' % controller}): "
                  f"hci{controller} advertised again {took:.1f} s later from a new address "
                  f"{first['address'].hex(':')}; " + ("same interval, a fresh key (rolled)" if rolled and first_key != last_key
                                                     else "same interval, THE SAME KEY" if rolled else "the next interval's RPI"))
            if took > BACK_WITHIN:
                fail(f"hci{controller} advertised {took:.1f} s after {event} ({'restarted' if offered is None else 'offered again'}), more than {BACK_WITHIN:g} s")
            if first["address"] == last["address"]:
                fail(f"hci{controller} kept its address {last['address'].hex(':')} across {event}")
            if rolled and first_key == last_key:
                fail(f"hci{controller} advertised two RPIs of one key in interval {first_interval} across {event}")
    for agent in AGENTS:
        rolls = lab.text(f"{agent}/enagentd.log").count("rolled to a fresh key")
        print(f"  agent {agent} rolled to a fresh key {rolls} time(s) (a recovery within the interval of its last advertisement)")


def recovery(lab, fail):
    recovered = lab.bluetoothd_restart
    waited = lab.phase("bluetoothd-restart")
    for adapter in AGENTS.values():
        ready, took, _ = recovered.get(adapter, (None, None, None))
        print(f"  bluetoothd killed and restarted: it offered {adapter} again after "
              + (f"{ready:.1f} s; the agent advertised and scanned on it {took:.1f} s later (btmon)" if took is not None
                 else "?; the agent never advertised and scanned again (btmon)"))
        if took is None or took > BACK_WITHIN or waited.get(adapter) == "timeout":
            fail(f"{adapter} did not advertise and scan within {BACK_WITHIN:g} s of bluetoothd offering it again ({took})")
    snapshots = {name: lab.phase(name)["snapshot"] for name in ("before-kill", "after-kill", "end")}
    before, after, end = snapshots["before-kill"], snapshots["after-kill"], snapshots["end"]
    # Every key from before the kill is still there (a roll may have ended one early and added one).
    kept = {key for _, _, key in before["keys"]} <= {key for _, _, key in end["keys"]}
    per_day = {}
    for start, _, _ in end["keys"]:
        per_day[start] = per_day.get(start, 0) + 1
    print(f"  agent a killed with SIGKILL: {before['sightings']} sightings committed before, {after['sightings']} after, "
          f"{end['sightings']} at the end; database {after['integrity']}; TEKs {'kept' if kept else 'LOST'} after the restart; "
          f"keys per day {sorted(per_day.values())}")
    if max(per_day.values(), default=0) > KEYS_PER_DAY:
        fail(f"agent a has more than {KEYS_PER_DAY} keys for one day: {per_day}")
    if after["integrity"] != "ok":
        fail(f"agent a's database after SIGKILL: {after['integrity']}")
    if after["sightings"] < before["sightings"] or end["sightings"] < after["sightings"]:
        fail("committed sightings were lost across SIGKILL and restart")
    if not kept:
        fail("agent a lost TEKs across SIGKILL and restart")


def pause(lab, fail):
    advertising, scanning = lab.phase("pause-b")["radio"].split()
    paused = lab.phase("paused-status-b")["status"]
    # Timed in the capture: from enctl pause returning to the controller accepting the last
    # command that stopped its advertising and scanning.
    paused_at = lab.at("b-paused")
    quiet = next((time for time, on_air, listening in onair.radio_changes(lab.snoop, 1)
                  if time >= paused_at - 2 and not on_air and not listening), None)
    took = None if quiet is None else max(0.0, quiet - paused_at)
    print(f"  b paused: status {paused['status']}; hci1 stopped advertising and scanning "
          + (f"{took:.1f} s after enctl pause returned" if took is not None else "NEVER") + f" (the controller's commands; still {advertising}/{scanning} when polled)")
    if paused["status"] != "paused" or advertising != "no" or scanning != "no" or took is None or took > PAUSE_WITHIN:
        fail(f"pausing b left its radio on (advertising {advertising}, scanning {scanning}; stopped after {took} s)")
