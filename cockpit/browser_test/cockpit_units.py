"""Cockpit as its installed units run it, with the test in systemd's place, and what the test
checks of it: the TLS and certificate a browser meets, and Cockpit's log after the test."""
import grp
import os
import pwd
import re
import select
import shlex
import socket
import ssl
import subprocess
import threading

from .harness import BASE, PORT, Failure, check, run, wait_for


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
