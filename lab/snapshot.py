#!/usr/bin/env python3
"""snapshot.py DB: an agent database's keys, sighting count and integrity, as JSON (read-only)."""
import json, sqlite3, sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(json.dumps({
    "keys": [[start, period, key.hex()] for start, period, key in
             db.execute("SELECT rolling_start_interval_number, rolling_period, key_data FROM temporary_exposure_key ORDER BY id")],
    "sightings": db.execute("SELECT count(*) FROM sighting").fetchone()[0],
    "integrity": db.execute("PRAGMA integrity_check").fetchone()[0],
}))
