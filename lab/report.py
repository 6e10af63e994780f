#!/usr/bin/env python3
"""report.py RUN_DIR [ENCTL] [--check [NAME...]]: what happened in the agents' lab (agents.sh),
readable in ten seconds, and whether each rule of docs/lab.md held.

Reads the run's manifest (phases.jsonl), each agent's database and log (RUN_DIR/a, RUN_DIR/b) and
btmon's capture (btmon.snoop, btmon.txt), derives the agents' RPIs from their stored keys with
`enctl derive` (ENCTL: the tree's debug build unless given), and runs the checks of checks() in
order (each a function in report_checks/, grouped by what it judges). With --check it exits 1 unless every check holds; --check NAME... runs those checks alone
(on a saved run folder too); --list names them.

Every bound of a time is taken by the guest's own clocks, from the moment the agent could act:
the manifest's stamps and btmon's capture are the guest's (docs/lab.md, "The report")."""
import sys
import labframe
from labframe import Check, arguments, heading, report
from report_checks import adapter, air, api, exposure, heard, lifecycle, logs, sharing
from report_checks.agentslab import AgentsLab


def checks():
    """The report's checks, in the order they print."""
    return [
        Check("steps", "LAB STEPS (each phase's commands)", lifecycle.steps),
        Check("shutdown", "SHUTDOWN", lifecycle.shutdown),
        Check("who-saw-whom", "WHO SAW WHOM", heard.who_saw_whom),
        Check("address-rpi", "ADDRESS ↔ RPI (from btmon's advertising reports)", air.address_rpi),
        Check("on-air", "ON AIR (btsnoop, against the EN Bluetooth Specification)", air.on_air),
        Check("no-gap", "NO GAP, NO LINK (the first advertisement after each restart)", lifecycle.first_after_restart),
        Check("phones", "PHONES AND A CROWD (lab/phones.py on the other controllers)", heard.phones_and_crowd),
        Check("phone-exposures", "PHONE EXPOSURES (the phones' keys signed by the lab's authority; b detects through its API)", exposure.phone_exposures),
        Check("recovery", "RECOVERY", lifecycle.recovery),
        Check("logs", "LOGS", logs.logs),
        Check("pause", "PAUSE", lifecycle.pause),
        Check("adapter", "ADAPTER", adapter.adapter),
        Check("airplane-mode", "AIRPLANE MODE (both agents' adapters blocked by rfkill, then unblocked)", adapter.airplane_mode),
        Check("second-advertiser", "SECOND ADVERTISER (bluetoothctl's broadcast beside a's on hci0, through bluetoothd)", sharing.second_advertiser),
        Check("another-controller", "ANOTHER CONTROLLER (another program's advertisements, power cycle and connectable switch on a third controller)",
              sharing.another_controller),
        Check("unplug", "UNPLUG (every controller closed, as when a dongle is pulled, then new ones opened)", adapter.unplug),
        Check("suspend", "SUSPEND (a asleep, hci0 off, the clock forward into the next day, hci0 on, a awake)", adapter.suspend),
        Check("connectable", "CONNECTABLE ADAPTER (hci0 made connectable under a, then not)", adapter.connectable),
        Check("api-access", "API ACCESS (each method as root, a member of enagent and another user, under the bus policy)", api.api_access),
        Check("api", "API (enctl status at the end)", api.api),
        Check("exposure", "EXPOSURE (a shared its keys; b detected from the key server)", exposure.exposure),
    ]


def main():
    given = arguments(__doc__.splitlines()[0], extra=[("enctl", "enctl to derive and detect with")])
    lab = AgentsLab(given.run, labframe.enctl(given.enctl))
    try:
        lab.own
    except Exception as error:
        # Without the agents' databases no check can run: the lab stopped before its agents did.
        print(f"lab-test: FAIL\n  no agent database to read, or no enctl to derive with ({type(error).__name__}: {error}); see {lab.path('console.log')}")
        return 1 if given.check is not None else 0
    return report("lab-test", given, lab, checks(), ahead=heading)



if __name__ == "__main__":
    sys.exit(main())
