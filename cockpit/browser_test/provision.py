"""The machine, inside the test's own namespaces: overlays on /etc, /usr and /var, the test users,
the system bus of the installed dbus, the two packages installed as README says, a health
authority's test servers, and the installed enagentd as its unit runs it."""
import filecmp
import os
import pwd
import subprocess

from .harness import ENAGENTD, ENCTL, MEMBER, OTHER, PASSWORD, ROOT, Failure, check, passed, run, wait_for

AUTHORITY_PORT = 9092


def overlay(work, directory):
    """`directory` as an overlay (in this mount namespace only): what the test and dpkg write goes
    to the test's directory, never to the host."""
    name = directory.strip("/").replace("/", "-")
    for part in ("upper", "work"):
        os.makedirs(f"{work.directory}/{name}-{part}")
    run("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={directory},upperdir={work.directory}/{name}-upper,workdir={work.directory}/{name}-work", directory)


def add_users(work):
    """The test users, with homes (not yet in the group enagent, which the package makes)."""
    hashed = run("openssl", "passwd", "-6", PASSWORD).stdout.strip()
    lines = {"passwd": [], "shadow": [], "group": [], "gshadow": []}
    for name, uid in (MEMBER, OTHER):
        home = f"{work.directory}/home/{name}"
        lines["passwd"].append(f"{name}:x:{uid}:{uid}::{home}:/bin/sh")
        lines["shadow"].append(f"{name}:{hashed}:20000:0:99999:7:::")
        lines["group"].append(f"{name}:x:{uid}:")
        lines["gshadow"].append(f"{name}:!::")
        os.makedirs(home)
        os.chown(home, uid, uid)
    for name, added in lines.items():
        with open(f"/etc/{name}", "a") as f:
            f.write("\n".join(added) + "\n")


def start_bus(work):
    """The installed dbus's system bus, as dbus.service runs it: /usr/share/dbus-1/system.conf,
    which reads the policies in /usr/share/dbus-1/system.d, where the package puts enagent's."""
    os.makedirs("/run/dbus")
    subprocess.Popen(["dbus-daemon", "--system", "--nofork", "--nopidfile"], stderr=open(work.directory + "/dbus-daemon.log", "w"))
    wait_for(lambda: os.path.exists("/run/dbus/system_bus_socket"), "the system bus")


def install_packages(work, enagent_deb, cockpit_deb):
    """README's commands, in the directory that holds the packages: apt installs them with dpkg,
    their maintainer scripts and the triggers they set off. Nothing is downloaded: what they
    depend on is installed on the host already (make test-cockpit sees to it), and this network
    namespace has no way out."""
    for command in (["apt", "install", "-y", "./" + os.path.basename(enagent_deb)],
                    ["apt", "install", "-y", "--no-install-recommends", "cockpit", "./" + os.path.basename(cockpit_deb)]):
        result = run(*command, cwd=os.path.dirname(enagent_deb), check_status=False)
        with open(work.directory + "/apt.log", "a") as f:
            f.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n")
        check(result.returncode == 0, f"{' '.join(command)}" + ("" if result.returncode == 0 else f": exit {result.returncode}: {result.stdout[-1500:]}{result.stderr}"))
    for package in ("enagent", "cockpit-enagent"):
        status = run("dpkg-query", "-W", "-f=${Status} ${Version}", package, check_status=False).stdout
        check(status.startswith("install ok installed"), f"dpkg has {package} installed and configured: {status}")
    check(os.path.exists(ENAGENTD) and os.path.exists(ENCTL), f"the package's {ENAGENTD} and {ENCTL}")
    installed = "/usr/share/cockpit/enagent"
    tree = ROOT + "/cockpit/enagent"
    names = sorted(os.listdir(tree))
    same = sorted(os.listdir(installed)) == names and not filecmp.cmpfiles(tree, installed, names, shallow=False)[1]
    if not same:
        raise Failure(f"{cockpit_deb}'s page differs from the tree's cockpit/enagent: run make deb to test this tree's page")
    passed("the package's page in /usr/share/cockpit/enagent is this tree's cockpit/enagent")
    versions = run("dpkg-query", "-W", "-f=${Package} ${Version}, ", "cockpit-ws", "cockpit-bridge").stdout.strip(", ")
    print(f"tested: {versions} on Debian {open('/etc/debian_version').read().strip()}", flush=True)
    # The group, then the member in it, as README says (sudo usermod -aG enagent NAME).
    run("usermod", "-aG", "enagent", MEMBER[0])
    check("enagent" in run("id", "-nG", MEMBER[0]).stdout.split(), f"{MEMBER[0]} is in the group enagent the package made")


def start_health_authority(work):
    """The test servers' verification and key server, written into the installed key-server.conf
    as an administrator does; the package made it 0640 root:enagent (a statoverride)."""
    log = work.directory + "/publishes.jsonl"
    subprocess.Popen(["/usr/bin/python3", ROOT + "/Tests/CommandTests/Servers/health_authority.py", str(AUTHORITY_PORT), log],
                     stdout=subprocess.DEVNULL, stderr=open(work.directory + "/health-authority.log", "w"))
    base = f"http://127.0.0.1:{AUTHORITY_PORT}/"
    path = "/etc/enagent/key-server.conf"
    with open(path, "a") as f:
        f.write(f"url = {base}\npublish-url = {base}v1/publish\nhealth-authority = test-authority\n"
                f"verification-url = {base}\nverification-api-key = test-api-key\n")
    mode = os.stat(path)
    check((mode.st_mode & 0o777, mode.st_uid, mode.st_gid) == (0o640, 0, pwd.getpwnam("enagent").pw_gid),
          "the package made key-server.conf 0640 root:enagent")
    wait_for(lambda: run("curl", "-s", "-o", "/dev/null", base, check_status=False).returncode == 0, "the health authority")
    return log


class Daemon:
    """The installed enagentd as enagentd.service runs it (User=enagent, Group=enagent,
    SupplementaryGroups=bluetooth, UMask=0077, /etc/enagent/enagent.conf), with the radio off and
    no wait for NTP in that file."""

    def __init__(self, work):
        with open("/etc/enagent/enagent.conf", "a") as f:
            f.write("radio = no\nrequire-synchronised-clock = no\n")
        self.log = work.directory + "/enagentd.log"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(["setpriv", "--reuid=enagent", "--regid=enagent", "--groups=enagent,bluetooth", ENAGENTD],
                                        stderr=open(self.log, "a"), preexec_fn=lambda: os.umask(0o077))
        wait_for(lambda: run(ENCTL, "status", check_status=False).returncode == 0, "enagentd on the bus")

    def stop(self):
        self.process.terminate()
        self.process.wait()
