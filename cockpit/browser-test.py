#!/usr/bin/python3
"""browser-test.py BIN SHOTS: the Cockpit page in Debian's chromium, headless, against cockpit-ws on
loopback with enagentd (from BIN, a build directory) on a system bus of its own (make test-cockpit).

Runs as root, in mount, PID and network namespaces of its own, so that nothing it sets up outlives
it or shows outside: overlays on /etc, with two test users (enmember, in the group enagent, and
enother) and key-server.conf, and on /usr/share/cockpit, a dbus-daemon at the system bus's usual
path with the system bus's default policy and enagent's, enagentd without a radio, enctl in
/usr/local/bin, the page in /usr/share/cockpit/enagent, and cockpit-ws on 127.0.0.1. Then, over the
Chrome DevTools protocol, it logs in as each user and checks what the page shows and does: the
member sees every field `enctl status` shows, the sightings per hour as the database counts them,
the exposures and tests, and pauses and resumes through the page while `enctl status` follows; the
other user sees the status and the sentence `enctl status` gives them, no control, and nothing of
exposure, diagnosis or sightings in the page or in the WebSocket traffic; when enagentd stops the
page says so, and it follows enagentd when it is back. Screenshots go to SHOTS.
"""
import base64
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket  # python3-websocket

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PORT = 9091
AUTHORITY_PORT = 9092
BASE = f"http://127.0.0.1:{PORT}"
PAGE = BASE + "/cockpit/@localhost/enagent/index.html"
PASSWORD = "enagent-browser-test"
MEMBER, OTHER = ("enmember", 64001), ("enother", 64002)
GROUP_ID = 64000
ENCTL = "/usr/local/bin/enctl"
# The test's files, made by main() before it enters the namespaces: a directory the test users may enter.
WORK = None


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)
    passed(message)


def passed(message):
    """What the waits before it showed (each fails the test when it times out)."""
    print(f"ok: {message}")


def run(*command, user=None, check_status=True):
    prefix = ["setpriv", f"--reuid={user[1]}", f"--regid={user[1]}", "--init-groups"] if user else []
    result = subprocess.run(prefix + list(command), capture_output=True, text=True)
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


# MARK: The machine as the page needs it, inside this process's own namespaces

def overlay(directory):
    """`directory` as an overlay (in this mount namespace only), so that the test may add to it."""
    name = directory.strip("/").replace("/", "-")
    for part in ("upper", "work"):
        os.makedirs(f"{WORK}/{name}-{part}")
    run("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={directory},upperdir={WORK}/{name}-upper,workdir={WORK}/{name}-work", directory)


def install_page():
    """The page where the package puts it (debian/cockpit-enagent.install)."""
    overlay("/usr/share/cockpit")
    run("cp", "-r", ROOT + "/cockpit/enagent", "/usr/share/cockpit/enagent")


def add_users():
    """The test users, with homes."""
    hashed = run("openssl", "passwd", "-6", PASSWORD).stdout.strip()
    lines = {"passwd": [], "shadow": [], "group": [f"enagent:x:{GROUP_ID}:{MEMBER[0]}"], "gshadow": [f"enagent:!::{MEMBER[0]}"]}
    for name, uid in (MEMBER, OTHER):
        home = f"{WORK}/home/{name}"
        lines["passwd"].append(f"{name}:x:{uid}:{uid}::{home}:/bin/sh")
        lines["shadow"].append(f"{name}:{hashed}:20000:0:99999:7:::")
        lines["group"].append(f"{name}:x:{uid}:")
        lines["gshadow"].append(f"{name}:!::")
        os.makedirs(home)
        os.chown(home, uid, uid)
    for name, added in lines.items():
        with open(f"/etc/{name}", "a") as f:
            f.write("\n".join(added) + "\n")


def start_health_authority():
    """The test servers' verification and key server, and key-server.conf for them as the package makes it (0640 root:enagent)."""
    log = WORK + "/publishes.jsonl"
    subprocess.Popen(["/usr/bin/python3", ROOT + "/Tests/CommandTests/Servers/health_authority.py", str(AUTHORITY_PORT), log],
                     stdout=subprocess.DEVNULL, stderr=open(WORK + "/health-authority.log", "w"))
    base = f"http://127.0.0.1:{AUTHORITY_PORT}/"
    os.makedirs("/etc/enagent")
    with open("/etc/enagent/key-server.conf", "w") as f:
        f.write(f"url = {base}\npublish-url = {base}v1/publish\nhealth-authority = test-authority\n"
                f"verification-url = {base}\nverification-api-key = test-api-key\n")
    os.chown("/etc/enagent/key-server.conf", 0, GROUP_ID)
    os.chmod("/etc/enagent/key-server.conf", 0o640)
    wait_for(lambda: run("curl", "-s", "-o", "/dev/null", base, check_status=False).returncode == 0, "the health authority")
    return log


def start_bus():
    run("mount", "-t", "tmpfs", "tmpfs", "/run/dbus")
    configuration = WORK + "/system.conf"
    with open(configuration, "w") as f:
        f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <include>{ROOT}/lab/system-bus-default.conf</include>
  <include>{ROOT}/dbus/org.enagent.ExposureNotification1.conf</include>
</busconfig>
""")
    subprocess.Popen(["dbus-daemon", "--config-file", configuration, "--nofork"], stderr=subprocess.DEVNULL)
    wait_for(lambda: os.path.exists("/run/dbus/system_bus_socket"), "the system bus")


class Daemon:
    def __init__(self, binaries):
        self.binaries = binaries
        self.configuration = WORK + "/enagent.conf"
        self.state = WORK + "/state"
        with open(self.configuration, "w") as f:
            f.write(f"radio = no\nrequire-synchronised-clock = no\nstate-directory = {self.state}\n")
        self.process = None

    def start(self):
        self.process = subprocess.Popen([self.binaries + "/enagentd", "--config", self.configuration], stderr=open(WORK + "/enagentd.log", "a"))
        wait_for(lambda: run(ENCTL, "status", check_status=False).returncode == 0, "enagentd on the bus")

    def stop(self):
        self.process.terminate()
        self.process.wait()


def enctl_status(user=None):
    return json.loads(run(ENCTL, "status", "--json", user=user).stdout)


def fill_database(path, now):
    """What the member's page draws: sightings over the last 30 hours, two exposure windows three
    days ago, a positive test and yesterday's key. Returns the facts the other user must not learn."""
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

    def __init__(self, name, shots):
        self.name, self.shots = name, shots
        profile = f"{WORK}/chromium-{name}"
        self.process = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
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
        self.wait("!!document.getElementById('login-user-input')", "the login form")
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
    latest = add_sightings(database, 5)
    browser.evaluate("refreshSightings(true)")
    browser.wait(f"document.querySelector('#sightings-chart rect[data-hour=\"{latest[0]}\"]').dataset.sightings === '{latest[1]}'",
                 "the chart to take the latest hour's new sightings")
    bars = browser.evaluate("[...document.querySelectorAll('#sightings-chart rect.en-bar')].filter(r => r.dataset.sightings !== '0').length")
    check(bars == len(counts) + (0 if latest[0] in {row[0] for row in counts} else 1), "the latest hours merged into the chart, the earlier kept")
    browser.wait("document.querySelectorAll('#windows tbody tr').length === 2", "the exposure windows")
    check(browser.evaluate("document.querySelectorAll('#exposure-timeline rect.en-window').length") == 2, "the timeline draws both windows")
    check(browser.evaluate("document.querySelectorAll('#summaries tbody tr').length") == 1, "one daily summary")
    check(browser.evaluate("document.querySelectorAll('#test-results tbody tr').length") == 1, "the positive test")
    check(browser.evaluate("document.getElementById('reminders').textContent").startswith("You were exposed on"), "the reminder of the exposure")
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
    for card in ("controls", "sightings-card", "exposures-card", "tests-card"):
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
    binaries, shots = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    global WORK
    WORK = os.environ.get("ENAGENT_BROWSER_TEST_WORK")
    if not WORK:
        # Namespaces of its own: the mounts vanish with it, every process it starts dies with it
        # (the kernel has ended them all when unshare returns), and its loopback is its own.
        WORK = tempfile.mkdtemp(prefix="enagent-browser-test-")
        os.chmod(WORK, 0o755)
        try:
            inside = subprocess.run(["unshare", "--mount", "--pid", "--net", "--fork", "--propagation", "private", sys.executable] + sys.argv,
                                    env={**os.environ, "ENAGENT_BROWSER_TEST_WORK": WORK})
        finally:
            shutil.rmtree(WORK)
        return inside.returncode
    run("ip", "link", "set", "lo", "up")
    os.makedirs(shots, exist_ok=True)
    test(binaries, shots)
    return 0


def test(binaries, shots):
    overlay("/etc")
    add_users()
    install_page()
    publishes = start_health_authority()
    start_bus()
    run("mount", "-t", "tmpfs", "tmpfs", "/usr/local/bin")
    run("cp", binaries + "/enctl", "/usr/local/bin/enctl")
    daemon = Daemon(binaries)
    daemon.start()
    run(ENCTL, "enable")
    counts, secrets = fill_database(daemon.state + "/enagent.db", int(time.time()))
    # enagentd judges its reminders as it starts (and then as things happen): anew, over the filled database.
    daemon.stop()
    daemon.start()
    subprocess.Popen(["/usr/lib/cockpit/cockpit-ws", "--no-tls", "--address", "127.0.0.1", "--port", str(PORT)],
                     stdout=subprocess.DEVNULL, stderr=open(WORK + "/cockpit-ws.log", "w"))
    wait_for(lambda: run("curl", "-sf", "-o", "/dev/null", BASE + "/", check_status=False).returncode == 0, "cockpit-ws")

    member = Browser("member", shots)
    member.log_in(MEMBER)
    member.open(BASE + "/enagent")
    time.sleep(3)
    member.screenshot("member-in-cockpit")
    member_sees_and_controls(member, counts, daemon.state + "/enagent.db")
    member_shares_with_a_code(member, publishes)
    page_follows_enagentd(member, daemon)
    member.close()

    other = Browser("other", shots)
    other.log_in(OTHER)
    other_user_sees_status_only(other, secrets)
    other.close()
    print("browser-test: every check passed")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as failure:
        print(f"browser-test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
