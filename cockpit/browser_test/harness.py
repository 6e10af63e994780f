"""What every part of the browser test uses: its failure, its checks, commands and waits, the
names of the machine it sets up, and the Work, which each part that writes files is given."""
import os
import subprocess
import time
from dataclasses import dataclass

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PORT = 9090  # cockpit.socket's ListenStream
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
