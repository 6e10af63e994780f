"""What the agents heard and stored: each other's RPIs, the phones and the crowd, the writes per scan."""
import onair
from .agentslab import AGENTS, logged_at
from .bounds import CROWD_SHARE, PHASE_MARGIN, SEEN_SHARE


def who_saw_whom(lab, fail):
    for agent, other in (("a", "b"), ("b", "a")):
        sightings = lab.rows(agent, "SELECT rpi, rssi FROM sighting")
        seen = [rpi.hex() for rpi, _ in sightings]
        of_other = [rpi for rpi in seen if rpi in lab.own[other]]
        of_self = [rpi for rpi in seen if rpi in lab.own[agent]]
        of_phones = [rpi for rpi in seen if rpi in lab.phone_rpis]
        unknown_rssi = sum(1 for _, rssi in sightings if rssi is None)
        print(f"  {agent} ({AGENTS[agent]}) saw {other} ({AGENTS[other]}): {len(of_other)} sightings of {len(set(of_other))} "
              f"distinct RPIs, all derived from {other}'s TEK by enctl derive; {len(of_phones)} of the lab's phones"
              if of_other and len(of_other) + len(of_phones) == len(seen)
              else f"  {agent} ({AGENTS[agent]}): {len(seen)} sightings, {len(of_other)} of {other}'s RPIs, "
                   f"{len(of_phones)} of lab.phones, {len(of_self)} of its own")
        print(f"      RSSI unknown in {unknown_rssi} of {len(sightings)} (the emulated controllers report none)")
        # The other's RPIs, away from the phases (PHASE_MARGIN). btvirt reports an advertiser once,
        # when its set or a scan is enabled; the report at a scan's enable comes 0.1 ms before the
        # kernel enters discovery (its Discovering event) and is dropped, where a real advertiser
        # repeats every 100-270 ms. So the 80 % is checked over the RPIs that went on the
        # air while this agent scanned (at least 0.5 s of the scan left), whose one report came
        # during the scan; the share of those on the air for a scan's first 3 s (as the crowd's
        # pairs below) is printed.
        scans = onair.scan_windows(lab.snoop, int(AGENTS[agent].removeprefix("hci")))
        steady = [(start, end, rpi) for start, end, rpi in lab.on_air_spans(int(AGENTS[other].removeprefix("hci")))
                  if not any(start - PHASE_MARGIN <= moment <= end + PHASE_MARGIN for moment in lab.phase_moments)]
        during = {rpi for start, end, rpi in steady if any(scan <= start and start + 0.5 <= scan_end for scan, scan_end in scans)}
        through = {rpi for start, end, rpi in steady if any(start <= scan and end >= scan + 3 for scan, _ in scans)}
        share = len(during & set(seen)) / len(during) if during else 0
        print(f"      of {other}'s RPIs away from the phases: {len(during & set(seen))} of the {len(during)} that went on the air during one of {agent}'s scans "
              f"({share:.0%}, at least {SEEN_SHARE:.0%}); {len(through & set(seen))} of the {len(through)} on the air for a scan's first 3 s (btvirt's report at the scan's enable is dropped)")
        if not during or share < SEEN_SHARE:
            fail(f"{agent} recorded {share:.0%} of the {len(during)} RPIs of {other}'s that went on the air while it scanned, below {SEEN_SHARE:.0%}")
        if not of_other:
            fail(f"{agent} recorded none of {other}'s RPIs")
        if of_self:
            fail(f"{agent} recorded {len(of_self)} of its own RPIs")
        if len(of_other) + len(of_phones) != len(seen):
            fail(f"{agent} recorded {len(seen) - len(of_other) - len(of_phones)} sightings that derive from no agent's or well-formed phone's key")


def phones_and_crowd(lab, fail):
    if not lab.phones:
        fail("no phone advertised (phones.jsonl is missing or empty)")
        return
    recorded = {agent: {rpi.hex() for (rpi,) in lab.rows(agent, "SELECT rpi FROM sighting")} for agent in AGENTS}
    for p in lab.phones:
        if p["kind"].startswith("crowd"):
            continue
        seen_by = [agent for agent in AGENTS if p["rpi"] in recorded[agent]]
        print(f"  {p['kind']:16} {'well-formed' if p['wellFormed'] else 'malformed  '} {p['address']}: recorded by {', '.join(seen_by) or 'nobody'}")
        if p["wellFormed"] and len(seen_by) != len(AGENTS):
            fail(f"the {p['kind']} phone was not recorded by {sorted(set(AGENTS) - set(seen_by))}")
        if not p["wellFormed"] and seen_by:
            fail(f"the malformed {p['kind']} phone was recorded by {seen_by}")
    crowd = [p for p in lab.phones if p["kind"].startswith("crowd")]
    sets = len({(p["controller"], p["set"]) for p in crowd})
    for agent, controller in (("a", 0), ("b", 1)):
        scans = [w for w in onair.scan_windows(lab.snoop, controller) if w[0] >= min(p["on"] for p in crowd)]
        # Over each scan's configured length (lab.conf: scan-seconds = 3): in the loaded emulated
        # guest a scan's end can come seconds late, and an advertiser on the air for the first
        # three seconds of a scan must be caught.
        pairs = [(scan, p) for scan in scans for p in crowd if p["on"] <= scan[0] and p["off"] >= scan[0] + 3]
        caught = sum(1 for _, p in pairs if p["rpi"] in recorded[agent])
        share = caught / len(pairs) if pairs else 0
        lengths = [end - start for start, end in scans]
        print(f"  crowd of {len(crowd)} advertisements ({sets} sets at once, each advertisement its own address and TEK): {agent} recorded "
              f"{caught} of {len(pairs)} (scan, advertiser on the air for the scan's first 3 s) pairs = {share:.1%} over {len(scans)} scans "
              f"of {min(lengths, default=0):.1f}-{max(lengths, default=0):.1f} s")
        if pairs and share < CROWD_SHARE:
            fail(f"{agent} recorded {share:.1%} of the crowd's (scan, advertiser) pairs, below {CROWD_SHARE:.0%}")
        if not pairs:
            print(f"      (no advertiser spanned the first 3 s of one of {agent}'s scans in this run: the share is not measured)")
        if not any(p["rpi"] in recorded[agent] for p in crowd):
            fail(f"{agent} recorded none of the crowd")
    crowd_cpu = lab.phase("crowd-cpu-b")
    started, ended = crowd_cpu["started"], crowd_cpu["realtime"]
    cpu = crowd_cpu["ticks"] / crowd_cpu["clock_ticks"] / ((ended - started) / 60)
    log = lab.lines("b/enagentd.log")
    writes = [line for line in log if "stored " in line and " sightings" in line]
    during = [line for line in writes if float(started) - 1 <= logged_at(line) <= float(ended) + 1]
    crowd_scans = [w for w in onair.scan_windows(lab.snoop, 1) if float(started) <= w[1] <= float(ended)]
    print(f"  b's CPU during the crowd: {cpu:.2f} s per minute ({cpu / 60:.1%} of a core, the emulated guest's); "
          f"{len(during)} writes of sightings for {len(crowd_scans)} scans")
    if len(during) > len(crowd_scans) + 2:
        fail(f"b wrote sightings {len(during)} times during {len(crowd_scans)} scans: more than one write per scan")
