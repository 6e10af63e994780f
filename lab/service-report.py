#!/usr/bin/env python3
"""service-report.py RUN_DIR [--check [NAME...]]: the service lab's checks (lab/systemd/checks.sh,
judged in the guest, where systemd, the journal and enctl answer) as its manifest recorded them,
a line each ("ok NAME: DETAIL" or "FAILED NAME: DETAIL"), then its figures. With --check it exits 1
unless every check held and the guest's checks ran to their end."""
import sys
from labframe import Check, Lab, arguments, report


def checks(lab):
    """A check per verdict the guest recorded, in its order; a check of each one a phase announced
    and the guest did not record (the Cockpit step's, when the lab was given cockpit-enagent: a
    guest that skipped one fails); then whether the guest's checks ended."""
    recorded_names = {entry["name"] for entry in lab.entries("check")}
    announced = [name for entry in lab.entries("cockpit") for name in entry["checks"].split()]
    return ([Check(entry["name"], f"{entry['verdict']} {entry['name']}: {entry['detail']}", recorded(entry))
             for entry in lab.entries("check")]
            + [Check(name, f"FAILED {name}: announced, never recorded", missing(name)) for name in announced if name not in recorded_names]
            + [Check("finished", "FIGURES", finished)])


def missing(name):
    def run(lab, fail):
        fail(f"{name}: the guest announced this check and did not record it")
    return run


def recorded(entry):
    def run(lab, fail):
        if entry["verdict"] != "ok":
            fail(f"{entry['name']}: {entry['detail']}")
    return run


def finished(lab, fail):
    for entry in lab.entries("figure"):
        print(entry["text"])
    if not lab.has("done"):
        fail("the guest's checks did not finish (no phase done in the manifest)")


def main():
    given = arguments(__doc__.splitlines()[0])
    lab = Lab(given.run)
    return report("service checks", given, lab, checks(lab))


if __name__ == "__main__":
    sys.exit(main())
