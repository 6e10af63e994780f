#!/usr/bin/python3
"""browser-test.py ENAGENT_DEB COCKPIT_DEB SHOTS: the packages that `make deb` built, installed as
README says (`apt install ./enagent_*.deb`, then `apt install cockpit ./cockpit-enagent_*_all.deb`),
and the Cockpit page at https://127.0.0.1:9090 in Debian's chromium, headless, logged in through
Cockpit's own login page (make test-cockpit).

Runs as root, in mount, PID and network namespaces of its own, so that nothing it sets up outlives
it or shows outside: overlays on /etc, /usr and /var, where apt and dpkg install the two packages
for real (maintainer scripts and triggers run: the user enagent, the state directory, the bus
policy, the statoverride of key-server.conf), a fresh /run, two test users (enmember, added to the
group enagent as README says, and enother), the system bus of the installed dbus
(`dbus-daemon --system`, reading the installed policy), the installed enagentd as its unit runs it
(user enagent) without a radio, and Cockpit as its installed units run it without systemd: a
self-signed certificate from cockpit-certificate-ensure, cockpit-tls on port 9090, and the
cockpit-ws instances it asks for (and, where Cockpit has it, cockpit-session's socket), each
started on its socket's first connection as the socket units do, as the units' users
(`CockpitUnits`, which reads the unit files: the same code runs Debian 12's Cockpit and Debian
13's, make test-cockpit-trixie). Then, over the Chrome DevTools protocol, it logs in as each user and
checks what the page shows and does: the member sees every field `enctl status` shows, the
sightings per hour as the database counts them, the exposures and tests, and pauses and resumes
through the page while `enctl status` follows; the other user sees the status and the sentence
`enctl status` gives them, no control, and nothing of exposure, diagnosis or sightings in the page
or in the WebSocket traffic; when enagentd stops the page says so, and it follows enagentd when it
is back; Cockpit logged no traceback or protocol error. Screenshots go to SHOTS.

This file enters the namespaces and runs the steps in order; the steps are in browser_test/.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from browser_test.cdp import Browser
from browser_test.cockpit_units import CockpitUnits, check_cockpit_log, check_cockpit_tls
from browser_test.database import CALLS, as_user, fill_database
from browser_test.harness import BASE, DATABASE, ENCTL, MEMBER, OTHER, Failure, Work, run
from browser_test.provision import Daemon, add_users, install_packages, overlay, start_bus, start_health_authority
from browser_test.scenarios import (member_sees_and_controls, member_sees_low_then_increased_risk, member_shares_with_a_code,
                                    other_user_sees_status_only, page_follows_enagentd)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--call":  # as_user's child
        print(json.dumps(CALLS[sys.argv[2]](*json.loads(sys.argv[3]))))
        return 0
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    enagent_deb, cockpit_deb, shots = (os.path.abspath(argument) for argument in sys.argv[1:])
    for deb in (enagent_deb, cockpit_deb):
        if not os.path.exists(deb):
            raise Failure(f"no {deb}: make deb builds it")
    directory = os.environ.get("ENAGENT_BROWSER_TEST_WORK")
    if not directory:
        # Namespaces of its own: the mounts vanish with it, every process it starts dies with it
        # (the kernel has ended them all when unshare returns), and its loopback is its own.
        directory = tempfile.mkdtemp(prefix="enagent-browser-test-")
        os.chmod(directory, 0o755)
        try:
            inside = subprocess.run(["unshare", "--mount", "--pid", "--net", "--fork", "--propagation", "private", sys.executable] + sys.argv,
                                    env={**os.environ, "ENAGENT_BROWSER_TEST_WORK": directory})
        finally:
            shutil.rmtree(directory)
        return inside.returncode
    work = Work(directory, shots)
    run("ip", "link", "set", "lo", "up")
    os.makedirs(work.shots, exist_ok=True)
    try:
        test(work, enagent_deb, cockpit_deb)
    except Failure:
        for name in sorted(os.listdir(work.directory)):
            if name.endswith(".log"):
                with open(f"{work.directory}/{name}", errors="replace") as f:
                    print(f"--- {name} (its end):\n{f.read()[-3000:]}", file=sys.stderr)
        raise
    return 0


def test(work, enagent_deb, cockpit_deb):
    # What apt and dpkg write, and a /run as fresh as a boot's (no systemd in it).
    for directory in ("/etc", "/usr", "/var"):
        overlay(work, directory)
    run("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run")
    add_users(work)
    start_bus(work)
    install_packages(work, enagent_deb, cockpit_deb)
    publishes = start_health_authority(work)
    daemon = Daemon(work)
    daemon.start()
    run(ENCTL, "enable")
    counts, secrets = as_user("enagent", fill_database, DATABASE, int(time.time()))
    # enagentd judges its reminders as it starts (and then as things happen): anew, over the filled database.
    daemon.stop()
    daemon.start()
    CockpitUnits(work)
    check_cockpit_tls()

    member = Browser("member", work)
    member.log_in(MEMBER)
    member.open(BASE + "/enagent")
    member.wait("[...document.querySelectorAll('iframe')].some(f => f.src.includes('/enagent/'))", "Cockpit's shell to load the page")
    time.sleep(3)
    member.screenshot("member-in-cockpit")
    member_sees_and_controls(member, counts, DATABASE)
    member_sees_low_then_increased_risk(member, DATABASE, daemon)
    member_shares_with_a_code(member, publishes)
    page_follows_enagentd(member, daemon)
    member.close()

    other = Browser("other", work)
    other.log_in(OTHER)
    other_user_sees_status_only(other, secrets)
    other.close()
    check_cockpit_log(work)
    print("browser-test: every check passed")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"browser-test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
