"""Exposure detection: b's matches of the phones' keys and of a's shared keys."""
import json, subprocess
from .agentslab import day_of


def phone_exposures(lab, fail):
    detected = lab.phase("detect-phones-b")["result"]
    windows = lab.phase("windows-phones-b")["windows"]
    # b's sightings just before and just after the detection bound what it could match.
    before, after = ({rpi for rpi, _ in lab.phase(f"b-sightings-{when}-detect")["sightings"]} for when in ("before", "after"))
    teks = {p["tek"] for p in lab.phones}
    least, most = ({p["tek"] for p in lab.phones if p["rpi"] in recorded} for recorded in (before, after))
    days = sorted({w["date"] for w in windows})
    phone_days = sorted({day_of(p["rollingStart"]) for p in lab.phones})
    matched = detected.get("MatchedKeys")
    print(f"  {len(teks)} phone keys published; b matched {matched} (it had stored RPIs of {len(least)} of them just before the "
          f"detection, {len(most)} just after); {detected.get('NewExposureWindows')} exposure windows on {', '.join(days)}; "
          f"the phones' day {', '.join(phone_days)}")
    if not least or matched is None or not len(least) <= matched <= len(most):
        fail(f"b matched {matched} phone keys; it had stored RPIs of {len(least)} before, {len(most)} after")
    if days != phone_days:
        fail(f"the phones' exposures are on {days}, not on their keys' day {phone_days}")


def exposure(lab, fail):
    detected = lab.phase("detect-b")["result"]
    windows = lab.phase("windows-b")["windows"]
    shared_keys = lab.phase("shared-keys")
    keys, public_key = lab.path(shared_keys["keys"]), lab.path(shared_keys["public_key"])
    offline = json.loads(subprocess.run([lab.enctl, "detect", "offline", "--db", lab.path("b/enagent.db"), "--keys", keys,
                                         "--public-key", public_key, "--json"], check=True, capture_output=True, text=True).stdout)
    shared = subprocess.run([lab.enctl, "keys", "inspect", keys, "--public-key", public_key, "--json"],
                            check=True, capture_output=True, text=True).stdout
    days = sorted({w["date"] for w in windows})
    key_days = sorted({row[0] for row in lab.rows("a", "SELECT date(rolling_start_interval_number * 600, 'unixepoch') FROM temporary_exposure_key")})
    print(f"  a shared {json.loads(shared)['keyCount']} keys; b: {detected.get('MatchedKeys', 0)} matched, "
          f"{detected.get('NewExposureWindows', 0)} new exposure windows (offline detection finds {len(offline['exposureWindows'])}); "
          f"all of b's windows on {', '.join(days) or 'no day'}")
    new_windows = detected.get("NewExposureWindows", 0)
    if not new_windows or new_windows != len(offline["exposureWindows"]):
        fail(f"b's detection through the key server found {new_windows} windows, offline detection {len(offline['exposureWindows'])}")
    phone_days = {day_of(p["rollingStart"]) for p in lab.phones}
    if not set(days) <= set(key_days) | phone_days:
        fail(f"exposure days {days} are neither days of a's keys {key_days} nor the phones' {sorted(phone_days)}")
