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
agent() { exec "$BIN/enagentd" --state-dir "$STATE/$1" --adapter "$2" $LAB_OPTIONS >> "$STATE/$1/enagentd.log" 2>&1; }

agent a hci0 & A=$!
agent b hci1 & B=$!
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

kill -TERM "$A" "$B"
wait "$A"; echo $? > "$STATE/a/exit-status"; echo "agent a stopped: exit $(cat "$STATE/a/exit-status")"
wait "$B"; echo $? > "$STATE/b/exit-status"; echo "agent b stopped: exit $(cat "$STATE/b/exit-status")"
python3 "$LAB/snapshot.py" "$STATE/a/enagent.db" > "$OUT/phases/end.json"
cp -r "$STATE/a" "$STATE/b" "$OUT/"
