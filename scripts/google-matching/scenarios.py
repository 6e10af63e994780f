#!/usr/bin/env python3
"""Seeded scenarios for Google's matching (see generate.sh): keys, sightings and configurations.

Each family aims at one rule where enagent and Google's code can differ (docs/detection.md,
"Matching as Google's code does it"). A sighting names its key and the interval whose RPI it
carries; the harness derives the RPI and AEM with Google's own generators. "previousScanTime" is
the receiving device's previous scan, whatever that scan saw; a sighting without it has an
unknown one. "adapterAddress" names the adapter that heard a sighting, and the scenario's
"rssiCorrections" its correction (dB added to its RSSIs; none: 0). Times are before "now", keys
start at UTC midnight 1-12 days before it.

    scenarios.py --seed N --now UNIX > scenarios.json
"""

import argparse
import json
import random

INTERVAL_SECONDS = 600
DAY_INTERVALS = 144
DAY_SECONDS = 86400


class Builder:
    """One scenario: keys, sightings and the three configurations, with defaults that family code overrides."""

    def __init__(self, rng, now, family, name):
        self.rng = rng
        self.now = now
        self.scenario = {
            "family": family,
            "name": f"{family}-{name}",
            "keys": [],
            "sightings": [],
            "diagnosisKeysDataMapping": {
                "daysSinceOnsetToInfectiousness": {str(day): 1 for day in range(-14, 15)},
                "reportTypeWhenMissing": 1,
                "infectiousnessWhenDaysSinceOnsetMissing": 1,
            },
            "dailySummariesConfig": {
                "attenuationBucketThresholdDb": [50, 70, 90],
                "attenuationBucketWeights": [1.0, 1.0, 1.0, 1.0],
                "reportTypeWeights": {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0},
                "infectiousnessWeights": {"1": 1.0, "2": 1.0},
                "daysSinceExposureThreshold": 0,
                "minimumWindowScore": 0.0,
            },
            "exposureConfiguration": {
                "minimumRiskScore": 1,
                "attenuationScores": [1, 2, 3, 4, 5, 6, 7, 8],
                "daysSinceLastExposureScores": [1, 2, 3, 4, 5, 6, 7, 8],
                "durationScores": [1, 2, 3, 4, 5, 6, 7, 8],
                "transmissionRiskScores": [1, 2, 3, 4, 5, 6, 7, 8],
                "durationAtAttenuationThresholds": [50, 74],
            },
        }

    def key(self, days_ago, report_type=1, days_since_onset=0, transmission_risk=4, rolling_period=DAY_INTERVALS):
        """Adds a key starting at UTC midnight days_ago days before now; returns its index."""
        start = (self.now // DAY_SECONDS - days_ago) * DAY_INTERVALS
        key = {
            "tek": "%032x" % self.rng.getrandbits(128),
            "rollingStartIntervalNumber": start,
            "rollingPeriod": rolling_period,
            "transmissionRiskLevel": transmission_risk,
            "reportType": report_type,
        }
        if days_since_onset is not None:
            key["daysSinceOnsetOfSymptoms"] = days_since_onset
        self.scenario["keys"].append(key)
        return len(self.scenario["keys"]) - 1

    def start(self, key):
        return self.scenario["keys"][key]["rollingStartIntervalNumber"]

    def sight(self, key, time, rssi=None, interval=None, previous_scan=None, tx_power=-20, confidence=0, adapter=None):
        """A sighting at time of the RPI of interval (by default the one of time), heard by the
        adapter at address `adapter` (by default one without an RSSI correction)."""
        if time >= self.now:
            raise ValueError(f"{self.scenario['name']}: a sighting at {time} is not before now {self.now}")
        sighting = {
            "key": key,
            "interval": time // INTERVAL_SECONDS if interval is None else interval,
            "time": time,
            "rssi": self.rng.randint(-95, -45) if rssi is None else rssi,
            "txPower": tx_power,
            "calibrationConfidence": confidence,
        }
        if previous_scan is not None:
            sighting["previousScanTime"] = previous_scan
        if adapter is not None:
            sighting["adapterAddress"] = adapter
        self.scenario["sightings"].append(sighting)

    def encounter(self, key, first, scans, gap=(150, 330), first_previous=None, unknown_share=0.0, **sighting):
        """A device seen in `scans` consecutive scans of the receiver from `first` on, each scan
        `gap` seconds after the one before; each sighting carries the previous scan's time."""
        time, previous = first, first_previous
        for _ in range(scans):
            known = previous is not None and self.rng.random() >= unknown_share
            self.sight(key, time, previous_scan=previous if known else None, **sighting)
            previous, time = time, time + self.rng.randint(*gap)
        return time

    def in_day(self, key, seconds):
        """The time `seconds` after the start of key's day."""
        return self.start(key) * INTERVAL_SECONDS + seconds


def minute_arithmetic(b):
    """secondsSinceLastScan: whole minutes between the scans' minutes, at most 5, 2 when unknown."""
    key = b.key(b.rng.randint(1, 10))
    time = b.in_day(key, b.rng.randint(8, 20) * 3600 + b.rng.choice([0, 1, 58, 59]))
    previous = None
    for _ in range(b.rng.randint(4, 9)):
        b.sight(key, time, previous_scan=previous)
        # Gaps that cross minute boundaries by a second either way, and some over 5 minutes.
        gap = b.rng.choice([59, 60, 61, 119, 121, 179, 181, 299, 301, 359, 420, 600])
        previous, time = time, time + gap
        if b.rng.random() < 0.3:
            previous = None if b.rng.random() < 0.5 else time - b.rng.choice([1, 61, 200])


def scan_merge(b):
    """Sightings up to 25.5 s apart are one scan instance; 30 minutes after a window's first sighting a new window starts."""
    key = b.key(b.rng.randint(1, 10))
    time = b.in_day(key, b.rng.randint(8, 20) * 3600)
    previous = time - 240
    for _ in range(b.rng.randint(5, 10)):
        # One scan of the receiver: its sightings share the previous scan; the next scan starts
        # after its last sighting.
        scan_start = time
        for gap in [0] + [b.rng.choice([24, 25, 26, 27]) for _ in range(b.rng.randint(0, 2))]:
            time += gap
            b.sight(key, time, previous_scan=previous)
        previous = scan_start
        time += b.rng.choice([26, 180, 240, 300, 600, 1799 - (time - scan_start), 1800 - (time - scan_start)])


def rpi_window(b):
    """An RPI counts only from 12 intervals before its own to 12 after (ignoring the key's end)."""
    rolling_period = b.rng.choice([DAY_INTERVALS, DAY_INTERVALS, 72])
    key = b.key(b.rng.randint(2, 10), rolling_period=rolling_period)
    start = b.start(key)
    for offset in b.rng.sample([-14, -13, -12, -1, 0, 1, 11, 12, 13, 24], 5):
        interval = start + b.rng.choice([0, 5, 71, 72, 100, 143])
        time = (interval + offset) * INTERVAL_SECONDS + b.rng.randint(0, INTERVAL_SECONDS - 1)
        b.sight(key, time, interval=interval, previous_scan=time - b.rng.randint(60, 300))


def replay(b):
    """An RPI counts for 20 minutes from its first sighting; seen again hours later it does not."""
    key = b.key(b.rng.randint(2, 10))
    interval = b.start(key) + b.rng.randint(20, 120)
    first = interval * INTERVAL_SECONDS + b.rng.randint(0, 300)
    end = b.encounter(key, first, b.rng.randint(6, 10), gap=(180, 300), first_previous=first - 200, interval=interval)
    for hours in b.rng.sample([1, 2, 3, 5], 2):
        again = first + hours * 3600 + b.rng.randint(0, 600)
        b.encounter(key, max(again, end), 3, gap=(200, 280), first_previous=again - 240, interval=interval)


def data_mapping(b):
    """Days since onset outside -14...14, days a partial map leaves out, a missing report type, the days-since-exposure threshold."""
    mapping = b.scenario["diagnosisKeysDataMapping"]
    if b.rng.random() < 0.5:
        kept = b.rng.sample(range(-14, 15), 10)
        mapping["daysSinceOnsetToInfectiousness"] = {str(day): b.rng.choice([1, 2]) for day in kept}
    mapping["infectiousnessWhenDaysSinceOnsetMissing"] = b.rng.choice([0, 1, 2])
    mapping["reportTypeWhenMissing"] = b.rng.choice([1, 2, 3])
    config = b.scenario["dailySummariesConfig"]
    config["daysSinceExposureThreshold"] = b.rng.choice([0, 2, 3, 5])
    config["infectiousnessWeights"] = {"1": 1.0, "2": b.rng.choice([1.5, 2.0, 2.5])}
    for days_ago in range(1, 8):
        onset = b.rng.choice([None, -15, -14, -3, 0, 5, 14, 15])
        key = b.key(days_ago, report_type=b.rng.choice([0, 1, 2, 3]), days_since_onset=onset)
        b.encounter(key, b.in_day(key, b.rng.randint(6, 18) * 3600), b.rng.randint(1, 4), first_previous=None)


def calibration(b):
    """A window's calibration confidence is its first sighting's."""
    key = b.key(b.rng.randint(1, 10))
    time = b.in_day(key, b.rng.randint(6, 18) * 3600)
    for window in range(b.rng.randint(2, 3)):
        for scan in range(b.rng.randint(2, 5)):
            b.sight(key, time, previous_scan=time - 240, confidence=b.rng.randint(0, 3))
            time += b.rng.randint(180, 300)
        time += 1800


def report_types(b):
    """RECURSIVE keys are not matched; REVOKED keys' windows are not returned; 0 takes reportTypeWhenMissing."""
    for report_type in b.rng.sample([0, 1, 2, 3, 4, 5], 4):
        key = b.key(b.rng.randint(1, 10), report_type=report_type)
        b.encounter(key, b.in_day(key, b.rng.randint(6, 18) * 3600), b.rng.randint(2, 5), first_previous=None)
    b.scenario["dailySummariesConfig"]["reportTypeWeights"] = {str(t): b.rng.choice([0.5, 1.0, 2.0]) for t in (1, 2, 3, 4)}


def v1_risk(b):
    """v1: exposures split at gaps over 10 minutes, durations in 5-minute buckets, attenuation weighted over time, level buckets."""
    config = b.scenario["exposureConfiguration"]
    for name in ("attenuationScores", "daysSinceLastExposureScores", "durationScores", "transmissionRiskScores"):
        config[name] = [b.rng.randint(0, 8) for _ in range(8)]
    config["minimumRiskScore"] = b.rng.choice([1, 1, 2, 20, 100])
    low = b.rng.randint(40, 60)
    config["durationAtAttenuationThresholds"] = [low, low + b.rng.randint(0, 25)]
    for _ in range(b.rng.randint(1, 3)):
        key = b.key(b.rng.randint(1, 12), transmission_risk=b.rng.randint(0, 8))
        time = b.in_day(key, b.rng.randint(2, 20) * 3600)
        for _ in range(b.rng.randint(1, 3)):
            time = b.encounter(key, time, b.rng.randint(1, 8), gap=(60, 420), first_previous=time - 300)
            time += b.rng.choice([601, 900, 3600])


def mixed(b):
    """Several keys, encounters, configurations and a TX power out of bounds now and then."""
    config = b.scenario["dailySummariesConfig"]
    config["attenuationBucketWeights"] = [b.rng.choice([0.0, 0.5, 1.0, 1.5, 2.5]) for _ in range(4)]
    config["minimumWindowScore"] = b.rng.choice([0.0, 0.0, 300.0])
    for _ in range(b.rng.randint(2, 4)):
        key = b.key(b.rng.randint(1, 12), report_type=b.rng.choice([1, 2, 3]), days_since_onset=b.rng.randint(-5, 10))
        first = b.in_day(key, b.rng.randint(1, 22) * 3600)
        b.encounter(key, first, b.rng.randint(1, 12), first_previous=b.rng.choice([None, first - 200]),
                    unknown_share=0.2, tx_power=b.rng.choice([-30, -20, -10, 0, 21]))


def infectiousness_none(b):
    """v1 knows no infectiousness: a key whose days since onset map to NONE gives no window, yet
    Google's findExposures scores it (and counts it among the matched keys) as any other."""
    mapping = b.scenario["diagnosisKeysDataMapping"]
    none_days = b.rng.sample(range(-14, 15), 10)
    mapping["daysSinceOnsetToInfectiousness"] = {
        str(day): 0 if day in none_days else b.rng.choice([1, 2]) for day in range(-14, 15)}
    mapping["infectiousnessWhenDaysSinceOnsetMissing"] = b.rng.choice([0, 1])
    infectious_days = [day for day in range(-14, 15) if day not in none_days]
    onsets = b.rng.sample(none_days, 2) + [b.rng.choice(infectious_days), b.rng.choice([None, b.rng.choice(none_days)])]
    for onset, days_ago in zip(onsets, b.rng.sample(range(1, 11), len(onsets))):
        key = b.key(days_ago, days_since_onset=onset, transmission_risk=b.rng.randint(1, 8))
        time = b.in_day(key, b.rng.randint(6, 18) * 3600)
        for _ in range(b.rng.randint(1, 2)):
            time = b.encounter(key, time, b.rng.randint(1, 6), gap=(120, 400), first_previous=time - 240) + 900


def exposure_order(b):
    """A key's exposures come in time order, whatever their risk scores: runs of sightings over 10
    minutes apart, long and short in turn, scored by their duration, on keys of the same day."""
    config = b.scenario["exposureConfiguration"]
    config["durationScores"] = sorted(b.rng.randint(1, 8) for _ in range(8))
    config["minimumRiskScore"] = 1
    days_ago = b.rng.randint(1, 10)
    time = None
    for _ in range(b.rng.randint(1, 2)):
        key = b.key(days_ago, transmission_risk=b.rng.randint(1, 8))
        # The second key's encounters follow the first's, as one device hears them.
        time = time or b.in_day(key, b.rng.randint(2, 14) * 3600)
        for scans in b.rng.sample([1, 2, 4, 7], 3):
            time = b.encounter(key, time, scans, gap=(200, 300), first_previous=time - 240) + b.rng.choice([700, 1200, 2400])


RSSI_CORRECTED_ADAPTERS = ["00:1A:7D:DA:71:01", "00:1A:7D:DA:71:02"]


def adapters(b):
    """Two adapters with RSSI corrections of their own hear an RPI in one scan: Google stores RSSIs
    calibrated (BleScannerImpl.BleSightingCallback.getAdjustedRssi), so the strongest of a scan,
    the sighting v1 counts, is the strongest after the correction; here the other one is stronger
    before it."""
    low, gap = b.rng.randint(-8, 4), b.rng.randint(3, 9)
    weaker, stronger = b.rng.sample(RSSI_CORRECTED_ADAPTERS, 2)
    b.scenario["rssiCorrections"] = {weaker: low, stronger: low + gap}
    key = b.key(b.rng.randint(1, 10), transmission_risk=b.rng.randint(1, 8))
    time = b.in_day(key, b.rng.randint(6, 18) * 3600)
    previous = time - 240
    for _ in range(b.rng.randint(3, 7)):
        # The adapter of the smaller correction reports up to gap - 1 dB more, which its
        # correction more than takes back; in either order, a few seconds apart.
        rssi = b.rng.randint(-90, -55)
        heard = [(weaker, rssi + b.rng.randint(1, gap - 1)), (stronger, rssi)]
        if b.rng.random() < 0.2:
            heard = [b.rng.choice(heard)]
        b.rng.shuffle(heard)
        scan_start = time
        for adapter, adapter_rssi in heard:
            b.sight(key, time, rssi=adapter_rssi, previous_scan=previous, adapter=adapter)
            time += b.rng.randint(1, 20)
        previous = scan_start
        time = scan_start + b.rng.randint(150, 420)


FAMILIES = [minute_arithmetic, scan_merge, rpi_window, replay, data_mapping, calibration, report_types, v1_risk, mixed,
            infectiousness_none, exposure_order, adapters]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--now", type=int, required=True, help="unix seconds; the detection's now")
    parser.add_argument("--per-family", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    scenarios = []
    for family in FAMILIES:
        for index in range(args.per_family):
            builder = Builder(rng, args.now, family.__name__.replace("_", "-"), str(index + 1))
            family(builder)
            scenarios.append(builder.scenario)
    json.dump({"now": args.now, "seed": args.seed, "scenarios": scenarios}, fp=__import__("sys").stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
