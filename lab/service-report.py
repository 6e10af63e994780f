#!/usr/bin/env python3
"""service-report.py RUN_DIR [--check [NAME...]]: the service lab's checks, judged on the host.

Judges what lab/systemd/checks.sh saw in the guest and recorded (the manifest's phase of each
check's name, and the files those phases name: database snapshots, btmon's capture, the journal),
a line each ("ok NAME: DETAIL" or "FAILED NAME: DETAIL"), then prints its figures. With --check it
exits 1 unless every check held and the guest's steps ran to their end; --check NAME... judges
those alone, on any saved run folder; --list names them."""
import base64, json, re, sys, time
import onair
from labframe import Check, Lab, arguments, report

WATCHDOG_RESULT = "Failed with result 'watchdog'"
# enagentd hears the wall clock being set as it happens (ClockChanges, a timerfd cancelled on
# set): the step's new day or year is on the air within this many seconds. Before, the upkeep
# noticed a step within a minute, and the lab allowed 90 s.
CLOCK_STEP_HEARD_WITHIN = 20
# The messages that would tell a reader of the journal of someone's health: a match, an exposure,
# a test or an upload (systemd's "Starting enagent-detect.service - enagent key uploads still
# pending, …" names the unit's work, nobody's; dbus-daemon's "Rejected send message, 2 matched
# rules" is its policy's).
HEALTH = re.compile(r"keys? matched|[0-9]+ matched,|exposure windows?( |$)|you were exposed|exposed recently|test result|positive|upload\(s\)"
                    r"|uploads? (sent|accepted|refused|kept|due|was|is)|shared [0-9]+ key|keys? published", re.I)


def checks():
    """The checks, in the order the guest records them."""
    def security(unit):
        return lambda lab: [entry for entry in lab.entries("security") if entry["unit"] == unit][-1]
    beacon = lambda lab: lab.phase("beacon")["extended"] == "yes"
    cockpit = lambda lab: lab.has("cockpit")
    return [
        verdict("boot", boot), verdict("adapters", adapters), verdict("no-toolchain", no_toolchain),
        verdict("install", install), verdict("libraries", libraries), verdict("user", user),
        verdict("key-server-conf", key_server_conf), verdict("installed-running", installed_running),
        verdict("started", started), verdict("sandbox", sandbox), verdict("status-line", status_line),
        verdict("other-status", other_status), verdict("member-enable", member_enable),
        verdict("advertising", advertising), verdict("other-enable", other_enable), verdict("other-export", other_export),
        verdict("sightings", sightings), verdict("kill-restart", kill_restart), verdict("bluetooth-restart", bluetooth_restart),
        verdict("timer", timer), verdict("timer-delay", timer_delay), verdict("detection-skipped", detection_skipped),
        verdict("detection", detection), verdict("timer-catch-up", timer_catch_up), verdict("timer-no-missed-run", timer_no_missed_run),
        verdict("sleep-inhibitor", sleep_inhibitor), verdict("suspend", suspend), verdict("share", share),
        verdict("journal-health", journal_health), verdict("watchdog-restart", watchdog_restart), verdict("watchdog-kept", watchdog_kept),
        verdict("other-advertiser", other_advertiser, when=beacon), verdict("kill-own-instance", kill_own_instance, when=beacon),
        verdict("code-residency", code_residency), verdict("clock-back", clock_back), verdict("clock-back-keys", clock_back_keys),
        verdict("clock-forward", clock_forward), verdict("clock-forward-keys", clock_forward_keys), verdict("clock-journal", clock_journal),
        verdict("member-export", member_export),
        verdict("cockpit-install", cockpit_install, when=cockpit), verdict("cockpit-tls", cockpit_tls, when=cockpit),
        verdict("cockpit-login", cockpit_login, when=cockpit), verdict("cockpit-page", cockpit_page, when=cockpit),
        verdict("journal-no-keys", journal_no_keys), verdict("journal-fields", journal_fields), verdict("journal-event", journal_event),
        verdict("bad-configuration", bad_configuration),
        verdict("security-enagentd.service", exposure, seen=security("enagentd.service")),
        verdict("security-enagent-detect.service", exposure, seen=security("enagent-detect.service")),
        Check("finished", "FIGURES", finished),
    ]


def verdict(name, judge, seen=None, when=lambda lab: True):
    """The check NAME: judge(what the guest recorded, lab) returns whether it held and what was
    seen, printed as the guest's line "ok NAME: DETAIL" or "FAILED NAME: DETAIL". What it judges
    is the manifest's phase NAME unless `seen` picks another; `when` false (a step the guest skips
    on this lab: no cockpit-enagent given, a legacy controller) leaves it unjudged and silent."""
    def run(lab, fail):
        if not when(lab):
            return
        held, detail = judge(seen(lab) if seen else lab.phase(name), lab)
        print(f"{'ok' if held else 'FAILED'} {name}: {detail}")
        if not held:
            fail(f"{name}: {detail}")
    return Check(name, None, run)


# What the guest's commands answered, read back.
def took(result):
    """advertised.py's answer ("SECONDS ADDRESS RPI", "SECONDS" or "timeout"): its seconds as
    printed, or the answer."""
    return result.split(" ", 1)[0]


def after_took(result):
    """What advertised.py saw after its seconds: the address and the RPI."""
    return result.split(" ", 1)[-1]


def within(limit, result):
    """advertised.py's RESULT came within LIMIT seconds."""
    try:
        return float(took(result)) <= limit
    except ValueError:
        return False


def refused(seen):
    """enctl as a user the bus policy does not allow: exit status 1 and "not allowed"."""
    return seen["rc"] == "1" and "not allowed" in seen["said"]


def said(seen):
    """What a refused command said, up to its explanation in parentheses."""
    return seen["said"].split(" (")[0]


def count(answer):
    """How many objects an `enctl … --json` answer lists."""
    return len(json.loads(answer))


def snapshot(lab, name):
    """A database snapshot the guest wrote (snapshot.py): keys, sightings, integrity."""
    with open(lab.path(name)) as written:
        return json.load(written)


def keys_kept(before, after, at=None):
    """Snapshot AFTER keeps every key of BEFORE and adds none for a day that had keys (a day's keys:
    its first and up to two same-day rolls, all with the day's rolling start); with AT (unix
    seconds), it has a key for AT's day."""
    days = {start for start, _, _ in before["keys"]}
    added = [key for key in after["keys"] if key not in before["keys"]]
    return (all(key in after["keys"] for key in before["keys"]) and not any(start in days for start, _, _ in added)
            and (at is None or any(start == int(at) // 600 // 144 * 144 for start, _, _ in after["keys"])))


def key_days(snapshot):
    """Its keys per rolling start ("start×count ...")."""
    starts = [start for start, _, _ in snapshot["keys"]]
    return " ".join(f"{start}x{starts.count(start)}" for start in sorted(set(starts)))


def clock(unix):
    return time.strftime("%H:%M:%S", time.localtime(int(unix)))


# The checks, in the guest's order.
def boot(seen, lab):
    return (seen["state"] in ("running", "degraded") and seen["dbus"] == seen["bluetooth"] == "active",
            f"systemd is {seen['state']}, {seen['failed']} units failed; dbus {seen['dbus']}, bluetooth {seen['bluetooth']}")


def adapters(seen, lab):
    return seen["powered"] == "true true", f"bluetoothd offers hci0 and hci1, powered (AutoEnable): {seen['powered']}"


def no_toolchain(seen, lab):
    return (not (seen["swift"] or seen["loader"] or seen["found"]),
            f"no swift on PATH, no libswiftCore.so for the loader ({seen['hidden']} directories hidden)"
            + "".join(f"; {seen[key]}" for key in ("swift", "loader", "found") if seen[key]))


def installed(seen):
    return seen["rc"] == "0" and seen["package"].endswith(": install ok installed")


def install(seen, lab):
    return installed(seen), f"{seen['command']} exit {seen['rc']}; {seen['package']}"


def libraries(seen, lab):
    return (not seen["missing"],
            f"enagentd and enctl load only Debian's libraries: {seen['loaded']} for enagentd" + (f"; {seen['missing']}" if seen["missing"] else ""))


def user(seen, lab):
    return seen["rc"] == "0", f"the package made the user and group enagent: {seen['id']}"


def key_server_conf(seen, lab):
    return (seen["mode"] == "640 root:enagent" and seen["settings"] == "0",
            f"the package's key-server.conf, all commented: {seen['mode']}, {seen['settings']} settings")


def installed_running(seen, lab):
    return (seen["active"] == "active" and seen["restarts"] == "0",
            f"after dpkg -i: enagentd.service {seen['enabled']}, {seen['active']}, restarted {seen['restarts']} times in 10 s, "
            f"status {seen['status']}; enagent-detect.timer {seen['timer']}")


def started(seen, lab):
    return seen["active"] == "active", f"systemctl enable --now enagentd; restart after editing enagent.conf: {seen['active']}"


def sandbox(seen, lab):
    # CAP_NET_RAW and CAP_NET_ADMIN alone; seccomp 2: a filter.
    return (seen["user"].strip() == "enagent" and seen["capeff"] == "0000000000003000" and seen["nonewprivs"] == "1"
            and seen["seccomp"] == "2" and seen["watchdog"] == "1min",
            f"runs as {seen['user'].strip()}, CapEff {seen['capeff']}, NoNewPrivs {seen['nonewprivs']}, seccomp {seen['seccomp']}, "
            f"watchdog {seen['watchdog']}")


def status_line(seen, lab):
    return bool(seen["text"]), f"systemd's status line: {seen['text']}"


def other_status(seen, lab):
    return seen["rc"] == "0", f"another user reads enctl status: {seen['said']}"


def member_enable(seen, lab):
    return (seen["rc"] == "0",
            f"enctl enable as a member of the group enagent: exit {seen['rc']}" + (f", \"{seen['said']}\"" if seen["said"] else ""))


def advertising(seen, lab):
    return (within(20, seen["result"]),
            f"hci0 advertises (btmon) {took(seen['result'])} s after enctl enable (address and RPI: {after_took(seen['result'])}); "
            f"status {seen['status']}")


def other_enable(seen, lab):
    return refused(seen), f"enctl enable by another user: exit {seen['rc']}, \"{said(seen)}\""


def other_export(seen, lab):
    return (refused(seen) and seen["written"] == "no",
            f"enctl keys export by another user: exit {seen['rc']}, \"{said(seen)}\"" + ("; it wrote its file" if seen["written"] != "no" else ""))


def sightings(seen, lab):
    with open(lab.path(seen["phones"])) as phones:
        rpis = {json.loads(line)["rpi"] for line in phones}
    heard = len(rpis & set(snapshot(lab, seen["after"])["rpis"]))
    return heard == len(rpis) and heard > 0, f"enagentd stored {heard} of the {len(rpis)} phones' RPIs"


def kill_restart(seen, lab):
    return (seen["pid"] not in (seen["killed"], "0") and within(10, seen["back"]),
            f"restarted by systemd (pid {seen['killed']} -> {seen['pid']}, NRestarts {seen['restarts']}); "
            f"hci0 advertising a new RPI from a new address {took(seen['back'])} s after the kill (at most 10)")


def bluetooth_restart(seen, lab):
    return (within(10, seen["back"]) and within(10, seen["scanning"]) and not seen["hci1"],
            f"hci0 advertising a new RPI {took(seen['back'])} s after the restart, scanning after {seen['scanning']} s (at most 10)"
            + (f"; the agent on hci0 logs about hci1: {seen['hci1']}" if seen["hci1"] else ""))


def timer(seen, lab):
    return seen["active"] == "active", f"enagent-detect.timer enables: {seen['enabled']}; {seen['active']}, next {seen['next']}"


def caught_up(seen):
    """The restarted timer triggered its service, which is done (run or skipped): the timer waits again."""
    return int(seen["triggered"]) >= int(seen["booted"]) and seen["state"] == "waiting"


def planned(seen):
    """systemd's plan for the catch-up of a missed run under the shipped RandomizedDelaySec=: whether
    it is at most 30 min after the guest's systemd started (as after a boot), and in words."""
    booted, manager, due, now = (int(seen[key]) for key in ("booted", "manager", "due", "now"))
    if caught_up(seen):
        return True, f"triggered at once (its random delay, less than the {booted - manager} s since the guest's systemd started, had passed)"
    return manager <= due <= manager + 1800 and due > now, f"due {due - manager} s after the guest's systemd started (in {due - now} s)"


def timer_delay(seen, lab):
    held, words = planned(seen)
    return (held, f"the shipped RandomizedDelaySec={seen['delay']}, the last run a day ago, the timer restarted: catch-up {words}; "
                  "at most 30 min after the boot")


def detection_skipped(seen, lab):
    # key-server.conf without url: ExecCondition= skips the service, started once for the condition, not failed.
    return (caught_up(seen) and seen["result"] == "exec-condition" and int(seen["inactive"]) >= int(seen["booted"])
            and int(seen["runs"]) <= 1 and seen["complaints"] == "0" and seen["failed"] != "failed",
            f"no key server configured (key-server.conf without url), a missed run: the timer triggered "
            f"{int(seen['triggered']) - int(seen['booted'])} s after its restart, the service started {seen['runs']} time(s), "
            f"result {seen['result']}, {seen['complaints']} journal lines at warning or above; timer {seen['active']} ({seen['state']}), "
            f"next {seen['next']}")


def detection(seen, lab):
    windows = count(seen["windows"])
    return (seen["result"] == "success" and windows > 0 and seen["pid"] == seen["pid_before"],
            f"the timer's run against the key server, the authority's key put in place while enagentd ran "
            f"(pid {seen['pid_before']} -> {seen['pid']}, restarts {seen['restarts_before']} -> {seen['restarts']}): "
            f"enagent-detect.service result {seen['result']}, exit status {seen['status']}; {windows} exposure windows recorded")


def started_after(seen):
    """From the timer's restart to its service's start, both on systemd's monotonic clock (µs)."""
    return f"{(int(seen['service_started']) - int(seen['timer_entered'])) / 1e6:.1f}"


def timer_catch_up(seen, lab):
    return (seen["runs"] == "1" and seen["state"] == "waiting",
            f"the last run a day ago, the timer restarted as at boot (RandomizedDelaySec=0): enagent-detect.service started "
            f"{started_after(seen)} s after, ran {seen['runs']} time(s) up to 10 s after it ended; timer {seen['state']}, next {seen['next']}")


def timer_no_missed_run(seen, lab):
    return (seen["runs"] == "0" and seen["triggered"] == seen["last_trigger"] and seen["next"] == seen["calendar"],
            f"the last run {int(seen['now']) - int(seen['last_trigger'])} s ago, the timer restarted: enagent-detect.service ran "
            f"{seen['runs']} times in 10 s; next {clock(seen['next'])}, the next calendar time {clock(seen['calendar'])}")


def sleep_inhibitor(seen, lab):
    return ("sleep" in seen["inhibitor"] and "delay" in seen["inhibitor"],
            f"enagentd holds a delay lock on sleep (systemd-inhibit --list: {seen['inhibitor'] or 'none'})")


def stale(capture, since):
    """EN advertisements hci0 had from SINCE on of an RPI on the air before it."""
    found = onair.advertisements(capture, [0])[0]
    before = {a["data"][11:27] for a in found if onair.unix_seconds(a["time"]) < since}
    return sum(1 for a in found if onair.unix_seconds(a["time"]) >= since and a["data"][11:27] in before)


def suspend(seen, lab):
    # The kernel enables the instances it kept at power-on, from a new address: every EN
    # advertisement from the sleep on must be a new RPI.
    before, after = snapshot(lab, seen["before"]), snapshot(lab, seen["after"])
    repeated = stale(lab.path(seen["capture"]), float(seen["slept"]))
    return (within(10, seen["woke"]) and repeated == 0 and keys_kept(before, after, seen["woke_at"])
            and after["sightings"] >= before["sightings"],
            f"systemctl suspend, asleep into the next day: advertising a new RPI from a new address {took(seen['woke'])} s after the wake "
            f"(at most 10); {repeated} advertisements of an RPI from before the sleep after it; {seen['sleep_lines']} sleep lines in the journal; "
            f"keys {key_days(after)}, one for the new day; sightings {before['sightings']} -> {after['sightings']}")


def share(seen, lab):
    published = 0
    if lab.exists(seen["publishes"]):
        with open(lab.path(seen["publishes"])) as publishes:
            published = sum(len(line.get("keys", [])) for line in map(json.loads, publishes) if line.get("status") == 200)
    return (seen["added"] == "0" and seen["shared"] == "0" and published > 0,
            f"enctl test-result add --code: exit {seen['added']}; enctl share --yes: exit {seen['shared']} ({seen['said']}); "
            f"{published} keys published")


def journal_health(seen, lab):
    # Every entry but those of the lab's own units (the guest's script, whose lines name what it saw).
    with open(lab.path(seen["journal"])) as journal:
        told = [str(entry.get("MESSAGE")) for entry in map(json.loads, journal)
                if not str(entry.get("_SYSTEMD_UNIT", "")).startswith("btlab-") and HEALTH.search(str(entry.get("MESSAGE")))]
    return (not told,
            f"{seen['lines']} lines of the journal as 'reader' (group adm, not enagent), {len(told)} of them (the lab's own left aside) "
            f"tell of matches, exposures, tests or uploads" + (f": {told[0]}" if told else ""))


def timed_out_after(seen):
    """Seconds from the SIGSTOP to systemd's watchdog timeout, or "no timeout"."""
    return f"{float(seen['timed_out_at']) - float(seen['hung_at']):.1f}" if seen["timed_out_at"] else "no timeout"


def watchdog_restart(seen, lab):
    return (within(CLOCK_STEP_HEARD_WITHIN, seen["new_day"]) and bool(seen["timed_out_at"]) and seen["ended_by"] == WATCHDOG_RESULT
            and seen["pid"] not in (seen["hung"], "0") and within(90, seen["back"]),
            f"on the next day (advertising its key {took(seen['new_day'])} s after the step), SIGSTOP to pid {seen['hung']}: "
            f"systemd's watchdog (WatchdogSec {seen['watchdog']}) timed out {timed_out_after(seen)} s after, \"{seen['ended_by']}\", "
            f"restarted (pid {seen['hung']} -> {seen['pid']}, NRestarts {seen['restarts_before']} -> {seen['restarts']}); "
            f"hci0 advertising a new RPI from a new address {took(seen['back'])} s after the hang "
            f"(address and RPI: {after_took(seen['back'])}; at most 90)")


def watchdog_kept(seen, lab):
    # A restart may roll the day's key: it ends earlier, and stays; so keys are compared by their data.
    before, after = snapshot(lab, seen["before"]), snapshot(lab, seen["after"])
    windows_before, windows = count(seen["windows_before"]), count(seen["windows"])
    return ({key for _, _, key in before["keys"]} <= {key for _, _, key in after["keys"]} and after["sightings"] >= before["sightings"]
            and after["integrity"] == "ok" and windows >= windows_before,
            f"nothing committed lost: keys {len(before['keys'])} -> {len(after['keys'])} (each kept), sightings {before['sightings']} -> "
            f"{after['sightings']}, exposure windows {windows_before} -> {windows}, integrity {after['integrity']}")


def beacon_kept(seen):
    """btmon's capture ends with the beacon's set, in the highest instance, beside exactly one EN set."""
    return seen["beacon"] == f"on-air {seen['highest']} 1"


def other_advertiser(seen, lab):
    return (within(CLOCK_STEP_HEARD_WITHIN, seen["beacon_day"]) and within(30, seen["back"]) and beacon_kept(seen),
            f"on the day after (advertising {took(seen['beacon_day'])} s after the step), a beacon in the highest instance ({seen['added']}) "
            f"while enagentd was stopped, which the kernel does not list alone: enagentd advertising {took(seen['back'])} s after its start; "
            f"the beacon and EN sets enabled (btmon): {seen['beacon']}")


def kill_own_instance(seen, lab):
    return (seen["pid"] != seen["killed"] and within(10, seen["back"]) and beacon_kept(seen),
            f"SIGKILL to pid {seen['killed']}, restarted as {seen['pid']}: hci0 advertising a new RPI {took(seen['back'])} s after; "
            f"the killed run's set replaced, the beacon's kept: the beacon and EN sets enabled (btmon): {seen['beacon']}")


def code_residency(seen, lab):
    return (int(seen["up"]) >= 60 and seen["complaints"] == "0",
            f"pid {seen['pid']} up {seen['up']} s, {seen['complaints']} complaints in the journal that its code stays resident")


def clock_back(seen, lab):
    return (seen["status"].startswith("waiting-for-interval") and seen["radio"].split(" ")[0] == "no",
            f"stepped back a day: status {seen['status']}; radio hci0 (advertising scanning) {seen['radio']}")


def clock_back_keys(seen, lab):
    before, after = snapshot(lab, seen["before"]), snapshot(lab, seen["after"])
    return (keys_kept(before, after),
            f"keys per day (rolling start x keys): {key_days(before)} before, {key_days(after)} after the step back; "
            "none added for a day that had keys")


def clock_forward(seen, lab):
    # Retention held back: a year's step must not purge what the clock now calls old.
    before, after = snapshot(lab, seen["before"]), snapshot(lab, seen["after"])
    return (within(CLOCK_STEP_HEARD_WITHIN, seen["back"]) and after["sightings"] >= before["sightings"] > 0,
            f"stepped forward a year: advertising again after {took(seen['back'])} s, status {seen['status']}; sightings "
            f"{before['sightings']} before the steps, {after['sightings']} after the upkeep that noted the step (retention held back)")


def clock_forward_keys(seen, lab):
    after = snapshot(lab, seen["after"])
    return (keys_kept(snapshot(lab, seen["before"]), after, seen["at"]),
            f"keys per day after the step forward: {key_days(after)}; none added for a day that had keys, one for the new day")


def clock_journal(seen, lab):
    return int(seen["lines"]) > 0, f"the steps are warnings in the journal: {seen['lines']} lines"


def member_export(seen, lab):
    return (seen["rc"] == "0" and seen["size"] not in ("no", "0"),
            f"enctl keys export --format json as a member: exit {seen['rc']}, {seen['size']} bytes"
            + (f", \"{seen['said']}\"" if seen["said"] else ""))


def cockpit_install(seen, lab):
    return installed(seen), f"{seen['command']} cockpit-enagent.deb exit {seen['rc']}; {seen['package']}"


def fingerprint(openssl):
    return openssl.split("=", 1)[-1]


def cockpit_tls(seen, lab):
    # The certificate served is the self-signed one cockpit-certificate-ensure made; the socket started the service.
    return (seen["code"] == "200" and bool(seen["made"]) and seen["served"] == seen["made"]
            and seen["socket"] == seen["service"] == "active",
            f"https://127.0.0.1:9090/: {seen['code']}, cockpit.socket {seen['socket']}, cockpit.service {seen['service']} "
            f"(started by the socket); the certificate served: {fingerprint(seen['served'])}, the self-signed one "
            f"cockpit-certificate-ensure made: {fingerprint(seen['made'])}")


def cockpit_login(seen, lab):
    answered = lab.text(seen["answer"]) if lab.exists(seen["answer"]) else ""
    return (seen["refused"] == "401" and seen["code"] == "200" and seen["cookies"] not in ("", "0") and "csrf-token" in answered,
            f"GET /cockpit/login as member (group enagent) with basic auth: {seen['code']}, cookie {seen['cookies']}; "
            f"a wrong password: {seen['refused']}")


def cockpit_page(seen, lab):
    return (seen["manifest"] == seen["index"] == "yes" and seen["anonymous"] == "not served",
            f"with the login's cookie, /cockpit/@localhost/enagent/{{manifest.json,index.html}} are the package's files ({seen['owner']})"
            + "".join(f"; {name} differs" for name in ("manifest", "index") if seen[name] != "yes")
            + f"; without it: {seen['anonymous']}")


def journal_no_keys(seen, lab):
    with open(lab.path(seen["journal"]), "rb") as export:
        journal = export.read()
    keys = [bytes.fromhex(key) for _, _, key in snapshot(lab, seen["keys"])["keys"]]
    found = [key.hex() for key in keys
             if key.hex().encode() in journal or key.hex().upper().encode() in journal or base64.b64encode(key) in journal]
    return (not found,
            f"{len(keys)} TEKs looked for in the whole journal (hex, HEX, base64): {len(found)} found" + (f" ({' '.join(found)})" if found else ""))


def journal_fields(seen, lab):
    return bool(seen["fields"].strip()) and seen["notices"] not in ("", "0"), f"enagentd's entries carry priorities and fields: {seen['fields']}"


def journal_event(seen, lab):
    return (all(part in seen["consent"] for part in ("PRIORITY=5", "SYSLOG_IDENTIFIER=enagentd", "consent recorded")),
            f"journalctl MESSAGE_ID=e4df84d6… (consent given): {seen['consent']}")


def bad_configuration(seen, lab):
    # RestartPreventExitStatus=64: failed, no restart scheduled, and the file's line in the journal.
    return (seen["state"] == "failed" and seen["status"] == "64" and seen["restarts"] == "0" and bool(seen["journal"]),
            f"tx-power = loud on line {seen['line']}: enagentd.service {seen['state']}, exit status {seen['status']}, "
            f"{seen['restarts']} restarts scheduled; the journal: \"{seen['journal']}\"")


def exposure(seen, lab):
    try:
        held = float(seen["exposure"]) <= 2.0
    except ValueError:
        held = False
    return held, f"systemd-analyze security: exposure {seen['exposure']} (at most 2.0)"


# The figures the guest leaves to the report (`figure about=NAME`): they need what the checks read.
def figures():
    return {"sightings": sightings_written, "detection-timer": detection_timer, "watchdog": watchdog_figure}


def sightings_written(lab):
    seen = lab.phase("sightings")
    written = int(seen["written"])
    recorded = snapshot(lab, seen["after"])["sightings"] - snapshot(lab, seen["before"])["sightings"]
    return (f"enagentd writes to disk while phones are near: {written} bytes for {recorded} sightings in 70 s "
            f"({written // (recorded if recorded > 0 else 1)} bytes a sighting: WAL pages and their checkpoint)")


def detection_timer(lab):
    return (f"detection timer after a missed run: with the shipped RandomizedDelaySec=30min the catch-up {planned(lab.phase('timer-delay'))[1]}; "
            f"with the lab's 0 it started {started_after(lab.phase('timer-catch-up'))} s after the timer's restart and ran once; "
            "without a missed run nothing ran")


def watchdog_figure(lab):
    seen = lab.phase("watchdog-restart")
    return (f"watchdog: enagentd hung (SIGSTOP) ended by systemd {timed_out_after(seen)} s after (WatchdogSec=60s), "
            f"advertising a new RPI from a new address {took(seen['back'])} s after the hang")


def finished(lab, fail):
    worded = figures()
    for entry in lab.entries("figure"):
        try:
            print(entry["text"] if "text" in entry else worded[entry["about"]](lab))
        except Exception as error:  # a figure the guest's records cannot word is no verdict: said, not failed
            print(f"{entry.get('about')}: not worded ({type(error).__name__}: {error})")
    if not lab.has("done"):
        fail("the guest's checks did not finish (no phase done in the manifest)")


def main():
    given = arguments(__doc__.splitlines()[0])
    return report("service checks", given, Lab(given.run), checks())


if __name__ == "__main__":
    sys.exit(main())
