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
"""
import base64
import filecmp
import grp
import json
import os
import pwd
import re
import select
import shlex
import shutil
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass

import websocket  # python3-websocket

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PORT = 9090  # cockpit.socket's ListenStream
AUTHORITY_PORT = 9092
BASE = f"https://127.0.0.1:{PORT}"
PAGE = BASE + "/cockpit/@localhost/enagent/index.html"
PASSWORD = "enagent-browser-test"
MEMBER, OTHER = ("enmember", 64001), ("enother", 64002)
ENCTL = "/usr/bin/enctl"
ENAGENTD = "/usr/sbin/enagentd"
DATABASE = "/var/lib/enagent/enagent.db"


@dataclass(frozen=True)
class Work:
    """The test's paths: `directory`, its files, made by main() before it enters the namespaces
    (a directory the test users may enter), and `shots`, where its screenshots go."""
    directory: str
    shots: str


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    passed(message)


def passed(message):
    """What the waits before it showed (each fails the test when it times out)."""
    print(f"ok: {message}", flush=True)


def run(*command, user=None, check_status=True, cwd=None):
    prefix = ["setpriv", f"--reuid={user[1]}", f"--regid={user[1]}", "--init-groups"] if user else []
    result = subprocess.run(prefix + list(command), capture_output=True, text=True, cwd=cwd)
    if check_status and result.returncode != 0:
        raise Failure(f"{' '.join(command)}: exit {result.returncode}: {result.stderr}")
    return result


def wait_for(condition, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise Failure(f"timed out waiting for {what}")


def as_user(name, function, *arguments):
    """function(*arguments) in this script run anew as `name` (its uid, gid and groups, umask
    0077), its JSON-able result returned: the database's files stay the daemon's, as they are when
    it runs. A process of its own, not a fork: this one has threads by then (CockpitUnits)."""
    account = pwd.getpwnam(name)
    groups = [group.gr_gid for group in grp.getgrall() if name in group.gr_mem]
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--call", function.__name__, json.dumps(arguments)],
                            user=account.pw_uid, group=account.pw_gid, extra_groups=groups, umask=0o077,
                            capture_output=True, text=True, cwd="/")
    if result.returncode != 0:
        raise Failure(f"{function.__name__} as {name} failed: {result.stderr}")
    return json.loads(result.stdout)


# MARK: The machine, inside this process's own namespaces

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


class CockpitUnits:
    """Cockpit as cockpit.socket and the units it pulls in run it, with this test in systemd's
    place (there is no systemd as PID 1 here), read from the installed unit files, so that the
    same code runs Debian 12's Cockpit and Debian 13's (Raspberry Pi OS's), whose units differ:

    - cockpit.socket: a socket listening on port 9090 before anything runs; its first connection
      starts cockpit.service: its ExecStartPre as root (`cockpit-certificate-ensure
      --for-cockpit-tls`: the self-signed certificate in /etc/cockpit/ws-certs.d, made as Cockpit
      makes it, and its copy in RUNTIME_DIRECTORY), then its ExecStart (cockpit-tls) as its User
      and Group, the socket as its fd 3 (LISTEN_FDS, LISTEN_PID), after the sockets it Requires;
    - cockpit-wsinstance-http.socket: /run/cockpit/wsinstance/http.sock (cockpit-ws --no-tls, for
      plain http, which it redirects to https);
    - cockpit-wsinstance-https-factory.socket (Accept=yes): cockpit-tls sends it a client
      certificate's fingerprint and waits for "done"; Cockpit's factory asks systemd over D-Bus to
      start the socket cockpit-wsinstance-https@FINGERPRINT.socket, and this test starts it itself:
      https@FINGERPRINT.sock, on whose first connection cockpit-wsinstance-https@.service starts
      (`cockpit-ws --for-tls-proxy --port=0`);
    - where cockpit-ws's service Requires it (Debian 13's Cockpit 337, whose cockpit-session is no
      longer setuid; not Debian 12's 287), cockpit-session.socket (Accept=yes): each connection
      of a cockpit-ws runs cockpit-session as root on it (cockpit-session@.service,
      StandardInput=socket).

    Users and groups are the units' (User=, Group=, SocketUser=, SocketGroup=); where a unit has
    DynamicUser=yes, which systemd allocates as the unit starts, the test adds that user or group
    as a system account the first time (named as systemd names it: User=, else the unit's name
    without its instance). A name no unit allocates must exist already (the package made it).
    As with systemd, a service that exits (cockpit-tls and cockpit-ws exit when idle) starts
    again on its socket's next connection. Left out: systemd's sandboxing (ProtectSystem= and the
    like), cgroups and slices, and cockpit.socket's ExecStartPost (the console's login banner)."""

    DIRECTORIES = ("/usr/lib/systemd/system", "/lib/systemd/system")
    # Run by the test itself: it asks systemd over D-Bus to start a socket unit.
    FACTORY = "cockpit-wsinstance-https-factory.socket"

    def __init__(self, work):
        self.lock = threading.RLock()
        self.started = set()  # socket units listening
        self.log = open(work.directory + "/cockpit.log", "w")
        # The users and groups that systemd allocates as a DynamicUser= unit starts (a user's
        # group of the same name too).
        self.dynamic_users, self.dynamic_groups = set(), set()
        for directory in self.DIRECTORIES:
            if os.path.isdir(directory):
                for name in sorted(os.listdir(directory)):
                    if name.startswith("cockpit") and name.endswith(".service"):
                        service = self.unit(name)["Service"]
                        if self.last(service, "DynamicUser") in ("yes", "true", "1"):
                            user = self.last(service, "User") or name.split("@")[0].removesuffix(".service")
                            self.dynamic_users.add(user)
                            self.dynamic_groups |= {user, self.last(service, "Group") or user}
                break
        self.start_socket("cockpit.socket")
        print("cockpit units: read from " + self.directory + (f"; DynamicUser= users {', '.join(sorted(self.dynamic_users))}" if self.dynamic_users else ""), flush=True)

    # MARK: Unit files

    def unit(self, name):
        """The unit file NAME (a template's for an instance) as {section: {key: [values]}}."""
        file_name = re.sub(r"@[^.]+\.", "@.", name)
        for directory in self.DIRECTORIES:
            path = f"{directory}/{file_name}"
            if os.path.exists(path):
                self.directory = directory
                break
        else:
            raise Failure(f"no unit {file_name} in {' or '.join(self.DIRECTORIES)}")
        sections, section = {"Unit": {}, "Service": {}, "Socket": {}}, None
        instance = name.split("@", 1)[1].rsplit(".", 1)[0] if "@" in name and not name.endswith("@.service") else ""
        for line in open(path):
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = sections.setdefault(line.strip("[]"), {})
            else:
                key, _, value = line.partition("=")
                values = section.setdefault(key.strip(), [])
                if value.strip():
                    values.append(value.strip().replace("%i", instance).replace("%I", instance))
                else:  # an empty assignment empties the list, as in systemd
                    values.clear()
        return sections

    @staticmethod
    def last(section, key):
        return (section.get(key) or [""])[-1]

    def account(self, name, kind):
        """The uid or gid of NAME: the package's, or systemd's dynamic one, made here."""
        lookup = {"user": lambda: pwd.getpwnam(name).pw_uid, "group": lambda: grp.getgrnam(name).gr_gid}[kind]
        try:
            return lookup()
        except KeyError:
            pass
        if name not in (self.dynamic_users if kind == "user" else self.dynamic_groups):
            raise Failure(f"no {kind} {name}, which Cockpit's units name and none of them allocates (DynamicUser=yes)")
        with self.lock:
            try:
                return lookup()
            except KeyError:
                if kind == "group":
                    run("groupadd", "--system", name)
                else:
                    own_group = ["--gid", str(self.account(name, "group"))]
                    run("useradd", "--system", "--no-create-home", "--home-dir", "/", "--shell", "/usr/sbin/nologin", *own_group, name)
                return lookup()

    # MARK: Sockets

    def start_socket(self, name):
        """Listens on the socket unit NAME (once) and starts its service as systemd would."""
        with self.lock:
            if name in self.started:
                return
            self.started.add(name)
        socket_section = self.unit(name)["Socket"]
        for required in self.unit(name)["Unit"].get("Requires", []):
            for other in required.split():
                if other.endswith(".socket"):
                    self.start_socket(other)
        address = self.last(socket_section, "ListenStream")
        if address.isdigit():
            listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)  # all addresses, as systemd's BindIPv6Only=default
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("::", int(address)))
            listener.listen(4096)
        else:
            os.makedirs(os.path.dirname(address), exist_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(address)
            os.chown(address, self.account(self.last(socket_section, "SocketUser") or "root", "user"),
                     self.account(self.last(socket_section, "SocketGroup") or "root", "group"))
            os.chmod(address, int(self.last(socket_section, "SocketMode") or "0666", 8))
            listener.listen(128)
        accept = self.last(socket_section, "Accept") in ("yes", "true", "1")
        service = name.removesuffix(".socket") + ("@.service" if accept else ".service")
        if name == self.FACTORY:
            target = self.factory
        elif accept:
            target = self.accepting
        else:
            target = self.activating
        threading.Thread(target=target, args=(listener, service), daemon=True).start()

    def activating(self, listener, service):
        """Accept=no: the service starts on the first connection, with the listening socket as
        its fd 3, and again on the next after it exits."""
        descriptor = listener.fileno()

        def as_fd_3():
            os.dup2(descriptor, 3)
            os.set_inheritable(3, True)
        while True:
            select.select([listener], [], [])
            self.run_service(service, {"LISTEN_FDS": "1"}, preexec_fn=as_fd_3, close_fds=False)

    def accepting(self, listener, service):
        """Accept=yes: a service instance for each connection, the connection its stdin and stdout."""
        while True:
            connection, _ = listener.accept()
            def serve(connection=connection):
                with connection:
                    self.run_service(service, {}, stdin=connection, stdout=connection)
            threading.Thread(target=serve, daemon=True).start()

    def run_service(self, service, environment, **popen):
        section = self.unit(service)["Service"]
        for required in self.unit(service)["Unit"].get("Requires", []):
            for other in required.split():
                if other.endswith(".socket"):
                    self.start_socket(other)
        dynamic = self.last(section, "DynamicUser") in ("yes", "true", "1")
        user = self.last(section, "User") or (service.split("@")[0].removesuffix(".service") if dynamic else "root")
        group = self.last(section, "Group") or (user if dynamic else pwd.getpwnam(user).pw_gid)
        uid = self.account(user, "user")
        gid = group if isinstance(group, int) else self.account(group, "group")
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **environment}
        for assignment in section.get("Environment", []):
            for word in shlex.split(assignment):
                key, _, value = word.partition("=")
                env[key] = value
        for directory in section.get("RuntimeDirectory", []):
            path = "/run/" + directory
            os.makedirs(path, exist_ok=True)
            os.chown(path, uid, gid)
            env["RUNTIME_DIRECTORY"] = path
        success = {0} | {int(status) for line in section.get("SuccessExitStatus", []) for status in line.split() if status.isdigit()}
        for line in section.get("ExecStartPre", []):
            self.execute(line, uid, gid, env, success, stdout=self.log)
        for line in section.get("ExecStart", []):
            self.execute(line, uid, gid, env, success, **({"stdout": self.log} | popen))

    def execute(self, line, uid, gid, env, success, **popen):
        """One Exec line: `+` runs it as root, `-` lets it fail; a failure is logged."""
        prefix = re.match(r"[-+@!:]*", line).group(0)
        command = shlex.split(line[len(prefix):])
        if "+" not in prefix and uid != 0:
            command = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups"] + command
        # sh's $$ is the pid that setpriv and then the service keep through exec.
        result = subprocess.run(["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + command, env=env, stderr=self.log, **popen)
        if result.returncode not in success and "-" not in prefix:
            print(f"cockpit units: {line}: exit {result.returncode}", file=self.log, flush=True)

    def factory(self, listener, service):
        """What cockpit-wsinstance-factory does, with this test as systemd: the fingerprint that
        cockpit-tls sends names the instance whose socket is started, then "done"."""
        while True:
            connection, _ = listener.accept()
            with connection:
                connection.settimeout(10)
                fingerprint = b""
                while chunk := connection.recv(256):
                    fingerprint += chunk
                name = fingerprint.decode()
                if not name.isalnum():
                    continue
                self.start_socket(f"cockpit-wsinstance-https@{name}.socket")
                connection.sendall(b"done")
                connection.shutdown(socket.SHUT_WR)


def check_cockpit_tls():
    """What a browser meets at https://HOST:9090 before the login page."""
    wait_for(lambda: run("curl", "-skf", "-o", "/dev/null", BASE + "/", check_status=False).returncode == 0, "Cockpit at " + BASE)
    served = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", PORT)))
    with open("/etc/cockpit/ws-certs.d/0-self-signed.cert") as f:
        made = ssl.PEM_cert_to_DER_cert(re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", f.read(), re.S).group(0))
    check(served == made, "Cockpit serves TLS on port 9090 with the self-signed certificate cockpit-certificate-ensure made")


def check_cockpit_log(work):
    """What Cockpit's programs wrote (the bridge's stderr among them): a match or call of the page's
    that the bridge refused shows there, and in the page only as a signal that never comes."""
    with open(work.directory + "/cockpit.log", errors="replace") as f:
        text = f.read()
    refused = [line for line in text.splitlines() if re.search(r"Traceback|Exception|protocol-error|cockpit-protocol-Message|unsupported match", line)]
    check(not refused, f"Cockpit logged no traceback or protocol error: {refused[:5]}")


def enctl_status(user=None):
    return json.loads(run(ENCTL, "status", "--json", user=user).stdout)


def record_verdict(db, detection, now, day, risk):
    """A detection's verdict, as enagentd stores it (the risk_verdict table): `risk` on `day`, one encounter."""
    low, increased = risk == "low", risk == "increased"
    db.execute("""INSERT INTO risk_verdict (detection_id, assessed_at, model, total, low_risk_days, increased_risk_days, latest_low_risk_day,
                  latest_increased_risk_day, low_risk_encounters, increased_risk_encounters) VALUES (?, ?, 'en-express', ?, ?, ?, ?, ?, ?, ?)""",
               (detection, now, risk, int(low), int(increased), day if low else None, day if increased else None, int(low), int(increased)))


def raise_risk(path, now):
    """A later detection whose verdict is increased risk on the exposure windows' day."""
    db = sqlite3.connect(path)
    day = now - now % 86400 - 3 * 86400
    detection = db.execute("INSERT INTO exposure_detection (started_at, finished_at, key_file_count, matched_key_count) VALUES (?, ?, 1, 1)",
                           (now - 60, now - 50)).lastrowid
    record_verdict(db, detection, now - 50, day, "increased")
    db.commit()
    db.close()


def fill_database(path, now):
    """What the member's page draws: sightings over the last 30 hours, two exposure windows three
    days ago with a verdict of low risk, a positive test and yesterday's key. Returns the facts the
    other user must not learn."""
    hour = now - now % 3600
    db = sqlite3.connect(path)
    rows = []
    for back in range(30):
        for device in range((back * 7) % 11):
            for seen in range(device % 3 + 1):
                rpi = bytes([back, device]) + os.urandom(14)
                rows.append((rpi, os.urandom(4), -60 - device, hour - back * 3600 + device * 60 + seen * 30, "hci0"))
    db.executemany("INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, ?, ?)", rows)
    day = now - now % 86400 - 3 * 86400
    detection = db.execute("INSERT INTO exposure_detection (started_at, finished_at, key_file_count, matched_key_count) VALUES (?, ?, 1, 1)",
                           (now - 600, now - 590)).lastrowid
    for minimum in (48, 63):
        window = db.execute("""INSERT INTO exposure_window (detection_id, day, report_type, infectiousness, calibration_confidence, key_data,
                               rolling_start_interval_number, rolling_period, transmission_risk_level) VALUES (?, ?, 1, 2, 3, ?, ?, 144, 0)""",
                            (detection, day, os.urandom(16), day // 600)).lastrowid
        for scan in range(6):
            db.execute("INSERT INTO scan_instance (window_id, min_attenuation, typical_attenuation, seconds_since_last_scan) VALUES (?, ?, ?, 300)",
                       (window, minimum + scan, minimum + scan + 4))
    record_verdict(db, detection, now - 590, day, "low")
    # Yesterday's key, rolled, for sharing.
    yesterday = now - now % 86400 - 86400
    db.execute("INSERT INTO temporary_exposure_key (rolling_start_interval_number, key_data, rolling_period, created_at) VALUES (?, ?, 144, ?)",
               (yesterday // 600, os.urandom(16), yesterday))
    result_id = "browser-test-positive-result"
    db.execute("INSERT INTO test_result (id, test_date, verification_method, recorded_at) VALUES (?, ?, 'verification-code', ?)",
               (result_id, day, now - 300))
    db.commit()
    counts = db.execute("SELECT seen_at - seen_at % 3600 AS h, count(*), count(DISTINCT rpi) FROM sighting GROUP BY h ORDER BY h").fetchall()
    db.close()
    exposure_day = time.strftime("%Y-%m-%d", time.gmtime(day))
    return counts, [exposure_day, str(day), result_id, "recent-exposure"]


def add_sightings(path, count):
    """`count` sightings now, as a scan records them; the current hour's count and distinct identifiers in the database after."""
    now = int(time.time())
    db = sqlite3.connect(path)
    db.executemany("INSERT INTO sighting (rpi, aem, rssi, seen_at, adapter) VALUES (?, ?, ?, ?, ?)",
                   [(os.urandom(16), os.urandom(4), -70, now, "hci0") for _ in range(count)])
    db.commit()
    hour = now - now % 3600
    row = db.execute("SELECT ?, count(*), count(DISTINCT rpi) FROM sighting WHERE seen_at >= ? AND seen_at < ?", (hour, hour, hour + 3600)).fetchone()
    db.close()
    return row


# MARK: Chromium over the DevTools protocol

class Browser:
    """One headless chromium with a profile of its own (so one login), its page driven over CDP."""

    def __init__(self, name, work):
        self.name, self.shots = name, work.shots
        profile = f"{work.directory}/chromium-{name}"
        # --ignore-certificate-errors: a person clicks through the warning about Cockpit's
        # self-signed certificate (the test checks first that it is the one Cockpit made).
        self.process = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
                                         "--ignore-certificate-errors",
                                         f"--user-data-dir={profile}", "--window-size=1280,1700", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile + "/DevToolsActivePort"
        wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), "chromium's DevTools port")
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(target for target in targets if target["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id, self.frames, self.exceptions = 0, [], []
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")

    def send(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("method") in ("Network.webSocketFrameReceived", "Network.webSocketFrameSent"):
                self.frames.append(message["params"]["response"]["payloadData"])
            elif message.get("method") == "Runtime.exceptionThrown":
                self.exceptions.append(message["params"]["exceptionDetails"])
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise Failure(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, what, timeout=20):
        def holds():
            try:
                return self.evaluate(expression)
            except Failure:  # the page is between two documents
                return False
        try:
            return wait_for(holds, f"{self.name}: {what}", timeout)
        except Failure as failure:
            raise Failure(f"{failure}; the page says: {self.evaluate('document.body.innerText')[:400]!r}")

    def open(self, url):
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete'", f"{url} to load")

    def log_in(self, user):
        self.open(BASE + "/")
        # The form is in the page from the start, hidden until login.js has set it up (Cockpit 337's
        # attaches the button's handler only then: a click before it does nothing).
        self.wait("!!document.getElementById('login-user-input') && !document.getElementById('login').hidden", "the login form")
        check(self.evaluate("location.protocol") == "https:", f"{self.name}: Cockpit's login page, over https")
        self.screenshot(f"login-{self.name}")
        self.evaluate(f"""document.getElementById('login-user-input').value = {json.dumps(user[0])};
                          document.getElementById('login-password-input').value = {json.dumps(PASSWORD)};
                          document.getElementById('login-button').click()""")
        self.wait("location.pathname !== '/' && !document.getElementById('login-user-input')", "the login", timeout=30)

    def screenshot(self, name):
        path = f"{self.shots}/{name}.png"
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]))
        print(f"screenshot: {path}")

    def close(self):
        own = [exception for exception in self.exceptions if "/enagent/" in json.dumps(exception)]
        check(not own, f"{self.name}: the page threw nothing: {own}")
        self.socket.close()
        self.process.terminate()
        self.process.wait()


# MARK: What each user sees and may do

def page_status_fields(browser):
    return browser.evaluate("[...document.querySelectorAll('#status-fields dt')].map(e => e.textContent.trim())")


def enctl_status_fields(user=None):
    """The first column of `enctl status`, without Status (the page's heading shows it)."""
    text = run(ENCTL, "status", user=user).stdout.split("\n\n")[0]
    return [re.split(r"\s{2,}", line.strip())[0] for line in text.splitlines() if line.strip() and line.split()[0] != "Status"]


def member_sees_low_then_increased_risk(browser, database, daemon):
    """Below the alert threshold the page says low risk and nothing says "exposed"; a verdict of
    increased risk turns the card red and brings the reminder."""
    browser.wait("document.getElementById('risk-level').textContent === 'low'", "the risk card to show low risk")
    check(not browser.evaluate("document.getElementById('risk-card').hidden"), "the member sees the risk card")
    check("below your health authority's alert threshold" in browser.evaluate("document.getElementById('risk-advice').textContent"),
          "low risk is shown as encounters below the alert threshold")
    check("exposed" not in browser.evaluate("document.body.innerText"), "nothing on the page says exposed for low risk")
    check(enctl_status(MEMBER).get("risk") == "low" and "recent-exposure" not in enctl_status(MEMBER)["reminders"], "enctl status agrees: low, no reminder")
    browser.screenshot("member-low-risk")
    as_user("enagent", raise_risk, database, int(time.time()))
    daemon.stop()  # enagentd judges its reminders as it starts
    daemon.start()
    browser.wait("document.getElementById('risk-level').textContent === 'increased'", "the risk card to show increased risk")
    check(browser.evaluate("document.getElementById('risk-card').className").endswith("en-risk-increased"), "the card is drawn as increased")
    check(browser.evaluate("document.getElementById('risk-advice').textContent").startswith("Increased risk: you were exposed on"),
          "the card says what the verdict asks")
    browser.wait("document.getElementById('reminders').textContent.startsWith('You were exposed on')", "the reminder of the exposure")
    browser.screenshot("member-increased-risk")
    passed("the page shows low risk without an alarm, then increased risk with its reminder")


def member_sees_and_controls(browser, counts, database):
    browser.open(PAGE)
    browser.wait("!document.getElementById('status-card').hidden && document.getElementById('status-name').textContent === 'active'", "the status")
    check(page_status_fields(browser) == enctl_status_fields(MEMBER), "the member's page shows every field enctl status shows, in its order")
    check(browser.evaluate("document.getElementById('status-meaning').textContent") == "advertising and scanning", "the status says what it means")
    browser.wait("document.querySelectorAll('#sightings-chart rect.en-bar').length > 0", "the sightings chart")
    bars = browser.evaluate("""[...document.querySelectorAll('#sightings-chart rect.en-bar')]
        .map(r => [Number(r.dataset.hour), Number(r.dataset.sightings), Number(r.dataset.identifiers)])""")
    check([bar for bar in bars if bar[1] > 0] == [list(row) for row in counts], f"the chart's {len(counts)} hours are the database's counts per hour")
    check(all(bar[1] == 0 for bar in bars if bar[0] not in {row[0] for row in counts}), "an hour without sightings is drawn as none")
    # What a change of SightingsStored does (the radio's, which this enagentd has none of, sends it):
    # the latest hours asked for again and merged into the chart.
    latest = as_user("enagent", add_sightings, database, 5)
    browser.evaluate("refreshSightings(true)")
    browser.wait(f"document.querySelector('#sightings-chart rect[data-hour=\"{latest[0]}\"]').dataset.sightings === '{latest[1]}'",
                 "the chart to take the latest hour's new sightings")
    bars = browser.evaluate("[...document.querySelectorAll('#sightings-chart rect.en-bar')].filter(r => r.dataset.sightings !== '0').length")
    check(bars == len(counts) + (0 if latest[0] in {row[0] for row in counts} else 1), "the latest hours merged into the chart, the earlier kept")
    browser.wait("document.querySelectorAll('#windows tbody tr').length === 2", "the exposure windows")
    check(browser.evaluate("document.querySelectorAll('#exposure-timeline rect.en-window').length") == 2, "the timeline draws both windows")
    check(browser.evaluate("document.querySelectorAll('#summaries tbody tr').length") == 1, "one daily summary")
    check(browser.evaluate("document.querySelectorAll('#test-results tbody tr').length") == 1, "the positive test")
    browser.screenshot("member")

    browser.evaluate("document.getElementById('pause-for').value = '7200'; document.getElementById('pause').click()")
    browser.wait("document.getElementById('status-name').textContent === 'paused'", "the page to show the pause")
    status = enctl_status()
    check(status["status"] == "paused" and abs(status["pausedUntil"] - time.time() - 7200) < 60, "enctl status follows a pause of 2 hours through the page")
    check(not browser.evaluate("document.getElementById('resume').hidden"), "a paused agent offers Resume")
    browser.screenshot("member-paused")
    browser.evaluate("document.getElementById('resume').click()")
    browser.wait("document.getElementById('status-name').textContent === 'active'", "the page to show the resume")
    check(enctl_status()["status"] == "active", "enctl status follows the resume through the page")
    run(ENCTL, "pause", "30m")
    browser.wait("document.getElementById('status-name').textContent === 'paused'", "the page to follow a pause made elsewhere")
    run(ENCTL, "resume")
    browser.wait("document.getElementById('status-name').textContent === 'active'", "the page to follow a resume made elsewhere")
    passed("the page follows a pause and a resume made with enctl, on the change signals")


def member_shares_with_a_code(browser, publishes):
    browser.evaluate("""document.getElementById('share-code').value = '12345678';
                        document.getElementById('share-agree').checked = true;
                        document.getElementById('share').click()""")
    browser.wait("/\\nShared\\.\\n/.test(document.getElementById('share-output').textContent)", "the share to finish", timeout=60)
    sent = [json.loads(line) for line in open(publishes)]
    check(any(publish.get("keys") and publish.get("status") == 200 for publish in sent), "the key server took the keys that enctl shared for the page")
    browser.wait("[...document.querySelectorAll('#test-results tbody tr')].some(row => row.cells[3].textContent.endsWith('UTC'))", "the shared result")
    check(browser.evaluate("document.querySelectorAll('#test-results tbody tr').length") == 2, "the code's test result is listed beside the other")
    browser.screenshot("member-shared")


def other_user_sees_status_only(browser, secrets):
    browser.open(PAGE)
    browser.wait("!document.getElementById('status-card').hidden && !document.getElementById('health-hidden').hidden", "the status")
    hidden = browser.evaluate("document.getElementById('health-hidden').textContent")
    told = run(ENCTL, "status", user=OTHER).stdout
    check(" ".join(hidden.split()) in " ".join(told.split()), "the page says what more needs the group, as enctl status says it to the same user")
    check(page_status_fields(browser) == enctl_status_fields(OTHER), "the other user's page shows the fields enctl status shows them")
    for card in ("controls", "risk-card", "sightings-card", "exposures-card", "tests-card"):
        check(browser.evaluate(f"document.getElementById('{card}').hidden"), f"the other user is offered no {card}")
    time.sleep(2)  # what else the page might still ask for
    dom = browser.evaluate("document.documentElement.outerHTML")
    for secret in secrets:
        check(secret not in dom, f"the other user's page holds no {secret}")
        check(not any(secret in frame for frame in browser.frames), f"the other user's WebSocket traffic holds no {secret}")
    check(browser.evaluate("document.querySelectorAll('rect').length") == 0, "nor any chart")
    # The method names themselves are in the introspection data anyone may read; a call is not.
    calls = [re.search(r'"call":\["[^"]*","org\.enagent\.ExposureNotification1","(\w+)"', frame) for frame in browser.frames]
    called = {call.group(1) for call in calls if call}
    check(called == {"GetHealthStatus"}, f"the other user's page calls no method of enagentd but GetHealthStatus, which answers it no: {called}")
    browser.screenshot("other-user")


def page_follows_enagentd(browser, daemon):
    daemon.stop()
    browser.wait("!document.getElementById('not-running').hidden && document.getElementById('status-card').hidden", "the page to say enagentd stopped")
    browser.screenshot("not-running")
    daemon.start()
    browser.wait("document.getElementById('not-running').hidden && !document.getElementById('status-card').hidden", "the page to follow enagentd back")
    daemon.stop()
    browser.open(PAGE)
    browser.wait("!document.getElementById('not-running').hidden", "a page opened without enagentd to say so")
    daemon.start()
    browser.wait("document.getElementById('not-running').hidden && !document.getElementById('sightings-card').hidden", "that page to follow enagentd")
    passed("the page says when enagentd is not running, also when it opens without it, and follows it when it is back")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--call":  # as_user's child
        print(json.dumps({"fill_database": fill_database, "add_sightings": add_sightings, "raise_risk": raise_risk}[sys.argv[2]](*json.loads(sys.argv[3]))))
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
