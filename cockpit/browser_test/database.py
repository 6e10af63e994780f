"""What the test writes into enagentd's database, as enagentd's user (as_user): what the member's
page draws, a later verdict of increased risk, the sightings of a scan."""
import grp
import json
import os
import pwd
import sqlite3
import subprocess
import sys
import time

from .harness import ROOT, Failure

# The test's entry point: its --call runs one of CALLS.
ENTRY_POINT = ROOT + "/cockpit/browser-test.py"


def as_user(name, function, *arguments):
    """function(*arguments) in the test's entry point run anew as `name` (its uid, gid and groups,
    umask 0077), its JSON-able result returned: the database's files stay the daemon's, as they
    are when it runs. A process of its own, not a fork: this one has threads by then (CockpitUnits)."""
    account = pwd.getpwnam(name)
    groups = [group.gr_gid for group in grp.getgrall() if name in group.gr_mem]
    result = subprocess.run([sys.executable, ENTRY_POINT, "--call", function.__name__, json.dumps(arguments)],
                            user=account.pw_uid, group=account.pw_gid, extra_groups=groups, umask=0o077,
                            capture_output=True, text=True, cwd="/")
    if result.returncode != 0:
        raise Failure(f"{function.__name__} as {name} failed: {result.stderr}")
    return json.loads(result.stdout)


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


# What as_user runs, by name.
CALLS = {function.__name__: function for function in (fill_database, add_sightings, raise_risk)}
