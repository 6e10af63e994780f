"""The bounds the checks hold the agents to: times, by the guest's own clocks (docs/lab.md, "The report"),
shares and counts."""

# Seconds from the moment an agent could act again (its adapter offered, powered, unblocked or
# not connectable any more, the agent started or continued) until it advertised (a new RPI from a
# new address) and scanned.
BACK_WITHIN = 10.0
# Seconds from enctl pause returning until b's controller stopped advertising and scanning.
PAUSE_WITHIN = 2.0
# Seconds from the kernel's New Settings (connectable) until a took its advertisement off; and
# until a said adapter-connectable: no status poll begun later than that may read another status.
CONNECTABLE_OFF_WITHIN = 1.0
CONNECTABLE_STATUS_WITHIN = 2.0
# An EN advertisement the kernel re-programs when the adapter turns connectable (a legacy controller
# sends it in ADV_IND from the public address) is on the air until the agent takes it off: at most
# this long, about one advertising interval, or the ON AIR check fails.
REPROGRAMMED_AT_MOST = 0.25
# The lab's suspend is a sleep enagentd is not told of (no systemd-logind in this guest; the service
# lab has it, and there nothing may go out again): at power-on the kernel enables the instance it
# kept, from a new address on a legacy controller, before a runs again. a takes it off within this
# long of being continued (SIGCONT), or the SUSPEND check fails.
REENABLED_OFF_WITHIN = 1.0
# Of the other agent's RPIs on the air during one of an agent's scans, away from the phases (within
# PHASE_MARGIN seconds of a phase's moment: a kill loses what was not yet written, a restart or a
# switch-off ends a scan), the share it must record; of the crowd's (scan, advertiser) pairs.
SEEN_SHARE, PHASE_MARGIN = 0.8, 10.0
CROWD_SHARE = 0.95
# Another program's advertisement stays on the air beside a's (BT 5) or in its place (BT 4.x) from
# the moment bluetoothd gave it to the kernel until the phase's end, which comes a second or two
# after its removal (81-94 % in the day's captures where it went on the air at once); on BT 5 a's
# own EN advertisement beside it, and each agent's while another controller is busy.
OTHER_ADVERTISER_SHARE, EN_SHARE_BESIDE = 0.8, 0.9
KEYS_PER_DAY, LEAST_RPIS, LEAST_API_MEMBERS = 3, 4, 17
