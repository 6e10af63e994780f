#!/usr/bin/env python3
"""snapshot.py DB [--rpis]: an agent database's keys, sighting count and integrity, as JSON
(read-only); with --rpis also its sightings' distinct RPIs (hex), which the service lab's report
matches against the phones' (a crowd's would make the agents' lab's manifest lines long)."""
import json, sqlite3, sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
snapshot = {
    "keys": [[start, period, key.hex()] for start, period, key in
             db.execute("SELECT rolling_start_interval_number, rolling_period, key_data FROM temporary_exposure_key ORDER BY id")],
    "sightings": db.execute("SELECT count(*) FROM sighting").fetchone()[0],
    "integrity": db.execute("PRAGMA integrity_check").fetchone()[0],
}
if "--rpis" in sys.argv[2:]:
    snapshot["rpis"] = sorted({rpi.hex() for (rpi,) in db.execute("SELECT rpi FROM sighting")})
print(json.dumps(snapshot))
