#!/bin/sh
# crowd-agents.sh BIN OUT SECONDS FLOOD_SECONDS TTY TTY: make lab-rootcanal-crowd's run, in the guest (guest.sh
# with NCTRL=0: no btvirt). The two consoles to RootCanal's HCI port are attached one after the
# other, so they become hci0 and hci1; then the lab's two agents run on them as agents.sh runs them
# (agent-lib.sh: a on hci0, b on hci1, the lab's configuration and clock) for SECONDS, while the
# host's Bumble phones (rclab.py serve: a crowd and the three phones, each rotating on its own)
# advertise on RootCanal's air; then the faults of the agents' lab (agents.sh) under the crowd:
# bluetoothd killed and restarted, agent a killed and restarted, agent b paused and resumed,
# a's adapter made connectable and not, both adapters blocked by rfkill and unblocked
# (the phases "faults-started" to "faults-ended"); then FLOOD_SECONDS more of a flood (the phase
# "flood-started", after which guest.sh has the phones rotate every few seconds). Each agent's
# status is polled every 2 s throughout (the phase "status-poll"). crowd-report.py judges the run
# on the host, with the phones' log.
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=$3 FLOOD_SECONDS=$4
shift 4
HERE=$(cd "$(dirname "$0")" && pwd)
LAB=$(dirname "$HERE")
. "$HERE/attach.sh"
for tty in "$@"; do
    attach_controller "$(dirname "$OUT")" "$tty" "$OUT/btattach-$tty.log" || exit 1
done
[ -e /sys/class/bluetooth/hci0 ] && [ -e /sys/class/bluetooth/hci1 ] || { echo "GUEST: FAILED: no hci0 and hci1 from $*"; exit 1; }
# btmon (boot-lab.sh) serves this run only with the controllers' addresses, their Read BD_ADDR at
# the start of its capture (hcisniffer.py; the report reads RootCanal's record): it stops once it
# has written them. Beside the crowd it took 11-15 % of the guest's processors from the agents.
sleep 1
pkill -x btmon
rm -rf "$OUT/a" "$OUT/b" "$OUT/phases.jsonl"
. "$LAB/agent-lib.sh"
. "$LAB/bluez.sh"
phase stack description="$(printf 'Debian %s, kernel %s, bluetoothd %s, RootCanal controllers (hci0: %s)' "$(cat /etc/debian_version)" "$(uname -r)" \
    "$(/usr/libexec/bluetooth/bluetoothd --version)" "$(btmgmt --index 0 info | sed -n 's/^.*addr \(.*\)$/\1/p' | head -1)")"
# The agents' clock, by which their databases count (the report turns it back into the guest's).
phase clock origin:="$ORIGIN" scale:="$TIME_SCALE"
# The guest's clock against the host's, whose phones' log counts by its own: a file made on the lab
# share between two readings of the guest's clock takes the host's time as its modification time
# (the host kernel's coarse clock: up to a tick, 4 ms, early). At least three files, at the start
# (before the agents start: a guest loading two agents over 9p took 2.4-3.4 s to make each, make
# test of 2026-11-30 18:20) and at the end, and up to ten until one is made within half a second;
# the report takes the narrowest of each end.
clock_mark() {
    mark=0 narrowest=9
    until [ "$mark" -ge 10 ] || { [ "$mark" -ge 3 ] && awk "BEGIN { exit !($narrowest < 0.5) }"; }; do
        mark=$((mark + 1))
        before=$(date +%s.%N); : > "$OUT/clock-$1-$mark"; after=$(date +%s.%N)
        phase clock-mark file="clock-$1-$mark" at="$1" before:="$before" after:="$after"
        narrowest=$(awk "BEGIN { print ($after - $before < $narrowest) ? $after - $before : $narrowest }")
    done
}
clock_mark start
start_agents
echo "agents: a (hci0) pid $A, b (hci1) pid $B; running ${SECONDS_TO_RUN}s among the host's phones"
poll_status & POLL=$!
phase crowd-started
sleep "$SECONDS_TO_RUN"

# When bluetoothd offers each adapter again: dbus-monitor prints its InterfacesAdded signals of
# hci0 and hci1 (not their devices'), and offered.py finds the first that adds the adapter's
# LEAdvertisingManager1, stamped as dbus-monitor read it; waited for up to a minute. Asking
# bluetoothd instead (LEAdvertisingManager1's properties) got no answer for a minute from one
# restarted among the crowd on a loaded host (make test of 2026-11-30 15:40), while agent a
# advertised through it: what it says on the bus needs no answer.
offers() { python3 "$HERE/offered.py" "$OUT/bluetoothd-offers.txt" hci0 hci1; }
phase faults-started
dbus-monitor --system "type='signal',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesAdded',arg0path='/org/bluez/hci0'" \
    "type='signal',interface='org.freedesktop.DBus.ObjectManager',member='InterfacesAdded',arg0path='/org/bluez/hci1'" > "$OUT/bluetoothd-offers.txt" 2>&1 & MONITOR=$!
pkill -KILL -x bluetoothd
phase bluetoothd-killed
sleep 0.5
phase bluetoothd-restarted
/usr/libexec/bluetooth/bluetoothd -n -d > "$OUT/bluetoothd-restarted.log" 2>&1 &
asked_from=$(uptime_seconds)
until past "$asked_from" 60 || ! offers | grep -q null; do sleep 1; done
kill "$MONITOR"
# shellcheck disable=SC2046 # each adapter's field is a word of its own
phase bluetoothd-offered $(offers)
sleep 10
kill_and_restart_a
a_restarted=$(uptime_seconds)
sleep 10
# A day of the agents' clock is 12 real minutes: the pause lasts until the resume.
must "enctl b pause 1d" enctl b pause 1d > /dev/null
phase b-paused
sleep 5
phase b-resumed
must "enctl b resume" enctl b resume > /dev/null
sleep 5
# The agents' lab's phases that lean on the kernel, not on btvirt, here with bluetoothd stalled by the
# crowd: hci0 made connectable under agent a (a laptop pairing a mouse) and not, then both
# adapters blocked by rfkill (airplane mode) and unblocked. Not btmgmt, which waited for good for
# an answer the crowd's reports crowded out of its socket: set-connectable.py reads on meanwhile.
# The connectable phase judges a's advertisement taken off the air: a, started again above, may
# still be finding its adapter (a stalled bluetoothd leaves three calls unanswered: 31 s in the CI
# run of 2026-12-01), so a is awaited on the air for as long as the faults check allows its return.
advertising() { enctl "$1" status --json 2>/dev/null | grep -q '"advertising" : true'; }
until advertising a || past "$a_restarted" 40; do sleep 0.5; done
must "a advertising before hci0 turns connectable" advertising a
phase a-connectable
must "hci0 connectable" python3 "$LAB/set-connectable.py" 0 on
sleep 3
phase a-not-connectable
must "hci0 not connectable" python3 "$LAB/set-connectable.py" 0 off
sleep 5
phase rfkill-blocked
must "rfkill block" rfkill_agents 1
sleep 3
phase rfkill-unblocked
must "rfkill unblock" rfkill_agents 0
sleep 10
phase faults-ended
if [ "$FLOOD_SECONDS" -gt 0 ]; then
    phase flood-started
    sleep "$FLOOD_SECONDS"
fi
phase crowd-ended
clock_mark end
kill "$POLL"
end_run
