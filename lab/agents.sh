#!/bin/sh
# agents.sh BIN OUT SECONDS: the lab's run, in the guest. Two agents, a on hci0 and b on hci1,
# run for SECONDS; then bluetoothd is killed and restarted, and each agent must advertise and
# scan again within 10 s; then agent a is killed with SIGKILL and restarted, and must keep the
# day's TEK and every committed sighting; then a shares its keys after a positive test, a key
# server on loopback publishes them signed, and b detects its exposure from that server; finally
# both stop with SIGTERM.
# The agents' clocks run 120 times faster from one shared origin, so an EN interval lasts 5 s and
# every rotation (6-8 s apart) brings a new RPI, as in real use. They start two agent hours (one
# real minute) before a UTC midnight, so a's first key has rolled, and may be shared, by the end. Each agent keeps its state on the guest's
# tmpfs (SQLite's WAL needs shared memory, which the 9p share lacks); at the end its database,
# log and exit status are copied to OUT/a and OUT/b, and each phase's record is a line of OUT/phases.jsonl (manifest.sh: phase).
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=${3:-60}
LAB=$(dirname "$0")
. "$LAB/bluez.sh"
# The last controller plays a street's scannable advertisers for the whole run (phones.py beacons);
# every other controller but the agents' plays phones (3 in make lab-test's BT 5 run, which has
# three advertising sets each; 7 in its BT 4.x run, one advertiser each).
CONTROLLERS=$(ls /sys/class/bluetooth | grep -x 'hci[0-9]*' | grep -v -x -e hci0 -e hci1 | sort -V)
BEACONS=$(echo "$CONTROLLERS" | tail -n 1)
PHONES=$(echo "$CONTROLLERS" | grep -v -x "$BEACONS" | tr '\n' ' ')
rm -rf "$OUT/a" "$OUT/b" "$OUT/phases.jsonl"
. "$LAB/agent-lib.sh"
# The stack under test, for the report's first line.
phase stack description="$(printf 'Debian %s, kernel %s, bluetoothd %s, btvirt %s (%s)' "$(cat /etc/debian_version)" "$(uname -r)" \
    "$(/usr/libexec/bluetooth/bluetoothd --version)" "$(btvirt --version 2>&1 | head -1)" "$(command -v btvirt)")"
# Who may call what (callers.py): a member of the group enagent and a user who is not, made before
# the API buses start, since dbus-daemon reads group policies then.
groupadd -f enagent
id member > /dev/null 2>&1 || useradd -M -N -u 1500 -G enagent member
id other > /dev/null 2>&1 || useradd -M -N -u 1501 other
api_bus a; api_bus b
python3 "$LAB/phones.py" beacons "$OUT" "$BEACONS" & BEACONING=$!
agent a hci0 & A=$!
agent b hci1 & B=$!
enable a; enable b
echo "agents: a (hci0) pid $A, b (hci1) pid $B; running ${SECONDS_TO_RUN}s"
sleep "$SECONDS_TO_RUN"

echo "phase: restarting bluetoothd"
phase bluetoothd-killed
pkill -KILL -x bluetoothd; sleep 0.5
# Both adapters are timed from the same moment, the restart (a script's own start can lag by a
# second in the emulated guest).
restarted=$(uptime_seconds)
phase bluetoothd-restarted
/usr/libexec/bluetooth/bluetoothd -n -d > "$OUT/bluetoothd-restarted.log" 2>&1 &
# 60 s: bluetoothd alone took up to 21 s to offer the adapters again in the emulated guest with
# nine controllers; the 10 s the agent has is counted from that moment, on btmon's capture.
"$LAB/wait-radio.py" hci0 60 "$restarted" > "$STATE/recovery-hci0" & W0=$!
"$LAB/wait-radio.py" hci1 60 "$restarted" > "$STATE/recovery-hci1" & W1=$!
wait "$W0" "$W1"
phase bluetoothd-restart hci0="$(cat "$STATE/recovery-hci0")" hci1="$(cat "$STATE/recovery-hci1")"; tail -n 1 "$OUT/phases.jsonl"
sleep 10

echo "phase: SIGKILL and restart of agent a"
kill_and_restart_a
sleep 20

echo "phase: pausing b stops its radio at once"
# A day of agent time is 12 real minutes at x120: the pause cannot end by itself before the
# status below is read, however slow the guest (10m of agent time lasted 5 s and raced it).
must "enctl b pause 1d" enctl b pause 1d > /dev/null
phase b-paused
start=$(uptime_seconds)
while [ "$(radio hci1)" != "no no" ] && ! past "$start" 10; do sleep 0.1; done
phase pause-b polled="$(since "$start")" radio="$(radio hci1)"; tail -n 1 "$OUT/phases.jsonl"
phase paused-status-b status:="$(must "enctl b status (paused)" enctl b status --json)"
must "enctl b resume" enctl b resume > /dev/null

echo "phase: hci0 switched off under agent a"
losses=$(grep -c "radio lost" "$STATE/a/enagentd.log")
switched_off=$(uptime_seconds)
phase a-switched-off
must "switching hci0 off" dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
    string:org.bluez.Adapter1 string:Powered variant:boolean:false > /dev/null
powered=$(prop hci0 org.bluez.Adapter1 Powered) polled=$("$LAB/wait-radio.py" hci0 30 "$switched_off")
# The agent's own account: it noticed the loss. (Whether its recovery or its next rotation, a
# fraction of a second apart at the lab's clock, put the fresh advertisement out is a race; btmon
# times the return.) The log line may trail the radio's return: wait for it within the same 10 s.
while [ "$(grep -c "radio lost" "$STATE/a/enagentd.log")" -le "$losses" ] && ! past "$switched_off" 10; do sleep 0.2; done
phase power-off-a powered="$powered" polled="$polled" losses:=$(( $(grep -c "radio lost" "$STATE/a/enagentd.log") - losses ))
tail -n 1 "$OUT/phases.jsonl"

echo "phase: phones, then a crowd, on $PHONES"
rm -f "$OUT/phones.jsonl"
must "phones" python3 "$LAB/phones.py" "$OUT" "$ORIGIN" 120 phones 12 $PHONES
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
crowd_cpu_before=$(cpu_ticks "$B") crowd_started=$(date +%s.%N)
must "crowd" python3 "$LAB/phones.py" "$OUT" "$ORIGIN" 120 crowd 30 $PHONES
phase crowd-cpu-b ticks:=$(( $(cpu_ticks "$B") - crowd_cpu_before )) clock_ticks:="$(getconf CLK_TCK)" started:="$crowd_started"
sleep 5  # one scan cycle (lab.conf): what b heard of the crowd is written before it detects
# The lab's health authority publishes every phone's key; b detects through its API.
must "phones export" python3 "$LAB/phones.py" export "$OUT/phones.jsonl" "$STATE/phones.zip"
must "enctl keys sign (phones)" "$BIN/enctl" keys sign "$STATE/phones.zip" --private-key "$STATE/authority.pem" --key-id 228 --out "$OUT/phones.zip"
phase phones-signed keys=phones.zip
# What b had stored just before and just after: the detection saw at least the first and at most
# the second (the crowd's last scan may still be on its way to the database).
phase b-sightings-before-detect sightings:="$(sightings b)"
phase detect-phones-b result:="$(must "enctl b detect (phones)" enctl b detect "$OUT/phones.zip" --json)"
phase b-sightings-after-detect sightings:="$(sightings b)"
phase windows-phones-b windows:="$(must "enctl b windows (phones)" enctl b windows --json)"

echo "phase: a shares its keys, a key server publishes them, b detects"
must "enctl a keys export" enctl a keys export --yes --format zip --out "$STATE/a-keys.zip"
# The bucket as Google's key server writes it (internal/export/worker.go): ROOT/index.txt lists
# whole object names from the bucket's root, without a newline at the end.
export_name=exposureKeyExport-LAB/1600000000-1600003600-00001.zip
must "enctl keys sign" "$BIN/enctl" keys sign "$STATE/a-keys.zip" --private-key "$STATE/authority.pem" --key-id 228 --region LAB --out "$STATE/server/$export_name"
cp "$STATE/server/$export_name" "$OUT/shared-keys.zip"; cp "$STATE/trusted-keys/228_v1.pem" "$OUT/"
phase shared-keys keys=shared-keys.zip public_key=228_v1.pem
printf '%s' "$export_name" > "$STATE/server/exposureKeyExport-LAB/index.txt"
python3 -m http.server 8000 --bind 127.0.0.1 --directory "$STATE/server" 2> "$OUT/key-server.log" & SERVER=$!
for _ in $(seq 50); do python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8000)).close()' 2>/dev/null && break; sleep 0.1; done
printf '%s\n' "url = http://127.0.0.1:8000/" "index = exposureKeyExport-LAB/index.txt" > "$STATE/key-server.conf"
phase detect-b result:="$(must "enctl b detect server" enctl b detect server --server-config "$STATE/key-server.conf" --cache-dir "$STATE/b-cache" --state-dir "$STATE/b-detect-state" --json)"
phase windows-b windows:="$(must "enctl b windows" enctl b windows --json)"
kill "$SERVER"

echo "phase: a second advertiser on hci0 through bluetoothd (bluetoothctl's broadcast), then removed"
# As a desktop program would: an LE advertisement registered with bluetoothd (LEAdvertisingManager1)
# for 20 s. On BT 5 it goes on the air beside a's; on a legacy controller a steps aside (the kernel
# would lend the one set in turns, from a new address each turn) and says so. On a legacy controller
# the kernel refuses a registration that comes while a scans (its new random address is disallowed
# then; bluetoothd answers Failed), as it would any program's beside any scan: bluetoothctl tries
# again 3 s later, twice ("already registered" once one took). It needs a terminal: script(1).
address=$(prop hci0 org.bluez.Adapter1 Address)
phase second-advertiser
( echo "select $address"; echo "menu advertise"; echo "name on"; echo "back"
  for attempt in 1 2 3; do echo "advertise broadcast"; sleep 3; done; sleep 11
  echo "advertise off"; sleep 1; echo quit ) | script -qec bluetoothctl /dev/null > "$OUT/bluetoothctl.txt" 2>&1 & SECOND=$!
sleep 10
phase second-advertiser-status-a status:="$(must "enctl a status (second advertiser)" enctl a status --json)"
wait "$SECOND"
phase second-advertiser-off transcript=bluetoothctl.txt
grep -q "Advertising object registered" "$OUT/bluetoothctl.txt" || phase failed step="bluetoothctl advertise: not registered"
"$LAB/wait-radio.py" hci0 10 > /dev/null || phase failed step="hci0 not advertising after the second advertiser left"

echo "phase: hci0 made connectable under agent a (a laptop pairing a mouse), then not"
# The kernel re-programs the advertisement on the air when the adapter turns connectable (on a legacy
# controller: ADV_IND from the public address); a must take it off at once, say why it waits, and
# advertise again once the adapter is not connectable. BlueZ 5.66's btmgmt prints nothing without a
# terminal: script(1) gives it one.
status_a() { enctl a status --json | python3 -c 'import json, sys; s = json.load(sys.stdin); print(s["status"], "yes" if s["advertising"] else "no")'; }
turned=$(uptime_seconds)
phase a-connectable
must "btmgmt connectable on" script -qec "btmgmt --index 0 connectable on" /dev/null > /dev/null
# Each poll with the moment it began: a poll begun after the agent's bound that still reads the old
# status is the agent's lag, whatever enctl's own start costs on a loaded host.
while asked=$(date +%s.%N) && seen=$(status_a) && phase connectable-poll started:="$asked" said="$seen" \
    && [ "$seen" != "adapter-connectable no" ] && ! past "$turned" 10; do sleep 0.2; done
echo "$(since "$turned") $seen"
sleep 2  # it retries every second: still waiting, still saying why
phase connectable-status-a status:="$(must "enctl a status (connectable)" enctl a status --json)"
back=$(uptime_seconds)
phase a-not-connectable
must "btmgmt connectable off" script -qec "btmgmt --index 0 connectable off" /dev/null > /dev/null
phase connectable-a polled="$("$LAB/wait-radio.py" hci0 30 "$back")"; tail -n 1 "$OUT/phases.jsonl"

OTHER=$(echo $PHONES | cut -d' ' -f1)
echo "phase: another program on $OTHER beside the agents: advertisements added and removed, $OTHER powered off and on, made connectable and not"
# What happens on another adapter of the machine is nothing to the agents: another EN
# implementation power-cycles its own adapter to roll its address, and each such power-off was once
# taken for the agents' loss, a fresh key mid-day each. btmgmt as such a program (the phones are
# done), with an Eddystone URL beacon and an Apple advertisement: no EN service data.
other() { must "btmgmt --index ${OTHER#hci} $*" script -qec "btmgmt --index ${OTHER#hci} $*" /dev/null > /dev/null; sleep 1.5; }
phase another-controller-from
other add-adv -d 0201060303aafe0d16aafe10f6036578616d706c65 1
other add-adv -d 02011a0aff4c001005031c2b3c4d 2
other rm-adv 1
other power off
other power on
other connectable on
other connectable off
script -qec "btmgmt --index ${OTHER#hci} clr-adv" /dev/null > /dev/null
sleep 3  # what the agents would do about it, within the phase
phase another-controller-to

echo "phase: every controller unplugged (btvirt closed) and plugged back (a new btvirt)"
# Pulling a USB dongle: the kernel unregisters the controller, and registers a new one when it is
# plugged in. btvirt emulates every controller of the lab, so closing it pulls them all, the
# agents' among them; the new btvirt's controllers take the same names, hci0 first.
phase unplugged
unplugged=$(uptime_seconds)
must "unplug (btvirt closed)" pkill -x btvirt
while { [ -e /sys/class/bluetooth/hci0 ] || [ -e /sys/class/bluetooth/hci1 ]; } && ! past "$unplugged" 10; do sleep 0.2; done
# What the agents say while their adapters are gone, once bluetoothd has told them (within 10 s).
for agent in a b; do
    while said=$(enctl $agent status --json) && echo "$said" | grep -q '"status" *: *"active"' \
        && ! past "$unplugged" 10; do sleep 0.2; done
    phase unplugged-status-$agent status:="$said"
done
replugged=$(uptime_seconds)
phase replugged
btvirt ${BTVIRT_OPTS:--l2} > "$OUT/btvirt-replugged.log" 2>&1 &
# 60 s: bluetoothd sets up every new controller before it offers one; the 10 s the agents have are
# counted from that offer, on btmon's capture.
"$LAB/wait-radio.py" hci0 60 "$replugged" > "$STATE/replug-hci0" & W0=$!
"$LAB/wait-radio.py" hci1 60 "$replugged" > "$STATE/replug-hci1" & W1=$!
wait "$W0" "$W1"
phase replug hci0="$(cat "$STATE/replug-hci0")" hci1="$(cat "$STATE/replug-hci1")"; tail -n 1 "$OUT/phases.jsonl"

echo "phase: agent a's machine suspended and resumed: asleep, hci0 off, the wall clock forward into the next day, hci0 on, awake"
# Asleep, no process runs: agent a is stopped (SIGSTOP) across the sleep, and the adapter's power
# goes off and comes back meanwhile, as a laptop's USB dongle loses it. The agents' clock runs 120
# times faster: a real step of S seconds is 120 S of theirs; the wall clock goes forward to two
# hours (theirs) past their next UTC midnight, a night's sleep.
phase before-suspend snapshot:="$(must "snapshot before-suspend" python3 "$LAB/snapshot.py" "$STATE/a/enagent.db")"
power_hci0() {
    dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Properties.Set \
        string:org.bluez.Adapter1 string:Powered "variant:boolean:$1" > /dev/null
}
phase suspended
kill -STOP "$A"
must "hci0 off (asleep)" power_hci0 false
now=$(date +%s); agent_now=$(( ORIGIN + (now - ORIGIN) * 120 ))
must "the wall clock forward" date -s "@$(( now + ((agent_now / 86400 + 1) * 86400 + 7200 - agent_now) / 120 + 1 ))" > /dev/null
resumed_agent_time=$(( ORIGIN + ($(date +%s) - ORIGIN) * 120 ))
must "hci0 on (resumed)" power_hci0 true
resumed=$(uptime_seconds)
# Stamped just before a runs again: the report times a from here (the kernel acts at power-on, before).
phase resumed agent_time:=$resumed_agent_time
kill -CONT "$A"
phase resume-a polled="$("$LAB/wait-radio.py" hci0 30 "$resumed")"
sleep 2
phase after-suspend snapshot:="$(must "snapshot after-suspend" python3 "$LAB/snapshot.py" "$STATE/a/enagent.db")"

echo "phase: airplane mode: hci0 and hci1 blocked by rfkill, then unblocked"
# Last of the radio phases: after rfkill closed a BT 5 controller, kernel 6.1 keeps instances whose sets
# the controller lost and fails commands that touch them (Set Connectable among them).
phase rfkill-blocked
must "rfkill block" rfkill_agents 1
sleep 3
for agent in a b; do phase rfkill-status-$agent status:="$(must "enctl $agent status (blocked)" enctl $agent status --json)"; done
# What a's passive scan met in CI (trixie, 2026-11-27): its monitor reached hci0 just as rfkill
# closed it, the kernel failed it and kept it pending, and refused every later one as Busy. Made
# here on purpose where a scans passively: a scans through bluetoothd's discovery once unblocked.
if grep -q "scanning passively" "$STATE/a/enagentd.log"; then
    phase monitor-stranded status="$(must "monitor-race.py --strand hci0" python3 "$LAB/monitor-race.py" --strand hci0)"
fi
unblocked=$(uptime_seconds)
phase rfkill-unblocked
must "rfkill unblock" rfkill_agents 0
"$LAB/wait-radio.py" hci0 30 "$unblocked" > "$STATE/rfkill-hci0" & W0=$!
"$LAB/wait-radio.py" hci1 30 "$unblocked" > "$STATE/rfkill-hci1" & W1=$!
wait "$W0" "$W1"
phase rfkill hci0="$(cat "$STATE/rfkill-hci0")" hci1="$(cat "$STATE/rfkill-hci1")"; tail -n 1 "$OUT/phases.jsonl"

echo "phase: the API's methods as root, as a member of enagent, as another user (under the bus policy)"
cp "$LAB/callers.py" "$STATE/"  # where the other users can read it
for caller in root member other; do
    phase callers-$caller answers:="$(must "callers.py as $caller" setpriv --reuid="$caller" --regid="$(id -g "$caller")" --init-groups \
        /usr/bin/python3 "$STATE/callers.py" "unix:path=$STATE/b.bus")"
done
for agent in a b; do phase status-$agent status:="$(must "enctl $agent status" enctl $agent status --json)"; done
stop_agents "$BEACONING"
phase end snapshot:="$(must "snapshot end" python3 "$LAB/snapshot.py" "$STATE/a/enagent.db")"
cp -r "$STATE/a" "$STATE/b" "$OUT/"
