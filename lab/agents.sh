#!/bin/sh
# agents.sh BIN OUT SECONDS: the lab's run, in the guest. Two agents, a on hci0 and b on hci1,
# run for SECONDS; then bluetoothd is killed and restarted, and each agent must advertise and
# scan again within 10 s; then agent a is killed with SIGKILL and restarted, and must keep the
# day's TEK and every committed sighting; finally both stop with SIGTERM.
# The agents' clocks run 120 times faster from one shared origin, so an EN interval lasts 5 s and
# every rotation (6-8 s apart) brings a new RPI, as in real use. Each agent keeps its state on the guest's
# tmpfs (SQLite's WAL needs shared memory, which the 9p share lacks); at the end its database,
# log and exit status are copied to OUT/a and OUT/b, and the phases' results to OUT/phases.
set -u
BIN=$1 OUT=$2 SECONDS_TO_RUN=${3:-60}
LAB=$(dirname "$0")
STATE=/run/enagent-lab
LAB_OPTIONS="--config $LAB/lab.conf --verbose --time-scale 120 --time-origin $(date +%s)"
rm -rf "$OUT/a" "$OUT/b" "$OUT/phases" "$STATE"; mkdir -p "$STATE/a" "$STATE/b" "$OUT/phases"
# Both agents share the guest's system bus for BlueZ, but one bus name can have one owner: each
# offers its API on a bus of its own, under the system bus's default policy plus enagentd's.
api_bus() {
    cat > "$STATE/$1.bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$STATE/$1.bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="*"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>
  <include>$LAB/../dbus/org.enagent.ExposureNotification1.conf</include>
</busconfig>
EOF
    dbus-daemon --config-file="$STATE/$1.bus.conf" --fork --nopidfile
}
enctl() { agent_name=$1; shift; DBUS_SYSTEM_BUS_ADDRESS="unix:path=$STATE/$agent_name.bus" "$BIN/enctl" "$@"; }
agent() {
    exec "$BIN/enagentd" --state-dir "$STATE/$1" --adapter "$2" --api-bus "unix:path=$STATE/$1.bus" $LAB_OPTIONS \
        >> "$STATE/$1/enagentd.log" 2>&1
}
# Consent: enabling through the API, as a person would with 'enctl enable'.
enable() {
    for _ in $(seq 50); do enctl "$1" enable > /dev/null 2>&1 && { echo "agent $1 enabled"; return; }; sleep 0.2; done
    echo "agent $1: enctl enable failed"
}

api_bus a; api_bus b
agent a hci0 & A=$!
agent b hci1 & B=$!
enable a; enable b
echo "agents: a (hci0) pid $A, b (hci1) pid $B; running ${SECONDS_TO_RUN}s"
sleep "$SECONDS_TO_RUN"

echo "phase: restarting bluetoothd"
pkill -KILL -x bluetoothd; sleep 0.5
/usr/libexec/bluetooth/bluetoothd -n -d > "$OUT/bluetoothd-restarted.log" 2>&1 &
# Both adapters are timed from the same moment, the restart.
"$LAB/wait-radio.sh" hci0 30 > "$STATE/recovery-hci0" & W0=$!
"$LAB/wait-radio.sh" hci1 30 > "$STATE/recovery-hci1" & W1=$!
wait "$W0" "$W1"
for adapter in hci0 hci1; do echo "$adapter $(cat "$STATE/recovery-$adapter")"; done | tee "$OUT/phases/bluetoothd-restart"
sleep 10

echo "phase: SIGKILL and restart of agent a"
python3 "$LAB/snapshot.py" "$STATE/a/enagent.db" > "$OUT/phases/before-kill.json"
kill -KILL "$A"; wait "$A"
python3 "$LAB/snapshot.py" "$STATE/a/enagent.db" > "$OUT/phases/after-kill.json"
agent a hci0 & A=$!
sleep 20

for agent in a b; do enctl $agent status --json > "$OUT/phases/status-$agent.json"; done
kill -TERM "$A" "$B"
wait "$A"; echo $? > "$STATE/a/exit-status"; echo "agent a stopped: exit $(cat "$STATE/a/exit-status")"
wait "$B"; echo $? > "$STATE/b/exit-status"; echo "agent b stopped: exit $(cat "$STATE/b/exit-status")"
python3 "$LAB/snapshot.py" "$STATE/a/enagent.db" > "$OUT/phases/end.json"
cp -r "$STATE/a" "$STATE/b" "$OUT/"
